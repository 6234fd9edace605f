/*
 * parquet: columns from a JSON Schema, values from a record's raw bytes,
 * pages, row groups and the footer (parquet-format's parquet.thrift).
 */
#include "parquet.h"

#include <float.h>
#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "err.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif
#define PQ_CREATED_BY "dataspoc-pipe version " PIPE_VERSION

/* parquet.thrift's enums. */
enum { TY_BOOLEAN = 0, TY_INT32 = 1, TY_INT64 = 2, TY_DOUBLE = 5, TY_BYTE_ARRAY = 6, TY_FLBA = 7 };
enum { CV_UTF8 = 0, CV_DECIMAL = 5, CV_DATE = 6, CV_TIMESTAMP_MICROS = 10, CV_JSON = 19 };
enum { ENC_PLAIN = 0, ENC_RLE = 3, ENC_RLE_DICTIONARY = 8 };
enum { CODEC_UNCOMPRESSED = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_ZSTD = 6 };
enum { REP_OPTIONAL = 1 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2 };

#define DEFAULT_PAGE_SIZE (1024 * 1024)
#define PAGE_ROWS_MAX (1u << 20)
/* A STRING column's dictionary, per row group; past this it falls back to PLAIN. */
#define DICT_MAX_BYTES (1024 * 1024)

/*
 * The hash of the name index and of the dictionaries: eight bytes at a
 * time (a dictionary hashes every STRING value).  Only its spread matters:
 * entries keep their order of arrival whatever the hash.
 */
static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	if (n > 0) {
		w = 0;
		memcpy(&w, p, n);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ULL;
	return h ^ (h >> 32);
}

/* ---- schema ---- */

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

static size_t schema_find(const struct pq_schema *s, const char *name, size_t len)
{
	size_t j;

	if (s->nslots == 0)
		return SIZE_MAX;
	j = hash_bytes(name, len) & (s->nslots - 1);
	while (s->slots[j]) {
		const struct pq_column *c = &s->cols[s->slots[j] - 1];

		if (c->name_len == len && memcmp(c->name, name, len) == 0)
			return s->slots[j] - 1;
		j = (j + 1) & (s->nslots - 1);
	}
	return SIZE_MAX;
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
	j = hash_bytes(s->cols[i].name, s->cols[i].name_len) & (s->nslots - 1);
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
			k = kind_of(&val, &want, &only_null, 0);
			if (chosen_text(name.buf ? name.buf : "", text)) {
				k = PQ_TEXT;
				want = JSON_NONE;
			}
			add_column(s, xstrndup(name.buf ? name.buf : "", name.len), name.len, k, want);
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

/* ---- values ---- */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* 1 when a JSON number's text is a plain integer (no fraction, no exponent). */
static int integer_syntax(const char *p, size_t n)
{
	size_t i;

	/* One pass: numbers are short, three memchr() calls cost more. */
	for (i = 0; i < n; i++) {
		if (p[i] == '.' || p[i] == 'e' || p[i] == 'E')
			return 0;
	}
	return 1;
}

/* Digits of a plain JSON integer, sign and leading zeros aside. */
static size_t integer_digits(const char *p, size_t n)
{
	size_t i = (n > 0 && p[0] == '-');

	while (i + 1 < n && p[i] == '0')
		i++;
	return n - i;
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

/* A plain JSON integer into int64: 0, or -1 when it is out of range. */
static int parse_int64(const char *p, size_t n, int64_t *out)
{
	int neg = p[0] == '-';
	size_t i = (size_t)neg;
	uint64_t u = 0;

	if (integer_digits(p, n) > 19)
		return -1;
	for (; i < n; i++)
		u = u * 10 + (uint64_t)(p[i] - '0');	/* 19 digits: no wrap */
	if (neg) {
		if (u > (uint64_t)INT64_MAX + 1)
			return -1;
		*out = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
	} else {
		if (u > (uint64_t)INT64_MAX)
			return -1;
		*out = (int64_t)u;
	}
	return 0;
}

/* A plain JSON integer of at most 38 digits into 16 big-endian two's complement bytes. */
static void parse_decimal(const char *p, size_t n, unsigned char out[16])
{
	uint32_t limb[4] = { 0, 0, 0, 0 };	/* little-endian limbs */
	int neg = p[0] == '-', k;
	size_t i;

	/* Nine digits at a time: limb * 10^9 + chunk still fits in 64 bits. */
	for (i = (size_t)neg; i < n;) {
		uint64_t carry = 0, scale = 1;
		size_t end = i + 9 < n ? i + 9 : n;

		for (; i < end; i++) {
			carry = carry * 10 + (uint64_t)(p[i] - '0');
			scale *= 10;
		}
		for (k = 0; k < 4; k++) {
			uint64_t x = (uint64_t)limb[k] * scale + carry;

			limb[k] = (uint32_t)x;
			carry = x >> 32;
		}
	}
	if (neg) {
		uint64_t carry = 1;

		for (k = 0; k < 4; k++) {
			uint64_t x = (uint64_t)(uint32_t)~limb[k] + carry;

			limb[k] = (uint32_t)x;
			carry = x >> 32;
		}
	}
	for (k = 0; k < 16; k++)
		out[k] = (unsigned char)(limb[3 - k / 4] >> (8 * (3 - k % 4)));
}

/*
 * A number's decimal value, normalized: sign, 0.D1...Dn x 10^exp with D1
 * and Dn not 0 (n 0: zero).  Only the first 17 digits are kept: a value
 * with more (n > 17) is no double's shortest form.
 */
struct decimal {
	int neg;
	size_t n;
	long long exp;
	char d[17];
};

#define EXP_CAP 1000000000000000LL

static void decimal_push(struct decimal *x, char c, size_t times)
{
	while (times--) {
		if (x->n < sizeof(x->d))
			x->d[x->n] = c;
		x->n++;
		if (x->n > sizeof(x->d)) {
			x->n += times;
			return;
		}
	}
}

/* A number's text (JSON, or printf's %g: "1.5e+20") into x. */
static void decimal_parse(const char *p, size_t len, struct decimal *x)
{
	const char *q = p, *end = p + len;
	long long point = 0, ex = 0;
	size_t zeros = 0;	/* zeros since the last other digit */
	int seen = 0, frac = 0, exp_neg = 0;

	x->neg = q < end && *q == '-';
	x->n = 0;
	q += x->neg;
	for (; q < end && (is_digit(*q) || *q == '.'); q++) {
		if (*q == '.') {
			frac = 1;
		} else if (!seen && *q == '0') {
			point -= frac;
		} else {
			seen = 1;
			point += !frac;
			if (*q == '0') {
				zeros++;
			} else {
				decimal_push(x, '0', zeros);
				decimal_push(x, *q, 1);
				zeros = 0;
			}
		}
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			exp_neg = *q++ == '-';
		for (; q < end && is_digit(*q); q++) {
			if (ex < EXP_CAP)
				ex = ex * 10 + (*q - '0');
		}
	}
	x->exp = point + (exp_neg ? -ex : ex);
}

/*
 * 1 when the decimal value of the number's text is that of d's shortest
 * form (the first of %.15g, %.16g, %.17g that reads back as d; below
 * DBL_MIN a subnormal has fewer digits, so from %.1g on): a reader shows
 * the number as it was written.  Then 1.50, 15e-1 and 1.5 are all exact.
 */
static int double_exact(const char *p, size_t n, double d)
{
	struct decimal a, b;
	char buf[40];
	int prec, len = 0;

	decimal_parse(p, n, &a);
	if (a.n > sizeof(a.d))
		return 0;
	for (prec = fabs(d) < DBL_MIN ? 1 : DBL_DIG; prec <= 17; prec++) {
		len = snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	decimal_parse(buf, (size_t)len, &b);
	return a.neg == b.neg && a.n == b.n && (a.n == 0 || (a.exp == b.exp && memcmp(a.d, b.d, a.n) == 0));
}

static const double pow10_exact[] = {
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22
};

/* parse_double(): the double does not read back as the number written. */
#define INEXACT 1

/*
 * A JSON number into a double, correctly rounded: Clinger's fast path when
 * the digits and the power of ten are both exact doubles, else strtod().
 * 0 when the double reads back as the same decimal value (double_exact();
 * at most DBL_DIG digits on the fast path always do, unchecked); INEXACT
 * when it does not; -1 when the value is beyond the range of a double
 * (infinite, or a value that is not zero underflowing to zero).
 */
static int parse_double(const char *p, size_t n, double *out)
{
	const char *q = p, *end = p + n;
	int neg = 0, digits = 0, exp_neg = 0;
	uint64_t m = 0;
	long e10 = 0, ex = 0;
	char buf[128];
	char *copy = buf;
	double d;

	if (q < end && *q == '-') {
		neg = 1;
		q++;
	}
	for (; q < end && is_digit(*q); q++) {
		if (m == 0 && *q == '0')
			continue;
		if (++digits > 19)
			goto slow;
		m = m * 10 + (uint64_t)(*q - '0');
	}
	if (q < end && *q == '.') {
		for (q++; q < end && is_digit(*q); q++) {
			if (m == 0 && *q == '0') {
				e10--;
				continue;
			}
			if (++digits > 19)
				goto slow;
			m = m * 10 + (uint64_t)(*q - '0');
			e10--;
		}
	}
	if (q < end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			exp_neg = *q++ == '-';
		for (; q < end && is_digit(*q); q++) {
			if (ex < 100000)
				ex = ex * 10 + (*q - '0');
		}
	}
	e10 += exp_neg ? -ex : ex;
	if (m == 0) {
		*out = neg ? -0.0 : 0.0;
		return 0;
	}
	if (m <= (1ULL << 53) && e10 >= -22 && e10 <= 22) {
		d = (double)m;
		d = e10 < 0 ? d / pow10_exact[-e10] : d * pow10_exact[e10];
		*out = neg ? -d : d;
		return digits <= DBL_DIG || double_exact(p, n, *out) ? 0 : INEXACT;
	}
slow:
	/* Here the number is not zero: digits counts from its first nonzero one. */
	if (n >= sizeof(buf))
		copy = xmalloc(n + 1);
	memcpy(copy, p, n);
	copy[n] = '\0';
	d = strtod(copy, NULL);
	if (copy != buf)
		free(copy);
	if (isinf(d) || d == 0)
		return -1;
	*out = d;
	return double_exact(p, n, d) ? 0 : INEXACT;
}

static int num2(const char *p)
{
	return is_digit(p[0]) && is_digit(p[1]) ? (p[0] - '0') * 10 + (p[1] - '0') : -1;
}

static int64_t days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static int days_in_month(int y, int m)
{
	static const int dm[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : dm[m - 1];
}

/* YYYY-MM-DD at p (10 bytes available): days since 1970-01-01, or -1 when malformed. */
static int parse_ymd(const char *p, int64_t *days)
{
	int hi = num2(p), lo = num2(p + 2), m = num2(p + 5), d = num2(p + 8), y;

	if (hi < 0 || lo < 0 || p[4] != '-' || p[7] != '-' || m < 1 || m > 12 || d < 1)
		return -1;
	y = hi * 100 + lo;
	if (d > days_in_month(y, m))
		return -1;
	*days = days_from_civil(y, m, d);
	return 0;
}

int pq_parse_date(const char *p, size_t n, int32_t *days)
{
	int64_t d;

	if (n != 10 || parse_ymd(p, &d) != 0)
		return -1;
	*days = (int32_t)d;
	return 0;
}

/* TOO_FINE: a valid date-time finer than a microsecond, which would be rounded. */
#define TOO_FINE (-2)
/*
 * LEAP_SECOND: a valid date-time at second 60 (RFC 3339 allows a leap
 * second), which a TIMESTAMP, a count of microseconds without leap
 * seconds, holds only as the next minute's first second.
 */
#define LEAP_SECOND (-3)

/* pq_parse_timestamp(), or TOO_FINE or LEAP_SECOND. */
static int parse_timestamp(const char *p, size_t n, int64_t *us)
{
	int64_t days, secs, frac = 0;
	int h, mi, s, scale = 1000000, off = 0, fine = 0;
	size_t i;

	if (n < 20 || parse_ymd(p, &days) != 0 || (p[10] != 'T' && p[10] != 't' && p[10] != ' '))
		return -1;
	h = num2(p + 11);
	mi = num2(p + 14);
	s = num2(p + 17);
	if (h < 0 || h > 23 || p[13] != ':' || mi < 0 || mi > 59 || p[16] != ':' || s < 0 || s > 60)
		return -1;
	i = 19;
	if (p[i] == '.') {
		size_t start = ++i;

		for (; i < n && is_digit(p[i]); i++) {
			if (scale > 1) {
				scale /= 10;
				frac += (int64_t)(p[i] - '0') * scale;
			} else if (p[i] != '0') {
				fine = 1;
			}
		}
		if (i == start)
			return -1;
	}
	if (i + 1 == n && (p[i] == 'Z' || p[i] == 'z')) {
		off = 0;
	} else if ((i + 6 == n || (i + 9 == n && p[i + 6] == ':')) && (p[i] == '+' || p[i] == '-') &&
		   p[i + 3] == ':') {
		/*
		 * +HH:MM, or +HH:MM:SS: what PostgreSQL prints for a local
		 * mean time offset (1900-01-01T00:19:32+00:19:32).
		 */
		int oh = num2(p + i + 1), om = num2(p + i + 4), os = i + 9 == n ? num2(p + i + 7) : 0;

		if (oh < 0 || oh > 23 || om < 0 || om > 59 || os < 0 || os > 59)
			return -1;
		off = ((oh * 60 + om) * 60 + os) * (p[i] == '-' ? -1 : 1);
	} else {
		return -1;
	}
	if (fine)
		return TOO_FINE;
	if (s == 60)
		return LEAP_SECOND;
	secs = days * 86400 + h * 3600 + mi * 60 + s - off;
	*us = secs * 1000000 + frac;
	return 0;
}

int pq_parse_timestamp(const char *p, size_t n, int64_t *us)
{
	return parse_timestamp(p, n, us) == 0 ? 0 : -1;
}

/* ---- codec ---- */

/* One thread's compressor: its contexts and output buffer. */
struct pq_comp {
	enum compression c;
	int level;
	ZSTD_CCtx *zc;
	z_stream zs;
	int zs_ready;
	struct sb out;
	struct sb header;	/* the worker's page header */
};

/* Pages waiting for the worker (each up to page_size bytes, 1 MiB by default). */
#define PQ_QUEUE 4

/* A page for the worker: its body, uncompressed, and what its header says. */
struct pq_job {
	struct pq_writer *pw;
	size_t ci;
	struct sb raw;
	uint32_t rows;
	int encoding;
};

/*
 * The codec: the parsing thread's compressor and, with a worker, the
 * worker's, and a ring of PQ_QUEUE pages between them.  The worker takes
 * pages in order, so every column chunk gets its pages in order and the
 * bytes are those of the single-threaded writer.  The mutex guards the
 * ring's counters and each writer's inflight, inflight_bound, pending and
 * wfailed; a writer's chunks belong to the worker while it has pages
 * inflight.
 */
struct pq_codec {
	struct pq_comp main;
	struct pq_comp wk;
	int threaded;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t job;	/* a page was queued, or quit */
	pthread_cond_t done;	/* a page was done: room in the ring */
	struct pq_job ring[PQ_QUEUE];
	size_t head, count;
	int quit;
};

static int comp_init(struct pq_comp *k, enum compression c, int level)
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

static void comp_free(struct pq_comp *k)
{
	ZSTD_freeCCtx(k->zc);
	k->zc = NULL;
	if (k->zs_ready)
		deflateEnd(&k->zs);
	k->zs_ready = 0;
	sb_free(&k->out);
	sb_free(&k->header);
}

static void *worker(void *arg);

struct pq_codec *pq_codec_new(enum compression c, int level, int threads)
{
	struct pq_codec *k = xcalloc(1, sizeof(*k));
	int r;

	if (comp_init(&k->main, c, level) != 0)
		goto fail;
	if (threads <= 0)
		return k;
	if (comp_init(&k->wk, c, level) != 0)
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
	comp_free(&k->wk);
	comp_free(&k->main);
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
	for (i = 0; i < PQ_QUEUE; i++)
		sb_free(&k->ring[i].raw);
	comp_free(&k->wk);
	comp_free(&k->main);
	free(k);
}

static int codec_id(const struct pq_codec *k)
{
	switch (k->main.c) {
	case COMPRESSION_ZSTD: return CODEC_ZSTD;
	case COMPRESSION_GZIP: return CODEC_GZIP;
	case COMPRESSION_SNAPPY: return CODEC_SNAPPY;
	case COMPRESSION_NONE: break;
	}
	return CODEC_UNCOMPRESSED;
}

/* Compress src into k->out (or point at src when uncompressed).  0 or -1. */
static int compress_page(struct pq_comp *k, const char *src, size_t n, const char **dst, size_t *dlen)
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

/* The most a page of n bytes can take in a file: header and compressed body. */
static uint64_t page_bound(const struct pq_comp *k, size_t n)
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

/* ---- the writer ---- */

/* One value of the row being added. */
struct pq_cell {
	uint32_t gen;		/* the writer's gen: set in this row */
	int null;
	int64_t i;		/* INT64, TIMESTAMP, DATE, BOOL */
	double d;
	unsigned char dec[16];
	const char *p;		/* STRING, DIGITS, JSON bytes; NULL: in scratch at off */
	size_t off, len;
};

/* A column's open page and its row group's chunk. */
struct pq_colw {
	struct sb vals;		/* PLAIN values of the page */
	struct sb levels;	/* definition levels of the page */
	struct pq_rle rle;
	uint32_t page_rows;	/* values in the page, nulls included */
	unsigned bits, nbits;	/* BOOLEAN: the byte being packed */
	struct sb chunk;	/* page headers and bodies of the row group */
	uint64_t chunk_raw;	/* the chunk, uncompressed */
	uint64_t values, nulls;	/* in the row group */
	int has_minmax;
	int64_t imin, imax;
	double dmin, dmax;

	/*
	 * STRING columns start each row group dictionary-encoded: the
	 * distinct values (PLAIN) go into one dictionary page, written
	 * before the chunk's data pages, and pages hold their indices.  A
	 * dictionary past DICT_MAX_BYTES ends that: the rest of the row
	 * group's pages are PLAIN.
	 */
	int dict;		/* the open page is dictionary-encoded */
	struct sb dvals;	/* the dictionary's entries, PLAIN */
	uint32_t *doff, *dlen;	/* entry i's bytes: dvals.buf + doff[i], dlen[i] of them */
	uint32_t ndict, dcap;
	uint32_t *dslots;	/* hash of the entries: index + 1, 0 empty */
	uint32_t nslots;
	uint32_t *idx;		/* the open page's indices */
	uint32_t nidx, idxcap;
};

struct pq_writer {
	struct bucket_writer *w;
	const struct pq_schema *s;
	struct pq_options o;
	size_t n;		/* columns */
	struct pq_colw *cols;
	struct pq_cell *cells;
	uint32_t gen;
	struct sb scratch;	/* decoded strings of the row */
	struct sb extra;	/* the row's extra object */
	struct sb key;		/* a decoded key */
	struct sb page;		/* a page's body */
	struct sb header;	/* a page's header */
	struct sb rowgroups;	/* RowGroup structs so far */
	size_t nrowgroups;
	uint64_t offset;	/* bytes written */
	uint64_t rows, rg_rows, rg_bytes, pending;
	int failed;
	/* With a worker (struct pq_codec's mutex): */
	size_t inflight;	/* pages queued or being compressed */
	uint64_t inflight_bound;	/* the most they can add to pending */
	int wfailed;		/* the worker could not compress a page */
};

static int out(struct pq_writer *pw, const void *p, size_t n)
{
	if (pw->failed)
		return -1;
	if (n && bucket_writer_write(pw->w, p, n) < 0) {
		pw->failed = 1;
		return -1;
	}
	pw->offset += n;
	return 0;
}

static void colw_reset_page(struct pq_colw *c)
{
	c->nidx = 0;
	sb_reset(&c->vals);
	sb_reset(&c->levels);
	pq_rle_init(&c->rle, &c->levels, 1);
	c->page_rows = 0;
	c->bits = c->nbits = 0;
}

struct pq_writer *pq_writer_open(struct bucket_writer *w, const struct pq_schema *s,
				 const struct pq_options *o)
{
	struct pq_writer *pw = xcalloc(1, sizeof(*pw));
	size_t i;

	pw->w = w;
	pw->s = s;
	pw->o = *o;
	if (pw->o.page_size == 0)
		pw->o.page_size = DEFAULT_PAGE_SIZE;
	if (pw->o.row_group_rows == 0)
		pw->o.row_group_rows = 1;
	pw->n = s->n;
	pw->cols = xcalloc(pw->n, sizeof(*pw->cols));
	pw->cells = xcalloc(pw->n, sizeof(*pw->cells));
	for (i = 0; i < pw->n; i++) {
		colw_reset_page(&pw->cols[i]);
		pw->cols[i].dict = s->cols[i].kind == PQ_STRING;
	}
	if (out(pw, "PAR1", 4) != 0) {
		pq_writer_abort(pw);
		return NULL;
	}
	return pw;
}

static void put_le(struct sb *b, uint64_t v, int n)
{
	unsigned char *q;
	int i;

	/* In place: a call of sb_add() per value cost more than the value. */
	if (b->cap - b->len < 9)
		sb_grow(b, 8);
	q = (unsigned char *)b->buf + b->len;
	for (i = 0; i < n; i++)
		q[i] = (unsigned char)(v >> (8 * i));
	b->len += (size_t)n;
	b->buf[b->len] = '\0';
}

static uint64_t double_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

/* A data page's header; dict_entries > 0: a dictionary page's instead. */
static void page_header(struct sb *h, size_t raw, size_t comp, uint32_t values, int encoding,
			uint32_t dict_entries)
{
	struct pq_thrift t;

	pq_thrift_init(&t, h);
	pq_thrift_i32(&t, 1, dict_entries ? PAGE_DICTIONARY : PAGE_DATA);
	pq_thrift_i32(&t, 2, (int32_t)raw);
	pq_thrift_i32(&t, 3, (int32_t)comp);
	if (dict_entries) {
		pq_thrift_struct(&t, 7);
		pq_thrift_i32(&t, 1, (int32_t)dict_entries);
		pq_thrift_i32(&t, 2, ENC_PLAIN);
		pq_thrift_end(&t);
	} else {
		pq_thrift_struct(&t, 5);
		pq_thrift_i32(&t, 1, (int32_t)values);
		pq_thrift_i32(&t, 2, encoding);
		pq_thrift_i32(&t, 3, ENC_RLE);
		pq_thrift_i32(&t, 4, ENC_RLE);
		pq_thrift_end(&t);
	}
	pq_thrift_end(&t);
}

/* Bits for the indices of n dictionary entries (at least 1). */
static int index_bits(uint32_t n)
{
	int b = 1;

	while (b < 32 && (n - 1) >> b)
		b++;
	return b;
}

/*
 * Compress a page's body (raw) with k, append its header and body to the
 * column's chunk; *added: the bytes it takes in the file.  0 or -1.
 */
static int finish_page(struct pq_comp *k, struct pq_writer *pw, size_t ci, const struct sb *raw,
		       uint32_t rows, int encoding, struct sb *header, uint64_t *added)
{
	struct pq_colw *c = &pw->cols[ci];
	const char *body;
	size_t blen;

	if (compress_page(k, raw->buf, raw->len, &body, &blen) != 0)
		return -1;
	sb_reset(header);
	page_header(header, raw->len, blen, rows, encoding, 0);
	sb_add(&c->chunk, header->buf, header->len);
	sb_add(&c->chunk, body, blen);
	c->chunk_raw += header->len + raw->len;
	*added = header->len + blen;
	return 0;
}

static void *worker(void *arg)
{
	struct pq_codec *k = arg;

	pthread_mutex_lock(&k->mu);
	for (;;) {
		struct pq_job *j;
		struct pq_writer *pw;
		uint64_t added = 0;
		int r = -1;

		while (k->count == 0 && !k->quit)
			pthread_cond_wait(&k->job, &k->mu);
		if (k->count == 0)
			break;
		j = &k->ring[k->head];
		pw = j->pw;
		if (!pw->wfailed) {
			/* The page is the worker's until count goes down; the chunk too. */
			pthread_mutex_unlock(&k->mu);
			r = finish_page(&k->wk, pw, j->ci, &j->raw, j->rows, j->encoding, &k->wk.header, &added);
			pthread_mutex_lock(&k->mu);
		}
		if (r != 0)
			pw->wfailed = 1;
		pw->pending += added;
		pw->inflight--;
		pw->inflight_bound -= page_bound(&k->wk, j->raw.len);
		k->head = (k->head + 1) % PQ_QUEUE;
		k->count--;
		pthread_cond_broadcast(&k->done);
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

/* Wait until the worker is done with pw's pages.  0, or -1 when one failed. */
static int drain(const struct pq_writer *pw)
{
	struct pq_codec *k = pw->o.codec;
	int failed;

	if (!k->threaded)
		return 0;
	pthread_mutex_lock(&k->mu);
	while (pw->inflight > 0)
		pthread_cond_wait(&k->done, &k->mu);
	failed = pw->wfailed;
	pthread_mutex_unlock(&k->mu);
	return failed ? -1 : 0;
}

/*
 * End the column's open page: its body is built here, compressed here or,
 * with a worker, there (into a free slot of the ring, waiting for one).
 */
static int flush_page(struct pq_writer *pw, size_t ci)
{
	struct pq_colw *c = &pw->cols[ci];
	struct pq_codec *k = pw->o.codec;
	struct pq_job *j = NULL;
	struct sb *page = &pw->page;
	uint64_t added;
	int encoding, failed = 0;

	if (c->page_rows == 0)
		return 0;
	if (k->threaded) {
		pthread_mutex_lock(&k->mu);
		while (k->count == PQ_QUEUE)
			pthread_cond_wait(&k->done, &k->mu);
		/* The worker moves head and count together: this slot stays free. */
		j = &k->ring[(k->head + k->count) % PQ_QUEUE];
		failed = pw->wfailed;
		pthread_mutex_unlock(&k->mu);
		if (failed) {
			pw->failed = 1;
			return -1;
		}
		page = &j->raw;
	}
	if (c->nbits) {
		sb_addc(&c->vals, (char)c->bits);
		c->bits = c->nbits = 0;
	}
	pq_rle_finish(&c->rle);
	sb_reset(page);
	put_le(page, c->levels.len, 4);
	sb_add(page, c->levels.buf, c->levels.len);
	encoding = ENC_PLAIN;
	if (c->nidx > 0) {
		struct pq_rle e;
		int bw = index_bits(c->ndict);
		uint32_t i;

		encoding = ENC_RLE_DICTIONARY;
		sb_addc(page, (char)bw);
		pq_rle_init(&e, page, bw);
		for (i = 0; i < c->nidx; i++)
			pq_rle_put(&e, c->idx[i]);
		pq_rle_finish(&e);
	} else {
		sb_add(page, c->vals.buf, c->vals.len);
	}
	if (j) {
		j->pw = pw;
		j->ci = ci;
		j->rows = c->page_rows;
		j->encoding = encoding;
		pthread_mutex_lock(&k->mu);
		k->count++;
		pw->inflight++;
		pw->inflight_bound += page_bound(&k->wk, page->len);
		pthread_cond_signal(&k->job);
		pthread_mutex_unlock(&k->mu);
	} else {
		if (finish_page(&k->main, pw, ci, page, c->page_rows, encoding, &pw->header, &added) != 0) {
			pw->failed = 1;
			return -1;
		}
		pw->pending += added;
	}
	colw_reset_page(c);
	return 0;
}

/* Parquet's physical type of a kind. */
static int physical(enum pq_kind k)
{
	switch (k) {
	case PQ_INT64:
	case PQ_TIMESTAMP:
		return TY_INT64;
	case PQ_DATE:
		return TY_INT32;
	case PQ_DOUBLE:
		return TY_DOUBLE;
	case PQ_BOOL:
		return TY_BOOLEAN;
	case PQ_DECIMAL:
		return TY_FLBA;
	default:
		return TY_BYTE_ARRAY;
	}
}

static void statistics(struct pq_thrift *t, const struct pq_colw *c, enum pq_kind k)
{
	struct sb v = SB_INIT;

	pq_thrift_struct(t, 12);
	pq_thrift_i64(t, 3, (int64_t)c->nulls);
	if (c->has_minmax) {
		size_t half;

		if (k == PQ_DOUBLE) {
			/* parquet-format: a zero min is written -0.0, a zero max +0.0. */
			put_le(&v, double_bits(c->dmax == 0 ? 0.0 : c->dmax), 8);
			put_le(&v, double_bits(c->dmin == 0 ? -0.0 : c->dmin), 8);
		} else {
			int n = k == PQ_DATE ? 4 : k == PQ_BOOL ? 1 : 8;

			put_le(&v, (uint64_t)c->imax, n);
			put_le(&v, (uint64_t)c->imin, n);
		}
		half = v.len / 2;
		pq_thrift_binary(t, 5, v.buf, half);
		pq_thrift_binary(t, 6, v.buf + half, half);
	}
	pq_thrift_end(t);
	sb_free(&v);
}

static int flush_row_group(struct pq_writer *pw)
{
	struct pq_thrift t;
	uint64_t start = pw->offset, raw = 0, comp = 0;
	size_t i;

	if (pw->rg_rows == 0)
		return 0;
	for (i = 0; i < pw->n; i++) {
		if (flush_page(pw, i) != 0)
			return -1;
	}
	/* The chunks are complete once the worker is done with the pages. */
	if (drain(pw) != 0) {
		pw->failed = 1;
		return -1;
	}
	pq_thrift_init(&t, &pw->rowgroups);
	pq_thrift_elem_struct(&t);
	pq_thrift_list(&t, 1, PQ_T_STRUCT, pw->n);
	for (i = 0; i < pw->n; i++) {
		struct pq_colw *c = &pw->cols[i];
		const struct pq_column *col = &pw->s->cols[i];
		uint64_t at = pw->offset, dict_comp = 0, dict_raw = 0;

		if (c->ndict > 0) {
			const char *body;
			size_t blen;

			if (compress_page(&pw->o.codec->main, c->dvals.buf, c->dvals.len, &body, &blen) != 0) {
				pw->failed = 1;
				return -1;
			}
			sb_reset(&pw->header);
			page_header(&pw->header, c->dvals.len, blen, 0, ENC_PLAIN, c->ndict);
			if (out(pw, pw->header.buf, pw->header.len) != 0 || out(pw, body, blen) != 0)
				return -1;
			dict_comp = pw->header.len + blen;
			dict_raw = pw->header.len + c->dvals.len;
		}
		if (out(pw, c->chunk.buf, c->chunk.len) != 0)
			return -1;
		pq_thrift_elem_struct(&t);		/* ColumnChunk */
		pq_thrift_i64(&t, 2, (int64_t)at);
		pq_thrift_struct(&t, 3);		/* ColumnMetaData */
		pq_thrift_i32(&t, 1, physical(col->kind));
		pq_thrift_list(&t, 2, PQ_T_I32, c->ndict ? 3 : 2);
		pq_thrift_elem_i32(&t, ENC_PLAIN);
		pq_thrift_elem_i32(&t, ENC_RLE);
		if (c->ndict)
			pq_thrift_elem_i32(&t, ENC_RLE_DICTIONARY);
		pq_thrift_list(&t, 3, PQ_T_BINARY, 1);
		pq_thrift_elem_binary(&t, col->name, col->name_len);
		pq_thrift_i32(&t, 4, codec_id(pw->o.codec));
		pq_thrift_i64(&t, 5, (int64_t)c->values);
		pq_thrift_i64(&t, 6, (int64_t)(c->chunk_raw + dict_raw));
		pq_thrift_i64(&t, 7, (int64_t)(c->chunk.len + dict_comp));
		pq_thrift_i64(&t, 9, (int64_t)(at + dict_comp));
		if (c->ndict)
			pq_thrift_i64(&t, 11, (int64_t)at);
		statistics(&t, c, col->kind);
		pq_thrift_end(&t);
		pq_thrift_end(&t);
		raw += c->chunk_raw + dict_raw;
		comp += c->chunk.len + dict_comp;
		sb_reset(&c->chunk);
		c->chunk_raw = c->values = c->nulls = 0;
		c->has_minmax = 0;
		/* The next row group starts its own dictionary. */
		sb_reset(&c->dvals);
		if (c->nslots)
			memset(c->dslots, 0, c->nslots * sizeof(*c->dslots));
		c->ndict = 0;
		c->dict = col->kind == PQ_STRING;
	}
	pq_thrift_i64(&t, 2, (int64_t)raw);
	pq_thrift_i64(&t, 3, (int64_t)pw->rg_rows);
	pq_thrift_i64(&t, 5, (int64_t)start);
	pq_thrift_i64(&t, 6, (int64_t)comp);
	pq_thrift_end(&t);
	pw->nrowgroups++;
	pw->rg_rows = pw->rg_bytes = pw->pending = 0;
	return 0;
}

static void schema_element(struct pq_thrift *t, const struct pq_column *col)
{
	pq_thrift_elem_struct(t);
	pq_thrift_i32(t, 1, physical(col->kind));
	if (col->kind == PQ_DECIMAL)
		pq_thrift_i32(t, 2, 16);
	pq_thrift_i32(t, 3, REP_OPTIONAL);
	pq_thrift_binary(t, 4, col->name, col->name_len);
	switch (col->kind) {
	case PQ_DECIMAL:
		pq_thrift_i32(t, 6, CV_DECIMAL);
		pq_thrift_i32(t, 7, 0);
		pq_thrift_i32(t, 8, 38);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 5);
		pq_thrift_i32(t, 1, 0);
		pq_thrift_i32(t, 2, 38);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_DIGITS:
	case PQ_STRING:
	case PQ_TEXT:
		pq_thrift_i32(t, 6, CV_UTF8);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 1);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_TIMESTAMP:
		pq_thrift_i32(t, 6, CV_TIMESTAMP_MICROS);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 8);
		pq_thrift_bool(t, 1, 1);
		pq_thrift_struct(t, 2);
		pq_thrift_struct(t, 2);
		pq_thrift_end(t);
		pq_thrift_end(t);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_DATE:
		pq_thrift_i32(t, 6, CV_DATE);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 6);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_JSON:
		pq_thrift_i32(t, 6, CV_JSON);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 12);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	default:
		break;
	}
	pq_thrift_end(t);
}

static int write_footer(struct pq_writer *pw)
{
	struct sb f = SB_INIT;
	struct pq_thrift t;
	size_t i;
	int r;

	pq_thrift_init(&t, &f);
	pq_thrift_i32(&t, 1, 1);
	pq_thrift_list(&t, 2, PQ_T_STRUCT, pw->n + 1);
	pq_thrift_elem_struct(&t);
	pq_thrift_binary(&t, 4, "schema", 6);
	pq_thrift_i32(&t, 5, (int32_t)pw->n);
	pq_thrift_end(&t);
	for (i = 0; i < pw->n; i++)
		schema_element(&t, &pw->s->cols[i]);
	pq_thrift_i64(&t, 3, (int64_t)pw->rows);
	pq_thrift_list(&t, 4, PQ_T_STRUCT, pw->nrowgroups);
	sb_add(&f, pw->rowgroups.buf, pw->rowgroups.len);
	pq_thrift_binary(&t, 6, PQ_CREATED_BY, strlen(PQ_CREATED_BY));
	pq_thrift_list(&t, 7, PQ_T_STRUCT, pw->n);
	for (i = 0; i < pw->n; i++) {
		pq_thrift_elem_struct(&t);	/* ColumnOrder */
		pq_thrift_struct(&t, 1);	/* TYPE_ORDER */
		pq_thrift_end(&t);
		pq_thrift_end(&t);
	}
	pq_thrift_end(&t);
	put_le(&f, f.len, 4);
	sb_add(&f, "PAR1", 4);
	r = out(pw, f.buf, f.len);
	sb_free(&f);
	return r;
}

static void free_writer(struct pq_writer *pw)
{
	size_t i;

	for (i = 0; i < pw->n; i++) {
		sb_free(&pw->cols[i].vals);
		sb_free(&pw->cols[i].levels);
		sb_free(&pw->cols[i].chunk);
		sb_free(&pw->cols[i].dvals);
		free(pw->cols[i].doff);
		free(pw->cols[i].dlen);
		free(pw->cols[i].dslots);
		free(pw->cols[i].idx);
	}
	free(pw->cols);
	free(pw->cells);
	sb_free(&pw->scratch);
	sb_free(&pw->extra);
	sb_free(&pw->key);
	sb_free(&pw->page);
	sb_free(&pw->header);
	sb_free(&pw->rowgroups);
	free(pw);
}

int pq_writer_close(struct pq_writer *pw, uint64_t *size)
{
	int r;

	if (pw == NULL)
		return 0;
	if (drain(pw) != 0)
		pw->failed = 1;
	if (flush_row_group(pw) != 0 || write_footer(pw) != 0) {
		pq_writer_abort(pw);
		return -1;
	}
	if (size)
		*size = pw->offset;
	r = bucket_writer_close(pw->w);
	pw->w = NULL;
	free_writer(pw);
	return r < 0 ? -1 : 0;
}

void pq_writer_abort(struct pq_writer *pw)
{
	if (pw == NULL)
		return;
	/* The worker may still be writing into this writer's chunks. */
	drain(pw);
	if (pw->w)
		bucket_writer_abort(pw->w);
	free_writer(pw);
}

uint64_t pq_writer_rows(const struct pq_writer *pw)
{
	return pw->rows;
}

uint64_t pq_writer_bytes(const struct pq_writer *pw)
{
	drain(pw);
	return pw->offset + pw->pending;
}

int pq_writer_reached(const struct pq_writer *pw, uint64_t limit)
{
	struct pq_codec *k = pw->o.codec;
	uint64_t most;

	if (k->threaded) {
		/* Wait for the exact size only when the pages in flight could reach the limit. */
		pthread_mutex_lock(&k->mu);
		most = pw->offset + pw->pending + pw->inflight_bound;
		pthread_mutex_unlock(&k->mu);
		if (most < limit)
			return 0;
		drain(pw);
	}
	return pw->offset + pw->pending >= limit;
}

/* ---- adding a record ---- */

/*
 * The members of a record, walked as json_object_next() does (the text is
 * validated: no checks beyond staying inside the span), but 16 bytes at a
 * time, and saying which strings hold a backslash, so that keys and values
 * without one are used in place without a second look.
 */
static int is_ws(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static const unsigned char *walk_ws(const unsigned char *p, const unsigned char *end)
{
	while (p < end && is_ws(*p))
		p++;
	return p;
}

/* p just after a string's opening quote: the byte after its closing one; *esc: it holds a backslash. */
static const unsigned char *walk_string(const unsigned char *p, const unsigned char *end, int *esc)
{
	for (;;) {
#ifdef __SSE2__
		const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');

		while (end - p >= 16) {
			__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
			unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
									      _mm_cmpeq_epi8(x, bslash)));

			if (m) {
				p += __builtin_ctz(m);
				break;
			}
			p += 16;
		}
#endif
		while (p < end && *p != '"' && *p != '\\')
			p++;
		if (p >= end)
			return end;
		if (*p == '"')
			return p + 1;
		/* A backslash and the byte it escapes (a validated string goes on after it). */
		*esc = 1;
		p += 2;
	}
}

/* The byte after the value at p. */
static const unsigned char *walk_value(const unsigned char *p, const unsigned char *end, int *esc)
{
	unsigned depth = 0;
	int inner = 0;

	if (*p == '"')
		return walk_string(p + 1, end, esc);
	if (*p != '{' && *p != '[') {
		while (p < end && *p != ',' && *p != '}' && *p != ']' && !is_ws(*p))
			p++;
		return p;
	}
	while (p < end) {
#ifdef __SSE2__
		/* The next '"', '{', '}', '[' or ']': '[' | 0x20 is '{', ']' | 0x20 is '}'. */
		const __m128i quote = _mm_set1_epi8('"'), open = _mm_set1_epi8('{'), close = _mm_set1_epi8('}');
		const __m128i bit = _mm_set1_epi8(0x20);

		while (end - p >= 16) {
			__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p), y = _mm_or_si128(x, bit);
			unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, quote),
				_mm_or_si128(_mm_cmpeq_epi8(y, open), _mm_cmpeq_epi8(y, close))));

			if (m) {
				p += __builtin_ctz(m);
				break;
			}
			p += 16;
		}
		if (p >= end)
			break;
#endif
		switch (*p) {
		case '"':
			p = walk_string(p + 1, end, &inner);
			continue;
		case '{':
		case '[':
			depth++;
			break;
		case '}':
		case ']':
			if (--depth == 0)
				return p + 1;
			break;
		default:
			break;
		}
		p++;
	}
	return p;
}

/* json_object_next() of a validated object; *kesc, *vesc: the key, the value (a string) hold a backslash. */
static int walk_next(const struct json_span *obj, size_t *pos, struct json_span *key, struct json_span *val,
		     int *kesc, int *vesc)
{
	const unsigned char *base = (const unsigned char *)obj->p;
	const unsigned char *end = base + obj->len, *p = base + *pos, *q;

	if (*pos == 0)
		p++;
	p = walk_ws(p, end);
	if (p < end && *p == ',')
		p = walk_ws(p + 1, end);
	if (p >= end || *p == '}') {
		*pos = (size_t)(p - base);
		return 0;
	}
	*kesc = *vesc = 0;
	q = walk_string(p + 1, end, kesc);
	key->p = (const char *)p;
	key->len = (size_t)(q - p);
	key->type = JSON_STRING;
	p = walk_ws(q, end);
	p = walk_ws(p + 1, end);	/* ':' */
	q = walk_value(p, end, vesc);
	val->p = (const char *)p;
	val->len = (size_t)(q - p);
	val->type = json_type_at(*p);
	*pos = (size_t)(q - base);
	return 1;
}

/* A value its column cannot hold: the narrowest type that holds it (pq_fail). */
static int widen(struct pq_fail *f, enum pq_kind need, enum json_type want, int mismatch, const char *why)
{
	f->need = need;
	f->want = want;
	f->mismatch = mismatch;
	f->why = why;
	return PQ_WIDEN;
}

/* The bytes of a JSON string span's contents: in place (no backslash: esc 0), or decoded into scratch. */
static void string_bytes(struct pq_writer *pw, const struct json_span *v, int esc, struct pq_cell *cell)
{
	if (!esc) {
		cell->p = v->p + 1;
		cell->len = v->len - 2;
		return;
	}
	cell->p = NULL;
	cell->off = pw->scratch.len;
	json_string_decode(v, &pw->scratch);
	cell->len = pw->scratch.len - cell->off;
}

/*
 * Check and convert one value into its cell: 0, or PQ_WIDEN (f: the type
 * that holds it; the lattice of parquet.h).
 */
static int parse_value(struct pq_writer *pw, const struct pq_column *col, const struct json_span *v,
		       int esc, struct pq_cell *cell, struct pq_fail *f)
{
	int r;

	cell->null = v->type == JSON_NULL;
	if (cell->null)
		return 0;
	switch (col->kind) {
	case PQ_INT64:
	case PQ_DECIMAL:
	case PQ_DIGITS:
		if (v->type != JSON_NUMBER)
			return widen(f, PQ_TEXT, JSON_NONE, 1, "is not an integer");
		if (!integer_syntax(v->p, v->len)) {
			/* A DECIMAL or DIGITS column holds integers a double may not. */
			r = col->kind == PQ_INT64 ? parse_double(v->p, v->len, &cell->d) : -1;
			return widen(f, r == 0 ? PQ_DOUBLE : PQ_TEXT, JSON_NONE, 1, "is not an integer");
		}
		if (col->kind == PQ_INT64 && parse_int64(v->p, v->len, &cell->i) == 0)
			return 0;
		if (col->kind == PQ_DIGITS) {
			cell->p = v->p;
			cell->len = v->len;
			return 0;
		}
		if (integer_digits(v->p, v->len) > 38)
			return widen(f, PQ_DIGITS, JSON_NONE, 0, "has more than 38 digits");
		if (col->kind == PQ_INT64)
			return widen(f, PQ_DECIMAL, JSON_NONE, 0, "is beyond the range of INT64");
		parse_decimal(v->p, v->len, cell->dec);
		return 0;
	case PQ_DOUBLE:
		if (v->type != JSON_NUMBER)
			return widen(f, PQ_TEXT, JSON_NONE, 1, "is not a number");
		r = parse_double(v->p, v->len, &cell->d);
		if (r == -1)
			return widen(f, PQ_TEXT, JSON_NONE, 0, "is beyond the range of a DOUBLE");
		if (r == INEXACT)
			return widen(f, PQ_TEXT, JSON_NONE, 0, "has more digits than a DOUBLE holds");
		return 0;
	case PQ_BOOL:
		if (v->type != JSON_TRUE && v->type != JSON_FALSE)
			return widen(f, PQ_TEXT, JSON_NONE, 1, "is not a boolean");
		cell->i = v->type == JSON_TRUE;
		return 0;
	case PQ_STRING:
		if (v->type != JSON_STRING)
			return widen(f, PQ_TEXT, JSON_NONE, 1, "is not a string");
		string_bytes(pw, v, esc, cell);
		return 0;
	case PQ_TIMESTAMP:
	case PQ_DATE: {
		const char *p;

		if (v->type != JSON_STRING)
			return widen(f, PQ_TEXT, JSON_NONE, 1, col->kind == PQ_DATE ?
				     "is not a date (YYYY-MM-DD)" : "is not an RFC 3339 date-time");
		string_bytes(pw, v, esc, cell);
		p = cell->p ? cell->p : pw->scratch.buf + cell->off;
		if (col->kind == PQ_DATE) {
			int32_t d = 0;

			if (pq_parse_date(p, cell->len, &d) != 0)
				return widen(f, PQ_TEXT, JSON_NONE, 1, "is not a date (YYYY-MM-DD)");
			cell->i = d;
			return 0;
		}
		r = parse_timestamp(p, cell->len, &cell->i);
		if (r == LEAP_SECOND)
			return widen(f, PQ_TEXT, JSON_NONE, 0,
				     "is a leap second (second 60), which a TIMESTAMP cannot hold");
		if (r != 0)
			return widen(f, PQ_TEXT, JSON_NONE, r != TOO_FINE,
				     "is not an RFC 3339 date-time with a time zone offset, "
				     "to the microsecond at most");
		return 0;
	}
	case PQ_TEXT:
		if (v->type == JSON_STRING) {
			string_bytes(pw, v, esc, cell);
		} else {
			cell->p = v->p;
			cell->len = v->len;
		}
		return 0;
	case PQ_JSON:
		if (col->want == JSON_OBJECT && v->type != JSON_OBJECT)
			return widen(f, PQ_JSON, JSON_NONE, 1, "is not an object");
		if (col->want == JSON_ARRAY && v->type != JSON_ARRAY)
			return widen(f, PQ_JSON, JSON_NONE, 1, "is not an array");
		cell->p = v->p;
		cell->len = v->len;
		return 0;
	}
	return 0;
}

static void dict_insert(struct pq_colw *c, uint32_t e)
{
	uint32_t j = (uint32_t)hash_bytes(c->dvals.buf + c->doff[e], c->dlen[e]) & (c->nslots - 1);

	while (c->dslots[j])
		j = (j + 1) & (c->nslots - 1);
	c->dslots[j] = e + 1;
}

/* The dictionary index of a value, added when new.  0, or -1 when the dictionary is full. */
static int dict_index(struct pq_colw *c, const char *p, size_t len, uint32_t *index)
{
	uint32_t j, e;

	if (c->nslots) {
		j = (uint32_t)hash_bytes(p, len) & (c->nslots - 1);
		for (; c->dslots[j]; j = (j + 1) & (c->nslots - 1)) {
			e = c->dslots[j] - 1;
			if (c->dlen[e] == len && memcmp(c->dvals.buf + c->doff[e], p, len) == 0) {
				*index = e;
				return 0;
			}
		}
	}
	if (c->dvals.len + 4 + len > DICT_MAX_BYTES)
		return -1;
	if (c->ndict == c->dcap) {
		c->dcap = c->dcap ? c->dcap * 2 : 256;
		c->doff = xrealloc(c->doff, c->dcap * sizeof(*c->doff));
		c->dlen = xrealloc(c->dlen, c->dcap * sizeof(*c->dlen));
	}
	put_le(&c->dvals, len, 4);
	c->doff[c->ndict] = (uint32_t)c->dvals.len;
	c->dlen[c->ndict] = (uint32_t)len;
	sb_add(&c->dvals, p, len);
	e = c->ndict++;
	if (c->ndict * 2 > c->nslots) {
		uint32_t i;

		c->nslots = c->nslots ? c->nslots * 2 : 1024;
		free(c->dslots);
		c->dslots = xcalloc(c->nslots, sizeof(*c->dslots));
		for (i = 0; i < c->ndict; i++)
			dict_insert(c, i);
	} else {
		dict_insert(c, e);
	}
	*index = e;
	return 0;
}

/* Append the cell to its column's page.  0, or -1 on a write error. */
static int put_value(struct pq_writer *pw, size_t ci, const struct pq_cell *cell)
{
	struct pq_colw *c = &pw->cols[ci];
	enum pq_kind k = pw->s->cols[ci].kind;
	size_t before = c->vals.len;
	const char *p;
	uint32_t index = 0;

	if (c->dict && cell && !cell->null) {
		p = cell->p ? cell->p : pw->scratch.buf + cell->off;
		if (dict_index(c, p, cell->len, &index) != 0) {
			/* Too many distinct values: PLAIN from the next page on. */
			if (flush_page(pw, ci) != 0)
				return -1;
			c->dict = 0;
		}
	}
	c->page_rows++;
	c->values++;
	if (cell == NULL || cell->null) {
		pq_rle_put(&c->rle, 0);
		c->nulls++;
		return 0;
	}
	pq_rle_put(&c->rle, 1);
	switch (k) {
	case PQ_INT64:
	case PQ_TIMESTAMP:
	case PQ_DATE:
	case PQ_BOOL:
		if (k == PQ_BOOL) {
			c->bits |= (unsigned)cell->i << c->nbits;
			if (++c->nbits == 8) {
				sb_addc(&c->vals, (char)c->bits);
				c->bits = c->nbits = 0;
			}
		} else {
			put_le(&c->vals, (uint64_t)cell->i, k == PQ_DATE ? 4 : 8);
		}
		if (!c->has_minmax) {
			c->imin = c->imax = cell->i;
			c->has_minmax = 1;
		} else if (cell->i < c->imin) {
			c->imin = cell->i;
		} else if (cell->i > c->imax) {
			c->imax = cell->i;
		}
		break;
	case PQ_DOUBLE:
		put_le(&c->vals, double_bits(cell->d), 8);
		if (!c->has_minmax) {
			c->dmin = c->dmax = cell->d;
			c->has_minmax = 1;
		} else if (cell->d < c->dmin) {
			c->dmin = cell->d;
		} else if (cell->d > c->dmax) {
			c->dmax = cell->d;
		}
		break;
	case PQ_DECIMAL:
		sb_add(&c->vals, cell->dec, 16);
		break;
	default:
		if (c->dict) {
			if (c->nidx == c->idxcap) {
				c->idxcap = c->idxcap ? c->idxcap * 2 : 1024;
				c->idx = xrealloc(c->idx, c->idxcap * sizeof(*c->idx));
			}
			c->idx[c->nidx++] = index;
			pw->rg_bytes += 4 + cell->len;
			return 0;
		}
		p = cell->p ? cell->p : pw->scratch.buf + cell->off;
		put_le(&c->vals, cell->len, 4);
		sb_add(&c->vals, p, cell->len);
		break;
	}
	pw->rg_bytes += c->vals.len - before + (k == PQ_BOOL);
	return 0;
}

/* The column of a record member, or SIZE_MAX; *next: where the next one probably is. */
static size_t match(struct pq_writer *pw, const struct json_span *key, int esc, size_t *next)
{
	const struct pq_schema *s = pw->s;
	size_t i = *next;

	/* Records usually name their members as the schema does, in its order. */
	if (i + 1 < s->n && s->cols[i].qname_len == key->len &&
	    memcmp(s->cols[i].qname, key->p, key->len) == 0) {
		*next = i + 1;
		return i;
	}
	if (!esc) {
		i = schema_find(s, key->p + 1, key->len - 2);
	} else {
		sb_reset(&pw->key);
		json_string_decode(key, &pw->key);
		i = schema_find(s, pw->key.buf ? pw->key.buf : "", pw->key.len);
	}
	if (i != SIZE_MAX)
		*next = i + 1;
	return i;
}

/* A record's first steps: -2 after a write error, else 0 with its cells cleared. */
static int add_begin(struct pq_writer *pw)
{
	size_t i;

	if (pw->failed)
		return -2;
	if (++pw->gen == 0) {
		for (i = 0; i < pw->n; i++)
			pw->cells[i].gen = 0;
		pw->gen = 1;
	}
	sb_reset(&pw->scratch);
	sb_reset(&pw->extra);
	return 0;
}

/* One member into its column's cell, or the extra column: 0, or PQ_WIDEN (f filled). */
static inline int add_member(struct pq_writer *pw, const struct json_span *key, int kesc,
			     const struct json_span *val, int vesc, size_t *next, struct pq_fail *f)
{
	size_t i = match(pw, key, kesc, next);
	int r;

	if (i == SIZE_MAX || pw->cells[i].gen == pw->gen) {
		sb_addc(&pw->extra, pw->extra.len ? ',' : '{');
		sb_add(&pw->extra, key->p, key->len);
		sb_addc(&pw->extra, ':');
		sb_add(&pw->extra, val->p, val->len);
		return 0;
	}
	pw->cells[i].gen = pw->gen;
	r = parse_value(pw, &pw->s->cols[i], val, vesc, &pw->cells[i], f);
	if (r != 0) {
		f->column = i;
		f->value = *val;
	}
	return r;
}

/* The row of the cells filled: 0, or -2 on a write error. */
static int add_end(struct pq_writer *pw)
{
	size_t i, xi = pw->n - 1;

	if (pw->extra.len) {
		sb_addc(&pw->extra, '}');
		pw->cells[xi].gen = pw->gen;
		pw->cells[xi].null = 0;
		pw->cells[xi].p = pw->extra.buf;
		pw->cells[xi].len = pw->extra.len;
	}
	for (i = 0; i < pw->n; i++) {
		const struct pq_cell *cell = pw->cells[i].gen == pw->gen ? &pw->cells[i] : NULL;

		struct pq_colw *c = &pw->cols[i];

		if (put_value(pw, i, cell) != 0)
			return -2;
		if ((c->vals.len + 4 * (size_t)c->nidx >= pw->o.page_size || c->page_rows >= PAGE_ROWS_MAX) &&
		    flush_page(pw, i) != 0)
			return -2;
	}
	pw->rows++;
	pw->rg_rows++;
	if ((pw->rg_rows >= pw->o.row_group_rows || pw->rg_bytes >= pw->o.row_group_size) &&
	    flush_row_group(pw) != 0)
		return -2;
	return 0;
}

int pq_writer_add(struct pq_writer *pw, const struct json_span *rec, struct pq_fail *f)
{
	struct json_span key, val;
	size_t pos = 0, next = 0;
	int r, kesc, vesc;

	if (add_begin(pw) != 0)
		return -2;
	while (rec->type == JSON_OBJECT && walk_next(rec, &pos, &key, &val, &kesc, &vesc)) {
		r = add_member(pw, &key, kesc, &val, vesc, &next, f);
		if (r != 0)
			return r;
	}
	return add_end(pw);
}

int pq_writer_add_members(struct pq_writer *pw, const struct json_member *m, size_t n,
			  struct pq_fail *f)
{
	size_t i, next = 0;
	int r;

	if (add_begin(pw) != 0)
		return -2;
	for (i = 0; i < n; i++) {
		r = add_member(pw, &m[i].key, m[i].key_esc, &m[i].val, m[i].val_esc, &next, f);
		if (r != 0)
			return r;
	}
	return add_end(pw);
}
