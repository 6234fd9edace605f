/*
 * parquet_feed: records added to their writers by a worker thread, in
 * batches (lib/parquet.h, "the feed"), so that the thread that reads the
 * input only scans it: the values are checked, converted and put into
 * pages, and the pages compressed, by the worker.
 *
 * The feed holds the batches handed over in one list, in that order; the
 * worker takes them in order (cur: the first it has not done).  Only the
 * caller's thread links and unlinks batches, under the mutex; the worker
 * only moves cur and marks batches done, under the mutex, and works on one
 * batch (its records, its writer) outside it.
 */
#include "parquet_impl.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

struct pq_feed {
	struct pq_comp comp;	/* the worker's page compressor */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t work;	/* a batch was handed over, or quit */
	pthread_cond_t done;	/* a batch was done */
	struct pq_batch *head, *tail, *cur;
	const struct pq_batch *awaited;	/* done is signalled only when this one is done */
	size_t held;
	int quit;
};

/* pw's outq to its ready (the feed's mutex held). */
static void deliver(struct pq_writer *pw)
{
	if (pw->outq.len == 0)
		return;
	if (pw->ready.len == 0) {
		struct sb t = pw->ready;

		pw->ready = pw->outq;
		pw->outq = t;
	} else {
		sb_add(&pw->ready, pw->outq.buf, pw->outq.len);
	}
	sb_reset(&pw->outq);
	atomic_store_explicit(&pw->has_ready, 1, memory_order_release);
}

void pq_feed_deliver(struct pq_writer *pw)
{
	struct pq_feed *f = pw->feed;

	pthread_mutex_lock(&f->mu);
	deliver(pw);
	pthread_mutex_unlock(&f->mu);
}

/* The batch's records from b->start into its writer, until one stops it. */
static void run(struct pq_feed *f, struct pq_batch *b)
{
	struct pq_writer *pw = b->pw;
	size_t i;

	pw->comp = &f->comp;
	b->stop = PQ_STOP_NONE;
	if (b->finish && pq_flush_row_group(pw) != 0)
		b->stop = PQ_STOP_ERROR;
	for (i = b->start; i < b->n && b->stop == PQ_STOP_NONE; i++) {
		const struct pq_rec *r = &b->r[i];
		int x;

		if (r->nm == PQ_WALK) {
			struct json_span rec = { b->bytes.buf + r->off, r->len, JSON_OBJECT };

			x = pq_writer_add(pw, &rec, &b->f);
		} else {
			x = pq_writer_add_members(pw, b->bytes.buf + r->off, b->m + r->m, r->nm, &b->f);
		}
		if (x == PQ_WIDEN) {
			b->stop = PQ_STOP_WIDEN;
			break;
		}
		if (x != 0) {
			b->stop = PQ_STOP_ERROR;
			break;
		}
		if (pq_writer_reached(pw, b->limit)) {
			i++;
			b->stop = PQ_STOP_REACHED;
			break;
		}
	}
	b->next = i;
	pw->comp = &pw->o.codec->main;
}

static void *worker(void *arg)
{
	struct pq_feed *f = arg;

	pthread_mutex_lock(&f->mu);
	for (;;) {
		struct pq_batch *b;
		struct pq_writer *pw;

		while (f->cur == NULL && !f->quit)
			pthread_cond_wait(&f->work, &f->mu);
		if (f->cur == NULL)
			break;
		b = f->cur;
		pw = b->pw;
		if (pw->stopped) {
			b->stop = PQ_STOP_PASSED;
			b->next = b->start;
		} else {
			pthread_mutex_unlock(&f->mu);
			run(f, b);
			pthread_mutex_lock(&f->mu);
			if (b->stop != PQ_STOP_NONE)
				pw->stopped = 1;
			/*
			 * What the rows wrote, for the caller's thread to write;
			 * with the codec's worker, its row groups are written out
			 * there, which hands them over (pq_feed_deliver()).
			 */
			if (!pw->o.codec->threaded)
				deliver(pw);
		}
		atomic_store_explicit(&b->done, 1, memory_order_release);
		f->cur = b->after;
		/*
		 * Only the caller's thread waits, and for one batch: woken at
		 * every batch done, it woke for nothing until that one.
		 */
		if (f->awaited == b) {
			f->awaited = NULL;
			pthread_cond_broadcast(&f->done);
		}
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

struct pq_feed *pq_feed_new(const struct pq_codec *k)
{
	struct pq_feed *f = xcalloc(1, sizeof(*f));
	int r;

	if (pq_comp_init(&f->comp, k->main.c, k->main.level) != 0) {
		pq_comp_free(&f->comp);
		free(f);
		return NULL;
	}
	pthread_mutex_init(&f->mu, NULL);
	pthread_cond_init(&f->work, NULL);
	pthread_cond_init(&f->done, NULL);
	r = pthread_create(&f->thread, NULL, worker, f);
	if (r != 0) {
		err_msg("cannot start the Parquet writer's thread: %s", strerror(r));
		pthread_cond_destroy(&f->done);
		pthread_cond_destroy(&f->work);
		pthread_mutex_destroy(&f->mu);
		pq_comp_free(&f->comp);
		free(f);
		return NULL;
	}
	return f;
}

void pq_feed_free(struct pq_feed *f)
{
	struct pq_batch *b, *after;

	if (f == NULL)
		return;
	pthread_mutex_lock(&f->mu);
	f->quit = 1;
	pthread_cond_signal(&f->work);
	pthread_mutex_unlock(&f->mu);
	/* The worker finishes the batches handed over first: their writers are the caller's to free. */
	pthread_join(f->thread, NULL);
	for (b = f->head; b; b = after) {
		after = b->after;
		pq_batch_free(b);
	}
	pthread_cond_destroy(&f->done);
	pthread_cond_destroy(&f->work);
	pthread_mutex_destroy(&f->mu);
	pq_comp_free(&f->comp);
	free(f);
}

void pq_feed_attach(struct pq_feed *f, struct pq_writer *pw)
{
	pw->feed = f;
	pw->defer = 1;
}

int pq_feed_write_ready(struct pq_feed *f, struct pq_writer *pw)
{
	struct sb t;
	int r = 0;

	/* Called at every hand-over: the mutex only when there is something (a row group's bytes). */
	if (!atomic_load_explicit(&pw->has_ready, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&f->mu);
	t = pw->ready;
	pw->ready = (struct sb)SB_INIT;
	atomic_store_explicit(&pw->has_ready, 0, memory_order_relaxed);
	pthread_mutex_unlock(&f->mu);
	if (t.len > 0 && bucket_writer_write(pw->w, t.buf, t.len) < 0)
		r = -1;
	sb_free(&t);
	return r;
}

void pq_batch_add(struct pq_batch *b, const struct json_span *rec, const struct json_member *m,
		  size_t nm, unsigned long long lineno, unsigned long long recno, unsigned long long seq)
{
	struct pq_rec *r;

	if (b->n == b->rcap) {
		b->rcap = b->rcap ? b->rcap * 2 : 32;
		b->r = xrealloc(b->r, b->rcap * sizeof(*b->r));
	}
	r = &b->r[b->n++];
	r->off = b->bytes.len;
	r->len = rec->len;
	r->lineno = lineno;
	r->recno = recno;
	r->seq = seq;
	sb_add(&b->bytes, rec->p, rec->len);
	if (m == NULL) {
		r->m = 0;
		r->nm = PQ_WALK;
		return;
	}
	if (b->nm + nm > b->mcap) {
		while (b->nm + nm > b->mcap)
			b->mcap = b->mcap ? b->mcap * 2 : 256;
		b->m = xrealloc(b->m, b->mcap * sizeof(*b->m));
	}
	r->m = b->nm;
	r->nm = nm;
	memcpy(b->m + b->nm, m, nm * sizeof(*m));
	b->nm += nm;
}

/*
 * Room for n bytes where p has cap, its contents not kept: taken anew
 * without a copy when short, cut in place when more than twice, else kept
 * (batches kept for reuse move between streams of like sizes).
 */
static void *refit(void *p, size_t *cap, size_t n)
{
	if (n > *cap) {
		free(p);
		p = xmalloc(n);
	} else if (n < *cap / 2) {
		p = xrealloc(p, n);
	} else {
		return p;
	}
	*cap = n;
	return p;
}

void pq_batch_fit(struct pq_batch *b, size_t bytes, size_t nm, size_t n)
{
	size_t mb = b->mcap * sizeof(*b->m), rb = b->rcap * sizeof(*b->r);

	/* Empty (pq_batch_clear()): nothing to keep. */
	b->bytes.buf = refit(b->bytes.buf, &b->bytes.cap, bytes + 1);
	b->bytes.buf[0] = '\0';
	b->m = refit(b->m, &mb, nm * sizeof(*b->m));
	b->mcap = mb / sizeof(*b->m);
	b->r = refit(b->r, &rb, n * sizeof(*b->r));
	b->rcap = rb / sizeof(*b->r);
}

void pq_batch_clear(struct pq_batch *b)
{
	sb_reset(&b->bytes);
	b->n = b->nm = 0;
	b->start = b->next = 0;
	b->finish = 0;
	b->stop = PQ_STOP_NONE;
	b->done = 0;
	b->pw = NULL;
	b->prev = b->after = NULL;
}

void pq_batch_free(struct pq_batch *b)
{
	if (b == NULL)
		return;
	sb_free(&b->bytes);
	free(b->m);
	free(b->r);
	free(b);
}

void pq_feed_submit(struct pq_feed *f, struct pq_batch *b)
{
	pthread_mutex_lock(&f->mu);
	b->done = 0;
	b->after = NULL;
	b->prev = f->tail;
	if (f->tail)
		f->tail->after = b;
	else
		f->head = b;
	f->tail = b;
	if (f->cur == NULL)
		f->cur = b;
	f->held++;
	pthread_cond_signal(&f->work);
	pthread_mutex_unlock(&f->mu);
}

size_t pq_feed_held(const struct pq_feed *f)
{
	return f->held;
}

struct pq_batch *pq_feed_first(const struct pq_feed *f)
{
	return f->head;
}

struct pq_batch *pq_feed_after(const struct pq_batch *b)
{
	return b->after;
}

int pq_feed_is_done(struct pq_feed *f, const struct pq_batch *b)
{
	/*
	 * Without the mutex: it was taken at every look (collect() looks at
	 * each hand-over), and the worker, which stores done last and with
	 * release order, wanted it as often.  What the worker wrote in b
	 * before is seen after an acquire load that reads 1.
	 */
	(void)f;
	return atomic_load_explicit(&b->done, memory_order_acquire);
}

void pq_feed_wait(struct pq_feed *f, const struct pq_batch *b)
{
	pthread_mutex_lock(&f->mu);
	while (!b->done) {
		f->awaited = b;
		pthread_cond_wait(&f->done, &f->mu);
	}
	pthread_mutex_unlock(&f->mu);
}

void pq_feed_take(struct pq_feed *f, struct pq_batch *b)
{
	pthread_mutex_lock(&f->mu);
	if (b->prev)
		b->prev->after = b->after;
	else
		f->head = b->after;
	if (b->after)
		b->after->prev = b->prev;
	else
		f->tail = b->prev;
	b->prev = b->after = NULL;
	f->held--;
	pthread_mutex_unlock(&f->mu);
}

void pq_feed_resume(struct pq_feed *f, struct pq_writer *pw)
{
	pthread_mutex_lock(&f->mu);
	pw->stopped = 0;
	pthread_mutex_unlock(&f->mu);
}
