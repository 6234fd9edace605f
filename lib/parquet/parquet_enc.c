/*
 * parquet_enc: the byte-level encoders of the Parquet writer: the Thrift
 * compact protocol (thrift's doc/specs/thrift-compact-protocol.md) and the
 * RLE/bit-packed hybrid (parquet-format's Encodings.md), the latter after
 * Arrow's RleEncoder.
 */
#include "parquet_enc.h"

#include <string.h>

void pq_varint(struct sb *out, uint64_t v)
{
	unsigned char b[10];
	size_t n = 0;

	while (v >= 0x80) {
		b[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	b[n++] = (unsigned char)v;
	sb_add(out, b, n);
}

uint64_t pq_zigzag(int64_t v)
{
	/* Shift as unsigned: left shifts of negative values are undefined. */
	return ((uint64_t)v << 1) ^ (uint64_t)(v < 0 ? -1 : 0);
}

void pq_thrift_init(struct pq_thrift *t, struct sb *out)
{
	memset(t, 0, sizeof(*t));
	t->out = out;
}

void pq_thrift_field(struct pq_thrift *t, int16_t id, int type)
{
	int16_t *last = &t->last[t->depth];

	if (id > *last && id - *last <= 15) {
		sb_addc(t->out, (char)(((id - *last) << 4) | type));
	} else {
		sb_addc(t->out, (char)type);
		pq_varint(t->out, pq_zigzag(id));
	}
	*last = id;
}

void pq_thrift_i32(struct pq_thrift *t, int16_t id, int32_t v)
{
	pq_thrift_field(t, id, PQ_T_I32);
	pq_varint(t->out, pq_zigzag(v));
}

void pq_thrift_i64(struct pq_thrift *t, int16_t id, int64_t v)
{
	pq_thrift_field(t, id, PQ_T_I64);
	pq_varint(t->out, pq_zigzag(v));
}

void pq_thrift_bool(struct pq_thrift *t, int16_t id, int v)
{
	pq_thrift_field(t, id, v ? PQ_T_TRUE : PQ_T_FALSE);
}

void pq_thrift_binary(struct pq_thrift *t, int16_t id, const void *p, size_t len)
{
	pq_thrift_field(t, id, PQ_T_BINARY);
	pq_thrift_elem_binary(t, p, len);
}

static void push(struct pq_thrift *t)
{
	/* Nesting is fixed by parquet.thrift's shape: never deeper than a few. */
	if (t->depth + 1 < PQ_THRIFT_DEPTH)
		t->depth++;
	t->last[t->depth] = 0;
}

void pq_thrift_struct(struct pq_thrift *t, int16_t id)
{
	pq_thrift_field(t, id, PQ_T_STRUCT);
	push(t);
}

void pq_thrift_list(struct pq_thrift *t, int16_t id, int elem_type, size_t n)
{
	pq_thrift_field(t, id, PQ_T_LIST);
	if (n < 15) {
		sb_addc(t->out, (char)((n << 4) | (size_t)elem_type));
	} else {
		sb_addc(t->out, (char)(0xf0 | elem_type));
		pq_varint(t->out, n);
	}
}

void pq_thrift_elem_i32(struct pq_thrift *t, int32_t v)
{
	pq_varint(t->out, pq_zigzag(v));
}

void pq_thrift_elem_binary(struct pq_thrift *t, const void *p, size_t len)
{
	pq_varint(t->out, len);
	sb_add(t->out, p, len);
}

void pq_thrift_elem_struct(struct pq_thrift *t)
{
	push(t);
}

void pq_thrift_end(struct pq_thrift *t)
{
	sb_addc(t->out, PQ_T_STOP);
	if (t->depth > 0)
		t->depth--;
}

/* ---- RLE / bit-packed hybrid ---- */

void pq_rle_init(struct pq_rle *e, struct sb *out, int bit_width)
{
	memset(e, 0, sizeof(*e));
	e->out = out;
	e->bit_width = bit_width;
	e->header = SIZE_MAX;
}

/* Append the buffered values, bit-packed LSB first, to the open literal run. */
static void pack_buffered(struct pq_rle *e)
{
	unsigned char bytes[32];
	uint64_t acc = 0;
	int bits = 0, i;
	size_t n = 0;

	for (i = 0; i < e->nbuf; i++) {
		acc |= (uint64_t)e->buf[i] << bits;
		bits += e->bit_width;
		while (bits >= 8) {
			bytes[n++] = (unsigned char)acc;
			acc >>= 8;
			bits -= 8;
		}
	}
	if (bits > 0)
		bytes[n++] = (unsigned char)acc;
	sb_add(e->out, bytes, n);
	e->nbuf = 0;
}

/* Write the open literal run's values; with close, its header too. */
static void flush_literal(struct pq_rle *e, int close)
{
	if (e->header == SIZE_MAX) {
		e->header = e->out->len;
		sb_addc(e->out, 0);
	}
	pack_buffered(e);
	if (close) {
		size_t groups = (e->literal + 7) / 8;

		e->out->buf[e->header] = (char)((groups << 1) | 1);
		e->header = SIZE_MAX;
		e->literal = 0;
	}
}

static void flush_repeat(struct pq_rle *e)
{
	int i;

	pq_varint(e->out, (uint64_t)e->repeat << 1);
	for (i = 0; i < (e->bit_width + 7) / 8; i++)
		sb_addc(e->out, (char)(e->cur >> (8 * i)));
	e->repeat = 0;
}

/* Eight values are buffered: they join a literal run, or a repeat began. */
static void flush_buffered(struct pq_rle *e)
{
	if (e->repeat >= 8) {
		/* They are all part of the repeated run, written when it ends. */
		e->nbuf = 0;
		if (e->literal != 0)
			flush_literal(e, 1);
		return;
	}
	e->literal += (size_t)e->nbuf;
	/* 63 groups at most: the header stays one byte. */
	flush_literal(e, (e->literal + 7) / 8 + 1 >= 64);
	e->repeat = 0;
}

void pq_rle_put(struct pq_rle *e, uint32_t v)
{
	if (v == e->cur && (e->repeat > 0 || e->nbuf > 0)) {
		if (++e->repeat > 8)
			return;
	} else {
		if (e->repeat >= 8)
			flush_repeat(e);
		e->repeat = 1;
		e->cur = v;
	}
	e->buf[e->nbuf++] = v;
	if (e->nbuf == 8)
		flush_buffered(e);
}

void pq_rle_finish(struct pq_rle *e)
{
	if (e->literal == 0 && e->repeat == 0 && e->nbuf == 0)
		return;
	if (e->repeat > 0 && e->literal == 0 &&
	    (e->nbuf == 0 || (size_t)e->nbuf == e->repeat)) {
		flush_repeat(e);
	} else {
		while (e->nbuf > 0 && e->nbuf < 8)
			e->buf[e->nbuf++] = 0;
		e->literal += (size_t)e->nbuf;
		flush_literal(e, 1);
		e->repeat = 0;
	}
	e->nbuf = 0;
}
