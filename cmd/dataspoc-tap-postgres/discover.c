/*
 * dataspoc-tap-postgres: --discover, the catalog tap-postgres prints: every
 * database of the cluster this user can connect to (or filter_dbs), every
 * table, view and materialized view whose columns it may read, a JSON Schema
 * per column from its type, and the metadata tap-postgres writes.
 */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "tap_pg.h"

/* A column's base type: the element of an array, the base of a domain. */
#define BASE_TYPE \
	"CASE WHEN COALESCE(st.typtype, t.typtype) = 'd'" \
	" THEN COALESCE(st.typbasetype, t.typbasetype) ELSE COALESCE(st.oid, t.oid) END"

static const char columns_sql[] =
	"SELECT c.reltuples::bigint, c.relkind IN ('v', 'm'), n.nspname, c.relname, a.attname,"
	" COALESCE(i.indisprimary, false), format_type(a.atttypid, NULL::integer),"
	" information_schema._pg_char_max_length(" BASE_TYPE ", information_schema._pg_truetypmod(a.*, t.*)),"
	" information_schema._pg_numeric_precision(" BASE_TYPE ", information_schema._pg_truetypmod(a.*, t.*)),"
	" information_schema._pg_numeric_scale(" BASE_TYPE ", information_schema._pg_truetypmod(a.*, t.*)),"
	" t.typcategory = 'A', COALESCE(st.typtype, t.typtype) = 'e', current_database()"
	" FROM pg_attribute a"
	" LEFT JOIN pg_type t ON a.atttypid = t.oid"
	" JOIN pg_class c ON c.oid = a.attrelid"
	" JOIN pg_namespace n ON n.oid = c.relnamespace"
	" LEFT JOIN pg_index i ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) AND i.indisprimary"
	" LEFT JOIN pg_type st ON t.typelem = st.oid AND t.typelem <> 0"
	" WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'v', 'm', 'p')"
	" AND n.nspname NOT IN ('pg_toast', 'pg_catalog', 'information_schema')"
	" AND has_column_privilege(c.oid, a.attname, 'SELECT')";

enum { F_ROWS, F_VIEW, F_SCHEMA, F_TABLE, F_COL, F_PK, F_TYPE, F_CHARLEN, F_PREC, F_SCALE,
       F_ARRAY, F_ENUM, F_DB };

/* " AND col IN ('a','b')" from a comma-separated list. */
static void in_list(PGconn *conn, const char *col, const char *list, struct sb *sql)
{
	const char *p = list;
	int n = 0;

	sb_addf(sql, " AND %s IN (", col);
	while (*p) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char *lit;

		while (len && *p == ' ')
			p++, len--;
		while (len && p[len - 1] == ' ')
			len--;
		lit = PQescapeLiteral(conn, p, len);
		sb_addf(sql, "%s%s", n++ ? ", " : "", lit ? lit : "''");
		PQfreemem(lit);
		p = e ? e + 1 : p + strlen(p);
	}
	sb_adds(sql, ")");
}

/* 10 ** e as Python prints it: an int when e >= 0, a float otherwise. */
static void pow10_py(struct sb *out, long e, int neg)
{
	if (neg)
		sb_addc(out, '-');
	if (e >= 0) {
		sb_addc(out, '1');
		for (long i = 0; i < e; i++)
			sb_addc(out, '0');
	} else if (e >= -4) {
		sb_add(out, "0.", 2);
		for (long i = 0; i < -e - 1; i++)
			sb_addc(out, '0');
		sb_addc(out, '1');
	} else {
		sb_addf(out, "1e-%02ld", -e);
	}
}

static void nullable(struct sb *o, const char *type, int pk)
{
	sb_addf(o, pk ? "\"type\":[\"%s\"]" : "\"type\":[\"null\",\"%s\"]", type);
}

static void numeric_bounds(struct sb *o, long p, long s)
{
	sb_adds(o, ",\"exclusiveMaximum\":true,\"maximum\":");
	pow10_py(o, p - s, 0);
	sb_adds(o, ",\"multipleOf\":");
	pow10_py(o, -s, 0);
	sb_adds(o, ",\"exclusiveMinimum\":true,\"minimum\":");
	pow10_py(o, p - s, 1);
}

/* tap-postgres's caps on an unbounded numeric. */
static void numeric_ps(PGresult *r, int row, long *p, long *s)
{
	*p = PQgetisnull(r, row, F_PREC) ? 100 : atol(PQgetvalue(r, row, F_PREC));
	*s = PQgetisnull(r, row, F_SCALE) ? 38 : atol(PQgetvalue(r, row, F_SCALE));
	if (*p > 100)
		*p = 100;
	if (*s > 38)
		*s = 38;
}

/* The JSON Schema of one column (compact JSON); 0 when unsupported (no type). */
static int column_schema(PGresult *r, int row, struct sb *o)
{
	const char *type = PQgetvalue(r, row, F_TYPE);
	int pk = PQgetvalue(r, row, F_PK)[0] == 't';
	int is_enum = PQgetvalue(r, row, F_ENUM)[0] == 't';
	long charlen = PQgetisnull(r, row, F_CHARLEN) ? 0 : atol(PQgetvalue(r, row, F_CHARLEN));
	char dt[256];
	size_t i, j;
	long p, s;

	if (PQgetvalue(r, row, F_ARRAY)[0] == 't') {
		static const struct {
			const char *type, *def;
		} arr[] = {
			{ "integer[]", "integer" }, { "bigint[]", "integer" }, { "smallint[]", "integer" },
			{ "bit[]", "boolean" }, { "boolean[]", "boolean" },
			{ "date[]", "timestamp" }, { "timestamp without time zone[]", "timestamp" },
			{ "timestamp with time zone[]", "timestamp" },
			{ "double precision[]", "number" }, { "real[]", "number" },
			{ "hstore[]", "object" },
		};
		const char *def = "string";

		if (strcmp(type, "bytea[]") == 0) {
			sb_adds(o, "{}");
			return 0;
		}
		sb_adds(o, "{\"type\":[\"null\",\"array\"],\"items\":{\"$ref\":\"#/definitions/");
		if (strcmp(type, "numeric[]") == 0) {
			numeric_ps(r, row, &p, &s);
			sb_addf(o, "sdc_recursive_decimal_%ld_%ld_array\"}}", p, s);
			return 1;
		}
		for (i = 0; i < sizeof(arr) / sizeof(arr[0]); i++)
			if (strcmp(type, arr[i].type) == 0)
				def = arr[i].def;
		sb_addf(o, "sdc_recursive_%s_array\"}}", def);
		return 1;
	}
	/* lower case, without [] */
	for (i = j = 0; type[i] && j + 1 < sizeof(dt); i++) {
		if (type[i] == '[' && type[i + 1] == ']') {
			i++;
			continue;
		}
		dt[j++] = (char)(type[i] >= 'A' && type[i] <= 'Z' ? type[i] + 32 : type[i]);
	}
	dt[j] = '\0';
	sb_addc(o, '{');
	if (!strcmp(dt, "smallint") || !strcmp(dt, "integer") || !strcmp(dt, "bigint")) {
		long bits = PQgetisnull(r, row, F_PREC) ? 64 : atol(PQgetvalue(r, row, F_PREC));
		unsigned long long half = bits >= 1 && bits <= 64 ? 1ULL << (bits - 1) : 0;

		nullable(o, "integer", pk);
		sb_addf(o, ",\"minimum\":-%llu,\"maximum\":%llu}", half, half - 1);
		return 1;
	}
	if (!strcmp(dt, "money") || is_enum || !strcmp(dt, "uuid") || !strcmp(dt, "citext") ||
	    !strcmp(dt, "json") || !strcmp(dt, "jsonb") || !strcmp(dt, "time without time zone") ||
	    !strcmp(dt, "time with time zone") || !strcmp(dt, "text") || !strcmp(dt, "cidr") ||
	    !strcmp(dt, "inet") || !strcmp(dt, "macaddr")) {
		/* (bit and boolean come after money and enums, as in tap-postgres) */
		nullable(o, "string", pk);
	} else if ((!strcmp(dt, "bit") && charlen == 1) || !strcmp(dt, "boolean")) {
		nullable(o, "boolean", pk);
	} else if (!strcmp(dt, "hstore")) {
		nullable(o, "object", pk);
		sb_adds(o, ",\"properties\":{}");
	} else if (!strcmp(dt, "numeric")) {
		nullable(o, "number", pk);
		numeric_ps(r, row, &p, &s);
		numeric_bounds(o, p, s);
	} else if (!strcmp(dt, "date") || !strcmp(dt, "timestamp without time zone") ||
		   !strcmp(dt, "timestamp with time zone")) {
		nullable(o, "string", pk);
		sb_adds(o, ",\"format\":\"date-time\"");
	} else if (!strcmp(dt, "real") || !strcmp(dt, "double precision")) {
		nullable(o, "number", pk);
	} else if (!strcmp(dt, "character varying") || !strcmp(dt, "character")) {
		nullable(o, "string", pk);
		if (charlen)
			sb_addf(o, ",\"maxLength\":%ld", charlen);
	} else {
		sb_addc(o, '}');
		return 0;
	}
	sb_addc(o, '}');
	return 1;
}

static const char base_definitions[] =
	"\"sdc_recursive_integer_array\":{\"type\":[\"null\",\"integer\",\"array\"],\"items\":{\"$ref\":\"#/definitions/sdc_recursive_integer_array\"}},"
	"\"sdc_recursive_number_array\":{\"type\":[\"null\",\"number\",\"array\"],\"items\":{\"$ref\":\"#/definitions/sdc_recursive_number_array\"}},"
	"\"sdc_recursive_string_array\":{\"type\":[\"null\",\"string\",\"array\"],\"items\":{\"$ref\":\"#/definitions/sdc_recursive_string_array\"}},"
	"\"sdc_recursive_boolean_array\":{\"type\":[\"null\",\"boolean\",\"array\"],\"items\":{\"$ref\":\"#/definitions/sdc_recursive_boolean_array\"}},"
	"\"sdc_recursive_timestamp_array\":{\"type\":[\"null\",\"string\",\"array\"],\"format\":\"date-time\",\"items\":{\"$ref\":\"#/definitions/sdc_recursive_timestamp_array\"}},"
	"\"sdc_recursive_object_array\":{\"type\":[\"null\",\"object\",\"array\"],\"items\":{\"$ref\":\"#/definitions/sdc_recursive_object_array\"}}";

/* Rows [from, to) of r are one table's columns: its catalog entry. */
static void table_entry(PGresult *r, int from, int to, struct sb *o)
{
	struct sb props = SB_INIT, md = SB_INIT, defs = SB_INIT, keys = SB_INIT;
	const char *db = PQgetvalue(r, from, F_DB), *schema = PQgetvalue(r, from, F_SCHEMA),
		   *table = PQgetvalue(r, from, F_TABLE);
	struct sb id = SB_INIT;
	long p, s;

	for (int i = from; i < to; i++) {
		const char *col = PQgetvalue(r, i, F_COL), *type = PQgetvalue(r, i, F_TYPE);
		int pk = PQgetvalue(r, i, F_PK)[0] == 't', ok;
		long charlen = PQgetisnull(r, i, F_CHARLEN) ? 0 : atol(PQgetvalue(r, i, F_CHARLEN));

		if (pk) {
			sb_adds(&keys, keys.len ? "," : "");
			py_quotes(&keys, col);
		}
		sb_adds(&props, i > from ? "," : "");
		py_quotes(&props, col);
		sb_addc(&props, ':');
		ok = column_schema(r, i, &props);
		sb_adds(&md, ",{\"breadcrumb\":[\"properties\",");
		py_quotes(&md, col);
		sb_adds(&md, "],\"metadata\":{\"sql-datatype\":");
		if (strcmp(type, "bit") == 0 && charlen > 1) {
			char b[64];

			snprintf(b, sizeof(b), "bit(%ld)", charlen);
			py_quotes(&md, b);
		} else {
			py_quotes(&md, type);
		}
		sb_adds(&md, !ok ? ",\"inclusion\":\"unsupported\",\"selected-by-default\":false}}"
			: pk ? ",\"inclusion\":\"automatic\",\"selected-by-default\":true}}"
			: ",\"inclusion\":\"available\",\"selected-by-default\":true}}");
		if (strcmp(type, "numeric[]") == 0) {
			numeric_ps(r, i, &p, &s);
			sb_addf(&defs, ",\"sdc_recursive_decimal_%ld_%ld_array\":{\"type\":[\"null\",\"number\",\"array\"]"
				",\"multipleOf\":", p, s);
			pow10_py(&defs, -s, 0);
			sb_adds(&defs, ",\"exclusiveMaximum\":true,\"maximum\":");
			pow10_py(&defs, p - s, 0);
			sb_adds(&defs, ",\"exclusiveMinimum\":true,\"minimum\":");
			pow10_py(&defs, p - s, 1);
			sb_addf(&defs, ",\"items\":{\"$ref\":\"#/definitions/sdc_recursive_decimal_%ld_%ld_array\"}}", p, s);
		}
	}
	sb_addf(&id, "%s-%s-%s", db, schema, table);
	sb_adds(o, "{\"table_name\":");
	py_quotes(o, table);
	sb_adds(o, ",\"stream\":");
	py_quotes(o, table);
	sb_adds(o, ",\"metadata\":[{\"breadcrumb\":[],\"metadata\":{\"table-key-properties\":[");
	sb_add(o, keys.buf, keys.len);
	sb_adds(o, "],\"schema-name\":");
	py_quotes(o, schema);
	sb_adds(o, ",\"database-name\":");
	py_quotes(o, db);
	sb_addf(o, ",\"row-count\":%s,\"is-view\":%s}}", PQgetvalue(r, from, F_ROWS),
		PQgetvalue(r, from, F_VIEW)[0] == 't' ? "true" : "false");
	sb_add(o, md.buf, md.len);
	sb_adds(o, "],\"tap_stream_id\":");
	py_quotes(o, id.buf);
	sb_adds(o, ",\"schema\":{\"type\":\"object\",\"properties\":{");
	sb_add(o, props.buf, props.len);
	sb_adds(o, "},\"definitions\":{");
	sb_adds(o, base_definitions);
	sb_add(o, defs.buf, defs.len);
	sb_adds(o, "}}}");
	sb_free(&props);
	sb_free(&md);
	sb_free(&defs);
	sb_free(&keys);
	sb_free(&id);
}

/* The entries of database db, appended to o (",{...}" each); *n counts them. */
static int discover_db(struct tap *t, const char *db, struct sb *o, size_t *n)
{
	struct sb sql = SB_INIT, why = SB_INIT, where = SB_INIT;
	PGconn *conn = pg_connect(&t->conf, db, 1, &why);
	PGresult *r = NULL;
	int rc = 0, rows, from;

	pg_where(&t->conf, db, &where);
	if (conn == NULL) {
		/* as tap-postgres: a database this user cannot reach is passed over */
		err_warn("cannot connect to %s, passed over: %s", where.buf, why.buf);
		goto out;
	}
	sb_adds(&sql, columns_sql);
	if (t->conf.filter_schemas)
		in_list(conn, "n.nspname", t->conf.filter_schemas, &sql);
	sb_adds(&sql, " ORDER BY n.nspname, c.relname, a.attnum");
	r = PQexec(conn, sql.buf);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		sb_reset(&why);
		pg_error_line(conn, r, &why);
		err_msg("cannot list the tables of %s: %s", where.buf, why.buf);
		rc = EXIT_FAIL;
		goto out;
	}
	rows = PQntuples(r);
	for (from = 0; from < rows;) {
		int to = from + 1;

		while (to < rows && strcmp(PQgetvalue(r, to, F_SCHEMA), PQgetvalue(r, from, F_SCHEMA)) == 0 &&
		       strcmp(PQgetvalue(r, to, F_TABLE), PQgetvalue(r, from, F_TABLE)) == 0)
			to++;
		if ((*n)++)
			sb_addc(o, ',');
		table_entry(r, from, to, o);
		from = to;
	}
out:
	PQclear(r);
	PQfinish(conn);
	sb_free(&sql);
	sb_free(&why);
	sb_free(&where);
	return rc;
}

int discover(struct tap *t)
{
	struct sb sql = SB_INIT, o = SB_INIT, where = SB_INIT, why = SB_INIT;
	PGconn *conn = pg_connect(&t->conf, NULL, 0, NULL);
	PGresult *r = NULL;
	struct json_span v;
	size_t n = 0, errpos;
	const char *errmsg;
	int rc = EXIT_FAIL;

	if (conn == NULL)
		goto out;
	sb_adds(&sql, "SELECT datname FROM pg_database WHERE datistemplate = false AND datname <> 'rdsadmin'");
	if (t->conf.filter_dbs)
		in_list(conn, "datname", t->conf.filter_dbs, &sql);
	sb_adds(&sql, " ORDER BY oid");
	r = PQexec(conn, sql.buf);
	if (PQresultStatus(r) != PGRES_TUPLES_OK) {
		pg_where(&t->conf, NULL, &where);
		pg_error_line(conn, r, &why);
		err_msg("cannot list the databases of %s: %s", where.buf, why.buf);
		goto out;
	}
	PQfinish(conn);
	conn = NULL;
	sb_adds(&o, "{\"streams\":[");
	for (int i = 0; i < PQntuples(r); i++)
		if (discover_db(t, PQgetvalue(r, i, 0), &o, &n) != 0)
			goto out;
	sb_adds(&o, "]}");
	if (n == 0) {
		err_msg("0 tables were discovered across the entire cluster (%s:%s)", t->conf.host, t->conf.port);
		goto out;
	}
	if (json_validate(o.buf, o.len, &v, &errpos, &errmsg) != 0) {
		err_msg("internal error: the catalog is not JSON at byte %zu: %s", errpos, errmsg);
		goto out;
	}
	py_dump_indent(&t->out, &v);
	rc = flush_out(t, 0) ? EXIT_FAIL : 0;
out:
	PQclear(r);
	PQfinish(conn);
	sb_free(&sql);
	sb_free(&o);
	sb_free(&where);
	sb_free(&why);
	return rc;
}
