/*
 * dataspoc-tap-postgres: one stream's sync, as tap-postgres does it (its
 * messages, their order, its bookmarks), the rows read with COPY ... TO
 * STDOUT in text format, one row at a time, so memory stays flat whatever
 * the size of the table.
 *
 * A table's FULL_TABLE sync is ordered by xmin, which makes the server sort
 * the whole table, rows and all, before the first one comes.  When every row
 * to read has one xmin (a table loaded in one transaction, or restored from
 * a dump) any order is that order: a first query, in the COPY's snapshot,
 * finds out, and the COPY then goes without the sort and without xmin.  When
 * the server must sort, the session asks for enough memory to sort in
 * memory (within SORT_MEM_MAX) and for no parallel workers, whose tuple
 * queues cost the server more CPU than they save on a machine also busy
 * with the tap and its sink.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "err.h"
#include "sb.h"
#include "tap_pg.h"

/* A STATE every this many records, as tap-postgres (UPDATE_BOOKMARK_PERIOD). */
#define BOOKMARK_PERIOD 1000
/* Output is written in pieces of at least this size. */
#define OUT_CHUNK (256 * 1024)
/* The most work_mem a sync asks for its sort, in bytes. */
#define SORT_MEM_MAX "268435456"

struct run {
	struct tap *t;
	struct stream *s;
	PGconn *conn;
	struct sb prefix;	/* {"type": "RECORD", "stream": S, "record": { */
	struct sb suffix;	/* }, "version": V, "time_extracted": T}\n */
	struct sb *keys;	/* "col": (with ", " before all but the first) */
	struct sb field;	/* a field unescaped */
	struct sb rkv;		/* the replication key's last value, as printed */
	struct sb xmin;		/* the last row's xmin */
	int xmin_col;		/* the COPY column holding xmin, or -1 */
	int track_xmin;		/* xmin goes in the bookmarks */
	int binary;		/* COPY's binary format, read as bt[] says */
	enum bin_type *bt;	/* per COPY column (xmin last) */
	int header_done;	/* the binary format's header was read */
	unsigned long long rows;
};

/* The bookmark's member key of stream id, or NULL. */
static struct kv *bm_get(struct tap *t, const char *id, const char *key)
{
	struct bookmark *b = state_bookmark(&t->state, id, 0);

	return b ? kv_get(&b->kv, key) : NULL;
}

/* Python's truth of a value printed as JSON text. */
static int text_truthy(const struct sb *v)
{
	if (v == NULL || v->len == 0)
		return 0;
	if (strcmp(v->buf, "null") == 0 || strcmp(v->buf, "false") == 0 ||
	    strcmp(v->buf, "\"\"") == 0 || strcmp(v->buf, "[]") == 0 || strcmp(v->buf, "{}") == 0)
		return 0;
	if (v->buf[0] == '-' || (v->buf[0] >= '0' && v->buf[0] <= '9')) {
		for (size_t i = 0; i < v->len && v->buf[i] != 'e' && v->buf[i] != 'E'; i++)
			if (v->buf[i] >= '1' && v->buf[i] <= '9')
				return 1;
		return 0;
	}
	return 1;
}

/* The text Python's '{}'.format() gives a value printed as JSON text v. */
static void text_of(const struct sb *v, struct sb *out)
{
	struct json_span sp;
	size_t errpos;
	const char *errmsg;

	if (v->buf[0] == '"' && json_validate(v->buf, v->len, &sp, &errpos, &errmsg) == 0)
		json_string_decode(&sp, out);
	else
		sb_add(out, v->buf, v->len);
}

void now_iso(char *buf, size_t size, long long *us)
{
	struct timespec ts;
	struct tm tm;
	char day[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%06ldZ", day, ts.tv_nsec / 1000);
	if (us)
		*us = (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int emit_state(struct run *r)
{
	state_message(&r->t->state, &r->t->out);
	return flush_out(r->t, OUT_CHUNK);
}

static void fq_table(PGconn *conn, const struct stream *s, struct sb *out)
{
	char *a = PQescapeIdentifier(conn, s->schema_name, strlen(s->schema_name));
	char *b = PQescapeIdentifier(conn, s->table, strlen(s->table));

	sb_addf(out, "%s.%s", a ? a : "\"\"", b ? b : "\"\"");
	PQfreemem(a);
	PQfreemem(b);
}

static void add_ident(PGconn *conn, const char *name, struct sb *out)
{
	char *q = PQescapeIdentifier(conn, name, strlen(name));

	sb_adds(out, q ? q : "\"\"");
	PQfreemem(q);
}

/* The error of res (NULL: of the connection), or the text said (not NULL). */
static int fail_said(struct run *r, PGresult *res, const char *what, const char *said)
{
	struct sb where = SB_INIT, why = SB_INIT;
	const char *code;

	pg_where(&r->t->conf, r->s->dbname, &where);
	if (said)
		sb_adds(&why, said);
	else
		pg_error_line(r->conn, res, &why);
	/* undefined_column: a column dropped since the catalog was discovered */
	if (res && (code = PQresultErrorField(res, PG_DIAG_SQLSTATE)) && strcmp(code, "42703") == 0)
		sb_adds(&why, ": the catalog is older than the table; discover it again (--discover;"
			" dataspoc-pipe run does at each run)");
	err_msg("cannot %s table '%s.%s' (%s): %s", what, r->s->schema_name, r->s->table,
		where.buf, why.buf);
	sb_free(&where);
	sb_free(&why);
	return EXIT_FAIL;
}

static int fail(struct run *r, PGresult *res, const char *what)
{
	return fail_said(r, res, what, NULL);
}

/* Unescape COPY text field f[0..len) into r->field when it holds a backslash. */
static const char *unescape(struct run *r, const char *f, size_t *len)
{
	const char *p = memchr(f, '\\', *len), *end = f + *len;
	struct sb *d = &r->field;

	if (p == NULL)
		return f;
	sb_reset(d);
	sb_add(d, f, (size_t)(p - f));
	while (p < end) {
		char c = *p++;

		if (c != '\\' || p == end) {
			sb_addc(d, c);
			continue;
		}
		c = *p++;
		switch (c) {
		case 'b': sb_addc(d, '\b'); break;
		case 'f': sb_addc(d, '\f'); break;
		case 'n': sb_addc(d, '\n'); break;
		case 'r': sb_addc(d, '\r'); break;
		case 't': sb_addc(d, '\t'); break;
		case 'v': sb_addc(d, '\v'); break;
		default:
			if (c >= '0' && c <= '7') {
				int v = c - '0';

				for (int i = 0; i < 2 && p < end && *p >= '0' && *p <= '7'; i++)
					v = v * 8 + (*p++ - '0');
				sb_addc(d, (char)v);
			} else {
				sb_addc(d, c);
			}
		}
	}
	*len = d->len;
	return d->buf;
}

static int row_end(struct run *r);

/* Whether field i (of len bytes) is a string to write in pieces. */
static int big_value(const struct run *r, size_t i, size_t len)
{
	const struct column *c = &r->s->cols[i];

	return len > BIG_VALUE && c->kind == K_STRING && !c->array && (int)i != r->s->rk_col;
}

/*
 * A string value f[0..len) printed as value_json() prints it, the record so
 * far written out after each piece (escaped: COPY's text, unescaped a piece
 * at a time; a piece never ends inside an escape or a UTF-8 sequence).
 */
static int big_string(struct run *r, const char *f, size_t len, int escaped)
{
	struct sb *out = &r->t->out;

	sb_addc(out, '"');
	while (len) {
		size_t cut = utf8_cut(f, len, BIG_VALUE), n;
		const char *g = f;

		if (escaped && cut < len) {
			size_t bs = 0;

			while (bs < cut && f[cut - 1 - bs] == '\\')
				bs++;
			cut -= bs & 1;	/* an escape's backslash stays with what it escapes */
		}
		n = cut;
		if (escaped)
			g = unescape(r, f, &n);
		py_quote_body(out, g, n);
		f += cut;
		len -= cut;
		if (flush_out(r->t, 0) != 0)
			return EXIT_FAIL;
	}
	sb_addc(out, '"');
	return 0;
}

/* One COPY row (with its \n) as a RECORD.  0, or EXIT_FAIL. */
static int row(struct run *r, const char *line, size_t n)
{
	struct sb *out = &r->t->out;
	const char *p = line, *end = line + n;
	size_t ncols = r->s->ncols;

	if (n && end[-1] == '\n')
		end--;
	sb_add(out, r->prefix.buf, r->prefix.len);
	for (size_t i = 0; i < ncols + (r->xmin_col >= 0); i++) {
		const char *f = p, *tab = memchr(p, '\t', (size_t)(end - p));
		size_t len;
		int null;

		if (tab == NULL)
			tab = end;
		len = (size_t)(tab - f);
		p = tab < end ? tab + 1 : end;
		null = len == 2 && f[0] == '\\' && f[1] == 'N';
		if (i == ncols) {
			sb_reset(&r->xmin);
			sb_add(&r->xmin, f, len);
			break;
		}
		const struct column *c = &r->s->cols[i];
		size_t at;

		sb_add(out, r->keys[i].buf, r->keys[i].len);
		at = out->len;
		if (!null && big_value(r, i, len)) {
			/* (nothing after it can fail: a partial record is never left) */
			if (big_string(r, f, len, 1) != 0)
				return EXIT_FAIL;
			continue;
		}
		if (!null)
			f = unescape(r, f, &len);
		value_json(out, c->kind, c->array, f, len, null);
		if ((int)i == r->s->rk_col && !null) {
			sb_reset(&r->rkv);
			sb_add(&r->rkv, out->buf + at, out->len - at);
		}
	}
	return row_end(r);
}

/* After a row's fields: the record's end, a STATE every BOOKMARK_PERIOD rows. */
static int row_end(struct run *r)
{
	sb_add(&r->t->out, r->suffix.buf, r->suffix.len);
	r->rows++;
	if (r->rows % BOOKMARK_PERIOD == 0) {
		if (r->track_xmin)
			state_write(&r->t->state, r->s->id, "xmin", r->xmin.buf, r->xmin.len);
		if (r->s->rk_col >= 0 && r->rkv.len)
			state_write(&r->t->state, r->s->id, "replication_key_value", r->rkv.buf, r->rkv.len);
		if (emit_state(r) != 0)
			return EXIT_FAIL;
	}
	return flush_out(r->t, OUT_CHUNK) ? EXIT_FAIL : 0;
}

static int bad_binary(struct run *r)
{
	struct sb where = SB_INIT;

	pg_where(&r->t->conf, r->s->dbname, &where);
	err_msg("cannot read table '%s.%s' (%s): COPY's binary data is not as expected at row %llu",
		r->s->schema_name, r->s->table, where.buf, r->rows + 1);
	sb_free(&where);
	return EXIT_FAIL;
}

/* The binary format's signature, then its flags and header extension. */
static const unsigned char bin_signature[11] = "PGCOPY\n\377\r\n";

/*
 * The fields of a binary row p..end (after its count) as row_bin() reads
 * them, each turned into its text but a value to write in pieces: 0 when
 * row_bin() will not fail on them, -1 otherwise.
 */
static int row_bin_check(struct run *r, const unsigned char *p, const unsigned char *end)
{
	size_t ncols = r->s->ncols, nf = ncols + (r->xmin_col >= 0);

	for (size_t i = 0; i < nf; i++) {
		int32_t len;

		if (end - p < 4)
			return -1;
		len = (int32_t)bin_be32(p);
		p += 4;
		if (len < -1 || (len > 0 && end - p < len))
			return -1;
		if (len < 0) {
			if (i == ncols)
				return -1;
			continue;
		}
		if (i < ncols && (r->bt[i] == B_TEXT || r->bt[i] == B_JSONB) && big_value(r, i, (size_t)len)) {
			if (r->bt[i] == B_JSONB && p[0] != 1)
				return -1;
		} else if (r->bt[i] != B_TEXT) {
			sb_reset(&r->field);
			if (bin_text(&r->field, r->bt[i], p, (size_t)len) != 0)
				return -1;
		}
		p += len;
		if (i == ncols)
			break;
	}
	return p == end ? 0 : -1;
}

/* One message of COPY's binary format (a row, maybe after the header, or the trailer) as a RECORD. */
static int row_bin(struct run *r, const unsigned char *p, size_t n)
{
	const unsigned char *end = p + n;
	struct sb *out = &r->t->out;
	size_t ncols = r->s->ncols, nf = ncols + (r->xmin_col >= 0);
	int count;

	if (!r->header_done) {
		uint32_t ext;

		if (n < 19 || memcmp(p, bin_signature, 11) != 0)
			return bad_binary(r);
		ext = bin_be32(p + 15);
		if (ext > n - 19)
			return bad_binary(r);
		p += 19 + ext;
		r->header_done = 1;
		if (p == end)
			return 0;
	}
	if (end - p < 2)
		return bad_binary(r);
	count = (int16_t)bin_be16(p);
	p += 2;
	if (count == -1)	/* the trailer */
		return p == end ? 0 : bad_binary(r);
	if ((size_t)count != nf)
		return bad_binary(r);
	/* a row with a value written in pieces is checked whole first: no partial record */
	if (n > BIG_VALUE && row_bin_check(r, p, end) != 0)
		return bad_binary(r);
	sb_add(out, r->prefix.buf, r->prefix.len);
	for (size_t i = 0; i < nf; i++) {
		int32_t len;
		const char *f;
		size_t flen;

		if (end - p < 4)
			return bad_binary(r);
		len = (int32_t)bin_be32(p);
		p += 4;
		if (len < -1 || (len > 0 && end - p < len))
			return bad_binary(r);
		if (i == ncols) {
			sb_reset(&r->xmin);
			if (len < 0 || bin_text(&r->xmin, r->bt[i], p, (size_t)len) != 0)
				return bad_binary(r);
			p += len;
			break;
		}
		const struct column *c = &r->s->cols[i];
		size_t at;

		sb_add(out, r->keys[i].buf, r->keys[i].len);
		at = out->len;
		if (len < 0) {
			value_json(out, c->kind, c->array, "", 0, 1);
			continue;
		}
		if (c->array) {
			/* (a catalog that says array for a type that is not one: value.c decides) */
		} else if (c->kind == K_INT && (r->bt[i] == B_INT2 || r->bt[i] == B_INT4 || r->bt[i] == B_INT8)) {
			/* the digits are what value.c prints */
			if (bin_text(out, r->bt[i], p, (size_t)len) != 0)
				return bad_binary(r);
			goto printed;
		} else if (bin_iso(out, r->bt[i], c->kind, p, (size_t)len)) {
			goto printed;
		}
		/* text is its own text: no copy */
		if (r->bt[i] == B_TEXT || (r->bt[i] == B_JSONB && len >= 1 && p[0] == 1)) {
			f = (const char *)p + (r->bt[i] == B_JSONB);
			flen = (size_t)len - (r->bt[i] == B_JSONB);
			if (big_value(r, i, flen)) {
				if (big_string(r, f, flen, 0) != 0)
					return EXIT_FAIL;
				goto printed;
			}
		} else {
			sb_reset(&r->field);
			if (bin_text(&r->field, r->bt[i], p, (size_t)len) != 0)
				return bad_binary(r);
			f = r->field.buf;
			flen = r->field.len;
		}
		value_json(out, c->kind, c->array, f, flen, 0);
printed:
		p += len;
		if ((int)i == r->s->rk_col) {
			sb_reset(&r->rkv);
			sb_add(&r->rkv, out->buf + at, out->len - at);
		}
	}
	if (p != end)
		return bad_binary(r);
	return row_end(r);
}

/* One COPY message as a RECORD (copy_out()'s row). */
static int copy_row(void *arg, const char *p, size_t n)
{
	struct run *r = arg;

	return r->binary ? row_bin(r, (const unsigned char *)p, n) : row(r, p, n);
}

/* Run COPY (sql) TO STDOUT, each row a RECORD. */
static int copy_rows(struct run *r, const char *sql)
{
	PGresult *bad;
	struct sb why = SB_INIT;
	int rc = copy_out(r->conn, sql, copy_row, r, &bad, &why);

	if (rc < 0)
		rc = fail_said(r, bad, "read", why.len ? why.buf : NULL);
	PQclear(bad);
	sb_free(&why);
	return rc;
}

static void schema_message(struct run *r, const char *bookmark_props)
{
	struct sb *out = &r->t->out;

	sb_adds(out, "{\"type\": \"SCHEMA\", \"stream\": ");
	py_quotes(out, r->s->dest);
	sb_adds(out, ", \"schema\": ");
	sb_add(out, r->s->schema.buf, r->s->schema.len);
	sb_adds(out, ", \"key_properties\": ");
	sb_add(out, r->s->keys.buf, r->s->keys.len);
	sb_adds(out, ", \"bookmark_properties\": ");
	sb_adds(out, bookmark_props);
	sb_adds(out, "}\n");
}

static void activate(struct run *r, const char *version)
{
	struct sb *out = &r->t->out;

	sb_adds(out, "{\"type\": \"ACTIVATE_VERSION\", \"stream\": ");
	py_quotes(out, r->s->dest);
	sb_adds(out, ", \"version\": ");
	sb_adds(out, version);
	sb_adds(out, "}\n");
}

/* The SELECT list: the columns, quoted. */
static void select_list(struct run *r, struct sb *sql)
{
	for (size_t i = 0; i < r->s->ncols; i++) {
		if (i)
			sb_addc(sql, ',');
		add_ident(r->conn, r->s->cols[i].name, sql);
	}
}

static void run_prepare(struct run *r, const char *version, const char *extracted)
{
	sb_adds(&r->prefix, "{\"type\": \"RECORD\", \"stream\": ");
	py_quotes(&r->prefix, r->s->dest);
	sb_adds(&r->prefix, ", \"record\": {");
	sb_addf(&r->suffix, "}, \"version\": %s, \"time_extracted\": \"%s\"}\n", version, extracted);
	r->keys = xcalloc(r->s->ncols ? r->s->ncols : 1, sizeof(*r->keys));
	for (size_t i = 0; i < r->s->ncols; i++) {
		if (i)
			sb_add(&r->keys[i], ", ", 2);
		py_quotes(&r->keys[i], r->s->cols[i].name);
		sb_add(&r->keys[i], ": ", 2);
	}
}

/* Run sql, a setting, in a savepoint: a server that refuses it keeps its own and the transaction. */
static void try_setting(struct run *r, const char *sql)
{
	PGresult *res;
	int ok;

	PQclear(PQexec(r->conn, "SAVEPOINT dataspoc_tap_setting"));
	res = PQexec(r->conn, sql);
	ok = PQresultStatus(res) == PGRES_TUPLES_OK;
	PQclear(res);
	PQclear(PQexec(r->conn, ok ? "RELEASE SAVEPOINT dataspoc_tap_setting"
		       : "ROLLBACK TO SAVEPOINT dataspoc_tap_setting"));
}

/*
 * The transaction's settings for a sort of the stream's rows: work_mem
 * enough to sort the table in memory (its pages and 64 bytes a row, a
 * quarter more, its partitions' with a partitioned table's), never less than the session has nor more than
 * SORT_MEM_MAX, and no parallel workers.  Local to the transaction (a
 * pooler's next client never gets them); a server that refuses either is
 * read with its own settings.
 */
static void sort_settings(struct run *r)
{
	struct sb sql = SB_INIT, name = SB_INIT;
	char *lit;

	fq_table(r->conn, r->s, &name);
	lit = PQescapeLiteral(r->conn, name.buf, name.len);
	sb_addf(&sql, "SELECT set_config('work_mem', GREATEST(pg_size_bytes(current_setting('work_mem')),"
		" LEAST(" SORT_MEM_MAX ", COALESCE(sum(pg_relation_size(c.oid))"
		" + sum(GREATEST(c.reltuples, 0)) * 64, 0) * 1.25))::bigint / 1024 || 'kB', true)"
		" FROM pg_class c WHERE c.oid = %s::regclass"
		" OR c.oid IN (SELECT relid FROM pg_partition_tree(%s::regclass))",
		lit ? lit : "''", lit ? lit : "''");
	try_setting(r, sql.buf);
	try_setting(r, "SELECT set_config('max_parallel_workers_per_gather', '0', true)");
	PQfreemem(lit);
	sb_free(&sql);
	sb_free(&name);
}

/* Run sql, a statement without rows.  0, or EXIT_FAIL. */
static int exec_cmd(struct run *r, const char *sql)
{
	PGresult *res = PQexec(r->conn, sql);
	int rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = fail(r, res, "read");
	PQclear(res);
	return rc;
}

/*
 * Whether the rows of FROM-and-WHERE clause from share one xmin: 1 with its
 * value in r->xmin, 0 when they do not, 2 when there are none; or -1 after
 * reporting.
 */
static int one_xmin(struct run *r, const char *from, const char *where)
{
	struct sb sql = SB_INIT;
	PGresult *res;
	int rc;

	sb_addf(&sql, "SELECT x.xmin::text::bigint, EXISTS (SELECT 1 FROM %s WHERE %s%sxmin <> x.xmin)"
		" FROM (SELECT xmin FROM %s%s%s LIMIT 1) x", from, where, *where ? " AND " : "",
		from, *where ? " WHERE " : "", where);
	res = PQexec(r->conn, sql.buf);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 2) {
		fail(r, res, "read");
		rc = -1;
	} else if (PQntuples(res) == 0) {
		rc = 2;
	} else if (PQgetvalue(res, 0, 1)[0] == 't') {
		rc = 0;
	} else {
		sb_reset(&r->xmin);
		sb_adds(&r->xmin, PQgetvalue(res, 0, 0));
		rc = 1;
	}
	PQclear(res);
	sb_free(&sql);
	return rc;
}

/* Session time zones whose offset is always +00. */
static int zone_is_utc(const char *z)
{
	static const char *const utc[] = { "UTC", "Etc/UTC", "GMT", "Etc/GMT", "Universal", "Zulu" };

	for (size_t i = 0; i < sizeof(utc) / sizeof(utc[0]); i++)
		if (strcasecmp(z, utc[i]) == 0)
			return 1;
	return 0;
}

/*
 * A REPEATABLE READ transaction (one snapshot for what comes before the
 * COPY and the COPY), the sort's settings, and the format of the COPY:
 * binary when the table's columns to read are all of types binary.c reads
 * (their types as the server has them now, not as the catalog said),
 * timestamptz only in a session in UTC.  0, or EXIT_FAIL.
 */
static int begin_read(struct run *r)
{
	struct sb sql = SB_INIT, name = SB_INIT;
	PGresult *res = NULL;
	size_t ncols = r->s->ncols;
	char *lit = NULL;
	int rc, utc;

	if ((rc = exec_cmd(r, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")) != 0)
		goto out;
	if (r->t->snapshot) {
		/* LOG_BASED's first copy: the rows as of the slot's starting point */
		char *snap = PQescapeLiteral(r->conn, r->t->snapshot, strlen(r->t->snapshot));

		sb_addf(&sql, "SET TRANSACTION SNAPSHOT %s", snap ? snap : "''");
		PQfreemem(snap);
		rc = exec_cmd(r, sql.buf);
		sb_reset(&sql);
		if (rc != 0)
			goto out;
	}
	sort_settings(r);
	fq_table(r->conn, r->s, &name);
	lit = PQescapeLiteral(r->conn, name.buf, name.len);
	sb_addf(&sql, "SELECT a.attname, a.atttypid::int, current_setting('TimeZone') FROM pg_attribute a"
		" WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped", lit ? lit : "''");
	res = PQexec(r->conn, sql.buf);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != 3) {
		rc = fail(r, res, "read");
		goto out;
	}
	r->bt = xcalloc(ncols + 1, sizeof(*r->bt));
	r->bt[ncols] = B_INT8;		/* xmin::text::bigint */
	r->binary = PQntuples(res) > 0 && ncols > 0;
	utc = PQntuples(res) > 0 && zone_is_utc(PQgetvalue(res, 0, 2));
	for (size_t i = 0; i < ncols && r->binary; i++) {
		r->bt[i] = B_NONE;
		for (int j = 0; j < PQntuples(res); j++)
			if (strcmp(PQgetvalue(res, j, 0), r->s->cols[i].name) == 0)
				r->bt[i] = bin_type_of((unsigned)strtoul(PQgetvalue(res, j, 1), NULL, 10), utc);
		r->binary = r->bt[i] != B_NONE;
	}
out:
	PQclear(res);
	PQfreemem(lit);
	sb_free(&sql);
	sb_free(&name);
	return rc;
}

/* The COPY's end: TO STDOUT, in the format begin_read() chose. */
static void copy_to(struct run *r, struct sb *sql)
{
	sb_adds(sql, r->binary ? ") TO STDOUT (FORMAT binary)" : ") TO STDOUT");
}

/* FULL_TABLE: a table by xmin (resumable), a view in one pass. */
static int full_table(struct run *r, const char *extracted, long long now_ms)
{
	struct tap *t = r->t;
	struct stream *s = r->s;
	struct kv *ver = bm_get(t, s->id, "version"), *xmin = bm_get(t, s->id, "xmin");
	int first = ver == NULL, rc, one = 0, split = split_stream(s);
	struct sb version = SB_INIT, sql = SB_INIT, from = SB_INIT, where = SB_INIT;
	struct split sp;
	const char *held = t->snapshot;

	memset(&sp, 0, sizeof(sp));
	/* split across the shards (split.c): the run's version and snapshot, no resuming */
	if (split && split_range(s, &sp) != 0)
		return EXIT_FAIL;
	if (split)
		sb_adds(&version, sp.version);
	else if (!s->is_view && xmin && text_truthy(&xmin->val) && ver)
		sb_add(&version, ver->val.buf, ver->val.len);
	else
		sb_addf(&version, "%lld", now_ms);
	state_write(&t->state, s->id, "version", version.buf, version.len);
	if ((rc = emit_state(r)) != 0)
		goto out;
	run_prepare(r, version.buf, extracted);
	if (first || split)
		activate(r, version.buf);

	fq_table(r->conn, s, &from);
	if (split)
		t->snapshot = sp.snapshot;
	rc = begin_read(r);
	t->snapshot = held;
	if (rc != 0)
		goto out;
	sb_adds(&sql, "COPY (SELECT ");
	select_list(r, &sql);
	if (s->is_view) {
		sb_addf(&sql, " FROM %s", from.buf);
	} else if (split) {
		/* pages [lo, hi) (TID Range Scan); the last shard's to the end */
		sb_addf(&sql, " FROM %s WHERE ctid >= '(%llu,0)'::tid", from.buf, sp.lo);
		if (!sp.last)
			sb_addf(&sql, " AND ctid < '(%llu,0)'::tid", sp.hi);
	} else {
		xmin = bm_get(t, s->id, "xmin");
		if (xmin && text_truthy(&xmin->val)) {
			struct sb x = SB_INIT;
			char *lit;

			text_of(&xmin->val, &x);
			lit = PQescapeLiteral(r->conn, x.buf, x.len);
			sb_addf(&where, "age(xmin::xid) <= age(%s::xid)", lit ? lit : "''");
			PQfreemem(lit);
			sb_free(&x);
		}
		if ((one = one_xmin(r, from.buf, where.buf ? where.buf : "")) < 0) {
			rc = EXIT_FAIL;
			goto out;
		}
		r->track_xmin = one != 2;
		if (one == 0) {
			r->xmin_col = (int)s->ncols;
			sb_adds(&sql, ", xmin::text::bigint");
		}
		sb_addf(&sql, " FROM %s", from.buf);
		if (where.len)
			sb_addf(&sql, " WHERE %s", where.buf);
		if (one == 0)
			sb_adds(&sql, " ORDER BY xmin::text::bigint ASC");
	}
	copy_to(r, &sql);
	if ((rc = copy_rows(r, sql.buf)) != 0 || (rc = exec_cmd(r, "COMMIT")) != 0)
		goto out;
	if (!s->is_view)
		state_write(&t->state, s->id, "xmin", "null", 4);
	activate(r, version.buf);
out:
	split_free(&sp);
	sb_free(&version);
	sb_free(&sql);
	sb_free(&from);
	sb_free(&where);
	return rc;
}

/* INCREMENTAL: the rows at or after the bookmark, by the replication key. */
static int incremental(struct run *r, const char *extracted, long long now_ms)
{
	struct tap *t = r->t;
	struct stream *s = r->s;
	struct kv *ver = bm_get(t, s->id, "version"), *rkv;
	struct sb version = SB_INIT, sql = SB_INIT;
	int rc;

	if (ver)
		sb_add(&version, ver->val.buf, ver->val.len);
	else
		sb_addf(&version, "%lld", now_ms);
	state_write(&t->state, s->id, "version", version.buf, version.len);
	if ((rc = emit_state(r)) != 0)
		goto out;
	run_prepare(r, version.buf, extracted);
	activate(r, version.buf);

	if ((rc = begin_read(r)) != 0)
		goto out;
	sb_adds(&sql, "COPY (SELECT ");
	select_list(r, &sql);
	sb_adds(&sql, " FROM ");
	fq_table(r->conn, s, &sql);
	rkv = bm_get(t, s->id, "replication_key_value");
	if (rkv && text_truthy(&rkv->val)) {
		struct sb x = SB_INIT;
		char *lit;

		text_of(&rkv->val, &x);
		lit = PQescapeLiteral(r->conn, x.buf ? x.buf : "", x.len);
		/* the literal takes the column's type, as tap-postgres's ::sql-datatype cast does */
		sb_adds(&sql, " WHERE ");
		add_ident(r->conn, s->rk, &sql);
		sb_addf(&sql, " >= %s", lit ? lit : "''");
		PQfreemem(lit);
		sb_free(&x);
	}
	sb_adds(&sql, " ORDER BY ");
	add_ident(r->conn, s->rk, &sql);
	sb_adds(&sql, " ASC");
	copy_to(r, &sql);
	if ((rc = copy_rows(r, sql.buf)) != 0 || (rc = exec_cmd(r, "COMMIT")) != 0)
		goto out;
	if (r->rkv.len)
		state_write(&t->state, s->id, "replication_key_value", r->rkv.buf, r->rkv.len);
out:
	sb_free(&version);
	sb_free(&sql);
	return rc;
}

int sync_stream(struct tap *t, struct stream *s)
{
	struct run r;
	char extracted[64];
	long long now_ms;
	struct sb bp = SB_INIT;
	int rc;

	memset(&r, 0, sizeof(r));
	r.t = t;
	r.s = s;
	r.xmin_col = -1;
	if ((r.conn = pg_connect(&t->conf, s->dbname, 0, NULL)) == NULL)
		return EXIT_FAIL;
	now_iso(extracted, sizeof(extracted), &now_ms);
	now_ms /= 1000;
	state_currently(&t->state, s->id);
	if (strcmp(s->method, "FULL_TABLE") == 0 || strcmp(s->method, "LOG_BASED") == 0) {
		/* (LOG_BASED: its first copy, logical.c set the lsn bookmark) */
		schema_message(&r, "[]");
		rc = full_table(&r, extracted, now_ms);
	} else {
		py_quotes(&bp, s->rk);
		state_write(&t->state, s->id, "replication_key", bp.buf, bp.len);
		sb_reset(&bp);
		sb_addc(&bp, '[');
		py_quotes(&bp, s->rk);
		sb_addc(&bp, ']');
		schema_message(&r, bp.buf);
		rc = incremental(&r, extracted, now_ms);
	}
	if (rc == 0) {
		state_currently(&t->state, NULL);
		state_message(&t->state, &t->out);
		rc = flush_out(t, 0) ? EXIT_FAIL : 0;
	}
	PQfinish(r.conn);
	sb_free(&bp);
	sb_free(&r.prefix);
	sb_free(&r.suffix);
	sb_free(&r.field);
	sb_free(&r.rkv);
	sb_free(&r.xmin);
	free(r.bt);
	if (r.keys)
		for (size_t i = 0; i < s->ncols; i++)
			sb_free(&r.keys[i]);
	free(r.keys);
	return rc;
}
