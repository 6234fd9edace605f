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
#include "compact.h"
#include "layout.h"
#include "parquet.h"
#include "pqread.h"
#include "sb.h"
#include "util.h"

#define MAX_DEPTH 30
#define DEFAULT_NODE_ROWS 1000000L

/* ---- keys and nodes ---- */

unsigned long long merge_hash(const char *key, size_t len)
{
	/* FNV-1a, then a finalizer (splitmix64): a table's layout depends on it, never change it */
	uint64_t h = 14695981039346656037ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)key[i];
		h *= 1099511628211ULL;
	}
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

unsigned long merge_node(unsigned long long h, unsigned d)
{
	/* the hash's bits from the lowest are the path down: node n's halves are 2n and 2n+1 */
	unsigned long n = 1;
	unsigned i;

	for (i = 0; i < d; i++)
		n = n << 1 | (unsigned long)(h >> i & 1);
	return n;
}

static unsigned node_depth(unsigned long n)
{
	unsigned d = 0;

	while (n >>= 1)
		d++;
	return d;
}

/* The table's node files: sorted node numbers, and the internal nodes above them. */
struct cover {
	unsigned long *nodes;	/* sorted */
	char **keys;		/* each node's file */
	size_t n;
	unsigned long *inner;	/* sorted, distinct: proper ancestors of the nodes */
	size_t ninner;
};

static int cmp_ulong(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

static int has(const unsigned long *v, size_t n, unsigned long x)
{
	return v && bsearch(&x, v, n, sizeof(*v), cmp_ulong) != NULL;
}

static void cover_inner(struct cover *c)
{
	size_t i, n = 0;

	for (i = 0; i < c->n; i++) {
		unsigned long a;

		for (a = c->nodes[i] >> 1; a >= 1; a >>= 1) {
			c->inner = xrealloc(c->inner, (n + 1) * sizeof(*c->inner));
			c->inner[n++] = a;
		}
	}
	if (n)
		qsort(c->inner, n, sizeof(*c->inner), cmp_ulong);
	c->ninner = 0;
	for (i = 0; i < n; i++)
		if (c->ninner == 0 || c->inner[c->ninner - 1] != c->inner[i])
			c->inner[c->ninner++] = c->inner[i];
}

/* The node a key of hash h is in: a file's node, else the highest node with no file below. */
static unsigned long node_of(const struct cover *c, unsigned long long h)
{
	unsigned d;

	for (d = 0; d < MAX_DEPTH; d++) {
		unsigned long n = merge_node(h, d);

		if (has(c->nodes, c->n, n) || !has(c->inner, c->ninner, n))
			return n;
	}
	return merge_node(h, MAX_DEPTH);
}

static void cover_free(struct cover *c)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		free(c->keys[i]);
	free(c->keys);
	free(c->nodes);
	free(c->inner);
	memset(c, 0, sizeof(*c));
}

/* ---- the run's keys ---- */

struct entry {
	unsigned long long hash;
	size_t koff;		/* the key's bytes in the arena */
	uint32_t klen;
	int deleted;		/* its last record has _sdc_deleted_at set */
	unsigned long long last;	/* the sequence number of its last record */
	unsigned long node;
};

struct keymap {
	struct entry *e;
	size_t n, cap;
	size_t *slots;		/* index + 1, 0 empty */
	size_t nslots;
	struct sb arena;
};

static void keymap_grow(struct keymap *m)
{
	size_t i, ns = m->nslots ? m->nslots * 2 : 1024;

	free(m->slots);
	m->slots = xcalloc(ns, sizeof(*m->slots));
	m->nslots = ns;
	for (i = 0; i < m->n; i++) {
		size_t s = (size_t)m->e[i].hash & (ns - 1);

		while (m->slots[s])
			s = (s + 1) & (ns - 1);
		m->slots[s] = i + 1;
	}
}

/* The entry of key (NULL when absent and !add). */
static struct entry *keymap_find(struct keymap *m, const char *key, size_t len, unsigned long long h, int add)
{
	size_t s;

	if (m->nslots == 0) {
		if (!add)
			return NULL;
		keymap_grow(m);
	}
	for (s = (size_t)h & (m->nslots - 1); m->slots[s]; s = (s + 1) & (m->nslots - 1)) {
		struct entry *e = &m->e[m->slots[s] - 1];

		if (e->hash == h && e->klen == len && memcmp(m->arena.buf + e->koff, key, len) == 0)
			return e;
	}
	if (!add)
		return NULL;
	if ((m->n + 1) * 4 > m->nslots * 3) {
		keymap_grow(m);
		return keymap_find(m, key, len, h, add);
	}
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 1024;
		m->e = xrealloc(m->e, m->cap * sizeof(*m->e));
	}
	memset(&m->e[m->n], 0, sizeof(m->e[m->n]));
	m->e[m->n].hash = h;
	m->e[m->n].koff = m->arena.len;
	m->e[m->n].klen = (uint32_t)len;
	sb_add(&m->arena, key, len);
	m->slots[s] = ++m->n;
	return &m->e[m->n - 1];
}

static void keymap_free(struct keymap *m)
{
	free(m->e);
	free(m->slots);
	sb_free(&m->arena);
	memset(m, 0, sizeof(*m));
}

/* ---- reading a file's rows ---- */

struct reader {
	struct sb data;
	struct pq_read_file *f;
	size_t *keycol;		/* the key columns' indexes */
	size_t deleted;		/* _sdc_deleted_at's, or SIZE_MAX */
	size_t extra;		/* the extra column's, or SIZE_MAX */
	struct sb rec, key, val;
};

static void reader_close(struct reader *r)
{
	pq_read_free(r->f);
	r->f = NULL;
	sb_free(&r->data);
	free(r->keycol);
	r->keycol = NULL;
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
	for (i = 0; i < nc; i++) {
		const struct pq_read_column *c = pq_read_column(r->f, i);

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

		if (c->unsupported)
			continue;
		sb_reset(&r->val);
		if (pq_read_value_json(r->f, i, &r->val) != 0)
			return -1;
		if (r->val.len == 4 && memcmp(r->val.buf, "null", 4) == 0)
			continue;
		if (i == r->deleted)
			*deleted = 1;
		if (i == r->extra && r->val.len > 2 && r->val.buf[0] == '{') {
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
		if (i == r->extra && r->val.buf[0] == '{')
			continue;
		if (!first)
			sb_addc(&r->rec, ',');
		first = 0;
		json_quote(&r->rec, c->name, c->name_len);
		sb_addc(&r->rec, ':');
		sb_add(&r->rec, r->val.buf, r->val.len);
	}
	sb_addc(&r->rec, '}');
	for (i = 0; i < n; i++) {
		const char *v;
		size_t len;
		uint32_t l32;

		sb_reset(&r->val);
		if (r->keycol[i] == SIZE_MAX || pq_read_value_json(r->f, r->keycol[i], &r->val) != 0 ||
		    (r->val.len == 4 && memcmp(r->val.buf, "null", 4) == 0)) {
			*missing = names[i];
			return 0;
		}
		v = r->val.buf;
		len = r->val.len;
		/* a number kept as a string (a column widened to text) is the same key */
		if (len > 2 && v[0] == '"' && strspn(v + 1, "-+0123456789.eE") == len - 2) {
			v++;
			len -= 2;
		}
		l32 = (uint32_t)len;
		sb_add(&r->key, &l32, sizeof(l32));
		sb_add(&r->key, v, len);
	}
	return 0;
}

/* ---- writing a node's files ---- */

struct out {
	unsigned long node;
	struct pq_writer *pw;
	char *staged, *final;
	unsigned long long rows;
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
	char date[11];
	struct keymap map;
	struct cover cover;
	FILE *spill;
	/* the run's winning records: entry index, sequence, where in the spill */
	struct item { size_t e; unsigned long long seq; long long off; size_t len; } *items;
	size_t nitems;
	struct plan_file *files;	/* the merged files */
	size_t nfiles;
	unsigned long long written, replaced_rows;
	struct sb buf;
	unsigned q;		/* this pass reads the keys under node part, of depth q (0: all) */
	unsigned long part;
};

static int out_open(struct stream_merge *m, struct out *o)
{
	struct pq_options opt;
	struct bucket_writer *w;
	char *staging = layout_staging_prefix(m->p->pipeline, m->p->run_id);

	o->final = layout_node_key(m->s->dir, m->date, m->safe, m->p->run_id, o->node);
	o->staged = xasprintf("%s%s", staging, strrchr(o->final, '/') + 1);
	free(staging);
	memset(&opt, 0, sizeof(opt));
	opt.codec = m->codec;
	opt.row_group_rows = m->cfg->row_group_rows;
	opt.row_group_size = m->cfg->row_group_size;
	if ((w = bucket_writer_open(m->b, o->staged)) == NULL)
		return -1;
	if ((o->pw = pq_writer_open(w, m->schema, &opt)) == NULL)
		return -1;
	return 0;
}

static void outs_abort(struct out *o, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (o[i].pw)
			pq_writer_abort(o[i].pw);
		o[i].pw = NULL;
		free(o[i].staged);
		free(o[i].final);
		o[i].staged = o[i].final = NULL;
		o[i].rows = 0;
	}
}

#define RESTART 2

/* Add rec to the output of its node; RESTART when a column had to widen in a file with rows. */
static int out_add(struct stream_merge *m, struct out *o, const char *rec, size_t len)
{
	struct json_span span = { rec, len, JSON_OBJECT };
	struct pq_fail f;
	int r;

	if (o->pw == NULL && out_open(m, o) != 0)
		return -1;
	for (;;) {
		r = pq_writer_add(o->pw, &span, &f);
		if (r == 0) {
			o->rows++;
			return 0;
		}
		if (r != PQ_WIDEN)
			return -1;
		if (m->cfg->mismatch_fail) {
			err_msg("stream '%s': column '%.*s' %s (schema_mismatch: fail)", m->s->name,
				(int)m->schema->cols[f.column].name_len, m->schema->cols[f.column].name, f.why);
			return -1;
		}
		pq_schema_widen(m->schema, &f);
		if (pq_writer_rows(o->pw) > 0)
			return RESTART;
	}
}

static int cmp_item(const void *a, const void *b, void *arg)
{
	const struct item *x = a, *y = b;
	const struct entry *e = arg;
	unsigned long nx = e[x->e].node, ny = e[y->e].node;

	if (nx != ny)
		return nx < ny ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static long node_rows_limit(void)
{
	return util_env_long("DATASPOC_PIPE_MERGE_ROWS", 1, 1L << 40, DEFAULT_NODE_ROWS);
}

/*
 * Node t: its file's rows the run does not touch, then the run's last
 * version of each key in it (items[from..to)), into 2^k files of the
 * nodes below it.  0, RESTART, -1.
 */
static int merge_node_once(struct stream_merge *m, unsigned long t, const char *oldkey, size_t from, size_t to,
			   struct out **outs, size_t *nouts, unsigned long long *oldrows)
{
	struct reader r;
	unsigned long long est = to - from;
	unsigned k = 0, d = node_depth(t);
	long limit = node_rows_limit();
	size_t i;
	int ret = -1, x;

	memset(&r, 0, sizeof(r));
	*oldrows = 0;
	if (oldkey) {
		if (reader_open(m->b, oldkey, m->names, m->nnames, m->extra, &r) != 0)
			goto out;
		*oldrows = pq_read_rows(r.f);
		est += *oldrows;
	}
	while (d + k < MAX_DEPTH && (est >> k) > (unsigned long long)limit)
		k++;
	*nouts = (size_t)1 << k;
	*outs = xcalloc(*nouts, sizeof(**outs));
	/* a key's node below t is merge_node(h, d + k): t, then k more bits of the path */
	if (oldkey) {
		const char *missing;
		int deleted;

		for (;;) {
			int n = pq_read_next_row(r.f);
			struct entry *e;
			unsigned long long h;
			struct out *o;

			if (n < 0)
				goto out;
			if (n == 0)
				break;
			if (reader_row(&r, m->names, m->nnames, &missing, &deleted) != 0)
				goto out;
			if (missing) {
				err_msg("'%s': a row without its key property '%s'", oldkey, missing);
				goto out;
			}
			h = merge_hash(r.key.buf, r.key.len);
			e = keymap_find(&m->map, r.key.buf, r.key.len, h, 0);
			if (e)
				continue;	/* the run sends it again, or deletes it */
			o = &(*outs)[merge_node(h, d + k) & ((1UL << k) - 1)];
			o->node = merge_node(h, d + k);
			if ((x = out_add(m, o, r.rec.buf, r.rec.len)) != 0) {
				ret = x;
				goto out;
			}
		}
	}
	for (i = from; i < to; i++) {
		const struct item *it = &m->items[i];
		const struct entry *e = &m->map.e[it->e];
		struct out *o = &(*outs)[merge_node(e->hash, d + k) & ((1UL << k) - 1)];

		o->node = merge_node(e->hash, d + k);
		sb_reset(&m->buf);
		sb_grow(&m->buf, it->len);
		if (fseeko(m->spill, (off_t)it->off, SEEK_SET) != 0 ||
		    fread(m->buf.buf, 1, it->len, m->spill) != it->len) {
			err_msg("cannot read the spill file:");
			goto out;
		}
		m->buf.len = it->len;
		if ((x = out_add(m, o, m->buf.buf, m->buf.len)) != 0) {
			ret = x;
			goto out;
		}
	}
	ret = 0;
out:
	reader_free(&r);
	return ret;
}

static int merge_one_node(struct stream_merge *m, unsigned long t, const char *oldkey, size_t from, size_t to)
{
	struct out *outs = NULL;
	size_t nouts = 0, i;
	unsigned long long oldrows = 0;
	int r;

	for (;;) {
		r = merge_node_once(m, t, oldkey, from, to, &outs, &nouts, &oldrows);
		if (r != RESTART)
			break;
		outs_abort(outs, nouts);
		free(outs);
		outs = NULL;
	}
	if (r != 0)
		goto fail;
	for (i = 0; i < nouts; i++) {
		struct out *o = &outs[i];
		struct plan_file *f;
		uint64_t size = 0;
		int c;

		if (o->pw == NULL)
			continue;	/* no row: no file (the node is free, see node_of()) */
		c = pq_writer_close(o->pw, &size);
		o->pw = NULL;
		if (c != 0)
			goto fail;
		m->files = xrealloc(m->files, (m->nfiles + 1) * sizeof(*m->files));
		f = &m->files[m->nfiles++];
		memset(f, 0, sizeof(*f));
		f->stream = xstrdup(m->s->name);
		f->staged = o->staged;
		f->final = o->final;
		o->staged = o->final = NULL;
		f->records = o->rows;
		f->bytes = size;
		f->unit = 1;
		m->written += o->rows;
	}
	if (oldkey) {
		struct plan_replace *rp;

		m->p->replaced = xrealloc(m->p->replaced, (m->p->nreplaced + 1) * sizeof(*m->p->replaced));
		rp = &m->p->replaced[m->p->nreplaced++];
		rp->stream = xstrdup(m->s->name);
		rp->key = xstrdup(oldkey);
		rp->rows = oldrows;
		rp->unit = 1;
		m->replaced_rows += oldrows;
	}
	outs_abort(outs, nouts);
	free(outs);
	return 0;
fail:
	outs_abort(outs, nouts);
	free(outs);
	return -1;
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

/* ---- one stream ---- */

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

/* Read the run's records of the stream: the keys, their last versions spilled. */
static int read_run(struct stream_merge *m)
{
	struct reader r;
	unsigned long long seq = 0;
	size_t i;
	long long off = 0;
	int ret = -1;

	memset(&r, 0, sizeof(r));
	for (i = 0; i < m->p->nfiles; i++) {
		const struct plan_file *f = &m->p->files[i];

		if (strcmp(f->stream, m->s->name) != 0)
			continue;
		if (reader_open(m->b, f->staged, m->names, m->nnames, m->extra, &r) != 0)
			goto out;
		for (;;) {
			const char *missing;
			int deleted, n = pq_read_next_row(r.f);
			struct entry *e;
			struct item *it;
			unsigned long long h;

			if (n < 0)
				goto out;
			if (n == 0)
				break;
			seq++;
			if (reader_row(&r, m->names, m->nnames, &missing, &deleted) != 0)
				goto out;
			if (missing) {
				err_msg("stream '%s': record %llu has no key property '%s' (missing or null): "
					"an upsert needs every record's key; nothing committed", m->s->name, seq,
					missing);
				goto out;
			}
			h = merge_hash(r.key.buf, r.key.len);
			if (m->q && merge_node(h, m->q) != m->part)
				continue;	/* another pass's */
			e = keymap_find(&m->map, r.key.buf, r.key.len, h, 1);
			e->last = seq;
			e->deleted = deleted;
			if (deleted && m->hard_delete)
				continue;
			if (fwrite(r.rec.buf, 1, r.rec.len, m->spill) != r.rec.len) {
				err_msg("cannot write the spill file:");
				goto out;
			}
			m->items = xrealloc(m->items, (m->nitems + 1) * sizeof(*m->items));
			it = &m->items[m->nitems++];
			it->e = (size_t)(e - m->map.e);
			it->seq = seq;
			it->off = off;
			it->len = r.rec.len;
			off += (long long)r.rec.len;
		}
		reader_close(&r);
	}
	if (fflush(m->spill) != 0) {
		err_msg("cannot write the spill file:");
		goto out;
	}
	ret = 0;
out:
	reader_free(&r);
	return ret;
}

static int merge_stream(struct bucket *b, const struct pipe_config *cfg, struct plan *p, size_t si,
			int hard_delete, const char *cfg_keys)
{
	struct plan_stream *s = &p->streams[si];
	struct stream_merge m;
	struct table_info ti;
	struct sb why = SB_INIT;
	char **list = NULL, **text = NULL, *prefix = NULL;
	size_t nlist = 0, i, j, legacy = 0, from;
	unsigned long pass;
	int ret = -1, rebuild;
	const char *keys = s->key_properties && strcmp(s->key_properties, "[]") != 0 ? s->key_properties : cfg_keys;

	memset(&m, 0, sizeof(m));
	memset(&ti, 0, sizeof(ti));
	m.b = b;
	m.cfg = cfg;
	m.p = p;
	m.s = s;
	m.hard_delete = hard_delete;
	if (parse_names(keys, &m.names, &m.nnames) != 0) {
		err_msg("stream '%s' has no key: its SCHEMA sends no key_properties; set "
			"destination.key_properties (or destination.streams.%s.key_properties) for load_method upsert",
			s->name, s->name);
		goto out;
	}
	if (table_info(b, s->dir, &ti) != 0)
		goto out;
	rebuild = p->full || (s->activated && ti.version && strcmp(ti.version, s->activated) != 0);
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
	/* the table's files */
	prefix = xasprintf("%s/", s->dir);
	if (bucket_list(b, prefix, &list, &nlist) != 0)
		goto out;
	for (i = 0; i < nlist; i++) {
		unsigned long n = layout_node_of(list[i]);
		int ours = 0;

		for (j = 0; j < p->nfiles && !ours; j++)
			ours = strcmp(p->files[j].final, list[i]) == 0;
		if (ours || !data_file(list[i]))
			continue;
		if (rebuild) {
			struct plan_replace *rp;

			p->replaced = xrealloc(p->replaced, (p->nreplaced + 1) * sizeof(*p->replaced));
			rp = &p->replaced[p->nreplaced++];
			rp->stream = xstrdup(s->name);
			rp->key = xstrdup(list[i]);
			rp->rows = 0;
			rp->unit = 1;
			continue;
		}
		if (n == 0 || has(m.cover.nodes, m.cover.n, n)) {
			legacy++;
			continue;
		}
		m.cover.nodes = xrealloc(m.cover.nodes, (m.cover.n + 1) * sizeof(*m.cover.nodes));
		m.cover.keys = xrealloc(m.cover.keys, (m.cover.n + 1) * sizeof(*m.cover.keys));
		/* kept sorted by insertion */
		for (j = m.cover.n; j > 0 && m.cover.nodes[j - 1] > n; j--) {
			m.cover.nodes[j] = m.cover.nodes[j - 1];
			m.cover.keys[j] = m.cover.keys[j - 1];
		}
		m.cover.nodes[j] = n;
		m.cover.keys[j] = xstrdup(list[i]);
		m.cover.n++;
	}
	if (legacy) {
		err_msg("stream '%s': its table '%s' holds %zu file(s) that are not merged by key (landed "
			"append-only, or by hand): run once with --full to rebuild it as an upsert table",
			s->name, s->dir, legacy);
		goto out;
	}
	cover_inner(&m.cover);

	/* the stream's columns, as pipe-sink wrote them */
	text = text_patterns(cfg, s->name);
	m.schema = pq_schema_new(s->schema ? s->schema : "{}", s->schema ? strlen(s->schema) : 2, text);
	for (i = 0; i < m.schema->n; i++)
		if (m.schema->cols[i].extra)
			m.extra = m.schema->cols[i].name;
	if ((m.codec = pq_codec_new(cfg->compression, cfg->compression_level, 0)) == NULL)
		goto out;
	m.safe = layout_stream_folder(s->name, strlen(s->name), &why);
	if (m.safe == NULL) {
		err_msg("stream '%s': %s", s->name, why.buf);
		goto out;
	}
	snprintf(m.date, sizeof(m.date), "%.4s-%.2s-%.2s", p->run_id, p->run_id + 4, p->run_id + 6);
	if ((m.spill = spill_file()) == NULL) {
		err_msg("cannot make a spill file:");
		goto out;
	}
	/*
	 * Passes: the run's keys are held at most DATASPOC_PIPE_MERGE_KEYS at a
	 * time (default 1,000,000), split by the subtrees of depth q, each read
	 * from the staged files in a pass of its own; q is no deeper than the
	 * table's shallowest file, so that every node falls in one pass.
	 */
	{
		unsigned long long records = 0;
		long per_pass = util_env_long("DATASPOC_PIPE_MERGE_KEYS", 1, 1L << 40, 1000000);
		unsigned qmax = 16;

		for (i = 0; i < p->nfiles; i++)
			if (strcmp(p->files[i].stream, s->name) == 0)
				records += p->files[i].records;
		if (records == 0)
			records = s->records;	/* compact: the table's rows, as the manifest counts them */
		for (i = 0; i < m.cover.n; i++)
			if (node_depth(m.cover.nodes[i]) < qmax)
				qmax = node_depth(m.cover.nodes[i]);
		while (m.q < qmax && (records >> m.q) > (unsigned long long)per_pass)
			m.q++;
	}
	for (pass = 0; pass < 1UL << m.q; pass++) {
		m.part = 1UL << m.q | pass;
		if (pass > 0) {
			keymap_free(&m.map);
			m.nitems = 0;
			if (fflush(m.spill) != 0 || ftruncate(fileno(m.spill), 0) != 0 || fseeko(m.spill, 0, SEEK_SET) != 0) {
				err_msg("cannot empty the spill file:");
				goto out;
			}
		}
		if (read_run(&m) != 0)
			goto out;
		for (i = 0; i < m.map.n; i++) {
			m.map.e[i].node = node_of(&m.cover, m.map.e[i].hash);
			/* a node with no file above or below it: this pass's subtree, or under it */
			if (node_depth(m.map.e[i].node) < m.q)
				m.map.e[i].node = merge_node(m.map.e[i].hash, m.q);
		}
		/* the last version of each key, by node */
		j = 0;
		for (i = 0; i < m.nitems; i++)
			if (m.map.e[m.items[i].e].last == m.items[i].seq)
				m.items[j++] = m.items[i];
		m.nitems = j;
		if (m.nitems > 1)
			qsort_r(m.items, m.nitems, sizeof(*m.items), cmp_item, m.map.e);
		{
			/* every node a key falls in, deleted keys too */
			unsigned long *touched = xcalloc(m.map.n + 1, sizeof(*touched));
			size_t nt = 0;

			for (i = 0; i < m.map.n; i++)
				touched[nt++] = m.map.e[i].node;
			qsort(touched, nt, sizeof(*touched), cmp_ulong);
			from = 0;
			for (i = 0; i < nt; i++) {
				unsigned long t = touched[i];
				const char *old = NULL;
				size_t to = from;
				unsigned long *hit;

				if (i > 0 && touched[i - 1] == t)
					continue;
				while (from < m.nitems && m.map.e[m.items[from].e].node < t)
					from++;
				to = from;
				while (to < m.nitems && m.map.e[m.items[to].e].node == t)
					to++;
				hit = m.cover.n ? bsearch(&t, m.cover.nodes, m.cover.n, sizeof(*m.cover.nodes), cmp_ulong) : NULL;
				if (hit)
					old = m.cover.keys[hit - m.cover.nodes];
				if (merge_one_node(&m, t, old, from, to) != 0) {
					free(touched);
					goto out;
				}
				from = to;
			}
			free(touched);
		}
	}
	/* the plan: the stream's staged files give way to the merged ones */
	j = 0;
	for (i = 0; i < p->nfiles; i++) {
		if (strcmp(p->files[i].stream, s->name) == 0) {
			free(p->files[i].stream);
			free(p->files[i].staged);
			free(p->files[i].final);
			free(p->files[i].version);
			continue;
		}
		p->files[j++] = p->files[i];
	}
	p->files = xrealloc(p->files, (j + m.nfiles + 1) * sizeof(*p->files));
	for (i = 0; i < m.nfiles; i++)
		p->files[j++] = m.files[i];
	p->nfiles = j;
	m.nfiles = 0;
	{
		struct sb kp = SB_INIT, types = SB_INIT;

		json_quote_list(&kp, m.names, m.nnames);
		free(s->key_properties);
		s->key_properties = sb_detach(&kp);
		pq_schema_types_json(m.schema, &types);
		free(s->parquet_types);
		s->parquet_types = sb_detach(&types);
	}
	if (rebuild || (ti.load_method && strcmp(ti.load_method, "upsert") == 0 && ti.has_rows) ||
	    m.cover.n == 0) {
		unsigned long long before = rebuild || m.cover.n == 0 ? 0 : ti.rows;

		s->has_table_rows = 1;
		s->table_rows = before + m.written >= m.replaced_rows ? before + m.written - m.replaced_rows : 0;
	}
	ret = 0;
out:
	for (i = 0; i < m.nfiles; i++) {
		free(m.files[i].stream);
		free(m.files[i].staged);
		free(m.files[i].final);
	}
	free(m.files);
	if (m.spill)
		fclose(m.spill);
	free(m.items);
	keymap_free(&m.map);
	cover_free(&m.cover);
	pq_schema_free(m.schema);
	pq_codec_free(m.codec);
	util_strv_free(m.names);
	util_strv_free(text);
	util_strv_free(list);
	table_info_free(&ti);
	sb_free(&m.buf);
	sb_free(&why);
	free(m.safe);
	free(prefix);
	return ret;
}

/* The JSON Schema of a Parquet file's columns (the extra column left out), from its footer. */
static char *file_schema(struct bucket *b, const char *key)
{
	struct sb data = SB_INIT, out = SB_INIT;
	struct pq_read_file *f;
	size_t i, n;
	int first = 1;

	if (bucket_get(b, key, &data) != 0) {
		err_msg("cannot read '%s'", key);
		sb_free(&data);
		return NULL;
	}
	if ((f = pq_read_open(data.buf, data.len, key)) == NULL) {
		sb_free(&data);
		return NULL;
	}
	sb_adds(&out, "{\"type\":\"object\",\"properties\":{");
	n = pq_read_ncolumns(f);
	for (i = 0; i < n; i++) {
		const struct pq_read_column *c = pq_read_column(f, i);

		if (c->unsupported || (c->name_len >= 6 && c->name[c->name_len - 6] == '_' &&
				       memcmp(c->name + c->name_len - 5, "extra", 5) == 0 &&
				       strspn(c->name, "_") == c->name_len - 5))
			continue;
		if (!first)
			sb_addc(&out, ',');
		first = 0;
		json_quote(&out, c->name, c->name_len);
		sb_addc(&out, ':');
		pq_read_schema_json(c, &out);
	}
	sb_adds(&out, "}}");
	pq_read_free(f);
	sb_free(&data);
	return sb_detach(&out);
}

/* Add to p the stream of table t (a manifest table of the pipeline) and its files. */
static int compact_table(struct bucket *b, jv t, struct plan *p)
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
		/* the rows it reads: how many keys the merge may hold, for its passes */
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
			ret = compact_table(b, t, p);
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
