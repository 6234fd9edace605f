/* compact: an append-only table's small files merged (see compact.h). */
#include "compact.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "layout.h"
#include "parquet.h"
#include "pqread.h"
#include "sb.h"
#include "util.h"

/* A data file of the table, as the listing and its footer say. */
struct cfile {
	char *key;
	uint64_t size, rows;
	char *schema;		/* its columns' JSON Schema; NULL: not to be merged */
	char *shape;		/* its columns' names and types, exactly: files merge when equal */
};

/* Read key's footer into cf: its rows, its schema and shape (both NULL when a column cannot be read). */
static int file_info(struct bucket *b, const char *key, struct cfile *cf)
{
	struct sb data = SB_INIT, schema = SB_INIT, shape = SB_INIT;
	struct pq_read_file *f;
	size_t i, n;

	if (bucket_get(b, key, &data) != 0) {
		err_msg("cannot read '%s'", key);
		sb_free(&data);
		return -1;
	}
	cf->size = data.len;
	if ((f = pq_read_open(data.buf, data.len, key)) == NULL) {
		sb_free(&data);
		return -1;
	}
	cf->rows = pq_read_rows(f);
	if (pq_read_file_schema(f, &schema) == 0) {
		n = pq_read_ncolumns(f);
		for (i = 0; i < n; i++) {
			const struct pq_read_column *c = pq_read_column(f, i);

			json_quote(&shape, c->name, c->name_len);
			sb_addf(&shape, ":%d/%d/%d/%d/%d/%d/%d/%d;", c->physical, c->type_length, (int)c->kind,
				c->scale, c->precision, c->unit, c->utc, c->optional);
		}
		cf->schema = sb_detach(&schema);
		cf->shape = sb_detach(&shape);
	}
	pq_read_free(f);
	sb_free(&data);
	sb_free(&schema);
	sb_free(&shape);
	return 0;
}

/* The current row of f as a JSON record into rec: null values left out, the extra column's members put back. */
static int row_record(struct pq_read_file *f, struct sb *rec, struct sb *val)
{
	size_t i, nc = pq_read_ncolumns(f);
	int first = 1;

	sb_reset(rec);
	sb_addc(rec, '{');
	for (i = 0; i < nc; i++) {
		const struct pq_read_column *c = pq_read_column(f, i);

		sb_reset(val);
		if (pq_read_value_json(f, i, val) != 0)
			return -1;
		if (val->len == 4 && memcmp(val->buf, "null", 4) == 0)
			continue;
		if (pq_read_extra_name(c) && val->len >= 2 && val->buf[0] == '{') {
			if (val->len > 2) {
				if (!first)
					sb_addc(rec, ',');
				sb_add(rec, val->buf + 1, val->len - 2);
				first = 0;
			}
			continue;
		}
		if (!first)
			sb_addc(rec, ',');
		first = 0;
		json_quote(rec, c->name, c->name_len);
		sb_addc(rec, ':');
		sb_add(rec, val->buf, val->len);
	}
	sb_addc(rec, '}');
	return 0;
}

struct job {
	struct bucket *b;
	const struct pipe_config *cfg;
	struct plan *p;
	struct plan_stream *s;
	struct pq_codec *codec;
	char *staging;
	unsigned seq;		/* files staged so far */
	unsigned long long rewritten;
};

/* Close the output *pw (set to NULL) and add the plan's file for it: 0, -1. */
static int close_file(struct job *j, struct pq_writer **pw, const char *staged, const char *final, uint64_t rows)
{
	struct plan_file *pf;
	uint64_t bytes = 0;
	int c = pq_writer_close(*pw, &bytes);

	*pw = NULL;
	if (c != 0)
		return -1;
	j->p->files = xrealloc(j->p->files, (j->p->nfiles + 1) * sizeof(*j->p->files));
	pf = &j->p->files[j->p->nfiles++];
	memset(pf, 0, sizeof(*pf));
	pf->stream = xstrdup(j->s->name);
	pf->staged = xstrdup(staged);
	pf->final = xstrdup(final);
	pf->records = rows;
	pf->bytes = bytes;
	pf->unit = 1;
	return 0;
}

/*
 * Files v[0..n) (one folder, one shape, in the listing's order) into new
 * files of about max_file_size, named after the first one so that they
 * sort where it did: DIR/SAFE_RUN_NNNN.parquet gives DIR/SAFE_RUN_NNNN1MMMM.parquet.
 * 1 when a value would not keep its type (nothing staged: the files stay),
 * 0, -1.
 */
static int merge_files(struct job *j, struct cfile *v, size_t n)
{
	struct pq_schema *schema = pq_schema_new(v[0].schema, strlen(v[0].schema), NULL);
	struct pq_writer *pw = NULL;
	struct sb data = SB_INIT, rec = SB_INIT, val = SB_INIT;
	struct pq_read_file *f = NULL;
	const char *dot = strrchr(v[0].key, '.');
	char *stem = xstrndup(v[0].key, (size_t)(dot - v[0].key)), *staged = NULL, *final = NULL;
	size_t i, first_file = j->p->nfiles;
	unsigned piece = 0;
	uint64_t rows = 0, total = 0;
	int ret = -1;

	for (i = 0; i < n; i++) {
		sb_reset(&data);
		if (bucket_get(j->b, v[i].key, &data) != 0) {
			err_msg("cannot read '%s'", v[i].key);
			goto out;
		}
		if ((f = pq_read_open(data.buf, data.len, v[i].key)) == NULL)
			goto out;
		for (;;) {
			struct json_span span;
			struct pq_fail why;
			int r = pq_read_next_row(f);

			if (r < 0)
				goto out;
			if (r == 0)
				break;
			if (row_record(f, &rec, &val) != 0)
				goto out;
			if (pw == NULL) {
				struct pq_options opt;
				struct bucket_writer *w;

				free(staged);
				free(final);
				final = xasprintf("%s1%04u.parquet", stem, piece++);
				staged = xasprintf("%s%04u-%s", j->staging, j->seq++, strrchr(final, '/') + 1);
				memset(&opt, 0, sizeof(opt));
				opt.codec = j->codec;
				opt.row_group_rows = j->cfg->row_group_rows;
				opt.row_group_size = j->cfg->row_group_size;
				if ((w = bucket_writer_open(j->b, staged)) == NULL ||
				    (pw = pq_writer_open(w, schema, &opt)) == NULL)
					goto out;
				rows = 0;
			}
			span.p = rec.buf;
			span.len = rec.len;
			span.type = JSON_OBJECT;
			r = pq_writer_add(pw, &span, &why);
			if (r == PQ_WIDEN) {
				ret = 1;	/* the file's own type does not hold its value back: leave the files */
				goto out;
			}
			if (r != 0)
				goto out;
			rows++;
			total++;
			if (pq_writer_reached(pw, j->cfg->max_file_size) &&
			    close_file(j, &pw, staged, final, rows) != 0)
				goto out;
		}
		pq_read_free(f);
		f = NULL;
	}
	if (pw && close_file(j, &pw, staged, final, rows) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		struct plan_replace *rp;

		j->p->replaced = xrealloc(j->p->replaced, (j->p->nreplaced + 1) * sizeof(*j->p->replaced));
		rp = &j->p->replaced[j->p->nreplaced++];
		rp->stream = xstrdup(j->s->name);
		rp->key = xstrdup(v[i].key);
		rp->rows = v[i].rows;
		rp->unit = 1;
	}
	j->rewritten += total;
	ret = 0;
out:
	if (pw)
		pq_writer_abort(pw);
	if (ret != 0) {
		/* what this merge staged goes with the staging folder; the plan forgets it */
		for (i = first_file; i < j->p->nfiles; i++) {
			free(j->p->files[i].stream);
			free(j->p->files[i].staged);
			free(j->p->files[i].final);
			free(j->p->files[i].version);
		}
		j->p->nfiles = first_file;
	}
	pq_read_free(f);
	pq_schema_free(schema);
	sb_free(&data);
	sb_free(&rec);
	sb_free(&val);
	free(stem);
	free(staged);
	free(final);
	return ret;
}

/* The folder of key, with its '/': its length. */
static size_t folder_len(const char *key)
{
	const char *s = strrchr(key, '/');

	return s ? (size_t)(s - key + 1) : 0;
}

/* A run of files worth merging: fewer files would hold them. */
static int worth(const struct cfile *v, size_t n, uint64_t max)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < n; i++)
		sum += v[i].size;
	return n >= 2 && (sum + max - 1) / max < n;
}

int compact_files(struct bucket *b, const struct pipe_config *cfg, struct plan *p, struct plan_stream *s)
{
	struct job j;
	struct cfile *v = NULL;
	char **list = NULL, *prefix = xasprintf("%s/", s->dir);
	size_t n = 0, nv = 0, i, from, kept = 0;
	int ret = -1;

	memset(&j, 0, sizeof(j));
	j.b = b;
	j.cfg = cfg;
	j.p = p;
	j.s = s;
	if (bucket_list(b, prefix, &list, &n) != 0)
		goto out;
	v = xcalloc(n + 1, sizeof(*v));
	for (i = 0; i < n; i++) {
		char *dir = NULL, *safe = NULL, *run = NULL;
		const char *format = NULL, *comp = NULL;

		if (layout_data_key_split(list[i], &dir, &safe, &run, &format, &comp) != 0)
			continue;	/* not a data file of ours: left alone, and it ends no run of files */
		free(dir);
		free(safe);
		free(run);
		v[nv].key = list[i];
		if (strcmp(format, "parquet") != 0 || layout_node_of(list[i]) != 0) {
			nv++;	/* JSON lines, or an upsert table's node: kept, and it ends a run */
			kept++;
			continue;
		}
		if (file_info(b, list[i], &v[nv]) != 0)
			goto out;
		nv++;
	}
	if (kept && nv == kept) {
		err_warn("compact: stream '%s': '%s' holds no Parquet file to merge (JSON lines are left as they are)",
			 s->name, s->dir);
	}
	j.staging = layout_staging_prefix(p->pipeline, p->run_id);
	if ((j.codec = pq_codec_new(cfg->compression, cfg->compression_level, 0)) == NULL)
		goto out;
	/* runs of neighbours in one folder, of one shape, each smaller than max_file_size */
	for (from = 0; from < nv;) {
		size_t to = from;

		if (v[from].shape == NULL || v[from].size >= cfg->max_file_size) {
			from++;
			continue;
		}
		while (to < nv && v[to].shape && v[to].size < cfg->max_file_size &&
		       folder_len(v[to].key) == folder_len(v[from].key) &&
		       strncmp(v[to].key, v[from].key, folder_len(v[from].key)) == 0 &&
		       strcmp(v[to].shape, v[from].shape) == 0)
			to++;
		if (worth(v + from, to - from, cfg->max_file_size)) {
			int r = merge_files(&j, v + from, to - from);

			if (r < 0)
				goto out;
			if (r > 0)
				err_warn("compact: stream '%s': the files from '%s' keep their layout: a value "
					 "would not read back with its type", s->name, v[from].key);
		}
		from = to;
	}
	s->records = j.rewritten;
	ret = 0;
out:
	for (i = 0; i < nv; i++) {
		free(v[i].schema);
		free(v[i].shape);
	}
	free(v);
	pq_codec_free(j.codec);
	free(j.staging);
	util_strv_free(list);
	free(prefix);
	return ret;
}
