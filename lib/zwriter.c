/*
 * zwriter: records go into an input buffer; a full buffer goes through the
 * compressor (zstd's streaming loop, as in zstd's programs/fileio.c, or
 * zlib's deflate with a gzip header) into an output buffer that is handed
 * to the bucket writer.  Memory is the two buffers plus the compressor's.
 */
#include "zwriter.h"
#include "err.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

/* gzip's and none's buffers; zstd uses its recommended sizes. */
enum { ZW_BUF = 128 * 1024 };

struct zwriter {
	struct bucket_writer *w;
	enum compression c;
	ZSTD_CCtx *zc;
	z_stream zs;
	int zs_ready;
	unsigned char *in, *out;
	size_t in_len, in_cap, out_cap;
	uint64_t in_bytes, out_bytes;
	int failed;
};

/* "bucket/key", for messages. */
static char *zpath(const struct zwriter *z)
{
	return xasprintf("%s/%s", bucket_url(bucket_writer_bucket(z->w)), bucket_writer_key(z->w));
}

static void zfail(struct zwriter *z, const char *what, const char *why)
{
	char *p = zpath(z);

	err_msg("cannot %s '%s': %s", what, p, why);
	free(p);
	z->failed = 1;
}

static int emit(struct zwriter *z, const void *data, size_t len)
{
	if (len == 0)
		return 0;
	if (bucket_writer_write(z->w, data, len) < 0) {
		z->failed = 1;
		return -1;
	}
	z->out_bytes += len;
	return 0;
}

/* Compress data (end: and finish the frame).  0 or -1. */
static int zstd_feed(struct zwriter *z, const void *data, size_t len, int end)
{
	ZSTD_inBuffer in = { data, len, 0 };
	ZSTD_EndDirective mode = end ? ZSTD_e_end : ZSTD_e_continue;

	for (;;) {
		ZSTD_outBuffer out = { z->out, z->out_cap, 0 };
		size_t left = ZSTD_compressStream2(z->zc, &out, &in, mode);

		if (ZSTD_isError(left)) {
			zfail(z, "compress", ZSTD_getErrorName(left));
			return -1;
		}
		if (emit(z, z->out, out.pos) < 0)
			return -1;
		/* e_end: 0 once the frame is out; e_continue: once input is taken. */
		if (end ? left == 0 : in.pos == in.size)
			return 0;
	}
}

static int gzip_feed(struct zwriter *z, const void *data, size_t len, int end)
{
	const unsigned char *p = data;

	for (;;) {
		uInt chunk = len > UINT_MAX ? UINT_MAX : (uInt)len;
		int flush = end && chunk == len ? Z_FINISH : Z_NO_FLUSH;
		int r;

		/* zlib's next_in is not const in older headers; it only reads it. */
		z->zs.next_in = (Bytef *)(uintptr_t)p;
		z->zs.avail_in = chunk;
		do {
			z->zs.next_out = z->out;
			z->zs.avail_out = (uInt)z->out_cap;
			r = deflate(&z->zs, flush);
			/* Z_BUF_ERROR: no progress possible, which is no error here. */
			if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR) {
				zfail(z, "compress", z->zs.msg ? z->zs.msg : zError(r));
				return -1;
			}
			if (emit(z, z->out, z->out_cap - z->zs.avail_out) < 0)
				return -1;
		} while (flush == Z_FINISH ? r != Z_STREAM_END : z->zs.avail_out == 0);
		p += chunk;
		len -= chunk;
		if (len == 0)
			return 0;
	}
}

static int feed(struct zwriter *z, const void *data, size_t len, int end)
{
	switch (z->c) {
	case COMPRESSION_ZSTD:
		return zstd_feed(z, data, len, end);
	case COMPRESSION_GZIP:
		return gzip_feed(z, data, len, end);
	case COMPRESSION_NONE:
	case COMPRESSION_SNAPPY:	/* refused by zwriter_open() */
		break;
	}
	return emit(z, data, len);
}

static void zfree(struct zwriter *z)
{
	ZSTD_freeCCtx(z->zc);
	if (z->zs_ready)
		deflateEnd(&z->zs);
	free(z->in);
	free(z->out);
	free(z);
}

static int zstd_setup(struct zwriter *z, int level, int threads)
{
	ZSTD_bounds lv = ZSTD_cParam_getBounds(ZSTD_c_compressionLevel);
	size_t r;
	char why[96];

	if (level == 0)
		level = 3;
	if (level < lv.lowerBound || level > lv.upperBound) {
		snprintf(why, sizeof(why), "zstd level %d is out of range (%d..%d)",
			 level, lv.lowerBound, lv.upperBound);
		zfail(z, "compress", why);
		return -1;
	}
	z->zc = ZSTD_createCCtx();
	if (z->zc == NULL) {
		zfail(z, "compress", "out of memory");
		return -1;
	}
	r = ZSTD_CCtx_setParameter(z->zc, ZSTD_c_compressionLevel, level);
	if (!ZSTD_isError(r))
		r = ZSTD_CCtx_setParameter(z->zc, ZSTD_c_checksumFlag, 1);
	if (ZSTD_isError(r)) {
		zfail(z, "compress", ZSTD_getErrorName(r));
		return -1;
	}
	if (threads > 0) {
		r = ZSTD_CCtx_setParameter(z->zc, ZSTD_c_nbWorkers, threads);
		/* A libzstd built without threads: compress in this one. */
		if (ZSTD_isError(r) && ZSTD_cParam_getBounds(ZSTD_c_nbWorkers).upperBound > 0) {
			zfail(z, "compress", ZSTD_getErrorName(r));
			return -1;
		}
		/*
		 * Workers compress contiguous 1 MiB jobs: cheaper per byte than
		 * single-threaded streaming, whose ring buffer sends most blocks
		 * down zstd's slower two-segment (extDict) path, and far less
		 * memory than the default jobs of 4 windows (bench/PROFILE.md).
		 */
		if (!ZSTD_isError(r)) {
			r = ZSTD_CCtx_setParameter(z->zc, ZSTD_c_jobSize, 1 << 20);
			if (ZSTD_isError(r)) {
				zfail(z, "compress", ZSTD_getErrorName(r));
				return -1;
			}
		}
	}
	z->in_cap = ZSTD_CStreamInSize();
	z->out_cap = ZSTD_CStreamOutSize();
	return 0;
}

static int gzip_setup(struct zwriter *z, int level)
{
	int r;
	char why[64];

	if (level == 0)
		level = 6;
	if (level < 1 || level > 9) {
		snprintf(why, sizeof(why), "gzip level %d is out of range (1..9)", level);
		zfail(z, "compress", why);
		return -1;
	}
	/* windowBits 15 + 16: a gzip header and trailer, as gzip(1) writes. */
	r = deflateInit2(&z->zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
	if (r != Z_OK) {
		zfail(z, "compress", z->zs.msg ? z->zs.msg : zError(r));
		return -1;
	}
	z->zs_ready = 1;
	z->in_cap = ZW_BUF;
	z->out_cap = ZW_BUF;
	return 0;
}

struct zwriter *zwriter_open(struct bucket_writer *w, enum compression c,
			     int level, int threads)
{
	struct zwriter *z;
	int r = -1;

	if (w == NULL)
		return NULL;
	z = xcalloc(1, sizeof(*z));
	z->w = w;
	z->c = c;
	if (threads < 0) {
		zfail(z, "compress", "negative number of threads");
		goto out;
	}
	switch (c) {
	case COMPRESSION_ZSTD:
		r = zstd_setup(z, level, threads);
		break;
	case COMPRESSION_GZIP:
		r = gzip_setup(z, level);
		break;
	case COMPRESSION_NONE:
		z->in_cap = ZW_BUF;
		r = 0;
		break;
	default:
		zfail(z, "compress", "unknown compression");
		break;
	}
out:
	if (r < 0) {
		bucket_writer_abort(w);
		zfree(z);
		return NULL;
	}
	z->in = xmalloc(z->in_cap);
	if (z->out_cap)
		z->out = xmalloc(z->out_cap);
	return z;
}

int zwriter_write(struct zwriter *z, const void *data, size_t len)
{
	const char *p = data;

	if (z->failed)
		return -1;
	z->in_bytes += len;
	while (len > 0) {
		size_t n;

		/* A big write with an empty buffer goes straight through. */
		if (z->in_len == 0 && len >= z->in_cap)
			return feed(z, p, len, 0);
		n = z->in_cap - z->in_len;
		if (n > len)
			n = len;
		memcpy(z->in + z->in_len, p, n);
		z->in_len += n;
		p += n;
		len -= n;
		if (z->in_len == z->in_cap) {
			if (feed(z, z->in, z->in_len, 0) < 0)
				return -1;
			z->in_len = 0;
		}
	}
	return 0;
}

uint64_t zwriter_in_bytes(const struct zwriter *z)
{
	return z->in_bytes;
}

uint64_t zwriter_out_bytes(const struct zwriter *z)
{
	return z->out_bytes;
}

int zwriter_close(struct zwriter *z)
{
	return zwriter_close_size(z, NULL);
}

int zwriter_close_size(struct zwriter *z, uint64_t *bytes)
{
	int r;

	if (z == NULL)
		return -1;
	if (z->failed || feed(z, z->in, z->in_len, 1) < 0) {
		zwriter_abort(z);
		return -1;
	}
	if (bytes)
		*bytes = z->out_bytes;
	r = bucket_writer_close(z->w);
	zfree(z);
	return r;
}

void zwriter_abort(struct zwriter *z)
{
	if (z == NULL)
		return;
	bucket_writer_abort(z->w);
	zfree(z);
}
