/*
 * parquet: a small streaming Parquet writer for Singer records.
 *
 * A file is "PAR1", row groups, the footer (FileMetaData in the Thrift
 * compact protocol), its length and "PAR1".  Each row group holds one column
 * chunk per column; a chunk is data pages v1, PLAIN encoded (STRING columns:
 * a dictionary page and RLE_DICTIONARY pages, PLAIN again once a row group's
 * dictionary passes 1 MiB), every column OPTIONAL (definition levels in the
 * RLE/bit-packed hybrid, bit width 1), each page compressed alone with ZSTD,
 * SNAPPY (one raw block, no framing), GZIP or not at all.  Memory is one
 * row group per writer: pages are compressed as they fill, and a row group is
 * written out when it reaches row_group_rows rows or row_group_size bytes of
 * uncompressed values.
 *
 * Columns come from a SCHEMA message's JSON Schema (pq_schema_new()), or
 * from a stream's first record when it has no SCHEMA (pq_schema_infer()),
 * plus a last column holding, as a JSON object, the members a record has
 * that the schema does not declare ("_extra").  Records are read from their
 * raw bytes (lib/json.h): integers are parsed exactly, objects and arrays
 * keep their bytes.
 *
 * A value never fails and is never dropped: one its column cannot hold
 * exactly makes pq_writer_add() name the narrowest type that can
 * (PQ_WIDEN); the caller goes on in a new file with the column widened
 * (pq_schema_widen()).  The widening lattice, upwards:
 *
 *	INT64 -> DECIMAL(38,0) -> DIGITS -> TEXT     integers beyond the range
 *	INT64 -> DOUBLE -> TEXT                      numbers that are not integers
 *	BOOL, STRING, TIMESTAMP, DATE -> TEXT
 *	NUMERIC (DECIMAL(p,s)) -> TEXT                  a number with more places, or digits
 *	NUMTEXT -> TEXT                              a value that is not a number
 *	JSON (objects only, arrays only) -> JSON (any value)
 *
 * TEXT and JSON of any value hold every value; null fits every column.
 */
#ifndef PIPE_PARQUET_H
#define PIPE_PARQUET_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "compression.h"
#include "json.h"
#include "sb.h"

/* ---- columns ---- */

/* A column's type. */
enum pq_kind {
	PQ_INT64,	/* JSON Schema integer */
	PQ_DECIMAL,	/* integer beyond int64: DECIMAL(38,0), 16-byte FIXED_LEN_BYTE_ARRAY */
	PQ_DIGITS,	/* integer beyond 38 digits: its digits, a STRING */
	PQ_DOUBLE,	/* number */
	PQ_BOOL,	/* boolean */
	PQ_STRING,	/* string */
	PQ_TIMESTAMP,	/* string, format date-time: INT64 TIMESTAMP(MICROS, UTC) */
	PQ_DATE,	/* string, format date: INT32 DATE */
	PQ_JSON,	/* object, array, several types or none: the value's JSON text */
	PQ_TEXT,	/* chosen to be a string: a string's contents, any other value's JSON text */
	PQ_NUMERIC,	/* number, multipleOf 10^-scale: DECIMAL(precision,scale), 16-byte FIXED_LEN_BYTE_ARRAY */
	PQ_NUMTEXT	/* number, multipleOf 10^-scale beyond DECIMAL(38): each value's plain decimal text, a STRING */
};

struct pq_column {
	char *name;		/* decoded UTF-8 (may hold NUL bytes) */
	size_t name_len;
	char *qname;		/* name as a JSON string literal, as records usually spell it */
	size_t qname_len;
	enum pq_kind kind;
	enum json_type want;	/* PQ_JSON: JSON_OBJECT, JSON_ARRAY, or JSON_NONE for any value */
	int extra;		/* the column of undeclared members */
	int precision, scale;	/* PQ_NUMERIC */
};

struct pq_schema {
	struct pq_column *cols;	/* the declared properties in schema order, then the extra column */
	size_t n;
	size_t *slots;		/* name hash: index + 1, 0 empty */
	size_t nslots;
};

/*
 * Columns from a JSON Schema (the text of a SCHEMA message's "schema"): one
 * per member of "properties", in order (a repeated name counts once), then
 * the extra column, named "_extra" (with more leading '_' while a property
 * has that name).  Types: see enum pq_kind; "null" among a property's types
 * (or anyOf/oneOf alternatives) only makes it nullable, and every column is
 * written OPTIONAL.  Properties whose name matches one of the fnmatch(3)
 * patterns of text (NULL-terminated, or NULL) are PQ_TEXT.  Never fails on
 * a JSON object.
 */
struct pq_schema *pq_schema_new(const char *schema, size_t len, char *const *text);
void pq_schema_free(struct pq_schema *s);

/* The column's Parquet type for people: "INT64", "TIMESTAMP(MICROS,UTC)", ... */
const char *pq_kind_name(enum pq_kind k);

/* {"column":"PARQUET TYPE",...} in column order, the extra column last. */
void pq_schema_types_json(const struct pq_schema *s, struct sb *out);

/* ---- the writer ---- */

/*
 * The page compressor, shared by every writer of a sink (all used from one
 * thread).  c: the codec (COMPRESSION_NONE: UNCOMPRESSED); level 0: the
 * default.  threads 0: pages are compressed in the calling thread; more:
 * by one worker thread (one, whatever the number: the pages of a column
 * must stay in order), fed through a queue of at most four pages, while
 * the caller goes on with the next records.  The files are byte for byte
 * those of threads 0.  NULL on error (reported).  Free the codec after the
 * writers that use it.
 */
struct pq_codec *pq_codec_new(enum compression c, int level, int threads);
void pq_codec_free(struct pq_codec *c);

struct pq_options {
	struct pq_codec *codec;
	uint64_t row_group_rows;	/* rows to a row group (at least 1) */
	uint64_t row_group_size;	/* uncompressed value bytes to a row group */
	size_t page_size;		/* uncompressed value bytes to a page; 0: 1 MiB */
};

/*
 * Why a record did not fit (pq_writer_add() returned PQ_WIDEN), and what
 * its column must become to hold it:
 *
 *	INT64 column:  a number that is not an integer (1.5, 1e3, 1.0): DOUBLE
 *	  when its double reads back as the same decimal value (below), else
 *	  TEXT; an integer beyond int64: DECIMAL, beyond 38 digits: DIGITS
 *	DECIMAL, DIGITS column:  a number that is not an integer: TEXT; an
 *	  integer beyond 38 digits (DECIMAL): DIGITS
 *	INT64, DECIMAL, DIGITS column:  a string, boolean, object or array: TEXT
 *	DOUBLE column:  a number whose double does not read back as the same
 *	  decimal value (12345678901234567891, 0.1234567890123456789), or
 *	  beyond a double's range (1e400, 1e-400, 401 digits): TEXT; a value
 *	  that is not a number: TEXT
 *	BOOL, STRING column:  a value of another type: TEXT
 *	TIMESTAMP, DATE column:  a value that is not a string, a string that is
 *	  not an RFC 3339 date-time with an offset (YYYY-MM-DD), one finer
 *	  than a microsecond, or one at a leap second (second 60): TEXT
 *	JSON column of objects (arrays) only:  another value: JSON, any value
 *
 * "Reads back as the same decimal value": the number's decimal value
 * (sign, significant digits, exponent: 1.50, 15e-1 and 1.5 are one value)
 * is that of the double's shortest form, the first of %.15g, %.16g, %.17g
 * that strtod() reads as the same double.  -0 is exact: a double keeps the
 * sign of zero.  A number of at most 15 significant digits (DBL_DIG) on
 * Clinger's fast path is exact without the check.
 */
struct pq_fail {
	size_t column;		/* index into the schema's columns */
	enum pq_kind need;	/* the narrowest kind that holds the value exactly */
	enum json_type want;	/* need PQ_JSON: JSON_NONE (any value); else JSON_NONE */
	/*
	 * 1: the value breaks the type its column declares (a lying schema:
	 * "abc" or 1.5 in an integer column, 5 in a string column, a
	 * date-time with no offset); 0: it has that type but needs a wider
	 * physical one (an integer beyond int64, a number a double does not
	 * hold exactly, a date-time finer than a microsecond).
	 */
	int mismatch;
	const char *why;	/* static text for people: "is not an integer", ... */
	struct json_span value;	/* the value, inside the record */
};

#define PQ_WIDEN 1

struct pq_writer;

/*
 * Start a Parquet file on w (the writer owns w from now on, and aborts it on
 * failure).  s must outlive the writer and not change while the writer holds
 * rows (pq_schema_widen() is fine while pq_writer_rows() is 0).  NULL on
 * error.
 */
struct pq_writer *pq_writer_open(struct bucket_writer *w, const struct pq_schema *s,
				 const struct pq_options *o);

/*
 * Add one record (a validated JSON object span).  Members are matched to
 * columns by name; a null or absent member is a null; undeclared members,
 * and repeats of a declared one, go into the extra column as a JSON object
 * of their original bytes.  Returns 0; PQ_WIDEN when a value does not fit
 * its column (f filled, see struct pq_fail; nothing added): the caller
 * widens the schema (pq_schema_widen()) and adds the record again, to a new
 * file (or to this one while it holds no rows); -2 on a write error
 * (reported).  It never returns -1: no value fails a record.
 */
int pq_writer_add(struct pq_writer *pw, const struct json_span *rec, struct pq_fail *f);

/*
 * pq_writer_add() of the record whose first byte is at rec and whose n
 * members the scanner noted as it validated it (json_validate_inner(),
 * singer_parse_members()), in order: the same result, without walking the
 * record again.
 */
/*
 * A record given cell by cell, not as JSON text: pq_writer_row_begin()
 * (0, or -2 after a write error), then at most one value for each column i
 * of the schema (a column given none is null): an INT64, TIMESTAMP
 * (microseconds), DATE (days) or BOOL column's integer, a DOUBLE column's
 * double, a STRING or TEXT column's bytes (UTF-8, kept by pointer until
 * the row ends), or any column's JSON value (pq_writer_cell_json(): 0, or
 * PQ_WIDEN as pq_writer_add() says it, f filled; the row is then to be
 * dropped, begun again); then pq_writer_row_end() adds the row (0, or -2).
 */
int pq_writer_row_begin(struct pq_writer *pw);
void pq_writer_cell_int(struct pq_writer *pw, size_t i, int64_t v);
void pq_writer_cell_double(struct pq_writer *pw, size_t i, double v);
void pq_writer_cell_bytes(struct pq_writer *pw, size_t i, const void *p, size_t n);
int pq_writer_cell_json(struct pq_writer *pw, size_t i, const struct json_span *v, int esc, struct pq_fail *f);
int pq_writer_row_end(struct pq_writer *pw);
const struct pq_schema *pq_writer_schema(const struct pq_writer *pw);

int pq_writer_add_members(struct pq_writer *pw, const char *rec, const struct json_member *m,
			  size_t n, struct pq_fail *f);

/* Rows added so far. */
uint64_t pq_writer_rows(const struct pq_writer *pw);
/*
 * Bytes of the file so far: written, plus the compressed pages of the open
 * row group (with a worker, this waits for the pages it holds).
 */
uint64_t pq_writer_bytes(const struct pq_writer *pw);
/*
 * pq_writer_bytes(pw) >= limit, waiting for the worker only when its pages
 * could make the difference: what to ask after each record.
 */
int pq_writer_reached(struct pq_writer *pw, uint64_t limit);
/*
 * End the open row group now (written out as a full one would be), so that
 * its buffers hold nothing until more rows come.  0 or -1.
 */
int pq_writer_end_row_group(struct pq_writer *pw);

/*
 * Write the last row group and the footer, close the file; frees pw.  The
 * file's size goes into *size when size is not NULL.  0 or -1.
 */
int pq_writer_close(struct pq_writer *pw, uint64_t *size);
/* Drop the file; frees pw. */
void pq_writer_abort(struct pq_writer *pw);

/*
 * ---- the feed: records added to their writers by a worker thread ----
 *
 * The caller copies records into batches (pq_batch_add()) and hands them
 * over (pq_feed_submit()); one worker thread adds their records, batch by
 * batch in the order they were handed over, to each batch's writer, as
 * pq_writer_add() or pq_writer_add_members() would, compressing the pages
 * with its own compressor.  The caller never touches a writer while a
 * batch of it is held by the feed, except through pq_feed_write_ready().
 *
 * A batch with finish set and no records writes out its writer's open row
 * group (as pq_writer_close() would), so that closing the file only
 * writes its footer.
 *
 * A batch ends early (its stop) at the first record that does not fit
 * (PQ_STOP_WIDEN: nothing of it added, f says why), that fails
 * (PQ_STOP_ERROR), or after the first record that brings the file to the
 * batch's limit bytes (PQ_STOP_REACHED, as pq_writer_reached() says); the
 * writer is then stopped: its batches after that one are passed over
 * (PQ_STOP_PASSED, nothing added) until pq_feed_resume().  So every
 * record is added at most once, in order, and the caller, holding the
 * records still, decides what happens to the rest (a new file, a widened
 * column) and hands them over again from b->next.
 *
 * A fed writer does not write: the bytes of its row groups wait until the
 * caller's thread writes them (pq_feed_write_ready(), and pq_writer_close()
 * writes what is left), so that the bucket is used from one thread only.
 */
struct pq_feed;

/* A batch's record: its bytes, and its members when they were noted. */
struct pq_rec {
	size_t off, len;	/* its bytes in the batch */
	size_t m, nm;		/* its members in the batch's; nm PQ_WALK: none noted */
	unsigned long long lineno, recno, seq;	/* the caller's, for its messages */
};

#define PQ_WALK SIZE_MAX

enum pq_stop { PQ_STOP_NONE, PQ_STOP_REACHED, PQ_STOP_WIDEN, PQ_STOP_ERROR, PQ_STOP_PASSED };

struct pq_batch {
	/* the caller's */
	struct pq_writer *pw;	/* where its records go */
	uint64_t limit;		/* stop after a record that brings the file to limit bytes */
	size_t owner;
	size_t start;		/* the first record to add */
	int finish;		/* no records: the writer's open row group is written out */
	struct sb bytes;
	struct json_member *m;
	size_t nm, mcap;
	struct pq_rec *r;
	size_t n, rcap;
	/* the worker's, once the batch is done (pq_feed_wait()) */
	enum pq_stop stop;
	size_t next;		/* the first record not added */
	struct pq_fail f;	/* PQ_STOP_WIDEN */
	/* the feed's (done: set under its mutex, read without it by pq_feed_is_done()) */
	atomic_int done;
	struct pq_batch *prev, *after;
};

/*
 * A feed and its worker thread, with a compressor like k's (the writers it
 * drives must use k).  NULL on error (reported).
 */
struct pq_feed *pq_feed_new(const struct pq_codec *k);
/* Waits for the worker, frees the batches it still holds, and the feed. */
void pq_feed_free(struct pq_feed *f);

/* A writer's rows come from the feed from now on (see above). */
void pq_feed_attach(struct pq_feed *f, struct pq_writer *pw);
/* Write what the worker kept of pw's file.  0, or -1 (reported by the bucket). */
int pq_feed_write_ready(struct pq_feed *f, struct pq_writer *pw);

/*
 * A record into a batch: its bytes (a JSON object span) copied, and its
 * nm members noted in them (m, as the scanner gave them), or m NULL
 * (nm ignored): the worker walks it.
 */
void pq_batch_add(struct pq_batch *b, const struct json_span *rec, const struct json_member *m,
		  size_t nm, unsigned long long lineno, unsigned long long recno, unsigned long long seq);
/* Empty it, for another use. */
void pq_batch_clear(struct pq_batch *b);
/*
 * An empty batch's room made at least bytes of records, nm members and n
 * records (each at least 1), and at most twice that: a batch sized once,
 * rather than grown from small with a copy at each doubling.
 */
void pq_batch_fit(struct pq_batch *b, size_t bytes, size_t nm, size_t n);
void pq_batch_free(struct pq_batch *b);

/* Hand b over: its records from b->start into b->pw. */
void pq_feed_submit(struct pq_feed *f, struct pq_batch *b);
/* Batches handed over and not taken back. */
size_t pq_feed_held(const struct pq_feed *f);
/* The oldest held batch, and the one held after b, in the order handed over; NULL: none. */
struct pq_batch *pq_feed_first(const struct pq_feed *f);
struct pq_batch *pq_feed_after(const struct pq_batch *b);
/* 1 when the worker is done with b. */
int pq_feed_is_done(struct pq_feed *f, const struct pq_batch *b);
/* Wait until the worker is done with b (and with every batch held before it). */
void pq_feed_wait(struct pq_feed *f, const struct pq_batch *b);
/* Take back b, which the worker is done with. */
void pq_feed_take(struct pq_feed *f, struct pq_batch *b);
/* pw's batches are added again (after a stop). */
void pq_feed_resume(struct pq_feed *f, struct pq_writer *pw);

/*
 * After PQ_WIDEN: column f->column of s becomes kind f->need, want f->want.
 * It only ever widens: nothing changes when that is not above the column's
 * type in the lattice (see the top of this file), or for the extra column.
 * PQ_WIDEN always names a wider type, so adding the record again progresses.
 */
void pq_schema_widen(struct pq_schema *s, const struct pq_fail *f);

/*
 * A JSON Schema for a stream that sends RECORDs with no SCHEMA, from one
 * record's members in order, their names copied as their JSON string bytes:
 * {"type":"object","properties":{"id":{"type":["null","integer"]},...}}.
 * An integer-syntax number is "integer", another number "number", a string
 * "string" (no format inferred), true/false "boolean", an object "object",
 * an array "array", each with "null"; null is {} (any value: a JSON column).
 * A record that is not an object gives no properties.  Newly allocated
 * text, for pq_schema_new().
 */
char *pq_schema_infer(const struct json_span *rec);

/*
 * Exposed for tests: microseconds since the epoch of an RFC 3339 date-time,
 * 0 or -1.  The offset is Z, +HH:MM or +HH:MM:SS (PostgreSQL prints a
 * local mean time offset with seconds: 1900-01-01T00:19:32+00:19:32); at
 * most microseconds (more digits must be zeros).
 */
int pq_parse_timestamp(const char *p, size_t n, int64_t *us);
/* Days since the epoch of YYYY-MM-DD, 0 or -1. */
int pq_parse_date(const char *p, size_t n, int32_t *days);

#endif
