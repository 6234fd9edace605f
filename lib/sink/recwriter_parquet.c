/*
 * recwriter_parquet: the sink's Parquet files (lib/sink/recwriter.h): a
 * stream's records as rows of a pq_writer, its columns those of its last
 * SCHEMA (or of its first record), widened as values need.
 */
#include "recwriter.h"

#include <fnmatch.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "parquet.h"
#include "sb.h"
#include "singer.h"
#include "sink_impl.h"

/* The run's state, s->rwstate (lib/sink/recwriter.h). */
struct parquet_run {
	struct pq_codec *codec;	/* the page compressor all files share */
	struct pq_options pqo;
	struct pq_feed *feed;	/* threads > 0: the worker that adds the rows, or NULL */
	struct pq_batch *spare;	/* fed: batches to reuse (linked by after) */
	uint64_t rg_held;	/* the streams' rg_held, all together */
	uint64_t batched;	/* fed: the memory of the streams' open batches */
};

/* A stream's, st->rwstate. */
struct parquet_stream {
	struct pq_schema *pqs;	/* the columns of its last SCHEMA, or NULL */
	int inferred;		/* its columns inferred from its first record */
	struct sb widened;	/* JSON array members of the columns widened */
	struct pq_batch *batch;	/* fed: its records not yet handed to the feed, or NULL */
	size_t last_bytes, last_nm, last_n;	/* fed: what its last open batch held */
	uint64_t rg_held;	/* bytes of its records since its row group was last ended early */
	int resolving;		/* fed: its file rolls inside sink_close_file()'s settle */
	char **warned;		/* columns widened with a warning already */
	size_t nwarned;
};

static inline struct parquet_run *prun(const struct sink *s)
{
	return s->rwstate;
}

static inline struct parquet_stream *pst(const struct stream *st)
{
	return st->rwstate;
}

/* A value for a message: its first bytes, cut at a character boundary. */
static void quote_value(struct sb *out, const struct json_span *v)
{
	size_t n = v->len;

	if (n > 200) {
		n = 200;
		while (n > 0 && ((unsigned char)v->p[n] & 0xc0) == 0x80)
			n--;
	}
	sb_add(out, v->p, n);
	if (n < v->len)
		sb_adds(out, "...");
}

/*
 * A column about to widen (f, after PQ_WIDEN): into the stream's list for
 * the plan, and, once per column and run, a warning when the value breaks
 * the schema or lands as text.
 */
static void note_widening(struct sink *s, struct stream *st, const struct pq_fail *f, int rolled,
			  unsigned long long recno)
{
	struct parquet_stream *ps = pst(st);
	const struct pq_column *col = &ps->pqs->cols[f->column];
	struct sb v = SB_INIT;
	size_t i;

	sb_adds(&ps->widened, ps->widened.len ? ",{\"column\":" : "{\"column\":");
	sb_add(&ps->widened, col->qname, col->qname_len);
	sb_addf(&ps->widened, ",\"from\":\"%s\",\"to\":\"%s\",\"why\":", pq_kind_name(col->kind),
		pq_kind_name(f->need));
	json_quote(&ps->widened, f->why, strlen(f->why));
	sb_addf(&ps->widened, ",\"record\":%llu}", recno);
	if (!f->mismatch && f->need != PQ_TEXT)
		return;
	for (i = 0; i < ps->nwarned; i++) {
		if (strcmp(ps->warned[i], col->name) == 0)
			return;
	}
	ps->warned = xrealloc(ps->warned, (ps->nwarned + 1) * sizeof(*ps->warned));
	ps->warned[ps->nwarned++] = xstrdup(col->name);
	quote_value(&v, &f->value);
	if (rolled)
		err_warn("<stdin>:%llu: record %llu of stream '%s': field '%s' (%s): %s %s: "
			 "the column is %s from this record on (in a new file; earlier files keep %s)",
			 s->lineno, recno, st->name, col->name, pq_kind_name(col->kind), v.buf, f->why,
			 pq_kind_name(f->need), pq_kind_name(col->kind));
	else
		err_warn("<stdin>:%llu: record %llu of stream '%s': field '%s' (%s): %s %s: "
			 "the column is %s", s->lineno, recno, st->name, col->name,
			 pq_kind_name(col->kind), v.buf, f->why, pq_kind_name(f->need));
	sb_free(&v);
}

/* A value that does not fit, when the run fails on it (schema_mismatch: fail). */
static void mismatch_failed(struct sink *s, struct stream *st, const struct pq_fail *f,
			    unsigned long long recno)
{
	const struct pq_column *col = &pst(st)->pqs->cols[f->column];
	struct sb v = SB_INIT;

	quote_value(&v, &f->value);
	sink_fail(s, "<stdin>:%llu: record %llu of stream '%s' does not fit its Parquet columns: "
		  "field '%s' (%s): %s %s (schema_mismatch: fail; widen, the default, lands it)",
		  s->lineno, recno, st->name, col->name, pq_kind_name(col->kind), v.buf, f->why);
	sb_free(&v);
}

/* PQ_WIDEN that widens (the default), or fails the run (schema_mismatch: fail). */
static int fails_run(const struct sink *s, const struct pq_fail *f)
{
	return s->cfg->mismatch_fail && f->need != PQ_DECIMAL && f->need != PQ_DIGITS;
}

/*
 * One record (a JSON object) into the stream's Parquet file; from: the
 * message it is the record of, as parsed, when its members were noted
 * (so the writer does not walk it again), else NULL.
 */
static int parquet_add(struct sink *s, struct stream *st, const struct json_span *rec,
		       const struct singer_msg *from)
{
	struct pq_fail f;
	int r, rolled;

	for (;;) {
		if (st->file == NULL && sink_open_file(s, st) != 0)
			return -1;
		r = from && from->members ? pq_writer_add_members(st->file, rec->p, from->members, from->nmembers, &f) :
		    pq_writer_add(st->file, rec, &f);
		if (r != PQ_WIDEN || fails_run(s, &f))
			break;
		/*
		 * A value its column cannot hold: the file so far keeps the
		 * narrower type, the stream goes on in a new file whose column
		 * holds it exactly (a file with no rows yet just changes it).
		 */
		rolled = pq_writer_rows(st->file) > 0;
		if (rolled && sink_close_file(s, st) != 0)
			return -1;
		note_widening(s, st, &f, rolled, st->records + st->failed_in + 1);
		pq_schema_widen(pst(st)->pqs, &f);
	}
	if (r == PQ_WIDEN) {
		mismatch_failed(s, st, &f, st->records + st->failed_in + 1);
		return -1;
	}
	if (r != 0) {
		sink_fail_said(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		return -1;
	}
	st->records++;
	st->file_records++;
	if (pq_writer_reached(st->file, s->cfg->max_file_size) && sink_close_file(s, st) != 0)
		return -1;
	return 0;
}

/*
 * Fed (threads > 0): the records of a stream are copied into batches of
 * about FEED_BATCH bytes, with the members the scanner noted, and handed to
 * the feed's worker (lib/parquet.h), which adds them to the stream's file
 * while this thread reads on; at most FEED_HELD batches are held by the
 * feed at once, so memory stays bounded.  What the worker cannot decide
 * alone stops the stream's batches at that record, and is decided here,
 * in the stream's record order, when the batch comes back: a value that
 * does not fit (the column widens, in a new file when the file holds
 * rows, as parquet_add() does; or the run fails), a file that reached
 * max_file_size (it is closed).  The records after it are handed over
 * again, to the stream's file from then on.  So the files, the plan and
 * the messages are those of parquet_add(), record by record; only a
 * widening's warning comes a little later on stderr.
 *
 * The open batches, one per stream with records not yet handed over, are
 * bounded together too, by the memory they take (their bytes, members and
 * records, as allocated): past FEED_OPEN_MAX, all streams, the stream
 * whose batch holds the most records hands it over early, and a stream's
 * new batch is a batch kept for reuse only while that fits, else one that
 * grows from small.  200 interleaved streams would otherwise each hold a
 * batch of 64 KiB of records and their members (about 300 KiB).  Where a
 * batch ends does not change the files: the worker adds the same records
 * in the same order, and the row groups end by the records (see Memory,
 * below).
 */
enum { FEED_BATCH = 64 * 1024, FEED_HELD = 16, FEED_OPEN_MAX = 8 << 20, FEED_SPARE = FEED_HELD };

/* What b takes in memory. */
static size_t batch_cap(const struct pq_batch *b)
{
	return b->bytes.cap + b->mcap * sizeof(*b->m) + b->rcap * sizeof(*b->r);
}

/* The first of the batches kept for reuse (run->spare not NULL), emptied. */
static struct pq_batch *take_spare(struct sink *s)
{
	struct parquet_run *run = prun(s);
	struct pq_batch *b = run->spare;

	run->spare = b->after;
	pq_batch_clear(b);
	return b;
}

/*
 * A batch to fill; st not NULL: st's open batch (see above).  A stream
 * whose open batch was handed over before gets the room that one used,
 * and a quarter more, at once (a batch kept for reuse, its arrays cut or
 * grown to that size, which copies nothing while it is empty): grown from
 * small, a batch's members were copied again at each doubling, 17% of the
 * parsing thread's instructions with 200 interleaved streams, whose open
 * batches never fit in FEED_OPEN_MAX as kept.
 */
static struct pq_batch *batch_get(struct sink *s, struct stream *st)
{
	struct parquet_run *run = prun(s);
	struct pq_batch *b = run->spare;

	if (st && pst(st)->last_n > 0) {
		size_t bytes = pst(st)->last_bytes, nm = pst(st)->last_nm, n = pst(st)->last_n;

		b = b ? take_spare(s) : xcalloc(1, sizeof(*b));
		if (bytes > FEED_BATCH) {
			/* Records longer than a batch: the room of one batch's worth. */
			nm = nm * FEED_BATCH / bytes;
			n = n * FEED_BATCH / bytes;
			bytes = FEED_BATCH;
		}
		pq_batch_fit(b, bytes + bytes / 4 + 256, nm + nm / 4 + 16, n + n / 4 + 4);
	} else if (b == NULL || (st && run->batched + batch_cap(b) > FEED_OPEN_MAX)) {
		b = xcalloc(1, sizeof(*b));
	} else {
		b = take_spare(s);
	}
	if (st)
		run->batched += batch_cap(b);
	return b;
}

static void batch_put(struct sink *s, struct pq_batch *b)
{
	struct parquet_run *run = prun(s);
	const struct pq_batch *x;
	size_t n = 0;

	/* Kept for reuse, as many as the feed holds: collect() takes back
	 * several at once, and a batch freed here was one allocated anew,
	 * grown from small (its members' array copied at each doubling,
	 * mmap'd afresh past 128 KiB) a moment later; with 4 the parsing
	 * thread spent 6% of its instructions in realloc's copies. */
	for (x = run->spare; x && n < FEED_SPARE; x = x->after)
		n++;
	if (n >= FEED_SPARE) {
		pq_batch_free(b);
		return;
	}
	pq_batch_clear(b);
	b->after = run->spare;
	run->spare = b;
}

/* 1 when the feed holds batches of st. */
static int holds(const struct sink *s, const struct stream *st)
{
	const struct pq_batch *b;

	for (b = pq_feed_first(prun(s)->feed); b; b = pq_feed_after(b)) {
		if (b->owner == (size_t)(st - s->streams))
			return 1;
	}
	return 0;
}

/*
 * A batch that stopped (b->next: the record it stopped at, or after):
 * what the worker did not decide.  s->lineno is that record's line.
 */
static int handle_stop(struct sink *s, struct stream *st, const struct pq_batch *b)
{
	const struct pq_rec *rec = b->n ? &b->r[b->next < b->n ? b->next : b->n - 1] : NULL;
	int rolled;

	/* A finish batch has no record: its error is the file's, like a record's write error. */
	if (rec == NULL) {
		sink_fail_said(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		return -1;
	}
	switch (b->stop) {
	case PQ_STOP_REACHED:
		return sink_close_file(s, st);
	case PQ_STOP_WIDEN:
		if (fails_run(s, &b->f)) {
			st->records = rec->seq;
			mismatch_failed(s, st, &b->f, rec->recno);
			return -1;
		}
		rolled = pq_writer_rows(st->file) > 0;
		if (rolled && sink_close_file(s, st) != 0)
			return -1;
		note_widening(s, st, &b->f, rolled, rec->recno);
		pq_schema_widen(pst(st)->pqs, &b->f);
		if (!rolled)
			pq_feed_resume(prun(s)->feed, st->file);
		return 0;
	default:
		st->records = rec->seq;
		sink_fail_said(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		return -1;
	}
}

/*
 * Every batch of st the feed holds, back once the worker is done with
 * them: the first that stopped is handled, and its records after the stop
 * and those of the batches after it are handed over again.
 */
static int resolve(struct sink *s, struct stream *st)
{
	struct parquet_stream *ps = pst(st);
	struct parquet_run *run = prun(s);
	struct pq_batch *held[FEED_HELD + 1], *b;
	unsigned long long lineno = s->lineno;
	size_t n = 0, i, j;
	int r = 0, more;

	for (b = pq_feed_first(run->feed); b && n < FEED_HELD + 1; b = pq_feed_after(b)) {
		if (b->owner == (size_t)(st - s->streams))
			held[n++] = b;
	}
	if (n == 0)
		return 0;
	pq_feed_wait(run->feed, held[n - 1]);
	for (i = 0; i < n; i++)
		pq_feed_take(run->feed, held[i]);
	for (i = 0; i < n && held[i]->stop == PQ_STOP_NONE; i++)
		batch_put(s, held[i]);
	if (i == n)
		return 0;
	b = held[i];
	ps->resolving++;
	if (b->n)
		s->lineno = b->r[b->next < b->n ? b->next : b->n - 1].lineno;
	r = handle_stop(s, st, b);
	b->start = b->next;
	/* Records left: they need a file (a finish batch alone does not). */
	more = ps->batch != NULL;
	for (j = i; j < n; j++)
		more |= held[j]->start < held[j]->n;
	if (r == 0 && st->file == NULL && more && sink_open_file(s, st) != 0)
		r = -1;
	s->lineno = lineno;
	ps->resolving--;
	for (j = i; j < n; j++) {
		if (r == 0 && st->file && (held[j]->start < held[j]->n || (held[j]->finish && j > i))) {
			held[j]->pw = st->file;
			pq_feed_submit(run->feed, held[j]);
		} else {
			batch_put(s, held[j]);
		}
	}
	if (r == 0 && ps->batch)
		ps->batch->pw = st->file;
	return r;
}

/*
 * Take back the oldest batches the worker is done with (wait: at least
 * one, waiting for it), resolving the streams of those that stopped.
 */
static int collect(struct sink *s, int wait)
{
	struct parquet_run *run = prun(s);
	struct pq_batch *b;

	while ((b = pq_feed_first(run->feed)) != NULL) {
		if (!pq_feed_is_done(run->feed, b)) {
			if (!wait)
				return 0;
			pq_feed_wait(run->feed, b);
		}
		wait = 0;
		if (b->stop != PQ_STOP_NONE) {
			if (resolve(s, &s->streams[b->owner]) != 0)
				return -1;
			continue;
		}
		pq_feed_take(run->feed, b);
		batch_put(s, b);
	}
	return 0;
}

/*
 * st's open batch to the feed, once it holds fewer than FEED_HELD; then
 * what st's file has ready is written.  finish: a finish batch follows
 * (lib/parquet.h), unless the last one handed over for st is one.
 */
static int hand_over(struct sink *s, struct stream *st, int finish)
{
	struct parquet_stream *ps = pst(st);
	struct parquet_run *run = prun(s);
	struct pq_batch *b, *last = NULL;

	if (collect(s, 0) != 0)
		return -1;
	if (pq_feed_held(run->feed) + 2 > FEED_HELD) {
		/*
		 * Full: wait until half of it is done, not only its first
		 * batch; when the worker is the slower, this thread otherwise
		 * slept and woke once a batch (twice the context switches).
		 */
		size_t i = 1;

		for (b = pq_feed_first(run->feed); b && i < FEED_HELD / 2; b = pq_feed_after(b))
			i++;
		if (b)
			pq_feed_wait(run->feed, b);
	}
	while (pq_feed_held(run->feed) + 2 > FEED_HELD) {
		if (collect(s, 1) != 0)
			return -1;
	}
	b = ps->batch;
	ps->batch = NULL;
	if (b) {
		run->batched -= batch_cap(b);
		ps->last_bytes = b->bytes.len;
		ps->last_nm = b->nm;
		ps->last_n = b->n;
		pq_feed_submit(run->feed, b);
	}
	for (b = pq_feed_first(run->feed); b; b = pq_feed_after(b)) {
		if (b->owner == (size_t)(st - s->streams))
			last = b;
	}
	if (finish && st->file && (last == NULL || !last->finish)) {
		b = batch_get(s, NULL);
		b->pw = st->file;
		b->owner = (size_t)(st - s->streams);
		b->finish = 1;
		pq_feed_submit(run->feed, b);
	}
	if (st->file && pq_feed_write_ready(run->feed, st->file) != 0) {
		sink_fail_said(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		return -1;
	}
	return 0;
}

/* parquet_add(), fed: the record goes into the stream's open batch. */
static int fed_add(struct sink *s, struct stream *st, const struct json_span *rec,
		   const struct singer_msg *from)
{
	struct parquet_stream *ps = pst(st);
	struct parquet_run *run = prun(s);
	struct pq_batch *b;
	size_t cap;

	if (st->file == NULL && sink_open_file(s, st) != 0)
		return -1;
	b = ps->batch;
	if (b == NULL) {
		b = ps->batch = batch_get(s, st);
		b->pw = st->file;
		b->owner = (size_t)(st - s->streams);
		b->limit = s->cfg->max_file_size;
	}
	cap = batch_cap(b);
	pq_batch_add(b, rec, from ? from->members : NULL, from && from->members ? from->nmembers : 0,
		     s->lineno, st->records + st->failed_in + 1, st->records);
	st->records++;
	run->batched += batch_cap(b) - cap;
	if (b->bytes.len >= FEED_BATCH)
		return hand_over(s, st, 0);
	if (run->batched > FEED_OPEN_MAX) {
		/* The open batches take too much: the fullest goes (see above). */
		struct stream *most = st;
		size_t i;

		for (i = 0; i < s->n; i++) {
			if (pst(&s->streams[i])->batch && pst(&s->streams[i])->batch->bytes.len > pst(most)->batch->bytes.len)
				most = &s->streams[i];
		}
		return hand_over(s, most, 0);
	}
	return 0;
}

/* Before st's file closes: its records land (lib/sink/recwriter.h). */
static int parquet_settle(struct sink *s, struct stream *st)
{
	if (prun(s)->feed == NULL)
		return 0;
	/* Inside resolve(), which holds st's batches: the file rolls as it is. */
	if (!pst(st)->resolving) {
		if (hand_over(s, st, 1) != 0)
			return -1;
		while (holds(s, st)) {
			if (resolve(s, st) != 0)
				return -1;
		}
	}
	if (st->file)
		st->file_records = pq_writer_rows(st->file);
	return 0;
}

/*
 * The input ended: every stream's records, and the writing out of its last
 * row group, go to the worker before the first file closes, so that the
 * worker does them while this thread closes the files one by one.
 */
static int parquet_flush(struct sink *s)
{
	size_t i;

	for (i = 0; prun(s)->feed && i < s->n; i++) {
		if (s->streams[i].file && hand_over(s, &s->streams[i], 1) != 0)
			return -1;
	}
	return 0;
}

/*
 * The run failed: the worker finishes what it holds; the first record it
 * could not add where the run would have failed (on an earlier line than
 * the plan's error) says why instead.
 */
static void parquet_abandon(struct sink *s)
{
	struct parquet_run *run = prun(s);
	struct pq_batch *b, *last = NULL, *first = NULL;
	unsigned long long lineno = s->lineno, at = 0;
	size_t i;

	if (run->feed == NULL)
		return;
	for (i = 0; i < s->n; i++) {
		if (pst(&s->streams[i])->batch)
			batch_put(s, pst(&s->streams[i])->batch);
		pst(&s->streams[i])->batch = NULL;
	}
	run->batched = 0;
	for (b = pq_feed_first(run->feed); b; b = pq_feed_after(b))
		last = b;
	if (last == NULL)
		return;
	pq_feed_wait(run->feed, last);
	for (b = pq_feed_first(run->feed); b; b = pq_feed_after(b)) {
		if (b->stop == PQ_STOP_ERROR || (b->stop == PQ_STOP_WIDEN && fails_run(s, &b->f))) {
			if (first == NULL || b->r[b->next].lineno < at) {
				first = b;
				at = b->r[b->next].lineno;
			}
		}
	}
	if (first == NULL || (s->plan->error && at >= s->error_line))
		return;
	free(s->plan->error);
	s->plan->error = NULL;
	s->reported = 0;
	s->lineno = at;
	handle_stop(s, &s->streams[first->owner], first);
	s->lineno = lineno;
}

/* The Parquet columns of a stream's schema, string_columns applied. */
static struct pq_schema *stream_columns(struct sink *s, const struct stream *st, const char *schema)
{
	char *const *sc = s->cfg->string_columns;
	const char **text = NULL;
	struct pq_schema *pqs;
	size_t n = 0;

	for (; sc && sc[0] && sc[1]; sc += 2) {
		if (fnmatch(sc[0], st->name, 0) == 0) {
			text = xrealloc(text, (n + 2) * sizeof(*text));
			text[n++] = sc[1];
			text[n] = NULL;
		}
	}
	/* pq_schema_new() only reads the patterns. */
	pqs = pq_schema_new(schema, strlen(schema), (char *const *)(uintptr_t)text);
	free(text);
	return pqs;
}

/*
 * A stream whose RECORDs come before any SCHEMA: its columns are those of
 * its first record (lib/parquet.h, pq_schema_infer()); later members that
 * record lacked go into the extra column, and values widen as usual.
 */
static void infer_columns(struct sink *s, struct stream *st, const struct json_span *rec)
{
	free(st->schema);
	st->schema = pq_schema_infer(rec);
	pst(st)->inferred = 1;
	pst(st)->pqs = stream_columns(s, st, st->schema);
	err_warn("<stdin>:%llu: stream '%s' sent a RECORD before any SCHEMA: its Parquet columns "
		 "are inferred from that record", s->lineno, st->name);
}

/*
 * Memory.  An open file holds its open row group: the values of up to
 * row_group_size bytes, uncompressed in its pages.  Many streams open at
 * once (200 interleaved, each smaller than a row group) would hold them
 * all, so the records landed since a stream's row group was last ended
 * here are counted (rg_held, in record bytes, a measure of the values
 * held), and once they pass RG_HELD_MAX over all streams the stream with
 * the most ends its row group: its file gets one more row group, and its
 * pages' buffers are given back (pq_flush_row_group()), so that the open
 * files hold what their row groups hold now, not the most they ever held.
 * 24 MiB: 200 interleaved streams take about 53 MiB at their peak (62 MiB
 * with 16 MiB and the buffers kept), and make larger pages, which cost
 * the page worker less per byte.  The count depends only on the
 * records, so the row groups end at the same records with any -j (the
 * feed's worker ends it after the stream's records handed over so far).
 */
enum { RG_HELD_MAX = 24 << 20 };

static int shed_row_group(struct sink *s)
{
	struct parquet_run *run = prun(s);
	struct stream *most = NULL;
	size_t i;

	for (i = 0; i < s->n; i++) {
		if (most == NULL || pst(&s->streams[i])->rg_held > pst(most)->rg_held)
			most = &s->streams[i];
	}
	if (most == NULL)
		return 0;
	run->rg_held -= pst(most)->rg_held;
	pst(most)->rg_held = 0;
	if (most->file == NULL)
		return 0;
	if (run->feed)
		return hand_over(s, most, 1);
	if (pq_writer_end_row_group(most->file) != 0) {
		sink_fail_said(s, "cannot write '%s' in %s", most->staged, bucket_url(s->b));
		return -1;
	}
	return 0;
}

/* len bytes of st's records landed: memory is counted (see above). */
static int held(struct sink *s, struct stream *st, size_t len)
{
	struct parquet_stream *ps = pst(st);
	struct parquet_run *run = prun(s);

	ps->rg_held += len;
	run->rg_held += len;
	return run->rg_held > RG_HELD_MAX ? shed_row_group(s) : 0;
}

/*
 * A record's bytes (count of them, one per line, after a transform) into
 * Parquet rows; from: see parquet_add().
 */
static int parquet_records(struct sink *s, struct stream *st, const char *bytes, size_t len,
			   unsigned long long count, const struct singer_msg *from)
{
	struct parquet_stream *ps = pst(st);
	struct parquet_run *run = prun(s);
	const char *p = bytes, *end = bytes + len;

	if (s->opt->transform == NULL) {
		struct json_span rec = { bytes, len, JSON_OBJECT };

		if (ps->pqs == NULL)
			infer_columns(s, st, &rec);
		if ((run->feed ? fed_add(s, st, &rec, from) : parquet_add(s, st, &rec, from)) != 0)
			return -1;
		return held(s, st, len);
	}
	while (count-- > 0 && p <= end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p), errpos;
		struct json_span rec;
		const char *errmsg;

		if (json_validate(p, n, &rec, &errpos, &errmsg) != 0 || rec.type != JSON_OBJECT) {
			sink_fail(s, "<stdin>:%llu: the transform's output for record %llu of stream '%s' is not "
				  "a JSON object: a Parquet row needs one", s->lineno,
				  st->records + st->failed_in + 1, st->name);
			return -1;
		}
		if (ps->pqs == NULL)
			infer_columns(s, st, &rec);
		if ((run->feed ? fed_add(s, st, &rec, NULL) : parquet_add(s, st, &rec, NULL)) != 0 ||
		    held(s, st, n) != 0)
			return -1;
		p += n + 1;
	}
	return 0;
}

static int parquet_start(struct sink *s)
{
	struct parquet_run *run = s->rwstate = xcalloc(1, sizeof(*run));

	s->ext = "";	/* the pages are compressed, not the file */
	/*
	 * -j N, N not 0: two threads beside this one, whatever N (the rows of
	 * a file, and the pages of a column, must stay in order): the feed's
	 * worker adds the rows, the codec's compresses the pages.  Three
	 * threads in a pipeline share two cores better than two would: the
	 * values and the pages together cost more than this thread's scan.
	 */
	run->codec = pq_codec_new(s->cfg->compression, s->cfg->compression_level, s->opt->threads);
	run->pqo.codec = run->codec;
	run->pqo.row_group_rows = s->cfg->row_group_rows;
	run->pqo.row_group_size = s->cfg->row_group_size;
	if (run->codec == NULL) {
		s->reported = 1;
		sink_fail(s, "cannot start the Parquet page compressor");
		return -1;
	}
	if (s->opt->threads > 0 && (run->feed = pq_feed_new(run->codec)) == NULL) {
		s->reported = 1;
		sink_fail(s, "cannot start the Parquet writer's thread");
		return -1;
	}
	return 0;
}

static void parquet_finish(struct sink *s)
{
	struct parquet_run *run = s->rwstate;

	if (run == NULL)
		return;
	pq_feed_free(run->feed);
	while (run->spare) {
		struct pq_batch *b = run->spare;

		run->spare = b->after;
		pq_batch_free(b);
	}
	pq_codec_free(run->codec);
	free(run);
	s->rwstate = NULL;
}

static void *parquet_stream_new(void)
{
	return xcalloc(1, sizeof(struct parquet_stream));
}

static void parquet_stream_free(void *state)
{
	struct parquet_stream *ps = state;

	if (ps == NULL)
		return;
	pq_schema_free(ps->pqs);
	sb_free(&ps->widened);
	while (ps->nwarned > 0)
		free(ps->warned[--ps->nwarned]);
	free(ps->warned);
	free(ps);
}

/* The plan's words on st: its columns' types, whether inferred, its widenings. */
static int parquet_describe(const struct stream *st, struct plan_stream *p)
{
	const struct parquet_stream *ps = pst(st);

	if (p == NULL)
		return ps->widened.len > 0;
	if (ps->pqs) {
		struct sb types = SB_INIT;

		pq_schema_types_json(ps->pqs, &types);
		p->parquet_types = sb_detach(&types);
	}
	p->inferred = ps->inferred;
	if (ps->widened.len) {
		struct sb w = SB_INIT;

		sb_addf(&w, "[%s]", ps->widened.buf);
		p->widened = sb_detach(&w);
	}
	return ps->widened.len > 0;
}

/* A commit unit was written: its widenings are said. */
static void parquet_unit_done(struct stream *st)
{
	sb_reset(&pst(st)->widened);
}

static void *parquet_open(struct sink *s, struct stream *st, struct bucket_writer *w)
{
	struct parquet_run *run = prun(s);
	struct pq_writer *pw = pq_writer_open(w, pst(st)->pqs, &run->pqo);

	if (pw && run->feed)
		pq_feed_attach(run->feed, pw);
	return pw;
}

static int parquet_schema(struct sink *s, struct stream *st, const char *schema)
{
	struct parquet_stream *ps = pst(st);

	if (st->schema != NULL && strcmp(st->schema, schema) == 0) {
		ps->inferred = 0;
		return 0;
	}
	/* New columns: a new file, once the records of the old ones that
	 * wait have landed. */
	if ((st->waiting > 0 && sink_drain(s, st) != 0) || sink_close_file(s, st) != 0)
		return -1;
	pq_schema_free(ps->pqs);
	ps->pqs = stream_columns(s, st, schema);
	ps->inferred = 0;
	return 0;
}

static int parquet_close(void *file, uint64_t *bytes)
{
	return pq_writer_close(file, bytes);
}

static void parquet_abort(void *file)
{
	pq_writer_abort(file);
}

const struct recwriter recwriter_parquet = {
	.format = "parquet",
	.suffix = ".parquet",
	.members = 1,
	.start = parquet_start,
	.finish = parquet_finish,
	.open = parquet_open,
	.land = parquet_records,
	.schema = parquet_schema,
	.settle = parquet_settle,
	.flush = parquet_flush,
	.abandon = parquet_abandon,
	.close = parquet_close,
	.abort = parquet_abort,
	.stream_new = parquet_stream_new,
	.stream_free = parquet_stream_free,
	.describe = parquet_describe,
	.unit_done = parquet_unit_done,
};
