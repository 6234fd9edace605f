/*
 * merge: pipe-merge's work (issue #27), between pipe-sink and pipe-commit.
 *
 * An upsert stream's table (destination.load_method: upsert) holds one row
 * per key.  Its files split the keys by range: each file's rows are in key
 * order (merge_order_key()), the files' ranges never overlap, and a file is
 * named by its range and rows, <dir>/dt=D/<stream>_<run-id>_rMIN-MAX-N.parquet
 * (layout_range_key()).  A run sorts its keys (the last version of each:
 * later records win; a record whose _sdc_deleted_at is set removes its key
 * with hard_delete) and merges them with the files whose ranges they fall
 * in, rewriting only those; keys between files are new and land in files
 * of their own.  A file holds about $DATASPOC_PIPE_MERGE_ROWS rows at most
 * (default 1,000,000); SMALL_FILES neighbouring small files are merged.  A
 * table of the hash layout of older versions (_h<node>.parquet files) is
 * rewritten whole on its next run.  With destination.partition_by each Hive
 * folder of the table is laid out so, and each row is written into the
 * folder of its own value: a key is in one folder, and leaves its old one
 * when its value moves.  See DESIGN.md.
 */
#ifndef PIPE_MERGE_H
#define PIPE_MERGE_H

#include "bucket.h"
#include "config.h"
#include "plan.h"

/*
 * Rewrite plan p (parsed, ended in success, of cfg's pipeline) for its
 * upsert streams: their staged files are read and merged with their
 * tables' current files (read from b), the merged files staged in the
 * run's staging folder; p's file lines of those streams become the merged
 * files, a replace line names each file they replace, and every stream
 * line says its load_method (and an upsert one the table's key and rows).
 * Streams of other load methods keep their files.  0, or -1 after
 * reporting (a record without its key names stream, record and property);
 * what it staged is then the run's staging, for pipe-commit -a.
 */
int merge_plan(struct bucket *b, const struct pipe_config *cfg, struct plan *p);

/*
 * compact: a plan, into p, of run run_id that rewrites the tables of cfg's
 * pipeline (the manifest's tables it landed; only stream's when not NULL)
 * into the one-row-per-key form from their own files, oldest first, as a
 * --full upsert run whose records are those files' rows: each key's last
 * version stays.  The plan carries no state.  0, or -1 after reporting (a
 * stream whose load_method is not upsert, a JSON-lines table, no table).
 */
int merge_compact(struct bucket *b, const struct pipe_config *cfg, const char *run_id, const char *stream,
		  struct plan *p);

/*
 * The order key of key (as the merge holds it: each part's length, a
 * uint32_t, then its JSON text) into out: bytes whose memcmp order is the
 * keys' order, part by part: integers by value, below other values by
 * their text.  A table's file names hold it: never change it.
 */
void merge_order_key(const char *key, size_t len, struct sb *out);

#endif
