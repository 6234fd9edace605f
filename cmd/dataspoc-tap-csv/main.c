/*
 * dataspoc-tap-csv: the project's built-in sample source, a Singer tap that
 * reads CSV files (RFC 4180) and prints SCHEMA, RECORD and STATE messages.
 *
 * Every value is a JSON string.  Files are read one row at a time, so memory
 * stays bounded by the longest row, whatever the size of the file.  The
 * program's files, and what each holds, are listed in tap_csv.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sb.h"
#include "singer_tap.h"
#include "tap_csv.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif

static const char usage_line[] =
	"usage: dataspoc-tap-csv [-d] -c config [-s state] "
	"[-p properties | --catalog catalog]\n";

static const char help_text[] =
	"Read CSV files and print them as a Singer stream.\n"
	"\n"
	"  -c, --config FILE      the tap's config (required): {\"files\": [{\"entity\",\n"
	"                         \"path\", \"keys\", \"replication_key\", \"delimiter\"}]}\n"
	"                         or {\"csv_files_definition\": \"FILE\"}\n"
	"  -s, --state FILE       resume from this Singer state (bookmarks)\n"
	"  -p, --properties FILE  a catalog: streams or columns with\n"
	"      --catalog FILE     \"selected\": false are left out\n"
	"  -d, --discover         print the catalog of the configured files\n"
	"      --about            print the tap's name and capabilities as JSON\n"
	"      --version          print the version\n"
	"  -h, --help             print this help\n"
	"\n"
	"Messages go to stdout, one JSON object a line; every value is a string.\n"
	"Exit status: 0 success, 1 a file could not be read or is not valid CSV,\n"
	"2 usage, config, state or catalog error.  See dataspoc-tap-csv(1).\n";

static const char about_json[] =
	"{\"name\":\"dataspoc-tap-csv\","
	"\"description\":\"Singer tap for CSV files, the sample source of dataspoc-pipe\","
	"\"version\":\"" PIPE_VERSION "\","
	"\"capabilities\":[\"discover\",\"catalog\",\"properties\",\"state\"],"
	"\"settings\":{\"type\":\"object\",\"properties\":{"
	"\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	"\"properties\":{"
	"\"entity\":{\"type\":\"string\"},"
	"\"path\":{\"type\":\"string\"},"
	"\"keys\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"replication_key\":{\"type\":\"string\"},"
	"\"delimiter\":{\"type\":\"string\"},"
	"\"encoding\":{\"type\":\"string\"}},"
	"\"required\":[\"entity\",\"path\"]}},"
	"\"csv_files_definition\":{\"type\":\"string\"}}}}";

static int csv_config(void *p, const struct singer_tap_args *a)
{
	struct tap *t = p;

	t->config_file = a->config;
	t->state_file = a->state;
	t->catalog_file = a->catalog ? a->catalog : a->properties;
	t->catalog_what = a->catalog ? "catalog" : "properties";
	return load_config(t);
}

static int csv_discover(void *t)
{
	return discover(t);
}

/* The catalog, the state, then each selected file. */
static int csv_sync(void *p)
{
	struct tap *t = p;
	int rc = 0;
	size_t i;

	if (t->catalog_file != NULL && (rc = load_catalog(t)) != 0)
		return rc;
	if (t->state_file != NULL && (rc = load_state(t)) != 0)
		return rc;
	for (i = 0; i < t->nents && rc == 0; i++)
		if (t->ents[i].selected)
			rc = sync_stream(t, &t->ents[i]);
	return rc;
}

static int csv_end(void *p, int rc, int *write_failed)
{
	struct tap *t = p;
	size_t i;

	for (i = 0; i < t->nents; i++) {
		struct entity *e = &t->ents[i];

		free(e->name);
		free(e->path);
		singer_tap_free_list(e->keys, e->nkeys);
		free(e->rk);
		singer_tap_free_list(e->drop, e->ndrop);
		sb_free(&e->bm);
	}
	free(t->ents);
	sb_free(&t->state_text);
	sb_free(&t->msg);
	*write_failed = t->write_failed;
	return rc;
}

static const struct singer_tap_hooks hooks = {
	.name = "dataspoc-tap-csv",
	.usage_line = usage_line,
	.help = help_text,
	.about_json = about_json,
	.config = csv_config,
	.discover = csv_discover,
	.sync = csv_sync,
	.end = csv_end,
};

/*
 * Parse the options; with --config, extract (or with --discover, describe)
 * the configured files, then check that stdout took everything.
 */
int main(int argc, char **argv)
{
	struct tap t;

	memset(&t, 0, sizeof(t));
	return singer_tap_main(argc, argv, &hooks, &t);
}
