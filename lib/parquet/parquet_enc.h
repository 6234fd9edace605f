/*
 * parquet_enc: the byte-level encoders of the Parquet writer (parquet_enc.c):
 * varints, the Thrift compact protocol's writer (type ids in format.h) and
 * the RLE/bit-packed hybrid.  The writer's files use them through
 * parquet_impl.h; the unit tests build their bytes and files with them.
 */
#ifndef PIPE_PARQUET_ENC_H
#define PIPE_PARQUET_ENC_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "sb.h"

/* Unsigned LEB128 varint of v, appended to out. */
void pq_varint(struct sb *out, uint64_t v);

/* Zigzag mapping of a signed integer: 0,-1,1,-2,... -> 0,1,2,3,... */
uint64_t pq_zigzag(int64_t v);

#define PQ_THRIFT_DEPTH 16

/*
 * A Thrift compact protocol writer appending to out.  It is at the top level
 * of a struct after init: write fields with increasing ids, and end every
 * struct (the outer one included) with pq_thrift_end().
 */
struct pq_thrift {
	struct sb *out;
	int16_t last[PQ_THRIFT_DEPTH];	/* the last field id of each open struct */
	int depth;
};

void pq_thrift_init(struct pq_thrift *t, struct sb *out);
/* A field header: 1-byte delta form when the id is 1..15 above the last. */
void pq_thrift_field(struct pq_thrift *t, int16_t id, int type);
void pq_thrift_i32(struct pq_thrift *t, int16_t id, int32_t v);
void pq_thrift_i64(struct pq_thrift *t, int16_t id, int64_t v);
/* Booleans are carried in the field header's type (1 true, 2 false). */
void pq_thrift_bool(struct pq_thrift *t, int16_t id, int v);
void pq_thrift_binary(struct pq_thrift *t, int16_t id, const void *p, size_t len);
/* A struct field: its header, then its own fields; end it with pq_thrift_end(). */
void pq_thrift_struct(struct pq_thrift *t, int16_t id);
/* A list field's header and size; then n elements of elem_type. */
void pq_thrift_list(struct pq_thrift *t, int16_t id, int elem_type, size_t n);
/* List elements. */
void pq_thrift_elem_i32(struct pq_thrift *t, int32_t v);
void pq_thrift_elem_binary(struct pq_thrift *t, const void *p, size_t len);
/* A struct element of a list: its fields follow; end it with pq_thrift_end(). */
void pq_thrift_elem_struct(struct pq_thrift *t);
/* The stop byte of the innermost open struct. */
void pq_thrift_end(struct pq_thrift *t);

/*
 * The RLE/bit-packed hybrid encoder (Parquet's "RLE" encoding), streaming:
 * runs of 8 or more equal values become RLE runs, others bit-packed groups of
 * 8 (at most 63 groups to a run, so that a run's header is one byte).
 * Values must fit in bit_width bits (0..32).
 */
struct pq_rle {
	struct sb *out;
	int bit_width;
	uint32_t buf[8];	/* values not yet flushed */
	int nbuf;
	uint32_t cur;		/* the value of the current run */
	size_t repeat;		/* how often it came in a row */
	size_t literal;		/* values in the open bit-packed run */
	size_t header;		/* offset of that run's header byte in out, or SIZE_MAX */
};

void pq_rle_init(struct pq_rle *e, struct sb *out, int bit_width);
void pq_rle_put(struct pq_rle *e, uint32_t v);
/* Flush what is buffered (a last bit-packed group is padded with zeros). */
void pq_rle_finish(struct pq_rle *e);

#endif
