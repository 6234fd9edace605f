/*
 * zwriter: a streaming compressed writer (zstd, gzip or none) on top of a
 * bucket_writer.  Memory is bounded by its buffers, whatever is written.
 */
#ifndef PIPE_ZWRITER_H
#define PIPE_ZWRITER_H

#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "compression.h"

struct zwriter;

/*
 * Start a compressed stream into w (the zwriter owns w from now on).
 * level: 0 means the default (zstd 3, gzip 6).  threads: zstd worker threads,
 * 0 for none (single-threaded).  Returns NULL on error (and aborts w).
 */
struct zwriter *zwriter_open(struct bucket_writer *w, enum compression c,
			     int level, int threads);

/* Add bytes to the stream.  Small writes are buffered.  0 or -1. */
int zwriter_write(struct zwriter *z, const void *data, size_t len);

/* Bytes handed in so far, and compressed bytes produced so far (approximate until close). */
uint64_t zwriter_in_bytes(const struct zwriter *z);
uint64_t zwriter_out_bytes(const struct zwriter *z);

/* Finish the frame and close the underlying writer; frees z.  0 or -1. */
int zwriter_close(struct zwriter *z);

/* The same, and *bytes (when not NULL) gets the whole object's size. */
int zwriter_close_size(struct zwriter *z, uint64_t *bytes);

/* Drop everything (the partial object is removed); frees z. */
void zwriter_abort(struct zwriter *z);

#endif
