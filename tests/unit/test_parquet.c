/*
 * Unit tests of the Parquet writer's encoders against bytes computed by hand
 * from the specifications (thrift-compact-protocol.md, parquet-format's
 * Encodings.md), its value parsers, its schema mapping, and the layout of a
 * small file.
 */
#include "bucket.h"
#include "err.h"
#include "parquet.h"
#include "parquet/parquet_enc.h"
#include "parquet/parquet_impl.h"
#include "pqread.h"
#include "sb.h"
#include "taptest.h"

#include <snappy-c.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* "0a 1b ..." -> bytes; compare with sb. */
static int bytes_are(const struct sb *got, const char *hex)
{
	unsigned char want[4096];
	size_t n = 0, i;
	unsigned v;
	int k;

	while (*hex) {
		if (*hex == ' ') {
			hex++;
			continue;
		}
		if (sscanf(hex, "%2x%n", &v, &k) != 1)
			return 0;
		want[n++] = (unsigned char)v;
		hex += k;
	}
	if (got->len == n && (n == 0 || memcmp(got->buf, want, n) == 0))
		return 1;
	printf("#   got ");
	for (i = 0; i < got->len; i++)
		printf("%02x ", (unsigned char)got->buf[i]);
	printf("\n");
	return 0;
}

static void test_varint(void)
{
	static const struct { uint64_t v; const char *hex; } cases[] = {
		{ 0, "00" }, { 1, "01" }, { 127, "7f" }, { 128, "80 01" }, { 300, "ac 02" },
		{ 16383, "ff 7f" }, { 16384, "80 80 01" },
		{ UINT64_MAX, "ff ff ff ff ff ff ff ff ff 01" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sb b = SB_INIT;

		pq_varint(&b, cases[i].v);
		ok(bytes_are(&b, cases[i].hex), "varint %llu is %s", (unsigned long long)cases[i].v, cases[i].hex);
		sb_free(&b);
	}
}

static void test_zigzag(void)
{
	is_int(pq_zigzag(0), 0, "zigzag 0");
	is_int(pq_zigzag(-1), 1, "zigzag -1");
	is_int(pq_zigzag(1), 2, "zigzag 1");
	is_int(pq_zigzag(-2), 3, "zigzag -2");
	is_int(pq_zigzag(2147483647), 4294967294LL, "zigzag INT32_MAX");
	is_int(pq_zigzag(-2147483647 - 1), 4294967295LL, "zigzag INT32_MIN");
	ok(pq_zigzag(INT64_MAX) == UINT64_MAX - 1, "zigzag INT64_MAX");
	ok(pq_zigzag(INT64_MIN) == UINT64_MAX, "zigzag INT64_MIN");
}

static void test_thrift_fields(void)
{
	struct sb b = SB_INIT;
	struct pq_thrift t;

	pq_thrift_init(&t, &b);
	pq_thrift_i32(&t, 1, 1);		/* delta 1, i32: 15; zigzag(1) = 2 */
	pq_thrift_i32(&t, 3, -1);		/* delta 2: 25; zigzag(-1) = 1 */
	pq_thrift_i64(&t, 20, 300);		/* delta 17 > 15: 06, zigzag(20) = 40 = 28; 600 = d8 04 */
	pq_thrift_bool(&t, 21, 1);		/* delta 1, true: 11 */
	pq_thrift_bool(&t, 22, 0);		/* delta 1, false: 12 */
	pq_thrift_binary(&t, 23, "ab", 2);	/* 18, length 02, 61 62 */
	pq_thrift_struct(&t, 24);		/* 1c; inner ids start again from 0 */
	pq_thrift_i32(&t, 1, 5);		/* 15 0a */
	pq_thrift_end(&t);			/* 00 */
	pq_thrift_i32(&t, 25, 0);		/* delta 1 from 24: 15 00 */
	pq_thrift_i32(&t, 2, 2);		/* lower id: long form 05, zigzag(2) = 04; 04 */
	pq_thrift_end(&t);
	ok(bytes_are(&b, "15 02 25 01 06 28 d8 04 11 12 18 02 61 62 1c 15 0a 00 15 00 05 04 04 00"),
	   "fields: deltas, long form, bools in the header, binary, nested struct");
	sb_free(&b);
}

static void test_thrift_lists(void)
{
	struct sb b = SB_INIT;
	struct pq_thrift t;
	int i;

	pq_thrift_init(&t, &b);
	pq_thrift_list(&t, 1, PQ_T_I32, 3);	/* 19, size 3 of i32: 35 */
	pq_thrift_elem_i32(&t, 1);
	pq_thrift_elem_i32(&t, 2);
	pq_thrift_elem_i32(&t, -3);		/* 02 04 05 */
	pq_thrift_list(&t, 2, PQ_T_STRUCT, 2);	/* 19 2c */
	for (i = 0; i < 2; i++) {
		pq_thrift_elem_struct(&t);
		pq_thrift_i32(&t, 1, 7);	/* 15 0e */
		pq_thrift_end(&t);		/* 00 */
	}
	pq_thrift_i32(&t, 3, 0);		/* after the list: delta 1 from 2: 15 00 */
	pq_thrift_end(&t);
	ok(bytes_are(&b, "19 35 02 04 05 19 2c 15 0e 00 15 0e 00 15 00 00"),
	   "short lists of i32 and of structs");

	sb_reset(&b);
	pq_thrift_init(&t, &b);
	pq_thrift_list(&t, 4, PQ_T_BINARY, 15);	/* 49; 15 elements: f8 then varint 0f */
	for (i = 0; i < 15; i++)
		pq_thrift_elem_binary(&t, "x", 1);
	pq_thrift_end(&t);
	ok(bytes_are(&b, "49 f8 0f 01 78 01 78 01 78 01 78 01 78 01 78 01 78 01 78 01 78 01 78 "
		     "01 78 01 78 01 78 01 78 01 78 00"), "a list of 15 uses the long size form");
	sb_free(&b);
}

/* A data page header as the writer writes one: the spec's PageHeader. */
static void test_thrift_page_header(void)
{
	struct sb b = SB_INIT;
	struct pq_thrift t;

	pq_thrift_init(&t, &b);
	pq_thrift_i32(&t, 1, 0);		/* type DATA_PAGE: 15 00 */
	pq_thrift_i32(&t, 2, 100);		/* 15 c8 01 */
	pq_thrift_i32(&t, 3, 50);		/* 15 64 */
	pq_thrift_struct(&t, 5);		/* delta 2: 2c */
	pq_thrift_i32(&t, 1, 10);		/* num_values: 15 14 */
	pq_thrift_i32(&t, 2, 0);		/* PLAIN: 15 00 */
	pq_thrift_i32(&t, 3, 3);		/* RLE: 15 06 */
	pq_thrift_i32(&t, 4, 3);		/* 15 06 */
	pq_thrift_end(&t);
	pq_thrift_end(&t);
	ok(bytes_are(&b, "15 00 15 c8 01 15 64 2c 15 14 15 00 15 06 15 06 00 00"), "a PageHeader");
	sb_free(&b);
}

static void rle(struct sb *b, int bw, const uint32_t *v, size_t n)
{
	struct pq_rle e;
	size_t i;

	sb_reset(b);
	pq_rle_init(&e, b, bw);
	for (i = 0; i < n; i++)
		pq_rle_put(&e, v[i]);
	pq_rle_finish(&e);
}

static void test_rle(void)
{
	struct sb b = SB_INIT;
	uint32_t v[600];
	size_t i;

	memset(v, 0, sizeof(v));
	rle(&b, 1, v, 16);
	ok(bytes_are(&b, "20 00"), "16 zeros: one RLE run, header 16<<1, value in one byte");

	{
		static const uint32_t lit[] = { 1, 0, 1, 1, 0, 0, 0, 1 };

		rle(&b, 1, lit, 8);
		ok(bytes_are(&b, "03 8d"), "8 mixed bits: one bit-packed group, LSB first");
	}
	for (i = 0; i < 8; i++)
		v[i] = (uint32_t)i;
	rle(&b, 3, v, 8);
	ok(bytes_are(&b, "03 88 c6 fa"), "0..7 at bit width 3: the spec's example");

	for (i = 0; i < 8; i++)
		v[i] = 1;
	for (; i < 11; i++)
		v[i] = 0;
	rle(&b, 1, v, 11);
	ok(bytes_are(&b, "10 01 06 00"), "8 ones then 3 zeros: two RLE runs");

	v[0] = 1;
	for (i = 1; i < 12; i++)
		v[i] = 0;
	rle(&b, 1, v, 12);
	ok(bytes_are(&b, "05 01 00"), "1 then 11 zeros: 2 bit-packed groups, the last padded");

	for (i = 0; i < 512; i++)
		v[i] = (uint32_t)(i & 1);
	rle(&b, 1, v, 512);
	{
		struct sb want = SB_INIT;
		int good;

		sb_addc(&want, 0x7f);
		for (i = 0; i < 63; i++)
			sb_addc(&want, (char)0xaa);
		sb_addc(&want, 0x03);
		sb_addc(&want, (char)0xaa);
		good = b.len == want.len && memcmp(b.buf, want.buf, b.len) == 0;
		ok(good, "512 alternating bits: a run of 63 groups (header 7f), then one of 1");
		sb_free(&want);
	}

	for (i = 0; i < 10; i++)
		v[i] = 300;
	rle(&b, 9, v, 10);
	ok(bytes_are(&b, "14 2c 01"), "300 x10 at bit width 9: value in 2 little-endian bytes");

	for (i = 0; i < 8; i++)
		v[i] = 0xdeadbeef;
	rle(&b, 32, v, 8);
	ok(bytes_are(&b, "10 ef be ad de"), "bit width 32");

	rle(&b, 1, v, 0);
	ok(bytes_are(&b, ""), "no values: nothing");

	for (i = 0; i < 300; i++)
		v[i] = 1;
	rle(&b, 1, v, 300);
	ok(bytes_are(&b, "d8 04 01"), "300 ones: varint run length 600");
	sb_free(&b);
}

static void test_timestamps(void)
{
	static const struct { const char *s; long long us; } good[] = {
		{ "1970-01-01T00:00:00Z", 0 },
		{ "1970-01-01T00:00:00.000001Z", 1 },
		{ "1969-12-31T23:59:59.999999Z", -1 },
		{ "2000-01-01T00:00:00-05:00", 946702800000000LL },
		{ "2000-01-01t05:00:00z", 946702800000000LL },
		{ "2000-01-01 05:00:00+00:00", 946702800000000LL },
		{ "2024-02-29T12:34:56.789+02:00", 1709202896789000LL },
		{ "2024-02-29T12:34:56.789000000+02:00", 1709202896789000LL },
		{ "9999-12-31T23:59:59.999999Z", 253402300799999999LL },
		{ "0001-01-01T00:00:00Z", -62135596800000000LL },
		/* pipelinewise-tap-postgres, a 1900 timestamptz of a server in local mean time */
		{ "1900-01-01T00:19:32+00:19:32", -2208988800000000LL },
		{ "2000-01-01T00:00:00-00:00:30", 946684830000000LL },
		{ "2000-01-01T00:00:00.5+00:00:00", 946684800500000LL },
		/* the fraction's digits: six count, later zeros may follow */
		{ "2000-01-01T00:00:00.123456Z", 946684800123456LL },
		{ "2000-01-01T00:00:00.000010Z", 946684800000010LL },
		{ "2000-01-01T00:00:00.1234560000Z", 946684800123456LL },
		{ "2024-12-31T23:59:59.99Z", 1735689599990000LL },
		{ "2024-04-30T00:00:00Z", 1714435200000000LL },
	};
	static const char *bad[] = {
		"2023-02-29T00:00:00Z", "2024-01-01T00:00:00", "2024-01-01", "2024-01-01T24:00:00Z",
		"2024-04-31T00:00:00Z", "2024-00-10T00:00:00Z", "2024-01-00T00:00:00Z", "2024-01-01T00:60:00Z",
		"2024-01-01T00:00:61Z", "2024-01-01T00:00:00.1234561Z", "2024-01-01X00:00:00Z",
		"2024/01-01T00:00:00Z", "2024-01-01T00-00:00Z", "2024-01-01T00:00-00Z", "2024-01-0aT00:00:00Z",
		"2024-01-01T00:00:00.1234567Z", "2024-01-01T00:00:00.Z", "2024-13-01T00:00:00Z",
		"2024-01-01T00:00:00+2:00", "2024-01-01T00:00:00+02:00x", "2024-01-01T00:00:00+0200",
		"x024-01-01T00:00:00Z", "1900-01-01T00:19:32+00:19:3", "1900-01-01T00:19:32+00:19:60",
		"1900-01-01T00:19:32+00:19-32", "1900-01-01T00:19:32+00:19:32Z", "1900-01-01T00:19:32+00:1932",
		/* a leap second: a TIMESTAMP cannot hold it; it widens to its text */
		"2016-12-31T23:59:60Z",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		int64_t us = 42;
		int r = pq_parse_timestamp(good[i].s, strlen(good[i].s), &us);

		ok(r == 0 && us == good[i].us, "timestamp %s", good[i].s);
		if (r != 0 || us != good[i].us)
			printf("#   got %d %lld\n", r, (long long)us);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int64_t us;

		is_int(pq_parse_timestamp(bad[i], strlen(bad[i]), &us), -1, "not a timestamp: %s", bad[i]);
	}
}

static void test_dates(void)
{
	int32_t d = 0;

	ok(pq_parse_date("2024-03-01", 10, &d) == 0 && d == 19783, "2024-03-01 is day 19783");
	ok(pq_parse_date("1969-12-31", 10, &d) == 0 && d == -1, "1969-12-31 is day -1");
	ok(pq_parse_date("2000-02-29", 10, &d) == 0 && d == 11016, "2000-02-29 is day 11016");
	is_int(pq_parse_date("1900-02-29", 10, &d), -1, "1900 is no leap year");
	is_int(pq_parse_date("2024-03-01T00:00:00Z", 20, &d), -1, "a date-time is no date");
	is_int(pq_parse_date("2024-3-01", 9, &d), -1, "two-digit months");
}

static void test_schema(void)
{
	static const char schema[] =
		"{\"type\":\"object\",\"properties\":{"
		"\"i\":{\"type\":\"integer\"},"
		"\"n\":{\"type\":[\"null\",\"number\"]},"
		"\"in\":{\"type\":[\"integer\",\"number\"]},"
		"\"b\":{\"type\":[\"boolean\",\"null\"]},"
		"\"s\":{\"type\":\"string\"},"
		"\"ts\":{\"type\":[\"null\",\"string\"],\"format\":\"date-time\"},"
		"\"d\":{\"type\":\"string\",\"format\":\"date\"},"
		"\"o\":{\"type\":\"object\",\"properties\":{}},"
		"\"a\":{\"type\":\"array\"},"
		"\"any\":{},"
		"\"mixed\":{\"type\":[\"string\",\"integer\"]},"
		"\"sdk\":{\"anyOf\":[{\"type\":\"string\",\"format\":\"date-time\"},{\"type\":\"null\"}]},"
		"\"_extra\":{\"type\":\"string\"},"
		"\"i\":{\"type\":\"string\"},"
		"\"caf\\u00e9\":{\"type\":\"boolean\"}}}";
	struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
	struct sb b = SB_INIT;

	pq_schema_types_json(s, &b);
	is_str(b.buf, "{\"i\":\"INT64\",\"n\":\"DOUBLE\",\"in\":\"DOUBLE\",\"b\":\"BOOLEAN\","
	       "\"s\":\"STRING\",\"ts\":\"TIMESTAMP(MICROS,UTC)\",\"d\":\"DATE\",\"o\":\"JSON\","
	       "\"a\":\"JSON\",\"any\":\"JSON\",\"mixed\":\"JSON\",\"sdk\":\"TIMESTAMP(MICROS,UTC)\","
	       "\"_extra\":\"STRING\",\"caf\xc3\xa9\":\"BOOLEAN\",\"__extra\":\"JSON\"}",
	       "JSON Schema types to Parquet columns; a repeated name counts once; the extra column last");
	ok(s->cols[7].want == JSON_OBJECT && s->cols[8].want == JSON_ARRAY && s->cols[9].want == JSON_NONE,
	   "object and array columns take only objects and arrays");
	pq_schema_free(s);

	s = pq_schema_new("{}", 2, NULL);
	sb_reset(&b);
	pq_schema_types_json(s, &b);
	is_str(b.buf, "{\"_extra\":\"JSON\"}", "no properties: only the extra column");
	pq_schema_free(s);
	sb_free(&b);
}

/* number with multipleOf 10^-s (and bounds 10^(p-s)): DECIMAL(p,s) (issue #27). */
static void test_schema_decimal(void)
{
	static const char schema[] = "{\"properties\":{"
		"\"pg\":{\"type\":[\"null\",\"number\"],\"exclusiveMaximum\":true,\"maximum\":10000000000,"
		"\"multipleOf\":0.01,\"exclusiveMinimum\":true,\"minimum\":-10000000000},"
		"\"pw\":{\"type\":\"number\",\"maximum\":10000000000000000000000000000,\"multipleOf\":1e-10},"
		"\"my\":{\"type\":\"number\",\"multipleOf\":0.0001},"
		"\"big\":{\"type\":\"number\",\"maximum\":1e62,\"multipleOf\":1E-38},"
		"\"e\":{\"type\":\"number\",\"multipleOf\":1.0e-3,\"maximum\":1e2},"
		"\"three\":{\"type\":\"number\",\"multipleOf\":0.03},"
		"\"one\":{\"type\":\"number\",\"multipleOf\":1},"
		"\"ni\":{\"type\":[\"number\",\"integer\"],\"multipleOf\":0.1}}}";
	struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
	struct sb b = SB_INIT;

	pq_schema_types_json(s, &b);
	is_str(b.buf, "{\"pg\":\"DECIMAL(12,2)\",\"pw\":\"DECIMAL(38,10)\",\"my\":\"DECIMAL(38,4)\","
	       "\"big\":\"STRING\",\"e\":\"DECIMAL(5,3)\",\"three\":\"DOUBLE\",\"one\":\"DOUBLE\","
	       "\"ni\":\"DECIMAL(38,1)\",\"_extra\":\"JSON\"}",
	       "multipleOf 10^-s with bounds 10^(p-s) (or none: 38) is DECIMAL(p,s); beyond 38 digits, STRING (plain decimal text)");
	pq_schema_free(s);
	sb_free(&b);
}

/* Write a file with the writer into a local bucket and check its frame. */
static void test_file(void)
{
	char dir[] = "/tmp/test_parquet.XXXXXX";
	static const char schema[] = "{\"properties\":{\"id\":{\"type\":\"integer\"},"
				     "\"name\":{\"type\":[\"null\",\"string\"]}}}";
	static const char *recs[] = {
		"{\"id\":1,\"name\":\"a\"}", "{\"id\":-9223372036854775808,\"name\":null}",
		"{\"name\":\"\\u00e9\",\"id\":9223372036854775807,\"x\":[1, 2]}",
	};
	struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
	struct pq_codec *codec = pq_codec_new(COMPRESSION_ZSTD, 0, 0);
	struct pq_options o = { codec, 2, 1 << 20, 0 };
	struct bucket *b;
	struct pq_writer *pw;
	struct pq_fail f;
	struct sb data = SB_INIT;
	size_t i;
	uint32_t flen;
	int r;

	if (mkdtemp(dir) == NULL) {
		ok(0, "mkdtemp");
		return;
	}
	b = bucket_open(dir);
	pw = pq_writer_open(bucket_writer_open(b, "t.parquet"), s, &o);
	ok(pw != NULL, "writer opens");
	for (i = 0; i < 3; i++) {
		struct json_span rec = { recs[i], strlen(recs[i]), JSON_OBJECT };

		is_int(pq_writer_add(pw, &rec, &f), 0, "record %zu fits", i + 1);
	}
	{
		static const char big[] = "{\"id\":9223372036854775808}";
		static const char str[] = "{\"id\":\"1\"}";
		static const char frac[] = "{\"id\":1.0}";
		struct json_span rec = { big, strlen(big), JSON_OBJECT };

		is_int(pq_writer_add(pw, &rec, &f), PQ_WIDEN, "2^63 needs a wider column");
		ok(f.column == 0 && f.need == PQ_DECIMAL && f.mismatch == 0, "... DECIMAL(38,0), no mismatch");
		rec.p = str;
		rec.len = strlen(str);
		is_int(pq_writer_add(pw, &rec, &f), PQ_WIDEN, "a string in an integer column needs TEXT");
		ok(f.need == PQ_TEXT && f.mismatch == 1, "... and breaks the schema");
		is_str(f.why, "is not an integer", "... and says why");
		ok(f.value.len == 3 && memcmp(f.value.p, "\"1\"", 3) == 0, "... and which value");
		rec.p = frac;
		rec.len = strlen(frac);
		is_int(pq_writer_add(pw, &rec, &f), PQ_WIDEN, "1.0 in an integer column needs DOUBLE");
		ok(f.need == PQ_DOUBLE && f.mismatch == 1, "... and breaks the schema");
	}
	is_int(pq_writer_rows(pw), 3, "3 rows");
	{
		uint64_t size = 0;

		is_int(pq_writer_close(pw, &size), 0, "writer closes");
		bucket_get(b, "t.parquet", &data);
		is_int(size, data.len, "the size it reports is the file's");
	}
	r = data.len > 12 && memcmp(data.buf, "PAR1", 4) == 0 && memcmp(data.buf + data.len - 4, "PAR1", 4) == 0;
	ok(r, "PAR1 at both ends");
	if (r) {
		memcpy(&flen, data.buf + data.len - 8, 4);	/* little-endian hosts */
		ok(flen > 0 && flen < data.len - 12, "the footer length fits the file");
		/* FileMetaData starts with version 1 and 4 schema elements (root + 3). */
		ok((unsigned char)data.buf[data.len - 8 - flen] == 0x15 &&
		   data.buf[data.len - 8 - flen + 1] == 0x02 &&
		   (unsigned char)data.buf[data.len - 8 - flen + 2] == 0x19 &&
		   (unsigned char)data.buf[data.len - 8 - flen + 3] == 0x4c,
		   "the footer begins: version 1, a list of 4 SchemaElement structs");
	}
	sb_free(&data);
	bucket_delete(b, "t.parquet");
	bucket_free(b);
	rmdir(dir);
	pq_codec_free(codec);
	pq_schema_free(s);
}


/* ---- widening ---- */

static struct bucket *wb;

/*
 * pq_writer_add_members() of rec, its members noted as a sink notes them
 * (the record as the value of a message's member); buf holds the text the
 * spans (f->value) point into.  -3 when rec is not valid.
 */
static int add_noted(struct pq_writer *pw, const char *rec, struct pq_fail *f, struct sb *buf)
{
	static const char *const keys[] = { "record" };
	struct json_member room[64];
	struct json_members mem = { 0, room, 64, 0 };
	struct json_span v, top;
	size_t pos;
	const char *msg;

	sb_reset(buf);
	sb_adds(buf, "{\"record\": ");
	sb_adds(buf, rec);
	sb_adds(buf, " }");
	if (json_validate_inner(buf->buf, buf->len, keys, 1, &v, &mem, &top, &pos, &msg) != 0 || mem.n > 64)
		return -3;
	return pq_writer_add_members(pw, v.p, room, mem.n, f);
}

/* Records whose pq_writer_add_members() said something else than pq_writer_add(). */
static int noted_differ;

/*
 * Add {"c":value} to a new writer of s (dropped after): pq_writer_add()'s
 * return; pq_writer_add_members() must say the same (noted_differ).
 */
static int add_value(const struct pq_schema *s, const char *value, struct pq_fail *f)
{
	struct pq_codec *codec = pq_codec_new(COMPRESSION_NONE, 0, 0);
	struct pq_options o = { codec, 10, 1 << 20, 0 };
	struct pq_writer *pw = pq_writer_open(bucket_writer_open(wb, "w.parquet"), s, &o);
	struct pq_writer *pw2 = pq_writer_open(bucket_writer_open(wb, "w2.parquet"), s, &o);
	char *rec = xasprintf("{\"c\":%s}", value);
	struct json_span span = { rec, strlen(rec), JSON_OBJECT };
	int r = pw ? pq_writer_add(pw, &span, f) : -3;
	struct pq_fail f2;
	struct sb buf = SB_INIT;
	int r2 = pw2 ? add_noted(pw2, rec, &f2, &buf) : -3;

	if (r != r2 || (r == PQ_WIDEN && (f->column != f2.column || f->need != f2.need || f->want != f2.want ||
					   f->mismatch != f2.mismatch || strcmp(f->why, f2.why) != 0 ||
					   f->value.len != f2.value.len ||
					   memcmp(f->value.p, f2.value.p, f->value.len) != 0))) {
		printf("#   pq_writer_add_members() differs on %s\n", rec);
		noted_differ++;
	}
	pq_writer_abort(pw);
	pq_writer_abort(pw2);
	pq_codec_free(codec);
	sb_free(&buf);
	free(rec);
	return r;
}

/* A schema of one column "c" of the JSON Schema type, widened along need when not PQ_JSON. */
static struct pq_schema *one_column(const char *type, enum pq_kind need)
{
	char *schema = xasprintf("{\"properties\":{\"c\":%s}}", type);
	struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
	struct pq_fail f = { 0, need, JSON_NONE, 0, NULL, { NULL, 0, JSON_NONE } };

	if (need != PQ_JSON)
		pq_schema_widen(s, &f);
	free(schema);
	return s;
}

static const char *digits401(void)
{
	static char d[402];

	memset(d, '9', 401);
	return d;
}

static void test_widening(void)
{
	static const char *I = "{\"type\":\"integer\"}", *N = "{\"type\":[\"null\",\"number\"]}",
		*B = "{\"type\":\"boolean\"}", *S = "{\"type\":\"string\"}",
		*T = "{\"type\":\"string\",\"format\":\"date-time\"}",
		*D = "{\"type\":\"string\",\"format\":\"date\"}", *O = "{\"type\":\"object\"}",
		*A = "{\"type\":\"array\"}", *ANY = "{}";
	const char *big = digits401();
	/* r 0: fits; else PQ_WIDEN with need, want, mismatch, why. */
	const struct {
		const char *type;
		enum pq_kind kind;	/* PQ_JSON: as the schema says; else widened to it first */
		const char *value;
		int r;
		enum pq_kind need;
		enum json_type want;
		int mismatch;
		const char *why;
	} cases[] = {
		{ I, PQ_JSON, "9223372036854775807", 0, 0, 0, 0, NULL },
		{ I, PQ_JSON, "-0", 0, 0, 0, 0, NULL },
		/* int64_of()'s ends: 19 digits, the sign, a fraction or exponent after them */
		{ I, PQ_JSON, "-9223372036854775808", 0, 0, 0, 0, NULL },
		{ I, PQ_JSON, "1234567890123456789", 0, 0, 0, 0, NULL },
		{ I, PQ_JSON, "0", 0, 0, 0, 0, NULL },
		{ I, PQ_JSON, "-7", 0, 0, 0, 0, NULL },
		{ I, PQ_JSON, "12345678901234567890", PQ_WIDEN, PQ_DECIMAL, JSON_NONE, 0, "is beyond the range of INT64" },
		{ I, PQ_JSON, "-12345678901234567890", PQ_WIDEN, PQ_DECIMAL, JSON_NONE, 0, "is beyond the range of INT64" },
		{ I, PQ_JSON, "1E3", PQ_WIDEN, PQ_DOUBLE, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "-1.5", PQ_WIDEN, PQ_DOUBLE, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "0e0", PQ_WIDEN, PQ_DOUBLE, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "10000000000000000000e-1", PQ_WIDEN, PQ_DOUBLE, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "1234567890123456789.5", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "null", 0, 0, 0, 0, NULL },
		{ I, PQ_JSON, "9223372036854775808", PQ_WIDEN, PQ_DECIMAL, JSON_NONE, 0, "is beyond the range of INT64" },
		{ I, PQ_JSON, "-9223372036854775809", PQ_WIDEN, PQ_DECIMAL, JSON_NONE, 0, "is beyond the range of INT64" },
		{ I, PQ_JSON, "123456789012345678901234567890123456789", PQ_WIDEN, PQ_DIGITS, JSON_NONE, 0,
		  "has more than 38 digits" },
		{ I, PQ_JSON, "1.5", PQ_WIDEN, PQ_DOUBLE, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "1e3", PQ_WIDEN, PQ_DOUBLE, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "1.0", PQ_WIDEN, PQ_DOUBLE, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "0.1234567890123456789", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "1e400", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "\"1\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "true", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "{\"a\":1}", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_JSON, "[1]", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_DECIMAL, "-12345678901234567890123456789012345678", 0, 0, 0, 0, NULL },
		{ I, PQ_DECIMAL, "123456789012345678901234567890123456789", PQ_WIDEN, PQ_DIGITS, JSON_NONE, 0,
		  "has more than 38 digits" },
		{ I, PQ_DECIMAL, "1.5", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_DECIMAL, "\"x\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_DIGITS, big, 0, 0, 0, 0, NULL },
		{ I, PQ_DIGITS, "1", 0, 0, 0, 0, NULL },
		{ I, PQ_DIGITS, "1.5", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		{ I, PQ_DIGITS, "false", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an integer" },
		/* exactness */
		{ N, PQ_JSON, "1.5", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "1.50", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "15e-1", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "0.1", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "0.30000000000000004", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "-0", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "-0.0e7", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "0", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "9007199254740992", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "1.7976931348623157e308", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "5e-324", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "2.2250738585072014e-308", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "100000000000000000000000", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "123456789012345678900000", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0,
		  "has more digits than a DOUBLE holds" },
		{ N, PQ_JSON, "0.000000000000000000000000000001", 0, 0, 0, 0, NULL },
		{ N, PQ_JSON, "0.3000000000000000444", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0,
		  "has more digits than a DOUBLE holds" },
		{ N, PQ_JSON, "9007199254740993", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0, "has more digits than a DOUBLE holds" },
		{ N, PQ_JSON, "12345678901234567891", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0,
		  "has more digits than a DOUBLE holds" },
		{ N, PQ_JSON, "0.1234567890123456789", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0,
		  "has more digits than a DOUBLE holds" },
		{ N, PQ_JSON, "1e400", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0, "is beyond the range of a DOUBLE" },
		{ N, PQ_JSON, "-1e400", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0, "is beyond the range of a DOUBLE" },
		{ N, PQ_JSON, "1e-400", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0, "is beyond the range of a DOUBLE" },
		{ N, PQ_JSON, big, PQ_WIDEN, PQ_TEXT, JSON_NONE, 0, "is beyond the range of a DOUBLE" },
		{ N, PQ_JSON, "\"1.5\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a number" },
		{ N, PQ_JSON, "[]", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a number" },
		{ I, PQ_DOUBLE, "12345678901234567891", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0,
		  "has more digits than a DOUBLE holds" },
		{ B, PQ_JSON, "false", 0, 0, 0, 0, NULL },
		{ B, PQ_JSON, "1", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a boolean" },
		{ B, PQ_JSON, "\"true\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a boolean" },
		{ S, PQ_JSON, "5", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a string" },
		{ S, PQ_JSON, "{}", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a string" },
		{ T, PQ_JSON, "\"1900-01-01T00:19:32+00:19:32\"", 0, 0, 0, 0, NULL },
		{ T, PQ_JSON, "\"2024-01-01T00:00:00.1234560Z\"", 0, 0, 0, 0, NULL },
		{ T, PQ_JSON, "5", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not an RFC 3339 date-time" },
		{ T, PQ_JSON, "\"2024-01-01T00:00:00\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1,
		  "is not an RFC 3339 date-time with a time zone offset, to the microsecond at most" },
		{ T, PQ_JSON, "\"2024-01-01T00:00:00.0000001Z\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 0,
		  "is not an RFC 3339 date-time with a time zone offset, to the microsecond at most" },
		{ T, PQ_JSON, "\"2024-01-01T00:00:00.0000001\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1,
		  "is not an RFC 3339 date-time with a time zone offset, to the microsecond at most" },
		{ D, PQ_JSON, "\"2024-02-29\"", 0, 0, 0, 0, NULL },
		{ D, PQ_JSON, "\"2024-02-30\"", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a date (YYYY-MM-DD)" },
		{ D, PQ_JSON, "20240101", PQ_WIDEN, PQ_TEXT, JSON_NONE, 1, "is not a date (YYYY-MM-DD)" },
		{ O, PQ_JSON, "{\"a\":1}", 0, 0, 0, 0, NULL },
		{ O, PQ_JSON, "[1]", PQ_WIDEN, PQ_JSON, JSON_NONE, 1, "is not an object" },
		{ A, PQ_JSON, "[1]", 0, 0, 0, 0, NULL },
		{ A, PQ_JSON, "{\"a\":1}", PQ_WIDEN, PQ_JSON, JSON_NONE, 1, "is not an array" },
		{ A, PQ_JSON, "\"x\"", PQ_WIDEN, PQ_JSON, JSON_NONE, 1, "is not an array" },
		{ ANY, PQ_JSON, "\"x\"", 0, 0, 0, 0, NULL },
		{ ANY, PQ_JSON, big, 0, 0, 0, 0, NULL },
		{ I, PQ_TEXT, "{\"a\":1}", 0, 0, 0, 0, NULL },
		{ I, PQ_TEXT, "\"x\"", 0, 0, 0, 0, NULL },
		{ I, PQ_TEXT, "1e400", 0, 0, 0, 0, NULL },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pq_schema *s = one_column(cases[i].type, cases[i].kind);
		struct pq_fail f = { 99, PQ_INT64, JSON_OBJECT, -1, NULL, { NULL, 0, JSON_NONE } };
		int r = add_value(s, cases[i].value, &f), good;

		if (cases[i].r == 0) {
			is_int(r, 0, "%s %s: %.40s fits", cases[i].type, pq_kind_name(s->cols[0].kind),
			       cases[i].value);
		} else {
			good = r == PQ_WIDEN && f.column == 0 && f.need == cases[i].need &&
			       f.want == cases[i].want && f.mismatch == cases[i].mismatch && f.why &&
			       strcmp(f.why, cases[i].why) == 0 && f.value.len == strlen(cases[i].value);
			ok(good, "%s %s: %.40s needs %s%s, mismatch %d: %s", cases[i].type,
			   pq_kind_name(s->cols[0].kind), cases[i].value, pq_kind_name(cases[i].need),
			   cases[i].want == JSON_NONE ? "" : "?", cases[i].mismatch, cases[i].why);
			if (!good)
				printf("#   got %d need %s want %d mismatch %d why '%s'\n", r, pq_kind_name(f.need),
				       (int)f.want, f.mismatch, f.why ? f.why : "(null)");
		}
		pq_schema_free(s);
	}
}

/*
 * The values the fast paths convert (int64_of(), parse_decimal() eight
 * digits at a time, parse_timestamp()'s one test) read back as written:
 * through a file, lib/pqread's JSON text of each cell.
 */
/* An unconstrained numeric, as tap-postgres and pipelinewise-tap-postgres describe it: STRING. */
#define NUMERIC_ANY "{\"type\":\"number\",\"maximum\":1e62,\"multipleOf\":1e-38}"

static void test_values_back(void)
{
	static const struct {
		const char *type;
		enum pq_kind kind;
		const char *in, *out;	/* out NULL: the same text */
	} cases[] = {
		{ "{\"type\":\"integer\"}", PQ_JSON, "0", NULL },
		{ "{\"type\":\"integer\"}", PQ_JSON, "-0", "0" },
		{ "{\"type\":\"integer\"}", PQ_JSON, "7", NULL },
		{ "{\"type\":\"integer\"}", PQ_JSON, "-12345678", NULL },
		{ "{\"type\":\"integer\"}", PQ_JSON, "123456789", NULL },
		{ "{\"type\":\"integer\"}", PQ_JSON, "1234567890123456", NULL },
		{ "{\"type\":\"integer\"}", PQ_JSON, "9223372036854775807", NULL },
		{ "{\"type\":\"integer\"}", PQ_JSON, "-9223372036854775808", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "0", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "-1", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "12345678", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "16860740366385928008", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "-16860740366385928008", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "99999999999999999999999999999999999999", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "-99999999999999999999999999999999999999", NULL },
		{ "{\"type\":\"integer\"}", PQ_DECIMAL, "1000000000000000000000", NULL },
		{ "{\"type\":\"string\",\"format\":\"date-time\"}", PQ_JSON, "\"2024-01-01T00:00:01+00:00\"",
		  "\"2024-01-01T00:00:01Z\"" },
		{ "{\"type\":\"string\",\"format\":\"date-time\"}", PQ_JSON, "\"2024-02-29T23:59:59.5-01:30\"",
		  "\"2024-03-01T01:29:59.500000Z\"" },
		{ "{\"type\":\"string\",\"format\":\"date-time\"}", PQ_JSON, "\"1969-12-31 23:59:59.999999z\"",
		  "\"1969-12-31T23:59:59.999999Z\"" },
		{ NUMERIC_ANY, PQ_JSON, "6000000042.00000000", "\"6000000042\"" },
		{ NUMERIC_ANY, PQ_JSON, "6000000042.0", "\"6000000042\"" },
		{ NUMERIC_ANY, PQ_JSON, "6.000000042e9", "\"6000000042\"" },
		{ NUMERIC_ANY, PQ_JSON, "600000004200E-2", "\"6000000042\"" },
		{ NUMERIC_ANY, PQ_JSON, "0E-8", "\"0\"" },
		{ NUMERIC_ANY, PQ_JSON, "-0.000", "\"0\"" },
		{ NUMERIC_ANY, PQ_JSON, "-0.0012500", "\"-0.00125\"" },
		{ NUMERIC_ANY, PQ_JSON, "1.25E+1", "\"12.5\"" },
		{ NUMERIC_ANY, PQ_JSON, "1E-20", "\"0.00000000000000000001\"" },
		{ NUMERIC_ANY, PQ_JSON, "-120", "\"-120\"" },
		{ NUMERIC_ANY, PQ_JSON, "0.5", "\"0.5\"" },
		{ NUMERIC_ANY, PQ_JSON, "1e131073", "\"1e+131073\"" },
		{ NUMERIC_ANY, PQ_JSON, "-12.5e-131080", "\"-1.25e-131079\"" },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pq_schema *s = one_column(cases[i].type, cases[i].kind);
		struct pq_codec *codec = pq_codec_new(COMPRESSION_NONE, 0, 0);
		struct pq_options o = { codec, 10, 1 << 20, 0 };
		struct pq_writer *pw = pq_writer_open(bucket_writer_open(wb, "v.parquet"), s, &o);
		char *rec = xasprintf("{\"c\":%s}", cases[i].in);
		struct json_span span = { rec, strlen(rec), JSON_OBJECT };
		const char *want = cases[i].out ? cases[i].out : cases[i].in;
		struct sb data = SB_INIT, got = SB_INIT;
		struct pq_fail f;
		struct pq_read_file *rf = NULL;
		uint64_t size;
		int r = pw ? pq_writer_add(pw, &span, &f) : -3;

		if (r == 0 && pq_writer_close(pw, &size) == 0 && bucket_get(wb, "v.parquet", &data) == 0 &&
		    (rf = pq_read_open(data.buf, data.len, "v.parquet")) != NULL &&
		    pq_read_next_row(rf) == 1)
			pq_read_value_json(rf, 0, &got);
		else if (r != 0)
			pq_writer_abort(pw);
		is_str(got.buf ? got.buf : "(none)", want, "%s %s: %s reads back", cases[i].type,
		       pq_kind_name(s->cols[0].kind), cases[i].in);
		pq_read_free(rf);
		sb_free(&data);
		sb_free(&got);
		free(rec);
		pq_codec_free(codec);
		pq_schema_free(s);
		bucket_delete(wb, "v.parquet");
	}
}

/*
 * A STRING column's dictionary gives way to PLAIN when the row group's first
 * DICT_PROBE (1,024) values are all distinct, and stays when one repeats;
 * either way every value reads back.
 */
static void test_dict_probe(void)
{
	static const int repeat_at[] = { -1, 700, 1023 };
	size_t t;

	for (t = 0; t < sizeof(repeat_at) / sizeof(repeat_at[0]); t++) {
		struct pq_schema *s = one_column("{\"type\":\"string\"}", PQ_JSON);
		struct pq_codec *codec = pq_codec_new(COMPRESSION_NONE, 0, 0);
		struct pq_options o = { codec, 100000, 64 << 20, 0 };
		struct pq_writer *pw = pq_writer_open(bucket_writer_open(wb, "d.parquet"), s, &o);
		struct sb data = SB_INIT, got = SB_INIT;
		struct pq_read_file *rf = NULL;
		struct pq_fail f;
		uint64_t size;
		int i, r = pw ? 0 : -3, dict_after = -1, rows_ok = 1;

		for (i = 0; i < 3000 && r == 0; i++) {
			char *rec = xasprintf("{\"c\":\"id-%d\"}", i == repeat_at[t] ? 0 : i);
			struct json_span span = { rec, strlen(rec), JSON_OBJECT };

			r = pq_writer_add(pw, &span, &f);
			if (i == 1024)
				dict_after = pw->cols[0].dict;
			free(rec);
		}
		is_int(r, 0, "dictionary probe %zu: 3,000 values added", t);
		is_int(dict_after, repeat_at[t] < 0 ? 0 : 1, "dictionary probe %zu: %s after 1,025 values", t,
		       repeat_at[t] < 0 ? "all distinct, PLAIN" : "one repeat, still a dictionary");
		if (r == 0 && pq_writer_close(pw, &size) == 0 && bucket_get(wb, "d.parquet", &data) == 0)
			rf = pq_read_open(data.buf, data.len, "d.parquet");
		else if (r != 0)
			pq_writer_abort(pw);
		for (i = 0; rf && i < 3000; i++) {
			char want[32];

			snprintf(want, sizeof(want), "\"id-%d\"", i == repeat_at[t] ? 0 : i);
			sb_reset(&got);
			if (pq_read_next_row(rf) != 1 || pq_read_value_json(rf, 0, &got) != 0 ||
			    strcmp(got.buf, want) != 0)
				rows_ok = 0;
		}
		ok(rf && rows_ok, "dictionary probe %zu: every value reads back", t);
		pq_read_free(rf);
		sb_free(&data);
		sb_free(&got);
		pq_codec_free(codec);
		pq_schema_free(s);
		bucket_delete(wb, "d.parquet");
	}
}

/* Every value lands in every column in a few widenings, each one up the lattice. */
static void test_widening_ends(void)
{
	static const char *types[] = {
		"{\"type\":\"integer\"}", "{\"type\":\"number\"}", "{\"type\":\"boolean\"}",
		"{\"type\":\"string\"}", "{\"type\":\"string\",\"format\":\"date-time\"}",
		"{\"type\":\"string\",\"format\":\"date\"}", "{\"type\":\"object\"}", "{\"type\":\"array\"}", "{}",
	};
	const char *values[] = {
		"1", "-1.5", "9223372036854775808", "123456789012345678901234567890123456789",
		"12345678901234567891", "1e400", "true", "\"x\"", "\"2024-01-01\"", "\"2024-01-01T00:00:00Z\"",
		"{\"a\":1}", "[1]", "null", digits401(),
	};
	size_t i, j;
	int bad = 0;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		for (j = 0; j < sizeof(values) / sizeof(values[0]); j++) {
			struct pq_schema *s = one_column(types[i], PQ_JSON);
			struct pq_fail f;
			int r, n = 0;

			while ((r = add_value(s, values[j], &f)) == PQ_WIDEN && n++ < 4) {
				enum pq_kind k = s->cols[0].kind;
				enum json_type w = s->cols[0].want;

				pq_schema_widen(s, &f);
				if (s->cols[0].kind == k && s->cols[0].want == w)
					break;
			}
			if (r != 0) {
				printf("#   %s, %.40s: %d after %d widenings\n", types[i], values[j], r, n);
				bad++;
			}
			pq_schema_free(s);
		}
	}
	is_int(bad, 0, "every value fits every column after at most 4 widenings, each one wider");
}

static void test_widen_never_narrows(void)
{
	struct pq_schema *s = one_column("{\"type\":\"integer\"}", PQ_DIGITS);
	struct pq_fail f = { 0, PQ_DECIMAL, JSON_NONE, 0, "", { NULL, 0, JSON_NONE } };

	is_int(s->cols[0].kind, PQ_DIGITS, "INT64 widens to DIGITS");
	pq_schema_widen(s, &f);
	is_int(s->cols[0].kind, PQ_DIGITS, "DIGITS does not narrow to DECIMAL");
	f.need = PQ_DOUBLE;
	pq_schema_widen(s, &f);
	is_int(s->cols[0].kind, PQ_DIGITS, "DIGITS does not become DOUBLE");
	f.need = PQ_TEXT;
	pq_schema_widen(s, &f);
	is_int(s->cols[0].kind, PQ_TEXT, "DIGITS widens to TEXT");
	f.need = PQ_JSON;
	pq_schema_widen(s, &f);
	is_int(s->cols[0].kind, PQ_TEXT, "TEXT stays TEXT");
	f.column = 1;
	f.need = PQ_JSON;
	pq_schema_widen(s, &f);
	ok(s->cols[1].kind == PQ_JSON && s->cols[1].want == JSON_OBJECT, "the extra column never widens");
	f.column = 2;
	pq_schema_widen(s, &f);
	ok(s->n == 2, "a column beyond the schema is ignored");
	pq_schema_free(s);

	s = one_column("{\"type\":\"object\"}", PQ_JSON);
	f.column = 0;
	f.need = PQ_JSON;
	f.want = JSON_ARRAY;
	pq_schema_widen(s, &f);
	ok(s->cols[0].kind == PQ_JSON && s->cols[0].want == JSON_OBJECT, "objects only does not become arrays only");
	f.want = JSON_NONE;
	pq_schema_widen(s, &f);
	ok(s->cols[0].kind == PQ_JSON && s->cols[0].want == JSON_NONE, "objects only widens to any value");
	f.need = PQ_TEXT;
	pq_schema_widen(s, &f);
	ok(s->cols[0].kind == PQ_JSON && s->cols[0].want == JSON_NONE, "JSON of any value stays");
	pq_schema_free(s);
}

/* ---- reading a file back: the Thrift compact protocol and the pages ---- */

struct rd {
	const unsigned char *p, *end;
	int bad;
};

static uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;
	int shift = 0;

	while (r->p < r->end && shift < 64) {
		unsigned char b = *r->p++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		shift += 7;
	}
	r->bad = 1;
	return 0;
}

static int64_t rd_zigzag(struct rd *r)
{
	uint64_t u = rd_varint(r);

	return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/*
 * Skip a value of a compact type; at field path "path" (".4.1.3.4": field
 * ids from the outer struct, list elements not counted), i32 values at
 * want_path go into vals.
 */
static void rd_struct(struct rd *r, char *path, const char *want_path, int64_t *vals, size_t *nvals);

static void rd_value(struct rd *r, int type, char *path, const char *want_path, int64_t *vals, size_t *nvals)
{
	uint64_t n, i;

	switch (type) {
	case PQ_T_TRUE:
	case PQ_T_FALSE:
		break;
	case PQ_T_BYTE:
		r->p++;
		break;
	case PQ_T_I16:
	case PQ_T_I32:
	case PQ_T_I64: {
		int64_t v = rd_zigzag(r);

		if (type == PQ_T_I32 && strcmp(path, want_path) == 0 && *nvals < 64)
			vals[(*nvals)++] = v;
		break;
	}
	case PQ_T_DOUBLE:
		r->p += 8;
		break;
	case PQ_T_BINARY:
		n = rd_varint(r);
		r->p += n;
		break;
	case PQ_T_LIST:
	case PQ_T_SET: {
		unsigned char h = r->p < r->end ? *r->p++ : 0;
		int et = h & 0x0f;

		n = h >> 4;
		if (n == 15)
			n = rd_varint(r);
		for (i = 0; i < n && !r->bad; i++) {
			if (et == PQ_T_TRUE)
				r->p++;	/* booleans in a list are one byte each */
			else
				rd_value(r, et, path, want_path, vals, nvals);
		}
		break;
	}
	case PQ_T_STRUCT:
		rd_struct(r, path, want_path, vals, nvals);
		break;
	default:
		r->bad = 1;
	}
	if (r->p > r->end)
		r->bad = 1;
}

static void rd_struct(struct rd *r, char *path, const char *want_path, int64_t *vals, size_t *nvals)
{
	size_t plen = strlen(path);
	int last = 0;

	while (!r->bad && r->p < r->end) {
		unsigned char b = *r->p++;
		int id;

		if (b == 0)
			return;
		id = b >> 4 ? last + (b >> 4) : (int)rd_zigzag(r);
		last = id;
		if (plen + 8 < 128)
			snprintf(path + plen, 128 - plen, ".%d", id);
		rd_value(r, b & 0x0f, path, want_path, vals, nvals);
		path[plen] = '\0';
	}
	r->bad = 1;
}

/* The i32 values at want_path in the Thrift struct at p: how many (at most 64). */
static size_t thrift_i32s(const void *p, size_t n, const char *want_path, int64_t *vals, const unsigned char **end)
{
	struct rd r = { p, (const unsigned char *)p + n, 0 };
	char path[128] = "";
	size_t nvals = 0;

	rd_struct(&r, path, want_path, vals, &nvals);
	if (end)
		*end = r.p;
	return r.bad ? 0 : nvals;
}

/*
 * Write recs to a Parquet file with codec c and threads; its bytes into
 * data.  noted: through pq_writer_add_members().
 */
static int write_file_noted(enum compression c, int threads, int noted, const char *const *recs, size_t n,
			    struct sb *data)
{
	static const char schema[] = "{\"properties\":{\"id\":{\"type\":\"integer\"},"
				     "\"name\":{\"type\":[\"null\",\"string\"]},\"x\":{\"type\":\"number\"}}}";
	struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
	struct pq_codec *codec = pq_codec_new(c, 0, threads);
	struct pq_options o = { codec, 1000, 1 << 20, 256 };
	struct pq_writer *pw = pq_writer_open(bucket_writer_open(wb, "s.parquet"), s, &o);
	struct pq_fail f;
	struct sb buf = SB_INIT;
	size_t i;
	int r = pw ? 0 : -1;

	for (i = 0; pw && i < n; i++) {
		struct json_span rec = { recs[i], strlen(recs[i]), JSON_OBJECT };

		if ((noted ? add_noted(pw, recs[i], &f, &buf) : pq_writer_add(pw, &rec, &f)) != 0)
			r = -1;
	}
	if (pw && pq_writer_close(pw, NULL) != 0)
		r = -1;
	sb_reset(data);
	if (r == 0 && bucket_get(wb, "s.parquet", data) != 0)
		r = -1;
	bucket_delete(wb, "s.parquet");
	pq_codec_free(codec);
	pq_schema_free(s);
	sb_free(&buf);
	return r;
}

static int write_file_threads(enum compression c, int threads, const char *const *recs, size_t n,
			      struct sb *data)
{
	return write_file_noted(c, threads, 0, recs, n, data);
}

static int write_file(enum compression c, const char *const *recs, size_t n, struct sb *data)
{
	return write_file_threads(c, 0, recs, n, data);
}

/*
 * The worker thread (pq_codec_new(..., 1)): the same bytes as without it,
 * for every codec, over many pages and row groups; two writers sharing one
 * codec; pq_writer_reached() agrees with pq_writer_bytes(); an abort with
 * pages in flight.
 */
static void test_threads(void)
{
	static const enum compression codecs[] = {
		COMPRESSION_ZSTD, COMPRESSION_SNAPPY, COMPRESSION_GZIP, COMPRESSION_NONE
	};
	static const char schema[] = "{\"properties\":{\"id\":{\"type\":\"integer\"},"
				     "\"name\":{\"type\":[\"null\",\"string\"]},\"x\":{\"type\":\"number\"}}}";
	enum { N = 5000 };
	const char **recs = xcalloc(N, sizeof(*recs));
	char **owned = xcalloc(N, sizeof(*owned));
	struct sb one = SB_INIT, two = SB_INIT, a = SB_INIT, b = SB_INIT;
	size_t i, k;

	for (i = 0; i < N; i++) {
		owned[i] = xasprintf(i % 11 == 0 ? "{\"id\":%zu,\"name\":null,\"x\":%zu.5,\"u\":%zu}" :
				     "{\"id\":%zu,\"name\":\"name %zu\",\"x\":%zu.5}", i, (i * 7919) % 301, i);
		recs[i] = owned[i];
	}
	{
		/* Whitespace between members, escapes in keys and values: the walk of a record. */
		static const char *const tight[] = {
			"{\"id\":1,\"name\":\"a\\\"b\\\\\",\"x\":1.5,\"u\\u0041\":[1,{\"k\":\"]}\\\"\"}]}",
			"{\"n\\u0061me\":\"\\u00e9t\\u00e9\",\"id\":-7,\"x\":null,\"v\":{}}",
		};
		static const char *const loose[] = {
			"{ \"id\" : 1 ,\n\t\"name\" :\"a\\\"b\\\\\" , \"x\":1.5\r\n, \"u\\u0041\":[1,{\"k\":\"]}\\\"\"}] }",
			"{\"n\\u0061me\" : \"\\u00e9t\\u00e9\" , \"id\" : -7 , \"x\" : null , \"v\" : {} }",
		};

		ok(write_file(COMPRESSION_NONE, tight, 2, &one) == 0 && write_file(COMPRESSION_NONE, loose, 2, &two) == 0 &&
		   one.len > 0 && one.len == two.len && memcmp(one.buf, two.buf, one.len) == 0,
		   "whitespace around members and escaped keys: the same file as compact records");
		ok(memmem(one.buf, one.len, "a\"b\\", 4) != NULL && memmem(one.buf, one.len, "\xc3\xa9t\xc3\xa9", 5) != NULL,
		   "... strings decoded, an escaped key matched to its column");
		ok(write_file_noted(COMPRESSION_NONE, 0, 1, tight, 2, &two) == 0 && one.len == two.len &&
		   memcmp(one.buf, two.buf, one.len) == 0 &&
		   write_file_noted(COMPRESSION_NONE, 0, 1, loose, 2, &two) == 0 && one.len == two.len &&
		   memcmp(one.buf, two.buf, one.len) == 0,
		   "... and the same file from the members the scanner noted (pq_writer_add_members())");
	}
	ok(write_file_threads(COMPRESSION_ZSTD, 1, recs, N, &one) == 0 &&
	   write_file_noted(COMPRESSION_ZSTD, 1, 1, recs, N, &two) == 0 && one.len > 0 && one.len == two.len &&
	   memcmp(one.buf, two.buf, one.len) == 0,
	   "%d records, some with a member the schema lacks: pq_writer_add_members() writes the same file", N);
	for (k = 0; k < sizeof(codecs) / sizeof(codecs[0]); k++) {
		ok(write_file_threads(codecs[k], 0, recs, N, &one) == 0 &&
		   write_file_threads(codecs[k], 1, recs, N, &two) == 0,
		   "codec %d: %d records written without and with the worker", (int)codecs[k], N);
		ok(one.len > 0 && one.len == two.len && memcmp(one.buf, two.buf, one.len) == 0,
		   "... byte for byte the same file (%zu bytes)", one.len);
	}
	{
		/* Two writers on one codec, records interleaved, as a sink does. */
		struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
		struct pq_codec *c0 = pq_codec_new(COMPRESSION_ZSTD, 0, 0), *c1 = pq_codec_new(COMPRESSION_ZSTD, 0, 1);
		struct pq_options o0 = { c0, 700, 1 << 20, 128 }, o1 = { c1, 700, 1 << 20, 128 };
		struct pq_writer *w0a = pq_writer_open(bucket_writer_open(wb, "t0a.parquet"), s, &o0);
		struct pq_writer *w0b = pq_writer_open(bucket_writer_open(wb, "t0b.parquet"), s, &o0);
		struct pq_writer *w1a = pq_writer_open(bucket_writer_open(wb, "t1a.parquet"), s, &o1);
		struct pq_writer *w1b = pq_writer_open(bucket_writer_open(wb, "t1b.parquet"), s, &o1);
		struct pq_writer *w1c = pq_writer_open(bucket_writer_open(wb, "t1c.parquet"), s, &o1);
		struct pq_fail f;
		int bad = 0, agree = 1;

		for (i = 0; i < N; i++) {
			struct json_span rec = { recs[i], strlen(recs[i]), JSON_OBJECT };
			int x = i % 3 == 0;

			bad |= pq_writer_add(x ? w0a : w0b, &rec, &f) != 0;
			bad |= pq_writer_add(x ? w1a : w1b, &rec, &f) != 0;
			bad |= pq_writer_add(w1c, &rec, &f) != 0;
			if (i % 97 == 0) {
				uint64_t limit = pq_writer_bytes(w0a) + (i % 5) * 40;

				agree &= pq_writer_reached(w1a, limit) == (pq_writer_bytes(w0a) >= limit);
				agree &= pq_writer_bytes(w1a) == pq_writer_bytes(w0a);
			}
		}
		ok(!bad, "two writers on one codec, with and without the worker: every record added");
		ok(agree, "... pq_writer_reached() and pq_writer_bytes() agree with the writer without a worker");
		/* An abort while the worker may still hold the third writer's pages. */
		pq_writer_abort(w1c);
		ok(pq_writer_close(w0a, NULL) == 0 && pq_writer_close(w0b, NULL) == 0 &&
		   pq_writer_close(w1a, NULL) == 0 && pq_writer_close(w1b, NULL) == 0, "... they close");
		ok(bucket_get(wb, "t0a.parquet", &a) == 0 && bucket_get(wb, "t1a.parquet", &b) == 0 &&
		   a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0, "... the first file the same bytes");
		ok(bucket_get(wb, "t0b.parquet", &a) == 0 && bucket_get(wb, "t1b.parquet", &b) == 0 &&
		   a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0, "... the second file the same bytes");
		ok(bucket_get(wb, "t1c.parquet", &a) != 0, "... the aborted one is not there");
		bucket_delete(wb, "t0a.parquet");
		bucket_delete(wb, "t0b.parquet");
		bucket_delete(wb, "t1a.parquet");
		bucket_delete(wb, "t1b.parquet");
		pq_codec_free(c0);
		pq_codec_free(c1);
		pq_schema_free(s);
	}
	for (i = 0; i < N; i++)
		free(owned[i]);
	free(owned);
	free(recs);
	sb_free(&one);
	sb_free(&two);
	sb_free(&a);
	sb_free(&b);
}

/* A record into a batch, with its members noted as the sink notes them (through buf). */
static void batch_add_noted(struct pq_batch *bt, const char *rec, size_t i, struct sb *buf)
{
	static const char *const keys[] = { "record" };
	struct json_member room[64];
	struct json_members mem = { 0, room, 64, 0 };
	struct json_span v, top;
	size_t pos;
	const char *msg;

	sb_reset(buf);
	sb_adds(buf, "{\"record\": ");
	sb_adds(buf, rec);
	sb_adds(buf, " }");
	if (json_validate_inner(buf->buf, buf->len, keys, 1, &v, &mem, &top, &pos, &msg) != 0 || mem.n > 64) {
		pq_batch_add(bt, &(struct json_span){ rec, strlen(rec), JSON_OBJECT }, NULL, 0, i, i + 1, i);
		return;
	}
	/* Every third record walked instead, as a record wider than the sink's room is. */
	pq_batch_add(bt, &v, i % 3 ? room : NULL, mem.n, i + 1, i + 1, i);
	/* The input's buffer is reused at once: the batch holds its own copy. */
	memset(buf->buf, ' ', buf->len);
}

/*
 * The feed (lib/parquet/parquet_feed.c): records added by its worker, in batches,
 * to several writers: the same files as pq_writer_add() in this thread,
 * with and without the codec's worker, and with pages large enough that
 * some of a row group's last pages ride with it (parquet.c,
 * pq_flush_row_group()) and others go first; a finish batch; a value that does
 * not fit stops its writer's batches at that record, and only those; a
 * file that reaches its limit stops them after that record.
 */
static void test_feed(void)
{
	static const char schema[] = "{\"properties\":{\"id\":{\"type\":\"integer\"},"
				     "\"name\":{\"type\":[\"null\",\"string\"]},\"x\":{\"type\":\"number\"}}}";
	enum { N = 5000, PER = 97 };
	char **recs = xcalloc(N, sizeof(*recs));
	struct sb one = SB_INIT, two = SB_INIT, buf = SB_INIT;
	size_t i, t;

	for (i = 0; i < N; i++)
		recs[i] = xasprintf(i % 11 == 0 ? "{\"id\":%zu,\"name\":null,\"x\":%zu.5,\"u\":%zu}" :
				    "{\"id\":%zu,\"name\":\"n\\u00e9 %zu\",\"x\":%zu.5}", i, (i * 7919) % 301, i);
	for (t = 0; t < 3; t++) {
		/*
		 * Two writers, records interleaved; in this thread, then through
		 * the feed.  Pages of 16 KiB (t 2): a 700-row group's last pages
		 * of name and of the extra column ride with it (within 4 KiB
		 * in all), those of id and x (5,600 bytes each) go first,
		 * except in the last, shorter, row groups.
		 */
		struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
		struct pq_codec *c0 = pq_codec_new(COMPRESSION_ZSTD, 0, 0), *c1 = pq_codec_new(COMPRESSION_ZSTD, 0, t > 0);
		size_t page = t == 2 ? 16384 : 128;
		struct pq_options o0 = { c0, 700, 1 << 20, page }, o1 = { c1, 700, 1 << 20, page };
		struct pq_writer *w0[2], *w1[2];
		struct pq_batch *open[2] = { NULL, NULL }, *b;
		struct pq_feed *feed = pq_feed_new(c1);
		struct pq_fail f;
		int bad = 0, stopped = 0, k;

		w0[0] = pq_writer_open(bucket_writer_open(wb, "f0a.parquet"), s, &o0);
		w0[1] = pq_writer_open(bucket_writer_open(wb, "f0b.parquet"), s, &o0);
		w1[0] = pq_writer_open(bucket_writer_open(wb, "f1a.parquet"), s, &o1);
		w1[1] = pq_writer_open(bucket_writer_open(wb, "f1b.parquet"), s, &o1);
		pq_feed_attach(feed, w1[0]);
		pq_feed_attach(feed, w1[1]);
		for (i = 0; i < N; i++) {
			struct json_span rec = { recs[i], strlen(recs[i]), JSON_OBJECT };

			k = i % 3 == 0;
			bad |= pq_writer_add(w0[k], &rec, &f) != 0;
			if (open[k] == NULL) {
				open[k] = xcalloc(1, sizeof(*open[k]));
				open[k]->pw = w1[k];
				open[k]->owner = (size_t)k;
				open[k]->limit = UINT64_MAX;
			}
			batch_add_noted(open[k], recs[i], i, &buf);
			if (open[k]->n == PER || i + 1 == N) {
				pq_feed_submit(feed, open[k]);
				open[k] = NULL;
			}
			/* Take back the batches done; the bytes ready written meanwhile. */
			while ((b = pq_feed_first(feed)) && (pq_feed_held(feed) > 8 || pq_feed_is_done(feed, b))) {
				pq_feed_wait(feed, b);
				stopped |= b->stop != PQ_STOP_NONE || b->next != b->n;
				pq_feed_take(feed, b);
				pq_batch_free(b);
				bad |= pq_feed_write_ready(feed, w1[i % 2]) != 0;
			}
		}
		for (k = 0; k < 2; k++) {
			if (open[k])
				pq_feed_submit(feed, open[k]);
			b = xcalloc(1, sizeof(*b));
			b->pw = w1[k];
			b->finish = 1;
			pq_feed_submit(feed, b);
		}
		while ((b = pq_feed_first(feed)) != NULL) {
			pq_feed_wait(feed, b);
			stopped |= b->stop != PQ_STOP_NONE;
			if (b->finish)
				stopped |= pq_writer_rows(b->pw) != (b->pw == w1[1] ? (N + 2) / 3 : N - (N + 2) / 3);
			pq_feed_take(feed, b);
			pq_batch_free(b);
		}
		ok(!bad && !stopped, "feed%s: %d records to two writers in batches of %d, every one added",
		   t == 2 ? ", the codec's worker, last pages riding with their row group" : t ? " and the codec's worker" : "",
		   N, PER);
		ok(pq_writer_close(w0[0], NULL) == 0 && pq_writer_close(w0[1], NULL) == 0 &&
		   pq_writer_close(w1[0], NULL) == 0 && pq_writer_close(w1[1], NULL) == 0, "... they close");
		ok(bucket_get(wb, "f0a.parquet", &one) == 0 && bucket_get(wb, "f1a.parquet", &two) == 0 &&
		   one.len > 0 && one.len == two.len && memcmp(one.buf, two.buf, one.len) == 0 &&
		   bucket_get(wb, "f0b.parquet", &one) == 0 && bucket_get(wb, "f1b.parquet", &two) == 0 &&
		   one.len > 0 && one.len == two.len && memcmp(one.buf, two.buf, one.len) == 0,
		   "... byte for byte the files written in this thread");
		bucket_delete(wb, "f0a.parquet");
		bucket_delete(wb, "f0b.parquet");
		bucket_delete(wb, "f1a.parquet");
		bucket_delete(wb, "f1b.parquet");
		pq_feed_free(feed);
		pq_codec_free(c0);
		pq_codec_free(c1);
		pq_schema_free(s);
	}
	{
		/* Stops: a value that does not fit, a limit reached; the other writer goes on. */
		struct pq_schema *s = pq_schema_new(schema, strlen(schema), NULL);
		struct pq_codec *c = pq_codec_new(COMPRESSION_ZSTD, 0, 1);
		struct pq_options o = { c, 100, 1 << 20, 256 };
		struct pq_writer *wa = pq_writer_open(bucket_writer_open(wb, "ga.parquet"), s, &o);
		struct pq_writer *wb2 = pq_writer_open(bucket_writer_open(wb, "gb.parquet"), s, &o);
		struct pq_feed *feed = pq_feed_new(c);
		struct pq_batch *ba = xcalloc(1, sizeof(*ba)), *ba2 = xcalloc(1, sizeof(*ba2));
		struct pq_batch *bb = xcalloc(1, sizeof(*bb)), *bc = xcalloc(1, sizeof(*bc));
		static const char bad_rec[] = "{\"id\":7,\"name\":\"n\",\"x\":\"abc\"}";
		struct pq_fail f;
		uint64_t after, rows_b = 0;
		int k;

		pq_feed_attach(feed, wa);
		pq_feed_attach(feed, wb2);
		ba->pw = ba2->pw = wa;
		bb->pw = bc->pw = wb2;
		ba->limit = ba2->limit = bb->limit = UINT64_MAX;
		for (i = 0; i < 10; i++)
			batch_add_noted(ba, i == 6 ? bad_rec : recs[i], i, &buf);
		for (i = 10; i < 20; i++) {
			batch_add_noted(ba2, recs[i], i, &buf);
			batch_add_noted(bb, recs[i], i, &buf);
		}
		/* The limit: a file of more than the few bytes it has is reached at its first row group. */
		bc->limit = 100;
		for (i = 0; i < 300; i++)
			batch_add_noted(bc, recs[i], i, &buf);
		pq_feed_submit(feed, ba);
		pq_feed_submit(feed, ba2);
		pq_feed_submit(feed, bb);
		pq_feed_submit(feed, bc);
		pq_feed_wait(feed, bc);
		ok(ba->stop == PQ_STOP_WIDEN && ba->next == 6 && ba->f.column == 2 && ba->f.need == PQ_TEXT &&
		   ba->f.value.len == 5 && memcmp(ba->f.value.p, "\"abc\"", 5) == 0 && pq_writer_rows(wa) == 6,
		   "a value that does not fit: its batch stops there, at its value, six rows added");
		ok(ba2->stop == PQ_STOP_PASSED && ba2->next == 0 && pq_writer_rows(wa) == 6,
		   "... the writer's next batch is passed over");
		ok(bb->stop == PQ_STOP_NONE && bb->next == 10,
		   "... another writer's batch is not");
		{
			/* Where a writer in this thread reaches the limit, with the same rows before. */
			struct pq_codec *c0 = pq_codec_new(COMPRESSION_ZSTD, 0, 0);
			struct pq_options o0 = o;
			struct pq_writer *wr;
			size_t want = 0;

			o0.codec = c0;
			wr = pq_writer_open(bucket_writer_open(wb, "gr.parquet"), s, &o0);
			for (i = 10; i < 20; i++)
				pq_writer_add(wr, &(struct json_span){ recs[i], strlen(recs[i]), JSON_OBJECT }, &f);
			for (i = 0; i < 300 && want == 0; i++) {
				pq_writer_add(wr, &(struct json_span){ recs[i], strlen(recs[i]), JSON_OBJECT }, &f);
				if (pq_writer_reached(wr, 100))
					want = i + 1;
			}
			pq_writer_abort(wr);
			pq_codec_free(c0);
			ok(want > 0 && bc->stop == PQ_STOP_REACHED && bc->next == want &&
			   pq_writer_rows(wb2) == 10 + want && pq_writer_bytes(wb2) >= 100,
			   "the limit: the batch stops after the record that reaches it, as in this thread (%zu)", want);
			rows_b = 10 + want;
		}
		after = pq_writer_rows(wa);
		pq_feed_take(feed, ba);
		pq_feed_take(feed, ba2);
		pq_feed_take(feed, bb);
		pq_feed_take(feed, bc);
		pq_feed_resume(feed, wa);
		ba2->start = 3;
		pq_feed_submit(feed, ba2);
		pq_feed_wait(feed, ba2);
		ok(ba2->stop == PQ_STOP_NONE && ba2->next == 10 && pq_writer_rows(wa) == after + 7,
		   "resumed, handed over again from its fourth record: those seven added");
		pq_feed_take(feed, ba2);
		pq_batch_free(ba);
		pq_batch_free(ba2);
		pq_batch_free(bb);
		pq_batch_free(bc);
		/* A batch still held when the feed goes: the feed frees it. */
		pq_feed_resume(feed, wb2);
		bb = xcalloc(1, sizeof(*bb));
		bb->pw = wb2;
		bb->limit = UINT64_MAX;
		batch_add_noted(bb, recs[0], 0, &buf);
		pq_feed_submit(feed, bb);
		pq_feed_free(feed);
		after = pq_writer_rows(wb2);
		k = pq_writer_close(wa, NULL) == 0;
		k &= pq_writer_close(wb2, NULL) == 0;
		ok(after == rows_b + 1 && k && bucket_get(wb, "gb.parquet", &one) == 0 && one.len > 100,
		   "... a batch held at the end is added first; the files close, their rows written");
		bucket_delete(wb, "ga.parquet");
		bucket_delete(wb, "gb.parquet");
		pq_codec_free(c);
		pq_schema_free(s);
	}
	for (i = 0; i < N; i++)
		free(recs[i]);
	free(recs);
	sb_free(&one);
	sb_free(&two);
	sb_free(&buf);
}

/*
 * The pages of a file, uncompressed (snappy when snappy is set) into out,
 * each as its uncompressed size (4 bytes) and body; -1 when a page does not
 * read back.
 */
static int file_pages(const struct sb *data, int snappy, struct sb *out)
{
	const unsigned char *p = (const unsigned char *)data->buf + 4, *end;
	uint32_t flen;

	memcpy(&flen, data->buf + data->len - 8, 4);
	end = (const unsigned char *)data->buf + data->len - 8 - flen;
	while (p < end) {
		int64_t v[64];
		const unsigned char *body;
		size_t raw, comp, got;

		/* PageHeader: 1 type, 2 uncompressed_page_size, 3 compressed_page_size. */
		if (thrift_i32s(p, (size_t)(end - p), ".2", v, &body) != 1)
			return -1;
		raw = (size_t)v[0];
		if (thrift_i32s(p, (size_t)(end - p), ".3", v, NULL) != 1)
			return -1;
		comp = (size_t)v[0];
		if (comp > (size_t)(end - body))
			return -1;
		sb_addf(out, "%08zx", raw);
		if (!snappy) {
			if (comp != raw)
				return -1;
			sb_add(out, body, raw);
		} else {
			sb_grow(out, raw);
			got = raw;
			if (snappy_uncompressed_length((const char *)body, comp, &got) != SNAPPY_OK || got != raw ||
			    snappy_uncompress((const char *)body, comp, out->buf + out->len, &got) != SNAPPY_OK ||
			    got != raw)
				return -1;
			out->len += raw;
			out->buf[out->len] = '\0';
		}
		p = body + comp;
	}
	return 0;
}

static void test_snappy(void)
{
	static const char *const recs[] = {
		"{\"id\":1,\"name\":\"alpha\",\"x\":1.5}", "{\"id\":2,\"name\":\"alpha\",\"x\":2.5}",
		"{\"id\":3,\"name\":null,\"x\":0.1}", "{\"id\":4,\"name\":\"beta\",\"x\":-0,\"y\":[1]}",
		"{\"id\":5,\"name\":\"alpha\"}", "{\"id\":6,\"name\":\"alpha\",\"x\":6}",
	};
	const char *many[200];
	char *owned[200];
	struct sb plain = SB_INIT, sn = SB_INIT, pp = SB_INIT, sp = SB_INIT;
	int64_t codecs[64];
	size_t i, n, flen32;
	uint32_t flen;
	int all;

	for (i = 0; i < 200; i++) {
		owned[i] = xasprintf("{\"id\":%zu,\"name\":\"name %zu\",\"x\":%zu.25}", i, i % 7, i * 3);
		many[i] = owned[i];
	}
	for (n = 0; n < 2; n++) {
		const char *const *r = n ? many : recs;
		size_t nr = n ? 200 : sizeof(recs) / sizeof(recs[0]);

		ok(write_file(COMPRESSION_NONE, r, nr, &plain) == 0 && write_file(COMPRESSION_SNAPPY, r, nr, &sn) == 0,
		   "%zu records: uncompressed and snappy files written", nr);
		sb_reset(&pp);
		sb_reset(&sp);
		ok(file_pages(&plain, 0, &pp) == 0 && file_pages(&sn, 1, &sp) == 0 && pp.len > 0,
		   "... every page reads back (snappy: one raw block each)");
		ok(pp.len == sp.len && memcmp(pp.buf, sp.buf, pp.len) == 0,
		   "... the snappy pages hold the bytes of the uncompressed ones");
		memcpy(&flen, sn.buf + sn.len - 8, 4);
		flen32 = flen;
		/* FileMetaData.row_groups[].columns[].meta_data.codec */
		i = thrift_i32s(sn.buf + sn.len - 8 - flen32, flen32, ".4.1.3.4", codecs, NULL);
		all = i == 4;
		while (i-- > 0)
			all = all && codecs[i] == 1;
		ok(all, "... every column chunk says codec SNAPPY (1)");
		memcpy(&flen, plain.buf + plain.len - 8, 4);
		flen32 = flen;
		i = thrift_i32s(plain.buf + plain.len - 8 - flen32, flen32, ".4.1.3.4", codecs, NULL);
		ok(i == 4 && codecs[0] == 0, "... and the uncompressed file UNCOMPRESSED (0)");
	}
	ok(sn.len < plain.len, "snappy makes 200 records smaller");
	for (i = 0; i < 200; i++)
		free(owned[i]);
	sb_free(&plain);
	sb_free(&sn);
	sb_free(&pp);
	sb_free(&sp);
}

static void test_infer(void)
{
	static const char rec[] =
		"{\"i\":-12,\"n\":1.5,\"e\":1e3,\"s\":\"x\",\"ts\":\"2024-01-01T00:00:00Z\",\"t\":true,"
		"\"f\":false,\"o\":{\"a\":1},\"a\":[1],\"z\":null,\"caf\\u00e9\":12345678901234567890123}";
	struct json_span span = { rec, strlen(rec), JSON_OBJECT };
	char *schema = pq_schema_infer(&span);
	struct pq_schema *s;
	struct sb b = SB_INIT;

	is_str(schema, "{\"type\":\"object\",\"properties\":{"
	       "\"i\":{\"type\":[\"null\",\"integer\"]},\"n\":{\"type\":[\"null\",\"number\"]},"
	       "\"e\":{\"type\":[\"null\",\"number\"]},\"s\":{\"type\":[\"null\",\"string\"]},"
	       "\"ts\":{\"type\":[\"null\",\"string\"]},\"t\":{\"type\":[\"null\",\"boolean\"]},"
	       "\"f\":{\"type\":[\"null\",\"boolean\"]},\"o\":{\"type\":[\"null\",\"object\"]},"
	       "\"a\":{\"type\":[\"null\",\"array\"]},\"z\":{},"
	       "\"caf\\u00e9\":{\"type\":[\"null\",\"integer\"]}}}",
	       "a JSON Schema from a record's members, in order, names as written");
	s = pq_schema_new(schema, strlen(schema), NULL);
	pq_schema_types_json(s, &b);
	is_str(b.buf, "{\"i\":\"INT64\",\"n\":\"DOUBLE\",\"e\":\"DOUBLE\",\"s\":\"STRING\",\"ts\":\"STRING\","
	       "\"t\":\"BOOLEAN\",\"f\":\"BOOLEAN\",\"o\":\"JSON\",\"a\":\"JSON\",\"z\":\"JSON\","
	       "\"caf\xc3\xa9\":\"INT64\",\"_extra\":\"JSON\"}", "... which pq_schema_new() maps to columns");
	ok(s->cols[7].want == JSON_OBJECT && s->cols[8].want == JSON_ARRAY && s->cols[9].want == JSON_NONE,
	   "... objects, arrays, anything");
	pq_schema_free(s);
	free(schema);

	span.p = "{}";
	span.len = 2;
	schema = pq_schema_infer(&span);
	is_str(schema, "{\"type\":\"object\",\"properties\":{}}", "an empty record: no properties");
	free(schema);
	span.p = "[1]";
	span.len = 3;
	span.type = JSON_ARRAY;
	schema = pq_schema_infer(&span);
	is_str(schema, "{\"type\":\"object\",\"properties\":{}}", "not an object: no properties");
	free(schema);
	sb_free(&b);
}

int main(int argc, char **argv)
{
	(void)argc;
	err_init(argv[0]);
	test_varint();
	test_zigzag();
	test_thrift_fields();
	test_thrift_lists();
	test_thrift_page_header();
	test_rle();
	test_timestamps();
	test_dates();
	test_schema();
	test_schema_decimal();
	test_file();
	{
		char dir[] = "/tmp/test_parquet.XXXXXX";

		if (mkdtemp(dir) == NULL || (wb = bucket_open(dir)) == NULL) {
			ok(0, "a bucket for the writers");
			return tap_done();
		}
		test_widening();
		test_values_back();
		test_dict_probe();
		test_widening_ends();
		test_widen_never_narrows();
		ok(noted_differ == 0, "every value of the widening tests: pq_writer_add_members() "
		   "says what pq_writer_add() says");
		test_snappy();
		test_threads();
		test_feed();
		bucket_free(wb);
		rmdir(dir);
	}
	test_infer();
	return tap_done();
}
