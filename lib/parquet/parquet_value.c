/*
 * parquet_value: a record into the writer's open pages.  Its members are
 * walked 16 bytes at a time and matched to their columns, each value is
 * checked against its column and converted (integers exactly, doubles
 * that read back as written, RFC 3339 date-times), and its cell appended
 * to its column's page (STRING columns through their dictionary).  This
 * is the per-value path: it stays in one file, so that it is inlined.
 */
#include "parquet_impl.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "err.h"
#include "util.h"

/* ---- values ---- */

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * a[0..n) and b[0..n) are the same bytes.  Keys and dictionary strings are
 * short: two loads of each, overlapping, instead of a call of memcmp().
 */
static inline int same_bytes(const char *a, const char *b, size_t n)
{
	uint64_t x, y, u, v;
	uint32_t x4, y4, u4, v4;

	if (n >= 8 && n <= 16) {
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		memcpy(&u, a + n - 8, 8);
		memcpy(&v, b + n - 8, 8);
		return ((x ^ y) | (u ^ v)) == 0;
	}
	if (n >= 4 && n < 8) {
		memcpy(&x4, a, 4);
		memcpy(&y4, b, 4);
		memcpy(&u4, a + n - 4, 4);
		memcpy(&v4, b + n - 4, 4);
		return ((x4 ^ y4) | (u4 ^ v4)) == 0;
	}
	return memcmp(a, b, n) == 0;
}

/*
 * 1 with *v the value of the eight digits at p, else 0 (a byte is not a
 * digit).  SWAR: all eight checked at once, then pairs, quads and the two
 * halves combined in three multiplications.  Little-endian hosts only.
 */
static inline int digits8(const char *p, uint64_t *v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t x;

	memcpy(&x, p, 8);
	if (((x & UINT64_C(0xf0f0f0f0f0f0f0f0)) |
	     (((x + UINT64_C(0x0606060606060606)) & UINT64_C(0xf0f0f0f0f0f0f0f0)) >> 4)) !=
	    UINT64_C(0x3333333333333333))
		return 0;
	x -= UINT64_C(0x3030303030303030);
	x = (x * 10 + (x >> 8)) & UINT64_C(0x00ff00ff00ff00ff);
	x = (x * 100 + (x >> 16)) & UINT64_C(0x0000ffff0000ffff);
	*v = (x * 10000 + (x >> 32)) & UINT64_C(0xffffffff);
	return 1;
#else
	(void)p;
	(void)v;
	return 0;
#endif
}

/* Digits of a plain JSON integer, sign and leading zeros aside. */
static size_t integer_digits(const char *p, size_t n)
{
	size_t i = (n > 0 && p[0] == '-');

	while (i + 1 < n && p[i] == '0')
		i++;
	return n - i;
}

/* The magnitude u of a number, negative when neg, into int64: 0, or -1 out of range. */
static int int64_signed(uint64_t u, int neg, int64_t *out)
{
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

/*
 * A JSON number (validated) into int64 in one pass: 0; 1 when it is not
 * a plain integer (a fraction or an exponent: its first byte that is not a
 * digit, the sign aside, is '.', 'e' or 'E'); -1 when it is a plain
 * integer out of range, or of more than 19 digits.
 */
static int int64_of(const char *p, size_t n, int64_t *out)
{
	int neg = p[0] == '-';
	size_t i = (size_t)neg, lead;
	uint64_t u = 0;

	while (i + 1 < n && p[i] == '0')
		i++;
	lead = i;
	for (uint64_t x; n - i >= 8 && i - lead <= 11 && digits8(p + i, &x); i += 8)
		u = u * 100000000 + x;
	for (; i < n && is_digit(p[i]); i++) {
		if (i - lead == 19)
			break;
		u = u * 10 + (uint64_t)(p[i] - '0');	/* 19 digits: no wrap */
	}
	if (i < n)
		return integer_syntax(p + i, n - i) ? -1 : 1;
	return int64_signed(u, neg, out);
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
	return int64_signed(u, neg, out);
}

/*
 * A plain JSON integer of at most 38 digits into 16 big-endian two's
 * complement bytes: 0; -1, out unspecified, when the number holds a byte
 * that is not a digit (a fraction, an exponent), or more than 38 digits.
 */
static int parse_decimal(const char *p, size_t n, unsigned char out[16])
{
	int neg = p[0] == '-', k;
	size_t i;

	/* Validated JSON: no leading zeros, so n - neg digits. */
	if (n - (size_t)neg > 38)
		return -1;
#ifdef __SIZEOF_INT128__
	{
		__extension__ typedef unsigned __int128 u128;
		u128 v = 0;
		uint64_t hi, lo;

		/* Nineteen digits at a time in 64 bits, then one 128-bit step. */
		for (i = (size_t)neg; i < n;) {
			uint64_t chunk = 0, scale = 1;
			size_t end = i + 19 < n ? i + 19 : n;

			for (uint64_t x; end - i >= 8 && digits8(p + i, &x); i += 8) {
				chunk = chunk * 100000000 + x;
				scale *= 100000000;
			}
			for (; i < end; i++) {
				unsigned d = (unsigned char)p[i] - 48u;	/* '0' */

				if (d > 9)
					return -1;
				chunk = chunk * 10 + d;
				scale *= 10;
			}
			v = v * scale + chunk;
		}
		if (neg)
			v = -v;
		hi = (uint64_t)(v >> 64);
		lo = (uint64_t)v;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		hi = __builtin_bswap64(hi);
		lo = __builtin_bswap64(lo);
		memcpy(out, &hi, 8);
		memcpy(out + 8, &lo, 8);
		(void)k;
#else
		for (k = 0; k < 8; k++) {
			out[k] = (unsigned char)(hi >> (56 - 8 * k));
			out[8 + k] = (unsigned char)(lo >> (56 - 8 * k));
		}
#endif
		return 0;
	}
#else
	{
		uint32_t limb[4] = { 0, 0, 0, 0 };	/* little-endian limbs */

		/* Nine digits at a time: limb * 10^9 + chunk still fits in 64 bits. */
		for (i = (size_t)neg; i < n;) {
			uint64_t carry = 0, scale = 1;
			size_t end = i + 9 < n ? i + 9 : n;

			for (; i < end; i++) {
				if (!is_digit(p[i]))
					return -1;
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
		return 0;
	}
#endif
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
	int h, mi, s, off = 0, fine = 0;
	size_t i;

	if (n < 20)
		return -1;
	{
		/*
		 * YYYY-MM-DDTHH:MM:SS checked at once, without a branch per
		 * digit: every date-time takes this path.
		 */
		const unsigned char *u = (const unsigned char *)p;
		unsigned c0 = u[0] - 48u, c1 = u[1] - 48u, c2 = u[2] - 48u, c3 = u[3] - 48u;
		unsigned c5 = u[5] - 48u, c6 = u[6] - 48u, c8 = u[8] - 48u, c9 = u[9] - 48u;
		unsigned c11 = u[11] - 48u, c12 = u[12] - 48u, c14 = u[14] - 48u, c15 = u[15] - 48u;
		unsigned c17 = u[17] - 48u, c18 = u[18] - 48u;
		int y, m, d;

		/* 48: '0'.  One test for all: each digit 0 to 9, each separator in place. */
		if ((c0 > 9) | (c1 > 9) | (c2 > 9) | (c3 > 9) | (c5 > 9) | (c6 > 9) | (c8 > 9) | (c9 > 9) |
		    (c11 > 9) | (c12 > 9) | (c14 > 9) | (c15 > 9) | (c17 > 9) | (c18 > 9) | (u[4] != '-') |
		    (u[7] != '-') | (u[13] != ':') | (u[16] != ':'))
			return -1;
		if (p[10] != 'T' && p[10] != 't' && p[10] != ' ')
			return -1;
		y = (int)(c0 * 1000 + c1 * 100 + c2 * 10 + c3);
		m = (int)(c5 * 10 + c6);
		d = (int)(c8 * 10 + c9);
		h = (int)(c11 * 10 + c12);
		mi = (int)(c14 * 10 + c15);
		s = (int)(c17 * 10 + c18);
		if (m < 1 || m > 12 || d < 1 || (d > 28 && d > days_in_month(y, m)) || h > 23 || mi > 59 || s > 60)
			return -1;
		days = days_from_civil(y, m, d);
	}
	i = 19;
	if (p[i] == '.') {
		size_t start = ++i;

		static const int to_us[7] = { 1000000, 100000, 10000, 1000, 100, 10, 1 };

		/* Six digits at most count; a division by scale per digit cost more than the rest. */
		for (; i < n && i - start < 6 && is_digit(p[i]); i++)
			frac = frac * 10 + (p[i] - '0');
		frac *= to_us[i - start];
		for (; i < n && is_digit(p[i]); i++)
			fine |= p[i] != '0';
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
/*
 * A JSON number as DECIMAL(prec, scale): its value times 10^scale, which
 * must be an integer of at most prec digits, into 16 big-endian two's
 * complement bytes.  0, or -1 when it does not fit exactly.
 */
static int parse_scaled(const char *p, size_t n, int prec, int scale, unsigned char out[16])
{
	char digits[80];
	size_t nd = 0, i = 0;
	long e = 0, x = 0;
	int neg = 0, eneg = 0;

	if (i < n && p[i] == '-') {
		neg = 1;
		i++;
	}
	for (; i < n && p[i] != 'e' && p[i] != 'E'; i++) {
		if (p[i] == '.') {
			for (i++; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
				if (nd == 0 && p[i] == '0') {
					e--;
					continue;
				}
				if (nd >= 60)
					return -1;
				digits[nd++] = p[i];
				e--;
			}
			break;
		}
		if (nd == 0 && p[i] == '0')
			continue;
		if (nd >= 60)
			return -1;
		digits[nd++] = p[i];
	}
	if (i < n && (p[i] == 'e' || p[i] == 'E')) {
		i++;
		if (i < n && (p[i] == '-' || p[i] == '+'))
			eneg = p[i++] == '-';
		for (; i < n; i++) {
			if (x > 100000)
				return -1;
			x = x * 10 + (p[i] - '0');
		}
		e += eneg ? -x : x;
	}
	/* value = digits * 10^e; scaled: digits * 10^(e + scale) */
	e += scale;
	while (e < 0 && nd > 0 && digits[nd - 1] == '0') {
		nd--;
		e++;
	}
	if (nd == 0) {
		memset(out, 0, 16);
		return 0;
	}
	if (e < 0 || (long)nd + e > prec)
		return -1;
	for (; e > 0; e--)
		digits[nd++] = '0';
	if (neg) {
		memmove(digits + 1, digits, nd);
		digits[0] = '-';
		nd++;
	}
	return parse_decimal(digits, nd, out);
}

/* The most zeros plain_number() writes out: PostgreSQL numeric's 131072 digits before the point. */
#define PLAIN_ZEROS_MAX 131072

/*
 * A JSON number's value as plain decimal text, appended to out: '-' when
 * it is below zero, the integer digits ("0" when none), and '.' and the
 * fraction without its trailing zeros when it has one, so that the same
 * value always gives the same text (6000000042.00000000, 6000000042.0 and
 * 6.000000042e9 give 6000000042; 0E-8 and -0.0 give 0; 1E-20 gives
 * 0.00000000000000000001).  A value that would need more than
 * PLAIN_ZEROS_MAX zeros written out gives its digits as D.DDDe+N (or e-N).
 * -1 for an exponent beyond 10^15.
 */
static int plain_number(const char *p, size_t n, struct sb *out)
{
	const char *end = p + n, *q;
	long long x = 0, nint = 0, nfrac = 0, first = -1, last = -1, i, nd, e, point;
	int neg = 0, xneg = 0;

	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	for (q = p; q < end && is_digit(*q); q++)
		nint++;
	if (q < end && *q == '.')
		for (q++; q < end && is_digit(*q); q++)
			nfrac++;
	if (q < end && (*q == 'e' || *q == 'E')) {
		q++;
		if (q < end && (*q == '+' || *q == '-'))
			xneg = *q++ == '-';
		for (; q < end && is_digit(*q); q++) {
			x = x * 10 + (*q - '0');
			if (x > 1000000000000000LL)
				return -1;
		}
	}
	/* The digits S (the '.' skipped): S[i] is p[i], or p[i + 1] past the point. */
#define S(i) p[(i) < nint ? (i) : (i) + 1]
	for (i = 0; i < nint + nfrac; i++) {
		if (S(i) != '0') {
			if (first < 0)
				first = i;
			last = i;
		}
	}
	if (first < 0) {
		sb_addc(out, '0');
		return 0;
	}
	/* The value is D x 10^e, D = S[first..last] (nd digits), point of them before the point. */
	nd = last - first + 1;
	e = (xneg ? -x : x) - nfrac + (nint + nfrac - 1 - last);
	point = nd + e;
	if (neg)
		sb_addc(out, '-');
	if (e > PLAIN_ZEROS_MAX || point < -PLAIN_ZEROS_MAX) {
		sb_addc(out, S(first));
		if (nd > 1)
			sb_addc(out, '.');
		for (i = first + 1; i <= last; i++)
			sb_addc(out, S(i));
		sb_addf(out, "e%c%lld", point > 0 ? '+' : '-', point > 0 ? point - 1 : 1 - point);
		return 0;
	}
	if (point <= 0) {
		sb_adds(out, "0.");
		for (i = point; i < 0; i++)
			sb_addc(out, '0');
	}
	for (i = 0; i < nd; i++) {
		if (i == point && point > 0)
			sb_addc(out, '.');
		sb_addc(out, S(first + i));
	}
	for (i = 0; i < e; i++)
		sb_addc(out, '0');
#undef S
	return 0;
}

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
		/* The usual case in one pass; the others as before. */
		if (col->kind == PQ_INT64 && int64_of(v->p, v->len, &cell->i) == 0)
			return 0;
		if (col->kind == PQ_DECIMAL && parse_decimal(v->p, v->len, cell->dec) == 0)
			return 0;
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
		(void)parse_decimal(v->p, v->len, cell->dec);
		return 0;
	case PQ_NUMERIC:
		if (v->type != JSON_NUMBER)
			return widen(f, PQ_TEXT, JSON_NONE, 1, "is not a number");
		if (parse_scaled(v->p, v->len, col->precision, col->scale, cell->dec) != 0)
			return widen(f, PQ_TEXT, JSON_NONE, 0, "does not fit the column's DECIMAL");
		return 0;
	case PQ_NUMTEXT:
		if (v->type != JSON_NUMBER)
			return widen(f, PQ_TEXT, JSON_NONE, 1, "is not a number");
		cell->p = NULL;
		cell->off = pw->scratch.len;
		if (plain_number(v->p, v->len, &pw->scratch) != 0)
			return widen(f, PQ_TEXT, JSON_NONE, 0, "has an exponent beyond 10^15");
		cell->len = pw->scratch.len - cell->off;
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

/*
 * The dictionary's hash table.  A slot holds an entry's index + 1 in its
 * low DICT_INDEX_BITS and the top bits of the entry's hash above them, so
 * that a probe passes over other entries without reading them: with many
 * streams the tables are cold and each entry read is a cache miss.  An
 * entry's length is the 4 bytes before its bytes in dvals (PLAIN).
 */
#define DICT_INDEX_BITS 19	/* DICT_MAX_BYTES / 4 entries at most, + 1 */
#define DICT_INDEX_MASK ((1u << DICT_INDEX_BITS) - 1)
#define DICT_SLOTS_MIN 16

static inline uint32_t dict_tag(uint64_t h)
{
	return (uint32_t)(h >> 32) & ~DICT_INDEX_MASK;
}

static inline uint32_t dict_len(const struct pq_colw *c, uint32_t e)
{
	uint32_t len;

	memcpy(&len, c->dvals.buf + c->doff[e] - 4, 4);
	return len;
}

static void dict_insert(struct pq_colw *c, uint32_t e, uint64_t h)
{
	uint32_t j = (uint32_t)h & (c->nslots - 1);

	while (c->dslots[j])
		j = (j + 1) & (c->nslots - 1);
	c->dslots[j] = dict_tag(h) | (e + 1);
}

/* The table twice as large (DICT_SLOTS_MIN at first), its entries hashed again. */
static void dict_grow(struct pq_colw *c)
{
	uint32_t i;

	c->nslots = c->nslots ? c->nslots * 2 : DICT_SLOTS_MIN;
	free(c->dslots);
	c->dslots = xcalloc(c->nslots, sizeof(*c->dslots));
	for (i = 0; i < c->ndict; i++)
		dict_insert(c, i, util_hash_bytes(c->dvals.buf + c->doff[i], dict_len(c, i)));
}

/* The dictionary index of a value, added when new.  0, or -1 when the dictionary is full. */
static int dict_index(struct pq_colw *c, const char *p, size_t len, uint32_t *index)
{
	uint64_t h = util_hash_bytes(p, len);
	uint32_t j, e, s, tag = dict_tag(h);

	if (c->nslots) {
		for (j = (uint32_t)h & (c->nslots - 1); (s = c->dslots[j]) != 0; j = (j + 1) & (c->nslots - 1)) {
			if ((s & ~DICT_INDEX_MASK) != tag)
				continue;
			e = (s & DICT_INDEX_MASK) - 1;
			if (dict_len(c, e) == len && same_bytes(c->dvals.buf + c->doff[e], p, len)) {
				*index = e;
				return 0;
			}
		}
	}
	if (c->dvals.len + 4 + len > DICT_MAX_BYTES)
		return -1;
	if (c->ndict == c->dcap) {
		c->dcap = c->dcap ? c->dcap * 2 : 64;
		c->doff = xrealloc(c->doff, c->dcap * sizeof(*c->doff));
	}
	put_le(&c->dvals, len, 4);
	c->doff[c->ndict] = (uint32_t)c->dvals.len;
	sb_add(&c->dvals, p, len);
	e = c->ndict++;
	/* Filled to three quarters at most: small tables, fewer lines to miss. */
	if (c->ndict * 4 > c->nslots * 3)
		dict_grow(c);
	else
		dict_insert(c, e, h);
	*index = e;
	return 0;
}

/* pq_rle_put(), the value of a long run inline: definition levels mostly are. */
static inline void rle_put(struct pq_rle *e, uint32_t v)
{
	if (v == e->cur && e->repeat >= 8) {
		e->repeat++;
		return;
	}
	pq_rle_put(e, v);
}

/* sb_add(), the room checked inline: two calls per value cost more than a short value. */
static inline void add_bytes(struct sb *b, const void *p, size_t n)
{
	if (b->cap - b->len <= n)
		sb_grow(b, n);
	if (n)
		memcpy(b->buf + b->len, p, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

/* Distinct values a dictionary sees first: all distinct, it gives way to PLAIN. */
#define DICT_PROBE 1024

/* Append the cell to its column's page.  0, or -1 on a write error. */
static int put_value(struct pq_writer *pw, size_t ci, const struct pq_cell *cell)
{
	struct pq_colw *c = &pw->cols[ci];
	enum pq_kind k = pw->s->cols[ci].kind;
	size_t before = c->vals.len;
	const char *p;
	uint32_t index = 0;

	if (c->dict && cell && !cell->null && c->ndict == DICT_PROBE && c->values - c->nulls == DICT_PROBE) {
		/*
		 * The row group's first DICT_PROBE values were all distinct (ids,
		 * e-mails): a dictionary would hold every value once more and
		 * save nothing.  PLAIN from the next page on, as when it fills.
		 */
		if (pq_flush_page(pw, ci) != 0)
			return -1;
		c->dict = 0;
	} else if (c->dict && cell && !cell->null) {
		p = cell->p ? cell->p : pw->scratch.buf + cell->off;
		if (dict_index(c, p, cell->len, &index) != 0) {
			/* Too many distinct values: PLAIN from the next page on. */
			if (pq_flush_page(pw, ci) != 0)
				return -1;
			c->dict = 0;
		}
	}
	c->page_rows++;
	c->values++;
	if (cell == NULL || cell->null) {
		rle_put(&c->rle, 0);
		c->nulls++;
		return 0;
	}
	rle_put(&c->rle, 1);
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
	case PQ_NUMERIC:
		add_bytes(&c->vals, cell->dec, 16);
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
		add_bytes(&c->vals, p, cell->len);
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
	    same_bytes(s->cols[i].qname, key->p, key->len)) {
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
		    pq_flush_page(pw, i) != 0)
			return -2;
	}
	pw->rows++;
	pw->rg_rows++;
	if ((pw->rg_rows >= pw->o.row_group_rows || pw->rg_bytes >= pw->o.row_group_size) &&
	    pq_flush_row_group(pw) != 0)
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

int pq_writer_row_begin(struct pq_writer *pw)
{
	return add_begin(pw);
}

static struct pq_cell *cell_set(struct pq_writer *pw, size_t i)
{
	struct pq_cell *c = &pw->cells[i];

	c->gen = pw->gen;
	c->null = 0;
	return c;
}

void pq_writer_cell_int(struct pq_writer *pw, size_t i, int64_t v)
{
	cell_set(pw, i)->i = v;
}

void pq_writer_cell_double(struct pq_writer *pw, size_t i, double v)
{
	cell_set(pw, i)->d = v;
}

void pq_writer_cell_bytes(struct pq_writer *pw, size_t i, const void *p, size_t n)
{
	struct pq_cell *c = cell_set(pw, i);

	c->p = p ? p : "";
	c->len = n;
}

int pq_writer_cell_json(struct pq_writer *pw, size_t i, const struct json_span *v, int esc, struct pq_fail *f)
{
	int r;

	pw->cells[i].gen = pw->gen;
	r = parse_value(pw, &pw->s->cols[i], v, esc, &pw->cells[i], f);
	if (r != 0) {
		f->column = i;
		f->value = *v;
	}
	return r;
}

int pq_writer_row_end(struct pq_writer *pw)
{
	return add_end(pw);
}

const struct pq_schema *pq_writer_schema(const struct pq_writer *pw)
{
	return pw->s;
}

int pq_writer_add_members(struct pq_writer *pw, const char *rec, const struct json_member *m,
			  size_t n, struct pq_fail *f)
{
	size_t i, next = 0;
	int r;

	if (add_begin(pw) != 0)
		return -2;
	for (i = 0; i < n; i++) {
		struct json_span key = json_member_key(rec, &m[i]), val = json_member_val(rec, &m[i]);

		r = add_member(pw, &key, m[i].key_esc, &val, m[i].val_esc, &next, f);
		if (r != 0)
			return r;
	}
	return add_end(pw);
}
