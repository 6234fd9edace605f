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

static void tap_free(struct tap *t)
{
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
}

/*
 * Parse the options; with --config, extract (or with --discover, describe)
 * the configured files, then check that stdout took everything.
 */
int main(int argc, char **argv)
{
	struct tap t;
	struct singer_tap_args a;
	int rc;
	size_t i;

	err_init(argv[0]);
	memset(&t, 0, sizeof(t));
	rc = singer_tap_args(argc, argv, "dataspoc-tap-csv", usage_line, help_text, &a);
	if (rc != SINGER_TAP_GO)
		goto out;
	rc = 0;
	if (a.about) {
		rc = singer_tap_print_pretty(about_json, sizeof(about_json) - 1, &t.msg, &t.write_failed);
		goto out;
	}
	t.config_file = a.config;
	t.state_file = a.state;
	t.catalog_file = a.catalog ? a.catalog : a.properties;
	t.catalog_what = a.catalog ? "catalog" : "properties";

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	rc = load_config(&t);
	if (rc)
		goto out;
	if (a.discover) {
		rc = discover(&t);
		goto out;
	}
	if (t.catalog_file != NULL && (rc = load_catalog(&t)) != 0)
		goto out;
	if (t.state_file != NULL && (rc = load_state(&t)) != 0)
		goto out;
	for (i = 0; i < t.nents && rc == 0; i++)
		if (t.ents[i].selected)
			rc = sync_stream(&t, &t.ents[i]);
out:
	tap_free(&t);
	return singer_tap_finish(rc, t.write_failed);
}
