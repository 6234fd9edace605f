/*
 * dataspoc-tap-postgres: a value, from the text PostgreSQL prints for it
 * (COPY's text format, DateStyle ISO), to the JSON that tap-postgres prints
 * for it after psycopg2 and Python made it a Python object: numbers keep
 * their digits (never a double in between), times get their offsets.
 */
#include <string.h>

#include "sb.h"
#include "tap_pg.h"

static int eq(const char *s, size_t len, const char *lit)
{
	return len == strlen(lit) && memcmp(s, lit, len) == 0;
}

enum kind kind_of(const char *type, size_t len)
{
	static const struct {
		const char *name;
		enum kind kind;
	} map[] = {
		{ "smallint", K_INT }, { "integer", K_INT }, { "bigint", K_INT },
		{ "numeric", K_NUMERIC },
		{ "real", K_FLOAT }, { "double precision", K_FLOAT },
		{ "boolean", K_BOOL }, { "bit", K_BIT },
		{ "timestamp with time zone", K_TSTZ },
		{ "timestamp without time zone", K_TS },
		{ "date", K_DATE },
		{ "time without time zone", K_TIME }, { "time", K_TIME },
		{ "time with time zone", K_TIMETZ },
		{ "hstore", K_HSTORE },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (eq(type, len, map[i].name))
			return map[i].kind;
	return K_STRING;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Python's str(Decimal(text)) for PostgreSQL's numeric text [-]D[.D]. */
static void numeric_str(struct sb *out, const char *s, size_t len)
{
	const char *p = s, *end = s + len, *ip, *fp = NULL;
	size_t ni = 0, nf = 0, nc, lead = 0;
	long exp, left, dot;
	char coeff[256];
	struct sb big = SB_INIT;
	char *c;

	if (p < end && (*p == '-' || *p == '+')) {
		if (*p == '-')
			sb_addc(out, '-');
		p++;
	}
	ip = p;
	while (p < end && is_digit(*p))
		p++, ni++;
	if (p < end && *p == '.') {
		fp = ++p;
		while (p < end && is_digit(*p))
			p++, nf++;
	}
	if (p != end || ni + nf == 0) {
		/* not the shape PostgreSQL prints: the text, kept as is */
		sb_add(out, s, len);
		return;
	}
	c = ni + nf < sizeof(coeff) ? coeff : (sb_grow(&big, ni + nf), big.buf);
	memcpy(c, ip, ni);
	if (nf)
		memcpy(c + ni, fp, nf);
	nc = ni + nf;
	while (lead + 1 < nc && c[lead] == '0')
		lead++;
	c += lead;
	nc -= lead;
	exp = -(long)nf;
	left = exp + (long)nc;
	dot = (exp <= 0 && left > -6) ? left : 1;
	if (dot <= 0) {
		sb_add(out, "0.", 2);
		for (long i = 0; i < -dot; i++)
			sb_addc(out, '0');
		sb_add(out, c, nc);
	} else if ((size_t)dot >= nc) {
		sb_add(out, c, nc);
		for (long i = 0; i < dot - (long)nc; i++)
			sb_addc(out, '0');
	} else {
		sb_add(out, c, (size_t)dot);
		sb_addc(out, '.');
		sb_add(out, c + dot, nc - (size_t)dot);
	}
	if (left != dot)
		sb_addf(out, "E%+ld", left - dot);
	sb_free(&big);
}

/* Python's repr(float(text)) for PostgreSQL's shortest float text. */
static void float_repr(struct sb *out, const char *s, size_t len)
{
	const char *p = s, *end = s + len;
	char dig[64];
	size_t nd = 0;
	long decpt = 0, e = 0;
	int seen_dot = 0, neg = 0, eneg = 0;

	if (p < end && (*p == '-' || *p == '+'))
		neg = *p++ == '-';
	for (; p < end; p++) {
		if (*p == '.') {
			seen_dot = 1;
			continue;
		}
		if (!is_digit(*p))
			break;
		if (nd == 0 && *p == '0') {
			if (seen_dot)
				decpt--;
			continue;
		}
		if (nd < sizeof(dig))
			dig[nd++] = *p;
		if (!seen_dot)
			decpt++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '-' || *p == '+'))
			eneg = *p++ == '-';
		for (; p < end && is_digit(*p); p++)
			e = e * 10 + (*p - '0');
	}
	if (p != end) {
		sb_add(out, s, len);
		return;
	}
	while (nd > 0 && dig[nd - 1] == '0')
		nd--;
	if (neg)
		sb_addc(out, '-');
	if (nd == 0) {
		sb_add(out, "0.0", 3);
		return;
	}
	decpt += eneg ? -e : e;
	if (decpt <= -4 || decpt > 16) {
		long x = decpt - 1;

		sb_addc(out, dig[0]);
		if (nd > 1) {
			sb_addc(out, '.');
			sb_add(out, dig + 1, nd - 1);
		}
		sb_addf(out, "e%c%02ld", x < 0 ? '-' : '+', x < 0 ? -x : x);
	} else if (decpt <= 0) {
		sb_add(out, "0.", 2);
		for (long i = 0; i < -decpt; i++)
			sb_addc(out, '0');
		sb_add(out, dig, nd);
	} else if ((size_t)decpt >= nd) {
		sb_add(out, dig, nd);
		for (long i = 0; i < decpt - (long)nd; i++)
			sb_addc(out, '0');
		sb_add(out, ".0", 2);
	} else {
		sb_add(out, dig, (size_t)decpt);
		sb_addc(out, '.');
		sb_add(out, dig + decpt, nd - (size_t)decpt);
	}
}

/* "HH:MM:SS[.f]" at s: appended with the fraction as 6 digits; the bytes used, 0 if not that shape. */
static size_t add_time(struct sb *out, const char *s, size_t len)
{
	size_t i, f;

	if (len < 8 || !is_digit(s[0]) || !is_digit(s[1]) || s[2] != ':' || !is_digit(s[3]) ||
	    !is_digit(s[4]) || s[5] != ':' || !is_digit(s[6]) || !is_digit(s[7]) || s[0] > '2' ||
	    (s[0] == '2' && s[1] > '3'))
		return 0;
	sb_add(out, s, 8);
	i = 8;
	if (i < len && s[i] == '.') {
		sb_addc(out, '.');
		for (f = 0, i++; i < len && is_digit(s[i]); i++, f++)
			sb_addc(out, s[i]);
		for (; f < 6; f++)
			sb_addc(out, '0');
	}
	return i;
}

/* "+HH[:MM[:SS]]" at s, all of it: appended as +HH:MM[:SS]; 0 if not that shape. */
static int add_offset(struct sb *out, const char *s, size_t len)
{
	if (len < 3 || (s[0] != '+' && s[0] != '-') || !is_digit(s[1]) || !is_digit(s[2]))
		return 0;
	if (len == 3) {
		sb_add(out, s, 3);
		sb_add(out, ":00", 3);
		return 1;
	}
	if ((len == 6 || len == 9) && s[3] == ':' && is_digit(s[4]) && is_digit(s[5]) &&
	    (len == 6 || (s[6] == ':' && is_digit(s[7]) && is_digit(s[8])))) {
		/* Python prints the seconds of an offset only when there are some */
		sb_add(out, s, (len == 9 && s[7] == '0' && s[8] == '0') ? 6 : len);
		return 1;
	}
	return 0;
}

/* A date, a timestamp or a time as Python's isoformat() prints it; 0: not ISO (kept as text). */
static int iso(struct sb *out, enum kind k, const char *s, size_t len)
{
	size_t at = out->len, n;

	if (eq(s, len, "infinity") || eq(s, len, "-infinity")) {
		/* psycopg2 reads them as Python's datetime.max and datetime.min, in UTC */
		int pos = s[0] == 'i';

		if (k == K_DATE)
			sb_adds(out, pos ? "\"9999-12-31T00:00:00+00:00\"" : "\"0001-01-01T00:00:00+00:00\"");
		else if (k == K_TSTZ || k == K_TS)
			sb_adds(out, pos ? "\"9999-12-31T23:59:59.999999+00:00\"" : "\"0001-01-01T00:00:00+00:00\"");
		else
			return 0;
		return 1;
	}
	sb_addc(out, '"');
	if (k == K_DATE || k == K_TS || k == K_TSTZ) {
		if (len < 10 || !is_digit(s[0]) || !is_digit(s[3]) || s[4] != '-' || s[7] != '-' ||
		    (len > 10 && s[10] != ' '))
			goto no;	/* BC, or a year past 9999: Python has no such date */
		sb_add(out, s, 10);
		s += 10;
		len -= 10;
		if (k == K_DATE) {
			if (len)
				goto no;
			sb_adds(out, "T00:00:00+00:00\"");
			return 1;
		}
		if (len == 0)
			goto no;
		sb_addc(out, 'T');
		s++;
		len--;
	}
	if ((n = add_time(out, s, len)) == 0)
		goto no;
	s += n;
	len -= n;
	if (k == K_TSTZ || k == K_TIMETZ) {
		if (!add_offset(out, s, len))
			goto no;
	} else if (len) {
		goto no;
	} else if (k == K_TS) {
		sb_adds(out, "+00:00");
	}
	sb_addc(out, '"');
	return 1;
no:
	out->len = at;
	out->buf[at] = '\0';
	return 0;
}

/* One quoted string of an array or an hstore at *p ('"' there): decoded into d. */
static void dequote(const char **p, const char *end, struct sb *d)
{
	const char *s = *p + 1;

	sb_reset(d);
	while (s < end && *s != '"') {
		if (*s == '\\' && s + 1 < end)
			s++;
		sb_addc(d, *s++);
	}
	*p = s < end ? s + 1 : s;
}

static void scalar(struct sb *out, enum kind k, const char *f, size_t len);

/* hstore's text: "k"=>"v", "k2"=>NULL, as a JSON object in its order. */
static void hstore(struct sb *out, const char *f, size_t len)
{
	const char *p = f, *end = f + len;
	struct sb d = SB_INIT;
	int n = 0;

	sb_addc(out, '{');
	while (p < end) {
		while (p < end && (*p == ' ' || *p == ','))
			p++;
		if (p >= end || *p != '"')
			break;
		dequote(&p, end, &d);
		if (n++)
			sb_add(out, ", ", 2);
		py_quote(out, d.buf ? d.buf : "", d.len);
		sb_add(out, ": ", 2);
		while (p < end && (*p == ' ' || *p == '=' || *p == '>'))
			p++;
		if (p < end && *p == '"') {
			dequote(&p, end, &d);
			py_quote(out, d.buf ? d.buf : "", d.len);
		} else {
			sb_adds(out, "null");
			while (p < end && *p != ',')
				p++;
		}
	}
	sb_addc(out, '}');
	sb_free(&d);
}

/* A PostgreSQL array literal at *p ('{' there), its elements of kind k. */
static void array(struct sb *out, enum kind k, const char **p, const char *end, struct sb *d)
{
	const char *s = *p + 1;
	int n = 0;

	sb_addc(out, '[');
	while (s < end && *s != '}') {
		if (*s == ',') {
			s++;
			continue;
		}
		if (n++)
			sb_add(out, ", ", 2);
		if (*s == '{') {
			array(out, k, &s, end, d);
		} else if (*s == '"') {
			dequote(&s, end, d);
			scalar(out, k, d->buf ? d->buf : "", d->len);
		} else {
			const char *e = s;

			while (e < end && *e != ',' && *e != '}')
				e++;
			if (eq(s, (size_t)(e - s), "NULL"))
				sb_adds(out, "null");
			else
				scalar(out, k, s, (size_t)(e - s));
			s = e;
		}
	}
	sb_addc(out, ']');
	*p = s < end ? s + 1 : s;
}

static void scalar(struct sb *out, enum kind k, const char *f, size_t len)
{
	switch (k) {
	case K_INT:
		sb_add(out, f, len);
		return;
	case K_NUMERIC:
		/* psycopg2 gives Decimal('NaN'), which tap-postgres prints as null */
		if (eq(f, len, "NaN") || eq(f, len, "Infinity") || eq(f, len, "-Infinity"))
			sb_adds(out, "null");
		else
			numeric_str(out, f, len);
		return;
	case K_FLOAT:
		if (eq(f, len, "NaN") || eq(f, len, "Infinity") || eq(f, len, "-Infinity"))
			sb_adds(out, "null");
		else
			float_repr(out, f, len);
		return;
	case K_BOOL:
		sb_adds(out, len && f[0] == 't' ? "true" : "false");
		return;
	case K_BIT:
		sb_adds(out, eq(f, len, "1") ? "true" : "false");
		return;
	case K_TSTZ: case K_TS: case K_DATE: case K_TIME: case K_TIMETZ:
		if (iso(out, k, f, len))
			return;
		break;
	case K_HSTORE:
		hstore(out, f, len);
		return;
	case K_STRING:
		break;
	}
	py_quote(out, f, len);
}

void value_json(struct sb *out, enum kind k, int arr, const char *f, size_t len, int null)
{
	if (arr) {
		const char *p = f, *end = f + len;
		struct sb d = SB_INIT;

		/* tap-postgres prints a NULL array as [] */
		if (null) {
			sb_add(out, "[]", 2);
			return;
		}
		/* "[0:1]={...}": bounds that are not 1 */
		if (p < end && *p == '[') {
			while (p < end && *p != '=')
				p++;
			if (p < end)
				p++;
		}
		if (p < end && *p == '{')
			array(out, k, &p, end, &d);
		else
			py_quote(out, f, len);
		sb_free(&d);
		return;
	}
	if (null)
		sb_add(out, "null", 4);
	else
		scalar(out, k, f, len);
}
