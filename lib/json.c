/* json: one-pass validation and in-place traversal of JSON text. */
#include "json.h"

#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define PFX "invalid JSON: "
#define E_CHAR PFX "unexpected character"
#define E_END PFX "unexpected end of input"
#define E_UNTERM PFX "unterminated string"
#define E_NUMBER PFX "invalid number"
#define E_ESCAPE PFX "invalid escape"
#define E_UESCAPE PFX "invalid \\u escape"
#define E_SURROGATE PFX "lone surrogate"
#define E_UTF8 PFX "invalid UTF-8"
#define E_CTRL PFX "control character in string"
#define E_DEPTH PFX "nesting too deep"

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Error state of one scan: where and what. */
struct jerr {
	const unsigned char *at;
	const char *msg;
};

static const unsigned char *fail(struct jerr *e, const unsigned char *at,
				 const char *msg)
{
	e->at = at;
	e->msg = msg;
	return NULL;
}

/* Eight bytes, the first in the low byte whatever the machine's order. */
static uint64_t load64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap64(v);
#endif
	return v;
}

/*
 * High bit set in each byte of x that is '"', '\\', below 0x20 or above
 * 0x7f.  Borrows can flag bytes above the lowest real hit, never below it,
 * so only the lowest flagged byte is meaningful.
 */
static uint64_t special8(uint64_t x)
{
	uint64_t q = x ^ (ONES * '"');
	uint64_t b = x ^ (ONES * '\\');

	return (((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) |
		((b - ONES) & ~b) | x) & HIGHS;
}

static unsigned first_flagged(uint64_t m)
{
	return (unsigned)__builtin_ctzll(m) >> 3;
}

/*
 * 1 for bytes that may sit in a string without any further check: 0x20 to
 * 0x7f but '"' and '\\'.
 */
static const unsigned char plain[256] = {
	[0x20] = 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
};

static int hexval(unsigned c)
{
	if (c - '0' < 10)
		return (int)(c - '0');
	c |= 0x20;
	if (c - 'a' < 6)
		return (int)(c - 'a' + 10);
	return -1;
}

/* Four hex digits at p (p + 4 <= end checked by the caller). */
static long hex4(const unsigned char *p)
{
	int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]), d = hexval(p[3]);

	if ((a | b | c | d) < 0)
		return -1;
	return (long)a << 12 | b << 8 | c << 4 | d;
}

static int is_hex4(const unsigned char *p, const unsigned char *end)
{
	return end - p >= 4 && hex4(p) >= 0;
}

/* p at a backslash; returns the byte after the escape. */
static const unsigned char *scan_escape(const unsigned char *p,
					const unsigned char *end,
					struct jerr *e)
{
	const unsigned char *bs = p;
	long cp, lo;

	if (++p == end)
		return fail(e, p, E_UNTERM);
	switch (*p) {
	case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r':
	case 't':
		return p + 1;
	case 'u':
		break;
	default:
		return fail(e, bs, E_ESCAPE);
	}
	p++;
	if (!is_hex4(p, end))
		return fail(e, bs, E_UESCAPE);
	cp = hex4(p);
	p += 4;
	if (cp < 0xd800 || cp > 0xdfff)
		return p;
	if (cp >= 0xdc00)
		return fail(e, bs, E_SURROGATE);
	if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !is_hex4(p + 2, end))
		return fail(e, bs, E_SURROGATE);
	lo = hex4(p + 2);
	if (lo < 0xdc00 || lo > 0xdfff)
		return fail(e, bs, E_SURROGATE);
	return p + 6;
}

/* p at a byte >= 0x80; returns the byte after its UTF-8 sequence (RFC 3629). */
static const unsigned char *scan_utf8(const unsigned char *p,
				      const unsigned char *end,
				      struct jerr *e)
{
	unsigned c = *p, lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (c < 0xc2)
		return fail(e, p, E_UTF8);
	if (c < 0xe0) {
		n = 1;
	} else if (c < 0xf0) {
		n = 2;
		if (c == 0xe0)
			lo = 0xa0;	/* overlong */
		else if (c == 0xed)
			hi = 0x9f;	/* UTF-16 surrogates */
	} else if (c < 0xf5) {
		n = 3;
		if (c == 0xf0)
			lo = 0x90;	/* overlong */
		else if (c == 0xf4)
			hi = 0x8f;	/* above U+10FFFF */
	} else {
		return fail(e, p, E_UTF8);
	}
	if ((size_t)(end - p) <= n || p[1] < lo || p[1] > hi)
		return fail(e, p, E_UTF8);
	for (i = 2; i <= n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return fail(e, p, E_UTF8);
	return p + n + 1;
}

/*
 * The first byte at or after p that is '"', '\\', below 0x20 or above 0x7f,
 * or end: the run of bytes a string may hold without any further check.
 */
#ifdef __SSE2__
/* A bit for each of the 16 bytes at p that is '"', '\\', below 0x20 or above 0x7f. */
static inline unsigned special16(const unsigned char *p)
{
	const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
	const __m128i space = _mm_set1_epi8(0x20);
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);

	/* Signed: bytes above 0x7f are negative, so below ' ' too. */
	return (unsigned)_mm_movemask_epi8(_mm_or_si128(
		_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
		_mm_cmplt_epi8(x, space)));
}

/* A bit for each of the 16 bytes at p that is not a digit. */
static inline unsigned nondigit16(const unsigned char *p)
{
	const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8('9');
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);

	/* Signed: bytes above 0x7f are negative, so below '0' too. */
	return (unsigned)_mm_movemask_epi8(_mm_or_si128(
		_mm_cmplt_epi8(x, zero), _mm_cmpgt_epi8(x, nine)));
}
#endif

static inline const unsigned char *plain_run(const unsigned char *p,
					     const unsigned char *end)
{
	uint64_t m;
#ifdef __SSE2__
	unsigned mm;

	while (end - p >= 16) {
		mm = special16(p);
		if (mm)
			return p + __builtin_ctz(mm);
		p += 16;
	}
#endif
	while (end - p >= 8) {
		m = special8(load64(p));
		if (m)
			return p + first_flagged(m);
		p += 8;
	}
	while (p < end && plain[*p])
		p++;
	return p;
}

/*
 * p inside a string, at the end of a plain run; returns the byte after the
 * closing quote.  *esc is set when the string holds a backslash.
 */
/* Inlined into the scanner (both copies), as they were when it was one. */
#define HOT static inline __attribute__((always_inline))

HOT const unsigned char *scan_string(const unsigned char *p,
					const unsigned char *end, int *esc,
					struct jerr *e)
{
	for (;;) {
		if (p == end)
			return fail(e, p, E_UNTERM);
		if (*p == '"')
			return p + 1;
		if (*p == '\\') {
			*esc = 1;
			p = scan_escape(p, end, e);
		} else if (*p < 0x20) {
			return fail(e, p, E_CTRL);
		} else {
			p = scan_utf8(p, end, e);
		}
		if (p == NULL)
			return NULL;
		p = plain_run(p, end);
	}
}

static int is_digit(unsigned c)
{
	return c - '0' < 10;
}

/* The first byte at or after p that is not a digit, or end. */
static inline const unsigned char *digits(const unsigned char *p,
					  const unsigned char *end)
{
#ifdef __SSE2__
	unsigned mm;

	while (end - p >= 16) {
		mm = nondigit16(p);
		if (mm)
			return p + __builtin_ctz(mm);
		p += 16;
	}
#endif
	while (p < end && is_digit(*p))
		p++;
	return p;
}

/* p at '-' or a digit. */
HOT const unsigned char *scan_number(const unsigned char *p,
					const unsigned char *end,
					struct jerr *e)
{
	if (*p == '-' && ++p == end)
		return fail(e, p, E_NUMBER);
	if (*p == '0') {
		if (++p < end && is_digit(*p))
			return fail(e, p, E_NUMBER);	/* leading zero */
	} else if (is_digit(*p)) {
		p = digits(p + 1, end);
	} else {
		return fail(e, p, E_NUMBER);
	}
	if (p < end && *p == '.') {
		if (++p == end || !is_digit(*p))
			return fail(e, p, E_NUMBER);
		p = digits(p + 1, end);
	}
	if (p < end && (*p | 0x20) == 'e') {
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !is_digit(*p))
			return fail(e, p, E_NUMBER);
		p = digits(p + 1, end);
	}
	return p;
}

static int is_ws(unsigned c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

static const unsigned char *ws_run(const unsigned char *p,
				   const unsigned char *end)
{
	while (p < end && is_ws(*p))
		p++;
	return p;
}

/*
 * Taps print compact JSON: one compare when no whitespace follows.  Any
 * byte up to ' ' may start a run; ws_run() stops at the first that is not
 * whitespace, where the caller's check of the next token fails as before.
 */
static inline const unsigned char *ws(const unsigned char *p,
				      const unsigned char *end)
{
	if (p < end && *p <= ' ')
		p = ws_run(p, end);
	return p;
}

/* Compare a key's raw bytes (no escapes, so no NUL) with a C string. */
static int raw_equal(const unsigned char *s, size_t n, const char *k)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)k[i] != s[i])
			return 0;
	return k[n] == '\0';
}

HOT int match_key(const unsigned char *q, const unsigned char *after,
		     int esc, const char *const keys[], size_t nkeys)
{
	struct json_span s;
	size_t i, n = (size_t)(after - q) - 2;

	if (!esc && n > 0) {
		/* Most keys differ from most names at their first byte. */
		for (i = 0; i < nkeys; i++)
			if ((unsigned char)keys[i][0] == q[1] && raw_equal(q + 2, n - 1, keys[i] + 1))
				return (int)i;
		return -1;
	}
	for (i = 0; i < nkeys; i++) {
		if (!esc) {
			if (raw_equal(q + 1, n, keys[i]))
				return (int)i;
			continue;
		}
		s.p = (const char *)q;
		s.len = n + 2;
		s.type = JSON_STRING;
		if (json_string_equal(&s, keys[i], 0))
			return (int)i;
	}
	return -1;
}

/* Every one of the n spans absent. */
static void clear_spans(struct json_span v[], size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		v[i].p = NULL;
		v[i].len = 0;
		v[i].type = JSON_NONE;
	}
}

/*
 * The scanner.  Inlined twice: with mem NULL (every branch on it folded
 * away, so plain validation pays nothing for it) and with mem.  While
 * inside the object whose members are noted, ndepth is its depth (2), else
 * 0: no key or value is at depth 0.  The member being noted is *mcur (NULL
 * past mem->cap); mnext is the next free one.  vt is the type of the value
 * just scanned, known where it was scanned: nothing looks at its first
 * byte again.  Separators are tried first without whitespace around them
 * (compact JSON, what taps print), then after it.
 */
HOT int
scan_body(const char *buf, size_t len, const char *const keys[], size_t nkeys,
	  struct json_span vals[], struct json_members *mem,
	  struct json_span *out, size_t *errpos, const char **errmsg)
{
	const unsigned char *b = (const unsigned char *)buf;
	const unsigned char *p, *end = b + len, *start, *vstart = NULL, *q;
	struct json_member *mcur = NULL, *mnext = NULL, *mlim = NULL;
	uint64_t objbits[JSON_MAX_DEPTH / 64];
	unsigned depth = 0, ndepth = 0, rmax = 0;
	int slot = -1, esc = 0, in_obj = 0;
	enum json_type vt = JSON_NONE;
	size_t mover = 0;
	struct jerr e = { NULL, NULL };

	clear_spans(vals, nkeys);
	if (mem) {
		mnext = mem->m;
		mlim = mem->m + mem->cap;
	}
	p = start = ws(b, end);
value:
	if (p == end) {
		fail(&e, p, E_END);
		goto bad;
	}
	/* Strings first, without the switch's jump: most values are strings. */
	if (*p == '"')
		goto string;
	switch (*p) {
	case '{':
		if (depth == JSON_MAX_DEPTH) {
			fail(&e, p, E_DEPTH);
			goto bad;
		}
		objbits[depth >> 6] |= UINT64_C(1) << (depth & 63);
		depth++;
		p = ws(p + 1, end);
		if (p < end && *p == '}') {
			p++;
			vt = JSON_OBJECT;
			goto close;
		}
		in_obj = 1;
		goto key;
	case '[':
		if (depth == JSON_MAX_DEPTH) {
			fail(&e, p, E_DEPTH);
			goto bad;
		}
		objbits[depth >> 6] &= ~(UINT64_C(1) << (depth & 63));
		depth++;
		p = ws(p + 1, end);
		if (p < end && *p == ']') {
			p++;
			vt = JSON_ARRAY;
			goto close;
		}
		in_obj = 0;
		goto value;
	case '"':
string:
		vt = JSON_STRING;
		esc = 0;
		p = plain_run(p + 1, end);
		if (p < end && *p == '"') {
			p++;
			break;
		}
		p = scan_string(p, end, &esc, &e);
		break;
	case '-': case '0': case '1': case '2': case '3': case '4': case '5':
	case '6': case '7': case '8': case '9':
		vt = JSON_NUMBER;
		p = scan_number(p, end, &e);
		break;
	case 't':
		if (end - p < 4 || memcmp(p, "true", 4) != 0)
			goto badchar;
		vt = JSON_TRUE;
		p += 4;
		break;
	case 'f':
		if (end - p < 5 || memcmp(p, "false", 5) != 0)
			goto badchar;
		vt = JSON_FALSE;
		p += 5;
		break;
	case 'n':
		if (end - p < 4 || memcmp(p, "null", 4) != 0)
			goto badchar;
		vt = JSON_NULL;
		p += 4;
		break;
	default:
		goto badchar;
	}
	if (p == NULL)
		goto bad;
after:
	if (depth == 0)
		goto done;
	/* rmax: 1 while a top-level member is noted, 2 inside the noted object, else 0. */
	if (depth <= rmax) {
		if (depth == 1) {
			vals[slot].p = (const char *)vstart;
			vals[slot].len = (size_t)(p - vstart);
			vals[slot].type = vt;
			slot = -1;
			ndepth = 0;
			rmax = 0;
		} else if (mcur) {
			mcur->val_len = (uint32_t)(p - vstart) - mcur->val;
			mcur->val_type = (unsigned char)vt;
			mcur->val_esc = vt == JSON_STRING && esc;
		}
	}
	if (p < end && *p == ',')
		goto comma;
	p = ws(p, end);
	if (p == end) {
		fail(&e, p, E_END);
		goto bad;
	}
	if (*p == ',') {
comma:
		p = ws(p + 1, end);
		if (in_obj)
			goto key;
		goto value;
	}
	if (*p != (in_obj ? '}' : ']'))
		goto badchar;
	p++;
	vt = in_obj ? JSON_OBJECT : JSON_ARRAY;
close:
	if (--depth > 0)
		in_obj = (int)(objbits[(depth - 1) >> 6] >> ((depth - 1) & 63) & 1);
	goto after;
key:
	if (p == end) {
		fail(&e, p, E_END);
		goto bad;
	}
	if (*p != '"')
		goto badchar;
	q = p;
	esc = 0;
	p = plain_run(p + 1, end);
	if (p < end && *p == '"')
		p++;
	else if ((p = scan_string(p, end, &esc, &e)) == NULL)
		goto bad;
	if (depth == 1 && nkeys > 0) {
		slot = match_key(q, p, esc, keys, nkeys);
		if (slot >= 0 && vals[slot].type != JSON_NONE)
			slot = -1;
	} else if (mem && depth == ndepth) {
		/* A member noted: the colon here, so that other keys pay nothing. */
		mcur = NULL;
		if (mnext < mlim) {
			mcur = mnext++;
			mcur->key = (uint32_t)(q - vstart);
			mcur->key_len = (uint32_t)(p - q);
			mcur->key_esc = (unsigned char)esc;
		} else {
			mover++;
		}
		if (p < end && *p == ':')
			goto mcolon;
		p = ws(p, end);
		if (p == end) {
			fail(&e, p, E_END);
			goto bad;
		}
		if (*p != ':')
			goto badchar;
mcolon:
		p = ws(p + 1, end);
		if (mcur)
			mcur->val = (uint32_t)(p - vstart);
		goto value;
	}
	if (p < end && *p == ':')
		goto colon;
	p = ws(p, end);
	if (p == end) {
		fail(&e, p, E_END);
		goto bad;
	}
	if (*p != ':')
		goto badchar;
colon:
	p = ws(p + 1, end);
	if (depth == 1 && slot >= 0) {
		vstart = p;
		rmax = 1;
		if (mem && slot == (int)mem->of && p < end && *p == '{')
			ndepth = rmax = 2;
	}
	goto value;
done:
	if (mem)
		mem->n = (size_t)(mnext - mem->m) + mover;
	if (out) {
		out->p = (const char *)start;
		out->len = (size_t)(p - start);
		out->type = vt;
	}
	p = ws(p, end);
	if (p != end)
		goto badchar;
	return 0;
badchar:
	fail(&e, p, p == end ? E_END : E_CHAR);
bad:
	*errpos = (size_t)(e.at - b);
	*errmsg = e.msg;
	return -1;
}

static int scan(const char *buf, size_t len, const char *const keys[],
		size_t nkeys, struct json_span vals[], struct json_span *out,
		size_t *errpos, const char **errmsg)
{
	return scan_body(buf, len, keys, nkeys, vals, NULL, out, errpos, errmsg);
}

int json_validate(const char *buf, size_t len, struct json_span *out,
		  size_t *errpos, const char **errmsg)
{
	if (scan(buf, len, NULL, 0, NULL, out, errpos, errmsg) == 0)
		return 0;
	*errmsg += sizeof(PFX) - 1;
	return -1;
}

int json_validate_members(const char *buf, size_t len,
			  const char *const keys[], size_t nkeys,
			  struct json_span vals[], struct json_span *out,
			  size_t *errpos, const char **errmsg)
{
	return scan(buf, len, keys, nkeys, vals, out, errpos, errmsg);
}

int json_validate_inner_slow(const char *buf, size_t len,
			     const char *const keys[], size_t nkeys,
			     struct json_span vals[], struct json_members *mem,
			     struct json_span *out, size_t *errpos,
			     const char **errmsg)
{
	if (mem == NULL || mem->of >= nkeys || len > UINT32_MAX) {
		if (mem)
			mem->n = mem->of < nkeys ? SIZE_MAX : 0;
		return scan(buf, len, keys, nkeys, vals, out, errpos, errmsg);
	}
	return scan_body(buf, len, keys, nkeys, vals, mem, out, errpos, errmsg);
}

/*
 * The fast path of json_validate_inner(), for a line that is an object (a
 * Singer message): the same grammar, on a copy of the line followed by NUL
 * bytes, so that no step checks for the end (a NUL is wrong wherever it
 * is met: not whitespace, not a token, a control character in a string),
 * strings are read 16 bytes at a time without a tail, and the three kinds
 * of object (the top one, whose keys are matched; the noted one, whose
 * members are noted; any other, only validated) each have their own loop,
 * with none of the other two's bookkeeping.  It never reports an error: on
 * anything it does not accept, valid or not, it returns -1 and the scanner
 * above runs on the line, so that every result, message and offset is
 * that scanner's.  Escapes and bytes above 0x7f in strings go through
 * scan_string(), as they do there.
 */
#define FAST_MAX 16384	/* longer lines go to the scanner above */
#define FAST_PAD 64	/* NUL bytes after the copy: more than one 16-byte load */
#define FAST_DEPTH 64	/* deeper nesting goes to the scanner above */

/* The first byte at or after p that is not whitespace (the copy ends in NUL). */
HOT const unsigned char *fast_ws(const unsigned char *p)
{
	if (*p <= ' ')
		while (is_ws(*p))
			p++;
	return p;
}

/* p at an opening quote, in the copy: the byte after the closing quote, or NULL. */
HOT const unsigned char *fast_string(const unsigned char *p,
				     const unsigned char *end, int *esc)
{
	struct jerr e;
#ifdef __SSE2__
	unsigned mm;

	/* No end check: the NUL after the line stops the loop at the latest. */
	for (p++; (mm = special16(p)) == 0; p += 16)
		;
	p += __builtin_ctz(mm);
#else
	p = plain_run(p + 1, end);
#endif
	if (*p == '"')
		return p + 1;
	return scan_string(p, end, esc, &e);
}

/* The first byte at or after p that is not a digit (the copy ends in NUL). */
HOT const unsigned char *fast_digits(const unsigned char *p)
{
#ifdef __SSE2__
	unsigned mm;

	for (; (mm = nondigit16(p)) == 0; p += 16)
		;
	return p + __builtin_ctz(mm);
#else
	while (is_digit(*p))
		p++;
	return p;
#endif
}

/* scan_number() where the copy's NUL ends every digit run: NULL where it fails. */
HOT const unsigned char *fast_number(const unsigned char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0') {
		if (is_digit(*++p))
			return NULL;
	} else if (is_digit(*p)) {
		p = fast_digits(p + 1);
	} else {
		return NULL;
	}
	if (*p == '.') {
		if (!is_digit(*++p))
			return NULL;
		p = fast_digits(p + 1);
	}
	if ((*p | 0x20) == 'e') {
		if (*++p == '+' || *p == '-')
			p++;
		if (!is_digit(*p))
			return NULL;
		p = fast_digits(p + 1);
	}
	return p;
}

/*
 * p at a value, in the copy: the byte after it, *vt its type, *esc set when
 * it is a string holding a backslash (cleared first).  Whitespace before it
 * costs nothing where there is none: it is one more case of the switch.
 * Objects and arrays go to fast_nested(), depth being that of the
 * container holding the value.
 */
static const unsigned char *fast_nested(const unsigned char *p,
					const unsigned char *end,
					unsigned depth);

HOT const unsigned char *fast_value(const unsigned char *p,
				    const unsigned char *end, unsigned depth,
				    enum json_type *vt, int *esc)
{
	*esc = 0;
again:
	if (*p == '"') {
		*vt = JSON_STRING;
		return fast_string(p, end, esc);
	}
	switch (*p) {
	case '{':
		*vt = JSON_OBJECT;
		return fast_nested(p, end, depth);
	case '[':
		*vt = JSON_ARRAY;
		return fast_nested(p, end, depth);
	case '-': case '0': case '1': case '2': case '3': case '4': case '5':
	case '6': case '7': case '8': case '9':
		*vt = JSON_NUMBER;
		return fast_number(p);
	case 't':
		*vt = JSON_TRUE;
		return memcmp(p, "true", 4) == 0 ? p + 4 : NULL;
	case 'f':
		*vt = JSON_FALSE;
		return memcmp(p, "false", 5) == 0 ? p + 5 : NULL;
	case 'n':
		*vt = JSON_NULL;
		return memcmp(p, "null", 4) == 0 ? p + 4 : NULL;
	case ' ': case '\t': case '\n': case '\r':
		p = fast_ws(p);
		goto again;
	}
	return NULL;
}

/* The byte p is, or else the first after whitespace: 1 when it is c. */
#define FAST_AT(p, c) (*(p) == (c) || (*((p) = fast_ws(p)) == (c)))

/*
 * p at '{' or '[' at depth `depth` (the top object is at 1): the byte after
 * the container, validated, or NULL.
 */
static const unsigned char *fast_nested(const unsigned char *p,
					const unsigned char *end,
					unsigned depth)
{
	uint64_t objs = 0;	/* bit d: the container at depth + d is an object */
	unsigned d = 0;
	enum json_type vt;
	int esc;

open:
	if (depth + d >= FAST_DEPTH)
		return NULL;
	if (*p++ == '{') {
		objs |= UINT64_C(1) << d++;
		if (FAST_AT(p, '}')) {
			p++;
			goto close;
		}
		goto key;
	}
	objs &= ~(UINT64_C(1) << d++);
	if (FAST_AT(p, ']')) {
		p++;
		goto close;
	}
value:
	if (*p == '{' || *p == '[')
		goto open;
	if ((p = fast_value(p, end, depth + d, &vt, &esc)) == NULL)
		return NULL;
after:
	if (FAST_AT(p, ',')) {
		p++;
		if (objs >> (d - 1) & 1)
			goto key;
		goto value;
	}
	if (*p != (objs >> (d - 1) & 1 ? '}' : ']'))
		return NULL;
	p++;
close:
	if (--d == 0)
		return p;
	goto after;
key:
	if (!FAST_AT(p, '"') || (p = fast_string(p, end, &esc)) == NULL)
		return NULL;
	if (!FAST_AT(p, ':'))
		return NULL;
	p++;
	if (*p == '{' || *p == '[')
		goto open;
	goto value;
}

/* Spans point into the caller's buffer: x + delta, delta = buf - c. */
#define ORIG(x) ((const char *)((uintptr_t)(x) + delta))

/*
 * p at the '{' of vals[mem->of], at depth 2, in the copy of the line: its
 * members noted as scan_body() notes them; the byte after it, or NULL.
 * More members than mem->cap: NULL, for scan_body() to count them.
 */
static const unsigned char *fast_noted(const unsigned char *p,
				       const unsigned char *end,
				       struct json_members *mem)
{
	struct json_member *m = mem->m, *mlim = mem->m + mem->cap;
	const unsigned char *q, *obj = p;
	enum json_type vt;
	int esc;

	p++;
	if (FAST_AT(p, '}'))
		goto done;
	for (;; m++) {
		if (!FAST_AT(p, '"') || m == mlim)
			return NULL;
		q = p;
		esc = 0;
		if ((p = fast_string(p, end, &esc)) == NULL)
			return NULL;
		m->key = (uint32_t)(q - obj);
		m->key_len = (uint32_t)(p - q);
		m->key_esc = (unsigned char)esc;
		if (!FAST_AT(p, ':'))
			return NULL;
		q = ++p;
		if ((p = fast_value(p, end, 2, &vt, &esc)) == NULL)
			return NULL;
		/* (whitespace before the value: fast_value() skipped it) */
		if (*q <= ' ')
			q = fast_ws(q);
		m->val = (uint32_t)(q - obj);
		m->val_len = (uint32_t)(p - q);
		m->val_type = (unsigned char)vt;
		m->val_esc = (unsigned char)esc;
		if (FAST_AT(p, ','))
			p++;
		else if (*p == '}')
			break;
		else
			return NULL;
	}
	m++;
done:
	mem->n = (size_t)(m - mem->m);
	return p + 1;
}

/* json_validate_inner() on a line that fast_inner() takes: 0, or -1 to run scan_body(). */
static int fast_inner(const char *buf, size_t len, const char *const keys[],
		      size_t nkeys, struct json_span vals[],
		      struct json_members *mem, struct json_span *out)
{
	unsigned char c[FAST_MAX + FAST_PAD];
	const unsigned char *p, *q, *start, *end;
	uintptr_t delta = (uintptr_t)buf - (uintptr_t)c;
	enum json_type vt;
	int slot, esc;

	if (len > FAST_MAX)
		return -1;
	end = c + len;
	memcpy(c, buf, len);
	memset(c + len, 0, FAST_PAD);
	clear_spans(vals, nkeys);
	if (mem)
		mem->n = 0;
	p = start = fast_ws(c);
	if (*p++ != '{')
		return -1;
	if (FAST_AT(p, '}'))
		goto done;
	for (;;) {
		if (!FAST_AT(p, '"'))
			return -1;
		q = p;
		esc = 0;
		if ((p = fast_string(p, end, &esc)) == NULL)
			return -1;
		slot = -1;
		if (nkeys > 0) {
			slot = match_key(q, p, esc, keys, nkeys);
			if (slot >= 0 && vals[slot].type != JSON_NONE)
				slot = -1;
		}
		if (!FAST_AT(p, ':'))
			return -1;
		q = p = fast_ws(p + 1);
		if (mem && slot == (int)mem->of && *p == '{') {
			vt = JSON_OBJECT;
			p = fast_noted(p, end, mem);
		} else {
			p = fast_value(p, end, 1, &vt, &esc);
		}
		if (p == NULL)
			return -1;
		if (slot >= 0) {
			vals[slot].p = ORIG(q);
			vals[slot].len = (size_t)(p - q);
			vals[slot].type = vt;
		}
		if (FAST_AT(p, ','))
			p++;
		else if (*p == '}')
			break;
		else
			return -1;
	}
done:
	p++;
	if (out) {
		out->p = ORIG(start);
		out->len = (size_t)(p - start);
		out->type = JSON_OBJECT;
	}
	return fast_ws(p) == end ? 0 : -1;
}

int json_validate_inner(const char *buf, size_t len,
			const char *const keys[], size_t nkeys,
			struct json_span vals[], struct json_members *mem,
			struct json_span *out, size_t *errpos,
			const char **errmsg)
{
	if (mem && mem->of >= nkeys) {
		mem->n = 0;
		mem = NULL;
	}
	if (fast_inner(buf, len, keys, nkeys, vals, mem, out) == 0)
		return 0;
	return json_validate_inner_slow(buf, len, keys, nkeys, vals, mem,
					out, errpos, errmsg);
}

/* Traversal of validated text: no checks beyond staying inside the span. */

/* p just after an opening quote of a validated string. */
static const unsigned char *skip_string(const unsigned char *p,
					const unsigned char *end)
{
	const unsigned char *q, *r;

	for (;;) {
		q = memchr(p, '"', (size_t)(end - p));
		if (q == NULL)
			return end;
		for (r = q; r > p && r[-1] == '\\'; r--)
			;
		if ((q - r) % 2 == 0)
			return q + 1;
		p = q + 1;
	}
}

static const unsigned char *skip_value(const unsigned char *p,
				       const unsigned char *end)
{
	unsigned depth = 0;

	if (*p == '"')
		return skip_string(p + 1, end);
	if (*p != '{' && *p != '[') {
		while (p < end && *p != ',' && *p != '}' && *p != ']' &&
		       !is_ws(*p))
			p++;
		return p;
	}
	while (p < end) {
		switch (*p) {
		case '"':
			p = skip_string(p + 1, end);
			continue;
		case '{': case '[':
			depth++;
			break;
		case '}': case ']':
			if (--depth == 0)
				return p + 1;
			break;
		}
		p++;
	}
	return p;
}

static void set_span(struct json_span *s, const unsigned char *p,
		     const unsigned char *q)
{
	s->p = (const char *)p;
	s->len = (size_t)(q - p);
	s->type = json_type_at(*p);
}

static int container_next(const struct json_span *c, size_t *pos,
			  struct json_span *key, struct json_span *val)
{
	const unsigned char *base = (const unsigned char *)c->p;
	const unsigned char *end = base + c->len, *p = base + *pos, *q;

	if (*pos == 0)
		p++;
	p = ws(p, end);
	if (p < end && *p == ',')
		p = ws(p + 1, end);
	if (p >= end || *p == '}' || *p == ']') {
		*pos = (size_t)(p - base);
		return 0;
	}
	if (key) {
		q = skip_string(p + 1, end);
		set_span(key, p, q);
		p = ws(q, end);
		p = ws(p + 1, end);	/* ':' */
	}
	q = skip_value(p, end);
	set_span(val, p, q);
	*pos = (size_t)(q - base);
	return 1;
}

int json_object_next(const struct json_span *obj, size_t *pos,
		     struct json_span *key, struct json_span *val)
{
	if (obj->type != JSON_OBJECT)
		return 0;
	return container_next(obj, pos, key, val);
}

int json_array_next(const struct json_span *arr, size_t *pos,
		    struct json_span *val)
{
	if (arr->type != JSON_ARRAY)
		return 0;
	return container_next(arr, pos, NULL, val);
}

int json_object_get(const struct json_span *obj, const char *key,
		    struct json_span *out)
{
	struct json_span k, v;
	size_t pos = 0;

	if (obj->type != JSON_OBJECT)
		return -1;
	while (container_next(obj, &pos, &k, &v)) {
		if (json_string_equal(&k, key, 0)) {
			*out = v;
			return 1;
		}
	}
	return 0;
}

static size_t put_utf8(unsigned char *u, unsigned long cp)
{
	if (cp < 0x80) {
		u[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		u[0] = (unsigned char)(0xc0 | cp >> 6);
		u[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		u[0] = (unsigned char)(0xe0 | cp >> 12);
		u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	u[0] = (unsigned char)(0xf0 | cp >> 18);
	u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
	u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
	u[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* *pp at a backslash of a validated string: decode one escape into u. */
static size_t decode_escape(const unsigned char **pp, unsigned char *u)
{
	const unsigned char *p = *pp + 1;
	unsigned long cp;

	*pp = p + 1;
	switch (*p) {
	case 'b': u[0] = '\b'; return 1;
	case 'f': u[0] = '\f'; return 1;
	case 'n': u[0] = '\n'; return 1;
	case 'r': u[0] = '\r'; return 1;
	case 't': u[0] = '\t'; return 1;
	case 'u': break;
	default: u[0] = *p; return 1;
	}
	cp = (unsigned long)hex4(p + 1);
	*pp = p + 5;
	if (cp >= 0xd800 && cp < 0xdc00) {
		cp = 0x10000 + ((cp - 0xd800) << 10) +
		     ((unsigned long)hex4(p + 7) - 0xdc00);
		*pp = p + 11;
	}
	return put_utf8(u, cp);
}

void json_string_decode(const struct json_span *s, struct sb *out)
{
	const unsigned char *p = (const unsigned char *)s->p + 1;
	const unsigned char *end = (const unsigned char *)s->p + s->len - 1;
	const unsigned char *q;
	unsigned char *o;

	/*
	 * Decoded, a string is never longer than its literal (an escape of
	 * 2, 6 or 12 bytes gives 1 to 4): room once, then written in place,
	 * without a call of sb_add() per run and per escape.
	 */
	sb_grow(out, s->len);
	o = (unsigned char *)out->buf + out->len;
	while (p < end) {
		q = memchr(p, '\\', (size_t)(end - p));
		if (q == NULL)
			q = end;
		memcpy(o, p, (size_t)(q - p));
		o += q - p;
		p = q;
		if (p < end)
			o += decode_escape(&p, o);
	}
	out->len = (size_t)((char *)o - out->buf);
	out->buf[out->len] = '\0';
}

size_t json_string_decode_in_place(char *lit, size_t len)
{
	const unsigned char *p = (const unsigned char *)lit + 1;
	const unsigned char *end = (const unsigned char *)lit + len - 1;
	const unsigned char *q;
	unsigned char *o = (unsigned char *)lit;

	/* o stays behind p (the opening quote, then escapes that shrink); an escape is read whole before it is written */
	while (p < end) {
		q = memchr(p, '\\', (size_t)(end - p));
		if (q == NULL)
			q = end;
		memmove(o, p, (size_t)(q - p));
		o += q - p;
		p = q;
		if (p < end)
			o += decode_escape(&p, o);
	}
	*o = '\0';
	return (size_t)((char *)o - lit);
}

static unsigned lower(unsigned c)
{
	return c - 'A' < 26 ? c | 0x20 : c;
}

int json_string_equal(const struct json_span *s, const char *str, int icase)
{
	const unsigned char *p = (const unsigned char *)s->p + 1;
	const unsigned char *end = (const unsigned char *)s->p + s->len - 1;
	const unsigned char *k = (const unsigned char *)str;
	unsigned char u[4], *c;
	size_t n;

	if (s->type != JSON_STRING)
		return 0;
	while (p < end) {
		if (*p == '\\') {
			n = decode_escape(&p, u);
			c = u;
		} else {
			n = 1;
			c = u;
			u[0] = *p++;
		}
		for (; n > 0; n--, c++, k++) {
			if (*k == '\0')
				return 0;
			if (*c != *k && !(icase && lower(*c) == lower(*k)))
				return 0;
		}
	}
	return *k == '\0';
}

void json_quote(struct sb *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + len, *q;
	const unsigned char *r;
	struct jerr e;
	char esc[6];

	sb_grow(out, len + 2);
	sb_addc(out, '"');
	while (p < end) {
		for (q = p; q < end && plain[*q] && *q != 0x7f; q++)
			;
		sb_add(out, p, (size_t)(q - p));
		if (q == end)
			break;
		p = q + 1;
		switch (*q) {
		case '"': sb_add(out, "\\\"", 2); continue;
		case '\\': sb_add(out, "\\\\", 2); continue;
		case '\b': sb_add(out, "\\b", 2); continue;
		case '\f': sb_add(out, "\\f", 2); continue;
		case '\n': sb_add(out, "\\n", 2); continue;
		case '\r': sb_add(out, "\\r", 2); continue;
		case '\t': sb_add(out, "\\t", 2); continue;
		}
		if (*q < 0x20 || *q == 0x7f) {
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[*q >> 4];
			esc[5] = hex[*q & 15];
			sb_add(out, esc, 6);
			continue;
		}
		r = scan_utf8(q, end, &e);
		if (r == NULL) {
			sb_add(out, "\xef\xbf\xbd", 3);
			continue;
		}
		sb_add(out, q, (size_t)(r - q));
		p = r;
	}
	sb_addc(out, '"');
}

void json_compact(const struct json_span *v, struct sb *out)
{
	const unsigned char *p = (const unsigned char *)v->p, *end = p + v->len;
	const unsigned char *q;

	sb_grow(out, v->len);
	while (p < end) {
		if (*p == '"') {
			q = skip_string(p + 1, end);
		} else if (is_ws(*p)) {
			p++;
			continue;
		} else {
			for (q = p; q < end && *q != '"' && !is_ws(*q); q++)
				;
		}
		sb_add(out, p, (size_t)(q - p));
		p = q;
	}
}

static void indent(struct sb *out, unsigned level)
{
	sb_grow(out, 1 + 2 * (size_t)level);
	out->buf[out->len++] = '\n';
	memset(out->buf + out->len, ' ', 2 * (size_t)level);
	out->len += 2 * (size_t)level;
	out->buf[out->len] = '\0';
}

static void pretty(const struct json_span *v, struct sb *out, unsigned level)
{
	struct json_span k, e;
	size_t pos = 0;
	int n = 0;

	if (v->type != JSON_OBJECT && v->type != JSON_ARRAY) {
		sb_add(out, v->p, v->len);
		return;
	}
	sb_addc(out, v->type == JSON_OBJECT ? '{' : '[');
	while (container_next(v, &pos, v->type == JSON_OBJECT ? &k : NULL, &e)) {
		if (n++)
			sb_addc(out, ',');
		indent(out, level + 1);
		if (v->type == JSON_OBJECT) {
			sb_add(out, k.p, k.len);
			sb_add(out, ": ", 2);
		}
		pretty(&e, out, level + 1);
	}
	if (n)
		indent(out, level);
	sb_addc(out, v->type == JSON_OBJECT ? '}' : ']');
}

void json_pretty(const struct json_span *v, struct sb *out)
{
	pretty(v, out, 0);
	sb_addc(out, '\n');
}

void json_quote_list(struct sb *out, char *const *list, size_t n)
{
	size_t i;

	sb_addc(out, '[');
	for (i = 0; i < n; i++) {
		if (i)
			sb_addc(out, ',');
		json_quote(out, list[i], strlen(list[i]));
	}
	sb_addc(out, ']');
}
