/*
 * parquet_impl: what the files of the Parquet writer share; only they
 * include this header.  The writer is cut along its seams:
 *
 *	parquet_schema.c	columns from a JSON Schema or a record, their widening
 *	parquet_value.c		a record's values checked, converted and put into
 *				their pages: the per-value path, in one file
 *	parquet.c		the writer: pages, row groups, the footer
 *	parquet_codec.c		pages compressed, in this thread or by the worker
 *	parquet_feed.c		records added by a worker thread, in batches
 *	parquet_enc.[ch]	the Thrift compact and RLE encoders
 *
 * The helpers of the per-value path are static inline here, so that every
 * file's compiler can still inline them.
 */
#ifndef PIPE_PARQUET_IMPL_H
#define PIPE_PARQUET_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "format.h"
#include "parquet_enc.h"
#include "parquet.h"
#include "sb.h"
#include "util.h"

#define DEFAULT_PAGE_SIZE (1024 * 1024)
#define PAGE_ROWS_MAX (1u << 20)
/* A STRING column's dictionary, per row group; past this it falls back to PLAIN. */
#define DICT_MAX_BYTES (1024 * 1024)

static inline size_t schema_find(const struct pq_schema *s, const char *name, size_t len)
{
	size_t j;

	if (s->nslots == 0)
		return SIZE_MAX;
	j = util_hash_bytes(name, len) & (s->nslots - 1);
	while (s->slots[j]) {
		const struct pq_column *c = &s->cols[s->slots[j] - 1];

		if (c->name_len == len && memcmp(c->name, name, len) == 0)
			return s->slots[j] - 1;
		j = (j + 1) & (s->nslots - 1);
	}
	return SIZE_MAX;
}

/* 1 when a JSON number's text is a plain integer (no fraction, no exponent). */
static inline int integer_syntax(const char *p, size_t n)
{
	size_t i;

	/* One pass: numbers are short, three memchr() calls cost more. */
	for (i = 0; i < n; i++) {
		if (p[i] == '.' || p[i] == 'e' || p[i] == 'E')
			return 0;
	}
	return 1;
}

static inline void put_le(struct sb *b, uint64_t v, int n)
{
	unsigned char *q;

	/*
	 * In place, and one store of eight bytes whatever n (there is room
	 * for nine): a call of sb_add() per value cost more than the value.
	 */
	if (b->cap - b->len < 9)
		sb_grow(b, 8);
	q = (unsigned char *)b->buf + b->len;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(q, &v, 8);
#else
	for (int i = 0; i < 8; i++)
		q[i] = (unsigned char)(v >> (8 * i));
#endif
	b->len += (size_t)n;
	b->buf[b->len] = '\0';
}

static inline uint64_t double_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, sizeof(u));
	return u;
}

/* ---- codec ---- */

/* One thread's compressor: its contexts and output buffer. */
struct pq_comp {
	enum compression c;
	int level;
	ZSTD_CCtx *zc;
	z_stream zs;
	int zs_ready;
	struct sb out;
	struct sb header;	/* the worker's page header */
	/*
	 * The page being built, by the thread that flushes it, without the
	 * worker (with it, a page is built in its slot of the ring), so the
	 * buffers are the threads' and the ring's, not one per open file.
	 */
	struct sb page;
};

/* Pages waiting for the worker (each up to page_size bytes, 1 MiB by default). */
#define PQ_QUEUE 4

/*
 * A column's part of a row group written out: what its chunk's metadata
 * says, and its dictionary's entries (PLAIN), taken from the column when
 * the row group ended.
 */
struct pq_rgcol {
	uint64_t values, nulls;
	int has_minmax;
	int64_t imin, imax;
	double dmin, dmax;
	uint32_t ndict;
	struct sb dvals;
	/* its last page, when it rides with the row group (rows 0: none): pq_rg's pages */
	size_t poff, plen;
	uint32_t prows;
	int penc;
};

/*
 * A row group to be written out, its pages queued before it, or, the
 * last ones, in pages (at most a quarter of page_size in all): one job,
 * not a page job per column, when each row group is small (200 streams
 * interleaved).
 */
struct pq_rg {
	uint64_t rows;
	size_t n;
	struct sb pages;
	struct pq_rgcol cols[];
};

/*
 * A job for the worker: a page (its body, uncompressed, and what its
 * header says), or, rg not NULL, the writer's row group to write out once
 * its pages before it are done.  Any thread may compress a queued page
 * while others compress theirs (its body then goes into raw, and raw's
 * buffer becomes the thread's out, so the buffers only change hands); a
 * page is appended to its chunk, and a row group written out, only at the
 * ring's head, so in the order queued.
 */
enum { PQ_JOB_FILLING, PQ_JOB_QUEUED, PQ_JOB_BUSY, PQ_JOB_DONE };

struct pq_job {
	struct pq_writer *pw;
	size_t ci;
	struct sb raw;
	uint32_t rows;
	int encoding;
	struct pq_rg *rg;
	uint64_t bound;		/* the most it adds to the file (pq_page_bound()) */
	/* The codec's mutex: */
	int state;		/* PQ_JOB_* */
	int r;			/* done: 0 or -1 */
	size_t rawlen;		/* a page done: its uncompressed size; raw holds its body */
	/* A row group done: the writer's offset after it, what it added, its chunks' bytes. */
	uint64_t at, added, chunks;
};

/*
 * The codec: the parsing thread's compressor and, with a worker, the
 * worker's, and a ring of PQ_QUEUE pages between them.  The worker, and a
 * thread that would otherwise wait for the ring (pq_reserve(), pq_drain()),
 * compress the queued pages, each with its own compressor; the pages are
 * appended at the ring's head, in order, so every column chunk gets its
 * pages in order and the bytes are those of the single-threaded writer.
 * The mutex guards the ring's counters and states and each writer's
 * inflight, inflight_bound, pending, offset and wfailed; a writer's chunks
 * belong to the ring while it has jobs inflight, and so, while it has a
 * row group inflight, do its rowgroups, nrowgroups and outq.
 */
struct pq_codec {
	struct pq_comp main;
	struct pq_comp wk;
	int threaded;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t job;	/* a job was queued or came to the head, or quit */
	pthread_cond_t done;	/* a page was done: room in the ring */
	struct pq_job ring[PQ_QUEUE];
	size_t head, count;
	struct sb header;	/* the mutex's: the headers of the pages appended */
	int quit;
	/* Threads waiting on done: for room (pq_reserve()), for a writer's jobs (pq_drain()). */
	int room_waiting, drain_waiting;
};

/* ---- the writer ---- */

/* One value of the row being added. */
struct pq_cell {
	uint32_t gen;		/* the writer's gen: set in this row */
	int null;
	int64_t i;		/* INT64, TIMESTAMP, DATE, BOOL */
	double d;
	unsigned char dec[16];
	const char *p;		/* STRING, DIGITS, JSON bytes; NULL: in scratch at off */
	size_t off, len;
};

/* A column's open page and its row group's chunk. */
struct pq_colw {
	struct sb vals;		/* PLAIN values of the page */
	struct sb levels;	/* definition levels of the page */
	struct pq_rle rle;
	uint32_t page_rows;	/* values in the page, nulls included */
	unsigned bits, nbits;	/* BOOLEAN: the byte being packed */
	struct sb chunk;	/* page headers and bodies of the row group */
	uint64_t chunk_raw;	/* the chunk, uncompressed */
	uint64_t values, nulls;	/* in the row group */
	int has_minmax;
	int64_t imin, imax;
	double dmin, dmax;

	/*
	 * STRING columns start each row group dictionary-encoded: the
	 * distinct values (PLAIN) go into one dictionary page, written
	 * before the chunk's data pages, and pages hold their indices.  A
	 * dictionary past DICT_MAX_BYTES ends that, and so do first values
	 * all distinct (DICT_PROBE, lib/parquet/parquet_value.c): the rest of the
	 * row group's pages are PLAIN.
	 */
	int dict;		/* the open page is dictionary-encoded */
	struct sb dvals;	/* the dictionary's entries, PLAIN */
	uint32_t *doff;		/* entry i's bytes: dvals.buf + doff[i], as many as the 4 bytes before say */
	uint32_t ndict, dcap;
	uint32_t *dslots;	/* hash of the entries: index + 1 and a tag (parquet_value.c), 0 empty */
	uint32_t nslots;
	uint32_t *idx;		/* the open page's indices */
	uint32_t nidx, idxcap;
};

struct pq_writer {
	struct bucket_writer *w;
	const struct pq_schema *s;
	struct pq_options o;
	size_t n;		/* columns */
	struct pq_colw *cols;
	struct pq_cell *cells;
	uint32_t gen;
	struct sb scratch;	/* decoded strings of the row */
	struct sb extra;	/* the row's extra object */
	struct sb key;		/* a decoded key */
	struct sb header;	/* a page's header */
	struct sb rowgroups;	/* RowGroup structs so far */
	size_t nrowgroups;
	uint64_t offset;	/* bytes written */
	uint64_t rows, rg_rows, rg_bytes, pending;
	int failed;
	/* With a worker (struct pq_codec's mutex): */
	size_t inflight;	/* pages queued or being compressed */
	uint64_t inflight_bound;	/* the most they can add to pending */
	int wfailed;		/* the worker could not compress a page */
	/*
	 * The adding thread's: at least offset + pending + inflight_bound.
	 * It adds the bound of each job it queues (pq_commit()); the worker
	 * only lowers that sum (a page takes at most its bound), so
	 * pq_writer_reached() need not look under the mutex below it.
	 */
	uint64_t most;
	/*
	 * The compressor of the thread that adds the records: the codec's
	 * own, or a feed's while its worker adds them (parquet_feed.c).
	 */
	struct pq_comp *comp;
	/*
	 * Fed (pq_feed_attach()): out() keeps the bytes in outq (the adding
	 * thread's) instead of writing them, the feed's worker moves them to
	 * ready (the feed's mutex) after each batch, and the thread that owns
	 * the bucket writes them (pq_feed_write_ready(), pq_writer_close()).
	 */
	struct pq_feed *feed;
	int defer;
	struct sb outq, ready;
	atomic_int has_ready;	/* ready holds bytes: set with the feed's mutex, read without it */
	int stopped;		/* the feed's mutex: its batches are passed over */
};

/* ---- between the files ---- */

/* parquet_codec.c */

/* A compressor for codec c at level (resolved: not 0).  0 or -1 (reported). */
int pq_comp_init(struct pq_comp *k, enum compression c, int level);
void pq_comp_free(struct pq_comp *k);

/* The codec's id in ColumnMetaData (parquet.thrift's CompressionCodec). */
int pq_codec_id(const struct pq_codec *k);
/* Compress src into k->out (or point at src when uncompressed).  0 or -1. */
int pq_compress_page(struct pq_comp *k, const char *src, size_t n, const char **dst, size_t *dlen);
/* The most a page of n bytes can take in a file: header and compressed body. */
uint64_t pq_page_bound(const struct pq_comp *k, size_t n);
/* A data page's header; dict_entries > 0: a dictionary page's instead. */
void pq_page_header(struct sb *h, size_t raw, size_t comp, uint32_t values, int encoding,
		    uint32_t dict_entries);
/*
 * Compress a page's body (n bytes at raw) with k, append its header and
 * body to the column's chunk; *added: the bytes it takes in the file.
 * 0 or -1.
 */
int pq_finish_page(struct pq_comp *k, struct pq_writer *pw, size_t ci, const char *raw, size_t n,
		   uint32_t rows, int encoding, struct sb *header, uint64_t *added);
/*
 * Wait until the worker is done with pw's pages, compressing queued pages
 * meanwhile with pw->comp (the calling thread's).  0, or -1 when one failed.
 */
int pq_drain(const struct pq_writer *pw);
/*
 * Wait for a free slot of k's ring, compressing queued pages meanwhile
 * with pw->comp (the calling thread's), and take it for pw: the caller
 * fills it (the page in raw, or rg; and bound) and hands it to the worker
 * with pq_commit().  NULL when one of pw's jobs failed (nothing taken).
 */
struct pq_job *pq_reserve(struct pq_codec *k, struct pq_writer *pw);
void pq_commit(struct pq_codec *k, struct pq_job *j);

/* parquet.c */

/*
 * End the column's open page: its body is built here, compressed here or,
 * with a worker, there (into a free slot of the ring, waiting for one).
 */
int pq_flush_page(struct pq_writer *pw, size_t ci);
/*
 * Write the open row group out: each column's last page, then its
 * dictionary page and chunk; its RowGroup goes into pw->rowgroups for the
 * footer.  0 (nothing to do when it holds no rows) or -1.  A fed writer
 * with a worker (pw->defer) only queues it: the worker writes it out after
 * its pages (pq_write_row_group()), while the rows of the next one come.
 */
int pq_flush_row_group(struct pq_writer *pw);
/*
 * Row group rg of pw written out with compressor k (its last pages, when
 * they ride with it, and the dictionary pages) and header, from file
 * offset *at, which it advances; *added: what its last pages added to
 * the chunks, *chunks: the bytes of the column chunks, which pw->pending
 * counted with *added.  0 or -1 (pw->failed set when the bucket failed).
 * The caller owns pw's chunks and output.
 */
int pq_write_row_group(struct pq_writer *pw, struct pq_comp *k, struct pq_rg *rg, struct sb *header,
		       uint64_t *at, uint64_t *added, uint64_t *chunks);
void pq_rg_free(struct pq_rg *rg);

/* parquet_feed.c */

/* What pw's row groups wrote (pw->outq) handed to the thread that writes them. */
void pq_feed_deliver(struct pq_writer *pw);

#endif
