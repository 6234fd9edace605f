/*
 * pqread: a Parquet reader, for the built-in parquet tap.
 *
 * A file is read from memory (the whole file, as bucket_get() gives it):
 * its footer (FileMetaData, Thrift compact protocol) on open, then its rows
 * one at a time, each column's pages decompressed (UNCOMPRESSED, SNAPPY,
 * GZIP, ZSTD) and decoded as they are reached, so that what a file costs
 * beyond its bytes is one page per column and its dictionary.  Encodings:
 * PLAIN, PLAIN_DICTIONARY and RLE_DICTIONARY, RLE (booleans),
 * DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY,
 * BYTE_STREAM_SPLIT; data pages v1 and v2; REQUIRED and OPTIONAL columns
 * (definition levels in the RLE/bit-packed hybrid).
 *
 * Values come out as JSON text, exactly: integers as their digits (never
 * through a double), DECIMAL as its exact digits, FLOAT and DOUBLE as the
 * shortest text that reads back as the same value (NaN and the infinities,
 * which JSON lacks, as the strings "NaN", "Infinity", "-Infinity"), DATE
 * as "YYYY-MM-DD", TIMESTAMP as RFC 3339 ("...Z" when adjusted to UTC, no
 * offset when local), STRING as a JSON string (invalid UTF-8 is an error,
 * never replaced), JSON as its text (checked), other byte arrays in
 * base64.  Nested columns (groups, LIST, MAP, repeated fields) are not
 * read: a column that is one says so (pq_read_column.unsupported), and so do
 * INTERVAL, FLOAT16 and BSON.
 *
 * Every error is reported (err_msg) naming the file, and the column where
 * there is one; functions then return -1 or NULL.  A file is untrusted:
 * no offset, length or count in it is believed before it is checked.
 */
#ifndef PIPE_PQREAD_H
#define PIPE_PQREAD_H

#include <stddef.h>
#include <stdint.h>

#include "sb.h"

/* How a column's values are printed (from its physical and logical types). */
enum pq_read_kind {
	PQ_READ_INT,		/* INT32, INT64 (signed) */
	PQ_READ_UINT,		/* INT32, INT64 as unsigned (UINT_*, INTEGER(signed=false)) */
	PQ_READ_DECIMAL,	/* INT32, INT64, FIXED_LEN_BYTE_ARRAY, BYTE_ARRAY */
	PQ_READ_FLOAT,
	PQ_READ_DOUBLE,
	PQ_READ_BOOL,
	PQ_READ_STRING,		/* STRING, UTF8, ENUM */
	PQ_READ_JSON,
	PQ_READ_UUID,		/* FIXED_LEN_BYTE_ARRAY(16) */
	PQ_READ_BINARY,		/* BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY: base64 */
	PQ_READ_DATE,		/* INT32 days */
	PQ_READ_TIME,		/* INT32 ms, INT64 us or ns since midnight */
	PQ_READ_TIMESTAMP,	/* INT64 ms, us, ns since the epoch */
	PQ_READ_INT96		/* legacy INT96 timestamp (nanoseconds, Julian day) */
};

struct pq_read_column {
	char *name;		/* the top-level field's name (may hold NUL bytes) */
	size_t name_len;
	int physical;		/* parquet.thrift's Type, -1 for a group */
	int type_length;	/* FIXED_LEN_BYTE_ARRAY */
	enum pq_read_kind kind;
	int scale, precision;	/* DECIMAL */
	int unit;		/* TIME, TIMESTAMP: digits of a second (3, 6, 9) */
	int utc;		/* TIME, TIMESTAMP: isAdjustedToUTC */
	int optional;
	/* Why the column cannot be read ("nested column (LIST)"), or NULL. */
	const char *unsupported;
};

struct pq_read_file;

/*
 * Parse the footer of the Parquet file data[0..len); data must stay as it
 * is until pq_read_free().  name names the file in messages.  NULL on error.
 */
struct pq_read_file *pq_read_open(const void *data, size_t len, const char *name);
void pq_read_free(struct pq_read_file *f);

/* The file's rows, as its footer says. */
uint64_t pq_read_rows(const struct pq_read_file *f);
/* The program that wrote it, as its footer says ("" when it does not). */
const char *pq_read_created_by(const struct pq_read_file *f);
/* Its top-level columns, in schema order. */
size_t pq_read_ncolumns(const struct pq_read_file *f);
const struct pq_read_column *pq_read_column(const struct pq_read_file *f, size_t i);

/*
 * Read column i (1) or leave it out (0): every column is read unless told
 * otherwise.  Before the first pq_read_next_row().  A column left out is never
 * decoded, so an unsupported one may be left out.
 */
void pq_read_select(struct pq_read_file *f, size_t i, int on);

/*
 * Append the JSON Schema of column c (a property's schema) to out:
 * {"type":["null","integer"]}, {"type":"string","format":"date-time"}, ...
 */
void pq_read_schema_json(const struct pq_read_column *c, struct sb *out);

/*
 * 1 when column c is named as lib/parquet names the extra column (one or
 * more '_', then "extra"), else 0.
 */
int pq_read_extra_name(const struct pq_read_column *c);

/*
 * Append the JSON Schema of f's columns to out, {"type":"object",
 * "properties":{...}} (pq_read_schema_json() for each), the extra column
 * (pq_read_extra_name()) and unsupported columns left out; the number of
 * unsupported columns.
 */
size_t pq_read_file_schema(const struct pq_read_file *f, struct sb *out);

/*
 * Move to the next row.  1 with a row, 0 after the last one, -1 on error
 * (a selected column unsupported, a page that is damaged or uses what the
 * reader lacks).
 */
int pq_read_next_row(struct pq_read_file *f);

/*
 * Append the current row's value of the selected column i to out, as JSON
 * text ("null" for a null).  0, or -1 on error (a STRING that is not UTF-8,
 * a JSON value that is not JSON).
 */
int pq_read_value_json(struct pq_read_file *f, size_t i, struct sb *out);

/*
 * The current row's value of the selected column i as stored: 1 for a
 * null; else 0 with *p and *n its PLAIN bytes (an INT32, INT64, FLOAT or
 * DOUBLE little-endian, a BOOLEAN's byte, a BYTE_ARRAY's bytes), valid
 * until the next pq_read_next_row().
 */
int pq_read_value_raw(struct pq_read_file *f, size_t i, const unsigned char **p, size_t *n);

/* ---- exposed for the unit tests ---- */

/*
 * Decode n values of the RLE/bit-packed hybrid of bit_width bits from
 * p[0..len) into out.  0, or -1 when the data ends first or is malformed.
 */
int pq_read_rle_decode(const unsigned char *p, size_t len, int bit_width, uint32_t *out, size_t n);

/*
 * Decode DELTA_BINARY_PACKED from p[0..len): up to max values into out;
 * *n the number of values the header announces, *used the bytes taken.
 * 0 or -1.
 */
int pq_read_delta_decode(const unsigned char *p, size_t len, int64_t *out, size_t max,
			 size_t *n, size_t *used);

/* The decimal digits of the big-endian two's complement p[0..len) with scale. */
void pq_read_decimal_text(const unsigned char *p, size_t len, int scale, struct sb *out);

/* The shortest text of d that strtod() reads back as d (JSON syntax). */
void pq_read_double_text(double d, struct sb *out);

/* Days since 1970-01-01 as "YYYY-MM-DD" (ISO 8601 expanded years beyond 0000..9999). */
void pq_read_date_text(int64_t days, struct sb *out);

#endif
