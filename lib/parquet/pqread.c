/*
 * pqread: a Parquet reader (see pqread.h).  The footer is parsed into
 * columns and chunks; each selected column then has a cursor that walks its
 * chunks, row group after row group, one page at a time.
 */
#include "pqread.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "err.h"
#include "format.h"
#include "json.h"
#include "sb.h"
#include "util.h"

#define TR_DEPTH 32

/* ---- the Thrift compact protocol, read ---- */

struct tr {
	const unsigned char *p, *end;
	int bad;
	int depth;
};

static unsigned tr_byte(struct tr *t)
{
	if (t->p >= t->end) {
		t->bad = 1;
		return 0;
	}
	return *t->p++;
}

static uint64_t tr_varint(struct tr *t)
{
	uint64_t v = 0;
	int shift = 0;
	unsigned b;

	do {
		b = tr_byte(t);
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (shift > 70) {
			t->bad = 1;
			return 0;
		}
	} while ((b & 0x80) && !t->bad);
	return v;
}

static int64_t tr_zigzag(struct tr *t)
{
	uint64_t u = tr_varint(t);

	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

static const unsigned char *tr_binary(struct tr *t, size_t *len)
{
	uint64_t n = tr_varint(t);
	const unsigned char *p = t->p;

	if (t->bad || n > (uint64_t)(t->end - t->p)) {
		t->bad = 1;
		*len = 0;
		return NULL;
	}
	t->p += n;
	*len = (size_t)n;
	return p;
}

/* A field header: 1 with *id and *type, 0 at the struct's stop byte (or an error). */
static int tr_field(struct tr *t, int16_t *last, int16_t *id, int *type)
{
	unsigned b = tr_byte(t);

	if (t->bad || b == 0)
		return 0;
	*type = (int)(b & 15);
	if (b >> 4)
		*id = (int16_t)(*last + (int16_t)(b >> 4));
	else
		*id = (int16_t)tr_zigzag(t);
	*last = *id;
	return !t->bad;
}

static void tr_list(struct tr *t, int *etype, uint64_t *n)
{
	unsigned b = tr_byte(t);

	*etype = (int)(b & 15);
	*n = b >> 4;
	if (*n == 15)
		*n = tr_varint(t);
	/* Each element takes a byte at least: a longer list is a lie. */
	if (*n > (uint64_t)(t->end - t->p))
		t->bad = 1;
}

static void tr_skip(struct tr *t, int type);

static void tr_skip_struct(struct tr *t)
{
	int16_t last = 0, id;
	int type;

	if (++t->depth > TR_DEPTH) {
		t->bad = 1;
		return;
	}
	while (tr_field(t, &last, &id, &type))
		tr_skip(t, type);
	t->depth--;
}

static void tr_skip(struct tr *t, int type)
{
	uint64_t n, i;
	size_t len;
	int et, kt, vt;

	switch (type) {
	case PQ_T_TRUE:
	case PQ_T_FALSE:
		break;
	case PQ_T_BYTE:
		tr_byte(t);
		break;
	case PQ_T_I16:
	case PQ_T_I32:
	case PQ_T_I64:
		tr_varint(t);
		break;
	case PQ_T_DOUBLE:
		if (t->end - t->p < 8)
			t->bad = 1;
		else
			t->p += 8;
		break;
	case PQ_T_BINARY:
		tr_binary(t, &len);
		break;
	case PQ_T_LIST:
	case PQ_T_SET:
		tr_list(t, &et, &n);
		if (++t->depth > TR_DEPTH)
			t->bad = 1;
		for (i = 0; i < n && !t->bad; i++)
			tr_skip(t, et == PQ_T_TRUE || et == PQ_T_FALSE ? PQ_T_BYTE : et);
		t->depth--;
		break;
	case PQ_T_MAP:
		n = tr_varint(t);
		if (n == 0)
			break;
		vt = (int)tr_byte(t);
		kt = vt >> 4;
		vt &= 15;
		if (n > (uint64_t)(t->end - t->p) || ++t->depth > TR_DEPTH) {
			t->bad = 1;
			break;
		}
		for (i = 0; i < n && !t->bad; i++) {
			tr_skip(t, kt == PQ_T_TRUE || kt == PQ_T_FALSE ? PQ_T_BYTE : kt);
			tr_skip(t, vt == PQ_T_TRUE || vt == PQ_T_FALSE ? PQ_T_BYTE : vt);
		}
		t->depth--;
		break;
	case PQ_T_STRUCT:
		tr_skip_struct(t);
		break;
	default:
		t->bad = 1;
	}
}

/* An integer field of any integer type; another type is skipped (def). */
static int64_t tr_int(struct tr *t, int type, int64_t def)
{
	if (type == PQ_T_I16 || type == PQ_T_I32 || type == PQ_T_I64)
		return tr_zigzag(t);
	if (type == PQ_T_BYTE)
		return (int8_t)tr_byte(t);
	tr_skip(t, type);
	return def;
}

/* ---- the footer ---- */

struct chunk {
	int codec;
	int physical;
	int64_t values;
	uint64_t start, size;	/* the chunk's bytes in the file */
};

struct rowgroup {
	uint64_t rows;
	struct chunk *chunks;	/* one per leaf */
	size_t nchunks;
};

/* A SchemaElement, as far as it matters. */
struct elem {
	int type;		/* -1: absent (a group) */
	int type_length;
	int rep;
	const unsigned char *name;
	size_t name_len;
	int children;
	int converted;		/* -1: absent */
	int scale, precision;
	/* LogicalType: its union member's field id (0: absent) and details */
	int logical;
	int lt_scale, lt_precision;
	int lt_utc, lt_unit;	/* TIME, TIMESTAMP: unit 1 ms, 2 us, 3 ns */
	int lt_bits, lt_signed;	/* INTEGER */
};

struct vals {
	const unsigned char *fixed;	/* fixed-size: value k at fixed + k * width */
	size_t width;
	const unsigned char **ptr;	/* byte arrays */
	uint32_t *len;
	size_t cap;
	size_t n;
};

/* A selected column's reading. */
struct cursor {
	int on;
	size_t leaf;		/* its chunk in each row group */
	size_t rg;		/* the row group being read */
	const unsigned char *p, *end;	/* the chunk's bytes not yet read */
	int64_t chunk_left;	/* values of the chunk not yet in a page */
	struct sb dbuf;		/* the dictionary page, decompressed */
	struct sb dtmp;
	struct vals dict;
	int has_dict;
	struct sb pbuf;		/* the data page, decompressed */
	struct sb ptmp;		/* its values, decoded */
	uint32_t n, i;		/* values in the page (nulls too), the next one */
	uint8_t *def;		/* definition levels, or NULL: all defined */
	size_t defcap;
	uint32_t *idx;		/* dictionary indices, or NULL */
	size_t idxcap;
	int64_t *ints;		/* DELTA decoding's scratch */
	size_t intscap;
	struct vals pv;		/* the page's values (PLAIN form) */
	uint32_t k;		/* the next non-null value */
	/* the current value */
	int null;
	const unsigned char *vp;
	size_t vlen;
};

struct pq_read_file {
	const unsigned char *data;
	size_t len;
	char *name;
	uint64_t rows, row;
	struct pq_read_column *cols;
	size_t *leaf;		/* cols[i]'s first leaf */
	size_t ncols, nleaves;
	struct rowgroup *rgs;
	size_t nrgs;
	struct cursor *cur;
	int started;
	struct sb scratch;
	char *created_by;	/* the footer's created_by, or NULL */
};

static void vals_free(struct vals *v)
{
	free(v->ptr);
	free(v->len);
}

static int bad_file(const struct pq_read_file *f, const char *why)
{
	err_msg("cannot read '%s': %s", f->name, why);
	return -1;
}

static int bad_col(const struct pq_read_file *f, size_t ci, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad_col(const struct pq_read_file *f, size_t ci, const char *fmt, ...)
{
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	err_msg("cannot read '%s': column '%.*s': %s", f->name, (int)f->cols[ci].name_len,
		f->cols[ci].name, why);
	return -1;
}

static void read_time_unit(struct tr *t, int *unit)
{
	int16_t last = 0, id;
	int type;

	while (tr_field(t, &last, &id, &type)) {
		if (type == PQ_T_STRUCT && id >= 1 && id <= 3)
			*unit = id;
		tr_skip(t, type);
	}
}

static void read_logical(struct tr *t, struct elem *e)
{
	int16_t last = 0, id, l2, id2;
	int type, t2;

	while (tr_field(t, &last, &id, &type)) {
		if (type != PQ_T_STRUCT) {
			tr_skip(t, type);
			continue;
		}
		e->logical = id;
		l2 = 0;
		while (tr_field(t, &l2, &id2, &t2)) {
			if (id == 5 && id2 == 1)
				e->lt_scale = (int)tr_int(t, t2, 0);
			else if (id == 5 && id2 == 2)
				e->lt_precision = (int)tr_int(t, t2, 0);
			else if ((id == 7 || id == 8) && id2 == 1)
				e->lt_utc = t2 == PQ_T_TRUE;
			else if ((id == 7 || id == 8) && id2 == 2 && t2 == PQ_T_STRUCT)
				read_time_unit(t, &e->lt_unit);
			else if (id == 10 && id2 == 1)
				e->lt_bits = (int)tr_int(t, t2, 0);
			else if (id == 10 && id2 == 2)
				e->lt_signed = t2 == PQ_T_TRUE;
			else
				tr_skip(t, t2);
		}
	}
}

static void read_elem(struct tr *t, struct elem *e)
{
	int16_t last = 0, id;
	int type;

	memset(e, 0, sizeof(*e));
	e->type = -1;
	e->converted = -1;
	e->lt_signed = 1;
	while (tr_field(t, &last, &id, &type)) {
		switch (id) {
		case 1: e->type = (int)tr_int(t, type, -1); break;
		case 2: e->type_length = (int)tr_int(t, type, 0); break;
		case 3: e->rep = (int)tr_int(t, type, 0); break;
		case 4:
			if (type == PQ_T_BINARY)
				e->name = tr_binary(t, &e->name_len);
			else
				tr_skip(t, type);
			break;
		case 5: e->children = (int)tr_int(t, type, 0); break;
		case 6: e->converted = (int)tr_int(t, type, -1); break;
		case 7: e->scale = (int)tr_int(t, type, 0); break;
		case 8: e->precision = (int)tr_int(t, type, 0); break;
		case 10:
			if (type == PQ_T_STRUCT)
				read_logical(t, e);
			else
				tr_skip(t, type);
			break;
		default: tr_skip(t, type);
		}
	}
}

static void read_colmeta(struct tr *t, struct chunk *c)
{
	int16_t last = 0, id;
	int type;
	int64_t data = -1, dict = -1;

	while (tr_field(t, &last, &id, &type)) {
		switch (id) {
		case 1: c->physical = (int)tr_int(t, type, -1); break;
		case 4: c->codec = (int)tr_int(t, type, -1); break;
		case 5: c->values = tr_int(t, type, -1); break;
		case 7: c->size = (uint64_t)tr_int(t, type, 0); break;
		case 9: data = tr_int(t, type, -1); break;
		case 11: dict = tr_int(t, type, -1); break;
		default: tr_skip(t, type);
		}
	}
	/* Some writers set dictionary_page_offset 0 for "none". */
	c->start = (uint64_t)(dict > 0 && dict < data ? dict : data);
}

static void read_chunk(struct tr *t, struct chunk *c)
{
	int16_t last = 0, id;
	int type;

	while (tr_field(t, &last, &id, &type)) {
		if (id == 3 && type == PQ_T_STRUCT)
			read_colmeta(t, c);
		else
			tr_skip(t, type);
	}
}

static void read_rowgroup(struct tr *t, struct rowgroup *g)
{
	int16_t last = 0, id;
	int type, et;
	uint64_t n, i;

	while (tr_field(t, &last, &id, &type)) {
		if (id == 1 && type == PQ_T_LIST) {
			tr_list(t, &et, &n);
			if (t->bad || et != PQ_T_STRUCT || g->chunks) {
				t->bad = 1;
				return;
			}
			g->chunks = xcalloc(n ? n : 1, sizeof(*g->chunks));
			g->nchunks = n;
			for (i = 0; i < n && !t->bad; i++) {
				g->chunks[i].values = -1;
				g->chunks[i].codec = -1;
				read_chunk(t, &g->chunks[i]);
			}
		} else if (id == 3)
			g->rows = (uint64_t)tr_int(t, type, 0);
		else
			tr_skip(t, type);
	}
}

static const char *unit_ok(int unit)
{
	return unit >= 1 && unit <= 3 ? NULL : "a time unit it does not know";
}

/* A top-level leaf's kind, or why it cannot be read. */
static const char *leaf_kind(const struct elem *e, struct pq_read_column *c)
{
	int ct = e->converted, lt = e->logical;

	c->physical = e->type;
	c->type_length = e->type_length;
	c->kind = PQ_READ_BINARY;
	if (e->rep == PQ_REP_REPEATED)
		return "a repeated field (a list)";
	if (lt == 5 || ct == PQ_CT_DECIMAL) {
		c->kind = PQ_READ_DECIMAL;
		c->scale = lt == 5 ? e->lt_scale : e->scale;
		c->precision = lt == 5 ? e->lt_precision : e->precision;
		if (c->scale < 0 || c->scale > 1000)
			return "a DECIMAL scale out of range";
		if (e->type != PQ_TYPE_INT32 && e->type != PQ_TYPE_INT64 && e->type != PQ_TYPE_FLBA &&
		    e->type != PQ_TYPE_BYTE_ARRAY)
			return "DECIMAL on a physical type that cannot hold one";
		return NULL;
	}
	switch (e->type) {
	case PQ_TYPE_BOOLEAN:
		c->kind = PQ_READ_BOOL;
		return NULL;
	case PQ_TYPE_INT32:
	case PQ_TYPE_INT64:
		c->kind = PQ_READ_INT;
		if (lt == 6 || ct == PQ_CT_DATE) {
			c->kind = PQ_READ_DATE;
			return e->type == PQ_TYPE_INT32 ? NULL : "DATE on INT64";
		}
		if (lt == 7 || ct == PQ_CT_TIME_MILLIS || ct == PQ_CT_TIME_MICROS) {
			c->kind = PQ_READ_TIME;
			c->utc = lt == 7 ? e->lt_utc : 1;
			c->unit = lt == 7 ? e->lt_unit : ct == PQ_CT_TIME_MILLIS ? 1 : 2;
			c->unit *= 3;
			return unit_ok(c->unit / 3);
		}
		if (lt == 8 || ct == PQ_CT_TIMESTAMP_MILLIS || ct == PQ_CT_TIMESTAMP_MICROS) {
			c->kind = PQ_READ_TIMESTAMP;
			c->utc = lt == 8 ? e->lt_utc : 1;
			c->unit = lt == 8 ? e->lt_unit : ct == PQ_CT_TIMESTAMP_MILLIS ? 1 : 2;
			c->unit *= 3;
			if (e->type != PQ_TYPE_INT64)
				return "TIMESTAMP on INT32";
			return unit_ok(c->unit / 3);
		}
		if ((lt == 10 && !e->lt_signed) || (ct >= PQ_CT_UINT_8 && ct <= PQ_CT_UINT_64))
			c->kind = PQ_READ_UINT;
		if (lt != 0 && lt != 10)
			return "a logical type it does not know on an integer";
		return NULL;
	case PQ_TYPE_INT96:
		c->kind = PQ_READ_INT96;
		return NULL;
	case PQ_TYPE_FLOAT:
		c->kind = PQ_READ_FLOAT;
		return NULL;
	case PQ_TYPE_DOUBLE:
		c->kind = PQ_READ_DOUBLE;
		return NULL;
	case PQ_TYPE_BYTE_ARRAY:
	case PQ_TYPE_FLBA:
		if (e->type == PQ_TYPE_FLBA && (e->type_length <= 0 || e->type_length > (1 << 20)))
			return "a FIXED_LEN_BYTE_ARRAY length out of range";
		if (lt == 14 && e->type == PQ_TYPE_FLBA && e->type_length == 16) {
			c->kind = PQ_READ_UUID;
			return NULL;
		}
		if (lt == 15)
			return "FLOAT16 is not supported";
		if (lt == 13 || ct == PQ_CT_BSON)
			return "BSON is not supported";
		if (ct == PQ_CT_INTERVAL)
			return "INTERVAL is not supported";
		if (e->type == PQ_TYPE_BYTE_ARRAY &&
		    (lt == 1 || lt == 4 || ct == PQ_CT_UTF8 || ct == PQ_CT_ENUM)) {
			c->kind = PQ_READ_STRING;
			return NULL;
		}
		if (e->type == PQ_TYPE_BYTE_ARRAY && (lt == 12 || ct == PQ_CT_JSON)) {
			c->kind = PQ_READ_JSON;
			return NULL;
		}
		if (lt != 0 && lt != 11)
			return "a logical type it does not know on a byte array";
		return NULL;
	default:
		return "a physical type it does not know";
	}
}

/* The name of a group's annotation, for its message. */
static const char *group_what(const struct elem *e)
{
	if (e->logical == 3 || e->converted == PQ_CT_LIST)
		return "nested column (LIST) is not supported";
	if (e->logical == 2 || e->converted == PQ_CT_MAP || e->converted == PQ_CT_MAP_KEY_VALUE)
		return "nested column (MAP) is not supported";
	return "nested column (STRUCT) is not supported";
}

/* Walk the subtree at elems[*i], counting its leaves into *leaves. */
static int count_leaves(const struct elem *el, size_t ne, size_t *i, size_t *leaves, int depth)
{
	const struct elem *e;
	int k;

	if (*i >= ne || depth > 64)
		return -1;
	e = &el[(*i)++];
	if (e->children <= 0) {
		if (e->type < 0)
			return -1;
		(*leaves)++;
		return 0;
	}
	for (k = 0; k < e->children; k++)
		if (count_leaves(el, ne, i, leaves, depth + 1) < 0)
			return -1;
	return 0;
}

static int read_footer(struct pq_read_file *f, const unsigned char *p, size_t n)
{
	struct tr t = { p, p + n, 0, 0 };
	struct elem *el = NULL;
	size_t ne = 0, i, j, leaves;
	int16_t last = 0, id;
	int type, et, rc = -1;
	uint64_t cnt, k;

	while (tr_field(&t, &last, &id, &type)) {
		if (id == 2 && type == PQ_T_LIST && el == NULL) {
			tr_list(&t, &et, &cnt);
			if (t.bad || et != PQ_T_STRUCT)
				break;
			el = xcalloc(cnt ? cnt : 1, sizeof(*el));
			for (k = 0; k < cnt && !t.bad; k++)
				read_elem(&t, &el[ne++]);
		} else if (id == 3)
			f->rows = (uint64_t)tr_int(&t, type, 0);
		else if (id == 6 && type == PQ_T_BINARY && f->created_by == NULL) {
			size_t blen;
			const unsigned char *b = tr_binary(&t, &blen);

			if (b != NULL)
				f->created_by = xstrndup((const char *)b, blen);
		}
		else if (id == 4 && type == PQ_T_LIST && f->rgs == NULL) {
			tr_list(&t, &et, &cnt);
			if (t.bad || et != PQ_T_STRUCT)
				break;
			f->rgs = xcalloc(cnt ? cnt : 1, sizeof(*f->rgs));
			for (k = 0; k < cnt && !t.bad; k++)
				read_rowgroup(&t, &f->rgs[f->nrgs++]);
		} else
			tr_skip(&t, type);
	}
	if (t.bad || el == NULL || ne == 0) {
		bad_file(f, "its footer is damaged (not Thrift FileMetaData)");
		goto out;
	}
	/* elem 0 is the root; its children are the columns. */
	f->cols = xcalloc(el[0].children > 0 ? (size_t)el[0].children : 1, sizeof(*f->cols));
	f->leaf = xcalloc(el[0].children > 0 ? (size_t)el[0].children : 1, sizeof(*f->leaf));
	i = 1;
	leaves = 0;
	for (j = 0; el[0].children > 0 && j < (size_t)el[0].children; j++) {
		const struct elem *e;
		struct pq_read_column *c = &f->cols[j];

		if (i >= ne) {
			bad_file(f, "its schema has fewer fields than it says");
			goto out;
		}
		e = &el[i];
		c->name = xstrndup(e->name ? (const char *)e->name : "", e->name_len);
		c->name_len = e->name_len;
		c->optional = e->rep != PQ_REP_REQUIRED;
		f->leaf[j] = leaves;
		f->ncols++;
		if (e->children > 0) {
			c->physical = -1;
			c->unsupported = group_what(e);
		} else
			c->unsupported = leaf_kind(e, c);
		if (count_leaves(el, ne, &i, &leaves, 0) < 0) {
			bad_file(f, "its schema is damaged");
			goto out;
		}
	}
	f->nleaves = leaves;
	if (i != ne) {
		bad_file(f, "its schema has more fields than its root holds");
		goto out;
	}
	for (k = 0; k < f->nrgs; k++) {
		struct rowgroup *g = &f->rgs[k];

		if (g->nchunks != leaves) {
			bad_file(f, "a row group's columns are not the schema's");
			goto out;
		}
		for (j = 0; j < g->nchunks; j++) {
			struct chunk *c = &g->chunks[j];

			if (c->values < 0 || c->start > f->len || c->size > f->len - c->start) {
				bad_file(f, "a column chunk lies outside the file");
				goto out;
			}
		}
	}
	rc = 0;
out:
	free(el);
	return rc;
}

struct pq_read_file *pq_read_open(const void *data, size_t len, const char *name)
{
	const unsigned char *d = data;
	struct pq_read_file *f = xcalloc(1, sizeof(*f));
	uint32_t flen;
	uint64_t sum = 0;
	size_t i;

	f->data = d;
	f->len = len;
	f->name = xstrdup(name);
	if (len < 12 || memcmp(d, "PAR1", 4) != 0 || memcmp(d + len - 4, "PAR1", 4) != 0) {
		if (len >= 4 && memcmp(d + len - 4, "PARE", 4) == 0)
			bad_file(f, "it is encrypted (not supported)");
		else
			bad_file(f, "not a Parquet file (no PAR1 at its start and end)");
		goto fail;
	}
	flen = (uint32_t)d[len - 8] | (uint32_t)d[len - 7] << 8 | (uint32_t)d[len - 6] << 16 |
	       (uint32_t)d[len - 5] << 24;
	if (flen > len - 12) {
		bad_file(f, "its footer length is beyond the file");
		goto fail;
	}
	if (read_footer(f, d + len - 8 - flen, flen) < 0)
		goto fail;
	for (i = 0; i < f->nrgs; i++)
		sum += f->rgs[i].rows;
	if (sum != f->rows) {
		bad_file(f, "its row groups do not add up to its rows");
		goto fail;
	}
	f->cur = xcalloc(f->ncols ? f->ncols : 1, sizeof(*f->cur));
	for (i = 0; i < f->ncols; i++) {
		f->cur[i].on = 1;
		f->cur[i].leaf = f->leaf[i];
	}
	return f;
fail:
	pq_read_free(f);
	return NULL;
}

void pq_read_free(struct pq_read_file *f)
{
	size_t i;

	if (f == NULL)
		return;
	for (i = 0; i < f->ncols; i++)
		free(f->cols[i].name);
	free(f->created_by);
	for (i = 0; f->cur && i < f->ncols; i++) {
		struct cursor *c = &f->cur[i];

		sb_free(&c->dbuf);
		sb_free(&c->dtmp);
		sb_free(&c->pbuf);
		sb_free(&c->ptmp);
		vals_free(&c->dict);
		vals_free(&c->pv);
		free(c->def);
		free(c->idx);
		free(c->ints);
	}
	for (i = 0; i < f->nrgs; i++)
		free(f->rgs[i].chunks);
	free(f->rgs);
	free(f->cols);
	free(f->leaf);
	free(f->cur);
	free(f->name);
	sb_free(&f->scratch);
	free(f);
}

uint64_t pq_read_rows(const struct pq_read_file *f)
{
	return f->rows;
}

const char *pq_read_created_by(const struct pq_read_file *f)
{
	return f->created_by ? f->created_by : "";
}

size_t pq_read_ncolumns(const struct pq_read_file *f)
{
	return f->ncols;
}

const struct pq_read_column *pq_read_column(const struct pq_read_file *f, size_t i)
{
	return &f->cols[i];
}

void pq_read_select(struct pq_read_file *f, size_t i, int on)
{
	f->cur[i].on = on;
}

/* ---- decoding ---- */

int pq_read_rle_decode(const unsigned char *p, size_t len, int bw, uint32_t *out, size_t n)
{
	const unsigned char *end = p + len;
	size_t got = 0, bytes = (size_t)(bw + 7) / 8;

	if (bw < 0 || bw > 32)
		return -1;
	while (got < n) {
		uint64_t h = 0;
		int shift = 0;
		unsigned b;

		do {
			if (p >= end || shift > 35)
				return -1;
			b = *p++;
			h |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while (b & 0x80);
		if ((h & 1) == 0) {
			uint64_t run = h >> 1;
			uint32_t v = 0;
			size_t i;

			if ((size_t)(end - p) < bytes)
				return -1;
			for (i = 0; i < bytes; i++)
				v |= (uint32_t)p[i] << (8 * i);
			p += bytes;
			if (bw < 32 && (v >> bw) != 0)
				return -1;
			if (run == 0)
				return -1;
			while (run-- > 0 && got < n)
				out[got++] = v;
		} else {
			uint64_t groups = h >> 1, vals = groups * 8, bits, i;
			uint64_t acc = 0;
			int have = 0;

			if (groups == 0)
				return -1;
			bits = vals * (uint64_t)bw;
			/* The last run may be cut short of its padding. */
			if ((uint64_t)(end - p) < (bits + 7) / 8) {
				uint64_t avail = (uint64_t)(end - p) * 8;

				if (bw == 0 || avail / (uint64_t)bw < n - got)
					return -1;
			}
			for (i = 0; i < vals && got < n; i++) {
				while (have < bw) {
					acc |= (uint64_t)*p++ << have;
					have += 8;
				}
				out[got++] = bw == 32 ? (uint32_t)acc :
					     (uint32_t)(acc & ((1u << bw) - 1));
				acc >>= bw;
				have -= bw;
			}
			if (got < n)
				continue;
		}
	}
	return 0;
}

static uint64_t rd_uvarint(const unsigned char **p, const unsigned char *end, int *bad)
{
	uint64_t v = 0;
	int shift = 0;
	unsigned b;

	do {
		if (*p >= end || shift > 63) {
			*bad = 1;
			return 0;
		}
		b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	return v;
}

int pq_read_delta_decode(const unsigned char *p, size_t len, int64_t *out, size_t max,
			 size_t *n, size_t *used)
{
	const unsigned char *start = p, *end = p + len;
	uint64_t block, nmini, total, perm, got = 0, u;
	int64_t last, minv;
	int bad = 0;
	size_t m;

	block = rd_uvarint(&p, end, &bad);
	nmini = rd_uvarint(&p, end, &bad);
	total = rd_uvarint(&p, end, &bad);
	u = rd_uvarint(&p, end, &bad);
	last = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
	if (bad || block == 0 || block % 128 || nmini == 0 || block % nmini ||
	    (block / nmini) % 32 || total > (uint64_t)SIZE_MAX / 8)
		return -1;
	perm = block / nmini;
	*n = (size_t)total;
	if (total > 0 && got < max)
		out[got] = last;
	if (total > 0)
		got = 1;
	while (got < total) {
		const unsigned char *widths;

		u = rd_uvarint(&p, end, &bad);
		minv = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
		if (bad || (uint64_t)(end - p) < nmini)
			return -1;
		widths = p;
		p += nmini;
		for (m = 0; m < nmini && got < total; m++) {
			int bw = widths[m];
			uint64_t i, acc = 0, want = perm;
			const unsigned char *mb_end;
			int have = 0;

			if (bw > 64)
				return -1;
			/* The last miniblock's padding may be missing. */
			if (total - got < want)
				want = total - got;
			if ((uint64_t)(end - p) < (want * (uint64_t)bw + 7) / 8)
				return -1;
			mb_end = (uint64_t)(end - p) < perm * (uint64_t)bw / 8 ? end :
				 p + perm * (uint64_t)bw / 8;
			for (i = 0; i < want; i++) {
				uint64_t v = 0;
				int filled = 0;

				while (filled < bw) {
					int take;

					if (have == 0) {
						acc = *p++;
						have = 8;
					}
					take = bw - filled < have ? bw - filled : have;
					v |= (acc & ((1u << take) - 1)) << filled;
					acc >>= take;
					have -= take;
					filled += take;
				}
				/* Wrapping arithmetic, as the encoding defines it. */
				last = (int64_t)((uint64_t)last + (uint64_t)minv + v);
				if (got < max)
					out[got] = last;
				got++;
			}
			p = mb_end;
		}
	}
	*used = (size_t)(p - start);
	return 0;
}

/* ---- pages ---- */

static int decompress(const struct pq_read_file *f, size_t ci, int codec, const unsigned char *src,
		      size_t n, size_t raw, struct sb *out)
{
	sb_reset(out);
	sb_grow(out, raw);
	switch (codec) {
	case PQ_CODEC_UNCOMPRESSED:
		if (n != raw)
			return bad_col(f, ci, "a page's sizes disagree");
		memcpy(out->buf, src, n);
		break;
	case PQ_CODEC_SNAPPY: {
		size_t len = 0;

		if (snappy_uncompressed_length((const char *)src, n, &len) != SNAPPY_OK || len != raw ||
		    snappy_uncompress((const char *)src, n, out->buf, &len) != SNAPPY_OK)
			return bad_col(f, ci, "a SNAPPY page does not decompress");
		break;
	}
	case PQ_CODEC_GZIP: {
		z_stream zs;
		int r;

		memset(&zs, 0, sizeof(zs));
		if (inflateInit2(&zs, 15 + 32) != Z_OK)
			return bad_col(f, ci, "zlib: cannot start");
		zs.next_in = (unsigned char *)(uintptr_t)src;
		zs.avail_in = (uInt)n;
		zs.next_out = (unsigned char *)out->buf;
		zs.avail_out = (uInt)raw;
		r = inflate(&zs, Z_FINISH);
		inflateEnd(&zs);
		if (r != Z_STREAM_END || zs.total_out != raw)
			return bad_col(f, ci, "a GZIP page does not decompress");
		break;
	}
	case PQ_CODEC_ZSTD: {
		size_t r = ZSTD_decompress(out->buf, raw, src, n);

		if (ZSTD_isError(r))
			return bad_col(f, ci, "a ZSTD page does not decompress: %s",
				       ZSTD_getErrorName(r));
		if (r != raw)
			return bad_col(f, ci, "a ZSTD page's sizes disagree");
		break;
	}
	case 3:
		return bad_col(f, ci, "codec LZO is not supported");
	case 4:
		return bad_col(f, ci, "codec BROTLI is not supported");
	case 5:
	case 7:
		return bad_col(f, ci, "codec LZ4 is not supported");
	default:
		return bad_col(f, ci, "codec %d is not supported", codec);
	}
	out->len = raw;
	out->buf[raw] = '\0';
	return 0;
}

static size_t phys_width(const struct pq_read_column *c)
{
	switch (c->physical) {
	case PQ_TYPE_INT32:
	case PQ_TYPE_FLOAT:
		return 4;
	case PQ_TYPE_INT64:
	case PQ_TYPE_DOUBLE:
		return 8;
	case PQ_TYPE_INT96:
		return 12;
	case PQ_TYPE_FLBA:
		return (size_t)c->type_length;
	case PQ_TYPE_BOOLEAN:
		return 1;	/* once expanded */
	default:
		return 0;
	}
}

static void vals_room(struct vals *v, size_t n)
{
	if (v->cap < n) {
		v->cap = n;
		v->ptr = xrealloc(v->ptr, n * sizeof(*v->ptr));
		v->len = xrealloc(v->len, n * sizeof(*v->len));
	}
}

static void ints_room(struct cursor *c, size_t n)
{
	if (c->intscap < n) {
		c->intscap = n;
		c->ints = xrealloc(c->ints, n * sizeof(*c->ints));
	}
}

/* PLAIN byte arrays: n of them, each a 4-byte length and its bytes. */
static int plain_arrays(const unsigned char *p, size_t len, size_t n, struct vals *v)
{
	const unsigned char *end = p + len;
	size_t i;

	vals_room(v, n ? n : 1);
	for (i = 0; i < n; i++) {
		uint32_t l;

		if (end - p < 4)
			return -1;
		l = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
		    (uint32_t)p[3] << 24;
		p += 4;
		if ((size_t)(end - p) < l)
			return -1;
		v->ptr[i] = p;
		v->len[i] = l;
		p += l;
	}
	v->n = n;
	v->fixed = NULL;
	return 0;
}

/*
 * Decode n values of encoding enc from p[0..len) into v (PLAIN form), with
 * tmp for what must be rebuilt.
 */
static int decode_values(const struct pq_read_file *f, size_t ci, struct cursor *c, int enc,
			 const unsigned char *p, size_t len, size_t n, struct vals *v,
			 struct sb *tmp)
{
	const struct pq_read_column *col = &f->cols[ci];
	size_t w = phys_width(col), i, cnt, used;
	int ba = col->physical == PQ_TYPE_BYTE_ARRAY;

	v->n = n;
	v->width = w;
	v->fixed = NULL;
	if (col->physical == PQ_TYPE_BOOLEAN) {
		sb_reset(tmp);
		sb_grow(tmp, n);
		if (enc == PQ_ENC_PLAIN) {
			if (len < (n + 7) / 8)
				return bad_col(f, ci, "a page holds fewer values than it says");
			for (i = 0; i < n; i++)
				tmp->buf[i] = (char)((p[i / 8] >> (i % 8)) & 1);
		} else if (enc == PQ_ENC_RLE) {
			uint32_t l, *u;
			int r = -1;

			if (len >= 4) {
				l = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				    (uint32_t)p[3] << 24;
				u = xmalloc((n ? n : 1) * sizeof(*u));
				if (l <= len - 4)
					r = pq_read_rle_decode(p + 4, l, 1, u, n);
				for (i = 0; r == 0 && i < n; i++)
					tmp->buf[i] = (char)u[i];
				free(u);
			}
			if (r < 0)
				return bad_col(f, ci, "a damaged RLE page");
		} else
			return bad_col(f, ci, "encoding %d is not supported for BOOLEAN", enc);
		tmp->len = n;
		v->fixed = (const unsigned char *)tmp->buf;
		return 0;
	}
	switch (enc) {
	case PQ_ENC_PLAIN:
		if (ba) {
			if (plain_arrays(p, len, n, v) < 0)
				return bad_col(f, ci, "a page holds fewer values than it says");
			return 0;
		}
		if (w == 0 || len / w < n)
			return bad_col(f, ci, "a page holds fewer values than it says");
		v->fixed = p;
		return 0;
	case PQ_ENC_BYTE_STREAM_SPLIT:
		if (ba || w == 0 || len / w < n)
			return bad_col(f, ci, "a damaged BYTE_STREAM_SPLIT page");
		sb_reset(tmp);
		sb_grow(tmp, n * w);
		for (i = 0; i < n; i++) {
			size_t b;

			for (b = 0; b < w; b++)
				tmp->buf[i * w + b] = (char)p[b * n + i];
		}
		tmp->len = n * w;
		v->fixed = (const unsigned char *)tmp->buf;
		return 0;
	case PQ_ENC_DELTA_BINARY_PACKED:
		if (col->physical != PQ_TYPE_INT32 && col->physical != PQ_TYPE_INT64)
			return bad_col(f, ci, "DELTA_BINARY_PACKED on a type that is not an integer");
		ints_room(c, n ? n : 1);
		if (pq_read_delta_decode(p, len, c->ints, n, &cnt, &used) < 0 || cnt < n)
			return bad_col(f, ci, "a damaged DELTA_BINARY_PACKED page");
		sb_reset(tmp);
		sb_grow(tmp, n * w);
		for (i = 0; i < n; i++) {
			uint64_t x = (uint64_t)c->ints[i];
			size_t b;

			for (b = 0; b < w; b++)
				tmp->buf[i * w + b] = (char)(x >> (8 * b));
		}
		tmp->len = n * w;
		v->fixed = (const unsigned char *)tmp->buf;
		return 0;
	case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
	case PQ_ENC_DELTA_BYTE_ARRAY: {
		size_t npre = 0, off, total;
		int64_t *pre = NULL;
		const unsigned char *q = p, *end = p + len;

		if (!ba)
			return bad_col(f, ci, "%s on a type that is not BYTE_ARRAY",
				       enc == PQ_ENC_DELTA_BYTE_ARRAY ? "DELTA_BYTE_ARRAY" :
				       "DELTA_LENGTH_BYTE_ARRAY");
		ints_room(c, 2 * (n ? n : 1));
		if (enc == PQ_ENC_DELTA_BYTE_ARRAY) {
			pre = c->ints + n;
			if (pq_read_delta_decode(q, len, pre, n, &npre, &used) < 0 || npre < n)
				return bad_col(f, ci, "a damaged DELTA_BYTE_ARRAY page");
			q += used;
		}
		if (pq_read_delta_decode(q, (size_t)(end - q), c->ints, n, &cnt, &used) < 0 || cnt < n)
			return bad_col(f, ci, "a damaged delta-length page");
		q += used;
		/* Suffixes back to back, after the lengths. */
		total = 0;
		for (i = 0; i < n; i++) {
			if (c->ints[i] < 0 || (uint64_t)c->ints[i] > (uint64_t)(end - q) - total)
				return bad_col(f, ci, "a damaged delta-length page");
			total += (size_t)c->ints[i];
		}
		vals_room(v, n ? n : 1);
		if (enc == PQ_ENC_DELTA_LENGTH_BYTE_ARRAY) {
			for (i = 0, off = 0; i < n; i++) {
				v->ptr[i] = q + off;
				v->len[i] = (uint32_t)c->ints[i];
				off += (size_t)c->ints[i];
			}
			return 0;
		}
		/* Rebuild each value from its predecessor's prefix and its suffix. */
		sb_reset(tmp);
		{
			size_t prev = 0, prevlen = 0, soff = 0;
			size_t *starts = xmalloc((n ? n : 1) * sizeof(*starts));

			for (i = 0; i < n; i++) {
				size_t pl = (size_t)pre[i], start = tmp->len;

				if (pre[i] < 0 || pl > prevlen) {
					free(starts);
					return bad_col(f, ci, "a damaged DELTA_BYTE_ARRAY page");
				}
				if (pl) {
					sb_grow(tmp, pl);
					memmove(tmp->buf + tmp->len, tmp->buf + prev, pl);
					tmp->len += pl;
				}
				sb_add(tmp, q + soff, (size_t)c->ints[i]);
				soff += (size_t)c->ints[i];
				starts[i] = start;
				prev = start;
				prevlen = tmp->len - start;
			}
			for (i = 0; i < n; i++) {
				size_t e = i + 1 < n ? starts[i + 1] : tmp->len;

				v->ptr[i] = (const unsigned char *)(tmp->buf ? tmp->buf : "") + starts[i];
				v->len[i] = (uint32_t)(e - starts[i]);
			}
			free(starts);
		}
		return 0;
	}
	case PQ_ENC_RLE:
		return bad_col(f, ci, "RLE on a type that is not BOOLEAN");
	default:
		return bad_col(f, ci, "encoding %d is not supported", enc);
	}
}

struct pagehdr {
	int type;
	int64_t raw, comp;
	int64_t nvalues, nnulls;
	int enc, def_enc;
	int64_t def_len, rep_len;
	int compressed;
};

static void read_dph(struct tr *t, struct pagehdr *h, int v2)
{
	int16_t last = 0, id;
	int type;

	while (tr_field(t, &last, &id, &type)) {
		if (id == 1)
			h->nvalues = tr_int(t, type, -1);
		else if (!v2 && id == 2)
			h->enc = (int)tr_int(t, type, -1);
		else if (!v2 && id == 3)
			h->def_enc = (int)tr_int(t, type, -1);
		else if (v2 && id == 2)
			h->nnulls = tr_int(t, type, -1);
		else if (v2 && id == 4)
			h->enc = (int)tr_int(t, type, -1);
		else if (v2 && id == 5)
			h->def_len = tr_int(t, type, -1);
		else if (v2 && id == 6)
			h->rep_len = tr_int(t, type, -1);
		else if (v2 && id == 7 && (type == PQ_T_TRUE || type == PQ_T_FALSE))
			h->compressed = type == PQ_T_TRUE;
		else
			tr_skip(t, type);
	}
}

static int read_pagehdr(struct cursor *c, struct pagehdr *h)
{
	struct tr t = { c->p, c->end, 0, 0 };
	int16_t last = 0, id;
	int type;

	memset(h, 0, sizeof(*h));
	h->type = -1;
	h->raw = h->comp = h->nvalues = -1;
	h->enc = -1;
	h->def_enc = PQ_ENC_RLE;
	h->compressed = 1;
	while (tr_field(&t, &last, &id, &type)) {
		if (id == 1)
			h->type = (int)tr_int(&t, type, -1);
		else if (id == 2)
			h->raw = tr_int(&t, type, -1);
		else if (id == 3)
			h->comp = tr_int(&t, type, -1);
		else if ((id == 5 || id == 7 || id == 8) && type == PQ_T_STRUCT)
			read_dph(&t, h, id == 8);
		else
			tr_skip(&t, type);
	}
	if (t.bad || h->raw < 0 || h->comp < 0 || h->comp > c->end - t.p)
		return -1;
	c->p = t.p;
	return 0;
}

/* Set the cursor on its chunk of row group c->rg. */
static void chunk_start(struct pq_read_file *f, struct cursor *c)
{
	const struct chunk *k = &f->rgs[c->rg].chunks[c->leaf];

	c->p = f->data + k->start;
	c->end = c->p + k->size;
	c->chunk_left = k->values;
	c->has_dict = 0;
}

/* Load the column's next data page.  0, or -1 after reporting. */
static int next_page(struct pq_read_file *f, size_t ci)
{
	struct cursor *c = &f->cur[ci];
	const struct pq_read_column *col = &f->cols[ci];
	const struct chunk *k;
	struct pagehdr h;
	const unsigned char *body, *vp;
	size_t vlen, nn, i;
	int maxdef = col->optional;

	for (;;) {
		while (c->chunk_left <= 0) {
			if (c->rg + 1 >= f->nrgs)
				return bad_col(f, ci, "the column holds fewer values than the file's rows");
			c->rg++;
			chunk_start(f, c);
		}
		k = &f->rgs[c->rg].chunks[c->leaf];
		if (k->physical != col->physical)
			return bad_col(f, ci, "a chunk's type is not the schema's");
		if (c->p >= c->end || read_pagehdr(c, &h) < 0)
			return bad_col(f, ci, "a damaged page header (row group %zu)", c->rg);
		body = c->p;
		c->p += h.comp;
		if (h.type == PQ_PAGE_DICTIONARY) {
			if (h.nvalues < 0 || h.nvalues > h.raw + 1)
				return bad_col(f, ci, "a damaged dictionary page");
			if (h.enc != PQ_ENC_PLAIN && h.enc != PQ_ENC_PLAIN_DICTIONARY && h.enc != -1)
				return bad_col(f, ci, "a dictionary page in encoding %d", h.enc);
			if (decompress(f, ci, k->codec, body, (size_t)h.comp, (size_t)h.raw, &c->dbuf) < 0)
				return -1;
			if (decode_values(f, ci, c, PQ_ENC_PLAIN, (const unsigned char *)c->dbuf.buf,
					  c->dbuf.len, (size_t)h.nvalues, &c->dict, &c->dtmp) < 0)
				return -1;
			c->has_dict = 1;
			continue;
		}
		if (h.type != PQ_PAGE_DATA && h.type != PQ_PAGE_DATA_V2)
			continue;	/* index pages and others: nothing to read */
		if (h.nvalues < 0 || h.nvalues > c->chunk_left || h.nvalues > UINT32_MAX)
			return bad_col(f, ci, "a page holds more values than its chunk");
		c->chunk_left -= h.nvalues;
		c->n = (uint32_t)h.nvalues;
		c->i = 0;
		c->k = 0;
		if (c->n == 0)
			continue;
		if (h.type == PQ_PAGE_DATA) {
			if (decompress(f, ci, k->codec, body, (size_t)h.comp, (size_t)h.raw, &c->pbuf) < 0)
				return -1;
			vp = (const unsigned char *)c->pbuf.buf;
			vlen = c->pbuf.len;
			if (maxdef) {
				uint32_t l;

				if (h.def_enc != PQ_ENC_RLE)
					return bad_col(f, ci, "definition levels in encoding %d are "
						       "not supported", h.def_enc);
				if (vlen < 4)
					return bad_col(f, ci, "a damaged page");
				l = (uint32_t)vp[0] | (uint32_t)vp[1] << 8 | (uint32_t)vp[2] << 16 |
				    (uint32_t)vp[3] << 24;
				if (l > vlen - 4)
					return bad_col(f, ci, "a damaged page");
				h.def_len = l;
				vp += 4;
				vlen -= 4;
			}
		} else {
			size_t lv;

			if (h.def_len < 0 || h.rep_len != 0 || h.def_len > h.comp ||
			    h.def_len > h.raw)
				return bad_col(f, ci, "a damaged page header (v2)");
			lv = (size_t)h.def_len;
			/* The levels are never compressed; the values maybe. */
			if (decompress(f, ci, h.compressed ? k->codec : PQ_CODEC_UNCOMPRESSED, body + lv,
				       (size_t)h.comp - lv, (size_t)h.raw - lv, &c->ptmp) < 0)
				return -1;
			sb_reset(&c->pbuf);
			sb_add(&c->pbuf, body, lv);
			sb_add(&c->pbuf, c->ptmp.buf, c->ptmp.len);
			vp = (const unsigned char *)c->pbuf.buf;
			vlen = c->pbuf.len;
		}
		nn = c->n;
		if (maxdef) {
			uint32_t *u;
			int r;

			if (c->defcap < c->n) {
				c->defcap = c->n;
				c->def = xrealloc(c->def, c->defcap);
			}
			u = xmalloc(c->n * sizeof(*u));
			r = pq_read_rle_decode(vp, (size_t)h.def_len, 1, u, c->n);
			nn = 0;
			for (i = 0; r == 0 && i < c->n; i++) {
				c->def[i] = (uint8_t)u[i];
				nn += u[i];
			}
			free(u);
			if (r < 0)
				return bad_col(f, ci, "damaged definition levels");
			vp += h.def_len;
			vlen -= (size_t)h.def_len;
		}
		if (h.enc == PQ_ENC_PLAIN_DICTIONARY || h.enc == PQ_ENC_RLE_DICTIONARY) {
			if (!c->has_dict)
				return bad_col(f, ci, "a dictionary-encoded page without a dictionary");
			if (c->idxcap < nn + 1) {
				c->idxcap = nn + 1;
				c->idx = xrealloc(c->idx, c->idxcap * sizeof(*c->idx));
			}
			if (nn > 0) {
				if (vlen < 1 || vp[0] > 32 ||
				    pq_read_rle_decode(vp + 1, vlen - 1, vp[0], c->idx, nn) < 0)
					return bad_col(f, ci, "damaged dictionary indices");
				for (i = 0; i < nn; i++)
					if (c->idx[i] >= c->dict.n)
						return bad_col(f, ci, "a dictionary index out of range");
			}
		} else {
			if (decode_values(f, ci, c, h.enc, vp, vlen, nn, &c->pv, &c->ptmp) < 0)
				return -1;
			if (c->idx) {
				free(c->idx);
				c->idx = NULL;
				c->idxcap = 0;
			}
		}
		c->null = 0;
		return 0;
	}
}

static int advance(struct pq_read_file *f, size_t ci)
{
	struct cursor *c = &f->cur[ci];
	const struct vals *v;
	size_t k;

	if (c->i >= c->n && next_page(f, ci) < 0)
		return -1;
	if (f->cols[ci].optional && c->def[c->i] == 0) {
		c->null = 1;
		c->i++;
		return 0;
	}
	c->i++;
	c->null = 0;
	k = c->k++;
	if (c->idx) {
		v = &c->dict;
		k = c->idx[k];
	} else
		v = &c->pv;
	if (v->fixed) {
		c->vp = v->fixed + k * v->width;
		c->vlen = v->width;
	} else {
		c->vp = v->ptr[k];
		c->vlen = v->len[k];
	}
	return 0;
}

int pq_read_next_row(struct pq_read_file *f)
{
	size_t i;

	if (!f->started) {
		f->started = 1;
		for (i = 0; i < f->ncols; i++) {
			if (!f->cur[i].on)
				continue;
			if (f->cols[i].unsupported)
				return bad_col(f, i, "%s", f->cols[i].unsupported);
			if (f->nrgs > 0)
				chunk_start(f, &f->cur[i]);
		}
	}
	if (f->row >= f->rows)
		return 0;
	for (i = 0; i < f->ncols; i++)
		if (f->cur[i].on && advance(f, i) < 0)
			return -1;
	f->row++;
	return 1;
}

/* ---- values as JSON ---- */

static uint64_t le(const unsigned char *p, size_t n)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void add_u64(struct sb *out, uint64_t v)
{
	char buf[24];
	int i = (int)sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	sb_add(out, buf + i, sizeof(buf) - (size_t)i);
}

static void add_i64(struct sb *out, int64_t v)
{
	if (v < 0) {
		sb_addc(out, '-');
		add_u64(out, (uint64_t)0 - (uint64_t)v);
	} else
		add_u64(out, (uint64_t)v);
}

/* Digits (with a '-') of a decimal's unscaled value, point placed by scale. */
static void place_point(const char *digits, size_t n, int neg, int scale, struct sb *out)
{
	size_t s = (size_t)scale;

	if (neg)
		sb_addc(out, '-');
	if (s == 0) {
		sb_add(out, digits, n);
		return;
	}
	if (n <= s) {
		sb_adds(out, "0.");
		while (n < s) {
			sb_addc(out, '0');
			s--;
		}
		sb_add(out, digits, n);
		return;
	}
	sb_add(out, digits, n - s);
	sb_addc(out, '.');
	sb_add(out, digits + n - s, s);
}

void pq_read_decimal_text(const unsigned char *p, size_t len, int scale, struct sb *out)
{
	unsigned char mag[256], *m = mag;
	char dig[700], *d;
	size_t i, n, start = 0, nd = 0;
	int neg = len > 0 && (p[0] & 0x80);

	n = len;
	if (n > sizeof(mag))
		m = xmalloc(n);
	/* The magnitude, big-endian. */
	for (i = 0; i < n; i++)
		m[i] = neg ? (unsigned char)~p[i] : p[i];
	if (neg) {
		for (i = n; i-- > 0;)
			if (++m[i] != 0)
				break;
	}
	d = n * 3 + 2 > sizeof(dig) ? xmalloc(n * 3 + 2) : dig;
	while (start < n && m[start] == 0)
		start++;
	while (start < n) {
		unsigned rem = 0;

		for (i = start; i < n; i++) {
			unsigned cur = rem * 256 + m[i];

			m[i] = (unsigned char)(cur / 10);
			rem = cur % 10;
		}
		d[nd++] = (char)('0' + rem);
		while (start < n && m[start] == 0)
			start++;
	}
	if (nd == 0)
		d[nd++] = '0';
	for (i = 0; i < nd / 2; i++) {
		char t = d[i];

		d[i] = d[nd - 1 - i];
		d[nd - 1 - i] = t;
	}
	place_point(d, nd, neg && !(nd == 1 && d[0] == '0'), scale, out);
	if (d != dig)
		free(d);
	if (m != mag)
		free(m);
}

static void int_decimal(int64_t v, int scale, struct sb *out)
{
	char buf[24];
	int i = (int)sizeof(buf);
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;

	do {
		buf[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	place_point(buf + i, sizeof(buf) - (size_t)i, v < 0, scale, out);
}

/* The shortest of %.{lo..hi}g that reads back as d; then ".0" if it looks like an integer. */
static void shortest(double d, int is_float, struct sb *out)
{
	char buf[40];
	int prec, lo = is_float ? 6 : 15, hi = is_float ? 9 : 17;

	if (isnan(d)) {
		sb_adds(out, "\"NaN\"");
		return;
	}
	if (isinf(d)) {
		sb_adds(out, d < 0 ? "\"-Infinity\"" : "\"Infinity\"");
		return;
	}
	/*
	 * A value with few decimals (most money, most measures) is m / 10^k
	 * for a small integer m: that text reads back as d exactly when the
	 * division, correctly rounded as strtod() rounds, gives d.  The
	 * smallest such k is the shortest text; printf() costs far more.
	 */
	if (!is_float && d != 0 && fabs(d) < 9007199254740992.0) {
		static const double p10[] = { 1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9 };
		int k;

		for (k = 0; k < 10; k++) {
			double m = nearbyint(d * p10[k]);

			if (fabs(m) >= 9007199254740992.0)
				break;
			if (m / p10[k] == d) {
				int_decimal((int64_t)m, k, out);
				if (k == 0)
					sb_adds(out, ".0");
				return;
			}
		}
	}
	for (prec = lo; prec <= hi; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (is_float ? strtof(buf, NULL) == (float)d : strtod(buf, NULL) == d)
			break;
	}
	sb_adds(out, buf);
	if (strpbrk(buf, ".en") == NULL)
		sb_adds(out, ".0");
}

void pq_read_double_text(double d, struct sb *out)
{
	shortest(d, 0, out);
}

/* Howard Hinnant's civil_from_days. */
static void civil(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era, yy;
	uint64_t doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (uint64_t)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	yy = (int64_t)yoe + era * 400;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yy + (*m <= 2);
}

/* n's last w decimal digits, zero-padded, at q. */
static void put_digits(char *q, uint64_t n, int w)
{
	while (w-- > 0) {
		q[w] = (char)('0' + n % 10);
		n /= 10;
	}
}

static void add_date(struct sb *out, int64_t days)
{
	int64_t y;
	unsigned m, d;
	char *q;

	civil(days, &y, &m, &d);
	if (y < 0 || y > 9999) {
		sb_addf(out, "%+05" PRId64 "-%02u-%02u", y, m, d);
		return;
	}
	/* By hand: printf was half of the time of a table with a date-time. */
	sb_grow(out, 10);
	q = out->buf + out->len;
	put_digits(q, (uint64_t)y, 4);
	q[4] = '-';
	put_digits(q + 5, m, 2);
	q[7] = '-';
	put_digits(q + 8, d, 2);
	out->len += 10;
	out->buf[out->len] = '\0';
}

void pq_read_date_text(int64_t days, struct sb *out)
{
	add_date(out, days);
}

/* floor division and its remainder */
static int64_t floordiv(int64_t a, int64_t b, int64_t *rem)
{
	int64_t q = a / b, r = a % b;

	if (r < 0) {
		r += b;
		q--;
	}
	*rem = r;
	return q;
}

static void add_clock(struct sb *out, int64_t secs_of_day, int64_t frac, int digits)
{
	char *q;
	size_t n = 8 + (frac != 0 ? 1 + (size_t)digits : 0);

	sb_grow(out, n);
	q = out->buf + out->len;
	put_digits(q, (uint64_t)(secs_of_day / 3600), 2);
	q[2] = ':';
	put_digits(q + 3, (uint64_t)(secs_of_day / 60 % 60), 2);
	q[5] = ':';
	put_digits(q + 6, (uint64_t)(secs_of_day % 60), 2);
	if (frac != 0) {
		q[8] = '.';
		put_digits(q + 9, (uint64_t)frac, digits);
	}
	out->len += n;
	out->buf[out->len] = '\0';
}

static int64_t pow10i(int n)
{
	int64_t p = 1;

	while (n-- > 0)
		p *= 10;
	return p;
}

static void add_timestamp(struct sb *out, int64_t v, int digits, int utc)
{
	int64_t per = pow10i(digits), frac, secs, sod;
	int64_t days;

	secs = floordiv(v, per, &frac);
	days = floordiv(secs, 86400, &sod);
	sb_addc(out, '"');
	add_date(out, days);
	sb_addc(out, 'T');
	add_clock(out, sod, frac, digits);
	if (utc)
		sb_addc(out, 'Z');
	sb_addc(out, '"');
}


static void add_base64(struct sb *out, const unsigned char *p, size_t n)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i;

	sb_addc(out, '"');
	for (i = 0; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], tab[v & 63] };

		sb_add(out, q, 4);
	}
	if (i < n) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0);
		char q[4] = { tab[v >> 18], tab[(v >> 12) & 63], i + 1 < n ? tab[(v >> 6) & 63] : '=',
			      '=' };

		sb_add(out, q, 4);
	}
	sb_addc(out, '"');
}

int pq_read_value_raw(struct pq_read_file *f, size_t ci, const unsigned char **p, size_t *n)
{
	const struct cursor *c = &f->cur[ci];

	if (c->null)
		return 1;
	*p = c->vp;
	*n = c->vlen;
	return 0;
}

int pq_read_value_json(struct pq_read_file *f, size_t ci, struct sb *out)
{
	const struct cursor *c = &f->cur[ci];
	const struct pq_read_column *col = &f->cols[ci];
	const unsigned char *p = c->vp;
	size_t n = c->vlen;
	int64_t v;

	if (c->null) {
		sb_adds(out, "null");
		return 0;
	}
	switch (col->kind) {
	case PQ_READ_INT:
		if (col->physical == PQ_TYPE_INT32)
			add_i64(out, (int32_t)(uint32_t)le(p, 4));
		else
			add_i64(out, (int64_t)le(p, 8));
		return 0;
	case PQ_READ_UINT:
		add_u64(out, le(p, col->physical == PQ_TYPE_INT32 ? 4 : 8));
		return 0;
	case PQ_READ_DECIMAL:
		if (col->physical == PQ_TYPE_INT32)
			int_decimal((int32_t)(uint32_t)le(p, 4), col->scale, out);
		else if (col->physical == PQ_TYPE_INT64)
			int_decimal((int64_t)le(p, 8), col->scale, out);
		else if (n == 0)
			return bad_col(f, ci, "an empty DECIMAL value");
		else
			pq_read_decimal_text(p, n, col->scale, out);
		return 0;
	case PQ_READ_FLOAT: {
		float x;
		uint32_t u = (uint32_t)le(p, 4);

		memcpy(&x, &u, 4);
		shortest(x, 1, out);
		return 0;
	}
	case PQ_READ_DOUBLE: {
		double x;
		uint64_t u = le(p, 8);

		memcpy(&x, &u, 8);
		shortest(x, 0, out);
		return 0;
	}
	case PQ_READ_BOOL:
		sb_adds(out, *p ? "true" : "false");
		return 0;
	case PQ_READ_STRING:
		if (!util_utf8_valid(p, n))
			return bad_col(f, ci, "row %" PRIu64 ": a string that is not UTF-8", f->row);
		json_quote(out, (const char *)p, n);
		return 0;
	case PQ_READ_JSON: {
		struct json_span sp;
		size_t pos;
		const char *why;

		if (json_validate((const char *)p, n, &sp, &pos, &why) < 0)
			return bad_col(f, ci, "row %" PRIu64 ": not JSON: %s at byte %zu", f->row,
				       why, pos);
		json_compact(&sp, out);
		return 0;
	}
	case PQ_READ_UUID:
		sb_addf(out, "\"%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			"%02x%02x%02x%02x%02x%02x\"", p[0], p[1], p[2], p[3], p[4], p[5], p[6],
			p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[14], p[15]);
		return 0;
	case PQ_READ_BINARY:
		add_base64(out, p, n);
		return 0;
	case PQ_READ_DATE:
		sb_addc(out, '"');
		add_date(out, (int32_t)(uint32_t)le(p, 4));
		sb_addc(out, '"');
		return 0;
	case PQ_READ_TIME: {
		int64_t per = pow10i(col->unit), frac, sod;

		v = col->physical == PQ_TYPE_INT32 ? (int32_t)(uint32_t)le(p, 4) : (int64_t)le(p, 8);
		sod = floordiv(v, per, &frac);
		if (v < 0 || sod >= 86400 + 1)
			return bad_col(f, ci, "row %" PRIu64 ": a TIME out of range", f->row);
		sb_addc(out, '"');
		add_clock(out, sod, frac, col->unit);
		if (col->utc)
			sb_addc(out, 'Z');
		sb_addc(out, '"');
		return 0;
	}
	case PQ_READ_TIMESTAMP:
		add_timestamp(out, (int64_t)le(p, 8), col->unit, col->utc);
		return 0;
	case PQ_READ_INT96: {
		/* nanoseconds of the day, then the Julian day */
		uint64_t ns = le(p, 8);
		int64_t jd = (int64_t)(uint32_t)le(p + 8, 4), days = jd - 2440588, secs, frac;

		if (ns >= 86400ULL * 1000000000ULL)
			return bad_col(f, ci, "row %" PRIu64 ": an INT96 timestamp out of range",
				       f->row);
		secs = (int64_t)(ns / 1000000000ULL);
		frac = (int64_t)(ns % 1000000000ULL);
		sb_addc(out, '"');
		add_date(out, days);
		sb_addc(out, 'T');
		add_clock(out, secs, frac, 9);
		sb_adds(out, "Z\"");
		return 0;
	}
	}
	return bad_col(f, ci, "internal error: unknown kind");
}

void pq_read_schema_json(const struct pq_read_column *c, struct sb *out)
{
	const char *type = "string", *extra = "";

	switch (c->kind) {
	case PQ_READ_INT:
	case PQ_READ_UINT:
		type = "integer";
		break;
	case PQ_READ_DECIMAL:
		type = c->scale == 0 ? "integer" : "number";
		break;
	case PQ_READ_FLOAT:
	case PQ_READ_DOUBLE:
		type = "number";
		break;
	case PQ_READ_BOOL:
		type = "boolean";
		break;
	case PQ_READ_JSON:
		sb_adds(out, "{}");
		return;
	case PQ_READ_UUID:
		extra = ",\"format\":\"uuid\"";
		break;
	case PQ_READ_BINARY:
		extra = ",\"contentEncoding\":\"base64\"";
		break;
	case PQ_READ_DATE:
		extra = ",\"format\":\"date\"";
		break;
	case PQ_READ_TIME:
		extra = c->utc ? ",\"format\":\"time\"" : "";
		break;
	case PQ_READ_TIMESTAMP:
		extra = c->utc ? ",\"format\":\"date-time\"" : "";
		break;
	case PQ_READ_INT96:
		extra = ",\"format\":\"date-time\"";
		break;
	case PQ_READ_STRING:
		break;
	}
	if (c->optional)
		sb_addf(out, "{\"type\":[\"null\",\"%s\"]%s}", type, extra);
	else
		sb_addf(out, "{\"type\":\"%s\"%s}", type, extra);
}

int pq_read_extra_name(const struct pq_read_column *c)
{
	return c->name_len >= 6 && memcmp(c->name + c->name_len - 5, "extra", 5) == 0 &&
	       strspn(c->name, "_") == c->name_len - 5;
}

size_t pq_read_file_schema(const struct pq_read_file *f, struct sb *out)
{
	size_t i, n = pq_read_ncolumns(f), bad = 0;
	int first = 1;

	sb_adds(out, "{\"type\":\"object\",\"properties\":{");
	for (i = 0; i < n; i++) {
		const struct pq_read_column *c = pq_read_column(f, i);

		if (c->unsupported) {
			bad++;
			continue;
		}
		if (pq_read_extra_name(c))
			continue;
		if (!first)
			sb_addc(out, ',');
		first = 0;
		json_quote(out, c->name, c->name_len);
		sb_addc(out, ':');
		pq_read_schema_json(c, out);
	}
	sb_adds(out, "}}");
	return bad;
}
