/* merge: upsert streams merged by key (see merge.h, DESIGN.md "Upsert"). */
#include "merge.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jq.h>

#include "err.h"
#include "json.h"
#include "jvx.h"
#include "absent.h"
#include "compact.h"
#include "layout.h"
#include "parquet.h"
#include "pqread.h"
#include "sb.h"
#include "util.h"

#define DEFAULT_FILE_ROWS 1000000L
/* the bytes of the order key a file's name holds of its bounds (see order_prefix()) */
#define PREFIX_MAX 40
/* small-file compaction: this many neighbouring files of less than rows/16 each are merged */
#define SMALL_FILES 16

/* ---- the order of keys ---- */

void merge_order_key(const char *key, size_t len, struct sb *out)
{
	size_t pos = 0;

	sb_reset(out);
	while (pos + sizeof(uint32_t) <= len) {
		uint32_t n;
		const char *v;
		size_t i, digits;
		int neg, num;

		memcpy(&n, key + pos, sizeof(n));
		v = key + pos + sizeof(n);
		pos += sizeof(n) + n;
		if (pos > len)
			break;
		neg = n > 0 && v[0] == '-';
		digits = n - (size_t)neg;
		num = digits > 0 && digits < 256;
		for (i = (size_t)neg; num && i < n; i++)
			num = v[i] >= '0' && v[i] <= '9';
		if (num && neg) {
			sb_addc(out, 1);
			sb_addc(out, (char)(255 - digits));
			for (i = 1; i < n; i++)
				sb_addc(out, (char)(0xff - (unsigned char)v[i]));
		} else if (num) {
			sb_addc(out, 2);
			sb_addc(out, (char)digits);
			sb_add(out, v, n);
		} else if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
			sb_addc(out, 4);
			sb_add(out, v + 1, n - 2);
			sb_addc(out, 0);
		} else {
			sb_addc(out, 3);
			sb_add(out, v, n);
			sb_addc(out, 0);
		}
	}
}

/* memcmp order, a prefix first */
static int cmp_bytes(const void *a, size_t na, const void *b, size_t nb)
{
	int c = memcmp(a, b, na < nb ? na : nb);

	return c ? c : na < nb ? -1 : na > nb;
}

/*
 * How many bytes of a key's order key the names of a table's files hold
 * of their bounds: 40, fewer for a stream whose name is long (a name in
 * 255 bytes).  Fixed by the stream's name: every file of the table has it.
 */
static size_t order_prefix(const char *safe)
{
	/* SAFE _ RUN(<= 41) _r MIN - MAX - ROWS(<= 12) .parquet: 66 + 2 x 8/5 per byte */
	long room = 255 - 66 - (long)strlen(safe);
	long t = room / 2 * 5 / 8;

	return t > PREFIX_MAX ? PREFIX_MAX : t < 8 ? 8 : (size_t)t;
}

/* ---- reading a file's rows ---- */

struct reader {
	struct sb data;
	struct pq_read_file *f;
	size_t *keycol;		/* the key columns' indexes */
	size_t deleted;		/* _sdc_deleted_at's, or SIZE_MAX */
	size_t extra;		/* the extra column's, or SIZE_MAX */
	struct sb names;	/* each column's "name": */
	size_t *noff, *voff, *vlen;	/* where each column's is in names; its value in rec (SIZE_MAX: none) */
	struct sb rec, key, val;
};

static void reader_close(struct reader *r)
{
	pq_read_free(r->f);
	r->f = NULL;
	sb_free(&r->data);
	free(r->keycol);
	r->keycol = NULL;
	free(r->noff);
	free(r->voff);
	free(r->vlen);
	r->noff = r->voff = r->vlen = NULL;
	sb_free(&r->names);
}

static void reader_free(struct reader *r)
{
	reader_close(r);
	sb_free(&r->rec);
	sb_free(&r->key);
	sb_free(&r->val);
}

static int name_is(const struct pq_read_column *c, const char *name)
{
	return c->name_len == strlen(name) && memcmp(c->name, name, c->name_len) == 0;
}

/* Open key's file; its key columns (names, n of them) must be there. */
static int reader_open(struct bucket *b, const char *key, char *const *names, size_t n,
		       const char *extra, struct reader *r)
{
	size_t i, j, nc;

	if (bucket_get(b, key, &r->data) != 0) {
		err_msg("cannot read '%s'", key);
		return -1;
	}
	if ((r->f = pq_read_open(r->data.buf, r->data.len, key)) == NULL)
		return -1;
	nc = pq_read_ncolumns(r->f);
	r->keycol = xcalloc(n ? n : 1, sizeof(*r->keycol));
	for (j = 0; j < n; j++)
		r->keycol[j] = SIZE_MAX;
	r->deleted = r->extra = SIZE_MAX;
	r->noff = xcalloc(nc + 1, sizeof(*r->noff));
	r->voff = xcalloc(nc + 1, sizeof(*r->voff));
	r->vlen = xcalloc(nc + 1, sizeof(*r->vlen));
	sb_reset(&r->names);
	for (i = 0; i < nc; i++) {
		const struct pq_read_column *c = pq_read_column(r->f, i);

		r->noff[i] = r->names.len;
		json_quote(&r->names, c->name, c->name_len);
		sb_addc(&r->names, ':');
		r->noff[i + 1] = r->names.len;
		if (c->unsupported) {
			pq_read_select(r->f, i, 0);
			continue;
		}
		for (j = 0; j < n; j++)
			if (r->keycol[j] == SIZE_MAX && name_is(c, names[j]))
				r->keycol[j] = i;
		if (name_is(c, "_sdc_deleted_at"))
			r->deleted = i;
		if (extra && name_is(c, extra))
			r->extra = i;
	}
	return 0;
}

/*
 * One part of a key, a column's value as JSON, onto KEY: its length, then its
 * bytes; a number kept as a string (a column widened to text) is the same key
 * as the number.
 */
static void key_add_part(struct sb *key, const char *v, size_t len)
{
	uint32_t l32;
	size_t j;
	int num = len > 2 && v[0] == '"';

	for (j = 1; num && j + 1 < len; j++)
		num = strchr("-+0123456789.eE", v[j]) != NULL && v[j] != '\0';
	if (num) {
		v++;
		len -= 2;
	}
	l32 = (uint32_t)len;
	sb_add(key, &l32, sizeof(l32));
	sb_add(key, v, len);
}

/*
 * The current row as a record (r->rec) and its key (r->key: each part's
 * length and bytes; NULL *missing when a part is null or absent, naming
 * it), and whether _sdc_deleted_at is set.
 */
static int reader_row(struct reader *r, char *const *names, size_t n, const char **missing, int *deleted)
{
	size_t i, nc = pq_read_ncolumns(r->f);
	int first = 1;

	sb_reset(&r->rec);
	sb_reset(&r->key);
	*missing = NULL;
	*deleted = 0;
	sb_addc(&r->rec, '{');
	for (i = 0; i < nc; i++) {
		const struct pq_read_column *c = pq_read_column(r->f, i);
		size_t mark = r->rec.len, at;

		r->voff[i] = SIZE_MAX;
		if (c->unsupported)
			continue;
		if (i == r->extra) {
			sb_reset(&r->val);
			if (pq_read_value_json(r->f, i, &r->val) != 0)
				return -1;
			if (r->val.len > 2 && r->val.buf[0] == '{') {
				struct json_span obj = { r->val.buf, r->val.len, JSON_OBJECT }, del;

				/* a delete of a stream whose SCHEMA does not declare _sdc_deleted_at */
				if (json_object_get(&obj, "_sdc_deleted_at", &del) == 1 && del.type != JSON_NULL)
					*deleted = 1;
				/* the undeclared members, back in the record */
				if (!first)
					sb_addc(&r->rec, ',');
				sb_add(&r->rec, r->val.buf + 1, r->val.len - 2);
				first = 0;
				continue;
			}
			if (r->val.buf[0] == '{' || (r->val.len == 4 && memcmp(r->val.buf, "null", 4) == 0))
				continue;
		}
		/* "name":value, straight into the record; taken back when null */
		if (!first)
			sb_addc(&r->rec, ',');
		sb_add(&r->rec, r->names.buf + r->noff[i], r->noff[i + 1] - r->noff[i]);
		at = r->rec.len;
		if (pq_read_value_json(r->f, i, &r->rec) != 0)
			return -1;
		if (r->rec.len - at == 4 && memcmp(r->rec.buf + at, "null", 4) == 0) {
			r->rec.len = mark;
			r->rec.buf[mark] = '\0';
			continue;
		}
		first = 0;
		r->voff[i] = at;
		r->vlen[i] = r->rec.len - at;
		if (i == r->deleted)
			*deleted = 1;
	}
	sb_addc(&r->rec, '}');
	for (i = 0; i < n; i++) {
		size_t k = r->keycol[i];

		if (k == SIZE_MAX || r->voff[k] == SIZE_MAX) {
			*missing = names[i];
			return 0;
		}
		key_add_part(&r->key, r->rec.buf + r->voff[k], r->vlen[k]);
	}
	return 0;
}

/* ---- the run's records, sorted by key ---- */

/*
 * The run's records in key order, the last version of each key: chunks of
 * at most $DATASPOC_PIPE_MERGE_KEYS records (or 64 MiB) are sorted in
 * memory; a run of more is sorted chunk by chunk into unlinked files in
 * $TMPDIR, read back merged.  A record, in memory and in those files:
 * u32 key length, key (its order key), u64 sequence, u8 deleted, u32
 * record length, record (JSON).
 */
struct item {
	const char *key;
	size_t klen;
	unsigned long long seq;
	int deleted;
	int ambiguous;		/* its key's record before is of its run, in another folder (compact) */
	const char *rec;
	size_t rlen;
};

struct sorter {
	struct sb arena;
	struct sb fill, fkey;	/* a record filled from the version before (lib/absent.h) */
	size_t *idx;		/* each record's offset in the arena */
	size_t n, cap;
	size_t max_records, max_bytes;
	FILE **runs;
	size_t nruns;
	struct sb *heads;	/* each run's current record (len 0: ended) */
	struct sb cur;
	size_t pos;
	int groups;		/* seq says a record's run and folder (SEQ_RUN, SEQ_FOLDER): compact */
};

/*
 * A compact of a partitioned table reads it file by file, run by run; a
 * run's records in two folders (two files) are in no known order: seq
 * holds the run's rank (SEQ_RUN) and the folder's within it (SEQ_FOLDER)
 * above the record's, so that a key whose last two records are of one
 * run in two folders is told.
 */
#define SEQ_RUN 44
#define SEQ_FOLDER 30

static FILE *spill_file(void);

static void item_at(const char *p, struct item *it)
{
	uint32_t kl, rl;

	memcpy(&kl, p, 4);
	it->key = p + 4;
	it->klen = kl;
	memcpy(&it->seq, p + 4 + kl, 8);
	it->deleted = p[4 + kl + 8] & 1;
	it->ambiguous = (p[4 + kl + 8] >> 1) & 1;
	memcpy(&rl, p + 4 + kl + 9, 4);
	it->rec = p + 4 + kl + 13;
	it->rlen = rl;
}

static size_t item_size(const char *p)
{
	struct item it;

	item_at(p, &it);
	return 4 + it.klen + 13 + it.rlen;
}

static int cmp_rec(const void *a, const void *b, void *arg)
{
	const char *base = arg;
	struct item x, y;
	int c;

	item_at(base + *(const size_t *)a, &x);
	item_at(base + *(const size_t *)b, &y);
	c = cmp_bytes(x.key, x.klen, y.key, y.klen);
	return c ? c : x.seq < y.seq ? -1 : x.seq > y.seq;
}

/* A record at the arena's end: its offset. */
static size_t item_put(struct sb *arena, const char *key, size_t klen, unsigned long long seq, int deleted,
		       const char *rec, size_t rlen)
{
	uint32_t kl = (uint32_t)klen, rl = (uint32_t)rlen;
	char d = (char)(deleted != 0);
	size_t off = arena->len;

	sb_add(arena, &kl, 4);
	sb_add(arena, key, klen);
	sb_add(arena, &seq, 8);
	sb_add(arena, &d, 1);
	sb_add(arena, &rl, 4);
	sb_add(arena, rec, rlen);
	return off;
}

/*
 * Into s->fill: y, a later record of x's key that leaves properties out
 * (lib/absent.h), with them taken from x; from none when x deletes the
 * key (the table's row is gone too).  0 or -1.
 */
static int absent_from(struct sorter *s, const struct item *x, const struct item *y)
{
	if (absent_fill(y->rec, y->rlen, x->deleted ? NULL : x->rec, x->rlen, &s->fill) != 0) {
		err_msg("a record of the run is not a JSON object");
		return -1;
	}
	return 0;
}

/* 1 when y, a later record of x's key, is of x's run in a folder x may be after (s->groups). */
static int after_unknown(const struct sorter *s, const struct item *x, const struct item *y)
{
	return s->groups && (x->seq >> SEQ_RUN) == (y->seq >> SEQ_RUN) &&
	       (x->ambiguous || ((x->seq >> SEQ_FOLDER) & ((1u << (SEQ_RUN - SEQ_FOLDER)) - 1)) !=
				((y->seq >> SEQ_FOLDER) & ((1u << (SEQ_RUN - SEQ_FOLDER)) - 1)));
}

/* The record at offset off of the arena: its key's record before is of no known order. */
static void item_mark(struct sb *arena, size_t off)
{
	uint32_t kl;

	memcpy(&kl, arena->buf + off, 4);
	arena->buf[off + 4 + kl + 8] |= 2;
}

/* Sort the chunk in memory, keeping the last record of each key (filled from the ones before it). */
static int sorter_sort(struct sorter *s)
{
	size_t i, j = 0;

	if (s->n > 1)
		qsort_r(s->idx, s->n, sizeof(*s->idx), cmp_rec, s->arena.buf);
	for (i = 0; i < s->n; i++) {
		struct item x, y;

		if (i + 1 < s->n) {
			item_at(s->arena.buf + s->idx[i], &x);
			item_at(s->arena.buf + s->idx[i + 1], &y);
			if (cmp_bytes(x.key, x.klen, y.key, y.klen) == 0) {
				if (absent_marked(y.rec, y.rlen)) {
					/* (copied first: the arena may move as it grows) */
					if (absent_from(s, &x, &y) != 0)
						return -1;
					sb_reset(&s->fkey);
					sb_add(&s->fkey, y.key, y.klen);
					s->idx[i + 1] = item_put(&s->arena, s->fkey.buf, s->fkey.len, y.seq, y.deleted,
								 s->fill.buf, s->fill.len);
				}
				if (after_unknown(s, &x, &y))
					item_mark(&s->arena, s->idx[i + 1]);
				continue;
			}
		}
		s->idx[j++] = s->idx[i];
	}
	s->n = j;
	return 0;
}

static int sorter_spill(struct sorter *s)
{
	FILE *f = spill_file();
	size_t i;

	if (f == NULL) {
		err_msg("cannot make a spill file:");
		return -1;
	}
	s->runs = xrealloc(s->runs, (s->nruns + 1) * sizeof(*s->runs));
	s->runs[s->nruns++] = f;
	if (sorter_sort(s) != 0)
		return -1;
	for (i = 0; i < s->n; i++) {
		const char *p = s->arena.buf + s->idx[i];

		if (fwrite(p, 1, item_size(p), f) != item_size(p)) {
			err_msg("cannot write the spill file:");
			return -1;
		}
	}
	if (fflush(f) != 0) {
		err_msg("cannot write the spill file:");
		return -1;
	}
	s->n = 0;
	sb_reset(&s->arena);
	return 0;
}

static int sorter_add(struct sorter *s, const char *key, size_t klen, unsigned long long seq, int deleted,
		      const char *rec, size_t rlen)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->idx = xrealloc(s->idx, s->cap * sizeof(*s->idx));
	}
	s->idx[s->n++] = item_put(&s->arena, key, klen, seq, deleted, rec, rlen);
	if (s->n >= s->max_records || s->arena.len >= s->max_bytes)
		return sorter_spill(s);
	return 0;
}

/* Run r's next record into its head (len 0 at its end). */
static int head_read(struct sorter *s, size_t r)
{
	struct sb *h = &s->heads[r];
	uint32_t kl, rl;
	size_t fixed;

	sb_reset(h);
	if (fread(&kl, 1, 4, s->runs[r]) != 4)
		return ferror(s->runs[r]) ? -1 : 0;
	sb_grow(h, 4 + (size_t)kl + 13);
	memcpy(h->buf, &kl, 4);
	fixed = (size_t)kl + 13;
	if (fread(h->buf + 4, 1, fixed, s->runs[r]) != fixed)
		return -1;
	memcpy(&rl, h->buf + 4 + kl + 9, 4);
	h->len = 4 + fixed;
	sb_grow(h, rl);
	if (fread(h->buf + h->len, 1, rl, s->runs[r]) != rl)
		return -1;
	h->len += rl;
	return 0;
}

/* From the first record again. */
static int sorter_rewind(struct sorter *s)
{
	size_t r;

	s->pos = 0;
	for (r = 0; r < s->nruns; r++) {
		if (fseeko(s->runs[r], 0, SEEK_SET) != 0 || head_read(s, r) != 0) {
			err_msg("cannot read the spill file:");
			return -1;
		}
	}
	return 0;
}

/* Every record added: sort what is in memory, or spill it too. */
static int sorter_finish(struct sorter *s)
{
	if (s->nruns > 0) {
		if (s->n > 0 && sorter_spill(s) != 0)
			return -1;
		s->heads = xcalloc(s->nruns, sizeof(*s->heads));
	} else if (sorter_sort(s) != 0) {
		return -1;
	}
	return sorter_rewind(s);
}

/* The next key's last record: 1, 0 at the end, -1. */
static int sorter_next(struct sorter *s, struct item *it)
{
	size_t r, best = SIZE_MAX;
	struct item x, y;
	int amb = 0;

	if (s->nruns == 0) {
		if (s->pos >= s->n)
			return 0;
		item_at(s->arena.buf + s->idx[s->pos++], it);
		return 1;
	}
	/* the least key; of its records, the last (the chunks are in the run's order) */
	for (r = 0; r < s->nruns; r++) {
		int c;

		if (s->heads[r].len == 0)
			continue;
		if (best == SIZE_MAX) {
			best = r;
			continue;
		}
		item_at(s->heads[r].buf, &x);
		item_at(s->heads[best].buf, &y);
		c = cmp_bytes(x.key, x.klen, y.key, y.klen);
		if (c < 0 || (c == 0 && x.seq > y.seq))
			best = r;
	}
	if (best == SIZE_MAX)
		return 0;
	if (s->groups) {
		/* the key's record before the last, in another chunk: of the last's run, in another folder? */
		size_t second = SIZE_MAX;

		item_at(s->heads[best].buf, &y);
		for (r = 0; r < s->nruns; r++) {
			if (r == best || s->heads[r].len == 0)
				continue;
			item_at(s->heads[r].buf, &x);
			if (cmp_bytes(x.key, x.klen, y.key, y.klen) != 0)
				continue;
			if (second == SIZE_MAX)
				second = r;
			else {
				struct item z;

				item_at(s->heads[second].buf, &z);
				if (x.seq > z.seq)
					second = r;
			}
		}
		if (second != SIZE_MAX) {
			item_at(s->heads[second].buf, &x);
			amb = after_unknown(s, &x, &y);
		}
	}
	sb_reset(&s->cur);
	sb_add(&s->cur, s->heads[best].buf, s->heads[best].len);
	item_at(s->cur.buf, it);
	amb |= it->ambiguous;
	if (absent_marked(it->rec, it->rlen)) {
		/* what it leaves out, from the key's records of the chunks before (in the run's order) */
		struct sb acc = SB_INIT;
		int acc_deleted = 0, have = 0;

		for (r = 0; r < s->nruns; r++) {
			if (s->heads[r].len == 0)
				continue;
			item_at(s->heads[r].buf, &x);
			if (cmp_bytes(x.key, x.klen, it->key, it->klen) != 0)
				continue;
			if (have && absent_marked(x.rec, x.rlen)) {
				y.rec = acc.buf;
				y.rlen = acc.len;
				y.deleted = acc_deleted;
				if (absent_from(s, &y, &x) != 0) {
					sb_free(&acc);
					return -1;
				}
				sb_reset(&acc);
				sb_add(&acc, s->fill.buf, s->fill.len);
			} else {
				sb_reset(&acc);
				sb_add(&acc, x.rec, x.rlen);
			}
			acc_deleted = x.deleted;
			have = 1;
		}
		sb_reset(&s->fkey);
		sb_add(&s->fkey, it->key, it->klen);
		sb_reset(&s->cur);
		item_put(&s->cur, s->fkey.buf, s->fkey.len, it->seq, it->deleted, acc.buf, acc.len);
		item_at(s->cur.buf, it);
		sb_free(&acc);
	}
	for (r = 0; r < s->nruns; r++) {
		if (s->heads[r].len == 0)
			continue;
		item_at(s->heads[r].buf, &x);
		if (cmp_bytes(x.key, x.klen, it->key, it->klen) == 0 && head_read(s, r) != 0) {
			err_msg("cannot read the spill file:");
			return -1;
		}
	}
	it->ambiguous = amb;
	return 1;
}

static void sorter_free(struct sorter *s)
{
	size_t r;

	for (r = 0; r < s->nruns; r++) {
		fclose(s->runs[r]);
		if (s->heads)
			sb_free(&s->heads[r]);
	}
	free(s->runs);
	free(s->heads);
	free(s->idx);
	sb_free(&s->arena);
	sb_free(&s->cur);
	sb_free(&s->fill);
	sb_free(&s->fkey);
	memset(s, 0, sizeof(*s));
}

/* ---- the table as it is ---- */

/* What the manifest says of the table in dir. */
struct table_info {
	char *load_method, *keys, *version;
	int has_rows;
	unsigned long long rows;
};

static void table_info_free(struct table_info *t)
{
	free(t->load_method);
	free(t->keys);
	free(t->version);
	memset(t, 0, sizeof(*t));
}

static char *dump(jv v)
{
	jv d = jv_dump_string(v, 0);
	char *s = xstrdup(jv_string_value(d));

	jv_free(d);
	return s;
}

static int table_info(struct bucket *b, const char *dir, struct table_info *t)
{
	struct sb text = SB_INIT;
	jv m, tables;
	int r = bucket_get(b, LAYOUT_MANIFEST_KEY, &text);

	memset(t, 0, sizeof(*t));
	if (r != 0) {
		sb_free(&text);
		return r < 0 ? -1 : 0;
	}
	m = jv_parse_sized(text.buf, (int)text.len);
	sb_free(&text);
	if (jv_get_kind(m) != JV_KIND_OBJECT) {
		jv_free(m);
		return 0;	/* pipe-commit rebuilds it; nothing known meanwhile */
	}
	tables = jv_object_get(m, jv_string("tables"));
	if (jv_get_kind(tables) == JV_KIND_OBJECT) {
		jv_object_foreach(tables, k, v) {
			jv path = jv_get_kind(v) == JV_KIND_OBJECT ? jv_object_get(jv_copy(v), jv_string("path")) : jv_invalid();

			if (t->load_method == NULL && jv_get_kind(path) == JV_KIND_STRING &&
			    strcmp(jv_string_value(path), dir) == 0) {
				jv lm = jv_object_get(jv_copy(v), jv_string("load_method"));
				jv kp = jv_object_get(jv_copy(v), jv_string("key_properties"));
				jv tv = jv_object_get(jv_copy(v), jv_string("table_version"));
				jv st = jv_object_get(jv_copy(v), jv_string("stats"));

				t->load_method = xstrdup(jv_get_kind(lm) == JV_KIND_STRING ? jv_string_value(lm) : "");
				if (jv_get_kind(kp) == JV_KIND_ARRAY && jv_array_length(jv_copy(kp)) > 0)
					t->keys = dump(jv_copy(kp));
				if (jv_get_kind(tv) == JV_KIND_NUMBER || jv_get_kind(tv) == JV_KIND_STRING)
					t->version = dump(jv_copy(tv));
				if (jv_get_kind(st) == JV_KIND_OBJECT) {
					jv tr = jv_object_get(jv_copy(st), jv_string("total_rows"));

					if (jv_get_kind(tr) == JV_KIND_NUMBER && jv_number_value(tr) >= 0) {
						t->has_rows = 1;
						t->rows = (unsigned long long)jv_number_value(tr);
					}
					jv_free(tr);
				}
				jv_free(lm);
				jv_free(kp);
				jv_free(tv);
				jv_free(st);
			}
			jv_free(path);
			jv_free(k);
			jv_free(v);
		}
	}
	jv_free(tables);
	return 0;
}

/* A file of the table's folder that holds rows: a data file, not a temp file. */
static int data_file(const char *key)
{
	size_t n = strlen(key);

	return (n > 8 && strcmp(key + n - 8, ".parquet") == 0) || strstr(key, ".jsonl") != NULL;
}

static int parse_names(const char *json, char ***names, size_t *n)
{
	struct json_span arr, v;
	size_t errpos, pos = 0;
	const char *errmsg;

	*names = NULL;
	*n = 0;
	if (json == NULL || json_validate(json, strlen(json), &arr, &errpos, &errmsg) != 0 || arr.type != JSON_ARRAY)
		return -1;
	while (json_array_next(&arr, &pos, &v)) {
		struct sb s = SB_INIT;

		if (v.type != JSON_STRING)
			continue;
		json_string_decode(&v, &s);
		*names = xrealloc(*names, (*n + 2) * sizeof(**names));
		(*names)[(*n)++] = sb_detach(&s);
		(*names)[*n] = NULL;
	}
	return *n ? 0 : -1;
}

static char **text_patterns(const struct pipe_config *cfg, const char *stream)
{
	char **v = NULL;
	size_t n = 0, i;

	for (i = 0; cfg->string_columns && cfg->string_columns[i] && cfg->string_columns[i + 1]; i += 2) {
		if (fnmatch(cfg->string_columns[i], stream, 0) != 0)
			continue;
		v = xrealloc(v, (n + 2) * sizeof(*v));
		v[n++] = xstrdup(cfg->string_columns[i + 1]);
		v[n] = NULL;
	}
	return v;
}

/* An unlinked file in $TMPDIR. */
static FILE *spill_file(void)
{
	const char *dir = getenv("TMPDIR");
	char *path = xasprintf("%s/pipe-merge.XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	FILE *f = NULL;

	if (fd >= 0) {
		unlink(path);
		if ((f = fdopen(fd, "w+")) == NULL)
			close(fd);
	}
	free(path);
	return f;
}

/* ---- one stream ---- */

/* A file of the table in the key range layout. */
struct tfile {
	char *key;
	const char *folder;	/* with partition_by: its Hive folder (in key), else NULL */
	size_t nfolder;
	struct sb min, max;	/* the bounds of its keys' order keys (their first tlen bytes) */
	unsigned long long rows;
	int touched;		/* rewritten by this run */
};

/* An old file being merged: its rows in key order. */
struct oldfile {
	struct reader r;
	const struct tfile *t;
	int have;		/* a row is read, its order key in key */
	int full;		/* ... and r.rec holds it as a record */
	int typed;		/* its columns are all the schema's: rows copied value by value (out_copy()) */
	size_t *col;		/* each column's in the schema (SIZE_MAX: none, the extra column) */
	struct sb key, prev, json;
	struct jcell { size_t i, j, off, len; } *jc;	/* out_copy()'s values given as JSON */
};

/*
 * A part of the table whose files' ranges never overlap, merged on its
 * own: the whole table (its files in the dt= folders of their runs, the
 * new ones in dt= of this run's date), or, with partition_by, one Hive
 * folder KEY=VALUE.
 */
struct folder {
	char *name;		/* where its new files go: dt=DATE, or KEY=VALUE */
	struct tfile *tf;	/* its files, by their bounds (a slice of stream_merge's) */
	size_t ntf;
	size_t fi;		/* route(): its next file */
	struct oldfile o;	/* route(): its file being merged */
	/* its output file being written */
	struct pq_writer *pw;
	char *staged;
	unsigned long long rows;
	struct sb omin, omax;
};

struct stream_merge {
	struct bucket *b;
	const struct pipe_config *cfg;
	struct plan *p;
	const struct plan_stream *s;
	char **names;		/* the key's properties */
	size_t nnames;
	int hard_delete;
	struct pq_schema *schema;
	const char *extra;	/* the extra column's name */
	struct pq_codec *codec;
	char *safe;		/* the stream's file name part */
	char date[64];		/* dt=DATE of the run (_dt=, ... for a stream with a field dt: the plan's) */
	size_t tlen;		/* order_prefix() */
	long limit;		/* rows of a file */
	struct sorter sorted;
	char **inputs;		/* the files read as the run's first records (a table of older layouts) */
	size_t ninputs;
	struct tfile *tf;	/* the table's files, by folder (partition_by), then by their bounds */
	size_t ntf;
	struct folder **dirs;	/* the parts merged on their own: one without partition_by */
	size_t ndirs;
	/* partition_by: the record field, its granularity, the folders' KEY (NULL: none) */
	int parted;		/* destination.partition_by is set: a folder per value */
	char *pby, *pcol;
	int pgran;
	struct folder *plast;	/* the folder of the last row placed */
	size_t pnew;		/* the folders the run's rows made (LAYOUT_PART_MAX at most) */
	struct sb pname, pscratch;
	unsigned nout;
	struct plan_file *files;	/* the merged files */
	size_t nfiles;
	unsigned long long written, replaced_rows;
	struct sb okey, buf;
	struct sb eq, fill;	/* the table's row of a key the run sends; a record filled from it */
};

#define RESTART 2

static int out_open(struct stream_merge *m, struct folder *d)
{
	struct pq_options opt;
	struct bucket_writer *w;
	char *staging = layout_staging_prefix(m->p->pipeline, m->p->run_id);

	d->staged = xasprintf("%s%s_%s_m%04u.parquet", staging, m->safe, m->p->run_id, ++m->nout);
	free(staging);
	memset(&opt, 0, sizeof(opt));
	opt.codec = m->codec;
	opt.row_group_rows = m->cfg->row_group_rows;
	opt.row_group_size = m->cfg->row_group_size;
	d->rows = 0;
	if ((w = bucket_writer_open(m->b, d->staged)) == NULL)
		return -1;
	if ((d->pw = pq_writer_open(w, m->schema, &opt)) == NULL)
		return -1;
	return 0;
}

/* Close the output file, if one is open: a merged file of the plan, named by its bounds. */
static int out_close(struct stream_merge *m, struct folder *d)
{
	struct plan_file *f;
	uint64_t size = 0;
	int c;

	if (d->pw == NULL)
		return 0;
	c = pq_writer_close(d->pw, &size);
	d->pw = NULL;
	if (c != 0)
		return -1;
	m->files = xrealloc(m->files, (m->nfiles + 1) * sizeof(*m->files));
	f = &m->files[m->nfiles++];
	memset(f, 0, sizeof(*f));
	f->stream = xstrdup(m->s->name);
	f->staged = d->staged;
	d->staged = NULL;
	f->final = layout_range_key(m->s->dir, d->name, m->safe, m->p->run_id, d->omin.buf, d->omin.len,
				    d->omax.buf, d->omax.len, d->rows);
	f->records = d->rows;
	f->bytes = size;
	f->unit = 1;
	m->written += d->rows;
	return 0;
}

/*
 * Add a row (its order key, its record) to the output: a new file when
 * the one open holds the limit's rows and the row's bound differs from its
 * last (a bound is in one file).  RESTART when a column had to widen in a
 * file with rows.
 */
/* The output file a row of key goes to, open. */
static int out_prepare(struct stream_merge *m, struct folder *d, const char *key, size_t klen)
{
	size_t t = klen < m->tlen ? klen : m->tlen;

	if (d->pw && d->rows >= (unsigned long long)m->limit && cmp_bytes(key, t, d->omax.buf, d->omax.len) != 0 &&
	    out_close(m, d) != 0)
		return -1;
	if (d->pw == NULL && out_open(m, d) != 0)
		return -1;
	return 0;
}

/* A row of key added: the output's bounds. */
static void out_added(struct stream_merge *m, struct folder *d, const char *key, size_t klen)
{
	size_t t = klen < m->tlen ? klen : m->tlen;

	if (d->rows++ == 0) {
		sb_reset(&d->omin);
		sb_add(&d->omin, key, t);
	}
	sb_reset(&d->omax);
	sb_add(&d->omax, key, t);
}

static int out_row(struct stream_merge *m, struct folder *d, const char *key, size_t klen, const char *rec,
		   size_t len)
{
	struct json_span span = { rec, len, JSON_OBJECT };
	struct pq_fail f;
	int r;

	if (out_prepare(m, d, key, klen) != 0)
		return -1;
	for (;;) {
		r = pq_writer_add(d->pw, &span, &f);
		if (r == 0)
			break;
		if (r != PQ_WIDEN)
			return -1;
		if (m->cfg->mismatch_fail) {
			err_msg("stream '%s': column '%.*s' %s (schema_mismatch: fail)", m->s->name,
				(int)m->schema->cols[f.column].name_len, m->schema->cols[f.column].name, f.why);
			return -1;
		}
		pq_schema_widen(m->schema, &f);
		if (pq_writer_rows(d->pw) > 0)
			return RESTART;
	}
	out_added(m, d, key, klen);
	return 0;
}

/* Undo what out_row() and out_close() staged, for a start again. */
static void out_undo(struct stream_merge *m)
{
	size_t i;

	for (i = 0; i < m->ndirs; i++) {
		struct folder *d = m->dirs[i];

		if (d->pw)
			pq_writer_abort(d->pw);
		d->pw = NULL;
		free(d->staged);
		d->staged = NULL;
	}
	for (i = 0; i < m->nfiles; i++) {
		bucket_delete(m->b, m->files[i].staged);
		free(m->files[i].stream);
		free(m->files[i].staged);
		free(m->files[i].final);
	}
	m->nfiles = 0;
	m->written = 0;
}

/* The current row's key into r->key, from its key columns alone (see reader_row()). */
static int reader_key(struct reader *r, char *const *names, size_t n, const char **missing)
{
	size_t i;

	sb_reset(&r->key);
	*missing = NULL;
	for (i = 0; i < n; i++) {
		sb_reset(&r->val);
		if (r->keycol[i] == SIZE_MAX || pq_read_value_json(r->f, r->keycol[i], &r->val) != 0 ||
		    (r->val.len == 4 && memcmp(r->val.buf, "null", 4) == 0)) {
			*missing = names[i];
			return 0;
		}
		key_add_part(&r->key, r->val.buf, r->val.len);
	}
	return 0;
}

/* The open old file's row as a record in r.rec. */
static int old_record(struct stream_merge *m, struct oldfile *o)
{
	const char *missing;
	int deleted;

	if (o->full)
		return 0;
	if (reader_row(&o->r, m->names, m->nnames, &missing, &deleted) != 0)
		return -1;
	o->full = 1;
	return 0;
}

static int old_next(struct stream_merge *m, struct oldfile *o)
{
	const char *missing;
	const unsigned char *p;
	size_t len;
	int deleted, n = pq_read_next_row(o->r.f);

	o->have = o->full = 0;
	if (n <= 0)
		return n;
	if (o->typed && (o->r.extra == SIZE_MAX || pq_read_value_raw(o->r.f, o->r.extra, &p, &len) == 1)) {
		/* the key alone: the row is copied value by value */
		if (reader_key(&o->r, m->names, m->nnames, &missing) != 0)
			return -1;
	} else {
		if (reader_row(&o->r, m->names, m->nnames, &missing, &deleted) != 0)
			return -1;
		o->full = 1;
	}
	if (missing) {
		err_msg("'%s': a row without its key property '%s'", o->t->key, missing);
		return -1;
	}
	sb_reset(&o->prev);
	sb_add(&o->prev, o->key.buf, o->key.len);
	merge_order_key(o->r.key.buf, o->r.key.len, &o->key);
	if (o->prev.len && cmp_bytes(o->prev.buf, o->prev.len, o->key.buf, o->key.len) >= 0) {
		err_msg("'%s': its rows are not in key order (a file of an upsert table not written by "
			"pipe-merge?): run once with --full to rebuild the table", o->t->key);
		return -1;
	}
	o->have = 1;
	return 1;
}

/* Start merging table file t. */
static int old_open(struct stream_merge *m, struct tfile *t, struct oldfile *o)
{
	o->t = t;
	o->have = 0;
	sb_reset(&o->key);
	t->touched = 1;
	if (reader_open(m->b, t->key, m->names, m->nnames, m->extra, &o->r) != 0)
		return -1;
	/* each column's in the schema, by name: a column it lacks is the extra column's, copied as JSON */
	{
		size_t i, j, nc = pq_read_ncolumns(o->r.f);

		free(o->col);
		free(o->jc);
		o->col = xcalloc(nc + 1, sizeof(*o->col));
		o->jc = xcalloc(nc + 1, sizeof(*o->jc));
		o->typed = 1;
		for (i = 0; i < nc; i++) {
			const struct pq_read_column *c = pq_read_column(o->r.f, i);

			o->col[i] = SIZE_MAX;
			if (c->unsupported || i == o->r.extra)
				continue;
			for (j = 0; j < m->schema->n && o->col[i] == SIZE_MAX; j++)
				if (!m->schema->cols[j].extra && m->schema->cols[j].name_len == c->name_len &&
				    memcmp(m->schema->cols[j].name, c->name, c->name_len) == 0)
					o->col[i] = j;
			if (o->col[i] == SIZE_MAX)
				o->typed = 0;
		}
	}
	return old_next(m, o) < 0 ? -1 : 0;
}

static uint64_t le_bytes(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

/*
 * The open old file's row into the output value by value, not as JSON
 * text: a value of the type its column has in the schema as it is, any
 * other as JSON (parsed as a record's would be).  A value that needs its
 * column widened sends the row as a record (out_row()).  0, RESTART, -1.
 */
static int out_copy(struct stream_merge *m, struct folder *d)
{
	struct oldfile *o = &d->o;
	size_t i, k, nj = 0, nc = pq_read_ncolumns(o->r.f);
	struct pq_fail f;
	int r;

	if (o->full || !o->typed) {
		if (old_record(m, o) != 0)
			return -1;
		return out_row(m, d, o->key.buf, o->key.len, o->r.rec.buf, o->r.rec.len);
	}
	if (out_prepare(m, d, o->key.buf, o->key.len) != 0 || pq_writer_row_begin(d->pw) != 0)
		return -1;
	sb_reset(&o->json);
	for (i = 0; i < nc; i++) {
		const struct pq_read_column *c = pq_read_column(o->r.f, i);
		const unsigned char *p;
		size_t n, j = o->col[i];

		if (j == SIZE_MAX || pq_read_value_raw(o->r.f, i, &p, &n) == 1)
			continue;
		switch (m->schema->cols[j].kind) {
		case PQ_INT64:
			if (c->kind == PQ_READ_INT && (n == 4 || n == 8)) {
				pq_writer_cell_int(d->pw, j, n == 4 ? (int64_t)(int32_t)(uint32_t)le_bytes(p, 4) :
						   (int64_t)le_bytes(p, 8));
				continue;
			}
			break;
		case PQ_DOUBLE:
			if (c->kind == PQ_READ_DOUBLE && n == 8) {
				uint64_t u = le_bytes(p, 8);
				double dv;

				memcpy(&dv, &u, 8);
				pq_writer_cell_double(d->pw, j, dv);
				continue;
			}
			break;
		case PQ_BOOL:
			if (c->kind == PQ_READ_BOOL && n >= 1) {
				pq_writer_cell_int(d->pw, j, *p != 0);
				continue;
			}
			break;
		case PQ_STRING:
		case PQ_TEXT:
		case PQ_NUMTEXT:
			if (c->kind == PQ_READ_STRING && util_utf8_valid(p, n)) {
				pq_writer_cell_bytes(d->pw, j, p, n);
				continue;
			}
			break;
		case PQ_TIMESTAMP:
			if (c->kind == PQ_READ_TIMESTAMP && c->unit == 6 && c->utc && n == 8) {
				pq_writer_cell_int(d->pw, j, (int64_t)le_bytes(p, 8));
				continue;
			}
			break;
		case PQ_DATE:
			if (c->kind == PQ_READ_DATE && n == 4) {
				pq_writer_cell_int(d->pw, j, (int64_t)(int32_t)(uint32_t)le_bytes(p, 4));
				continue;
			}
			break;
		default:
			break;
		}
		/* as JSON, parsed once every value is printed (the buffer may move as it grows) */
		o->jc[nj].i = i;
		o->jc[nj].j = j;
		o->jc[nj].off = o->json.len;
		if (pq_read_value_json(o->r.f, i, &o->json) != 0)
			return -1;
		o->jc[nj].len = o->json.len - o->jc[nj].off;
		nj++;
	}
	for (k = 0; k < nj; k++) {
		const char *v = o->json.buf + o->jc[k].off;
		size_t n = o->jc[k].len;
		struct json_span span = { v, n, v[0] == '"' ? JSON_STRING : v[0] == '{' ? JSON_OBJECT :
					  v[0] == '[' ? JSON_ARRAY : v[0] == 't' ? JSON_TRUE : v[0] == 'f' ? JSON_FALSE :
					  v[0] == 'n' ? JSON_NULL : JSON_NUMBER };

		r = pq_writer_cell_json(d->pw, o->jc[k].j, &span, v[0] == '"' && memchr(v, '\\', n) != NULL, &f);
		if (r == PQ_WIDEN) {
			/* the row dropped; as a record, whose column out_row() widens */
			if (old_record(m, o) != 0)
				return -1;
			return out_row(m, d, o->key.buf, o->key.len, o->r.rec.buf, o->r.rec.len);
		}
		if (r != 0)
			return -1;
	}
	if (pq_writer_row_end(d->pw) != 0)
		return -1;
	out_added(m, d, o->key.buf, o->key.len);
	return 0;
}

/*
 * Copy the open old file of folder d's rows whose key is below key (all:
 * key NULL) into d's output; drop the one equal to it, kept in eq (when
 * not NULL) for what the run's record leaves out (lib/absent.h).
 */
static int old_until(struct stream_merge *m, struct folder *d, const char *key, size_t klen, struct sb *eq)
{
	struct oldfile *o = &d->o;
	int x;

	while (o->have) {
		int c = key ? cmp_bytes(o->key.buf, o->key.len, key, klen) : -1;

		if (c > 0)
			break;
		if (c < 0 && (x = out_copy(m, d)) != 0)
			return x;
		if (c == 0 && eq) {
			if (old_record(m, o) != 0)
				return -1;
			/* (in two folders, never written so: the last one's) */
			sb_reset(eq);
			sb_add(eq, o->r.rec.buf, o->r.rec.len);
		}
		if (old_next(m, o) < 0)
			return -1;
	}
	return 0;
}

static void old_close(struct oldfile *o)
{
	reader_close(&o->r);
	o->t = NULL;
	o->have = 0;
}

/* A folder of the table, with no file (yet): its index. */
static struct folder *folder_add(struct stream_merge *m, const char *name, size_t len)
{
	struct folder *d = xcalloc(1, sizeof(*d));

	d->name = xstrndup(name, len);
	m->dirs = xrealloc(m->dirs, (m->ndirs + 1) * sizeof(*m->dirs));
	m->dirs[m->ndirs++] = d;
	return d;
}

/*
 * The folder of a row (record rec) of a table with partition_by: the Hive
 * folder of its own value (layout_part_value(), as pipe-sink places it),
 * or the one without a value.
 */
static struct folder *folder_of(struct stream_merge *m, const char *rec, size_t len)
{
	struct json_span r, v;
	size_t errpos, i;
	const char *errmsg;

	sb_reset(&m->pname);
	sb_adds(&m->pname, m->pcol);
	sb_addc(&m->pname, '=');
	if (json_validate(rec, len, &r, &errpos, &errmsg) != 0 || r.type != JSON_OBJECT ||
	    json_object_get(&r, m->pby, &v) != 1 || !layout_part_value(m->pgran, &v, &m->pname, &m->pscratch))
		sb_adds(&m->pname, LAYOUT_PART_NULL);
	if (m->plast && strcmp(m->plast->name, m->pname.buf) == 0)
		return m->plast;
	for (i = 0; i < m->ndirs; i++)
		if (strcmp(m->dirs[i]->name, m->pname.buf) == 0)
			return m->plast = m->dirs[i];
	if (!m->p->compact && ++m->pnew > LAYOUT_PART_MAX) {
		err_msg("stream '%s' has more than %d values of partition_by '%s' (%s) in one run: each "
			"would be a folder and a file of its own; choose a field with fewer values or a "
			"coarser granularity", m->s->name, LAYOUT_PART_MAX, m->pby, m->pcol);
		return NULL;
	}
	return m->plast = folder_add(m, m->pname.buf, m->pname.len);
}

/*
 * The table's files and the run's records, both in key order, into the
 * output, folder by folder (struct folder; one without partition_by): a
 * file the run's keys fall in is rewritten, without them; a key's row goes
 * to its folder's output (partition_by: the folder of its own value, so a
 * key whose value moved leaves its old folder's file and lands in its new
 * folder); keys between files are new, written to files of their own (or
 * with a file rewritten next to them); a file passed over untouched ends
 * its folder's output file (the output's bounds never overlap a file that
 * stays).  0, RESTART, -1.
 */
static int route(struct stream_merge *m)
{
	struct item it;
	size_t g, t, nlive = 0;
	size_t *live = xcalloc(m->ndirs + 1, sizeof(*live));	/* the folders with files left */
	int n, x, ret = -1;

	memset(&it, 0, sizeof(it));
	for (g = 0; g < m->ndirs; g++) {
		m->dirs[g]->fi = 0;
		if (m->dirs[g]->ntf > 0)
			live[nlive++] = g;
	}
	for (;;) {
		struct folder *to;

		if ((n = sorter_next(&m->sorted, &it)) < 0)
			goto out;
		t = n ? (it.klen < m->tlen ? it.klen : m->tlen) : 0;
		/* each folder's files wholly below the key (every file left at the end) */
		for (g = 0; g < nlive;) {
			struct folder *d = m->dirs[live[g]];

			while (d->fi < d->ntf &&
			       (n == 0 || cmp_bytes(d->tf[d->fi].max.buf, d->tf[d->fi].max.len, it.key, t) < 0)) {
				struct tfile *tf = &d->tf[d->fi++];

				if (d->o.t == NULL && tf->touched && old_open(m, tf, &d->o) != 0)
					goto out;	/* marked for the small files' compaction */
				if (d->o.t == tf) {
					if ((x = old_until(m, d, NULL, 0, NULL)) != 0) {
						ret = x;
						goto out;
					}
					old_close(&d->o);
				} else if (out_close(m, d) != 0) {
					goto out;
				}
			}
			/* a folder whose files are all passed is walked no more (keys above a partition) */
			if (d->fi >= d->ntf)
				live[g] = live[--nlive];
			else
				g++;
		}
		if (n == 0)
			break;
		if (it.ambiguous) {
			err_msg("stream '%s': a key has records of one run in two folders of partition_by "
				"'%s' (landed append-only, in no known order between folders): which came last is "
				"not known; run once with --full to rebuild the table from the source",
				m->s->name, m->pby);
			goto out;
		}
		/* the key's row, in whichever folder's file it is: dropped there */
		sb_reset(&m->eq);
		for (g = 0; g < nlive; g++) {
			struct folder *d = m->dirs[live[g]];

			if (d->fi < d->ntf && cmp_bytes(d->tf[d->fi].min.buf, d->tf[d->fi].min.len, it.key, t) <= 0) {
				if (d->o.t != &d->tf[d->fi] && old_open(m, &d->tf[d->fi], &d->o) != 0)
					goto out;
				if ((x = old_until(m, d, it.key, it.klen, &m->eq)) != 0) {
					ret = x;
					goto out;
				}
			}
		}
		if (it.deleted && m->hard_delete)
			continue;
		if (absent_marked(it.rec, it.rlen)) {
			/* what the record leaves out keeps the table's value (none: a null) */
			if (absent_fill(it.rec, it.rlen, m->eq.len ? m->eq.buf : NULL, m->eq.len, &m->fill) != 0) {
				err_msg("stream '%s': a record of the run is not a JSON object", m->s->name);
				goto out;
			}
			it.rec = m->fill.buf;
			it.rlen = m->fill.len;
		}
		if (m->parted && m->pcol == NULL) {
			err_msg("stream '%s': the plan says no partition of its records", m->s->name);
			goto out;
		}
		to = m->parted ? folder_of(m, it.rec, it.rlen) : m->dirs[0];
		if (to == NULL)
			goto out;
		if ((x = out_row(m, to, it.key, it.klen, it.rec, it.rlen)) != 0) {
			ret = x;
			goto out;
		}
	}
	ret = 0;
	for (g = 0; g < m->ndirs && ret == 0; g++)
		ret = out_close(m, m->dirs[g]);
out:
	for (g = 0; g < m->ndirs; g++)
		old_close(&m->dirs[g]->o);
	free(live);
	return ret;
}

/*
 * New keys alone: the run's one staged file of the stream, its rows in key
 * order, each key once, none deleted, no undeclared member (nor a note of
 * what a record leaves out), all between the same two files of the table,
 * at most a file's rows: it is the new file as pipe-sink wrote it, named
 * by its range (only its keys read, nothing written).  1 when so (the
 * plan's file renamed), 0 when not, -1.
 */
static int fast_new(struct stream_merge *m)
{
	struct reader r;
	struct sb prev = SB_INIT, first = SB_INIT;
	struct plan_file *f = NULL;
	unsigned long long rows = 0;
	size_t i, fi, tmin, tmax;
	int ret = 0, k;

	for (i = 0; i < m->p->nfiles; i++) {
		if (strcmp(m->p->files[i].stream, m->s->name) != 0)
			continue;
		if (f)
			return 0;
		f = &m->p->files[i];
	}
	if (f == NULL || f->records > (unsigned long long)m->limit)
		return 0;
	for (i = 0; i < m->ntf; i++)
		if (m->tf[i].touched)
			return 0;
	memset(&r, 0, sizeof(r));
	if (reader_open(m->b, f->staged, m->names, m->nnames, m->extra, &r) != 0) {
		ret = -1;
		goto out;
	}
	while ((k = pq_read_next_row(r.f)) == 1) {
		const unsigned char *v;
		const char *missing;
		size_t n;

		if ((r.extra != SIZE_MAX && pq_read_value_raw(r.f, r.extra, &v, &n) == 0) ||
		    (r.deleted != SIZE_MAX && pq_read_value_raw(r.f, r.deleted, &v, &n) == 0))
			goto out;
		if (reader_key(&r, m->names, m->nnames, &missing) != 0) {
			ret = -1;
			goto out;
		}
		if (missing)
			goto out;	/* the merge says which */
		merge_order_key(r.key.buf, r.key.len, &m->okey);
		if (rows > 0 && cmp_bytes(prev.buf, prev.len, m->okey.buf, m->okey.len) >= 0)
			goto out;
		if (rows++ == 0)
			sb_add(&first, m->okey.buf, m->okey.len);
		sb_reset(&prev);
		sb_add(&prev, m->okey.buf, m->okey.len);
	}
	if (k < 0) {
		ret = -1;
		goto out;
	}
	if (rows == 0 || rows > (unsigned long long)m->limit)
		goto out;
	tmin = first.len < m->tlen ? first.len : m->tlen;
	tmax = prev.len < m->tlen ? prev.len : m->tlen;
	/* the first file not wholly below the least key must start above the greatest */
	for (fi = 0; fi < m->ntf && cmp_bytes(m->tf[fi].max.buf, m->tf[fi].max.len, first.buf, tmin) < 0; fi++)
		;
	if (fi < m->ntf && cmp_bytes(m->tf[fi].min.buf, m->tf[fi].min.len, prev.buf, tmax) <= 0)
		goto out;
	free(f->final);
	f->final = layout_range_key(m->s->dir, m->date, m->safe, m->p->run_id, first.buf, tmin, prev.buf, tmax, rows);
	f->records = rows;
	m->written = rows;
	ret = 1;
out:
	reader_free(&r);
	sb_free(&prev);
	sb_free(&first);
	return ret;
}

/*
 * Mark for a rewrite each run of SMALL_FILES or more neighbouring files
 * (of one folder) of less than limit/16 rows.
 */
static void mark_small(struct stream_merge *m)
{
	size_t g, i, j, k;

	for (g = 0; g < m->ndirs; g++) {
		struct tfile *tf = m->dirs[g]->tf;
		size_t ntf = m->dirs[g]->ntf;

		for (i = 0; i < ntf; i = j) {
			for (j = i; j < ntf && tf[j].rows < (unsigned long long)m->limit / 16; j++)
				;
			if (j - i >= SMALL_FILES)
				for (k = i; k < j; k++)
					tf[k].touched = 1;
			if (j == i)
				j++;
		}
	}
}

/* Read the run's records of the stream (after the inputs', oldest first) into the sorter. */
static const char *parent_folder(const char *key, size_t *n);

/*
 * The seq of the first record of file key (a compact's, in run order):
 * its run's rank and its folder's within the run (SEQ_RUN, SEQ_FOLDER),
 * from those of the file before (*run, *folder: kept here).  0, or -1
 * when seq cannot hold them.
 */
static int group_seq(const char *key, struct sb *run, struct sb *folder, unsigned long long *seq)
{
	char *dir = NULL, *safe = NULL, *id = NULL;
	const char *f, *c, *fo;
	size_t nf;
	unsigned long long rank = *seq >> SEQ_RUN, frank = (*seq >> SEQ_FOLDER) & ((1ULL << (SEQ_RUN - SEQ_FOLDER)) - 1);
	int ret = 0;

	if (layout_data_key_split(key, &dir, &safe, &id, &f, &c) != 0)
		return -1;
	fo = parent_folder(key, &nf);
	if (run->len == 0 || strcmp(run->buf, id) != 0) {
		rank++;
		frank = 0;
		sb_reset(run);
		sb_adds(run, id);
		sb_reset(folder);
		sb_add(folder, fo, nf);
	} else if (folder->len != nf || memcmp(folder->buf, fo, nf) != 0) {
		frank++;
		sb_reset(folder);
		sb_add(folder, fo, nf);
	} else {
		goto out;	/* (the same folder: its records go on) */
	}
	if (rank >= (1ULL << (64 - SEQ_RUN)) || frank >= (1ULL << (SEQ_RUN - SEQ_FOLDER)))
		ret = -1;
	else
		*seq = rank << SEQ_RUN | frank << SEQ_FOLDER;
out:
	free(dir);
	free(safe);
	free(id);
	return ret;
}

static int read_run(struct stream_merge *m)
{
	struct reader r;
	struct sb run = SB_INIT, folder = SB_INIT;
	unsigned long long seq = 0, nrec = 0;
	size_t i, n = m->ninputs + m->p->nfiles;
	int ret = -1;

	memset(&r, 0, sizeof(r));
	m->sorted.groups = m->p->compact && m->parted && m->ninputs == 0;
	for (i = 0; i < n; i++) {
		const char *key;
		int input = i < m->ninputs;

		if (input) {
			key = m->inputs[i];
		} else {
			const struct plan_file *f = &m->p->files[i - m->ninputs];

			if (strcmp(f->stream, m->s->name) != 0)
				continue;
			key = f->staged;
		}
		if (m->sorted.groups && group_seq(key, &run, &folder, &seq) != 0)
			m->sorted.groups = 0;	/* (a table of more runs or folders than seq holds: not told) */
		if (reader_open(m->b, key, m->names, m->nnames, m->extra, &r) != 0)
			goto out;
		if (input)
			m->replaced_rows += pq_read_rows(r.f);
		for (;;) {
			const char *missing;
			int deleted, k = pq_read_next_row(r.f);

			if (k < 0)
				goto out;
			if (k == 0)
				break;
			seq++;
			nrec++;
			if (m->sorted.groups && (seq & ((1ULL << SEQ_FOLDER) - 1)) == 0)
				m->sorted.groups = 0;	/* (more rows in a folder of a run than seq holds) */
			if (reader_row(&r, m->names, m->nnames, &missing, &deleted) != 0)
				goto out;
			if (missing && input) {
				err_msg("'%s': a row without its key property '%s'", key, missing);
				goto out;
			}
			if (missing) {
				err_msg("stream '%s': record %llu has no key property '%s' (missing or null): "
					"an upsert needs every record's key; nothing committed", m->s->name,
					nrec, missing);
				goto out;
			}
			merge_order_key(r.key.buf, r.key.len, &m->okey);
			if (sorter_add(&m->sorted, m->okey.buf, m->okey.len, seq, deleted, r.rec.buf, r.rec.len) != 0)
				goto out;
		}
		reader_close(&r);
	}
	ret = sorter_finish(&m->sorted);
out:
	sb_free(&run);
	sb_free(&folder);
	reader_free(&r);
	return ret;
}

/* By folder (partition_by), then by bounds. */
static int cmp_tfile(const void *a, const void *b)
{
	const struct tfile *x = a, *y = b;
	int c = x->folder && y->folder ? cmp_bytes(x->folder, x->nfolder, y->folder, y->nfolder) : 0;

	return c ? c : cmp_bytes(x->min.buf, x->min.len, y->min.buf, y->min.len);
}

/* The Hive folder a file of the table is in (its parent's name), its length into *n. */
static const char *parent_folder(const char *key, size_t *n)
{
	const char *end = strrchr(key, '/'), *p = end;

	while (p && p > key && p[-1] != '/')
		p--;
	*n = end ? (size_t)(end - p) : 0;
	return end ? p : key;
}

/* partition_by's field, granularity and folder KEY, from the plan's stream line ({"by","granularity","column"}). */
static void partition_of(struct stream_merge *m, const char *part)
{
	struct json_span o, by, gran, col;
	struct sb v = SB_INIT;
	size_t errpos;
	const char *errmsg;
	int g;

	if (part == NULL || json_validate(part, strlen(part), &o, &errpos, &errmsg) != 0 || o.type != JSON_OBJECT ||
	    json_object_get(&o, "by", &by) != 1 || by.type != JSON_STRING ||
	    json_object_get(&o, "granularity", &gran) != 1 || gran.type != JSON_STRING ||
	    json_object_get(&o, "column", &col) != 1 || col.type != JSON_STRING ||
	    json_string_equal(&by, "_extraction_date", 0))
		return;
	for (g = CONFIG_GRAN_DAY; g <= CONFIG_GRAN_VALUE; g++)
		if (json_string_equal(&gran, config_granularity_name((enum config_granularity)g), 0))
			m->pgran = g;
	if (m->pgran == 0)
		return;
	json_string_decode(&by, &v);
	m->pby = sb_detach(&v);
	json_string_decode(&col, &v);
	m->pcol = sb_detach(&v);
}

static void folders_free(struct stream_merge *m)
{
	size_t i;

	for (i = 0; i < m->ndirs; i++) {
		struct folder *d = m->dirs[i];

		if (d->pw)
			pq_writer_abort(d->pw);
		free(d->staged);
		free(d->name);
		old_close(&d->o);
		reader_free(&d->o.r);
		free(d->o.col);
		free(d->o.jc);
		sb_free(&d->o.json);
		sb_free(&d->o.key);
		sb_free(&d->o.prev);
		sb_free(&d->omin);
		sb_free(&d->omax);
		free(d);
	}
	free(m->dirs);
	m->dirs = NULL;
	m->ndirs = 0;
}

static void add_replace(struct plan *p, const char *stream, const char *key, unsigned long long rows)
{
	struct plan_replace *rp;

	p->replaced = xrealloc(p->replaced, (p->nreplaced + 1) * sizeof(*p->replaced));
	rp = &p->replaced[p->nreplaced++];
	rp->stream = xstrdup(stream);
	rp->key = xstrdup(key);
	rp->rows = rows;
	rp->unit = 1;
}

/*
 * 1 when the table's files (list) hold one of p's run: a --full run whose
 * checkpoint published the table rebuilt it then, and its later units
 * merge with it.  The table is rebuilt by the first unit that lands it,
 * whichever unit that is (another stream's may be published before).
 */
static int rebuilt(const struct plan *p, const char *dir, char **list, size_t n)
{
	char *mark = xasprintf("_%s_", p->run_id);
	size_t i, dlen = strlen(dir);
	int r = 0;

	for (i = 0; i < n && !r; i++) {
		const char *base = strrchr(list[i], '/');

		r = strncmp(list[i], dir, dlen) == 0 && base && data_file(list[i]) && strstr(base, mark) != NULL;
	}
	free(mark);
	return r;
}

static int merge_stream(struct bucket *b, const struct pipe_config *cfg, struct plan *p, size_t si,
			int hard_delete, const char *cfg_keys)
{
	struct plan_stream *s = &p->streams[si];
	struct stream_merge m;
	struct table_info ti;
	struct sb why = SB_INIT, min = SB_INIT, max = SB_INIT;
	char **list = NULL, **text = NULL, *prefix = NULL;
	size_t nlist = 0, i, j, other = 0, nodes = 0, moved = 0;
	int ret = -1, rebuild, r = 0, fast = 0, parted = cfg->partition_by != NULL;
	const char *keys = s->key_properties && strcmp(s->key_properties, "[]") != 0 ? s->key_properties : cfg_keys;

	memset(&m, 0, sizeof(m));
	memset(&ti, 0, sizeof(ti));
	m.b = b;
	m.cfg = cfg;
	m.p = p;
	m.s = s;
	m.hard_delete = hard_delete;
	m.limit = util_env_long("DATASPOC_PIPE_MERGE_ROWS", 1, 1L << 40, DEFAULT_FILE_ROWS);
	m.sorted.max_records = (size_t)util_env_long("DATASPOC_PIPE_MERGE_KEYS", 1, 1L << 40, 1000000);
	m.sorted.max_bytes = (size_t)64 << 20;
	if (parse_names(keys, &m.names, &m.nnames) != 0) {
		err_msg("stream '%s' has no key: its SCHEMA sends no key_properties; set "
			"destination.key_properties (or destination.streams.%s.key_properties) for load_method upsert",
			s->name, s->name);
		goto out;
	}
	if (table_info(b, s->dir, &ti) != 0)
		goto out;
	prefix = xasprintf("%s/", s->dir);
	if (bucket_list(b, prefix, &list, &nlist) != 0)
		goto out;
	rebuild = (p->full && !rebuilt(p, s->dir, list, nlist)) ||
		  (s->activated && ti.version && strcmp(ti.version, s->activated) != 0);
	if (!rebuild && ti.load_method && strcmp(ti.load_method, "upsert") == 0 && ti.keys) {
		struct sb now = SB_INIT;

		json_quote_list(&now, m.names, m.nnames);
		if (strcmp(now.buf, ti.keys) != 0) {
			err_msg("stream '%s': its key changed from %s to %s since the table was merged: run once "
				"with --full to rebuild the table by the new key", s->name, ti.keys, now.buf);
			sb_free(&now);
			goto out;
		}
		sb_free(&now);
	}
	m.safe = layout_stream_folder(s->name, strlen(s->name), &why);
	if (m.safe == NULL) {
		err_msg("stream '%s': %s", s->name, why.buf);
		goto out;
	}
	m.tlen = order_prefix(m.safe);
	if (parted)
		partition_of(&m, s->partition);	/* (none when the run placed no record) */
	/* the table's files: by key range; of the hash trie of older versions (read whole, once) */
	for (i = 0; i < nlist; i++) {
		unsigned long long rows;
		int ours = 0;

		for (j = 0; j < p->nfiles && !ours; j++)
			ours = strcmp(p->files[j].final, list[i]) == 0;
		if (ours || !data_file(list[i]))
			continue;
		if (rebuild) {
			add_replace(p, s->name, list[i], 0);
			continue;
		}
		if (layout_range_of(list[i], &min, &max, &rows)) {
			struct tfile *t;
			size_t nf;
			const char *f = parent_folder(list[i], &nf);

			/* in a folder of the table's partition: dt=, or partition_by's KEY= */
			if (parted ? (m.pcol && (nf <= strlen(m.pcol) || strncmp(f, m.pcol, strlen(m.pcol)) != 0 ||
						  f[strlen(m.pcol)] != '=')) :
			    layout_date_folder(f) == 0) {
				if (moved++ == 0)
					sb_add(&why, f, nf);
				continue;
			}
			m.tf = xrealloc(m.tf, (m.ntf + 1) * sizeof(*m.tf));
			t = &m.tf[m.ntf++];
			memset(t, 0, sizeof(*t));
			t->key = xstrdup(list[i]);
			if (parted) {
				t->folder = t->key + (f - list[i]);
				t->nfolder = nf;
			}
			sb_add(&t->min, min.buf, min.len);
			sb_add(&t->max, max.buf, max.len);
			t->rows = rows;
		} else if (layout_node_of(list[i]) != 0) {
			nodes++;
		} else {
			other++;
		}
	}
	if (other) {
		err_msg("stream '%s': its table '%s' holds %zu file(s) that are not merged by key (landed "
			"append-only, or by hand): 'dataspoc-pipe compact %s %s' merges them by key once, or "
			"run once with --full to rebuild it as an upsert table",
			s->name, s->dir, other, cfg->name, s->name);
		goto out;
	}
	if (moved) {
		err_msg("stream '%s': its table '%s' holds %zu file(s) in folders of another layout ('%s'%s): "
			"partition_by changed since they landed; run once with --full to rebuild the table in "
			"folders of %s", s->name, s->dir, moved, why.buf, moved > 1 ? ", ..." : "",
			parted ? m.pcol : "dt=");
		goto out;
	}
	if (m.ntf > 1)
		qsort(m.tf, m.ntf, sizeof(*m.tf), cmp_tfile);
	for (i = 1; i < m.ntf; i++) {
		if (m.tf[i].folder && cmp_bytes(m.tf[i - 1].folder, m.tf[i - 1].nfolder, m.tf[i].folder,
						 m.tf[i].nfolder) != 0)
			continue;	/* (ranges overlap across folders) */
		if (cmp_bytes(m.tf[i - 1].max.buf, m.tf[i - 1].max.len, m.tf[i].min.buf, m.tf[i].min.len) >= 0) {
			/* not of one table (never written so): a rebuild from their rows */
			nodes++;
			break;
		}
	}
	if (nodes) {
		/* the table's every file, read before the run's records (the bucket lists them oldest first) */
		for (i = 0; i < nlist; i++) {
			int ours = 0;

			for (j = 0; j < p->nfiles && !ours; j++)
				ours = strcmp(p->files[j].final, list[i]) == 0;
			if (ours || !data_file(list[i]))
				continue;
			m.inputs = xrealloc(m.inputs, (m.ninputs + 2) * sizeof(*m.inputs));
			m.inputs[m.ninputs++] = xstrdup(list[i]);
			m.inputs[m.ninputs] = NULL;
		}
		for (i = 0; i < m.ntf; i++) {
			free(m.tf[i].key);
			sb_free(&m.tf[i].min);
			sb_free(&m.tf[i].max);
		}
		m.ntf = 0;
	}

	/* the stream's columns, as pipe-sink wrote them */
	text = text_patterns(cfg, s->name);
	m.schema = pq_schema_new(s->schema ? s->schema : "{}", s->schema ? strlen(s->schema) : 2, text);
	for (i = 0; i < m.schema->n; i++)
		if (m.schema->cols[i].extra)
			m.extra = m.schema->cols[i].name;
	if ((m.codec = pq_codec_new(cfg->compression, cfg->compression_level, 0)) == NULL)
		goto out;
	{
		/* pipe-sink's date folder: _dt= when dt is a field of the stream (it would hide it) */
		char *dkey = plan_folder_key(s);

		snprintf(m.date, sizeof(m.date), "%s=%.4s-%.2s-%.2s", dkey, p->run_id, p->run_id + 4, p->run_id + 6);
		free(dkey);
	}
	/* the parts merged on their own: the table, or each folder of partition_by */
	if (!parted) {
		struct folder *d = folder_add(&m, m.date, strlen(m.date));

		d->tf = m.tf;
		d->ntf = m.ntf;
	}
	for (i = 0; parted && i < m.ntf; i = j) {
		struct folder *d = folder_add(&m, m.tf[i].folder, m.tf[i].nfolder);

		for (j = i; j < m.ntf && cmp_bytes(m.tf[j].folder, m.tf[j].nfolder, m.tf[i].folder, m.tf[i].nfolder) == 0;
		     j++)
			;
		d->tf = m.tf + i;
		d->ntf = j - i;
	}
	m.parted = parted;
	mark_small(&m);
	if (!rebuild && !parted && m.ninputs == 0 && (fast = fast_new(&m)) < 0)
		goto out;
	if (!fast && read_run(&m) != 0)
		goto out;
	/* a column widened in a file with rows: every file again, by the wider schema */
	while (!fast && (r = route(&m)) == RESTART) {
		out_undo(&m);
		if (sorter_rewind(&m.sorted) != 0)
			goto out;
	}
	if (!fast && r != 0)
		goto out;
	for (i = 0; i < m.ntf; i++) {
		if (!m.tf[i].touched)
			continue;
		add_replace(p, s->name, m.tf[i].key, m.tf[i].rows);
		m.replaced_rows += m.tf[i].rows;
	}
	for (i = 0; i < m.ninputs; i++)
		add_replace(p, s->name, m.inputs[i], 0);
	/* the plan: the stream's staged files give way to the merged ones (fast_new(): it is its own) */
	j = 0;
	for (i = 0; i < p->nfiles && !fast; i++) {
		if (strcmp(p->files[i].stream, s->name) == 0) {
			free(p->files[i].stream);
			free(p->files[i].staged);
			free(p->files[i].final);
			free(p->files[i].version);
			continue;
		}
		p->files[j++] = p->files[i];
	}
	if (!fast) {
		p->files = xrealloc(p->files, (j + m.nfiles + 1) * sizeof(*p->files));
		for (i = 0; i < m.nfiles; i++)
			p->files[j++] = m.files[i];
		p->nfiles = j;
		m.nfiles = 0;
	}
	{
		struct sb kp = SB_INIT, types = SB_INIT;

		json_quote_list(&kp, m.names, m.nnames);
		free(s->key_properties);
		s->key_properties = sb_detach(&kp);
		if (!fast) {
			/* (pipe-sink's stay with its file) */
			pq_schema_types_json(m.schema, &types);
			free(s->parquet_types);
			s->parquet_types = sb_detach(&types);
		}
		sb_free(&types);
	}
	if (rebuild || m.ninputs || m.ntf == 0) {
		/* every file of the table is new */
		s->has_table_rows = 1;
		s->table_rows = m.written;
	} else if (ti.load_method && strcmp(ti.load_method, "upsert") == 0 && ti.has_rows) {
		s->has_table_rows = 1;
		s->table_rows = ti.rows + m.written >= m.replaced_rows ? ti.rows + m.written - m.replaced_rows : 0;
	}
	ret = 0;
out:
	folders_free(&m);
	free(m.pby);
	free(m.pcol);
	sb_free(&m.pname);
	sb_free(&m.pscratch);
	for (i = 0; i < m.nfiles; i++) {
		free(m.files[i].stream);
		free(m.files[i].staged);
		free(m.files[i].final);
	}
	free(m.files);
	for (i = 0; i < m.ntf; i++) {
		free(m.tf[i].key);
		sb_free(&m.tf[i].min);
		sb_free(&m.tf[i].max);
	}
	free(m.tf);
	util_strv_free(m.inputs);
	sorter_free(&m.sorted);
	pq_schema_free(m.schema);
	pq_codec_free(m.codec);
	util_strv_free(m.names);
	util_strv_free(text);
	util_strv_free(list);
	table_info_free(&ti);
	sb_free(&m.okey);
	sb_free(&m.buf);
	sb_free(&m.eq);
	sb_free(&m.fill);
	sb_free(&why);
	sb_free(&min);
	sb_free(&max);
	free(m.safe);
	free(prefix);
	return ret;
}

/* The JSON Schema of a Parquet file's columns (the extra column left out), from its footer. */
static char *file_schema(struct bucket *b, const char *key)
{
	struct sb data = SB_INIT, out = SB_INIT;
	struct pq_read_file *f;

	if (bucket_get(b, key, &data) != 0) {
		err_msg("cannot read '%s'", key);
		sb_free(&data);
		return NULL;
	}
	if ((f = pq_read_open(data.buf, data.len, key)) == NULL) {
		sb_free(&data);
		return NULL;
	}
	pq_read_file_schema(f, &out);
	pq_read_free(f);
	sb_free(&data);
	return sb_detach(&out);
}

/* By run id (then key): the oldest first, whichever folder of partition_by a file is in. */
static int cmp_by_run(const void *a, const void *b)
{
	const struct plan_file *x = a, *y = b;
	char *dx = NULL, *sx = NULL, *rx = NULL, *dy = NULL, *sy = NULL, *ry = NULL;
	const char *f, *c;
	int r = 0;

	if (layout_data_key_split(x->staged, &dx, &sx, &rx, &f, &c) == 0 &&
	    layout_data_key_split(y->staged, &dy, &sy, &ry, &f, &c) == 0)
		r = strcmp(rx, ry);
	free(dx);
	free(sx);
	free(rx);
	free(dy);
	free(sy);
	free(ry);
	return r ? r : strcmp(x->staged, y->staged);
}

/*
 * The partition of a table with partition_by (the plan's stream line's
 * "partition"): the manifest's, when it is of the same field, else the
 * config's with its granularity said; NULL (said) when neither.
 */
static char *compact_partition(const struct pipe_config *cfg, jv t, const char *stream)
{
	jv part = jv_object_get(jv_copy(t), jv_string("partition"));
	char *by = jv_get_kind(part) == JV_KIND_OBJECT ? jvx_string(part, "by") : NULL, *ret = NULL, *col = NULL;
	struct sb out = SB_INIT;

	if (by && strcmp(by, cfg->partition_by) == 0) {
		ret = dump(jv_copy(part));
	} else if (cfg->partition_granularity != CONFIG_GRAN_AUTO) {
		const char *g = config_granularity_name(cfg->partition_granularity);

		sb_adds(&out, "{\"by\":");
		json_quote(&out, cfg->partition_by, strlen(cfg->partition_by));
		sb_addf(&out, ",\"granularity\":\"%s\",\"column\":", g);
		col = xasprintf("%s_%s", cfg->partition_by, g);
		json_quote(&out, col, strlen(col));
		sb_addc(&out, '}');
		ret = sb_detach(&out);
	} else {
		err_msg("compact: stream '%s': its table was not landed by partition_by '%s': say its granularity "
			"(partition_by: {field: %s, granularity: day}), or run once with --full", stream,
			cfg->partition_by, cfg->partition_by);
	}
	free(by);
	free(col);
	jv_free(part);
	sb_free(&out);
	return ret;
}

/* Add to p the stream of table t (a manifest table of the pipeline) and its files. */
static int compact_table(struct bucket *b, const struct pipe_config *cfg, jv t, struct plan *p)
{
	char *dir = jvx_string(t, "path"), *name = jvx_string(t, "stream"), *prefix = NULL;
	char **list = NULL;
	size_t n = 0, i, nfiles = 0;
	struct plan_stream *s;
	jv kp = jv_object_get(jv_copy(t), jv_string("key_properties"));
	int ret = -1;

	if (dir == NULL || name == NULL) {
		err_msg("compact: a table of the manifest has no path or stream");
		goto out;
	}
	prefix = xasprintf("%s/", dir);
	if (bucket_list(b, prefix, &list, &n) != 0)
		goto out;
	p->streams = xrealloc(p->streams, (p->nstreams + 1) * sizeof(*p->streams));
	s = &p->streams[p->nstreams++];
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->dir = dir;
	s->unit = 1;
	name = dir = NULL;
	if (jv_get_kind(kp) == JV_KIND_ARRAY && jv_array_length(jv_copy(kp)) > 0)
		s->key_properties = dump(jv_copy(kp));
	{
		/* the rows it reads (the manifest's count) */
		jv st = jv_object_get(jv_copy(t), jv_string("stats"));

		s->records = jv_get_kind(st) == JV_KIND_OBJECT ? (unsigned long long)jvx_number(st, "total_rows", 0) : 0;
		jv_free(st);
	}
	/* the bucket lists keys sorted: dt=, then run ids, then each run's files: oldest first */
	for (i = 0; i < n; i++) {
		struct plan_file *f;

		if (!data_file(list[i]))
			continue;
		if (strstr(list[i], ".jsonl") != NULL) {
			err_msg("compact: stream '%s': '%s' is JSON lines: only Parquet tables are merged by key",
				s->name, list[i]);
			goto out;
		}
		if (s->schema == NULL && (s->schema = file_schema(b, list[i])) == NULL)
			goto out;
		p->files = xrealloc(p->files, (p->nfiles + 1) * sizeof(*p->files));
		f = &p->files[p->nfiles++];
		memset(f, 0, sizeof(*f));
		f->stream = xstrdup(s->name);
		f->staged = xstrdup(list[i]);
		f->final = xstrdup("");	/* read, never published: the merge replaces it */
		f->unit = 1;
		nfiles++;
	}
	if (nfiles == 0)
		err_warn("compact: stream '%s' has no file in '%s'", s->name, s->dir);
	if (cfg->partition_by) {
		/* a folder per value: the listing is by folder, not by run */
		qsort(p->files + p->nfiles - nfiles, nfiles, sizeof(*p->files), cmp_by_run);
		if ((s->partition = compact_partition(cfg, t, s->name)) == NULL)
			goto out;
	} else {
		/* the date folder's key the table has (_dt= for a stream with a field dt) */
		jv part = jv_object_get(jv_copy(t), jv_string("partition"));
		char *by = jv_get_kind(part) == JV_KIND_OBJECT ? jvx_string(part, "by") : NULL;

		if (by && strcmp(by, "_extraction_date") == 0)
			s->partition = dump(jv_copy(part));
		free(by);
		jv_free(part);
	}
	ret = 0;
out:
	jv_free(kp);
	free(dir);
	free(name);
	free(prefix);
	util_strv_free(list);
	return ret;
}

/*
 * Add to p what compact does to table t of stream name: an upsert stream's
 * table not merged by key yet, its files (compact_table()); an append-only
 * one, the stream alone, its small files merged after merge_plan()
 * (compact_files()).  An upsert table already merged, and an overwritten
 * one, add nothing.
 */
static int compact_add(struct bucket *b, const struct pipe_config *cfg, jv t, const char *name, struct plan *p)
{
	enum config_method method;
	int hard;
	const char *keys;
	char *lm = jvx_string(t, "load_method");
	int ret = 0;

	config_stream_load(cfg, name, &method, &hard, &keys);
	if (method == CONFIG_LOAD_UPSERT) {
		if (lm == NULL || strcmp(lm, "upsert") != 0)
			ret = compact_table(b, cfg, t, p);
	} else if (method == CONFIG_LOAD_APPEND) {
		struct plan_stream *s;
		jv st = jv_object_get(jv_copy(t), jv_string("stats"));

		p->streams = xrealloc(p->streams, (p->nstreams + 1) * sizeof(*p->streams));
		s = &p->streams[p->nstreams++];
		memset(s, 0, sizeof(*s));
		s->name = xstrdup(name);
		s->dir = jvx_string(t, "path");
		s->unit = 1;
		s->load_method = xstrdup(config_method_name(method));
		if (jv_get_kind(st) == JV_KIND_OBJECT && jvx_number(st, "total_rows", -1) >= 0) {
			/* the rows stay */
			s->has_table_rows = 1;
			s->table_rows = (unsigned long long)jvx_number(st, "total_rows", 0);
		}
		jv_free(st);
		/* and their folders: the manifest keeps saying their key */
		st = jv_object_get(jv_copy(t), jv_string("partition"));
		if (jv_get_kind(st) == JV_KIND_OBJECT)
			s->partition = dump(jv_copy(st));
		jv_free(st);
		if (s->dir == NULL) {
			err_msg("compact: a table of the manifest has no path");
			ret = -1;
		}
	} else {
		err_warn("compact: stream '%s' is %s: each run replaces its table, nothing to compact", name,
			 config_method_name(method));
	}
	free(lm);
	return ret;
}

int merge_compact(struct bucket *b, const struct pipe_config *cfg, const char *run_id, const char *stream,
		  struct plan *p)
{
	struct sb text = SB_INIT;
	char at[64];
	jv m = jv_invalid(), tables;
	int r, ret = -1;
	size_t found = 0;

	memset(p, 0, sizeof(*p));
	p->pipeline = xstrdup(cfg->name);
	p->run_id = xstrdup(run_id);
	util_iso_time(util_run_id_time(run_id), at, sizeof(at));
	p->started_at = xstrdup(at);
	p->source = config_source_name(cfg);
	p->format = xstrdup("parquet");
	p->compression = xstrdup(config_compression_name(cfg->compression));
	p->incremental = cfg->incremental;
	p->full = 1;	/* the tables are rebuilt from their own rows */
	p->compact = 1;
	p->ended = p->success = 1;
	r = bucket_get(b, LAYOUT_MANIFEST_KEY, &text);
	if (r != 0) {
		if (r > 0)
			err_msg("compact: the bucket has no manifest: nothing to compact");
		goto out;
	}
	m = jv_parse_sized(text.buf, (int)text.len);
	tables = jv_get_kind(m) == JV_KIND_OBJECT ? jv_object_get(jv_copy(m), jv_string("tables")) : jv_invalid();
	if (jv_get_kind(tables) == JV_KIND_OBJECT) {
		ret = 0;
		jv_object_foreach(tables, k, v) {
			char *pl = jv_get_kind(v) == JV_KIND_OBJECT ? jvx_string(v, "pipeline") : NULL;
			char *st = jv_get_kind(v) == JV_KIND_OBJECT ? jvx_string(v, "stream") : NULL;

			if (ret == 0 && pl && strcmp(pl, cfg->name) == 0 && st && (stream == NULL || strcmp(st, stream) == 0)) {
				found++;
				ret = compact_add(b, cfg, v, st, p);
			}
			free(pl);
			free(st);
			jv_free(k);
			jv_free(v);
		}
	} else {
		err_msg("compact: %s cannot be read", LAYOUT_MANIFEST_KEY);
	}
	jv_free(tables);
	if (ret == 0 && found == 0) {
		err_msg(stream ? "compact: pipeline '%s' landed no table of stream '%s'" :
			"compact: pipeline '%s' landed no table", cfg->name, stream);
		ret = -1;
	}
	if (ret == 0)
		ret = merge_plan(b, cfg, p);
	for (size_t i = 0; ret == 0 && i < p->nstreams; i++) {
		enum config_method method;
		int hard;
		const char *keys;

		config_stream_load(cfg, p->streams[i].name, &method, &hard, &keys);
		if (method == CONFIG_LOAD_APPEND)
			ret = compact_files(b, cfg, p, &p->streams[i]);
	}
out:
	jv_free(m);
	sb_free(&text);
	return ret;
}

int merge_plan(struct bucket *b, const struct pipe_config *cfg, struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nstreams; i++) {
		struct plan_stream *s = &p->streams[i];
		enum config_method method;
		int hard_delete;
		const char *keys;

		config_stream_load(cfg, s->name, &method, &hard_delete, &keys);
		if (cfg->nloads == 0 && method != CONFIG_LOAD_UPSERT)
			continue;	/* the pipeline's default: the plan says nothing new */
		free(s->load_method);
		s->load_method = xstrdup(config_method_name(method));
		if (method != CONFIG_LOAD_UPSERT)
			continue;
		if (p->format && strcmp(p->format, "parquet") != 0) {
			err_msg("stream '%s': load_method upsert needs format: parquet", s->name);
			return -1;
		}
		if (p->nunits > 0) {
			err_msg("stream '%s': load_method upsert cannot take a plan with checkpoints", s->name);
			return -1;
		}
		if (merge_stream(b, cfg, p, i, hard_delete, keys) != 0)
			return -1;
	}
	return 0;
}
