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
	sb_free(&k->header);
	pq_comp_free(&k->wk);
	pq_comp_free(&k->main);
	free(k);
}

int pq_codec_id(const struct pq_codec *k)
{
	switch (k->main.c) {
	case COMPRESSION_ZSTD: return PQ_CODEC_ZSTD;
	case COMPRESSION_GZIP: return PQ_CODEC_GZIP;
	case COMPRESSION_SNAPPY: return PQ_CODEC_SNAPPY;
	case COMPRESSION_NONE: break;
	}
	return PQ_CODEC_UNCOMPRESSED;
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
	pq_thrift_i32(&t, 1, dict_entries ? PQ_PAGE_DICTIONARY : PQ_PAGE_DATA);
	pq_thrift_i32(&t, 2, (int32_t)raw);
	pq_thrift_i32(&t, 3, (int32_t)comp);
	if (dict_entries) {
		pq_thrift_struct(&t, 7);
		pq_thrift_i32(&t, 1, (int32_t)dict_entries);
		pq_thrift_i32(&t, 2, PQ_ENC_PLAIN);
		pq_thrift_end(&t);
	} else {
		pq_thrift_struct(&t, 5);
		pq_thrift_i32(&t, 1, (int32_t)values);
		pq_thrift_i32(&t, 2, encoding);
		pq_thrift_i32(&t, 3, PQ_ENC_RLE);
		pq_thrift_i32(&t, 4, PQ_ENC_RLE);
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

/* The ring's i-th job from its head. */
static struct pq_job *slot(struct pq_codec *k, size_t i)
{
	return &k->ring[(k->head + i) % PQ_QUEUE];
}

/*
 * The jobs done at the head, in order (the mutex held): a page's header
 * and body appended to its chunk, a row group's offset taken; their slots
 * freed.
 */
static void retire(struct pq_codec *k)
{
	int wake = 0;

	while (k->count > 0 && slot(k, 0)->state == PQ_JOB_DONE) {
		struct pq_job *j = slot(k, 0);
		struct pq_writer *pw = j->pw;

		if (j->r != 0 || pw->wfailed) {
			pw->wfailed = 1;
		} else if (j->rg) {
			pw->offset = j->at;
			pw->pending = pw->pending + j->added - j->chunks;
		} else {
			struct pq_colw *c = &pw->cols[j->ci];
			struct sb *h = &k->header;

			sb_reset(h);
			pq_page_header(h, j->rawlen, j->raw.len, j->rows, j->encoding, 0);
			sb_add(&c->chunk, h->buf, h->len);
			sb_add(&c->chunk, j->raw.buf, j->raw.len);
			c->chunk_raw += h->len + j->rawlen;
			pw->pending += h->len + j->raw.len;
		}
		pq_rg_free(j->rg);
		j->rg = NULL;
		pw->inflight--;
		pw->inflight_bound -= j->bound;
		k->head = (k->head + 1) % PQ_QUEUE;
		k->count--;
		if (k->drain_waiting && pw->inflight == 0)
			wake = 1;
	}
	if (k->room_waiting && k->count <= PQ_QUEUE / 2)
		wake = 1;
	if (wake)
		pthread_cond_broadcast(&k->done);
	/* A row group that came to the head can be taken now; and the worker leaves once all is done. */
	if ((k->count > 0 && slot(k, 0)->state == PQ_JOB_QUEUED && slot(k, 0)->rg) || (k->quit && k->count == 0))
		pthread_cond_signal(&k->job);
}

/*
 * Do one job with comp (the calling thread's compressor; the mutex held,
 * and let go while it works): the oldest queued page, or the row group at
 * the head (its pages before it are appended).  1 when it did one, 0 when
 * none can be taken now.
 */
static int help(struct pq_codec *k, struct pq_comp *comp)
{
	struct pq_job *j = NULL;
	struct pq_writer *pw;
	size_t i;
	int r = -1;

	for (i = 0; i < k->count && j == NULL; i++) {
		struct pq_job *x = slot(k, i);

		if (x->state == PQ_JOB_QUEUED && (x->rg == NULL || i == 0))
			j = x;
	}
	if (j == NULL)
		return 0;
	j->state = PQ_JOB_BUSY;
	pw = j->pw;
	if (!pw->wfailed) {
		pthread_mutex_unlock(&k->mu);
		if (j->rg == NULL) {
			const char *body;
			size_t blen;

			j->rawlen = j->raw.len;
			r = pq_compress_page(comp, j->raw.buf, j->raw.len, &body, &blen);
			if (r == 0 && body != j->raw.buf) {
				/* The body into the slot, the raw page's buffer to comp for the next. */
				struct sb t = j->raw;

				j->raw = comp->out;
				comp->out = t;
			}
		} else {
			/* At the head: the writer's chunks, offset, rowgroups and outq are this job's. */
			j->at = pw->offset;
			r = pq_write_row_group(pw, comp, j->rg, &comp->header, &j->at, &j->added, &j->chunks);
			if (r == 0)
				pq_feed_deliver(pw);
		}
		pthread_mutex_lock(&k->mu);
	}
	j->r = r;
	j->state = PQ_JOB_DONE;
	retire(k);
	return 1;
}

struct pq_job *pq_reserve(struct pq_codec *k, struct pq_writer *pw)
{
	struct pq_job *j = NULL;

	pthread_mutex_lock(&k->mu);
	/*
	 * Full: compress the pages queued, beside the worker, rather than
	 * leave the worker alone with them (a row group's end queues a burst);
	 * when none can be taken, wait for half of the ring, not for one job
	 * (a wake-up a page).
	 */
	while (k->count == PQ_QUEUE && help(k, pw->comp))
		;
	if (k->count == PQ_QUEUE) {
		k->room_waiting++;
		while (k->count > PQ_QUEUE / 2)
			pthread_cond_wait(&k->done, &k->mu);
		k->room_waiting--;
	}
	/*
	 * The slot at head + count is free: taken now, it is filled outside
	 * the mutex (no job is taken, nor retired, past one being filled),
	 * while the parsing thread and the values worker (parquet_feed.c)
	 * may each take one, for different writers.
	 */
	if (!pw->wfailed) {
		j = slot(k, k->count);
		j->state = PQ_JOB_FILLING;
		j->pw = pw;
		j->rg = NULL;
		k->count++;
	}
	pthread_mutex_unlock(&k->mu);
	return j;
}

void pq_commit(struct pq_codec *k, struct pq_job *j)
{
	struct pq_writer *pw = j->pw;

	pthread_mutex_lock(&k->mu);
	j->state = PQ_JOB_QUEUED;
	pw->inflight++;
	pw->inflight_bound += j->bound;
	pw->most += j->bound;
	pthread_cond_signal(&k->job);
	pthread_mutex_unlock(&k->mu);
}

static void *worker(void *arg)
{
	struct pq_codec *k = arg;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		if (help(k, &k->wk))
			continue;
		if (k->quit && k->count == 0)
			break;
		pthread_cond_wait(&k->job, &k->mu);
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
	while (pw->inflight > 0) {
		/* The jobs queued before pw's last are compressed here too, not only by the worker. */
		if (help(k, pw->comp))
			continue;
		k->drain_waiting++;
		pthread_cond_wait(&k->done, &k->mu);
		k->drain_waiting--;
	}
	failed = pw->wfailed;
	pthread_mutex_unlock(&k->mu);
	return failed ? -1 : 0;
}
