/*
 * Unit tests for lib/pqread: its decoders on known bytes, a file built here
 * (REQUIRED columns, a DELTA_BYTE_ARRAY page and an RLE boolean page v2,
 * which DuckDB does not write), and damaged copies of it, read without a
 * crash (run under ASan by make check-unit).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parquet/parquet_enc.h"
#include "pqread.h"
#include "sb.h"
#include "taptest.h"

static void test_rle(void)
{
	/* An RLE run of 5 threes, then 8 bit-packed values 0..7 (width 3). */
	static const unsigned char p[] = { 5 << 1, 3, (1 << 1) | 1, 0x88, 0xC6, 0xFA };
	uint32_t out[13];
	size_t i;
	int bad = 0;

	is_int(pq_read_rle_decode(p, sizeof(p), 3, out, 13), 0, "rle: decodes");
	for (i = 0; i < 5; i++)
		bad |= out[i] != 3;
	for (i = 0; i < 8; i++)
		bad |= out[5 + i] != i;
	ok(!bad, "rle: the run and the packed values");
	is_int(pq_read_rle_decode(p, sizeof(p) - 1, 3, out, 13), -1, "rle: cut short");
	is_int(pq_read_rle_decode(p, 1, 3, out, 2), -1, "rle: run without its value");
}

static int64_t delta(const int64_t *v, size_t i)
{
	return (int64_t)((uint64_t)v[i] - (uint64_t)v[i - 1]);
}

/* DELTA_BINARY_PACKED of v[0..n): one block of 128, 4 miniblocks, one width. */
static void delta_encode(struct sb *out, const int64_t *v, size_t n)
{
	int64_t minv = 0;
	uint64_t maxd = 0;
	size_t i, m;
	int bw = 0;

	pq_varint(out, 128);
	pq_varint(out, 4);
	pq_varint(out, n);
	pq_varint(out, pq_zigzag(n ? v[0] : 0));
	if (n < 2)
		return;
	/* Deltas in wrapping arithmetic, as the encoding defines them. */
	for (i = 1; i < n; i++)
		if (i == 1 || delta(v, i) < minv)
			minv = delta(v, i);
	for (i = 1; i < n; i++)
		if ((uint64_t)delta(v, i) - (uint64_t)minv > maxd)
			maxd = (uint64_t)delta(v, i) - (uint64_t)minv;
	while (bw < 64 && (maxd >> bw) != 0)
		bw++;
	pq_varint(out, pq_zigzag(minv));
	for (m = 0; m < 4; m++)
		sb_addc(out, (char)bw);
	for (m = 0; m * 32 < n - 1; m++) {
		uint64_t acc = 0;
		int have = 0;

		for (i = 0; i < 32; i++) {
			size_t k = m * 32 + i + 1;
			uint64_t d = k < n ? (uint64_t)delta(v, k) - (uint64_t)minv : 0;
			int b;

			for (b = 0; b < bw; b++) {
				acc |= ((d >> b) & 1) << have;
				if (++have == 8) {
					sb_addc(out, (char)acc);
					acc = 0;
					have = 0;
				}
			}
		}
	}
}

static void test_delta(void)
{
	static const int64_t v[] = { 7, 5, 3, 1, 2, 3, 4, 5, 6, INT64_MAX, INT64_MIN, 0 };
	struct sb b = SB_INIT;
	int64_t out[12];
	size_t n = 0, used = 0;
	int r;

	delta_encode(&b, v, 12);
	r = pq_read_delta_decode((const unsigned char *)b.buf, b.len, out, 12, &n, &used);
	is_int(r, 0, "delta: decodes");
	is_int(n, 12, "delta: its count");
	is_int(used, b.len, "delta: every byte used");
	ok(memcmp(out, v, sizeof(v)) == 0, "delta: the values, wrapping past int64 too");
	is_int(pq_read_delta_decode((const unsigned char *)b.buf, 5, out, 12, &n, &used), -1,
	       "delta: cut short");
	sb_free(&b);
}

static void test_text(void)
{
	static const unsigned char m1[] = { 0xff };
	static const unsigned char big[16] = { 0x4b, 0x3b, 0x4c, 0xa8, 0x5a, 0x86, 0xc4, 0x7a,
					       0x09, 0x8a, 0x22, 0x3f, 0xff, 0xff, 0xff, 0xff };
	static const unsigned char neg[] = { 0xfe, 0x0c };	/* -500 */
	static const unsigned char zero[] = { 0, 0 };
	struct sb s = SB_INIT;

	pq_read_decimal_text(m1, 1, 0, &s);
	is_str(s.buf, "-1", "decimal: -1");
	sb_reset(&s);
	pq_read_decimal_text(big, 16, 0, &s);
	is_str(s.buf, "99999999999999999999999999999999999999", "decimal: 38 nines");
	sb_reset(&s);
	pq_read_decimal_text(neg, 2, 4, &s);
	is_str(s.buf, "-0.0500", "decimal: scale beyond the digits");
	sb_reset(&s);
	pq_read_decimal_text(neg, 2, 1, &s);
	is_str(s.buf, "-50.0", "decimal: scale 1");
	sb_reset(&s);
	pq_read_decimal_text(zero, 2, 2, &s);
	is_str(s.buf, "0.00", "decimal: zero keeps its scale");
	sb_reset(&s);
	pq_read_double_text(0.1, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(1e21, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(-0.0, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(2, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(1.0 / 3, &s);
	is_str(s.buf, "0.1 1e+21 -0.0 2.0 0.3333333333333333", "double: shortest text");
	sb_reset(&s);
	pq_read_double_text(1234.57, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(-0.05, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(1e-5, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(9007199254740991.0, &s);
	sb_addc(&s, ' ');
	pq_read_double_text(0.30000000000000004, &s);
	is_str(s.buf, "1234.57 -0.05 0.00001 9007199254740991.0 0.30000000000000004",
	       "double: few decimals without printf, the rest with it");
	sb_reset(&s);
	pq_read_date_text(0, &s);
	sb_addc(&s, ' ');
	pq_read_date_text(-719162, &s);
	sb_addc(&s, ' ');
	pq_read_date_text(2932896, &s);
	sb_addc(&s, ' ');
	pq_read_date_text(2932897, &s);
	sb_addc(&s, ' ');
	pq_read_date_text(-719163, &s);
	is_str(s.buf, "1970-01-01 0001-01-01 9999-12-31 +10000-01-01 0000-12-31",
	       "date: proleptic Gregorian, expanded years past 9999");
	sb_free(&s);
}

/* A page header (v1 or v2) for body bytes. */
static void page(struct sb *f, const struct sb *body, int v2, int nvalues, int nnulls, int enc,
		 int def_len)
{
	struct sb h = SB_INIT;
	struct pq_thrift t;

	pq_thrift_init(&t, &h);
	pq_thrift_i32(&t, 1, v2 ? 3 : 0);
	pq_thrift_i32(&t, 2, (int32_t)body->len);
	pq_thrift_i32(&t, 3, (int32_t)body->len);
	if (!v2) {
		pq_thrift_struct(&t, 5);
		pq_thrift_i32(&t, 1, nvalues);
		pq_thrift_i32(&t, 2, enc);
		pq_thrift_i32(&t, 3, 3);
		pq_thrift_i32(&t, 4, 3);
		pq_thrift_end(&t);
	} else {
		pq_thrift_struct(&t, 8);
		pq_thrift_i32(&t, 1, nvalues);
		pq_thrift_i32(&t, 2, nnulls);
		pq_thrift_i32(&t, 3, nvalues);
		pq_thrift_i32(&t, 4, enc);
		pq_thrift_i32(&t, 5, def_len);
		pq_thrift_i32(&t, 6, 0);
		pq_thrift_bool(&t, 7, 0);
		pq_thrift_end(&t);
	}
	pq_thrift_end(&t);
	sb_add(f, h.buf, h.len);
	sb_add(f, body->buf, body->len);
	sb_free(&h);
}

struct chunkpos {
	int type;
	const char *name;
	int enc;
	size_t start, size;
};

static void column_chunk(struct pq_thrift *t, const struct chunkpos *c)
{
	pq_thrift_elem_struct(t);
	pq_thrift_i64(t, 2, (int64_t)c->start);
	pq_thrift_struct(t, 3);
	pq_thrift_i32(t, 1, c->type);
	pq_thrift_list(t, 2, PQ_T_I32, 1);
	pq_thrift_elem_i32(t, c->enc);
	pq_thrift_list(t, 3, PQ_T_BINARY, 1);
	pq_thrift_elem_binary(t, c->name, strlen(c->name));
	pq_thrift_i32(t, 4, 0);
	pq_thrift_i64(t, 5, 3);
	pq_thrift_i64(t, 6, (int64_t)c->size);
	pq_thrift_i64(t, 7, (int64_t)c->size);
	pq_thrift_i64(t, 9, (int64_t)c->start);
	pq_thrift_end(t);
	pq_thrift_end(t);
}

/*
 * Three rows: id INT64 REQUIRED PLAIN (v1); name BYTE_ARRAY UTF8 REQUIRED
 * DELTA_BYTE_ARRAY (v2); flag BOOLEAN OPTIONAL RLE (v2).
 */
static void build_file(struct sb *f)
{
	static const int64_t ids[] = { 1, -2, INT64_MAX };
	static const int64_t pre[] = { 0, 2, 0 }, suf[] = { 5, 5, 6 };
	struct sb body = SB_INIT, meta = SB_INIT;
	struct chunkpos c[3] = {
		{ 2, "id", 0, 0, 0 }, { 6, "name", 7, 0, 0 }, { 0, "flag", 3, 0, 0 }
	};
	struct pq_thrift t;
	size_t i;
	uint32_t n;

	sb_adds(f, "PAR1");
	c[0].start = f->len;
	for (i = 0; i < 3; i++) {
		uint64_t u = (uint64_t)ids[i];
		int b;

		for (b = 0; b < 8; b++)
			sb_addc(&body, (char)(u >> (8 * b)));
	}
	page(f, &body, 0, 3, 0, 0, 0);
	c[0].size = f->len - c[0].start;

	/* "apple", "ap" + "RICOT", "banana" */
	sb_reset(&body);
	delta_encode(&body, pre, 3);
	delta_encode(&body, suf, 3);
	sb_adds(&body, "appleRICOTbanana");
	c[1].start = f->len;
	page(f, &body, 1, 3, 0, 7, 0);
	c[1].size = f->len - c[1].start;

	/* def levels 1,0,1: one bit-packed group; values true,false: RLE with its length */
	sb_reset(&body);
	sb_addc(&body, 3);
	sb_addc(&body, 5);
	sb_add(&body, "\x02\x00\x00\x00\x03\x01", 6);
	c[2].start = f->len;
	page(f, &body, 1, 3, 1, 3, 2);
	c[2].size = f->len - c[2].start;

	pq_thrift_init(&t, &meta);
	pq_thrift_i32(&t, 1, 2);
	pq_thrift_list(&t, 2, PQ_T_STRUCT, 4);
	pq_thrift_elem_struct(&t);
	pq_thrift_binary(&t, 4, "schema", 6);
	pq_thrift_i32(&t, 5, 3);
	pq_thrift_end(&t);
	pq_thrift_elem_struct(&t);
	pq_thrift_i32(&t, 1, 2);
	pq_thrift_i32(&t, 3, 0);
	pq_thrift_binary(&t, 4, "id", 2);
	pq_thrift_end(&t);
	pq_thrift_elem_struct(&t);
	pq_thrift_i32(&t, 1, 6);
	pq_thrift_i32(&t, 3, 0);
	pq_thrift_binary(&t, 4, "name", 4);
	pq_thrift_i32(&t, 6, 0);
	pq_thrift_end(&t);
	pq_thrift_elem_struct(&t);
	pq_thrift_i32(&t, 1, 0);
	pq_thrift_i32(&t, 3, 1);
	pq_thrift_binary(&t, 4, "flag", 4);
	pq_thrift_end(&t);
	pq_thrift_i64(&t, 3, 3);
	pq_thrift_list(&t, 4, PQ_T_STRUCT, 1);
	pq_thrift_elem_struct(&t);
	pq_thrift_list(&t, 1, PQ_T_STRUCT, 3);
	for (i = 0; i < 3; i++)
		column_chunk(&t, &c[i]);
	pq_thrift_i64(&t, 2, (int64_t)(f->len - 4));
	pq_thrift_i64(&t, 3, 3);
	pq_thrift_end(&t);
	pq_thrift_end(&t);
	sb_add(f, meta.buf, meta.len);
	n = (uint32_t)meta.len;
	sb_add(f, &(unsigned char[4]){ (unsigned char)n, (unsigned char)(n >> 8),
				       (unsigned char)(n >> 16), (unsigned char)(n >> 24) }, 4);
	sb_adds(f, "PAR1");
	sb_free(&body);
	sb_free(&meta);
}

/* Every row of f as JSON lines; -1 on the first error. */
static int read_all(const void *data, size_t len, struct sb *out)
{
	struct pq_read_file *f = pq_read_open(data, len, "t.parquet");
	size_t i;
	int r;

	if (f == NULL)
		return -1;
	while ((r = pq_read_next_row(f)) == 1) {
		for (i = 0; i < pq_read_ncolumns(f); i++) {
			if (i)
				sb_addc(out, ',');
			if (pq_read_value_json(f, i, out) < 0) {
				r = -1;
				break;
			}
		}
		if (r < 0)
			break;
		sb_addc(out, '\n');
	}
	pq_read_free(f);
	return r;
}

static void test_file(void)
{
	struct sb f = SB_INIT, out = SB_INIT, schema = SB_INIT;
	struct pq_read_file *pf;
	size_t i, cut, crashes = 0;
	unsigned seed = 1;
	int saved, null;

	build_file(&f);
	pf = pq_read_open(f.buf, f.len, "t.parquet");
	ok(pf != NULL, "file: opens");
	if (pf == NULL)
		return;
	is_int(pq_read_rows(pf), 3, "file: 3 rows");
	is_int(pq_read_ncolumns(pf), 3, "file: 3 columns");
	for (i = 0; i < pq_read_ncolumns(pf); i++) {
		pq_read_schema_json(pq_read_column(pf, i), &schema);
		sb_addc(&schema, ' ');
	}
	is_str(schema.buf, "{\"type\":\"integer\"} {\"type\":\"string\"} "
	       "{\"type\":[\"null\",\"boolean\"]} ", "file: REQUIRED columns are not nullable");
	pq_read_free(pf);
	is_int(read_all(f.buf, f.len, &out), 0, "file: reads");
	is_str(out.buf, "1,\"apple\",true\n-2,\"apRICOT\",null\n9223372036854775807,\"banana\",false\n",
	       "file: PLAIN v1, DELTA_BYTE_ARRAY v2, RLE booleans v2");

	/* Damaged copies: every cut, and random bytes flipped; no crash, ever. */
	fflush(stderr);
	saved = dup(2);
	if ((null = open("/dev/null", O_WRONLY)) >= 0) {
		dup2(null, 2);
		close(null);
	}
	for (cut = 0; cut < f.len; cut++) {
		sb_reset(&out);
		if (read_all(f.buf, cut, &out) == 0 && cut < f.len)
			crashes++;
	}
	is_int(crashes, 0, "file: every cut file is refused");
	for (i = 0; i < 3000; i++) {
		struct sb d = SB_INIT;

		sb_add(&d, f.buf, f.len);
		seed = seed * 1103515245 + 12345;
		d.buf[(seed >> 8) % d.len] ^= (char)(1 + (seed >> 20) % 255);
		seed = seed * 1103515245 + 12345;
		d.buf[(seed >> 8) % d.len] ^= (char)(1 + (seed >> 20) % 255);
		sb_reset(&out);
		(void)read_all(d.buf, d.len, &out);
		sb_free(&d);
	}
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ok(1, "file: 3000 damaged copies read without a crash");
	sb_free(&f);
	sb_free(&out);
	sb_free(&schema);
}

int main(void)
{
	test_rle();
	test_delta();
	test_text();
	test_file();
	return tap_done();
}
