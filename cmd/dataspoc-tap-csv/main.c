/*
 * dataspoc-tap-csv: the project's built-in sample source, a Singer tap that
 * reads CSV files (RFC 4180) and prints SCHEMA, RECORD and STATE messages.
 *
 * Every value is a JSON string.  Files are read one row at a time, so memory
 * stays bounded by the longest row, whatever the size of the file.  The
 * program's files, and what each holds, are listed in tap_csv.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sb.h"
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
		free_list(e->keys, e->nkeys);
		free(e->rk);
		free_list(e->drop, e->ndrop);
		sb_free(&e->bm);
	}
	free(t->ents);
	sb_free(&t->state_text);
	sb_free(&t->msg);
}

static int usage(void)
{
	fputs(usage_line, stderr);
	return EXIT_USAGE;
}

enum { OPT_ABOUT = 256, OPT_CATALOG, OPT_VERSION };

/*
 * Parse the options; with --config, extract (or with --discover, describe)
 * the configured files, then check that stdout took everything.
 */
int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "about", no_argument, NULL, OPT_ABOUT },
		{ "catalog", required_argument, NULL, OPT_CATALOG },
		{ "config", required_argument, NULL, 'c' },
		{ "discover", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "properties", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	struct tap t;
	const char *catalog = NULL, *properties = NULL;
	int about = 0, disc = 0, ch, rc = 0;
	size_t i;

	err_init(argv[0]);
	memset(&t, 0, sizeof(t));
	opterr = 0;	/* getopt would print the whole argv[0] */
	while ((ch = getopt_long(argc, argv, ":c:dhp:s:", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_ABOUT:
			about = 1;
			break;
		case OPT_CATALOG:
			catalog = optarg;
			break;
		case 'c':
			t.config_file = optarg;
			break;
		case 'd':
			disc = 1;
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs("\n", stdout);
			fputs(help_text, stdout);
			goto out;
		case 'p':
			properties = optarg;
			break;
		case 's':
			t.state_file = optarg;
			break;
		case OPT_VERSION:
			printf("dataspoc-tap-csv %s\n", PIPE_VERSION);
			goto out;
		case ':':
			err_msg("option '%s' needs an argument", argv[optind - 1]);
			rc = usage();
			goto out;
		default:
			if (optopt > 0 && optopt < 256)
				err_msg("unknown option '-%c'", optopt);
			else
				err_msg("unknown option '%s'", argv[optind - 1]);
			rc = usage();
			goto out;
		}
	}
	if (optind < argc) {
		err_msg("unexpected argument '%s'", argv[optind]);
		rc = usage();
		goto out;
	}
	if (about) {
		rc = print_pretty(&t, about_json, sizeof(about_json) - 1);
		goto out;
	}
	if (t.config_file == NULL) {
		err_msg("--config is required");
		rc = usage();
		goto out;
	}
	if (catalog != NULL && properties != NULL) {
		err_msg("--catalog and --properties are exclusive");
		rc = usage();
		goto out;
	}
	t.catalog_file = catalog ? catalog : properties;
	t.catalog_what = catalog ? "catalog" : "properties";

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	rc = load_config(&t);
	if (rc)
		goto out;
	if (disc) {
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
	if (fclose(stdout) != 0 && !t.write_failed) {
		if (errno != EPIPE)
			err_msg("cannot write 'standard output':");
		if (rc == 0)
			rc = EXIT_FAIL;
	}
	if (t.write_failed && rc == 0)
		rc = EXIT_FAIL;
	return rc;
}
