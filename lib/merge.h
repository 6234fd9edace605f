/*
 * merge: pipe-merge's work (issue #27), between pipe-sink and pipe-commit.
 *
 * An upsert stream's table (destination.load_method: upsert) holds one row
 * per key.  Its files split the keys by a hash of each key: a file is a
 * node of a binary trie, numbered as a heap (1 all keys; 2n and 2n+1 the
 * halves of n by the hash's next bit), named
 * <dir>/dt=D/<stream>_<run-id>_h<node>.parquet.  A run rewrites only the
 * nodes its keys fall in: the node's rows whose key the run does not send
 * again, then the last version of each key the run sends (later records
 * win; a record whose _sdc_deleted_at is set removes its key with
 * hard_delete), split in two while a node would hold more than
 * $DATASPOC_PIPE_MERGE_ROWS rows (default 1,000,000).  See DESIGN.md.
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

/* The node (>= 1) of hash h at depth d, and a key's hash (exposed for the tests). */
unsigned long merge_node(unsigned long long h, unsigned d);
unsigned long long merge_hash(const char *key, size_t len);

#endif
