/*
 * dataspoc-tap-postgres: connections through libpq, and their errors on one
 * line that names the host and the database, never the password.
 */
#include <string.h>

#include "err.h"
#include "sb.h"
#include "tap_pg.h"

void pg_where(const struct pgconf *c, const char *dbname, struct sb *out)
{
	sb_addf(out, "host '%s' port %s database '%s'", c->host, c->port, dbname ? dbname : c->dbname);
}

/* Append text folded onto one line: newlines and tabs become single spaces. */
static void fold(struct sb *out, const char *text)
{
	size_t start = out->len;
	int space = 0;

	for (const char *p = text; *p; p++) {
		if (*p == '\n' || *p == '\t' || *p == '\r' || *p == ' ') {
			space = 1;
			continue;
		}
		if (space && out->len > start)
			sb_addc(out, ' ');
		space = 0;
		sb_addc(out, *p);
	}
}

void pg_error_line(PGconn *conn, const PGresult *res, struct sb *out)
{
	const char *m = res ? PQresultErrorMessage(res) : NULL;

	if (m == NULL || *m == '\0')
		m = conn ? PQerrorMessage(conn) : "";
	if (*m == '\0')
		m = "unknown error";
	/* libpq's "ERROR:  " prefix says nothing a reader needs */
	if (strncmp(m, "ERROR:  ", 8) == 0)
		m += 8;
	fold(out, m);
}

/* Run a statement that returns no rows; 0, or -1 with the reason in why. */
static int exec_ok(PGconn *conn, const char *sql, struct sb *why)
{
	PGresult *r = PQexec(conn, sql);
	int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;

	if (!ok)
		pg_error_line(conn, r, why);
	PQclear(r);
	return ok ? 0 : -1;
}

PGconn *pg_connect(const struct pgconf *c, const char *dbname, int quiet, struct sb *why)
{
	const char *keys[12], *vals[12];
	struct sb where = SB_INIT, reason = SB_INIT;
	PGconn *conn;
	int n = 0;

	keys[n] = "host"; vals[n++] = c->host;
	keys[n] = "port"; vals[n++] = c->port;
	keys[n] = "user"; vals[n++] = c->user;
	keys[n] = "dbname"; vals[n++] = dbname ? dbname : c->dbname;
	if (c->password) {
		keys[n] = "password"; vals[n++] = c->password;
	}
	if (c->sslmode) {
		keys[n] = "sslmode"; vals[n++] = c->sslmode;
	}
	keys[n] = "connect_timeout"; vals[n++] = "30";
	keys[n] = "client_encoding"; vals[n++] = "UTF8";
	keys[n] = "application_name"; vals[n++] = "dataspoc-tap-postgres";
	keys[n] = NULL; vals[n] = NULL;
	/* expand_dbname 0: a dbname holding '=' is a name, not a connection string */
	conn = PQconnectdbParams(keys, vals, 0);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
		pg_error_line(conn, NULL, &reason);
		goto fail;
	}
	/* the text the values are parsed from: ISO dates, every float digit */
	if (exec_ok(conn, "SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres';"
		    " SET extra_float_digits = 1", &reason) < 0)
		goto fail;
	sb_free(&where);
	sb_free(&reason);
	return conn;
fail:
	pg_where(c, dbname, &where);
	if (why) {
		sb_add(why, reason.buf, reason.len);
	} else if (!quiet) {
		err_msg("cannot connect to %s as user '%s': %s", where.buf, c->user, reason.buf);
	}
	PQfinish(conn);
	sb_free(&where);
	sb_free(&reason);
	return NULL;
}
