/*
 * plan: the commit plan, pipe-sink's output and pipe-commit's input, also
 * saved as pending.json while a commit is in flight.  JSON lines:
 *
 *   {"type":"run","pipeline":P,"run_id":R,"started_at":T,"source":S,
 *    "format":"jsonl"|"parquet","compression":C,"incremental":B,"replace":B,"full":B}
 *   {"type":"file","stream":N,"staged":KEY,"final":KEY,"records":n,"bytes":n}   (any number)
 *   {"type":"stream","stream":N,"dir":KEY,"records":n,"schema":{..}|null,"key_properties":[..]|null
 *    [,"parquet_types":{"column":"INT64",...}]}            (parquet_types: format parquet) 
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
};

struct plan_stream {
	char *name;		/* as the tap named it */
	char *dir;		/* the table's folder key, no trailing '/' */
	unsigned long long records;
	char *schema;		/* raw JSON object, or NULL */
	char *key_properties;	/* raw JSON array, or NULL */
	char *parquet_types;	/* format parquet: raw JSON object {"column":"TYPE",...}, or NULL */
};

struct plan {
	char *pipeline;
	char *run_id;
	char *started_at;
	char *source;
	char *format;
	char *compression;
	int incremental;	/* the pipeline is incremental */
	int replace;		/* each stream's previous files are replaced */
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
