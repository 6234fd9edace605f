/*
 * dataspoc-tap-postgres: COPY's binary format, each field turned back into
 * the text that its type's output function prints (DateStyle ISO, a session
 * in UTC), which value.c then prints as it prints the text format's.  The
 * server skips its output functions for numbers and times and COPY's
 * escaping, its largest costs after jsonb's; the tap skips the unescaping.
 */
#include <stdint.h>
#include <string.h>

#include "sb.h"
#include "tap_pg.h"

enum bin_type bin_type_of(unsigned oid, int utc)
{
	switch (oid) {
	case 16: return B_BOOL;
	case 21: return B_INT2;
	case 23: return B_INT4;
	case 20: return B_INT8;
	case 25: case 1043: case 1042: case 114: return B_TEXT;	/* text, varchar, char, json */
	case 3802: return B_JSONB;
	case 2950: return B_UUID;
	case 1700: return B_NUMERIC;
	case 1082: return B_DATE;
	case 1114: return B_TS;
	case 1184: return utc ? B_TSTZ : B_NONE;	/* else the offsets of the session's zone */
	default: return B_NONE;
	}
}

static int64_t be64(const unsigned char *p)
{
	return (int64_t)((uint64_t)bin_be32(p) << 32 | bin_be32(p + 4));
}

/* n in decimal at d, at least width digits; the byte after them. */
static char *put_uint(char *d, uint64_t n, int width)
{
	char b[24];
	int i = sizeof(b);

	do {
		b[--i] = (char)('0' + n % 10);
		n /= 10;
	} while (n || (int)sizeof(b) - i < width);
	memcpy(d, b + i, sizeof(b) - (size_t)i);
	return d + (sizeof(b) - (size_t)i);
}

static void add_int(struct sb *out, int64_t v)
{
	char b[24], *d = b;

	if (v < 0) {
		*d++ = '-';
		d = put_uint(d, (uint64_t)0 - (uint64_t)v, 1);
	} else {
		d = put_uint(d, (uint64_t)v, 1);
	}
	sb_add(out, b, (size_t)(d - b));
}

/* Base-10000 digit d of a numeric's digits (n of them at p): 0 past them. */
static unsigned ndig(const unsigned char *p, int n, int d)
{
	return d >= 0 && d < n ? bin_be16(p + 2 * d) : 0;
}

/* numeric_send's layout: ndigits, weight, sign, dscale, then base-10000 digits. */
static int numeric_text(struct sb *out, const unsigned char *f, size_t len)
{
	int ndigits, weight, dscale, d;
	unsigned sign;
	char *w;

	if (len < 8)
		return -1;
	ndigits = (int16_t)bin_be16(f);
	weight = (int16_t)bin_be16(f + 2);
	sign = bin_be16(f + 4);
	dscale = (int16_t)bin_be16(f + 6);
	if (ndigits < 0 || dscale < 0 || len != 8 + 2 * (size_t)ndigits)
		return -1;
	if (sign == 0xC000) {
		sb_adds(out, "NaN");
		return 0;
	}
	if (sign == 0xD000 || sign == 0xF000) {
		sb_adds(out, sign == 0xD000 ? "Infinity" : "-Infinity");
		return 0;
	}
	if (sign != 0 && sign != 0x4000)
		return -1;
	for (d = 0; d < ndigits; d++)
		if (bin_be16(f + 8 + 2 * d) > 9999)
			return -1;
	f += 8;
	/* the sign, the integer part's groups, the point and dscale digits (4 a group, rounded up) */
	sb_grow(out, 1 + 4 * (size_t)(weight < 0 ? 1 : weight + 1) + 1 + (size_t)dscale + 4);
	w = out->buf + out->len;
	if (sign == 0x4000)
		*w++ = '-';
	/* the integer part: the first group without its leading zeros */
	if (weight < 0)
		*w++ = '0';
	else
		for (d = 0; d <= weight; d++)
			w = put_uint(w, ndig(f, ndigits, d), d == 0 ? 1 : 4);
	/* dscale digits after the point, the groups' digits cut or padded */
	if (dscale > 0) {
		*w++ = '.';
		for (d = weight + 1; dscale > 0; d++, dscale -= 4) {
			unsigned dig = ndig(f, ndigits, d);
			char g[4];

			for (int i = 3; i >= 0; i--, dig /= 10)
				g[i] = (char)('0' + dig % 10);
			memcpy(w, g, dscale < 4 ? (size_t)dscale : 4);
			w += dscale < 4 ? dscale : 4;
		}
	}
	*w = '\0';
	out->len = (size_t)(w - out->buf);
	return 0;
}

/* The proleptic Gregorian date of day z after 1970-01-01 (negative before); y 0 is 1 BC. */
static void civil(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* Days from 1970-01-01 to 2000-01-01, PostgreSQL's epoch. */
#define PG_EPOCH_DAYS 10957
#define USECS_PER_DAY INT64_C(86400000000)

static char *put2(char *w, int v)
{
	*w++ = (char)('0' + v / 10);
	*w++ = (char)('0' + v % 10);
	return w;
}

/* The day of v microseconds after 2000-01-01 (floored), and *us into it. */
static int64_t day_of(int64_t v, int64_t *us)
{
	int64_t days = v / USECS_PER_DAY;

	*us = v % USECS_PER_DAY;
	if (*us < 0) {
		*us += USECS_PER_DAY;
		days--;
	}
	return days;
}

/* "HH:MM:SS" at w of us microseconds into a day (the fraction is the caller's). */
static char *put_hms(char *w, int64_t us)
{
	w = put2(w, (int)(us / 3600000000));
	*w++ = ':';
	w = put2(w, (int)(us / 60000000 % 60));
	*w++ = ':';
	return put2(w, (int)(us / 1000000 % 60));
}

/* "YYYY-MM-DD" at w of day days after 2000-01-01; *bc when before 1 AD. */
static char *put_date(char *w, int64_t days, int *bc)
{
	int64_t y;
	int m, d;

	civil(days + PG_EPOCH_DAYS, &y, &m, &d);
	*bc = y <= 0;
	w = put_uint(w, (uint64_t)(y > 0 ? y : 1 - y), 4);
	*w++ = '-';
	w = put2(w, m);
	*w++ = '-';
	return put2(w, d);
}


/* timestamp[tz]'s text, ISO: the fraction's trailing zeros dropped; tz: "+00" (UTC). */
static int timestamp_text(struct sb *out, const unsigned char *f, size_t len, int tz)
{
	char b[64], *w = b;
	int64_t v, days, us;
	int bc;

	if (len != 8)
		return -1;
	v = be64(f);
	if (v == INT64_MAX || v == INT64_MIN) {
		sb_adds(out, v == INT64_MAX ? "infinity" : "-infinity");
		return 0;
	}
	days = day_of(v, &us);
	w = put_date(w, days, &bc);
	*w++ = ' ';
	w = put_hms(w, us);
	if (us % 1000000) {
		int frac = (int)(us % 1000000), n = 6;

		*w++ = '.';
		for (int i = 5; i >= 0; i--, frac /= 10)
			w[i] = (char)('0' + frac % 10);
		while (w[n - 1] == '0')
			n--;
		w += n;
	}
	if (tz) {
		memcpy(w, "+00", 3);
		w += 3;
	}
	if (bc) {
		memcpy(w, " BC", 3);
		w += 3;
	}
	sb_add(out, b, (size_t)(w - b));
	return 0;
}

static int date_text(struct sb *out, const unsigned char *f, size_t len)
{
	char b[32], *w = b;
	int32_t v;
	int bc;

	if (len != 4)
		return -1;
	v = (int32_t)bin_be32(f);
	if (v == INT32_MAX || v == INT32_MIN) {
		sb_adds(out, v == INT32_MAX ? "infinity" : "-infinity");
		return 0;
	}
	w = put_date(w, v, &bc);
	if (bc) {
		memcpy(w, " BC", 3);
		w += 3;
	}
	sb_add(out, b, (size_t)(w - b));
	return 0;
}

static void uuid_text(struct sb *out, const unsigned char *f)
{
	static const char hex[] = "0123456789abcdef";
	char b[36];
	int j = 0;

	for (int i = 0; i < 16; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			b[j++] = '-';
		b[j++] = hex[f[i] >> 4];
		b[j++] = hex[f[i] & 15];
	}
	sb_add(out, b, sizeof(b));
}

int bin_text(struct sb *out, enum bin_type t, const unsigned char *f, size_t len)
{
	switch (t) {
	case B_BOOL:
		if (len != 1)
			return -1;
		sb_addc(out, f[0] ? 't' : 'f');
		return 0;
	case B_INT2:
		if (len != 2)
			return -1;
		add_int(out, (int16_t)bin_be16(f));
		return 0;
	case B_INT4:
		if (len != 4)
			return -1;
		add_int(out, (int32_t)bin_be32(f));
		return 0;
	case B_INT8:
		if (len != 8)
			return -1;
		add_int(out, be64(f));
		return 0;
	case B_TEXT:
		sb_add(out, f, len);
		return 0;
	case B_JSONB:
		/* a version byte (1), then jsonb_out's text */
		if (len < 1 || f[0] != 1)
			return -1;
		sb_add(out, f + 1, len - 1);
		return 0;
	case B_UUID:
		if (len != 16)
			return -1;
		uuid_text(out, f);
		return 0;
	case B_NUMERIC:
		return numeric_text(out, f, len);
	case B_DATE:
		return date_text(out, f, len);
	case B_TS:
		return timestamp_text(out, f, len, 0);
	case B_TSTZ:
		return timestamp_text(out, f, len, 1);
	case B_NONE:
		break;
	}
	return -1;
}

/*
 * What value.c prints for the text of a timestamptz, timestamp or date
 * (kind k, the type's own) of years 1 to 9999, written at once: the quoted
 * ISO 8601 text, a fraction of 6 digits when there is one, +00:00.  1 when
 * written; 0 otherwise (infinity, BC, a year past 9999: value.c decides).
 */
int bin_iso(struct sb *out, enum bin_type t, enum kind k, const unsigned char *f, size_t len)
{
	char b[48], *w = b;
	int64_t days, us = 0, y;
	int m, d;

	if (t == B_DATE && k == K_DATE && len == 4) {
		int32_t v = (int32_t)bin_be32(f);

		if (v == INT32_MAX || v == INT32_MIN)
			return 0;
		days = v;
	} else if (((t == B_TSTZ && k == K_TSTZ) || (t == B_TS && k == K_TS)) && len == 8) {
		int64_t v = be64(f);

		if (v == INT64_MAX || v == INT64_MIN)
			return 0;
		days = day_of(v, &us);
	} else {
		return 0;
	}
	civil(days + PG_EPOCH_DAYS, &y, &m, &d);
	if (y < 1 || y > 9999)
		return 0;
	*w++ = '"';
	w = put_uint(w, (uint64_t)y, 4);
	*w++ = '-';
	w = put2(w, m);
	*w++ = '-';
	w = put2(w, d);
	*w++ = 'T';
	w = put_hms(w, us);
	if (us % 1000000) {
		int frac = (int)(us % 1000000);

		*w++ = '.';
		for (int i = 5; i >= 0; i--, frac /= 10)
			w[i] = (char)('0' + frac % 10);
		w += 6;
	}
	memcpy(w, "+00:00\"", 7);
	w += 7;
	sb_add(out, b, (size_t)(w - b));
	return 1;
}
