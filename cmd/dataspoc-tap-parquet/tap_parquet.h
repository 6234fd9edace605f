/*
 * tap_parquet: what the files of dataspoc-tap-parquet share; only they
 * include it.
 *
 *	main.c		--help and --about, and the hooks of singer_tap_main()
 *			(lib/singer_tap.h): the config, the catalog, the
 *			state, then the files
 *	config.c	the config (-c), the catalog (-p, --catalog) and the
 *			--state file; the STATE message
 *	files.c		the files under the path: listed, matched to the glob,
 *			read (lib/pqread.h) and printed as SCHEMA and RECORDs;
 *			with -d, the catalog of the first one
 *
 * Functions returning an int status give 0, or the exit status (EXIT_FAIL,
 * EXIT_USAGE) after reporting.
 */
#ifndef TAP_PARQUET_H
#define TAP_PARQUET_H

#include <stddef.h>

#include "json.h"
#include "sb.h"
#include "singer_tap.h"


struct tap {
	const char *config_file;
	const char *state_file;
	const char *catalog_file;
	const char *catalog_what;	/* "catalog" or "properties" */

	/* the config */
	char *path;		/* "path": a folder (local, file://, s3://, gs://) or one file */
	char *stream;		/* "stream_name" */
	char *glob;		/* "glob", relative to path */
	char *endpoint;		/* "endpoint_url", or NULL */
	int hive;		/* "hive_partitioning" */
	char **keys;		/* "key_properties" */
	size_t nkeys;

	/* the catalog */
	int selected;		/* 0 when the catalog leaves the stream out */
	char **drop;		/* columns it deselects */
	size_t ndrop;

	/* the state */
	struct sb state_text;	/* the --state file */
	struct json_span state;	/* its value, or type JSON_NONE */
	char **done;		/* files read by earlier runs, sorted */
	size_t ndone;

	/* the run */
	char **read;		/* files read now or before that still exist, sorted */
	size_t nread;
	struct sb msg;		/* output not yet written */
	struct sb schema;	/* the last SCHEMA's "schema", to print a new one only on change */
	int has_schema;
	unsigned long long nrecords;
	int write_failed;	/* already reported */
};

/* ---- config.c ---- */

/* 1 when the sorted list holds s. */
int in_sorted(char *const *list, size_t n, const char *s);

int load_config(struct tap *t);
int load_catalog(struct tap *t);
/* The state's list of files read for the stream, into t->done. */
int load_state(struct tap *t);
/* Append the STATE message (t->read as this stream's files) to t->msg. */
void add_state(struct tap *t);
/* Write t->msg to stdout and empty it.  0, or -1 after reporting. */
int emit(struct tap *t);

/* ---- files.c ---- */

/* 1 when key (relative, '/'-separated) matches glob ("**" any folders, never hidden ones). */
int glob_match(const char *glob, const char *key);
/* Read the files not yet read, print SCHEMA, RECORDs, then one STATE. */
int sync_files(struct tap *t);
/* Print the catalog of the stream, its schema from the first file (-d). */
int discover(struct tap *t);

#endif
