/*
 * zwriter: a compressed writer (zstd, gzip or none) on top of a
 * bucket_writer.  A file is a sequence of independent frames (zstd) or
 * members (gzip), each the compression of one chunk of its bytes, which
 * zstd -d and gzip -d read back as one stream.  Writers share a pool
 * (struct zpool): its compression threads, and the memory that holds the
 * bytes not yet compressed, bounded for all the writers of the pool
 * together, whatever is written and however many writers are open.
 *
 * Where a chunk ends depends only on the bytes written, their writers and
 * the order of the calls, never on the threads: the files are byte for
 * byte the same with any number of them, none included.  Only the thread
 * that opened a pool's writers calls them (and writes the bucket).
 */
#ifndef PIPE_ZWRITER_H
#define PIPE_ZWRITER_H

#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "compression.h"

struct zpool;
struct zwriter;

/*
 * A pool of threads compression threads (0: chunks are compressed in the
 * calling thread, when they end).  NULL on error (reported).
 */
struct zpool *zpool_new(int threads);

/* Stop the threads and free the pool; its writers are closed or aborted first.  NULL is fine. */
void zpool_free(struct zpool *p);

/*
 * Start a compressed file on w (the zwriter owns w from now on).  level: 0
 * means the default (zstd 3, gzip 6).  pool: the pool it shares, or NULL
 * for a pool of its own without threads.  Returns NULL on error (and
 * aborts w).
 */
struct zwriter *zwriter_open(struct bucket_writer *w, enum compression c,
			     int level, struct zpool *pool);

/* Add bytes to the file.  They are buffered.  0 or -1. */
int zwriter_write(struct zwriter *z, const void *data, size_t len);

/*
 * Bytes handed in so far; compressed bytes handed to the bucket so far
 * (with threads, what is compressed reaches the bucket a little later).
 */
uint64_t zwriter_in_bytes(const struct zwriter *z);
uint64_t zwriter_out_bytes(const struct zwriter *z);

/*
 * 1 when the frames of the chunks ended so far take at least limit bytes,
 * else 0: the same answer with any number of threads (it waits for this
 * writer's chunks in flight only when they could make the difference).
 * Bytes not yet in an ended chunk (at most a chunk, 128 KiB) are not counted.
 */
int zwriter_reached(struct zwriter *z, uint64_t limit);

/*
 * End the chunk being filled now (its frame is compressed meanwhile), as
 * closing the file would: the file's bytes are the same either way.  0 or -1.
 */
int zwriter_flush(struct zwriter *z);

/* Finish the file and close the underlying writer; frees z.  0 or -1. */
int zwriter_close(struct zwriter *z);

/* The same, and *bytes (when not NULL) gets the whole object's size. */
int zwriter_close_size(struct zwriter *z, uint64_t *bytes);

/* Drop everything (the partial object is removed); frees z. */
void zwriter_abort(struct zwriter *z);

#endif
