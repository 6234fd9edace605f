/*
 * dataspoc-tap-parquet: the built-in Singer tap for Parquet files (the
 * YAML's "tap: parquet"): every file under a path that matches a glob, read
 * with lib/pqread.h, printed as one stream: a SCHEMA (again whenever a
 * file's columns differ), its RECORDs, then a STATE listing the files read,
 * so that with --state only files not read before are read.  The program's
 * files, and what each holds, are listed in tap_parquet.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sb.h"
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

static void tap_free(struct tap *t)
{
	free(t->path);
	free(t->stream);
	free(t->glob);
	free(t->endpoint);
	free_list(t->keys, t->nkeys);
	free_list(t->drop, t->ndrop);
	free_list(t->done, t->ndone);
	free_list(t->read, t->nread);
	sb_free(&t->state_text);
	sb_free(&t->msg);
	sb_free(&t->schema);
}

static int usage(void)
{
	fputs(usage_line, stderr);
	return EXIT_USAGE;
}

enum { OPT_ABOUT = 256, OPT_CATALOG, OPT_VERSION };

/*
 * Parse the options; with --config, extract (or with --discover, describe)
 * the files, then check that stdout took everything.
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

	err_init(argv[0]);
	memset(&t, 0, sizeof(t));
	t.selected = 1;
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
			printf("dataspoc-tap-parquet %s\n", PIPE_VERSION);
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
	if ((rc = load_config(&t)) != 0)
		goto out;
	if (disc) {
		rc = discover(&t);
		goto out;
	}
	if (t.catalog_file != NULL && (rc = load_catalog(&t)) != 0)
		goto out;
	if (t.state_file != NULL && (rc = load_state(&t)) != 0)
		goto out;
	rc = sync_files(&t);
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
