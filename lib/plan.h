/*
 * plan: the commit plan, pipe-sink's output and pipe-commit's input, also
 * saved as pending.json while a commit is in flight.  JSON lines:
 *
 *   {"type":"run","pipeline":P,"run_id":R,"started_at":T,"source":S,
 *    "format":"jsonl"|"parquet","compression":C,"incremental":B,"replace":B,"full":B}
 *   {"type":"file","stream":N,"staged":KEY,"final":KEY,"records":n,"bytes":n[,"version":V]}
 *                                           (any number; version: the records' table version)
 *   {"type":"stream","stream":N,"dir":KEY,"records":n,"schema":{..}|null,"key_properties":[..]|null
 *    [,"parquet_types":{"column":"INT64",...}]            (format parquet)
 *    [,"inferred":true]                      (the schema was inferred from the records)
 *    [,"activated":V]                        (an ACTIVATE_VERSION of V: earlier files go)
 *    [,"widened":[{"column","from","to","why","record"},...]]}  (columns widened this run)
 *   {"type":"state","value":{...}}          (only when the tap sent a STATE)
 *   {"type":"end","status":"success"|"failure","records":n,"error":"..."}
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

	struct plan_file *files;
	size_t nfiles;
	struct plan_stream *streams;
	size_t nstreams;
	char *state;		/* raw JSON object of the last STATE, or NULL */

	int ended;		/* an end line was seen */
	int success;		/* ... and it said success */
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

#endif
