/*
 * dataspoc-tap-parquet: the built-in Singer tap for Parquet files (the
 * YAML's "tap: parquet"): every file under a path that matches a glob, read
 * with lib/pqread.h, printed as one stream: a SCHEMA (again whenever a
 * file's columns differ), its RECORDs, then a STATE listing the files read,
 * so that with --state only files not read before are read.  The program's
 * files, and what each holds, are listed in tap_parquet.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sb.h"
#include "singer_tap.h"
#include "tap_parquet.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif

static const char usage_line[] =
	"usage: dataspoc-tap-parquet [-d] -c config [-s state] "
	"[-p properties | --catalog catalog]\n";

static const char help_text[] =
	"Read Parquet files and print them as a Singer stream.\n"
	"\n"
	"  -c, --config FILE      the tap's config (required): {\"path\", \"stream_name\",\n"
	"                         \"glob\", \"hive_partitioning\", \"key_properties\",\n"
	"                         \"endpoint_url\"}\n"
	"  -s, --state FILE       read only the files this Singer state does not list\n"
	"  -p, --properties FILE  a catalog: the stream or columns with\n"
	"      --catalog FILE     \"selected\": false are left out\n"
	"  -d, --discover         print the catalog, from the first file's columns\n"
	"      --about            print the tap's name and capabilities as JSON\n"
	"      --version          print the version\n"
	"  -h, --help             print this help\n"
	"\n"
	"path is a folder or one .parquet file: /dir, file:///dir, s3://bucket/prefix,\n"
	"gs://bucket/prefix; glob (default **/*.parquet) is matched against the names\n"
	"under it (** any folders, none hidden).  Messages go to stdout, one JSON object\n"
	"a line.  Exit status: 0 success, 1 a file could not be read or uses what the\n"
	"reader lacks, 2 usage, config, state or catalog error.\n"
	"See dataspoc-tap-parquet(1).\n";

static const char about_json[] =
	"{\"name\":\"dataspoc-tap-parquet\","
	"\"description\":\"Singer tap for Parquet files, built into dataspoc-pipe\","
	"\"version\":\"" PIPE_VERSION "\","
	"\"capabilities\":[\"discover\",\"catalog\",\"properties\",\"state\"],"
	"\"settings\":{\"type\":\"object\",\"properties\":{"
	"\"path\":{\"type\":\"string\"},"
	"\"stream_name\":{\"type\":\"string\"},"
	"\"glob\":{\"type\":\"string\",\"default\":\"**/*.parquet\"},"
	"\"hive_partitioning\":{\"type\":\"boolean\",\"default\":false},"
	"\"key_properties\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"endpoint_url\":{\"type\":\"string\"}},"
	"\"required\":[\"path\"]}}";

static int parquet_config(void *p, const struct singer_tap_args *a)
{
	struct tap *t = p;

	t->config_file = a->config;
	t->state_file = a->state;
	t->catalog_file = a->catalog ? a->catalog : a->properties;
	t->catalog_what = a->catalog ? "catalog" : "properties";
	return load_config(t);
}

static int parquet_discover(void *t)
{
	return discover(t);
}

/* The catalog, the state, then the files. */
static int parquet_sync(void *p)
{
	struct tap *t = p;
	int rc;

	if (t->catalog_file != NULL && (rc = load_catalog(t)) != 0)
		return rc;
	if (t->state_file != NULL && (rc = load_state(t)) != 0)
		return rc;
	return sync_files(t);
}

static int parquet_end(void *p, int rc, int *write_failed)
{
	struct tap *t = p;

	free(t->path);
	free(t->stream);
	free(t->glob);
	free(t->endpoint);
	singer_tap_free_list(t->keys, t->nkeys);
	singer_tap_free_list(t->drop, t->ndrop);
	singer_tap_free_list(t->done, t->ndone);
	singer_tap_free_list(t->read, t->nread);
	sb_free(&t->state_text);
	sb_free(&t->msg);
	sb_free(&t->schema);
	*write_failed = t->write_failed;
	return rc;
}

static const struct singer_tap_hooks hooks = {
	.name = "dataspoc-tap-parquet",
	.usage_line = usage_line,
	.help = help_text,
	.about_json = about_json,
	.config = parquet_config,
	.discover = parquet_discover,
	.sync = parquet_sync,
	.end = parquet_end,
};

/*
 * Parse the options; with --config, extract (or with --discover, describe)
 * the files, then check that stdout took everything.
 */
int main(int argc, char **argv)
{
	struct tap t;

	memset(&t, 0, sizeof(t));
	t.selected = 1;
	return singer_tap_main(argc, argv, &hooks, &t);
}
