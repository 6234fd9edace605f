/*
 * zwriter: the bytes of each file go into fixed segments of its pool; a
 * chunk (ZW_CHUNK bytes, or less when the pool holds too many segments and
 * this file holds the most, or when the file ends) becomes a job.  A job is
 * compressed into one complete frame (zstd, checksummed, its content size
 * in the header; gzip: one member) by a thread of the pool, or by the
 * calling thread when the pool has none, and its frame goes to the bucket
 * from the calling thread, jobs in the order they were made: every file
 * gets its frames in order.
 *
 * Memory is the pool's: segments that wait (ZW_HELD_MAX, all files), jobs
 * in flight and their frames (flight_max, the calling thread waits for
 * room), and one compressor and two chunk-sized buffers per thread.  An
 * open file costs its last segment and a few words, so hundreds of files
 * can be open.  Chunks of 128 KiB, compressed whole and on their own (zstd
 * picks its tables for the size), cost less CPU per byte than zstd's
 * streaming window, which sends blocks down its slower two-segment path,
 * and than chunks of 1 MiB, whose tables miss the cache; the files are
 * about as small (bench/RESULTS-streams.md).
 */
#include "zwriter.h"
#include "err.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

enum {
	ZW_SEG = 32 * 1024,		/* a segment's bytes */
	ZW_CHUNK = 128 * 1024,		/* a whole chunk: one frame */
	ZW_HELD_MAX = 512,		/* segments waiting in files, all of them: 16 MiB */
	ZW_FLIGHT_MIN = 256,		/* segments of jobs in flight, at least: 8 MiB */
};

struct zseg {
	struct zseg *next;
	size_t len;
	unsigned char data[ZW_SEG];
};

/* One thread's compressor and its buffers. */
struct zcomp {
	ZSTD_CCtx *zc;
	int zlevel;		/* the level zc is set to, 0 none yet */
	z_stream zs;
	int zs_level;		/* the level zs was started with, 0 not started */
	unsigned char *in, *out;
	size_t out_cap;
};

struct zjob {
	struct zjob *next;
	struct zwriter *z;	/* NULL once its writer is aborted */
	enum compression c;
	int level;
	struct zseg *in;	/* the chunk; the thread frees it once copied */
	size_t in_len, nin;
	struct zseg *out;	/* its frame */
	size_t nout;
	uint64_t bound;		/* the most its frame can take */
	int done;		/* the pool's mutex */
	char err[128];		/* why it could not be compressed, "" */
};

struct zworker {
	struct zpool *p;
	pthread_t tid;
	struct zcomp comp;
};

struct zpool {
	int threads;
	struct zworker *workers;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t work;	/* a job was queued, or quit */
	pthread_cond_t done;	/* a job was done */
	/* The jobs in order (links: the calling thread's, under mu). */
	struct zjob *head, *tail;
	struct zjob *take;	/* the first job no thread took yet (mu) */
	int quit;		/* mu */
	struct zjob *free_jobs;
	struct zseg *free_segs;	/* mu */
	size_t flight;		/* segments of jobs (mu) */
	size_t flight_max;
	size_t queued;		/* segments of the jobs no thread took yet (mu) */
	int waiting;		/* the calling thread waits: 1 for room, 2 for a file's jobs (mu) */
	size_t held;		/* segments waiting in files */
	struct zcomp inl;	/* the calling thread's, with no threads */
	struct zwriter *writers;	/* open, in the order they were opened */
	struct zwriter *writers_tail;
};

struct zwriter {
	struct bucket_writer *w;
	enum compression c;
	int level;
	struct zpool *pool;
	struct zpool *own;	/* pool made for it alone, or NULL */
	struct zwriter *prev, *next;	/* the pool's writers */
	struct zseg *first, *last;	/* bytes not yet in a job */
	size_t pending, nsegs;
	size_t jobs;		/* made and not yet written out */
	uint64_t bound;		/* the most their frames can take */
	unsigned frames;
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

/* ---- segments (the pool's mutex held) ---- */

static struct zseg *seg_get(struct zpool *p)
{
	struct zseg *s = p->free_segs;

	if (s)
		p->free_segs = s->next;
	else
		s = xmalloc(sizeof(*s));
	s->next = NULL;
	s->len = 0;
	return s;
}

static void segs_put(struct zpool *p, struct zseg *s)
{
	while (s) {
		struct zseg *next = s->next;

		s->next = p->free_segs;
		p->free_segs = s;
		s = next;
	}
}

/* ---- compression, in a thread of the pool or the calling thread ---- */

static void comp_free(struct zcomp *k)
{
	ZSTD_freeCCtx(k->zc);
	if (k->zs_level)
		deflateEnd(&k->zs);
	free(k->in);
	free(k->out);
	memset(k, 0, sizeof(*k));
}

static uint64_t frame_bound(enum compression c, size_t n)
{
	if (c == COMPRESSION_ZSTD)
		return ZSTD_compressBound(n);
	/* deflate's stored blocks, and the gzip header and trailer. */
	return n + n / 1000 + 64 * (n / 16384 + 1) + 64;
}

/* The job's chunk into k->out: *dlen bytes.  0, or -1 with j->err set. */
static int comp_run(struct zcomp *k, struct zjob *j, size_t *dlen)
{
	size_t n = j->in_len, cap = (size_t)frame_bound(j->c, n);

	if (k->out_cap < cap) {
		free(k->out);
		k->out = xmalloc(cap);
		k->out_cap = cap;
	}
	if (j->c == COMPRESSION_ZSTD) {
		size_t r = 0;

		if (k->zc == NULL && (k->zc = ZSTD_createCCtx()) == NULL) {
			snprintf(j->err, sizeof(j->err), "out of memory");
			return -1;
		}
		if (k->zlevel != j->level) {
			r = ZSTD_CCtx_setParameter(k->zc, ZSTD_c_compressionLevel, j->level);
			if (!ZSTD_isError(r))
				r = ZSTD_CCtx_setParameter(k->zc, ZSTD_c_checksumFlag, 1);
			if (!ZSTD_isError(r))
				k->zlevel = j->level;
		}
		if (!ZSTD_isError(r))
			r = ZSTD_compress2(k->zc, k->out, k->out_cap, k->in, n);
		if (ZSTD_isError(r)) {
			snprintf(j->err, sizeof(j->err), "%s", ZSTD_getErrorName(r));
			return -1;
		}
		*dlen = r;
		return 0;
	}
	/* gzip: a whole member (windowBits 15 + 16: gzip's header and trailer). */
	if (k->zs_level != j->level) {
		int r;

		if (k->zs_level)
			deflateEnd(&k->zs);
		k->zs_level = 0;
		memset(&k->zs, 0, sizeof(k->zs));
		r = deflateInit2(&k->zs, j->level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
		if (r != Z_OK) {
			snprintf(j->err, sizeof(j->err), "%s", k->zs.msg ? k->zs.msg : zError(r));
			return -1;
		}
		k->zs_level = j->level;
	} else {
		deflateReset(&k->zs);
	}
	k->zs.next_in = k->in;
	k->zs.avail_in = (uInt)n;
	k->zs.next_out = k->out;
	k->zs.avail_out = (uInt)(k->out_cap > UINT_MAX ? UINT_MAX : k->out_cap);
	if (deflate(&k->zs, Z_FINISH) != Z_STREAM_END) {
		snprintf(j->err, sizeof(j->err), "%s", k->zs.msg ? k->zs.msg : "deflate did not finish");
		return -1;
	}
	*dlen = (size_t)(k->out_cap - k->zs.avail_out);
	return 0;
}

/* Compress j: its chunk's segments go back, its frame into new ones. */
static void comp_job(struct zpool *p, struct zcomp *k, struct zjob *j)
{
	struct zseg *s, **tail = &j->out;
	size_t pos = 0, dlen = 0, n;

	if (k->in == NULL)
		k->in = xmalloc(ZW_CHUNK);
	for (s = j->in; s; s = s->next) {
		memcpy(k->in + pos, s->data, s->len);
		pos += s->len;
	}
	pthread_mutex_lock(&p->mu);
	segs_put(p, j->in);
	p->flight -= j->nin;
	j->in = NULL;
	j->nin = 0;
	pthread_mutex_unlock(&p->mu);
	if (comp_run(k, j, &dlen) != 0)
		return;
	n = (dlen + ZW_SEG - 1) / ZW_SEG;
	pthread_mutex_lock(&p->mu);
	for (pos = 0; pos < n; pos++) {
		*tail = seg_get(p);
		tail = &(*tail)->next;
	}
	p->flight += n;
	pthread_mutex_unlock(&p->mu);
	j->nout = n;
	for (s = j->out, pos = 0; s; s = s->next) {
		s->len = dlen - pos < ZW_SEG ? dlen - pos : ZW_SEG;
		memcpy(s->data, k->out + pos, s->len);
		pos += s->len;
	}
}

/*
 * With p->mu held and a job queued: takes the first, compresses it with k
 * outside the lock, and marks it done (p->mu held again).
 */
static void take_job(struct zpool *p, struct zcomp *k)
{
	struct zjob *j = p->take;

	p->take = j->next;
	p->queued -= j->nin;
	pthread_mutex_unlock(&p->mu);
	comp_job(p, k, j);
	pthread_mutex_lock(&p->mu);
	j->done = 1;
}

static void *worker(void *arg)
{
	struct zworker *wk = arg;
	struct zpool *p = wk->p;

	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->take == NULL && !p->quit)
			pthread_cond_wait(&p->work, &p->mu);
		if (p->take == NULL)
			break;
		take_job(p, &wk->comp);
		/*
		 * Waiting for room, the calling thread wakes once half of what
		 * was queued is taken: fewer wake-ups, and the threads still
		 * have work while it fills the queue again.
		 */
		if (p->waiting == 2 || (p->waiting == 1 && p->queued <= p->flight_max / 2))
			pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

/* ---- the pool ---- */

struct zpool *zpool_new(int threads)
{
	struct zpool *p;
	int i, r;

	if (threads < 0) {
		err_msg("cannot start the compressors: negative number of threads");
		return NULL;
	}
	p = xcalloc(1, sizeof(*p));
	p->threads = threads;
	/* Enough in flight to keep every thread busy with whole chunks. */
	p->flight_max = ZW_FLIGHT_MIN;
	if ((size_t)(threads + 1) * 2 * (ZW_CHUNK / ZW_SEG) > p->flight_max)
		p->flight_max = (size_t)(threads + 1) * 2 * (ZW_CHUNK / ZW_SEG);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);
	if (threads == 0)
		return p;
	p->workers = xcalloc((size_t)threads, sizeof(*p->workers));
	for (i = 0; i < threads; i++) {
		p->workers[i].p = p;
		r = pthread_create(&p->workers[i].tid, NULL, worker, &p->workers[i]);
		if (r != 0) {
			err_msg("cannot start a compression thread: %s", strerror(r));
			zpool_free(p);
			return NULL;
		}
		p->started++;
	}
	return p;
}

static void jobs_free(struct zjob *j)
{
	while (j) {
		struct zjob *next = j->next;

		free(j);
		j = next;
	}
}

void zpool_free(struct zpool *p)
{
	struct zjob *j;
	struct zseg *s;
	int i;

	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->work);
	pthread_mutex_unlock(&p->mu);
	for (i = 0; i < p->started; i++) {
		pthread_join(p->workers[i].tid, NULL);
		comp_free(&p->workers[i].comp);
	}
	free(p->workers);
	for (j = p->head; j; j = j->next) {
		segs_put(p, j->in);
		segs_put(p, j->out);
	}
	jobs_free(p->head);
	jobs_free(p->free_jobs);
	while ((s = p->free_segs) != NULL) {
		p->free_segs = s->next;
		free(s);
	}
	comp_free(&p->inl);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->work);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* A job done: its frame to its file (when it still has one), its memory back. */
static void write_job(struct zpool *p, struct zjob *j)
{
	struct zwriter *z = j->z;
	struct zseg *s;

	if (z) {
		z->jobs--;
		z->bound -= j->bound;
		if (!z->failed && j->err[0])
			zfail(z, "compress", j->err);
		for (s = j->out; s && !z->failed; s = s->next)
			emit(z, s->data, s->len);
	}
	pthread_mutex_lock(&p->mu);
	segs_put(p, j->out);
	segs_put(p, j->in);
	p->flight -= j->nout + j->nin;
	pthread_mutex_unlock(&p->mu);
	j->out = j->in = NULL;
	j->next = p->free_jobs;
	p->free_jobs = j;
}

/*
 * Write out the jobs done at the head of the queue, and wait for more:
 * until the jobs in flight are within bounds (z NULL), or until z has none
 * left, its own written as they are done, before others' still in flight
 * (a file's frames stay in order; files need no order between them).
 * Rather than wait while a job is queued that no thread took yet, the
 * calling thread compresses it itself: the threads are behind, and this
 * one would only sleep (with -j 1 on two cores, the input's scan and the
 * compression then share both, not one core each in turn).
 */
static void settle(struct zpool *p, const struct zwriter *z)
{
	pthread_mutex_lock(&p->mu);
	for (;;) {
		struct zjob *j = p->head, *prev = NULL;

		if (z != NULL) {
			if (z->jobs == 0)
				break;
			while (j->z != z) {
				prev = j;
				j = j->next;
			}
		}
		if (j && j->done) {
			/* Taken and done: the threads no longer look at it. */
			if (prev)
				prev->next = j->next;
			else
				p->head = j->next;
			if (p->tail == j)
				p->tail = prev;
			pthread_mutex_unlock(&p->mu);
			write_job(p, j);
			pthread_mutex_lock(&p->mu);
			continue;
		}
		if (j == NULL || (z == NULL && p->flight <= p->flight_max))
			break;
		if (p->take != NULL) {
			take_job(p, &p->inl);
			continue;
		}
		p->waiting = z ? 2 : 1;
		pthread_cond_wait(&p->done, &p->mu);
		p->waiting = 0;
	}
	pthread_mutex_unlock(&p->mu);
}

/* The bytes z holds become a job (force: even none, for an empty file's frame).  0 or -1. */
static int submit_job(struct zwriter *z, int force, int here);

static int submit(struct zwriter *z, int force)
{
	return submit_job(z, force, 0);
}

/* submit(), compressed in the calling thread whatever the pool's threads. */
static int submit_here(struct zwriter *z, int force)
{
	return submit_job(z, force, 1);
}

static int submit_job(struct zwriter *z, int force, int here)
{
	struct zpool *p = z->pool;
	struct zjob *j;

	if (z->pending == 0 && !force)
		return 0;
	if (z->failed || z->c == COMPRESSION_NONE) {
		struct zseg *s;

		/* Uncompressed, the bytes go straight on. */
		for (s = z->first; s && !z->failed; s = s->next)
			emit(z, s->data, s->len);
		pthread_mutex_lock(&p->mu);
		segs_put(p, z->first);
		pthread_mutex_unlock(&p->mu);
		p->held -= z->nsegs;
		z->first = z->last = NULL;
		z->nsegs = z->pending = 0;
		return z->failed ? -1 : 0;
	}
	j = p->free_jobs;
	if (j)
		p->free_jobs = j->next;
	else
		j = xmalloc(sizeof(*j));
	memset(j, 0, sizeof(*j));
	j->z = z;
	j->c = z->c;
	j->level = z->level;
	j->in = z->first;
	j->in_len = z->pending;
	j->nin = z->nsegs;
	j->bound = frame_bound(z->c, z->pending);
	p->held -= z->nsegs;
	z->first = z->last = NULL;
	z->nsegs = z->pending = 0;
	z->jobs++;
	z->bound += j->bound;
	z->frames++;
	if (p->threads == 0 || here) {
		comp_job(p, &p->inl, j);
		write_job(p, j);
		return z->failed ? -1 : 0;
	}
	/* Room first: the jobs in flight are bounded. */
	settle(p, NULL);
	pthread_mutex_lock(&p->mu);
	p->flight += j->nin;
	p->queued += j->nin;
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	if (p->take == NULL)
		p->take = j;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* ---- the writer ---- */

static int level_ok(struct zwriter *z, int level)
{
	char why[96];

	if (z->c == COMPRESSION_ZSTD) {
		ZSTD_bounds lv = ZSTD_cParam_getBounds(ZSTD_c_compressionLevel);

		z->level = level ? level : 3;
		if (z->level < lv.lowerBound || z->level > lv.upperBound) {
			snprintf(why, sizeof(why), "zstd level %d is out of range (%d..%d)",
				 z->level, lv.lowerBound, lv.upperBound);
			zfail(z, "compress", why);
			return -1;
		}
	} else if (z->c == COMPRESSION_GZIP) {
		z->level = level ? level : 6;
		if (z->level < 1 || z->level > 9) {
			snprintf(why, sizeof(why), "gzip level %d is out of range (1..9)", z->level);
			zfail(z, "compress", why);
			return -1;
		}
	} else if (z->c != COMPRESSION_NONE) {
		zfail(z, "compress", "unknown compression");
		return -1;
	}
	return 0;
}

struct zwriter *zwriter_open(struct bucket_writer *w, enum compression c,
			     int level, struct zpool *pool)
{
	struct zwriter *z;

	if (w == NULL)
		return NULL;
	z = xcalloc(1, sizeof(*z));
	z->w = w;
	z->c = c;
	if (level_ok(z, level) != 0 || (pool == NULL && (pool = z->own = zpool_new(0)) == NULL)) {
		bucket_writer_abort(w);
		free(z);
		return NULL;
	}
	z->pool = pool;
	z->prev = pool->writers_tail;
	if (pool->writers_tail)
		pool->writers_tail->next = z;
	else
		pool->writers = z;
	pool->writers_tail = z;
	return z;
}

/* The pool holds too much: the file holding the most makes a job of it. */
static void shed(struct zpool *p)
{
	while (p->held > ZW_HELD_MAX) {
		struct zwriter *most = NULL, *y;

		for (y = p->writers; y; y = y->next) {
			if (most == NULL || y->pending > most->pending)
				most = y;
		}
		if (most == NULL || most->pending == 0)
			break;
		/* A failure is most's, said when it is next used. */
		submit(most, 0);
	}
}

int zwriter_write(struct zwriter *z, const void *data, size_t len)
{
	struct zpool *p = z->pool;
	const unsigned char *src = data;

	if (z->failed)
		return -1;
	z->in_bytes += len;
	while (len > 0) {
		struct zseg *s = z->last;
		size_t n;

		if (s == NULL || s->len == ZW_SEG) {
			pthread_mutex_lock(&p->mu);
			s = seg_get(p);
			pthread_mutex_unlock(&p->mu);
			if (z->last)
				z->last->next = s;
			else
				z->first = s;
			z->last = s;
			z->nsegs++;
			p->held++;
		}
		n = ZW_SEG - s->len;
		if (n > len)
			n = len;
		if (n > ZW_CHUNK - z->pending)
			n = ZW_CHUNK - z->pending;
		memcpy(s->data + s->len, src, n);
		s->len += n;
		src += n;
		len -= n;
		z->pending += n;
		if (z->pending == ZW_CHUNK && submit(z, 0) != 0)
			return -1;
	}
	if (p->held > ZW_HELD_MAX)
		shed(p);
	return z->failed ? -1 : 0;
}

uint64_t zwriter_in_bytes(const struct zwriter *z)
{
	return z->in_bytes;
}

uint64_t zwriter_out_bytes(const struct zwriter *z)
{
	return z->out_bytes;
}

int zwriter_reached(struct zwriter *z, uint64_t limit)
{
	if (z->out_bytes >= limit)
		return 1;
	if (z->out_bytes + z->bound < limit)
		return 0;
	settle(z->pool, z);
	return z->out_bytes >= limit;
}

int zwriter_flush(struct zwriter *z)
{
	if (z->failed)
		return -1;
	return submit(z, 0);
}

/* z leaves its pool's list and is freed (with its own pool). */
static void zfree(struct zwriter *z)
{
	struct zpool *p = z->pool;

	if (z->prev)
		z->prev->next = z->next;
	else
		p->writers = z->next;
	if (z->next)
		z->next->prev = z->prev;
	else
		p->writers_tail = z->prev;
	zpool_free(z->own);
	free(z);
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
	/*
	 * Its frames so far, then the last one compressed in this thread,
	 * while the threads go on with the other files' chunks.  An empty
	 * file is one empty frame, as zstd -d and gzip -d expect.
	 */
	if (!z->failed)
		settle(z->pool, z);
	if (!z->failed)
		submit_here(z, z->frames == 0 && z->c != COMPRESSION_NONE);
	if (z->failed) {
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
	struct zpool *p;
	struct zjob *j;

	if (z == NULL)
		return;
	p = z->pool;
	/* Its jobs in flight end with no file to go to. */
	for (j = p->head; j && z->jobs > 0; j = j->next) {
		if (j->z == z) {
			j->z = NULL;
			z->jobs--;
		}
	}
	pthread_mutex_lock(&p->mu);
	segs_put(p, z->first);
	pthread_mutex_unlock(&p->mu);
	p->held -= z->nsegs;
	bucket_writer_abort(z->w);
	zfree(z);
}
