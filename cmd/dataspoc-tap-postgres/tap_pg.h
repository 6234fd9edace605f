/*
 * tap_pg: what the files of dataspoc-tap-postgres share; only they include it.
 *
 *	main.c		--help and --about, and the hooks of singer_tap_main()
 *			(lib/singer_tap.h): the config, the catalog, the
 *			state, then each selected stream
 *	conf.c		the config (-c), the catalog (-p, --catalog) and the
 *			state (-s), read as JSON spans (lib/json.h): no tree, key
 *			order and numbers kept as the files give them
 *	pyjson.c	JSON written as singer-python writes it (", " and ": ",
 *			every non-ASCII character as \uXXXX), the state kept in
 *			order as Python's dicts keep it
 *	conn.c		connections (libpq): parameters, one-line errors
 *	discover.c	--discover: the catalog of every database reachable
 *	sync.c		a stream's FULL_TABLE or INCREMENTAL sync through COPY
 *	copyout.c	COPY ... TO STDOUT, its rows read off the socket
 *	value.c		one COPY field as tap-postgres prints its value
 *	binary.c	a field of COPY's binary format as its type's text
 *	logical.c	LOG_BASED: the slot, the first copy in its snapshot,
 *			then the changes (wal2json or pgoutput) as RECORDs
 *
 * Functions returning an int status give 0, or the exit status (EXIT_FAIL,
 * EXIT_USAGE) after reporting, unless they say otherwise.
 */
#ifndef TAP_PG_H
#define TAP_PG_H

#include <stddef.h>
#include <stdint.h>

#include <libpq-fe.h>

#include "json.h"
#include "sb.h"
#include "singer_tap.h"


/* What a column's values are printed as (value.c). */
enum kind {
	K_STRING,	/* text, varchar, uuid, json, jsonb, money, enums, ... */
	K_INT,		/* smallint, integer, bigint: the digits */
	K_NUMERIC,	/* exact, as Python's str(Decimal); NaN, Infinity: null */
	K_FLOAT,	/* real, double: as Python's repr(float); NaN, Inf: null */
	K_BOOL,
	K_BIT,		/* bit(1): true when "1" */
	K_TSTZ,		/* ISO 8601 with the session's offset */
	K_TS,		/* ISO 8601 and +00:00 */
	K_DATE,		/* ISO 8601 at midnight, +00:00 */
	K_TIME,		/* HH:MM:SS[.ffffff] */
	K_TIMETZ,	/* HH:MM:SS[.ffffff]+HH:MM */
	K_HSTORE	/* an object */
};

struct pgconf {
	char *host, *port, *user, *password, *dbname;
	char *sslmode;			/* "require" when "ssl" is true */
	char *filter_dbs;		/* comma-separated, or NULL */
	char *filter_schemas;		/* comma-separated, or NULL */
	char *default_method;		/* default_replication_method, or NULL */
	int schema_in_name;		/* include_schemas_in_destination_stream_name */
	/* LOG_BASED (logical.c) */
	int debug_lsn;			/* "_sdc_lsn" in the records */
	double poll_seconds;		/* logical_poll_total_seconds, 0: 1800 */
	int message_format;		/* wal2json_message_format: 1 or 2 */
	int break_at_end_lsn;		/* stop at the LSN of the run's start (default) */
	double max_run_seconds;		/* 0: no limit */
	char *plugin;			/* logical_plugin: wal2json, pgoutput, or NULL */
	char *slot;			/* logical_slot, or NULL: tap-postgres's rule */
	char *publication;		/* logical_publication, or NULL: the slot's name */
};

struct column {
	char *name;
	char *sqltype;			/* the catalog's sql-datatype */
	enum kind kind;
	int array;			/* sql-datatype ends in [] */
};

struct stream {
	char *id;			/* tap_stream_id */
	char *table;			/* table_name */
	char *dest;			/* the RECORD's stream */
	char *schema_name, *dbname;
	char *method;			/* replication-method, or the default */
	char *rk;			/* replication-key, or NULL */
	int is_view;
	struct sb schema;		/* the stream's schema, as Python prints it */
	struct sb keys;			/* key_properties, as Python prints it */
	struct column *cols;		/* the columns to sync, sorted */
	size_t ncols;
	int rk_col;			/* index of rk in cols, or -1 */
	int split;			/* "shard-split": split across a sharded run's shards */
};

/* One member of a JSON object kept in order, its value as Python prints it. */
struct kv {
	char *key;
	struct sb val;
};

struct kvlist {
	struct kv *v;
	size_t n, cap;
};

struct bookmark {
	char *id;
	struct kvlist kv;
};

/*
 * The Singer state, as singer-python's dict keeps it: the members in order;
 * "bookmarks" (is_bookmarks) is printed from bms[].
 */
struct state {
	struct kvlist top;
	int has_bookmarks;
	size_t bookmarks_at;		/* index of "bookmarks" in top */
	struct bookmark *bms;
	size_t nbms;
};

struct tap {
	const char *config_file;
	const char *state_file;
	const char *catalog_file;
	struct pgconf conf;
	struct sb catalog_text;
	struct stream *streams;		/* the selected ones, sorted by id */
	size_t nstreams;
	size_t nsync;			/* streams[0..nsync): those to sync, in order */
	struct state state;
	struct sb out;			/* output not yet written */
	int write_failed;		/* already reported */
	const char *snapshot;		/* a full copy reads in this exported snapshot */
	int streamed;			/* databases whose changes were read */
};

/* ---- main.c ---- */


/* Write t->out to stdout when it holds at least min bytes.  0, or -1 after reporting. */
int flush_out(struct tap *t, size_t min);

/* ---- conf.c ---- */

int load_config(struct tap *t);
/* The selected streams of t->catalog_file, sorted by tap_stream_id. */
int load_catalog(struct tap *t);
int load_state(struct tap *t);
void conf_free(struct tap *t);

/* ---- pyjson.c ---- */

/* Append s[0..len) quoted as Python's json.dumps(ensure_ascii=True) does. */
void py_quote(struct sb *out, const char *s, size_t len);
/* py_quote() without the quotes, for a string written in pieces. */
void py_quote_body(struct sb *out, const char *s, size_t len);
/* Where to end a piece of s[0..len) of about want bytes: not inside a UTF-8 sequence. */
size_t utf8_cut(const char *s, size_t len, size_t want);
/*
 * A string value longer than this is written out in pieces of this size as
 * it is printed (sync.c, logical.c), so that a huge row costs its COPY or
 * change message and a piece, not its JSON text as well.
 */
#define BIG_VALUE (1024 * 1024)
static inline void py_quotes(struct sb *out, const char *s);
/* Append a validated value as simplejson.dumps() prints it (", ", ": "). */
void py_dump(struct sb *out, const struct json_span *v);
/* Append the same value indented as json.dump(indent=2) prints it. */
void py_dump_indent(struct sb *out, const struct json_span *v);

/* The member key of l, or NULL. */
struct kv *kv_get(struct kvlist *l, const char *key);
/* Set member key of l to the Python JSON text val (appended when new). */
void kv_set(struct kvlist *l, const char *key, const char *val, size_t len);
void kv_free(struct kvlist *l);

/* The bookmark of stream id; created (empty, last) when create is set. */
struct bookmark *state_bookmark(struct state *s, const char *id, int create);
/* singer.write_bookmark(state, id, key, val). */
void state_write(struct state *s, const char *id, const char *key, const char *val, size_t len);
/* singer.reset_stream(): the stream's bookmark emptied, when there is one. */
void state_reset(struct state *s, const char *id);
/* state["currently_syncing"] = id (NULL: null). */
void state_currently(struct state *s, const char *id);
/* Append {"type": "STATE", "value": ...}\n to out. */
void state_message(const struct state *s, struct sb *out);
void state_free(struct state *s);

static inline void py_quotes(struct sb *out, const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	py_quote(out, s, n);
}

/* ---- split.c: one table split across a sharded run's shards ---- */

/* Shard I of N's part of a split table, in the run's snapshot. */
struct split {
	char *snapshot;			/* the exported snapshot's id */
	char *version;			/* the table version every shard activates */
	unsigned long long lo, hi;	/* pages [lo, hi); last: [lo, end) */
	int last;
};

/*
 * In a shard, a shard-split stream that is not a FULL_TABLE table refused
 * (every shard would read all of it).  0, or EXIT_FAIL said.
 */
int split_check(const struct tap *t);
/* Whether stream s is read split (FULL_TABLE, shard-split, in a shard). */
int split_stream(const struct stream *s);
/* s's part for this shard, from $DATASPOC_PIPE_PG_SNAPSHOT.  0, or -1 said. */
int split_range(const struct stream *s, struct split *sp);
void split_free(struct split *sp);
/* DATASPOC_PIPE_PG_HOLD=FILE: export and hold the run's snapshot until SIGTERM. */
int split_hold(struct tap *t);

/* ---- conn.c ---- */

/*
 * Connect to database dbname (NULL: the config's) with the session settings
 * the values need (UTF8, ISO dates).  NULL after one line naming the host
 * and the database; quiet set: no message (the caller warns).
 */
PGconn *pg_connect(const struct pgconf *c, const char *dbname, int quiet, struct sb *why);
/* The server's error of conn or res on one line (newlines and tabs folded). */
void pg_error_line(PGconn *conn, const PGresult *res, struct sb *out);
/* "host 'H' port P database 'D'", for messages. */
void pg_where(const struct pgconf *c, const char *dbname, struct sb *out);

/* ---- logical.c ---- */

/*
 * A member of the config that LOG_BASED reads (debug_lsn, logical_*, ...):
 * 1 when k is one (set in c), 0 when not, or EXIT_USAGE after reporting.
 */
int logical_config(struct tap *t, const struct json_span *k, const struct json_span *v);
/* Sync the LOG_BASED streams of t->streams[0..nsync), after the others. */
int logical_sync(struct tap *t);

/* ---- discover.c ---- */

int discover(struct tap *t);

/* ---- sync.c ---- */

int sync_stream(struct tap *t, struct stream *s);
/* Now as the taps print time_extracted (ISO 8601, UTC, microseconds), and in us. */
void now_iso(char *buf, size_t size, long long *us);

/* ---- copyout.c ---- */

/*
 * Send sql, a COPY ... TO STDOUT, and call row(arg, p, n) for each of its
 * CopyData messages, each read once, into a buffer of its size (through
 * libpq on an encrypted connection); after row() fails, the rest is read
 * and dropped.  0; row()'s status; or -1 when the server or the connection
 * failed: why says why when the messages were not as the protocol says,
 * else *bad is the error's result (NULL: PQerrorMessage() says), to
 * PQclear().  Either way the connection has no result left to read.
 */
int copy_out(PGconn *conn, const char *sql, int (*row)(void *arg, const char *p, size_t n), void *arg,
	     PGresult **bad, struct sb *why);

/* ---- value.c ---- */

/* The kind of values of sql-datatype type (its [] removed). */
enum kind kind_of(const char *type, size_t len);
/*
 * Append COPY text field f[0..len) (already unescaped) of a column of kind k
 * (array: a PostgreSQL array literal) as tap-postgres prints its value.
 * null: the field was \N.
 */
void value_json(struct sb *out, enum kind k, int array, const char *f, size_t len, int null);
/* Append the JSON string of PostgreSQL text s[0..len), ensure_ascii. */
#define value_string py_quote

/* ---- binary.c ---- */

/* How a field of COPY's binary format is read; B_NONE: it cannot be. */
enum bin_type {
	B_NONE, B_BOOL, B_INT2, B_INT4, B_INT8, B_TEXT, B_JSONB, B_UUID, B_NUMERIC,
	B_DATE, B_TS, B_TSTZ
};

/* The big-endian integers of COPY's binary format, at p. */
static inline uint32_t bin_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint16_t bin_be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

/* The reading of the values of type oid; utc: the session's zone is UTC. */
enum bin_type bin_type_of(unsigned oid, int utc);
/*
 * Append the text the type's output function prints (DateStyle ISO, UTC)
 * for binary field f[0..len) of type t.  0, or -1 when f is not of its shape.
 */
int bin_text(struct sb *out, enum bin_type t, const unsigned char *f, size_t len);
/*
 * Append what value_json() prints for a timestamptz, timestamp or date of
 * kind k in binary field f[0..len) when it can be written at once (years 1
 * to 9999, k the type's own kind): 1; else 0, nothing appended.
 */
int bin_iso(struct sb *out, enum bin_type t, enum kind k, const unsigned char *f, size_t len);

#endif
