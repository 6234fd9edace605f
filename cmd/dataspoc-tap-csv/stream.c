/*
 * dataspoc-tap-csv: a stream's SCHEMA and RECORD messages from its file, and
 * discovery's catalog of the configured files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "singer_tap.h"
#include "tap_csv.h"
#include "util.h"

/* A STATE after this many records, on top of the one after each stream. */
#define STATE_EVERY 10000

/* ---- values ---- */

/* Compare two byte strings as memcmp would, the shorter first on a tie. */
static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;

	if (c != 0 || alen == blen)
		return c;
	return alen < blen ? -1 : 1;
}

static int in_list(char *const *list, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (bytes_eq(s, len, list[i]))
			return 1;
	return 0;
}

/* ---- streams ---- */

struct header {
	size_t ncols;
	char **cols;		/* header names */
	size_t *out;		/* indexes of the columns printed */
	size_t nout;
	size_t rk;		/* index of the replication key */
};

static void header_free(struct header *h)
{
	singer_tap_free_list(h->cols, h->ncols);
	free(h->out);
}

/*
 * Open e's file and read its header.  Returns 0 with *cp open (NULL when the
 * file is empty), or an exit status after reporting.
 */
static int open_stream(const struct tap *t, struct entity *e,
		       struct csv **cp, struct header *h)
{
	struct csv *c;
	size_t i, j, len;
	const char *f;
	int r;

	memset(h, 0, sizeof(*h));
	h->rk = SIZE_MAX;
	*cp = c = csv_open(e->path, e->delim);
	if (c == NULL) {
		fflush(stdout);
		err_msg("cannot open '%s':", e->path);
		return EXIT_FAIL;
	}
	r = csv_next(c);
	if (r < 0)
		return csv_fail(c);
	if (r == 0)
		return 0;	/* empty: no columns, nothing to check */
	h->ncols = c->nfields;
	h->cols = xcalloc(h->ncols, sizeof(*h->cols));
	for (i = 0; i < c->nfields; i++) {
		f = csv_field(c, i, &len);
		if (!util_utf8_valid(f, len) ||
		    memchr(f, '\0', len) != NULL) {
			fflush(stdout);
			err_msg("%s:%lu: column %zu: invalid UTF-8 in the header",
				e->path, c->row_line, i + 1);
			return EXIT_FAIL;
		}
		h->cols[i] = xstrndup(f, len);
	}
	j = util_strv_first_dup(h->cols, h->ncols);
	if (j < h->ncols) {
		fflush(stdout);
		err_msg("%s:%lu: column '%s' appears twice", e->path, c->row_line, h->cols[j]);
		return EXIT_FAIL;
	}
	for (i = 0; i < e->nkeys; i++)
		if (!in_list(h->cols, h->ncols, e->keys[i], strlen(e->keys[i]))) {
			fflush(stdout);
			return singer_tap_bad("config", t->config_file, "%s: key '%s' is "
				   "not a column of '%s'", e->name, e->keys[i],
				   e->path);
		}
	for (i = 0; e->rk != NULL && i < h->ncols; i++)
		if (strcmp(h->cols[i], e->rk) == 0)
			h->rk = i;
	if (e->rk != NULL && h->rk == SIZE_MAX) {
		fflush(stdout);
		return singer_tap_bad("config", t->config_file, "%s: replication_key '%s' "
			   "is not a column of '%s'", e->name, e->rk, e->path);
	}
	/* Keys and the replication key are always printed ("automatic"). */
	h->out = xcalloc(h->ncols, sizeof(*h->out));
	for (i = 0; i < h->ncols; i++) {
		const char *col = h->cols[i];

		if (in_list(e->drop, e->ndrop, col, strlen(col)) && i != h->rk &&
		    !in_list(e->keys, e->nkeys, col, strlen(col)))
			continue;
		h->out[h->nout++] = i;
	}
	return 0;
}

static void add_schema(struct sb *out, const struct header *h)
{
	size_t i;

	sb_adds(out, "{\"type\":\"object\",\"properties\":{");
	for (i = 0; i < h->nout; i++) {
		const char *col = h->cols[h->out[i]];

		if (i)
			sb_addc(out, ',');
		json_quote(out, col, strlen(col));
		sb_adds(out, ":{\"type\":[\"null\",\"string\"]}");
	}
	sb_adds(out, "}}");
}

int sync_stream(struct tap *t, struct entity *e)
{
	struct csv *c = NULL;
	struct header h;
	struct sb pre = SB_INIT, max = SB_INIT;
	size_t *colpre = NULL;	/* where each "col": starts in pre */
	size_t i, len, name_end;
	const char *f;
	int rc, r, has_max = 0;

	rc = open_stream(t, e, &c, &h);
	if (rc)
		goto out;

	sb_adds(&t->msg, "{\"type\":\"SCHEMA\",\"stream\":");
	json_quote(&t->msg, e->name, strlen(e->name));
	sb_adds(&t->msg, ",\"schema\":");
	add_schema(&t->msg, &h);
	sb_adds(&t->msg, ",\"key_properties\":");
	json_quote_list(&t->msg, e->keys, e->nkeys);
	if (e->rk != NULL) {
		sb_adds(&t->msg, ",\"bookmark_properties\":");
		json_quote_list(&t->msg, &e->rk, 1);
	}
	sb_adds(&t->msg, "}\n");
	rc = EXIT_FAIL;
	if (emit(t) < 0)
		goto out;

	/* The bytes every RECORD starts with, then each column's "name": */
	sb_adds(&pre, "{\"type\":\"RECORD\",\"stream\":");
	json_quote(&pre, e->name, strlen(e->name));
	sb_adds(&pre, ",\"record\":{");
	name_end = pre.len;
	colpre = xcalloc(h.nout + 1, sizeof(*colpre));
	for (i = 0; i < h.nout; i++) {
		const char *col = h.cols[h.out[i]];

		colpre[i] = pre.len;
		if (i)
			sb_addc(&pre, ',');
		json_quote(&pre, col, strlen(col));
		sb_addc(&pre, ':');
	}
	colpre[h.nout] = pre.len;

	while (h.ncols > 0 && (r = csv_next(c)) != 0) {
		if (r < 0) {
			rc = csv_fail(c);
			goto out;
		}
		if (c->nfields != h.ncols) {
			fflush(stdout);
			err_msg("%s:%lu: expected %zu fields, got %zu", e->path,
				c->row_line, h.ncols, c->nfields);
			goto out;
		}
		if (e->rk != NULL) {
			f = csv_field(c, h.rk, &len);
			/* At-least-once: the row on the bookmark comes again. */
			if (e->has_bm && bytes_cmp(f, len, e->bm.buf, e->bm.len) < 0)
				continue;
			if (!has_max || bytes_cmp(f, len, max.buf, max.len) > 0) {
				sb_reset(&max);
				sb_add(&max, f, len);
				has_max = 1;
			}
		}
		sb_add(&t->msg, pre.buf, name_end);
		for (i = 0; i < h.nout; i++) {
			f = csv_field(c, h.out[i], &len);
			if (!util_utf8_valid(f, len)) {
				fflush(stdout);
				err_msg("%s:%lu: column '%s': invalid UTF-8", e->path,
					c->row_line, h.cols[h.out[i]]);
				goto out;
			}
			sb_add(&t->msg, pre.buf + colpre[i],
			       colpre[i + 1] - colpre[i]);
			json_quote(&t->msg, f, len);
		}
		sb_adds(&t->msg, "}}\n");
		if (emit(t) < 0)
			goto out;
		/*
		 * Rows need not be in replication key order, so a STATE in
		 * the middle of a stream keeps the bookmark it started with.
		 */
		if (++t->nrecords % STATE_EVERY == 0 && emit_state(t) < 0)
			goto out;
	}
	if (has_max) {
		sb_reset(&e->bm);
		sb_add(&e->bm, max.buf, max.len);
		e->has_bm = 1;
		e->bm_changed = 1;
	}
	if (emit_state(t) < 0)
		goto out;
	rc = 0;
out:
	csv_close(c);
	header_free(&h);
	sb_free(&pre);
	sb_free(&max);
	free(colpre);
	return rc;
}

/* ---- discovery ---- */

static void add_metadata(struct sb *out, const struct entity *e,
			 const struct header *h)
{
	size_t i;

	sb_adds(out, "[{\"breadcrumb\":[],\"metadata\":{"
		"\"inclusion\":\"available\",\"selected-by-default\":true,"
		"\"table-key-properties\":");
	json_quote_list(out, e->keys, e->nkeys);
	if (e->rk != NULL) {
		sb_adds(out, ",\"valid-replication-keys\":");
		json_quote_list(out, &e->rk, 1);
		sb_adds(out, ",\"forced-replication-method\":\"INCREMENTAL\"");
	} else
		sb_adds(out, ",\"forced-replication-method\":\"FULL_TABLE\"");
	sb_adds(out, "}}");
	for (i = 0; i < h->ncols; i++) {
		const char *col = h->cols[i];
		int automatic = i == h->rk ||
			in_list(e->keys, e->nkeys, col, strlen(col));

		sb_adds(out, ",{\"breadcrumb\":[\"properties\",");
		json_quote(out, col, strlen(col));
		sb_adds(out, "],\"metadata\":{\"inclusion\":");
		sb_adds(out, automatic ? "\"automatic\"" : "\"available\"");
		sb_adds(out, ",\"selected-by-default\":true}}");
	}
	sb_addc(out, ']');
}

int discover(struct tap *t)
{
	struct sb cat = SB_INIT;
	struct csv *c = NULL;
	struct header h;
	size_t i, j;
	int rc = 0;

	sb_adds(&cat, "{\"streams\":[");
	for (i = 0; i < t->nents && rc == 0; i++) {
		struct entity *e = &t->ents[i];

		rc = open_stream(t, e, &c, &h);
		if (rc == 0) {
			/* The catalog lists every column: drop nothing. */
			h.nout = h.ncols;
			for (j = 0; j < h.ncols; j++)
				h.out[j] = j;
			if (i)
				sb_addc(&cat, ',');
			sb_adds(&cat, "{\"tap_stream_id\":");
			json_quote(&cat, e->name, strlen(e->name));
			sb_adds(&cat, ",\"stream\":");
			json_quote(&cat, e->name, strlen(e->name));
			sb_adds(&cat, ",\"schema\":");
			add_schema(&cat, &h);
			sb_adds(&cat, ",\"key_properties\":");
			json_quote_list(&cat, e->keys, e->nkeys);
			if (e->rk != NULL) {
				sb_adds(&cat, ",\"replication_key\":");
				json_quote(&cat, e->rk, strlen(e->rk));
				sb_adds(&cat, ",\"replication_method\":\"INCREMENTAL\"");
			} else
				sb_adds(&cat, ",\"replication_method\":\"FULL_TABLE\"");
			sb_adds(&cat, ",\"metadata\":");
			add_metadata(&cat, e, &h);
			sb_addc(&cat, '}');
		}
		csv_close(c);
		c = NULL;
		header_free(&h);
	}
	sb_adds(&cat, "]}");
	if (rc == 0)
		rc = singer_tap_print_pretty(cat.buf, cat.len, &t->msg, &t->write_failed);
	sb_free(&cat);
	return rc;
}
