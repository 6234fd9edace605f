/*
 * sink: the heart of pipe-sink.  Reads a Singer stream (pipe-tap's output,
 * ended by its end line), routes each RECORD's bytes into its stream's
 * compressed file(s) under the run's staging area, and describes what it
 * wrote as a commit plan.
 */
#ifndef PIPE_SINK_H
#define PIPE_SINK_H

#include "bucket.h"
#include "config.h"
#include "plan.h"

struct sink_options {
	const char *run_id;	/* the run's id */
	int full;		/* the run ignores the saved state (for the plan) */
	int progress;		/* print progress on stderr */
	int threads;		/* zstd worker threads, 0: none */
	size_t max_open;	/* most files open at once; more streams wait in a spill file */
	uint64_t spill_max;	/* bytes that may wait before a stream takes a file's slot */
	struct transform *transform;	/* applied to every record, or NULL */
	int plan_fd;		/* checkpoints: where each commit unit is written as it closes */
	const char *staging;	/* the prefix files are staged under (a shard's attempt,
				 * layout_shard_staging()); NULL: the run's staging */
	unsigned file_base;	/* the first file number of each stream: shard I of a
				 * sharded run numbers from I * SINK_SHARD_FILES, so that
				 * a stream split across shards has names unique in the run */
};

#define SINK_SHARD_FILES 1000000u

/*
 * Consume fd to its end.  Fills plan: on success its files, streams, state
 * and a success end line; on failure (bad input, no end line, a failed tap,
 * a bucket error) a failure end line carrying the error, with every file it
 * staged removed.  The error is also printed on stderr.  0 or -1.
 */
int sink_run(struct bucket *b, const struct pipe_config *cfg,
	     const struct sink_options *opt, int fd, struct plan *plan);

#endif
