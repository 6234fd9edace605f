/*
 * layout: the bucket's key layout (DESIGN.md, "Bucket layout"), the one
 * place that builds a key and reads one back:
 *
 *   .dataspoc/manifest.json, manifest.lock      the catalog and its lock
 *   .dataspoc/state/P/state.json, lock           a pipeline's state and run lock
 *   .dataspoc/state/P/pending/R.json             a commit's plan (pending.json: older versions)
 *   .dataspoc/state/P/checkpoints/R.json         a run's checkpoints
 *   .dataspoc/staging/P/R/                       a run's staged files
 *   .dataspoc/staging/P/R/shards/plan.json       a sharded run's plan (pipe-shard plan)
 *   .dataspoc/staging/P/R/shards/I.json          shard I's commit plan (pipe-shard put)
 *   .dataspoc/staging/P/R/shards/I-A/            the files staged by attempt A of shard I
 *   .dataspoc/logs/P/R.json                      a run's log
 *   .dataspoc/probe/...                          validate's probes
 *   DIR/dt=D/SAFE_R_NNNN.EXT                     a data file (_dt=, __dt=...
 *                                                when the stream has a dt column)
 *   DIR/K=V/SAFE_R_NNNN.EXT                      ... of a table with partition_by
 *   DIR/dt=D/SAFE_R_rMIN-MAX-N.parquet           a file of an upsert table: its keys' range, rows
 *   DIR/K=V/SAFE_R_rMIN-MAX-N.parquet            ... of an upsert table with partition_by
 *   DIR/dt=D/SAFE_R_hNNNN.parquet                ... of older versions: node NNNN of a hash trie
 *
 * P is a pipeline's name, R a run id.  Each builder returns a new string.
 */
#ifndef PIPE_LAYOUT_H
#define PIPE_LAYOUT_H

#include <stddef.h>

#include "sb.h"

/* The folder of the tool's own keys (state, logs, staging, probes, the manifest). */
#define LAYOUT_META ".dataspoc/"
#define LAYOUT_MANIFEST_KEY ".dataspoc/manifest.json"
#define LAYOUT_MANIFEST_LOCK_KEY ".dataspoc/manifest.lock"
/* validate's probe objects: PREFIX RUN-PID, always removed */
#define LAYOUT_PROBE_PREFIX ".dataspoc/probe/"

char *layout_state_key(const char *pipeline);	/* .dataspoc/state/P/state.json */
char *layout_lock_key(const char *pipeline);	/* .dataspoc/state/P/lock */
char *layout_pending_key(const char *pipeline, const char *run_id);	/* .dataspoc/state/P/pending/R.json ; R NULL: .dataspoc/state/P/pending/ */
char *layout_checkpoint_key(const char *pipeline, const char *run_id);	/* .dataspoc/state/P/checkpoints/R.json ; R NULL: the folder */
char *layout_pending_legacy_key(const char *pipeline);	/* .dataspoc/state/P/pending.json, of older versions */
char *layout_staging_prefix(const char *pipeline, const char *run_id);	/* .dataspoc/staging/P/R/ ; R NULL: .dataspoc/staging/P/ */
char *layout_log_key(const char *pipeline, const char *run_id);	/* .dataspoc/logs/P/R.json ; R NULL: .dataspoc/logs/P/ */
/* A sharded run's objects, under its staging (gone with it): shard -1: the
 * run's plan, .dataspoc/staging/P/R/shards/plan.json; else shard's commit
 * plan, .dataspoc/staging/P/R/shards/I.json. */
char *layout_shard_key(const char *pipeline, const char *run_id, long shard);
/* Where attempt A (the attempt's own run id) of shard I stages its files:
 * .dataspoc/staging/P/R/shards/I-A/ */
char *layout_shard_staging(const char *pipeline, const char *run_id, unsigned long shard,
			   const char *attempt);
char *layout_state_dir(const char *pipeline);	/* .dataspoc/state/P/ */

/*
 * The pipeline whose state key is key (.dataspoc/state/P/state.json): P's
 * length, P starting at key + sizeof(LAYOUT_STATE_PREFIX) - 1; 0 when key
 * is no state key.
 */
#define LAYOUT_STATE_PREFIX ".dataspoc/state/"
size_t layout_state_pipeline(const char *key);

/*
 * A stream's folder (of the layout's .../<stream>/ level): '/', '\\' and a
 * leading '.' become '_'.  Returns NULL (the reason appended to why) for
 * names that cannot be made safe: empty, or holding control bytes.
 */
char *layout_stream_folder(const char *name, size_t len, struct sb *why);

/*
 * The date folder's Hive key of a stream whose columns are named by has():
 * "dt", or, when that is a column of the stream, the first of "_dt",
 * "__dt", ... that is none.  A reader that takes the folder as a column
 * (DuckDB's hive_partitioning gives the folder precedence over the file's
 * column) then reads every value the tap sent unchanged.  The number of
 * leading '_' (at most LAYOUT_DATE_UNDERS_MAX).
 */
#define LAYOUT_DATE_UNDERS_MAX 8
unsigned layout_date_unders(int (*has)(const char *column, void *arg), void *arg);

/*
 * The length of the date folder's "dt=" ("_dt=", ...) at seg's start
 * (a folder of the layout's), or 0 when seg starts with none.
 */
size_t layout_date_folder(const char *seg);

/*
 * A data file's key, DIR/dt=DATE/SAFE_RUN_NNNN<suffix><ext> (NNNN: index,
 * %04u; suffix: the writer's, ".parquet" or ".jsonl"; ext: the
 * compression's, "" or ".zst" or ".gz"); unders '_' before "dt="
 * (layout_date_unders()).
 */
char *layout_data_key(const char *dir, unsigned unders, const char *date, const char *safe,
		      const char *run_id, unsigned index, const char *suffix, const char *ext);

/*
 * A data file of a table with partition_by: DIR/FOLDER/SAFE_RUN_NNNN<suffix><ext>,
 * FOLDER its Hive folder "KEY=VALUE" (lib/sink/sink_part.c).
 */
char *layout_part_key(const char *dir, const char *folder, const char *safe, const char *run_id,
		      unsigned index, const char *suffix, const char *ext);

/*
 * The VALUE of a Hive folder KEY=VALUE of partition_by (lib/sink/sink_part.c)
 * for the record field's value v at granularity gran (enum
 * config_granularity): a date-time's UTC day (2024-01-31), hour
 * (2024-01-31T13), month (2024-01) or year (2024); a string, number or
 * boolean itself, percent-encoded ([A-Za-z0-9_-] and a '.' not leading
 * stay), appended to out (scratch: a decoded string): 1; 0 when it has
 * none (null, not of that shape, or with value empty or over
 * LAYOUT_PART_VALUE_MAX bytes): its folder is LAYOUT_PART_NULL.
 */
#define LAYOUT_PART_NULL "__HIVE_DEFAULT_PARTITION__"
#define LAYOUT_PART_VALUE_MAX 128
/* Folders of one stream one run makes at most: more is a field of too many values. */
#define LAYOUT_PART_MAX 10000
struct json_span;
int layout_part_value(int gran, const struct json_span *v, struct sb *out, struct sb *scratch);

/* 1 when the n bytes at p name a Hive folder of data files: "K=V", K not empty, no leading '.'. */
int layout_hive_folder(const char *p, size_t n);

/*
 * A data file's key split (what layout_data_key() built): its table folder
 * DIR, SAFE and RUN (new strings), and the format and compression its
 * ending names ("parquet"/NULL, "jsonl"/"zstd", "gzip" or "none").  0, or
 * -1 when key is of another shape (then nothing is allocated).
 */
int layout_data_key_split(const char *key, char **dir, char **safe, char **run,
			  const char **format, const char **compression);

/*
 * A file of an upsert table of older versions, laid out by a hash trie:
 * DIR/dt=DATE/SAFE_RUN_hNNNN.parquet, node NNNN (>= 1); the node a key of
 * that shape names (0: another shape), for lib/merge.c to rewrite such a
 * table by key range.  layout_data_key_split() reads it as a data file too.
 */
unsigned long layout_node_of(const char *key);

/*
 * A file of an upsert table's key range layout (lib/merge.h):
 * DIR/FOLDER/SAFE_RUN_rMIN-MAX-ROWS.parquet (FOLDER: dt=DATE, or the Hive
 * folder KEY=VALUE of partition_by), MIN and MAX the bounds of
 * its keys' order bytes (nmin and nmax bytes, base32: 0-9a-v), ROWS its
 * rows; and the bounds (into min and max) and rows of a key of that
 * shape: 1, or 0 for another shape.  layout_data_key_split() reads it as
 * a data file too.
 */
char *layout_range_key(const char *dir, const char *folder, const char *safe, const char *run_id,
		       const void *min, size_t nmin, const void *max, size_t nmax, unsigned long long rows);
int layout_range_of(const char *key, struct sb *min, struct sb *max, unsigned long long *rows);

/* The run id of a run log key (.dataspoc/logs/P/R.json), new, or NULL. */
char *layout_log_run(const char *key);

#endif
