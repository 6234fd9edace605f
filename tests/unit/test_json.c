/* Unit tests of the JSON scanner: validation, traversal, decoding, printing. */
#include "json.h"
#include "sb.h"
#include "taptest.h"
#include "../fuzz/json_diff.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A literal and its length, NUL bytes inside included. */
#define S(lit) lit, sizeof(lit) - 1

struct bad {
	const char *in;
	size_t len;
	size_t pos;
	const char *msg;
};

static const struct bad bad[] = {
	/* truncated */
	{ S(""), 0, "unexpected end of input" },
	{ S("   "), 3, "unexpected end of input" },
	{ S("{"), 1, "unexpected end of input" },
	{ S("["), 1, "unexpected end of input" },
	{ S("{\"a\""), 4, "unexpected end of input" },
	{ S("{\"a\":"), 5, "unexpected end of input" },
	{ S("{\"a\":1"), 6, "unexpected end of input" },
	{ S("{\"a\":1,"), 7, "unexpected end of input" },
	{ S("[1,2"), 4, "unexpected end of input" },
	{ S("\"abc"), 4, "unterminated string" },
	{ S("\"abc\\"), 5, "unterminated string" },
	{ S("{\"a"), 3, "unterminated string" },
	/* structure */
	{ S("{\"a\":1,}"), 7, "unexpected character" },
	{ S("[1,]"), 3, "unexpected character" },
	{ S("[,1]"), 1, "unexpected character" },
	{ S("[1 2]"), 3, "unexpected character" },
	{ S("{\"a\" 1}"), 5, "unexpected character" },
	{ S("{\"a\",1}"), 4, "unexpected character" },
	{ S("{a:1}"), 1, "unexpected character" },
	{ S("{'a':1}"), 1, "unexpected character" },
	{ S("{\"a\":1,\"b\"}"), 10, "unexpected character" },
	{ S("{\"a\":[}"), 6, "unexpected character" },
	{ S("[1}"), 2, "unexpected character" },
	{ S("{\"a\":1]"), 6, "unexpected character" },
	{ S("{\"a\":1}}"), 7, "unexpected character" },
	{ S("{\"a\":1} x"), 8, "unexpected character" },
	{ S("[1] [2]"), 4, "unexpected character" },
	{ S("\xef\xbb\xbf{}"), 0, "unexpected character" },
	{ S("{\"a\":1}\0"), 7, "unexpected character" },
	{ S("\0{}"), 0, "unexpected character" },
	{ S("{\"a\":\v1}"), 5, "unexpected character" },
	/* literals */
	{ S("tru"), 0, "unexpected character" },
	{ S("nul"), 0, "unexpected character" },
	{ S("True"), 0, "unexpected character" },
	{ S("nulll"), 4, "unexpected character" },
	{ S("NaN"), 0, "unexpected character" },
	{ S("Infinity"), 0, "unexpected character" },
	{ S("undefined"), 0, "unexpected character" },
	/* numbers */
	{ S("01"), 1, "invalid number" },
	{ S("-01"), 2, "invalid number" },
	{ S("[00]"), 2, "invalid number" },
	{ S("1."), 2, "invalid number" },
	{ S("1.e5"), 2, "invalid number" },
	{ S(".5"), 0, "unexpected character" },
	{ S("1e"), 2, "invalid number" },
	{ S("1e+"), 3, "invalid number" },
	{ S("-"), 1, "invalid number" },
	{ S("-a"), 1, "invalid number" },
	{ S("--1"), 1, "invalid number" },
	{ S("+1"), 0, "unexpected character" },
	{ S("1.5x"), 3, "unexpected character" },
	{ S("0x10"), 1, "unexpected character" },
	{ S("1_000"), 1, "unexpected character" },
	/* escapes */
	{ S("\"\\x\""), 1, "invalid escape" },
	{ S("\"\\'\""), 1, "invalid escape" },
	{ S("\"ab\\U0041\""), 3, "invalid escape" },
	{ S("\"\\u12\""), 1, "invalid \\u escape" },
	{ S("\"\\u12G4\""), 1, "invalid \\u escape" },
	{ S("\"\\u"), 1, "invalid \\u escape" },
	{ S("\"\\ud800\""), 1, "lone surrogate" },
	{ S("\"\\udc00\""), 1, "lone surrogate" },
	{ S("\"\\udfff\\ud800\""), 1, "lone surrogate" },
	{ S("\"x\\ud800\\u0041\""), 2, "lone surrogate" },
	{ S("\"\\ud800\\ud800\""), 1, "lone surrogate" },
	{ S("\"\\udc00\\udc00\""), 1, "lone surrogate" },
	{ S("\"\\ud800x\""), 1, "lone surrogate" },
	{ S("\"\\ud800\\n\""), 1, "lone surrogate" },
	/* raw bytes inside strings */
	{ S("\"a\tb\""), 2, "control character in string" },
	{ S("\"a\nb\""), 2, "control character in string" },
	{ S("\"a\0b\""), 2, "control character in string" },
	{ S("{\"k\x1f\":1}"), 3, "control character in string" },
	{ S("\"0123456789abcdefghij\x01\""), 21, "control character in string" },
	/* short strings, checked eight bytes at a time */
	{ S("\"a\x01" "bcdefghi\""), 2, "control character in string" },
	{ S("\"abcdefg\x1f" "ijk\""), 8, "control character in string" },
	{ S("\"abcdefg\x80" "ijk\""), 8, "invalid UTF-8" },
	{ S("\"\x80\""), 1, "invalid UTF-8" },
	{ S("\"\xbf\""), 1, "invalid UTF-8" },
	{ S("\"\xc0\xaf\""), 1, "invalid UTF-8" },
	{ S("\"\xc1\xbf\""), 1, "invalid UTF-8" },
	{ S("\"\xe0\x80\xaf\""), 1, "invalid UTF-8" },
	{ S("\"\xe0\x9f\xbf\""), 1, "invalid UTF-8" },
	{ S("\"\xed\xa0\x80\""), 1, "invalid UTF-8" },
	{ S("\"\xed\xbf\xbf\""), 1, "invalid UTF-8" },
	{ S("\"\xf0\x80\x80\xaf\""), 1, "invalid UTF-8" },
	{ S("\"\xf0\x8f\xbf\xbf\""), 1, "invalid UTF-8" },
	{ S("\"\xf4\x90\x80\x80\""), 1, "invalid UTF-8" },
	{ S("\"\xf5\x80\x80\x80\""), 1, "invalid UTF-8" },
	{ S("\"\xf8\x88\x80\x80\x80\""), 1, "invalid UTF-8" },
	{ S("\"\xff\""), 1, "invalid UTF-8" },
	{ S("\"\xfe\""), 1, "invalid UTF-8" },
	{ S("\"ab\xe2\x82\""), 3, "invalid UTF-8" },
	{ S("\"ab\xf0\x9f\x98\""), 3, "invalid UTF-8" },
	{ S("\"\xc3"), 1, "invalid UTF-8" },
	{ S("\"\xc3(\""), 1, "invalid UTF-8" },
	{ S("\"0123456789abcdef0123\xc3\""), 21, "invalid UTF-8" },
	{ S("{\"\xe9t\xe9\":1}"), 2, "invalid UTF-8" },
	/* separators: tried before whitespace, any byte up to ' ' looked at as whitespace */
	{ S("{\"a\":1\x01}"), 6, "unexpected character" },
	{ S("{\"a\"\x01:1}"), 4, "unexpected character" },
	{ S("{\"a\":\x1f" "1}"), 5, "unexpected character" },
	{ S("[1\x0b,2]"), 2, "unexpected character" },
	{ S("[1, \x0c" "2]"), 4, "unexpected character" },
	{ S("{\"a\" \t:1 ,\"b\"\x02:2}"), 13, "unexpected character" },
	{ S("{\"a\":1 "), 7, "unexpected end of input" },
	{ S("{\"a\" "), 5, "unexpected end of input" },
	{ S("{\"a\":1, "), 8, "unexpected end of input" },
	/* numbers: digits 16 at a time */
	{ S("12345678901234567x"), 17, "unexpected character" },
	{ S("1234567890123456\x80"), 16, "unexpected character" },
	{ S("-0123456789012345678"), 2, "invalid number" },
	{ S("1.12345678901234567890123456789012345e"), 38, "invalid number" },
	{ S("[12345678901234567890123456789012345678901234567890,]"), 52, "unexpected character" },
};

static const char *const good[] = {
	"{}", "[]", "0", "-0", "-0.0e-0", "1E+2", "1e-2", "0.5", "-12.25E7",
	"\"\"", "\"x\"", "true", "false", "null", " \t\r\n[] \t\r\n",
	"{\"a\" : [1, 2.5, -3e10, true, false, null, {}, []]}",
	"{\"\":1}", "{\"a\":1,\"a\":2}",
	"\"\\u00e9\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\\uFFFF\\u0000\"",
	"\"\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xef\xbf\xbf \xf4\x8f\xbf\xbf\"",
	"\"\xe0\xa0\x80 \xed\x9f\xbf \xee\x80\x80 \xf0\x90\x80\x80\"",
	"\"\\udbff\\udfff\\uD834\\uDD1E\"", "\"abcdefg\\\"ijk\"",
	("\"abcdefg\xc3\xa9" "ijk\""), "\"\x7f\"", "\"0123456789abcdef0123456789abcdef\\n0123456789abcdef\"",
	"12345678901234567891", "-123456789012345678901234567890.5e-7",
	"1e400", "{\"a\":{\"b\":{\"c\":[[[]]]}}}", "[[],[{}],{\"a\":[]}]",
	"{\"type\": \"RECORD\", \"stream\": \"s\", \"record\": {\"id\": 1}}\r",
	"{\"a\" \t\r\n:\n 1 \t,\r\n\"b\"  :  [ 1 , 2 ] \n}", "[1 ,2, 3 ]",
	"1234567890123456", "12345678901234567", "123456789012345678901234567890123.5e+12345678901234567",
};

/* s[0..n) printable on one TAP line (static buffer). */
static const char *show(const char *s, size_t n)
{
	static char buf[256];
	size_t i, o = 0;

	for (i = 0; i < n && o < sizeof(buf) - 5; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c >= 0x20 && c < 0x7f && c != '\\')
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, 5, "\\x%02x", c);
	}
	buf[o] = '\0';
	return buf;
}

static void test_good(void)
{
	size_t i, pos;
	const char *msg;
	struct json_span v;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		pos = 99;
		msg = NULL;
		ok(json_validate(good[i], strlen(good[i]), &v, &pos, &msg) == 0,
		   "valid %zu: %s", i, show(good[i], strlen(good[i])));
		if (msg)
			printf("#   error at %zu: %s\n", pos, msg);
	}
}

static void test_bad(void)
{
	size_t i, pos;
	const char *msg;
	struct json_span v;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pos = 99;
		msg = "(none)";
		is_int(json_validate(bad[i].in, bad[i].len, &v, &pos, &msg), -1,
		       "invalid %zu fails: %s", i, show(bad[i].in, bad[i].len));
		is_int(pos, bad[i].pos, "invalid %zu: error offset", i);
		is_str(msg, bad[i].msg, "invalid %zu: message", i);
	}
}

static void test_depth(void)
{
	char buf[2 * (JSON_MAX_DEPTH + 1) + 8];
	size_t pos = 0, n = 0;
	const char *msg = NULL;
	int i;

	for (i = 0; i < JSON_MAX_DEPTH; i++)
		buf[n++] = '[';
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		buf[n++] = ']';
	ok(json_validate(buf, n, NULL, &pos, &msg) == 0,
	   "nesting of JSON_MAX_DEPTH arrays is valid");

	n = 0;
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		buf[n++] = '[';
	buf[n++] = '{';
	buf[n++] = '}';
	for (i = 0; i < JSON_MAX_DEPTH; i++)
		buf[n++] = ']';
	is_int(json_validate(buf, n, NULL, &pos, &msg), -1,
	       "one object deeper than JSON_MAX_DEPTH fails");
	is_int(pos, JSON_MAX_DEPTH, "at the first container too deep");
	is_str(msg, "nesting too deep", "message says so");
}

static void test_span(void)
{
	static const char in[] = "  {\"n\": 12345678901234567891}\r\n";
	struct json_span v;
	size_t pos;
	const char *msg;

	ok(json_validate(in, strlen(in), &v, &pos, &msg) == 0,
	   "value with surrounding whitespace");
	ok(v.p == in + 2, "span starts at the brace");
	is_int(v.len, strlen("{\"n\": 12345678901234567891}"), "span length");
	is_int(v.type, JSON_OBJECT, "span type");

	ok(json_validate(S("-0.5e3"), &v, &pos, &msg) == 0 &&
	   v.type == JSON_NUMBER && v.len == 6, "number span");
	ok(json_validate(S(" null"), &v, &pos, &msg) == 0 &&
	   v.type == JSON_NULL && v.len == 4, "null span");
	ok(json_validate(S("false"), &v, &pos, &msg) == 0 &&
	   v.type == JSON_FALSE, "false span");
	ok(json_validate(S("true"), &v, &pos, &msg) == 0 &&
	   v.type == JSON_TRUE, "true span");
	ok(json_validate(S("[1]"), &v, &pos, &msg) == 0 &&
	   v.type == JSON_ARRAY, "array span");
	ok(json_validate(S("\"a\\\"\""), &v, &pos, &msg) == 0 &&
	   v.type == JSON_STRING && v.len == 5, "string span");
}

static int span_is(const struct json_span *s, const char *want)
{
	return s->p && s->len == strlen(want) && memcmp(s->p, want, s->len) == 0;
}

static void test_members(void)
{
	static const char *const keys[] = { "a", "b", "c", "missing", "" };
	static const char in[] =
		"{\"b\":[1, 2], \"a\" : \"x\", \"\\u0063\": 3, \"a\": 9,"
		" \"nested\": {\"a\": 5, \"missing\": 1}, \"\": {}}";
	struct json_span v[5], top;
	size_t pos;
	const char *msg;

	ok(json_validate_members(in, strlen(in), keys, 5, v, &top, &pos,
				 &msg) == 0, "members: valid");
	ok(span_is(&v[0], "\"x\"") && v[0].type == JSON_STRING,
	   "members: first \"a\" wins");
	ok(span_is(&v[1], "[1, 2]") && v[1].type == JSON_ARRAY,
	   "members: array value");
	ok(span_is(&v[2], "3") && v[2].type == JSON_NUMBER,
	   "members: key written with an escape");
	ok(v[3].type == JSON_NONE && v[3].p == NULL && v[3].len == 0,
	   "members: nested keys are not top-level members");
	ok(span_is(&v[4], "{}") && v[4].type == JSON_OBJECT,
	   "members: empty key");
	is_int(top.type, JSON_OBJECT, "members: top-level span");

	ok(json_validate_members(S("[{\"a\":1}]"), keys, 5, v, &top, &pos,
				 &msg) == 0 && v[0].type == JSON_NONE &&
	   top.type == JSON_ARRAY, "members: none for an array");

	is_int(json_validate_members(S("{\"a\":01}"), keys, 5, v, &top, &pos,
				     &msg), -1, "members: error");
	is_str(msg, "invalid JSON: invalid number",
	       "members: message has the prefix");
	is_int(pos, 6, "members: error offset");
}

/*
 * json_validate_inner() against json_validate_members() and a walk with
 * json_object_next(): the same result, error and spans; the members of
 * keys[1]'s value, as the walk finds them, a backslash noted where there
 * is one.  cap: the room given.  1 when they agree.
 */
static int inner_agrees(const char *in, size_t len, size_t cap)
{
	static const char *const keys[] = { "a", "r", "b" };
	struct json_member room[16];
	struct json_members mem = { 1, room, cap, 12345 };
	struct json_span v[3], w[3], top, top2, k, e;
	size_t pos = 0, pos2 = 0, i = 0, at = 0;
	const char *msg = NULL, *msg2 = NULL;
	int r = json_validate_inner(in, len, keys, 3, v, &mem, &top, &pos, &msg);
	int r2 = json_validate_members(in, len, keys, 3, w, &top2, &pos2, &msg2);

	if (r != r2 || (r != 0 && (pos != pos2 || strcmp(msg, msg2) != 0))) {
		printf("#   %d %d at %zu %zu: %s / %s\n", r, r2, pos, pos2, msg ? msg : "",
		       msg2 ? msg2 : "");
		return 0;
	}
	if (r != 0)
		return 1;
	for (i = 0; i < 3; i++) {
		if (v[i].p != w[i].p || v[i].len != w[i].len || v[i].type != w[i].type)
			return 0;
	}
	if (top.p != top2.p || top.len != top2.len || v[1].type != JSON_OBJECT)
		return v[1].type == JSON_OBJECT || mem.n == 0;
	for (i = 0; json_object_next(&v[1], &at, &k, &e); i++) {
		const struct json_member *m = &room[i];
		struct json_span mk, mv;

		if (i >= cap)
			continue;
		mk = json_member_key(v[1].p, m);
		mv = json_member_val(v[1].p, m);
		if (mk.p != k.p || mk.len != k.len || mk.type != JSON_STRING ||
		    mv.p != e.p || mv.len != e.len || mv.type != e.type ||
		    m->key_esc != (memchr(k.p, '\\', k.len) != NULL) ||
		    m->val_esc != (e.type == JSON_STRING && memchr(e.p, '\\', e.len) != NULL)) {
			printf("#   member %zu differs\n", i);
			return 0;
		}
	}
	if (mem.n != i)
		printf("#   %zu members noted, %zu walked\n", mem.n, i);
	return mem.n == i;
}

static void test_inner(void)
{
	static const char *const recs[] = {
		"{\"r\":{}}",
		"{\"r\":{\"id\":1,\"name\":\"a\"}}",
		"{\"type\":\"RECORD\",\"r\":{\"id\":-1.5e3,\"s\":\"x\\\"y\",\"t\":true,\"f\":false,"
		"\"n\":null,\"o\":{\"r\":{\"k\":1},\"a\":[{\"b\":2}]},\"arr\":[1,[2,{\"c\":\"d\"}]],"
		"\"k\\u0041\":\"\\u00e9\",\"id\":2},\"b\":{\"x\":1}}",
		" { \"a\" : [ { \"r\" : 1 } ] , \"r\" : { \"x\" : 1 ,\n\t\"y\" :\"z\" , \"w\"\r\n: { } } } ",
		"{\"r\":{\"a\":1},\"r\":{\"b\":2,\"c\":3}}",
		"{\"r\":5,\"r\":{\"b\":2}}",
		"{\"r\":[{\"a\":1}]}",
		"{\"\\u0072\":{\"a\":1,\"b\":{}}}",
		"[{\"r\":{\"a\":1}}]",
		"{\"x\":{\"r\":{\"a\":1}}}",
		"{\"r\":{\"a\":\"\",\"\":\"\\\\\",\"\\\\\":[]}}",
		/* errors inside and after the record */
		"{\"r\":{\"a\":01}}",
		"{\"r\":{\"a\":1,}}",
		"{\"r\":{\"a\" 1}}",
		"{\"r\":{\"a\":\"\\x\"}}",
		"{\"r\":{\"a\":1},\"b\":tru}",
		"{\"r\":{\"a\":1}",
		"{\"r\":{\"a\":\"\xc3\"}}",
	};
	size_t i, cap;
	int agree = 1;

	for (i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
		for (cap = 0; cap <= 16; cap += cap < 4 ? 1 : 12) {
			if (!inner_agrees(recs[i], strlen(recs[i]), cap)) {
				printf("#   record %zu, room for %zu: %s\n", i, cap, recs[i]);
				agree = 0;
			}
		}
	}
	ok(agree, "inner: crafted records: json_validate_members()'s result and the walk's members");
	/* Every valid and invalid value of the tables, as the record and after it. */
	for (i = 0; i < sizeof(good) / sizeof(good[0]) + sizeof(bad) / sizeof(bad[0]); i++) {
		const char *v = i < sizeof(good) / sizeof(good[0]) ? good[i] : bad[i - sizeof(good) / sizeof(good[0])].in;
		size_t n = i < sizeof(good) / sizeof(good[0]) ? strlen(v) : bad[i - sizeof(good) / sizeof(good[0])].len;
		struct sb a = SB_INIT, b = SB_INIT;

		sb_adds(&a, "{\"r\":{\"x\":");
		sb_add(&a, v, n);
		sb_adds(&a, ",\"y\":1}}");
		sb_adds(&b, "{\"r\":{\"x\":1},\"b\":");
		sb_add(&b, v, n);
		sb_adds(&b, "}");
		if (!inner_agrees(a.buf, a.len, 16) || !inner_agrees(a.buf, a.len, 1) ||
		    !inner_agrees(b.buf, b.len, 16) || !inner_agrees(v, n, 16)) {
			printf("#   value %zu: %s\n", i, show(v, n));
			agree = 0;
		}
		sb_free(&a);
		sb_free(&b);
	}
	ok(agree, "inner: every value of the tables, in a record and after it");
	{
		static const char *const keys[] = { "a", "r" };
		static const char in[] = "{\"r\":{\"a\":1,\"b\":2,\"c\":3}}";
		struct json_member room[2];
		struct json_members mem = { 1, room, 2, 0 };
		struct json_span v[2], top;
		size_t pos;
		const char *msg;

		struct json_span mk, mv;

		ok(json_validate_inner(S(in), keys, 2, v, &mem, &top, &pos, &msg) == 0 && mem.n == 3 &&
		   (mk = json_member_key(v[1].p, &room[1]), span_is(&mk, "\"b\"")) &&
		   (mv = json_member_val(v[1].p, &room[1]), span_is(&mv, "2")) &&
		   room[1].key == 7 && room[1].val == 11,
		   "inner: more members than room: their number, the first ones noted (offsets from the object)");
		mem.of = 2;
		ok(json_validate_inner(S(in), keys, 2, v, &mem, &top, &pos, &msg) == 0 && mem.n == 0 &&
		   span_is(&v[1], "{\"a\":1,\"b\":2,\"c\":3}"), "inner: no such key: nothing noted");
		ok(json_validate_inner(S(in), keys, 2, v, NULL, &top, &pos, &msg) == 0 &&
		   span_is(&v[1], "{\"a\":1,\"b\":2,\"c\":3}"), "inner: mem NULL: json_validate_members()");
	}
}

/*
 * The fast path of json_validate_inner() against the scanner it falls back
 * to (json_validate_inner_slow()): Singer-like records made at random
 * (strings with escapes, raw and broken UTF-8, lone surrogates, control
 * bytes; numbers at the edges of the grammar; nesting up to past the fast
 * path's depth; whitespace or none; strings across the 16-byte steps),
 * then each of them mutated, cut short and grown; every one placed so
 * that it ends at a page that cannot be read.
 */
static unsigned long long rng_state = 20240601;

static unsigned rnd(unsigned n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned)(rng_state >> 33) % n;
}

static void gen_ws(struct sb *b)
{
	static const char *const ws[] = { " ", "\t", "\n", "\r", "  \n\t" };

	if (rnd(8) == 0)
		sb_adds(b, ws[rnd(5)]);
}

static void gen_string(struct sb *b)
{
	static const char *const bits[] = {
		/* valid, the first 8 */
		"a", "SKU-12345", "Espresso cup \\\"Classic\\\" ", "\\\\", "\\n\\u00e9",
		"\\ud83d\\ude00 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \x7f", "0123456789abcdef",
		"\\/\\u0000/",
		/* not */
		"\\ud83d", "\\ude00", "\\uZZZZ", "\\x", "\xc3", "\xed\xa0\x80", "\xc0\xaf",
		"\xf4\x90\x80\x80", "\x01", "\x1f", "\\ud83dx", "\\u12", "\xe2\x82",
	};
	unsigned n = rnd(6);

	sb_addc(b, '"');
	while (n--)
		sb_adds(b, bits[rnd(rnd(50) ? 8 : sizeof(bits) / sizeof(bits[0]))]);
	sb_addc(b, '"');
}

static void gen_value(struct sb *b, unsigned depth);

static void gen_members(struct sb *b, unsigned depth, int singer)
{
	static const char *const keys[] = {
		"\"id\"", "\"type\"", "\"record\"", "\"stream\"", "\"r\"", "\"a\"",
		"\"\\u0072ecord\"", "\"\"", "\"k\\\"q\"", "\"n\xc3\xa4me\"",
	};
	unsigned i, n = rnd(depth < 3 ? 12 : 4);

	sb_addc(b, '{');
	gen_ws(b);
	if (singer) {
		sb_adds(b, "\"type\":\"RECORD\",\"stream\":\"s\",\"record\":");
		gen_value(b, depth + 1);
		if (n)
			sb_addc(b, ',');
	}
	for (i = 0; i < n; i++) {
		if (i)
			sb_addc(b, ',');
		gen_ws(b);
		sb_adds(b, keys[rnd(sizeof(keys) / sizeof(keys[0]))]);
		gen_ws(b);
		sb_addc(b, ':');
		gen_ws(b);
		gen_value(b, depth + 1);
		gen_ws(b);
	}
	sb_addc(b, '}');
}

static void gen_value(struct sb *b, unsigned depth)
{
	static const char *const nums[] = {
		/* valid, the first 14 */
		"0", "-0", "1", "-1", "12345678901234567891", "584724E-2", "6.77E2", "8.959e-3",
		"1e+5", "0.0", "-0.5e-0", "9007199254740993", "-9223372036854775809",
		"123456789012345678901234567890",
		/* not */
		"01", "1.", "-", "1e", "1e+", ".5", "+1", "0x1", "1.5.2", "-01", "1.e5", "00",
	};
	unsigned i, n;

	if (depth > 70) {
		sb_adds(b, "1");
		return;
	}
	switch (rnd(depth > 2 ? 10 : 12)) {
	case 0: case 1: case 2:
		gen_string(b);
		break;
	case 3: case 4:
		sb_adds(b, nums[rnd(rnd(50) ? 14 : sizeof(nums) / sizeof(nums[0]))]);
		break;
	case 5:
		sb_adds(b, rnd(200) ? "true" : "tru");
		break;
	case 6:
		sb_adds(b, rnd(200) ? "false" : "nul");
		break;
	case 7:
		sb_adds(b, "null");
		break;
	case 8:
		/* now and then a deep one: past the fast path's 64 levels */
		n = rnd(40) == 0 ? 60 + rnd(10) : rnd(4);
		{
			char closing[80];

			for (i = 0; i < n; i++) {
				closing[i] = rnd(2) ? ']' : '}';
				sb_adds(b, closing[i] == ']' ? "[" : "{\"d\":");
			}
			sb_adds(b, "[]");
			while (n--)
				sb_addc(b, closing[n]);
		}
		break;
	case 9:
		sb_addc(b, '[');
		gen_ws(b);
		n = rnd(5);
		for (i = 0; i < n; i++) {
			if (i)
				sb_addc(b, ',');
			gen_value(b, depth + 1);
			gen_ws(b);
		}
		sb_addc(b, ']');
		break;
	default:
		gen_members(b, depth, 0);
		break;
	}
}

/* A copy of in ending where a page that cannot be read begins. */
static char *guard_page;
static size_t page_size;

static const char *at_guard(const char *in, size_t len)
{
	char *p;

	if (len > page_size)
		return in;
	p = guard_page + page_size - len;
	memcpy(p, in, len);
	return p;
}

static int diff_all(const char *in, size_t len)
{
	const char *g = at_guard(in, len);

	return json_diff(g, len, 8, 2, JSON_DIFF_ROOM, 1, 1) &&
	       json_diff(g, len, 8, 2, 3, 1, 1) &&
	       json_diff(g, len, 8, 2, 0, 0, 1) &&
	       json_diff(g, len, JSON_DIFF_NKEYS, 8, 5, 1, 0) &&
	       json_diff(g, len, 0, 0, 4, 1, 1);
}

static void test_fast(void)
{
	struct sb b = SB_INIT, m = SB_INIT;
	unsigned long records = 0, valid = 0, mutants = 0;
	const char *bad_at = NULL;
	size_t i, n, at;
	int agree = 1, j;
	void *map;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	map = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ok(map != MAP_FAILED && mprotect((char *)map + page_size, page_size, PROT_NONE) == 0,
	   "fast: a page, and after it one that cannot be read");
	guard_page = map;
	for (i = 0; i < 4000 && agree; i++) {
		sb_reset(&b);
		gen_ws(&b);
		if (rnd(10))
			gen_members(&b, 0, 1);
		else
			gen_value(&b, 0);
		gen_ws(&b);
		records++;
		{
			size_t pos;
			const char *msg;
			struct json_span top;

			valid += json_validate(b.buf, b.len, &top, &pos, &msg) == 0;
		}
		if (!diff_all(b.buf, b.len)) {
			bad_at = "record";
			break;
		}
		/* every cut short, for the short ones; mutants for all */
		for (n = b.len < 200 ? 0 : b.len; n < b.len && agree; n++) {
			mutants++;
			if (!diff_all(b.buf, n)) {
				bad_at = "cut";
				agree = 0;
			}
		}
		for (j = 0; j < 24 && agree; j++) {
			static const char bytes[] = "{}[]:,\"\\ \t\n0-eE.+tfnu\x01\x7f\x80\xc3\xff";

			sb_reset(&m);
			sb_add(&m, b.buf, b.len);
			at = m.len ? rnd((unsigned)m.len) : 0;
			switch (rnd(4)) {
			case 0:
				if (m.len)
					m.buf[at] = bytes[rnd(sizeof(bytes) - 1)];
				break;
			case 1:
				if (m.len) {
					memmove(m.buf + at, m.buf + at + 1, m.len - at - 1);
					m.len--;
				}
				break;
			case 2:
				sb_addc(&m, ' ');
				memmove(m.buf + at + 1, m.buf + at, m.len - at - 1);
				m.buf[at] = bytes[rnd(sizeof(bytes) - 1)];
				break;
			default:
				m.len = at;
				break;
			}
			mutants++;
			if (!diff_all(m.buf, m.len)) {
				bad_at = "mutant";
				agree = 0;
			}
		}
	}
	if (!agree || bad_at)
		printf("#   %s: %s\n", bad_at ? bad_at : "?", show(bad_at && strcmp(bad_at, "record") ? m.buf : b.buf,
							    bad_at && strcmp(bad_at, "record") ? m.len : b.len));
	ok(agree && !bad_at, "fast: %lu records (%lu valid) and %lu cut or mutated: the scanner's results",
	   records, valid, mutants);
	/* Lengths around the 16-byte loads and the copy's end, ending at the guard page. */
	agree = 1;
	for (n = 1; n < 200 && agree; n++) {
		sb_reset(&b);
		sb_adds(&b, "{\"record\":{\"s\":\"");
		for (i = 0; i < n; i++)
			sb_addc(&b, (char)('a' + i % 26));
		sb_adds(&b, "\",\"n\":");
		for (i = 0; i < n % 40 + 1; i++)
			sb_addc(&b, (char)('1' + i % 9));
		sb_adds(&b, "}}");
		for (at = 0; at <= b.len && agree; at++)
			agree = diff_all(b.buf, at);
	}
	ok(agree, "fast: strings and numbers of every length to 200, every prefix, at a page's end");
	/* Nesting about the fast path's limit and the scanner's, in the record and after it. */
	agree = 1;
	for (n = 60; n < 520 && agree; n += n == 70 ? 435 : 1) {
		for (j = 0; j < 2 && agree; j++) {
			sb_reset(&b);
			sb_adds(&b, j ? "{\"record\":{\"a\":1},\"x\":" : "{\"record\":{\"a\":");
			for (i = 0; i < n; i++)
				sb_adds(&b, i % 3 ? "[" : "{\"d\":");
			sb_addc(&b, '1');
			for (i = n; i-- > 0;)
				sb_addc(&b, i % 3 ? ']' : '}');
			sb_adds(&b, j ? "}" : "}}");
			agree = diff_all(b.buf, b.len);
		}
	}
	ok(agree, "fast: nesting 60 to 70 and 505 to 519 deep");
	/* Each token of the tables, good or bad, alone in a valid record: in it, deeper, after it. */
	agree = 1;
	for (i = 0; i < sizeof(good) / sizeof(good[0]) + sizeof(bad) / sizeof(bad[0]) + 40 && agree; i++) {
		static const char *const more[] = {
			"01", "-01", "00", "1.", "-", "1e", "1e+", ".5", "+1", "1.e5", "0x1", "1.5.2",
			"-0", "0e0", "0.0E+00", "tru", "fals", "nul", "True", "nulll", "truex", "\"\\ud83d\"",
			"\"\\ude00\"", "\"\\ud83d\\u0041\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\"",
			"\"\xf4\x90\x80\x80\"", "\"\x01\"", "\"a\x1f\"", "\"\\u12\"", "\"\xe2\x82\"",
			"\"\xf0\x9f\x98\"", "\"\\x\"", "\"abc", "\"\\\"", "[1,]", "{\"a\":1,}", "[", "{",
		};
		size_t ngood = sizeof(good) / sizeof(good[0]), nbad = sizeof(bad) / sizeof(bad[0]);
		const char *v = i < ngood ? good[i] : i < ngood + nbad ? bad[i - ngood].in : more[i - ngood - nbad];
		size_t vn = i < ngood ? strlen(v) : i < ngood + nbad ? bad[i - ngood].len : strlen(v);
		static const char *const around[][2] = {
			{ "{\"type\":\"RECORD\",\"record\":{\"id\":1,\"x\":", ",\"y\":\"z\"}}" },
			{ "{\"type\":\"RECORD\",\"record\":{\"x\":", "}}" },
			{ "{\"record\":{\"a\":[1,{\"b\":", "}],\"c\":2}}" },
			{ "{\"record\":{\"a\":1},\"x\":", "}" },
			{ "{\"record\":{\"a\":1},\"x\":[", "]}" },
		};

		for (j = 0; j < 5 && agree; j++) {
			sb_reset(&b);
			sb_adds(&b, around[j][0]);
			sb_add(&b, v, vn);
			sb_adds(&b, around[j][1]);
			agree = diff_all(b.buf, b.len);
		}
		if (!agree)
			printf("#   %s\n", show(b.buf, b.len));
	}
	ok(agree, "fast: each good and bad token of the tables in a record, deeper and after it");
	sb_free(&b);
	sb_free(&m);
	munmap(map, 2 * page_size);
}

static void test_object_get(void)
{
	static const char in[] =
		"{ \"a\" : 1 , \"b\":[ ] ,\"a\":2, \"c\\u00e9\" : {\"d\":\"}\"},"
		" \"e\\\"\": true, \"n\\u0000\": null, \"big\": 12345678901234567891 }";
	struct json_span obj, v, arr;
	size_t pos;
	const char *msg;

	ok(json_validate(in, strlen(in), &obj, &pos, &msg) == 0, "get: valid");
	is_int(json_object_get(&obj, "a", &v), 1, "get: a found");
	ok(span_is(&v, "1") && v.type == JSON_NUMBER,
	   "get: duplicate key, the first wins");
	is_int(json_object_get(&obj, "b", &v), 1, "get: b found");
	ok(span_is(&v, "[ ]") && v.type == JSON_ARRAY, "get: b is [ ]");
	is_int(json_object_get(&obj, "c\xc3\xa9", &v), 1,
	       "get: escaped key matches its decoded form");
	ok(span_is(&v, "{\"d\":\"}\"}"), "get: nested object with '}' in a string");
	is_int(json_object_get(&obj, "e\"", &v), 1, "get: key with \\\"");
	is_int(v.type, JSON_TRUE, "get: e\" is true");
	is_int(json_object_get(&obj, "n", &v), 0,
	       "get: a key with \\u0000 does not match its prefix");
	is_int(json_object_get(&obj, "big", &v), 1, "get: big");
	ok(span_is(&v, "12345678901234567891"), "get: big number byte for byte");
	is_int(json_object_get(&obj, "d", &v), 0, "get: nested key is absent");
	is_int(json_object_get(&obj, "", &v), 0, "get: empty key absent");

	ok(json_validate(S("[1,2]"), &arr, &pos, &msg) == 0, "get: array valid");
	is_int(json_object_get(&arr, "a", &v), -1, "get: -1 on an array");
	ok(json_validate(S("{}"), &obj, &pos, &msg) == 0, "get: {} valid");
	is_int(json_object_get(&obj, "a", &v), 0, "get: nothing in {}");
}

static void test_iterate(void)
{
	static const char in[] = "{ \"a\" : 1 , \"b\":[ \"]\" , {\"x\":[]} ,-2.5e1],\"c\" :\"\\\\\"}";
	struct json_span obj, k, v, e;
	size_t pos = 0, apos = 0;
	const char *msg;
	int n = 0;

	ok(json_validate(in, strlen(in), &obj, &pos, &msg) == 0, "iterate: valid");
	pos = 0;
	ok(json_object_next(&obj, &pos, &k, &v) && span_is(&k, "\"a\"") &&
	   span_is(&v, "1"), "iterate: first member");
	ok(json_object_next(&obj, &pos, &k, &v) && span_is(&k, "\"b\"") &&
	   v.type == JSON_ARRAY, "iterate: second member");
	ok(json_array_next(&v, &apos, &e) && span_is(&e, "\"]\""),
	   "iterate: first element");
	ok(json_array_next(&v, &apos, &e) && span_is(&e, "{\"x\":[]}"),
	   "iterate: second element");
	ok(json_array_next(&v, &apos, &e) && span_is(&e, "-2.5e1") &&
	   e.type == JSON_NUMBER, "iterate: third element");
	is_int(json_array_next(&v, &apos, &e), 0, "iterate: end of array");
	is_int(json_array_next(&v, &apos, &e), 0, "iterate: end stays end");
	ok(json_object_next(&obj, &pos, &k, &v) && span_is(&k, "\"c\"") &&
	   span_is(&v, "\"\\\\\""), "iterate: string ending in an escaped backslash");
	is_int(json_object_next(&obj, &pos, &k, &v), 0, "iterate: end of object");

	ok(json_validate(S("{ }"), &obj, &pos, &msg) == 0, "iterate: { } valid");
	pos = 0;
	is_int(json_object_next(&obj, &pos, &k, &v), 0, "iterate: empty object");
	ok(json_validate(S("[ ]"), &obj, &pos, &msg) == 0, "iterate: [ ] valid");
	pos = 0;
	is_int(json_array_next(&obj, &pos, &e), 0, "iterate: empty array");
	ok(json_validate(S("[1,[2,3],4]"), &obj, &pos, &msg) == 0, "iterate: nested");
	pos = 0;
	while (json_array_next(&obj, &pos, &e))
		n++;
	is_int(n, 3, "iterate: three elements at the top level");
}

static void test_decode(void)
{
	static const char want[] = "a\"\\/\b\f\n\r\t\xc3\xa9\xe2\x82\xac"
				   "\xf0\x9f\x98\x80\0z\xc3\xa9";
	static const char in[] = "\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u20AC"
				 "\\ud83d\\ude00\\u0000z\xc3\xa9\"";
	struct json_span s;
	struct sb out = SB_INIT;
	size_t pos;
	const char *msg;

	ok(json_validate(in, strlen(in), &s, &pos, &msg) == 0, "decode: valid");
	sb_adds(&out, "<");
	json_string_decode(&s, &out);
	is_int(out.len, sizeof(want), "decode: length (NUL included)");
	ok(out.len == sizeof(want) && memcmp(out.buf + 1, want, sizeof(want) - 1) == 0,
	   "decode: bytes, appended");
	ok(out.buf[0] == '<', "decode: appends");
	sb_reset(&out);
	ok(json_validate(S("\"\""), &s, &pos, &msg) == 0, "decode: empty valid");
	json_string_decode(&s, &out);
	is_int(out.len, 0, "decode: empty string");
	sb_free(&out);
	/* into a new sb: still a C string (state_check compared it with strcmp) */
	json_string_decode(&s, &out);
	is_str(out.buf, "", "decode: empty string into a new sb is \"\"");
	sb_free(&out);
	/* in place: the same bytes, from the literal's first byte, NUL after them */
	{
		char lit[sizeof(in)];

		memcpy(lit, in, sizeof(in));
		is_int(json_string_decode_in_place(lit, sizeof(in) - 1), sizeof(want) - 1, "decode in place: length");
		ok(memcmp(lit, want, sizeof(want)) == 0, "decode in place: bytes, NUL after them");
		memcpy(lit, "\"\"", 3);
		is_int(json_string_decode_in_place(lit, 2), 0, "decode in place: empty");
		ok(lit[0] == '\0', "decode in place: empty is \"\"");
		memcpy(lit, "\"\\ud83d\\ude00x\"", 16);
		is_int(json_string_decode_in_place(lit, 15), 5, "decode in place: a surrogate pair right after the quote");
		ok(memcmp(lit, "\xf0\x9f\x98\x80x", 6) == 0, "decode in place: its bytes");
	}
}

static void test_equal(void)
{
	struct json_span s;
	size_t pos;
	const char *msg;

	json_validate(S("\"Record\""), &s, &pos, &msg);
	is_int(json_string_equal(&s, "Record", 0), 1, "equal: exact");
	is_int(json_string_equal(&s, "RECORD", 0), 0, "equal: case matters");
	is_int(json_string_equal(&s, "RECORD", 1), 1, "equal: icase");
	is_int(json_string_equal(&s, "RECORDS", 1), 0, "equal: longer");
	is_int(json_string_equal(&s, "RECOR", 1), 0, "equal: shorter");
	json_validate(S("\"\\u0052ec\\u006frd\""), &s, &pos, &msg);
	is_int(json_string_equal(&s, "record", 1), 1, "equal: escapes decoded");
	json_validate(S("\"\\u00e9\""), &s, &pos, &msg);
	is_int(json_string_equal(&s, "\xc3\xa9", 0), 1, "equal: \\u00e9");
	is_int(json_string_equal(&s, "\xc3\x89", 1), 0,
	       "equal: icase is ASCII only");
	json_validate(S("\"a\\u0000\""), &s, &pos, &msg);
	is_int(json_string_equal(&s, "a", 0), 0, "equal: embedded NUL");
	json_validate(S("1"), &s, &pos, &msg);
	is_int(json_string_equal(&s, "1", 0), 0, "equal: not a string");
}

static void test_quote(void)
{
	struct sb out = SB_INIT;
	struct json_span v;
	size_t pos;
	const char *msg;

	json_quote(&out, S("a\"b\\c\n\t\r\b\f\x01\x1f\x7f/\xc3\xa9 \xf0\x9f\x98\x80"));
	is_str(out.buf, "\"a\\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f/\xc3\xa9 \xf0\x9f\x98\x80\"",
	       "quote: escapes like jq");
	sb_reset(&out);
	json_quote(&out, S("x\0y"));
	is_str(out.buf, "\"x\\u0000y\"", "quote: NUL");
	sb_reset(&out);
	json_quote(&out, S("\xff" "a\xc3(\xed\xa0\x80\xe2\x82"));
	is_str(out.buf, "\"\xef\xbf\xbd" "a\xef\xbf\xbd(\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"",
	       "quote: invalid UTF-8 becomes U+FFFD");
	ok(json_validate(out.buf, out.len, &v, &pos, &msg) == 0,
	   "quote: result is valid JSON");
	sb_reset(&out);
	json_quote(&out, S(""));
	is_str(out.buf, "\"\"", "quote: empty");
	sb_free(&out);
}

static void check_print(const char *in, const char *want, int pretty,
			const char *name)
{
	struct sb out = SB_INIT;
	struct json_span v;
	size_t pos;
	const char *msg;

	if (!ok(json_validate(in, strlen(in), &v, &pos, &msg) == 0,
		"%s: input valid", name))
		return;
	if (pretty)
		json_pretty(&v, &out);
	else
		json_compact(&v, &out);
	is_str(out.buf, want, "%s", name);
	sb_free(&out);
}

static void test_print(void)
{
	check_print(" { \"a\" : [ 1 , 2 ] , \"b\" : \"x y\" ,\t\"c\":{ },\r\n\"d\": [ ] } ",
		    "{\"a\":[1,2],\"b\":\"x y\",\"c\":{},\"d\":[]}", 0,
		    "compact: whitespace removed");
	check_print("[ \"a \\\" b\" , \"\\\\\" , \" \" ]",
		    "[\"a \\\" b\",\"\\\\\",\" \"]", 0,
		    "compact: strings untouched");
	check_print("{\"n\": 12345678901234567891, \"f\": 1.50E+3}",
		    "{\"n\":12345678901234567891,\"f\":1.50E+3}", 0,
		    "compact: numbers byte for byte");
	check_print(" 7 ", "7", 0, "compact: scalar");

	check_print("{\"a\":1,\"b\":[1,2,{\"c\":null}],\"d\":{},\"e\":[],"
		    "\"f\":\"x y\",\"big\":12345678901234567891,\"g\":[[]],"
		    "\"h\":{\"i\":{\"j\":true}}}",
		    "{\n"
		    "  \"a\": 1,\n"
		    "  \"b\": [\n"
		    "    1,\n"
		    "    2,\n"
		    "    {\n"
		    "      \"c\": null\n"
		    "    }\n"
		    "  ],\n"
		    "  \"d\": {},\n"
		    "  \"e\": [],\n"
		    "  \"f\": \"x y\",\n"
		    "  \"big\": 12345678901234567891,\n"
		    "  \"g\": [\n"
		    "    []\n"
		    "  ],\n"
		    "  \"h\": {\n"
		    "    \"i\": {\n"
		    "      \"j\": true\n"
		    "    }\n"
		    "  }\n"
		    "}\n", 1, "pretty: like jq .");
	check_print("  { \"k\\u00e9\" :\t\"\\u00e9\\n\" , \"x\" : -0.0e-0 }",
		    "{\n  \"k\\u00e9\": \"\\u00e9\\n\",\n  \"x\": -0.0e-0\n}\n", 1,
		    "pretty: strings and numbers byte for byte");
	check_print("{ }", "{}\n", 1, "pretty: empty object");
	check_print("[ ]", "[]\n", 1, "pretty: empty array");
	check_print("[{ }, [ ], [1]]", "[\n  {},\n  [],\n  [\n    1\n  ]\n]\n", 1,
		    "pretty: array of containers");
	check_print("\"s\"", "\"s\"\n", 1, "pretty: scalar");
}

int main(void)
{
	test_good();
	test_bad();
	test_depth();
	test_span();
	test_members();
	test_inner();
	test_fast();
	test_object_get();
	test_iterate();
	test_decode();
	test_equal();
	test_quote();
	test_print();
	return tap_done();
}
