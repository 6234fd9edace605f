/*
 * compact: dataspoc-pipe compact's work on an append-only table (issue
 * #27): frequent runs leave many small files, each slowing every reader;
 * neighbours in one folder (dt=, or partition_by's), of one column layout,
 * each smaller than max_file_size, are read and written again into files
 * of max_file_size, row for row, when fewer files would hold them.  The
 * new files take the first one's name with more digits, so that they sort
 * where it did (oldest first, as pipe-merge -C reads a table).  Parquet
 * only: JSON-lines files stay as they are.  An upsert table is compacted
 * by pipe-merge -C (lib/merge.h).
 */
#ifndef PIPE_COMPACT_H
#define PIPE_COMPACT_H

#include "bucket.h"
#include "config.h"
#include "plan.h"

/*
 * Add to plan p (a compact run's, lib/merge.h's merge_compact()) the files
 * that replace stream s's small files in its table s->dir (staged in the
 * run's staging folder) and a replace line for each file they replace;
 * s->records becomes the rows rewritten.  Nothing to merge adds nothing.
 * 0, or -1 after reporting.
 */
int compact_files(struct bucket *b, const struct pipe_config *cfg, struct plan *p, struct plan_stream *s);

#endif
