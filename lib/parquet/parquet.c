/*
 * parquet: the Parquet writer: a file's pages, row groups and footer
 * (parquet-format's parquet.thrift).  The other parts are in
 * parquet_schema.c, parquet_value.c, parquet_codec.c and parquet_enc.c
 * (see parquet_impl.h).
 */
#include "parquet_impl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif
#define PQ_CREATED_BY "dataspoc-pipe version " PIPE_VERSION

/* n bytes into the file, not counted in pw->offset (the caller counts them). */
static int put(struct pq_writer *pw, const void *p, size_t n)
{
	if (pw->defer) {
		/* A feed's worker adds the rows: the bucket is the caller's thread's. */
		sb_add(&pw->outq, p, n);
		return 0;
	}
	if (n && bucket_writer_write(pw->w, p, n) < 0) {
		pw->failed = 1;
		return -1;
	}
	return 0;
}

static int out(struct pq_writer *pw, const void *p, size_t n)
{
	if (pw->failed || put(pw, p, n) != 0)
		return -1;
	pw->offset += n;
	return 0;
}

static void colw_reset_page(struct pq_colw *c)
{
	c->nidx = 0;
	sb_reset(&c->vals);
	sb_reset(&c->levels);
	pq_rle_init(&c->rle, &c->levels, 1);
	c->page_rows = 0;
	c->bits = c->nbits = 0;
}

/* Give back the page's buffers (its values, levels and dictionary indexes). */
static void colw_free_page(struct pq_colw *c)
{
	sb_free(&c->vals);
	sb_free(&c->levels);
	pq_rle_init(&c->rle, &c->levels, 1);
	free(c->idx);
	c->idx = NULL;
	c->idxcap = 0;
}

struct pq_writer *pq_writer_open(struct bucket_writer *w, const struct pq_schema *s,
				 const struct pq_options *o)
{
	struct pq_writer *pw = xcalloc(1, sizeof(*pw));
	size_t i;

	pw->w = w;
	pw->s = s;
	pw->o = *o;
	if (pw->o.page_size == 0)
		pw->o.page_size = DEFAULT_PAGE_SIZE;
	if (pw->o.row_group_rows == 0)
		pw->o.row_group_rows = 1;
	pw->n = s->n;
	pw->cols = xcalloc(pw->n, sizeof(*pw->cols));
	pw->cells = xcalloc(pw->n, sizeof(*pw->cells));
	pw->comp = &o->codec->main;
	for (i = 0; i < pw->n; i++) {
		colw_reset_page(&pw->cols[i]);
		pw->cols[i].dict = s->cols[i].kind == PQ_STRING;
	}
	if (out(pw, "PAR1", 4) != 0) {
		pq_writer_abort(pw);
		return NULL;
	}
	pw->most = pw->offset;
	return pw;
}

/* Bits for the indices of n dictionary entries (at least 1). */
static int index_bits(uint32_t n)
{
	int b = 1;

	while (b < 32 && (n - 1) >> b)
		b++;
	return b;
}

/* The column's open page's body, appended to page; its encoding. */
static int page_body(struct pq_colw *c, struct sb *page)
{
	if (c->nbits) {
		sb_addc(&c->vals, (char)c->bits);
		c->bits = c->nbits = 0;
	}
	pq_rle_finish(&c->rle);
	put_le(page, c->levels.len, 4);
	sb_add(page, c->levels.buf, c->levels.len);
	if (c->nidx > 0) {
		struct pq_rle e;
		int bw = index_bits(c->ndict);
		uint32_t i;

		sb_addc(page, (char)bw);
		pq_rle_init(&e, page, bw);
		for (i = 0; i < c->nidx; i++)
			pq_rle_put(&e, c->idx[i]);
		pq_rle_finish(&e);
		return PQ_ENC_RLE_DICTIONARY;
	}
	sb_add(page, c->vals.buf, c->vals.len);
	return PQ_ENC_PLAIN;
}

int pq_flush_page(struct pq_writer *pw, size_t ci)
{
	struct pq_colw *c = &pw->cols[ci];
	struct pq_codec *k = pw->o.codec;
	struct sb *page = &pw->comp->page;
	uint64_t added;
	int encoding;

	if (c->page_rows == 0)
		return 0;
	if (k->threaded) {
		/* Built in its slot of the ring: no page buffer of this thread's too. */
		struct pq_job *j = pq_reserve(k, pw);

		if (j == NULL) {
			pw->failed = 1;
			return -1;
		}
		sb_reset(&j->raw);
		j->encoding = page_body(c, &j->raw);
		j->ci = ci;
		j->rows = c->page_rows;
		j->bound = pq_page_bound(&k->wk, j->raw.len);
		pq_commit(k, j);
	} else {
		sb_reset(page);
		encoding = page_body(c, page);
		if (pq_finish_page(pw->comp, pw, ci, page->buf, page->len, c->page_rows, encoding, &pw->header,
				   &added) != 0) {
			pw->failed = 1;
			return -1;
		}
		pw->pending += added;
	}
	colw_reset_page(c);
	return 0;
}

/* Parquet's physical type of a kind. */
static int physical(enum pq_kind k)
{
	switch (k) {
	case PQ_INT64:
	case PQ_TIMESTAMP:
		return PQ_TYPE_INT64;
	case PQ_DATE:
		return PQ_TYPE_INT32;
	case PQ_DOUBLE:
		return PQ_TYPE_DOUBLE;
	case PQ_BOOL:
		return PQ_TYPE_BOOLEAN;
	case PQ_DECIMAL:
	case PQ_NUMERIC:
		return PQ_TYPE_FLBA;
	default:
		return PQ_TYPE_BYTE_ARRAY;
	}
}

static void statistics(struct pq_thrift *t, const struct pq_rgcol *c, enum pq_kind k)
{
	struct sb v = SB_INIT;

	pq_thrift_struct(t, 12);
	pq_thrift_i64(t, 3, (int64_t)c->nulls);
	if (c->has_minmax) {
		size_t half;

		if (k == PQ_DOUBLE) {
			/* parquet-format: a zero min is written -0.0, a zero max +0.0. */
			put_le(&v, double_bits(c->dmax == 0 ? 0.0 : c->dmax), 8);
			put_le(&v, double_bits(c->dmin == 0 ? -0.0 : c->dmin), 8);
		} else {
			int n = k == PQ_DATE ? 4 : k == PQ_BOOL ? 1 : 8;

			put_le(&v, (uint64_t)c->imax, n);
			put_le(&v, (uint64_t)c->imin, n);
		}
		half = v.len / 2;
		pq_thrift_binary(t, 5, v.buf, half);
		pq_thrift_binary(t, 6, v.buf + half, half);
	}
	pq_thrift_end(t);
	sb_free(&v);
}

void pq_rg_free(struct pq_rg *rg)
{
	size_t i;

	if (rg == NULL)
		return;
	for (i = 0; i < rg->n; i++)
		sb_free(&rg->cols[i].dvals);
	sb_free(&rg->pages);
	free(rg);
}

int pq_write_row_group(struct pq_writer *pw, struct pq_comp *k, struct pq_rg *rg, struct sb *header,
		       uint64_t *at, uint64_t *added, uint64_t *chunks)
{
	struct pq_thrift t;
	uint64_t start = *at, raw = 0, comp = 0, a;
	size_t i;

	*added = *chunks = 0;
	for (i = 0; i < pw->n; i++) {
		const struct pq_rgcol *rc = &rg->cols[i];

		if (rc->prows == 0)
			continue;
		if (pq_finish_page(k, pw, i, rg->pages.buf + rc->poff, rc->plen, rc->prows, rc->penc, header, &a) != 0)
			return -1;
		*added += a;
	}
	pq_thrift_init(&t, &pw->rowgroups);
	pq_thrift_elem_struct(&t);
	pq_thrift_list(&t, 1, PQ_T_STRUCT, pw->n);
	for (i = 0; i < pw->n; i++) {
		struct pq_colw *c = &pw->cols[i];
		const struct pq_rgcol *rc = &rg->cols[i];
		const struct pq_column *col = &pw->s->cols[i];
		uint64_t here = *at, dict_comp = 0, dict_raw = 0;

		if (rc->ndict > 0) {
			const char *body;
			size_t blen;

			if (pq_compress_page(k, rc->dvals.buf, rc->dvals.len, &body, &blen) != 0)
				return -1;
			sb_reset(header);
			pq_page_header(header, rc->dvals.len, blen, 0, PQ_ENC_PLAIN, rc->ndict);
			if (put(pw, header->buf, header->len) != 0 || put(pw, body, blen) != 0)
				return -1;
			dict_comp = header->len + blen;
			dict_raw = header->len + rc->dvals.len;
			*at += dict_comp;
		}
		if (put(pw, c->chunk.buf, c->chunk.len) != 0)
			return -1;
		*at += c->chunk.len;
		*chunks += c->chunk.len;
		pq_thrift_elem_struct(&t);		/* ColumnChunk */
		pq_thrift_i64(&t, 2, (int64_t)here);
		pq_thrift_struct(&t, 3);		/* ColumnMetaData */
		pq_thrift_i32(&t, 1, physical(col->kind));
		pq_thrift_list(&t, 2, PQ_T_I32, rc->ndict ? 3 : 2);
		pq_thrift_elem_i32(&t, PQ_ENC_PLAIN);
		pq_thrift_elem_i32(&t, PQ_ENC_RLE);
		if (rc->ndict)
			pq_thrift_elem_i32(&t, PQ_ENC_RLE_DICTIONARY);
		pq_thrift_list(&t, 3, PQ_T_BINARY, 1);
		pq_thrift_elem_binary(&t, col->name, col->name_len);
		pq_thrift_i32(&t, 4, pq_codec_id(pw->o.codec));
		pq_thrift_i64(&t, 5, (int64_t)rc->values);
		pq_thrift_i64(&t, 6, (int64_t)(c->chunk_raw + dict_raw));
		pq_thrift_i64(&t, 7, (int64_t)(c->chunk.len + dict_comp));
		pq_thrift_i64(&t, 9, (int64_t)(here + dict_comp));
		if (rc->ndict)
			pq_thrift_i64(&t, 11, (int64_t)here);
		statistics(&t, rc, col->kind);
		pq_thrift_end(&t);
		pq_thrift_end(&t);
		raw += c->chunk_raw + dict_raw;
		comp += c->chunk.len + dict_comp;
		/* Written: its memory goes with it (see pq_flush_row_group()). */
		sb_free(&c->chunk);
		c->chunk_raw = 0;
	}
	pq_thrift_i64(&t, 2, (int64_t)raw);
	pq_thrift_i64(&t, 3, (int64_t)rg->rows);
	pq_thrift_i64(&t, 5, (int64_t)start);
	pq_thrift_i64(&t, 6, (int64_t)comp);
	pq_thrift_end(&t);
	pw->nrowgroups++;
	return 0;
}

int pq_flush_row_group(struct pq_writer *pw)
{
	struct pq_codec *k = pw->o.codec;
	struct pq_rg *rg;
	uint64_t bound = 0, added, chunks;
	size_t i;
	int r, ride = k->threaded && pw->defer;

	if (pw->rg_rows == 0)
		return 0;
	rg = xcalloc(1, sizeof(*rg) + pw->n * sizeof(rg->cols[0]));
	rg->rows = pw->rg_rows;
	rg->n = pw->n;
	/*
	 * Fed: the last pages ride with the row group, while they take at
	 * most a quarter of a page in all (by an estimate of their size,
	 * which decides only where a page is built, not its bytes); the rest
	 * go first, one job each, as do all of them without the feed.
	 */
	for (i = 0; ride && i < pw->n; i++) {
		const struct pq_colw *c = &pw->cols[i];
		size_t est = c->levels.len + c->vals.len + 5 * (size_t)c->nidx + 64;

		if (c->page_rows > 0 && bound + est <= pw->o.page_size / 4) {
			rg->cols[i].prows = c->page_rows;
			bound += est;
		}
	}
	if (bound)
		sb_grow(&rg->pages, bound);
	bound = 0;
	for (i = 0; i < pw->n; i++) {
		struct pq_colw *c = &pw->cols[i];
		struct pq_rgcol *rc = &rg->cols[i];

		if (rc->prows) {
			rc->poff = rg->pages.len;
			rc->penc = page_body(c, &rg->pages);
			rc->plen = rg->pages.len - rc->poff;
			bound += pq_page_bound(&k->wk, rc->plen);
			colw_reset_page(c);
		} else if (pq_flush_page(pw, i) != 0) {
			pq_rg_free(rg);
			return -1;
		}
	}
	/* What the chunks' metadata needs, taken from the columns: they start the next row group. */
	for (i = 0; i < pw->n; i++) {
		struct pq_colw *c = &pw->cols[i];
		struct pq_rgcol *rc = &rg->cols[i];

		rc->values = c->values;
		rc->nulls = c->nulls;
		rc->has_minmax = c->has_minmax;
		rc->imin = c->imin;
		rc->imax = c->imax;
		rc->dmin = c->dmin;
		rc->dmax = c->dmax;
		rc->ndict = c->ndict;
		rc->dvals = c->dvals;
		c->dvals = (struct sb)SB_INIT;
		if (rc->ndict > 0)
			bound += pq_page_bound(&k->main, rc->dvals.len);
		c->values = c->nulls = 0;
		c->has_minmax = 0;
		/* The next row group starts its own dictionary. */
		if (c->nslots)
			memset(c->dslots, 0, c->nslots * sizeof(*c->dslots));
		c->ndict = 0;
		c->dict = pw->s->cols[i].kind == PQ_STRING;
		/*
		 * The page's buffers go too: kept, each open file held the most
		 * its row groups ever took, not what they hold (200 interleaved
		 * streams: 62 MiB of peak RSS against 43 MiB).
		 */
		colw_free_page(c);
	}
	pw->rg_rows = pw->rg_bytes = 0;
	if (ride) {
		/* Fed: the worker writes it out after its pages, while the next rows come. */
		struct pq_job *j = pq_reserve(k, pw);

		if (j == NULL) {
			pq_rg_free(rg);
			pw->failed = 1;
			return -1;
		}
		j->rg = rg;
		j->bound = bound;
		pq_commit(k, j);
		return 0;
	}
	/* The chunks are complete once the worker is done with the pages. */
	r = pq_drain(pw) != 0 || pw->failed ? -1 :
	    pq_write_row_group(pw, pw->comp, rg, &pw->header, &pw->offset, &added, &chunks);
	for (i = 0; i < pw->n; i++) {
		/* The dictionaries' buffers, for the next row group's. */
		sb_reset(&rg->cols[i].dvals);
		pw->cols[i].dvals = rg->cols[i].dvals;
		rg->cols[i].dvals = (struct sb)SB_INIT;
	}
	pq_rg_free(rg);
	if (r != 0) {
		pw->failed = 1;
		return -1;
	}
	pw->pending = 0;
	pw->most = pw->offset;
	return 0;
}

static void schema_element(struct pq_thrift *t, const struct pq_column *col)
{
	pq_thrift_elem_struct(t);
	pq_thrift_i32(t, 1, physical(col->kind));
	if (col->kind == PQ_DECIMAL || col->kind == PQ_NUMERIC)
		pq_thrift_i32(t, 2, 16);
	pq_thrift_i32(t, 3, PQ_REP_OPTIONAL);
	pq_thrift_binary(t, 4, col->name, col->name_len);
	switch (col->kind) {
	case PQ_NUMERIC:
		pq_thrift_i32(t, 6, PQ_CT_DECIMAL);
		pq_thrift_i32(t, 7, col->scale);
		pq_thrift_i32(t, 8, col->precision);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 5);
		pq_thrift_i32(t, 1, col->scale);
		pq_thrift_i32(t, 2, col->precision);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_DECIMAL:
		pq_thrift_i32(t, 6, PQ_CT_DECIMAL);
		pq_thrift_i32(t, 7, 0);
		pq_thrift_i32(t, 8, 38);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 5);
		pq_thrift_i32(t, 1, 0);
		pq_thrift_i32(t, 2, 38);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_DIGITS:
	case PQ_STRING:
	case PQ_TEXT:
	case PQ_NUMTEXT:
		pq_thrift_i32(t, 6, PQ_CT_UTF8);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 1);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_TIMESTAMP:
		pq_thrift_i32(t, 6, PQ_CT_TIMESTAMP_MICROS);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 8);
		pq_thrift_bool(t, 1, 1);
		pq_thrift_struct(t, 2);
		pq_thrift_struct(t, 2);
		pq_thrift_end(t);
		pq_thrift_end(t);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_DATE:
		pq_thrift_i32(t, 6, PQ_CT_DATE);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 6);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	case PQ_JSON:
		pq_thrift_i32(t, 6, PQ_CT_JSON);
		pq_thrift_struct(t, 10);
		pq_thrift_struct(t, 12);
		pq_thrift_end(t);
		pq_thrift_end(t);
		break;
	default:
		break;
	}
	pq_thrift_end(t);
}

static int write_footer(struct pq_writer *pw)
{
	struct sb f = SB_INIT;
	struct pq_thrift t;
	size_t i;
	int r;

	pq_thrift_init(&t, &f);
	pq_thrift_i32(&t, 1, 1);
	pq_thrift_list(&t, 2, PQ_T_STRUCT, pw->n + 1);
	pq_thrift_elem_struct(&t);
	pq_thrift_binary(&t, 4, "schema", 6);
	pq_thrift_i32(&t, 5, (int32_t)pw->n);
	pq_thrift_end(&t);
	for (i = 0; i < pw->n; i++)
		schema_element(&t, &pw->s->cols[i]);
	pq_thrift_i64(&t, 3, (int64_t)pw->rows);
	pq_thrift_list(&t, 4, PQ_T_STRUCT, pw->nrowgroups);
	sb_add(&f, pw->rowgroups.buf, pw->rowgroups.len);
	pq_thrift_binary(&t, 6, PQ_CREATED_BY, strlen(PQ_CREATED_BY));
	pq_thrift_list(&t, 7, PQ_T_STRUCT, pw->n);
	for (i = 0; i < pw->n; i++) {
		pq_thrift_elem_struct(&t);	/* ColumnOrder */
		pq_thrift_struct(&t, 1);	/* TYPE_ORDER */
		pq_thrift_end(&t);
		pq_thrift_end(&t);
	}
	pq_thrift_end(&t);
	put_le(&f, f.len, 4);
	sb_add(&f, "PAR1", 4);
	r = out(pw, f.buf, f.len);
	sb_free(&f);
	return r;
}

static void free_writer(struct pq_writer *pw)
{
	size_t i;

	for (i = 0; i < pw->n; i++) {
		colw_free_page(&pw->cols[i]);
		sb_free(&pw->cols[i].chunk);
		sb_free(&pw->cols[i].dvals);
		free(pw->cols[i].doff);
		free(pw->cols[i].dslots);
	}
	free(pw->cols);
	free(pw->cells);
	sb_free(&pw->scratch);
	sb_free(&pw->extra);
	sb_free(&pw->key);
	sb_free(&pw->header);
	sb_free(&pw->rowgroups);
	sb_free(&pw->outq);
	sb_free(&pw->ready);
	free(pw);
}

int pq_writer_close(struct pq_writer *pw, uint64_t *size)
{
	int r;

	if (pw == NULL)
		return 0;
	if (pq_drain(pw) != 0)
		pw->failed = 1;
	if (pw->defer) {
		/* Fed: the worker is done with it; what it kept is written now, the rest as usual. */
		pw->defer = 0;
		if (!pw->failed && ((pw->ready.len && bucket_writer_write(pw->w, pw->ready.buf, pw->ready.len) < 0) ||
				    (pw->outq.len && bucket_writer_write(pw->w, pw->outq.buf, pw->outq.len) < 0)))
			pw->failed = 1;
		sb_free(&pw->ready);
		sb_free(&pw->outq);
	}
	if (pq_flush_row_group(pw) != 0 || write_footer(pw) != 0) {
		pq_writer_abort(pw);
		return -1;
	}
	if (size)
		*size = pw->offset;
	r = bucket_writer_close(pw->w);
	pw->w = NULL;
	free_writer(pw);
	return r < 0 ? -1 : 0;
}

void pq_writer_abort(struct pq_writer *pw)
{
	if (pw == NULL)
		return;
	/* The worker may still be writing into this writer's chunks. */
	pq_drain(pw);
	if (pw->w)
		bucket_writer_abort(pw->w);
	free_writer(pw);
}

uint64_t pq_writer_rows(const struct pq_writer *pw)
{
	return pw->rows;
}

int pq_writer_end_row_group(struct pq_writer *pw)
{
	if (pw->failed)
		return -1;
	return pq_flush_row_group(pw);
}

uint64_t pq_writer_bytes(const struct pq_writer *pw)
{
	pq_drain(pw);
	return pw->offset + pw->pending;
}

int pq_writer_reached(struct pq_writer *pw, uint64_t limit)
{
	struct pq_codec *k = pw->o.codec;

	if (k->threaded) {
		/*
		 * Wait for the exact size only when the pages in flight could
		 * reach the limit; and look (under the mutex) only when pw->most
		 * says they could: it was called at every record.
		 */
		if (pw->most < limit)
			return 0;
		pthread_mutex_lock(&k->mu);
		pw->most = pw->offset + pw->pending + pw->inflight_bound;
		pthread_mutex_unlock(&k->mu);
		if (pw->most < limit)
			return 0;
		pq_drain(pw);
	}
	return pw->offset + pw->pending >= limit;
}
