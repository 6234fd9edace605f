/*
 * tap_csv: what the files of dataspoc-tap-csv share; only they include it.
 *
 *	main.c		--help and --about, and the hooks of singer_tap_main()
 *			(lib/singer_tap.h): the config, the catalog, the
 *			state, then each selected stream
 *	config.c	the config (-c, its csv_files_definition) and the
 *			catalog (-p, --catalog), JSON files read with libjq
 *	state.c		the --state file and the STATE messages, kept as bytes
 *			so that other streams' bookmarks pass unchanged
 *	stream.c	a stream's SCHEMA and RECORD messages; with -d, the
 *			catalog of the configured files
 *	helpers.c	messages, byte strings, whole files, stdout
 *
 * The CSV reader is lib/csv.[ch], shared with google-sheets-public.
 *
 * Functions returning an int status give 0, or the exit status (EXIT_FAIL,
 * EXIT_USAGE) after reporting, unless they say otherwise.
 */
#ifndef TAP_CSV_H
#define TAP_CSV_H

#include <stddef.h>

#include "csv.h"
#include "json.h"
#include "sb.h"
#include "singer_tap.h"


struct entity {
	char *name;		/* the stream: "entity" */
	char *path;		/* relative to the working directory */
	char **keys;		/* "keys": the stream's key_properties */
	size_t nkeys;
	char *rk;		/* "replication_key", or NULL: full table */
	char delim;
	int selected;		/* 0 when the catalog deselects the stream */
	char **drop;		/* columns the catalog deselects */
	size_t ndrop;
	struct sb bm;		/* the bookmark: last replication_key_value */
	int has_bm;
	int bm_changed;		/* bm differs from the --state file's */
	int mark;		/* scratch for state_value() */
};

struct tap {
	const char *config_file;
	const char *state_file;
	const char *catalog_file;
	const char *catalog_what;	/* "catalog" or "properties" */
	struct entity *ents;
	size_t nents;
	struct sb state_text;		/* the --state file */
	struct json_span state;		/* its value, or JSON_NONE */
	struct sb msg;			/* the message being built */
	unsigned long long nrecords;
	int write_failed;		/* already reported */
};

/* ---- helpers.c ---- */

/* 1 when a[0..alen) is the C string b. */
int bytes_eq(const char *a, size_t alen, const char *b);
/* Read a whole file.  0, or -1 with errno set. */
/* Write t->msg to stdout and empty it.  0, or -1 after reporting. */
int emit(struct tap *t);

/* ---- config.c ---- */

/* Read t->config_file (and the file list it names) into t->ents. */
int load_config(struct tap *t);
/* The entity of stream name[0..len), or NULL. */
struct entity *find_entity(struct tap *t, const char *name, size_t len);
/*
 * With a catalog, only the streams it lists are extracted, less those whose
 * stream-level metadata says "selected": false.
 */
int load_catalog(struct tap *t);

/* ---- state.c ---- */

/* Read t->state_file: the bookmarks of the configured streams, and the rest kept. */
int load_state(struct tap *t);
/* Print a STATE message: the bookmarks so far.  0, or -1 after reporting. */
int emit_state(struct tap *t);

/* ---- stream.c ---- */

/* Print e's SCHEMA, its RECORDs (from its bookmark on) and STATEs. */
int sync_stream(struct tap *t, struct entity *e);
/* Print the catalog of the configured files (-d). */
int discover(struct tap *t);

#endif
