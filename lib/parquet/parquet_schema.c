/*
 * parquet_schema: a Parquet writer's columns, from a SCHEMA message's JSON
 * Schema (pq_schema_new()) or a stream's first record (pq_schema_infer()),
 * and their widening along the lattice of parquet.h.
 */
#include "parquet_impl.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "util.h"

const char *pq_kind_name(enum pq_kind k)
{
	switch (k) {
	case PQ_INT64: return "INT64";
	case PQ_DECIMAL: return "DECIMAL(38,0)";
	case PQ_DIGITS: return "STRING";
	case PQ_DOUBLE: return "DOUBLE";
	case PQ_BOOL: return "BOOLEAN";
	case PQ_STRING: return "STRING";
	case PQ_TIMESTAMP: return "TIMESTAMP(MICROS,UTC)";
	case PQ_DATE: return "DATE";
	case PQ_JSON: return "JSON";
	case PQ_TEXT: return "STRING";
	case PQ_NUMERIC: return "DECIMAL";
	case PQ_NUMTEXT: return "STRING";
	}
	return "?";
}

enum {
	TB_NULL = 1, TB_INT = 2, TB_NUM = 4, TB_BOOL = 8, TB_STR = 16, TB_OBJ = 32,
	TB_ARR = 64, TB_OTHER = 128
};

static unsigned type_bit(const struct json_span *t)
{
	static const struct { const char *name; unsigned bit; } names[] = {
		{ "null", TB_NULL }, { "integer", TB_INT }, { "number", TB_NUM },
		{ "boolean", TB_BOOL }, { "string", TB_STR }, { "object", TB_OBJ },
		{ "array", TB_ARR }
	};
	size_t i;

	if (t->type != JSON_STRING)
		return TB_OTHER;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (json_string_equal(t, names[i].name, 0))
			return names[i].bit;
	}
	return TB_OTHER;
}

/*
 * The kind of a property's schema.  *only_null: it allows nothing but null
 * (an anyOf alternative that only makes the others nullable).
 */
static enum pq_kind kind_of(const struct json_span *v, enum json_type *want, int *only_null, int depth)
{
	struct json_span t, el;
	unsigned mask = 0;
	size_t pos = 0;

	*want = JSON_NONE;
	*only_null = 0;
	if (v->type != JSON_OBJECT || depth > 8)
		return PQ_JSON;
	if (json_object_get(v, "type", &t) == 1) {
		if (t.type == JSON_ARRAY) {
			while (json_array_next(&t, &pos, &el))
				mask |= type_bit(&el);
		} else {
			mask = type_bit(&t);
		}
	} else if (json_object_get(v, "anyOf", &t) == 1 || json_object_get(v, "oneOf", &t) == 1) {
		/* One kind among the alternatives that are not just null, or JSON. */
		enum pq_kind k = PQ_JSON, one;
		enum json_type w = JSON_NONE, onew;
		int n = 0, alt_null;

		if (t.type != JSON_ARRAY)
			return PQ_JSON;
		while (json_array_next(&t, &pos, &el)) {
			one = kind_of(&el, &onew, &alt_null, depth + 1);
			if (alt_null)
				continue;
			if (n++ > 0 && (one != k || onew != w))
				return PQ_JSON;
			k = one;
			w = onew;
		}
		*want = w;
		*only_null = n == 0;
		return k;
	} else {
		return PQ_JSON;
	}
	if (mask == TB_NULL)
		*only_null = 1;
	mask &= ~(unsigned)TB_NULL;
	switch (mask) {
	case TB_INT:
		return PQ_INT64;
	case TB_NUM:
	case TB_NUM | TB_INT:
		return PQ_DOUBLE;
	case TB_BOOL:
		return PQ_BOOL;
	case TB_STR:
		if (json_object_get(v, "format", &t) == 1 && t.type == JSON_STRING) {
			if (json_string_equal(&t, "date-time", 0))
				return PQ_TIMESTAMP;
			if (json_string_equal(&t, "date", 0))
				return PQ_DATE;
		}
		return PQ_STRING;
	case TB_OBJ:
		*want = JSON_OBJECT;
		return PQ_JSON;
	case TB_ARR:
		*want = JSON_ARRAY;
		return PQ_JSON;
	default:
		return PQ_JSON;
	}
}

/*
 * 10^e for a JSON number span that is exactly a power of ten (1, 0.01,
 * 1e-10, 1E-38, 10000000000, 1e62): 1 with *e set, else 0.
 */
static int power_of_ten(const struct json_span *v, int *e)
{
	const char *p = v->p, *end = v->p + v->len, *one = NULL, *point = NULL;
	long x = 0;
	int neg = 0, exp;

	if (v->type != JSON_NUMBER || v->len == 0 || *p == '-')
		return 0;
	for (; p < end && *p != 'e' && *p != 'E'; p++) {
		if (*p == '.')
			point = p;
		else if (*p == '1' && one == NULL)
			one = p;
		else if (*p != '0')
			return 0;
	}
	if (one == NULL)
		return 0;
	/* the place of the 1: 10.00 is 10^1, 0.01 is 10^-2 */
	if (point == NULL)
		exp = (int)(p - one) - 1;
	else if (point > one)
		exp = (int)(point - one) - 1;
	else
		exp = -(int)(one - point);
	if (p < end) {
		p++;
		if (p < end && (*p == '-' || *p == '+'))
			neg = *p++ == '-';
		for (; p < end; p++) {
			if (*p < '0' || *p > '9' || x > 100000)
				return 0;
			x = x * 10 + (*p - '0');
		}
	}
	*e = exp + (neg ? -(int)x : (int)x);
	return 1;
}

/*
 * A number property that tap-postgres, pipelinewise-tap-postgres and
 * tap-mysql print for numeric(p,s)/decimal(p,s): multipleOf 10^-s (s >= 1),
 * and, when bounded, maximum 10^(p-s) (tap-mysql gives none: p is 38).
 * DECIMAL(p,s) when p <= 38: 1 with *prec and *scale set; -1 for an exact
 * decimal no DECIMAL(38) holds (an unconstrained numeric: multipleOf 1e-38,
 * maximum 1e62), 0 for any other number.
 */
static int numeric_of(const struct json_span *v, int *prec, int *scale)
{
	struct json_span m;
	int e, digits = -1;

	if (json_object_get(v, "multipleOf", &m) != 1 || !power_of_ten(&m, &e) || e >= 0)
		return 0;
	if (-e > 38)
		return -1;
	*scale = -e;
	if (json_object_get(v, "maximum", &m) == 1) {
		if (!power_of_ten(&m, &digits) || digits < 0)
			return 0;
		*prec = digits + *scale;
	} else {
		*prec = 38;
	}
	return *prec <= 38 && *prec >= *scale ? 1 : -1;
}

static void schema_index(struct pq_schema *s, size_t i)
{
	size_t j;

	if ((s->n + 1) * 2 > s->nslots) {
		size_t k, nslots = s->nslots ? s->nslots * 2 : 16;

		free(s->slots);
		s->slots = xcalloc(nslots, sizeof(*s->slots));
		s->nslots = nslots;
		for (k = 0; k < i; k++)
			schema_index(s, k);
	}
	j = util_hash_bytes(s->cols[i].name, s->cols[i].name_len) & (s->nslots - 1);
	while (s->slots[j])
		j = (j + 1) & (s->nslots - 1);
	s->slots[j] = i + 1;
}

static void add_column(struct pq_schema *s, char *name, size_t len, enum pq_kind k, enum json_type want)
{
	struct pq_column *c;
	struct sb q = SB_INIT;

	s->cols = xrealloc(s->cols, (s->n + 1) * sizeof(*s->cols));
	c = &s->cols[s->n];
	memset(c, 0, sizeof(*c));
	c->name = name;
	c->name_len = len;
	json_quote(&q, name, len);
	c->qname_len = q.len;
	c->qname = sb_detach(&q);
	c->kind = k;
	c->want = want;
	s->n++;
}

static int chosen_text(const char *name, char *const *text)
{
	for (; text && *text; text++) {
		if (fnmatch(*text, name, 0) == 0)
			return 1;
	}
	return 0;
}

struct pq_schema *pq_schema_new(const char *schema, size_t len, char *const *text)
{
	struct pq_schema *s = xcalloc(1, sizeof(*s));
	struct json_span obj, props, key, val;
	size_t errpos, pos = 0;
	const char *errmsg;
	struct sb name = SB_INIT;
	char *extra;
	size_t extra_len;

	if (json_validate(schema, len, &obj, &errpos, &errmsg) == 0 &&
	    json_object_get(&obj, "properties", &props) == 1 && props.type == JSON_OBJECT) {
		while (json_object_next(&props, &pos, &key, &val)) {
			enum json_type want;
			enum pq_kind k;
			int only_null;

			sb_reset(&name);
			json_string_decode(&key, &name);
			if (schema_find(s, name.buf ? name.buf : "", name.len) != SIZE_MAX)
				continue;
			int prec = 0, scale = 0;

			k = kind_of(&val, &want, &only_null, 0);
			if (k == PQ_DOUBLE) {
				int r = numeric_of(&val, &prec, &scale);

				k = r > 0 ? PQ_NUMERIC : r < 0 ? PQ_NUMTEXT : PQ_DOUBLE;
				if (r <= 0)
					prec = scale = 0;
			}
			if (chosen_text(name.buf ? name.buf : "", text)) {
				k = PQ_TEXT;
				want = JSON_NONE;
			}
			add_column(s, xstrndup(name.buf ? name.buf : "", name.len), name.len, k, want);
			s->cols[s->n - 1].precision = prec;
			s->cols[s->n - 1].scale = scale;
			schema_index(s, s->n - 1);
		}
	}
	sb_free(&name);
	/* The extra column: not in the name index, so no member lands in it by name. */
	extra = xstrdup("_extra");
	extra_len = strlen(extra);
	while (schema_find(s, extra, extra_len) != SIZE_MAX) {
		char *longer = xasprintf("_%s", extra);

		free(extra);
		extra = longer;
		extra_len++;
	}
	add_column(s, extra, extra_len, PQ_JSON, JSON_OBJECT);
	s->cols[s->n - 1].extra = 1;
	return s;
}

void pq_schema_free(struct pq_schema *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++) {
		free(s->cols[i].name);
		free(s->cols[i].qname);
	}
	free(s->cols);
	free(s->slots);
	free(s);
}

void pq_schema_types_json(const struct pq_schema *s, struct sb *out)
{
	size_t i;

	sb_addc(out, '{');
	for (i = 0; i < s->n; i++) {
		if (i)
			sb_addc(out, ',');
		sb_add(out, s->cols[i].qname, s->cols[i].qname_len);
		if (s->cols[i].kind == PQ_NUMERIC)
			sb_addf(out, ":\"DECIMAL(%d,%d)\"", s->cols[i].precision, s->cols[i].scale);
		else
			sb_addf(out, ":\"%s\"", pq_kind_name(s->cols[i].kind));
	}
	sb_addc(out, '}');
}

/* 1 when need (want) is above the column's type in the widening lattice of parquet.h. */
static int wider(const struct pq_column *c, enum pq_kind need, enum json_type want)
{
	if (c->extra)
		return 0;
	switch (need) {
	case PQ_DECIMAL:
	case PQ_DOUBLE:
		return c->kind == PQ_INT64;
	case PQ_DIGITS:
		return c->kind == PQ_INT64 || c->kind == PQ_DECIMAL;
	case PQ_TEXT:
		return c->kind != PQ_TEXT && c->kind != PQ_JSON;
	case PQ_JSON:
		return c->kind == PQ_JSON && c->want != JSON_NONE && want == JSON_NONE;
	default:
		return 0;
	}
}

void pq_schema_widen(struct pq_schema *s, const struct pq_fail *f)
{
	if (f->column < s->n && wider(&s->cols[f->column], f->need, f->want)) {
		s->cols[f->column].kind = f->need;
		s->cols[f->column].want = f->want;
	}
}

char *pq_schema_infer(const struct json_span *rec)
{
	struct sb out = SB_INIT;
	struct json_span key, val;
	size_t pos = 0;
	int first = 1;

	sb_adds(&out, "{\"type\":\"object\",\"properties\":{");
	while (rec->type == JSON_OBJECT && json_object_next(rec, &pos, &key, &val)) {
		const char *t = NULL;

		switch (val.type) {
		case JSON_NUMBER:
			t = integer_syntax(val.p, val.len) ? "integer" : "number";
			break;
		case JSON_STRING:
			t = "string";
			break;
		case JSON_TRUE:
		case JSON_FALSE:
			t = "boolean";
			break;
		case JSON_OBJECT:
			t = "object";
			break;
		case JSON_ARRAY:
			t = "array";
			break;
		default:
			break;	/* null: any type, a JSON column */
		}
		if (!first)
			sb_addc(&out, ',');
		first = 0;
		sb_add(&out, key.p, key.len);
		if (t)
			sb_addf(&out, ":{\"type\":[\"null\",\"%s\"]}", t);
		else
			sb_adds(&out, ":{}");
	}
	sb_adds(&out, "}}");
	return sb_detach(&out);
}
