/*
 * parquet_codec: a writer's pages compressed (ZSTD, SNAPPY, GZIP or not at
 * all) and framed with their page header into their column chunk, in the
 * parsing thread or by the codec's worker thread.
 */
#include "parquet_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "err.h"

int pq_comp_init(struct pq_comp *k, enum compression c, int level)
{
	memset(k, 0, sizeof(*k));
	k->c = c;
	k->level = level ? level : c == COMPRESSION_GZIP ? 6 : 3;
	if (c == COMPRESSION_ZSTD) {
		k->zc = ZSTD_createCCtx();
		if (k->zc == NULL) {
			err_msg("cannot start zstd: out of memory");
			return -1;
		}
	} else if (c == COMPRESSION_GZIP) {
		int r = deflateInit2(&k->zs, k->level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);

		if (r != Z_OK) {
			err_msg("cannot start gzip: %s", zError(r));
			return -1;
		}
		k->zs_ready = 1;
	}
	return 0;
}

void pq_comp_free(struct pq_comp *k)
{
	ZSTD_freeCCtx(k->zc);
	k->zc = NULL;
	if (k->zs_ready)
		deflateEnd(&k->zs);
	k->zs_ready = 0;
	sb_free(&k->out);
	sb_free(&k->header);
	sb_free(&k->page);
}

static void *worker(void *arg);

struct pq_codec *pq_codec_new(enum compression c, int level, int threads)
{
	struct pq_codec *k = xcalloc(1, sizeof(*k));
	int r;

	if (pq_comp_init(&k->main, c, level) != 0)
		goto fail;
	if (threads <= 0)
		return k;
	if (pq_comp_init(&k->wk, c, level) != 0)
		goto fail;
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->job, NULL);
	pthread_cond_init(&k->done, NULL);
	r = pthread_create(&k->thread, NULL, worker, k);
	if (r != 0) {
		err_msg("cannot start the Parquet page compressor's thread: %s", strerror(r));
		pthread_cond_destroy(&k->done);
		pthread_cond_destroy(&k->job);
		pthread_mutex_destroy(&k->mu);
		goto fail;
	}
	k->threaded = 1;
	return k;
fail:
	pq_comp_free(&k->wk);
	pq_comp_free(&k->main);
	free(k);
	return NULL;
}

void pq_codec_free(struct pq_codec *k)
{
	size_t i;

	if (k == NULL)
		return;
	if (k->threaded) {
		pthread_mutex_lock(&k->mu);
		k->quit = 1;
		pthread_cond_signal(&k->job);
		pthread_mutex_unlock(&k->mu);
		pthread_join(k->thread, NULL);
		pthread_cond_destroy(&k->done);
		pthread_cond_destroy(&k->job);
		pthread_mutex_destroy(&k->mu);
	}
	for (i = 0; i < PQ_QUEUE; i++) {
		sb_free(&k->ring[i].raw);
		pq_rg_free(k->ring[i].rg);
	}
	pq_comp_free(&k->wk);
	pq_comp_free(&k->main);
	free(k);
}

int pq_codec_id(const struct pq_codec *k)
{
	switch (k->main.c) {
	case COMPRESSION_ZSTD: return CODEC_ZSTD;
	case COMPRESSION_GZIP: return CODEC_GZIP;
	case COMPRESSION_SNAPPY: return CODEC_SNAPPY;
	case COMPRESSION_NONE: break;
	}
	return CODEC_UNCOMPRESSED;
}

int pq_compress_page(struct pq_comp *k, const char *src, size_t n, const char **dst, size_t *dlen)
{
	if (k->c == COMPRESSION_NONE) {
		*dst = src;
		*dlen = n;
		return 0;
	}
	sb_reset(&k->out);
	if (k->c == COMPRESSION_ZSTD) {
		size_t cap = ZSTD_compressBound(n), r;

		sb_grow(&k->out, cap);
		r = ZSTD_compressCCtx(k->zc, k->out.buf, cap, src, n, k->level);
		if (ZSTD_isError(r)) {
			err_msg("cannot compress a Parquet page: %s", ZSTD_getErrorName(r));
			return -1;
		}
		k->out.len = r;
	} else if (k->c == COMPRESSION_SNAPPY) {
		/* Parquet's SNAPPY is one raw block per page, no framing. */
		size_t cap = snappy_max_compressed_length(n);
		snappy_status r;

		sb_grow(&k->out, cap);
		r = snappy_compress(src, n, k->out.buf, &cap);
		if (r != SNAPPY_OK) {
			err_msg("cannot compress a Parquet page: snappy status %d", (int)r);
			return -1;
		}
		k->out.len = cap;
	} else {
		uLong cap;
		int r;

		/* Reset first: a finished stream's bound forgets the gzip trailer. */
		deflateReset(&k->zs);
		cap = deflateBound(&k->zs, (uLong)n);
		sb_grow(&k->out, cap);
		k->zs.next_in = (Bytef *)(uintptr_t)src;
		k->zs.avail_in = (uInt)n;
		k->zs.next_out = (Bytef *)k->out.buf;
		k->zs.avail_out = (uInt)cap;
		r = deflate(&k->zs, Z_FINISH);
		if (r != Z_STREAM_END) {
			err_msg("cannot compress a Parquet page: %s", k->zs.msg ? k->zs.msg : zError(r));
			return -1;
		}
		k->out.len = cap - k->zs.avail_out;
	}
	*dst = k->out.buf;
	*dlen = k->out.len;
	return 0;
}

uint64_t pq_page_bound(const struct pq_comp *k, size_t n)
{
	uint64_t b = n;

	if (k->c == COMPRESSION_ZSTD)
		b = ZSTD_compressBound(n);
	else if (k->c == COMPRESSION_SNAPPY)
		b = snappy_max_compressed_length(n);
	else if (k->c == COMPRESSION_GZIP)
		b = n + n / 1000 + 64 * (n / 16384 + 1) + 64;
	return b + 64;	/* the page header: a few varints */
}

void pq_page_header(struct sb *h, size_t raw, size_t comp, uint32_t values, int encoding,
		    uint32_t dict_entries)
{
	struct pq_thrift t;

	pq_thrift_init(&t, h);
	pq_thrift_i32(&t, 1, dict_entries ? PAGE_DICTIONARY : PAGE_DATA);
	pq_thrift_i32(&t, 2, (int32_t)raw);
	pq_thrift_i32(&t, 3, (int32_t)comp);
	if (dict_entries) {
		pq_thrift_struct(&t, 7);
		pq_thrift_i32(&t, 1, (int32_t)dict_entries);
		pq_thrift_i32(&t, 2, ENC_PLAIN);
		pq_thrift_end(&t);
	} else {
		pq_thrift_struct(&t, 5);
		pq_thrift_i32(&t, 1, (int32_t)values);
		pq_thrift_i32(&t, 2, encoding);
		pq_thrift_i32(&t, 3, ENC_RLE);
		pq_thrift_i32(&t, 4, ENC_RLE);
		pq_thrift_end(&t);
	}
	pq_thrift_end(&t);
}

int pq_finish_page(struct pq_comp *k, struct pq_writer *pw, size_t ci, const char *raw, size_t n,
		   uint32_t rows, int encoding, struct sb *header, uint64_t *added)
{
	struct pq_colw *c = &pw->cols[ci];
	const char *body;
	size_t blen;

	if (pq_compress_page(k, raw, n, &body, &blen) != 0)
		return -1;
	sb_reset(header);
	pq_page_header(header, n, blen, rows, encoding, 0);
	sb_add(&c->chunk, header->buf, header->len);
	sb_add(&c->chunk, body, blen);
	c->chunk_raw += header->len + n;
	*added = header->len + blen;
	return 0;
}

int pq_queue(struct pq_codec *k, struct pq_writer *pw, void (*fill)(struct pq_job *j, void *arg), void *arg)
{
	int failed;

	/*
	 * The job is filled and handed to the ring in one critical section:
	 * the parsing thread and the values worker (parquet_feed.c) both
	 * queue jobs, of different writers, so a slot taken by one must be
	 * filled before another can look for the next.  The worker moves
	 * head and count together: the slot at head + count is free.
	 */
	pthread_mutex_lock(&k->mu);
	if (k->count == PQ_QUEUE) {
		/* Full: wait for half of it, not for one job (a wake-up a page). */
		k->room_waiting++;
		while (k->count > PQ_QUEUE / 2)
			pthread_cond_wait(&k->done, &k->mu);
		k->room_waiting--;
	}
	failed = pw->wfailed;
	if (!failed) {
		struct pq_job *j = &k->ring[(k->head + k->count) % PQ_QUEUE];

		fill(j, arg);
		k->count++;
		pw->inflight++;
		pw->inflight_bound += j->bound;
		pw->most += j->bound;
		pthread_cond_signal(&k->job);
	}
	pthread_mutex_unlock(&k->mu);
	return failed ? -1 : 0;
}

static void *worker(void *arg)
{
	struct pq_codec *k = arg;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		struct pq_job *j;
		struct pq_writer *pw;
		uint64_t added = 0, at = 0, chunks = 0;
		int r = -1;

		while (k->count == 0 && !k->quit)
			pthread_cond_wait(&k->job, &k->mu);
		if (k->count == 0)
			break;
		j = &k->ring[k->head];
		pw = j->pw;
		if (!pw->wfailed) {
			/*
			 * The job is the worker's until count goes down; the chunks
			 * too, and for a row group the writer's offset, rowgroups
			 * and outq (its pages before it are done: jobs go in order).
			 */
			pthread_mutex_unlock(&k->mu);
			if (j->rg == NULL) {
				r = pq_finish_page(&k->wk, pw, j->ci, j->raw.buf, j->raw.len, j->rows, j->encoding,
						   &k->wk.header, &added);
			} else {
				at = pw->offset;
				r = pq_write_row_group(pw, &k->wk, j->rg, &k->wk.header, &at, &added, &chunks);
				if (r == 0)
					pq_feed_deliver(pw);
			}
			pthread_mutex_lock(&k->mu);
		}
		if (r != 0) {
			pw->wfailed = 1;
		} else if (j->rg) {
			pw->offset = at;
			pw->pending = pw->pending + added - chunks;
		} else {
			pw->pending += added;
		}
		pq_rg_free(j->rg);
		j->rg = NULL;
		pw->inflight--;
		pw->inflight_bound -= j->bound;
		k->head = (k->head + 1) % PQ_QUEUE;
		k->count--;
		if ((k->room_waiting && k->count <= PQ_QUEUE / 2) || (k->drain_waiting && pw->inflight == 0))
			pthread_cond_broadcast(&k->done);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

int pq_drain(const struct pq_writer *pw)
{
	struct pq_codec *k = pw->o.codec;
	int failed;

	if (!k->threaded)
		return 0;
	pthread_mutex_lock(&k->mu);
	k->drain_waiting++;
	while (pw->inflight > 0)
		pthread_cond_wait(&k->done, &k->mu);
	k->drain_waiting--;
	failed = pw->wfailed;
	pthread_mutex_unlock(&k->mu);
	return failed ? -1 : 0;
}
