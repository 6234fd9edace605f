/* sink: Singer stream in, staged compressed files and a commit plan out. */
#include "sink.h"
#include "sink_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "absent.h"
#include "config.h"
#include "mask.h"
#include "err.h"
#include "json.h"
#include "recwriter.h"
#include "singer.h"
#include "tapline.h"
#include "transform.h"
#include "util.h"

static void fail_with(struct sink *s, const char *fmt, va_list ap, int said)
	__attribute__((format(printf, 2, 0)));
static void fail_with(struct sink *s, const char *fmt, va_list ap, int said)
{
	char buf[2048], cause[1024];
	size_t n;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	/* the root cause: the first line said, not what its cleanup said after it */
	if (said && err_first_cause(s->said_mark, cause, sizeof(cause)) == 0) {
		n = strlen(buf);
		snprintf(buf + n, sizeof(buf) - n, ": %s", cause);
	}
	if (s->plan->error == NULL) {
		s->plan->error = xstrdup(buf);
		s->error_line = s->lineno;
	}
}

void sink_fail(struct sink *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_with(s, fmt, ap, 0);
	va_end(ap);
}

void sink_fail_said(struct sink *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fail_with(s, fmt, ap, 1);
	va_end(ap);
	s->reported = 1;
}

static int env_is(const char *name, const char *value)
{
	const char *v = getenv(name);

	return v != NULL && strcmp(v, value) == 0;
}

/* The length of the well-formed UTF-8 character at p (not a control), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t k, i;
	unsigned long cp;

	if (c < 0x80)
		return c < 0x20 || c == 0x7f ? 0 : 1;
	if (c >= 0xc2 && c <= 0xdf)
		k = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4, cp = c & 0x07;
	else
		return 0;
	if (k > n)
		return 0;
	for (i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

/*
 * The start of a line that is not a Singer message (a tap's log line on
 * stdout, often), quoted for the error: 60 bytes at most, cut at a
 * character boundary, control bytes and bytes that are not UTF-8 as '?',
 * secrets masked.
 */
static void quote_line(struct sink *s, struct sb *out, const char *line, size_t len)
{
	struct sb q = SB_INIT;
	size_t n = len, i;

	if (n > 60) {
		n = 60;
		while (n > 0 && ((unsigned char)line[n] & 0xc0) == 0x80)
			n--;
	}
	for (i = 0; i < n;) {
		size_t k = utf8_len((const unsigned char *)line + i, n - i);

		if (k == 0) {	/* a control byte, or not UTF-8: the message stays text */
			sb_addc(&q, '?');
			i++;
		} else {
			sb_add(&q, line + i, k);
			i += k;
		}
	}
	mask_text(s->cfg, &q);
	sb_addc(out, '\'');
	sb_add(out, q.buf ? q.buf : "", q.len);
	sb_adds(out, n < len ? "...'" : "'");
	sb_free(&q);
}

/* Members of a RECORD noted as its line is validated; a wider record is walked again. */
enum { SINK_MEMBERS = 256 };

/* 1 when a record's "version" (span, JSON_NONE when absent) is not its stream's latest. */
static int new_version(const struct stream *st, const struct json_span *v)
{
	if (v->type == JSON_NONE)
		return st->version != NULL;
	return st->version == NULL || strlen(st->version) != v->len ||
	       memcmp(st->version, v->p, v->len) != 0;
}

/*
 * Records of another table version: a file holds one version only, so
 * that an ACTIVATE_VERSION can drop the files of the versions before it.
 */
static int switch_version(struct sink *s, struct stream *st, const struct json_span *v)
{
	if ((st->waiting > 0 && sink_drain(s, st) != 0) || sink_close_file(s, st) != 0)
		return -1;
	free(st->version);
	st->version = v->type == JSON_NONE ? NULL : xstrndup(v->p, v->len);
	return 0;
}

/*
 * ACTIVATE_VERSION: the records of this version replace every earlier one
 * (Singer).  This run's files of other versions are dropped now (files of
 * records without a "version" stay); the stream's files of earlier runs go
 * at commit (plan "activated").
 */
static int on_activate(struct sink *s, const struct singer_msg *m)
{
	struct stream *st;
	size_t i, kept = 0;

	/* One without a stream or a version says nothing: passed over. */
	if (m->stream.type != JSON_STRING) {
		err_warn("<stdin>:%llu: ACTIVATE_VERSION without a stream: passed over", s->lineno);
		return 0;
	}
	st = sink_lookup(s, &m->stream);
	if (st == NULL)
		return -1;
	if (st->dropped)
		return 0;
	if (m->version.type != JSON_NUMBER && m->version.type != JSON_STRING) {
		err_warn("<stdin>:%llu: ACTIVATE_VERSION of stream '%s' without a version: passed over",
			 s->lineno, st->name);
		return 0;
	}
	if (new_version(st, &m->version) && switch_version(s, st, &m->version) != 0)
		return -1;
	for (i = st->parts; i; i = s->streams[i - 1].next_part) {
		if (new_version(&s->streams[i - 1], &m->version) &&
		    switch_version(s, &s->streams[i - 1], &m->version) != 0)
			return -1;
	}
	for (i = 0; i < s->plan->nfiles; i++) {
		struct plan_file *f = &s->plan->files[i];

		/* Records that name no version belong to none: they stay. */
		if (strcmp(f->stream, st->name) == 0 && f->version != NULL &&
		    strcmp(f->version, st->version) != 0) {
			if (bucket_delete(s->b, f->staged) != 0) {
				sink_fail_said(s, "cannot delete '%s' in %s", f->staged, bucket_url(s->b));
				return -1;
			}
			st->records -= f->records;
			free(f->stream);
			free(f->staged);
			free(f->final);
			free(f->version);
			continue;
		}
		s->plan->files[kept++] = *f;
	}
	s->plan->nfiles = kept;
	free(st->activated);
	st->activated = xstrdup(st->version);
	return 0;
}

/*
 * partition_by: each record (count of them, one a line, after a
 * transform) into the part of its folder (sink_part.c), whose version is
 * the record's.
 */
static int route_parts(struct sink *s, struct stream *st, const char *bytes, size_t len,
		       unsigned long long count, const struct singer_msg *from, const struct singer_msg *m)
{
	size_t pi = (size_t)(st - s->streams);

	/*
	 * An upsert stream's records stay in one file sequence, in the tap's
	 * order: pipe-merge places each row in the folder of its own value,
	 * and a key sent twice in a run keeps its last record only if it
	 * reads them in order (a file per folder would lose it).
	 */
	if (st->upsert) {
		const char *p = bytes, *nl;
		size_t left = len;
		unsigned long long i;

		for (i = 0; i < count; i++) {
			nl = i + 1 < count ? memchr(p, '\n', left) : NULL;
			if (sink_part_key(s, st, p, nl ? (size_t)(nl - p) : left, from) != 0)
				return -1;
			if (nl == NULL)
				break;
			left -= (size_t)(nl - p) + 1;
			p = nl + 1;
		}
		return sink_route(s, st, bytes, len, count, from);
	}
	while (count-- > 0) {
		const char *nl = count ? memchr(bytes, '\n', len) : NULL;
		size_t n = nl ? (size_t)(nl - bytes) : len;
		struct stream *part = sink_part(s, &s->streams[pi], bytes, n, from);

		if (part == NULL)
			return -1;
		part->last_used = s->tick;
		if (new_version(part, &m->version) && switch_version(s, part, &m->version) != 0)
			return -1;
		if (sink_route(s, part, bytes, n, 1, from) != 0)
			return -1;
		if (nl == NULL)
			break;
		len -= n + 1;
		bytes = nl + 1;
	}
	return 0;
}

static int on_record(struct sink *s, const struct singer_msg *m)
{
	struct stream *st = sink_lookup(s, &m->stream);
	const char *bytes = m->record.p;
	size_t len = m->record.len;
	unsigned long long count = 1;
	const struct singer_msg *from = m;

	if (st == NULL)
		return -1;
	if (st->dropped) {
		st->records++;
		return 0;
	}
	s->last = st;
	st->last_used = ++s->tick;
	if (new_version(st, &m->version) && switch_version(s, st, &m->version) != 0)
		return -1;
	if (s->opt->transform) {
		struct sb err = SB_INIT;

		sb_reset(&s->transformed);
		if (transform_apply(s->opt->transform, st->name, bytes, len, &s->transformed,
				    &count, &err) != 0) {
			sink_fail(s, "<stdin>:%llu: the transform failed on record %llu of stream '%s': %s",
				  s->lineno, st->records + st->failed_in + 1, st->name, err.buf ? err.buf : "");
			sb_free(&err);
			return -1;
		}
		sb_free(&err);
		st->failed_in += 1 - (count > 0);
		if (count == 0)
			return 0;
		bytes = s->transformed.buf;
		len = s->transformed.len - 1;	/* its last newline is added below */
		from = NULL;
	}
	if (st->upsert < 0) {
		enum config_method method;
		int hard;
		const char *keys;

		config_stream_load(s->cfg, st->name, &method, &hard, &keys);
		st->upsert = method == CONFIG_LOAD_UPSERT;
	}
	if (st->upsert && st->schema && count == 1) {
		/* what the record leaves out keeps the table's value: noted for pipe-merge */
		if (st->absent_of != st->schema) {
			util_strv_free(st->absent);
			st->absent = absent_props(st->schema, strlen(st->schema));
			st->absent_of = st->schema;
		}
		if (st->absent && absent_mark(bytes, len, st->absent, &s->marked)) {
			bytes = s->marked.buf;
			len = s->marked.len;
			from = NULL;
		}
	}
	s->unit_bytes += len + 1;
	if (s->cfg->partition_by)
		return route_parts(s, st, bytes, len, count, from, m);
	return sink_route(s, st, bytes, len, count, from);
}

static char *compact(const struct json_span *v)
{
	struct sb out = SB_INIT;

	json_compact(v, &out);
	return sb_detach(&out);
}

static int on_schema(struct sink *s, const struct singer_msg *m)
{
	struct stream *st = sink_lookup(s, &m->stream);
	char *schema;

	if (st == NULL)
		return -1;
	if (st->dropped)
		return 0;
	schema = compact(&m->schema);
	if (s->rw->schema(s, st, schema) != 0 || (s->cfg->partition_by && sink_part_schema(s, st, schema) != 0)) {
		free(schema);
		return -1;
	}
	free(st->schema);
	free(st->key_properties);
	st->absent_of = NULL;
	st->schema = schema;
	st->key_properties = m->key_properties.type == JSON_ARRAY ? compact(&m->key_properties) : NULL;
	return 0;
}

/* Every record handed over is in a closed file of the plan: before a commit unit ends. */
static int close_all(struct sink *s)
{
	size_t i;
	int r = 0;

	for (i = 0; i < s->n; i++) {
		if (s->streams[i].waiting > 0 && sink_drain(s, &s->streams[i]) != 0)
			return -1;
	}
	if (s->rw->flush && s->rw->flush(s) != 0)
		return -1;
	/* each file's writing out started at its close, all waited for at once */
	bucket_closes_begin(s->b);
	for (i = 0; i < s->n && r == 0; i++)
		r = sink_close_file(s, &s->streams[i]);
	if (bucket_closes_end(s->b) != 0 && r == 0) {
		sink_fail_said(s, "cannot write the staged files in %s", bucket_url(s->b));
		r = -1;
	}
	return r;
}

/*
 * The format's words on stream st (recwriter's describe()); a parent's
 * from its parts: the types of the part written last, the widenings of
 * all, inferred when one was.
 */
static int describe(const struct sink *s, const struct stream *st, struct plan_stream *ps)
{
	struct sb widened = SB_INIT;
	const struct stream *last = NULL;
	size_t k;
	int any = 0;

	if (st->parts == 0)
		return s->rw->describe(st, ps);
	for (k = st->parts; k; k = s->streams[k - 1].next_part) {
		const struct stream *p = &s->streams[k - 1];
		struct plan_stream one;

		if (last == NULL || p->last_used > last->last_used)
			last = p;
		if (ps == NULL) {
			any |= s->rw->describe(p, NULL);
			continue;
		}
		memset(&one, 0, sizeof(one));
		any |= s->rw->describe(p, &one);
		if (one.widened) {
			/* "[...]" each: their members joined */
			sb_adds(&widened, widened.len ? "," : "[");
			sb_add(&widened, one.widened + 1, strlen(one.widened) - 2);
		}
		ps->inferred |= one.inferred;
		free(one.widened);
		free(one.parquet_types);
	}
	if (ps == NULL)
		return any;
	{
		struct plan_stream one;
		int inferred = ps->inferred;

		memset(&one, 0, sizeof(one));
		s->rw->describe(last, &one);
		ps->parquet_types = one.parquet_types;
		free(one.widened);
		ps->inferred = inferred;
	}
	if (widened.len) {
		sb_addc(&widened, ']');
		ps->widened = sb_detach(&widened);
	}
	if (ps->schema == NULL && last->schema)
		ps->schema = xstrdup(last->schema);	/* inferred from a part's first record */
	return any;
}

static void fill_run(struct sink *s, struct plan *p)
{
	time_t t = util_run_id_time(s->opt->run_id);
	char started[32];

	util_iso_time(t == -1 ? time(NULL) : t, started, sizeof(started));
	p->pipeline = xstrdup(s->cfg->name);
	p->run_id = xstrdup(s->opt->run_id);
	p->started_at = xstrdup(started);
	p->source = xstrdup(s->source);
	p->format = xstrdup(s->rw->format);
	p->compression = xstrdup(config_compression_name(s->cfg->compression));
	p->incremental = s->cfg->incremental;
	p->replace = !s->cfg->incremental;
	p->full = s->opt->full;
}

/*
 * The streams' lines of the unit now closing: their records since the last
 * one, their schema, types and widenings.  A checkpoint unit (final 0)
 * names only the streams it has records of, and copies what the stream
 * keeps; the last one names every stream, takes it, and its activation.
 */
static void fill_streams(struct sink *s, struct plan *p, int final)
{
	size_t i;

	p->streams = xcalloc(s->n ? s->n : 1, sizeof(*p->streams));
	for (i = 0; i < s->n; i++) {
		struct stream *st = &s->streams[i];
		struct plan_stream *ps;
		unsigned long long records = st->records, base = st->unit_base;

		if (st->dropped || st->parent)
			continue;
		sink_part_sum(s, st, &records, &base);
		/* a checkpoint names the streams it landed records of; the end, all */
		if (!final && records == base && !(s->rw->describe && describe(s, st, NULL)))
			continue;
		ps = &p->streams[p->nstreams++];
		ps->records = records - base;
		if (final) {
			ps->name = st->name;
			ps->dir = st->dir;
			ps->schema = st->schema;
			ps->key_properties = st->key_properties;
			ps->activated = st->activated;
			st->name = st->dir = st->schema = st->key_properties = st->activated = NULL;
		} else {
			ps->name = xstrdup(st->name);
			ps->dir = xstrdup(st->dir);
			ps->schema = st->schema ? xstrdup(st->schema) : NULL;
			ps->key_properties = st->key_properties ? xstrdup(st->key_properties) : NULL;
		}
		if (s->rw->describe)
			describe(s, st, ps);
		if (st->part_key) {
			struct sb part = SB_INIT;

			sb_adds(&part, "{\"by\":");
			json_quote(&part, s->cfg->partition_by, strlen(s->cfg->partition_by));
			sb_addf(&part, ",\"granularity\":\"%s\",\"column\":",
				config_granularity_name((enum config_granularity)st->part_gran));
			json_quote(&part, st->part_key, strlen(st->part_key));
			sb_addc(&part, '}');
			ps->partition = sb_detach(&part);
		} else if (st->date_unders > 0) {
			/* the date folder of a stream with a dt column: _dt= (layout_date_unders()) */
			ps->partition = xasprintf("{\"by\":\"_extraction_date\",\"granularity\":\"day\","
						  "\"column\":\"%.*sdt\"}", (int)st->date_unders, "________");
		}
		p->records += ps->records;
	}
}

/*
 * A checkpoint: every file closed, and the unit written at once, so that
 * pipe-commit -k publishes it with its state while the run goes on.  Its
 * streams' counts and widenings start again; an activation waits for the
 * last unit (lib/plan.h, DESIGN.md "Checkpoints").
 */
static int checkpoint(struct sink *s)
{
	struct plan u;
	struct sb out = SB_INIT;
	size_t i, done = 0;
	int ret = -1;

	if (close_all(s) != 0)
		return -1;
	memset(&u, 0, sizeof(u));
	fill_run(s, &u);
	u.files = s->plan->files;
	u.nfiles = s->plan->nfiles;
	s->plan->files = NULL;
	s->plan->nfiles = 0;
	fill_streams(s, &u, 0);
	u.state = xstrdup(s->plan->state);
	u.checkpoint = 1;
	u.unit = ++s->units;
	plan_format_part(&u, u.unit == 1, &out);
	while (done < out.len) {
		ssize_t w = write(s->opt->plan_fd, out.buf + done, out.len - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			sink_fail(s, "cannot write checkpoint %u of the plan: %s", u.unit,
				  w < 0 ? strerror(errno) : "nothing written");
			/* its files are the plan's again, for the cleanup */
			s->plan->files = u.files;
			s->plan->nfiles = u.nfiles;
			u.files = NULL;
			u.nfiles = 0;
			goto out;
		}
		done += (size_t)w;
	}
	for (i = 0; i < s->n; i++) {
		s->streams[i].unit_base = s->streams[i].records;
		if (s->rw->unit_done)
			s->rw->unit_done(&s->streams[i]);
	}
	s->plan->nunits = s->units;
	s->unit_started = util_now();
	s->unit_bytes = 0;
	ret = 0;
out:
	plan_free(&u);
	sb_free(&out);
	return ret;
}

int sink_checkpoints(const struct sink *s)
{
	return s->opt->plan_fd >= 0 && config_checkpoints(s->cfg);
}

/* At the first STATE after each checkpoint_every. */
static int checkpoint_due(const struct sink *s)
{
	if (!sink_checkpoints(s))
		return 0;
	if (s->cfg->checkpoint_bytes)
		return s->unit_bytes >= s->cfg->checkpoint_bytes;
	return s->cfg->checkpoint_seconds && util_now() - s->unit_started >= (double)s->cfg->checkpoint_seconds;
}

static int on_state(struct sink *s, const struct singer_msg *m)
{
	if (m->value.type != JSON_OBJECT) {
		sink_fail(s, "<stdin>:%llu: STATE value is not a JSON object", s->lineno);
		return -1;
	}
	free(s->plan->state);
	s->plan->state = compact(&m->value);
	return checkpoint_due(s) ? checkpoint(s) : 0;
}

/*
 * pipe-tap's selection: {"type":"DATASPOC_TAP_SELECTED","streams":[...]}.
 * pipe-tap writes it before any byte of the tap's, and only when the
 * pipeline selects streams: any other one is the tap's own, and a tap
 * cannot select streams (it would drop its records with a mere warning).
 */
static int on_selected(struct sink *s, const char *line, size_t len)
{
	if (s->lineno != 1 || (!s->cfg->streams && !s->cfg->metadata_json)) {
		sink_fail(s, "<stdin>:%llu:1: a %s line that pipe-tap did not write (a tap cannot select streams)",
			  s->lineno, TAPLINE_SELECTED_TYPE);
		return -1;
	}
	if (tapline_parse_selected(line, len, &s->selected, &s->nselected) != 0) {
		sink_fail(s, "<stdin>:%llu:1: a %s line without a \"streams\" array", s->lineno,
			  TAPLINE_SELECTED_TYPE);
		return -1;
	}
	return 0;
}

/* pipe-tap's end line: the run fails when it says the tap did. */
static int on_end(struct sink *s, const char *line, size_t len)
{
	char *error = NULL;

	if (tapline_parse_end(line, len, &error) == 0)
		return 0;
	sink_fail(s, "%s", error ? error : "the tap failed");
	free(error);
	return -1;
}

static void cleanup_files(struct sink *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		struct stream *st = &s->streams[i];

		if (st->file) {
			s->rw->abort(st->file);
			st->file = NULL;
		}
	}
	for (i = 0; i < s->plan->nfiles; i++) {
		struct plan_file *f = &s->plan->files[i];

		bucket_delete(s->b, f->staged);
		free(f->stream);
		free(f->staged);
		free(f->final);
		free(f->version);
	}
	free(s->plan->files);
	s->plan->files = NULL;
	s->plan->nfiles = 0;
}

static void fill_plan(struct sink *s)
{
	fill_run(s, s->plan);
	fill_streams(s, s->plan, 1);
	s->plan->records = 0;
	for (size_t i = 0; i < s->n; i++)
		s->plan->records += s->streams[i].dropped ? 0 : s->streams[i].records;
	/* (a parent's records and its parts' add up: an activation's drops are the parent's) */
}

int sink_run(struct bucket *b, const struct pipe_config *cfg,
	     const struct sink_options *opt, int fd, struct plan *plan)
{
	struct sink s;
	struct singer_reader *r = singer_reader_new(fd);
	const char *line;
	size_t len, i;
	time_t t = util_run_id_time(opt->run_id);
	struct tm tm;
	unsigned long long reads = 0;
	int got, started, ended = 0, ok = 0;

	memset(&s, 0, sizeof(s));
	memset(plan, 0, sizeof(*plan));
	s.said_mark = err_said();
	s.b = b;
	s.cfg = cfg;
	s.opt = opt;
	s.plan = plan;
	s.source = config_source_name(cfg);
	s.spill_fd = -1;
	s.rw = cfg->parquet ? &recwriter_parquet : &recwriter_jsonl;
	started = s.rw->start(&s);
	/* A live line on a terminal, unless the tap's lines share it (run -v). */
	s.tty = isatty(STDERR_FILENO) && !env_is("DATASPOC_PIPE_PROGRESS", "lines");
	s.next_progress = util_now() + (s.tty ? 0.2 : 10.0);
	s.unit_started = util_now();
	if (t == -1)
		t = time(NULL);
	gmtime_r(&t, &tm);
	strftime(s.date, sizeof(s.date), "%Y-%m-%d", &tm);

	if (started != 0)
		goto out;
	while ((got = singer_reader_next(r, &line, &len)) == 1) {
		/* Parquet: a RECORD's members, noted as the line is validated. */
		struct json_member room[SINK_MEMBERS];
		struct singer_msg m;
		size_t errcol;
		const char *errmsg;

		s.lineno = singer_reader_lineno(r);
		/* the clock is read only when new input came, not once per line */
		if (singer_reader_reads(r) != reads) {
			reads = singer_reader_reads(r);
			sink_maybe_progress(&s);
		}
		if (ended) {
			sink_fail(&s, "<stdin>:%llu: input goes on after pipe-tap's end line", s.lineno);
			goto out;
		}
		if (len == 0 || (len == 1 && line[0] == '\r'))
			continue;
		if (singer_reader_last_unterminated(r)) {
			sink_fail(&s, "<stdin>:%llu: input ends in the middle of a line: the tap's output was cut short", s.lineno);
			goto out;
		}
		if ((s.rw->members ? singer_parse_members(line, len, &m, room, SINK_MEMBERS, &errcol, &errmsg) :
		     singer_parse(line, len, &m, &errcol, &errmsg)) != 0) {
			struct sb q = SB_INIT;

			quote_line(&s, &q, line, len);
			sink_fail(&s, "<stdin>:%llu:%zu: %s: %s", s.lineno, errcol, errmsg, q.buf);
			sb_free(&q);
			goto out;
		}
		switch (m.type) {
		case SINGER_RECORD:
			if (on_record(&s, &m) != 0)
				goto out;
			break;
		case SINGER_SCHEMA:
			if (on_schema(&s, &m) != 0)
				goto out;
			break;
		case SINGER_STATE:
			if (on_state(&s, &m) != 0)
				goto out;
			break;
		case SINGER_ACTIVATE_VERSION:
			if (on_activate(&s, &m) != 0)
				goto out;
			break;
		case SINGER_OTHER:
			if (tapline_is_end(&m.type_value)) {
				if (on_end(&s, line, len) != 0)
					goto out;
				ended = 1;
			} else if (tapline_is_selected(&m.type_value)) {
				if (on_selected(&s, line, len) != 0)
					goto out;
			}
			break;
		}
	}
	if (got < 0) {
		sink_fail(&s, "cannot read the tap's output: %s", strerror(errno));
		goto out;
	}
	if (!ended) {
		sink_fail(&s, "input ended without pipe-tap's end line: the tap or pipe-tap did not finish");
		goto out;
	}
	if (close_all(&s) != 0)
		goto out;
	ok = 1;
out:
	if (!ok) {
		if (s.rw->abandon)
			s.rw->abandon(&s);
		cleanup_files(&s);
	} else {
		sink_progress(&s, 1);
		for (i = 0; i < s.n; i++) {
			if (s.streams[i].dropped)
				err_warn("dropped %llu record(s) of stream '%s', which was not selected",
					 s.streams[i].records, s.streams[i].name);
		}
	}
	fill_plan(&s);
	plan->ended = 1;
	plan->success = ok;
	/* Under the driver, which says why the run failed in one line. */
	if (!ok && !s.reported && !env_is("DATASPOC_PIPE_DRIVER", "1"))
		err_msg("%s", plan->error ? plan->error : "the run failed");
	sink_streams_free(&s);
	if (s.spill_fd >= 0)
		close(s.spill_fd);
	s.rw->finish(&s);
	for (i = 0; i < s.nselected; i++)
		free(s.selected[i]);
	free(s.selected);
	sb_free(&s.transformed);
	sb_free(&s.marked);
	free(s.source);
	sb_free(&s.name);
	singer_reader_free(r);
	return ok ? 0 : -1;
}
