/*
 * recwriter_parquet: the sink's Parquet files (lib/recwriter.h): a
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
static void note_widening(struct sink *s, struct stream *st, const struct pq_fail *f, int rolled)
{
	const struct pq_column *col = &st->pqs->cols[f->column];
	unsigned long long recno = st->records + st->failed_in + 1;
	struct sb v = SB_INIT;
	size_t i;

	sb_adds(&st->widened, st->widened.len ? ",{\"column\":" : "{\"column\":");
	sb_add(&st->widened, col->qname, col->qname_len);
	sb_addf(&st->widened, ",\"from\":\"%s\",\"to\":\"%s\",\"why\":", pq_kind_name(col->kind),
		pq_kind_name(f->need));
	json_quote(&st->widened, f->why, strlen(f->why));
	sb_addf(&st->widened, ",\"record\":%llu}", recno);
	if (!f->mismatch && f->need != PQ_TEXT)
		return;
	for (i = 0; i < st->nwarned; i++) {
		if (strcmp(st->warned[i], col->name) == 0)
			return;
	}
	st->warned = xrealloc(st->warned, (st->nwarned + 1) * sizeof(*st->warned));
	st->warned[st->nwarned++] = xstrdup(col->name);
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
		r = from && from->members ? pq_writer_add_members(st->file, from->members, from->nmembers, &f) :
		    pq_writer_add(st->file, rec, &f);
		if (r != PQ_WIDEN || (s->cfg->mismatch_fail && f.need != PQ_DECIMAL && f.need != PQ_DIGITS))
			break;
		/*
		 * A value its column cannot hold: the file so far keeps the
		 * narrower type, the stream goes on in a new file whose column
		 * holds it exactly (a file with no rows yet just changes it).
		 */
		rolled = pq_writer_rows(st->file) > 0;
		if (rolled && sink_close_file(s, st) != 0)
			return -1;
		note_widening(s, st, &f, rolled);
		pq_schema_widen(st->pqs, &f);
	}
	if (r == -1 || r == PQ_WIDEN) {
		const struct pq_column *col = &st->pqs->cols[f.column];
		struct sb v = SB_INIT;

		quote_value(&v, &f.value);
		sink_fail(s, "<stdin>:%llu: record %llu of stream '%s' does not fit its Parquet columns: "
			  "field '%s' (%s): %s %s%s", s->lineno, st->records + st->failed_in + 1, st->name,
			  col->name, pq_kind_name(col->kind), v.buf, f.why,
			  r == PQ_WIDEN ? " (schema_mismatch: fail; widen, the default, lands it)" : "");
		sb_free(&v);
		return -1;
	}
	if (r != 0) {
		sink_fail(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		s->reported = 1;
		return -1;
	}
	st->records++;
	st->file_records++;
	if (pq_writer_reached(st->file, s->cfg->max_file_size) && sink_close_file(s, st) != 0)
		return -1;
	return 0;
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
	st->inferred = 1;
	st->pqs = stream_columns(s, st, st->schema);
	err_warn("<stdin>:%llu: stream '%s' sent a RECORD before any SCHEMA: its Parquet columns "
		 "are inferred from that record", s->lineno, st->name);
}

/*
 * A record's bytes (count of them, one per line, after a transform) into
 * Parquet rows; from: see parquet_add().
 */
static int parquet_records(struct sink *s, struct stream *st, const char *bytes, size_t len,
			   unsigned long long count, const struct singer_msg *from)
{
	const char *p = bytes, *end = bytes + len;

	if (s->opt->transform == NULL) {
		struct json_span rec = { bytes, len, JSON_OBJECT };

		if (st->pqs == NULL)
			infer_columns(s, st, &rec);
		return parquet_add(s, st, &rec, from);
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
		if (st->pqs == NULL)
			infer_columns(s, st, &rec);
		if (parquet_add(s, st, &rec, NULL) != 0)
			return -1;
		p += n + 1;
	}
	return 0;
}

static int parquet_start(struct sink *s)
{
	s->ext = "";	/* the pages are compressed, not the file */
	s->codec = pq_codec_new(s->cfg->compression, s->cfg->compression_level, s->opt->threads);
	s->pqo.codec = s->codec;
	s->pqo.row_group_rows = s->cfg->row_group_rows;
	s->pqo.row_group_size = s->cfg->row_group_size;
	if (s->codec == NULL) {
		s->reported = 1;
		sink_fail(s, "cannot start the Parquet page compressor");
		return -1;
	}
	return 0;
}

static void parquet_finish(struct sink *s)
{
	pq_codec_free(s->codec);
}

static void *parquet_open(struct sink *s, struct stream *st, struct bucket_writer *w)
{
	return pq_writer_open(w, st->pqs, &s->pqo);
}

static int parquet_schema(struct sink *s, struct stream *st, const char *schema)
{
	if (st->schema != NULL && strcmp(st->schema, schema) == 0)
		return 0;
	/* New columns: a new file, once the records of the old ones that
	 * wait have landed. */
	if ((st->waiting > 0 && sink_drain(s, st) != 0) || sink_close_file(s, st) != 0)
		return -1;
	pq_schema_free(st->pqs);
	st->pqs = stream_columns(s, st, schema);
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
	.close = parquet_close,
	.abort = parquet_abort,
};
