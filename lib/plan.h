/*
 * plan: the commit plan, pipe-sink's output and pipe-commit's input, also
 * saved as pending.json while a commit is in flight.  JSON lines:
 *
 *   {"type":"run","pipeline":P,"run_id":R,"started_at":T,"source":S,
 *    "format":"jsonl"|"parquet","compression":C,"incremental":B,"replace":B,"full":B
 *    [,"compact":true]}                      (dataspoc-pipe compact's run: nothing extracted)
 *   {"type":"file","stream":N,"staged":KEY,"final":KEY,"records":n,"bytes":n[,"version":V]}
 *                                           (any number; version: the records' table version)
 *   {"type":"stream","stream":N,"dir":KEY,"records":n,"schema":{..}|null,"key_properties":[..]|null
 *    [,"parquet_types":{"column":"INT64",...}]            (format parquet)
 *    [,"inferred":true]                      (the schema was inferred from the records)
 *    [,"activated":V]                        (an ACTIVATE_VERSION of V: earlier files go)
 *    [,"widened":[{"column","from","to","why","record"},...]]}  (columns widened this run)
 *    [,"load_method":"append-only"|"upsert"|"overwrite"]   (pipe-merge: how the table
 *                                           takes the run; absent: the pipeline's default)
 *    [,"table_rows":n]}                      (upsert: the table's rows once committed)
 *   {"type":"replace","stream":N,"key":KEY,"rows":n}   (pipe-merge: a file of the table
 *                                           that the run's files replace: deleted once
 *                                           they are published, before the state)
 *   {"type":"state","value":{...}}          (only when the tap sent a STATE)
 *   {"type":"checkpoint","unit":u,"records":n}   (checkpoints: ends unit u, 1, 2, ...)
 *   {"type":"end","status":"success"|"failure","records":n,"error":"..."}
 *
 * With incremental.checkpoint_every, pipe-sink's plan is a sequence of
 * commit units: each checkpoint line ends one (its files, its streams'
 * records since the last one, its state); the end line ends the last.
 * plan_slice() makes one plan of units (a, b], the shape pipe-commit
 * publishes and saves as a pending commit; its end line says which units
 * it holds and whether it is a checkpoint or the run's end:
 *
 *   {"type":"end","status":"success"|"checkpoint","records":n,"unit":b}
 *
 * Schema and state values are carried byte for byte.
 */
#ifndef PIPE_PLAN_H
#define PIPE_PLAN_H

#include <stddef.h>

#include "sb.h"

struct plan_file {
	char *stream;
	char *staged;
	char *final;
	unsigned long long records;
	unsigned long long bytes;
	char *version;		/* raw JSON of the records' "version", or NULL */
	unsigned unit;		/* the commit unit it belongs to, from 1 */
};

struct plan_stream {
	char *name;		/* as the tap named it */
	char *dir;		/* the table's folder key, no trailing '/' */
	unsigned long long records;
	char *schema;		/* raw JSON object, or NULL */
	char *key_properties;	/* raw JSON array, or NULL */
	char *parquet_types;	/* format parquet: raw JSON object {"column":"TYPE",...}, or NULL */
	int inferred;		/* schema was inferred from the records (no SCHEMA message) */
	char *activated;	/* raw JSON of the version last activated this run, or NULL: the
				 * stream's earlier files (of this pipeline) are removed at commit */
	char *widened;		/* raw JSON array of the columns widened this run, or NULL */
	unsigned unit;		/* the commit unit it belongs to, from 1 */
	char *load_method;	/* "append-only", "upsert", "overwrite", or NULL: the default */
	char *partition;	/* destination.partition_by: raw JSON {"by","granularity","column"},
				 * or NULL: dt= of the run's date */
	int has_table_rows;	/* table_rows is set */
	unsigned long long table_rows;	/* upsert: the table's rows once committed */
};

/* A file of a table that the run replaces (pipe-merge's upsert). */
struct plan_replace {
	char *stream;
	char *key;
	unsigned long long rows;
	unsigned unit;
};

struct plan {
	char *pipeline;
	char *run_id;
	char *started_at;
	char *source;
	char *format;
	char *compression;
	int incremental;	/* the pipeline is incremental */
	int replace;		/* each stream's previous files (of this pipeline) are replaced */
	int full;		/* run with --full */
	int compact;		/* dataspoc-pipe compact's: its tables rewritten, nothing extracted */

	struct plan_file *files;
	size_t nfiles;
	struct plan_stream *streams;
	size_t nstreams;
	char *state;		/* raw JSON object of the last STATE, or NULL */
	struct plan_replace *replaced;
	size_t nreplaced;

	unsigned nunits;	/* checkpoint lines: units 1..nunits are closed */
	unsigned unit_base;	/* units before the text (a tail of a plan): its units are
				 * unit_base+1..; 0 for a whole plan */
	char **ustates;		/* the last state of each unit 1..nunits+1 (NULL: none) */
	unsigned unit;		/* a slice: the last unit it holds (0: the whole of a run
				 * without checkpoints) */
	int checkpoint;		/* a slice of closed units only: a checkpoint, not the end */

	int ended;		/* an end line was seen */
	int success;		/* ... and it said success (or checkpoint) */
	char *error;		/* its error, or NULL */
	unsigned long long records;
};

/*
 * Parse plan text.  Errors name origin and the line ("<stdin>:3: ...") and
 * return -1.  A plan cut short (no end line) parses with ended = 0.
 */
int plan_parse(const char *text, size_t len, const char *origin, struct plan *p);
void plan_free(struct plan *p);

/* Append the plan's lines, as pipe-sink prints them, to out. */
void plan_format(const struct plan *p, struct sb *out);

/*
 * The same without the run line unless run_line; a plan with checkpoint
 * set and no end ends in a checkpoint line of its unit (pipe-sink prints
 * a unit so).
 */
void plan_format_part(const struct plan *p, int run_line, struct sb *out);

/*
 * One plan of the units after < u <= upto of all (upto: at most
 * all->nunits + 1): their files; their streams merged (records added,
 * widenings joined, the latest schema, types and activation); the last
 * state among them.  It ends in success, unit all->unit_base + upto (0
 * when all has no checkpoints), a checkpoint when upto <= all->nunits.
 */
void plan_slice(const struct plan *all, unsigned after, unsigned upto, struct plan *out);

/* 1 when p has a file of stream (its name): the run lands rows of it in the table. */
int plan_lands(const struct plan *p, const char *stream);

/* The key of the Hive folders stream s's files land in: its partition's "column", or dt. */
char *plan_folder_key(const struct plan_stream *s);

/*
 * 1 when p lands files of its stream s in folders of another key than
 * column (NULL: not known), the key of its table's folders the manifest
 * records: its partition_by changed.  DuckDB's hive_partitioning refuses a
 * table whose files are in folders of two keys ("Hive partition mismatch").
 * Never for a compact (each file stays in its folder) nor a stream that
 * lands no file (its partition is not said).
 */
int plan_refolded(const struct plan *p, const struct plan_stream *s, const char *column);

#endif
