/*
 * dataspoc-tap-postgres: one FULL_TABLE table split across the shards of a
 * sharded run (docs/SCALE.md), by physical page ranges, every shard reading
 * in one snapshot.
 *
 * A stream whose catalog metadata sets "shard-split": true (the pipeline's
 * source.metadata; pipe-tap then selects it in every shard) is read by
 * shard I of N (DATASPOC_PIPE_SHARD=I/N) as the rows whose ctid is in pages
 * [P*I/N, P*(I+1)/N) (the last shard: every page from P*I/N on), P being
 * the table's pages when the run's snapshot was taken.  That snapshot is
 * held for the whole run by this tap started once more with
 * DATASPOC_PIPE_PG_HOLD=FILE (split_hold(), the driver does it): in a
 * REPEATABLE READ transaction it exports its snapshot (pg_export_snapshot())
 * and writes FILE, {"snapshot": ID, "version": V, "pages": {STREAM: P}},
 * then waits for SIGTERM.  Each shard is given that file
 * (DATASPOC_PIPE_PG_SNAPSHOT=FILE) and reads in the snapshot (SET
 * TRANSACTION SNAPSHOT), under the table version V all of them activate.
 * A shard without the file, or whose snapshot is gone (the holder ended),
 * fails: its run then lands nothing, never a row twice or a row missed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "catalog.h"
#include "err.h"
#include "json.h"
#include "sb.h"
#include "tap_pg.h"
#include "util.h"

int split_check(const struct tap *t)
{
	size_t i;

	if (getenv("DATASPOC_PIPE_SHARD") == NULL)
		return 0;
	for (i = 0; i < t->nsync; i++) {
		const struct stream *s = &t->streams[i];

		if (s->split && (s->is_view || strcmp(s->method, "FULL_TABLE") != 0)) {
			err_msg("stream '%s': shard-split splits a FULL_TABLE table, not %s (each shard would"
				" read all of it)", s->id, s->is_view ? "a view" : s->method);
			return EXIT_FAIL;
		}
	}
	return 0;
}

int split_stream(const struct stream *s)
{
	return s->split && !s->is_view && s->method && strcmp(s->method, "FULL_TABLE") == 0 &&
	       getenv("DATASPOC_PIPE_SHARD") != NULL;
}

int split_range(const struct stream *s, struct split *sp)
{
	const char *path = getenv("DATASPOC_PIPE_PG_SNAPSHOT");
	struct sb text = SB_INIT;
	struct json_span v, m, pages;
	unsigned long index, n;
	unsigned long long p;
	size_t errpos;
	const char *errmsg;
	int ret = -1;

	memset(sp, 0, sizeof(*sp));
	if (catalog_parse_shard(getenv("DATASPOC_PIPE_SHARD"), &index, &n) != 0) {
		err_msg("stream '%s': DATASPOC_PIPE_SHARD is not I/N", s->id);
		return -1;
	}
	if (path == NULL || *path == '\0') {
		err_msg("stream '%s' is split across the shards (shard-split): the run's snapshot is not"
			" given (DATASPOC_PIPE_PG_SNAPSHOT), and shards in snapshots of their own could"
			" read a row twice or miss one", s->id);
		return -1;
	}
	if (util_read_file(path, &text, NULL) != 0) {
		err_msg("stream '%s': cannot read the run's snapshot '%s':", s->id, path);
		goto out;
	}
	if (json_validate(text.buf, text.len, &v, &errpos, &errmsg) != 0 || v.type != JSON_OBJECT ||
	    json_object_get(&v, "snapshot", &m) != 1 || m.type != JSON_STRING) {
		err_msg("stream '%s': '%s' is not a run's snapshot", s->id, path);
		goto out;
	}
	{
		struct sb id = SB_INIT;

		json_string_decode(&m, &id);
		sp->snapshot = sb_detach(&id);
	}
	if (json_object_get(&v, "version", &m) != 1 || m.type != JSON_NUMBER ||
	    json_object_get(&v, "pages", &pages) != 1 || pages.type != JSON_OBJECT) {
		err_msg("stream '%s': '%s' is not a run's snapshot", s->id, path);
		goto out;
	}
	sp->version = xstrndup(m.p, m.len);
	if (json_object_get(&pages, s->id, &m) != 1 || m.type != JSON_NUMBER) {
		err_msg("stream '%s': the run's snapshot '%s' has no pages of it", s->id, path);
		goto out;
	}
	p = strtoull(m.p, NULL, 10);
	sp->lo = p * index / n;
	sp->hi = p * (index + 1) / n;
	sp->last = index + 1 == n;
	ret = 0;
out:
	sb_free(&text);
	if (ret != 0)
		split_free(sp);
	return ret;
}

void split_free(struct split *sp)
{
	free(sp->snapshot);
	free(sp->version);
	memset(sp, 0, sizeof(*sp));
}

/* One value of a query of one row, or NULL after saying why. */
static char *one_value(PGconn *conn, const char *sql, const char *what)
{
	PGresult *res = PQexec(conn, sql);
	char *v = NULL;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 && PQnfields(res) == 1) {
		v = xstrdup(PQgetvalue(res, 0, 0));
	} else {
		struct sb why = SB_INIT;

		pg_error_line(conn, res, &why);
		err_msg("cannot %s: %s", what, why.buf);
		sb_free(&why);
	}
	PQclear(res);
	return v;
}

int split_hold(struct tap *t)
{
	const char *path = getenv("DATASPOC_PIPE_PG_HOLD");
	struct sb doc = SB_INIT, sql = SB_INIT, name = SB_INIT;
	char *snap = NULL, *bs = NULL, *size = NULL;
	PGconn *conn;
	PGresult *res;
	sigset_t set;
	struct timespec ts;
	size_t i;
	int ret = EXIT_FAIL, sig, first = 1;

	/* (blocked before the snapshot exists: SIGTERM comes to sigwait() below) */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((conn = pg_connect(&t->conf, NULL, 0, NULL)) == NULL)
		return EXIT_FAIL;
	res = PQexec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		pg_error_line(conn, res, &sql);
		err_msg("cannot begin the run's snapshot: %s", sql.buf);
		PQclear(res);
		goto out;
	}
	PQclear(res);
	if ((snap = one_value(conn, "SELECT pg_export_snapshot()", "export the run's snapshot")) == NULL ||
	    (bs = one_value(conn, "SELECT current_setting('block_size')", "read block_size")) == NULL)
		goto out;
	clock_gettime(CLOCK_REALTIME, &ts);
	sb_adds(&doc, "{\"snapshot\": ");
	json_quote(&doc, snap, strlen(snap));
	sb_addf(&doc, ", \"version\": %lld, \"pages\": {",
		(long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	for (i = 0; i < t->nsync; i++) {
		const struct stream *s = &t->streams[i];
		char *a, *b, *lit;
		unsigned long long pages, block = strtoull(bs, NULL, 10);

		if (!s->split || s->is_view || strcmp(s->method, "FULL_TABLE") != 0)
			continue;
		a = PQescapeIdentifier(conn, s->schema_name, strlen(s->schema_name));
		b = PQescapeIdentifier(conn, s->table, strlen(s->table));
		sb_reset(&name);
		sb_addf(&name, "%s.%s", a ? a : "\"\"", b ? b : "\"\"");
		PQfreemem(a);
		PQfreemem(b);
		lit = PQescapeLiteral(conn, name.buf, name.len);
		sb_reset(&sql);
		sb_addf(&sql, "SELECT pg_relation_size(%s::regclass)", lit ? lit : "''");
		PQfreemem(lit);
		free(size);
		if ((size = one_value(conn, sql.buf, "read a split table's size")) == NULL)
			goto out;
		pages = block ? (strtoull(size, NULL, 10) + block - 1) / block : 0;
		sb_adds(&doc, first ? "" : ", ");
		first = 0;
		json_quote(&doc, s->id, strlen(s->id));
		sb_addf(&doc, ": %llu", pages);
	}
	sb_adds(&doc, "}}\n");
	if (util_replace_file(path, doc.buf, doc.len) != 0) {
		err_msg("cannot write the run's snapshot to '%s':", path);
		goto out;
	}
	/* held until the run ends: its driver's SIGTERM */
	sigwait(&set, &sig);
	ret = 0;
out:
	PQfinish(conn);
	free(snap);
	free(bs);
	free(size);
	sb_free(&doc);
	sb_free(&sql);
	sb_free(&name);
	return ret;
}
