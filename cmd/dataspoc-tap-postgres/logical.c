/*
 * dataspoc-tap-postgres: LOG_BASED replication, as singer-io's tap-postgres
 * does it (its config keys, slot names, messages and bookmarks), with what
 * it lacks: a first copy consistent with the slot, a bookmark that moves
 * past what was sent, pgoutput beside wal2json, errors that say what to do.
 *
 * A stream's first run (no "lsn" in its bookmark) copies the table as
 * FULL_TABLE does (sync.c), in the snapshot that the slot exported when it
 * was made (or, when the slot is older, a temporary slot made for the copy):
 * the copy holds every transaction that committed before the slot's
 * consistent point and none after, which is the bookmark's "lsn".  Later
 * runs read the changes from the slot through the replication protocol, and
 * a change is sent for a stream only when its transaction committed at or
 * after the stream's bookmark: no row is missed and none is sent twice.
 *
 * The bookmark: the end of the last transaction sent (or a point the server
 * said it had read up to, between transactions).  The slot's flush position
 * is confirmed to the server only at the start of a run, from the state the
 * run was given, which the pipeline saved only once a run's records landed:
 * a run that fails or is killed confirms nothing, and the next reads the
 * same changes again.
 *
 * wal2json is asked for its format 2 (a message a change, so memory stays
 * flat for any transaction); wal2json_message_format only chooses, as in
 * tap-postgres, when a delete happened: the run's start (1) or the
 * transaction's commit (2).
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "tap_pg.h"
#include "util.h"

/* A STATE at the first transaction's end after this many records, or this long. */
#define STATE_RECORDS 1000
#define STATE_MS 1000
/* Output is written in pieces of at least this size. */
#define OUT_CHUNK (256 * 1024)
/* A status update to the server at least this often (wal_sender_timeout is 60 s). */
#define STATUS_MS 10000
/* With nothing coming and the server's position still, it has nothing more to send. */
#define IDLE_MS 1000
/* Seconds between 1970-01-01 and 2000-01-01, PostgreSQL's epoch. */
#define PG_EPOCH 946684800LL

/* ---- the config ---- */

static int num_of(const struct json_span *v, double *out)
{
	struct sb s = SB_INIT;
	char *end;
	int ok;

	if (v->type == JSON_STRING)
		json_string_decode(v, &s);
	else if (v->type == JSON_NUMBER)
		sb_add(&s, v->p, v->len);
	else
		return -1;
	errno = 0;
	*out = strtod(s.buf ? s.buf : "", &end);
	ok = s.len > 0 && *end == '\0' && errno == 0 && *out >= 0;
	sb_free(&s);
	return ok ? 0 : -1;
}

static int true_of(const struct json_span *v)
{
	return v->type == JSON_TRUE || (v->type == JSON_STRING && json_string_equal(v, "true", 1));
}

static int str_of(const struct json_span *v, char **out)
{
	struct sb s = SB_INIT;

	if (v->type != JSON_STRING)
		return -1;
	json_string_decode(v, &s);
	if (s.len == 0 || memchr(s.buf, '\0', s.len)) {
		sb_free(&s);
		return -1;
	}
	free(*out);
	*out = sb_detach(&s);
	return 0;
}

int logical_config(struct tap *t, const struct json_span *k, const struct json_span *v)
{
	struct pgconf *c = &t->conf;
	const char *f = t->config_file;
	double d;

	if (json_string_equal(k, "debug_lsn", 0)) {
		c->debug_lsn = true_of(v);
	} else if (json_string_equal(k, "logical_poll_total_seconds", 0)) {
		if (v->type != JSON_NULL && num_of(v, &c->poll_seconds) < 0)
			return singer_tap_bad("config", f, "'logical_poll_total_seconds' must be a number of seconds");
	} else if (json_string_equal(k, "max_run_seconds", 0)) {
		if (v->type != JSON_NULL && num_of(v, &c->max_run_seconds) < 0)
			return singer_tap_bad("config", f, "'max_run_seconds' must be a number of seconds");
	} else if (json_string_equal(k, "break_at_end_lsn", 0)) {
		c->break_at_end_lsn = v->type == JSON_NULL || true_of(v) ? 1 : -1;
	} else if (json_string_equal(k, "wal2json_message_format", 0)) {
		if (v->type == JSON_NULL)
			return 1;
		if (num_of(v, &d) < 0 || (d != 1 && d != 2))
			return singer_tap_bad("config", f, "'wal2json_message_format' must be 1 or 2");
		c->message_format = (int)d;
	} else if (json_string_equal(k, "logical_plugin", 0)) {
		if (v->type == JSON_NULL)
			return 1;
		if (str_of(v, &c->plugin) < 0 || (strcmp(c->plugin, "wal2json") != 0 &&
						  strcmp(c->plugin, "pgoutput") != 0))
			return singer_tap_bad("config", f, "'logical_plugin' must be \"wal2json\" or \"pgoutput\"");
	} else if (json_string_equal(k, "logical_slot", 0)) {
		if (v->type != JSON_NULL && str_of(v, &c->slot) < 0)
			return singer_tap_bad("config", f, "'logical_slot' must be a slot's name");
	} else if (json_string_equal(k, "logical_publication", 0)) {
		if (v->type != JSON_NULL && str_of(v, &c->publication) < 0)
			return singer_tap_bad("config", f, "'logical_publication' must be a publication's name");
	} else {
		return 0;
	}
	return 1;
}

/* ---- a run's streams ---- */

/* A column of a table as the change stream names it, and where it goes. */
struct lcol {
	char *name;
	char *type;		/* the server's type name (format_type) */
	int sel;		/* 1: in the records; 0: not selected */
	enum kind kind;
	int array;
	int key;		/* part of the replica identity */
};

/* A table's columns as the last change or relation message gave them. */
struct lrel {
	uint32_t relid;		/* pgoutput's; 0 with wal2json */
	struct lstream *ls;	/* NULL: not a stream of this run */
	struct lcol *cols;
	size_t ncols;
	struct sb sig;		/* wal2json: the names and types as they came */
};

/* A column whose schema is not the catalog's: added to the table since, or retyped. */
struct lover {
	char *name;
	char *prop;		/* its schema, as new_prop_schema() prints it */
};

struct lstream {
	struct stream *s;
	uint64_t lsn0;		/* the bookmark at the start: changes before it are in */
	uint64_t lsn;		/* the bookmark now */
	struct sb version;
	char **props;		/* the catalog's properties, sorted */
	size_t nprops;
	struct sb schema;	/* the last SCHEMA's schema, with what LOG_BASED adds */
	struct lover *over;	/* columns the catalog lacks or types otherwise, in order met */
	size_t nover;
	char **gone;		/* the catalog's columns dropped from the table since, sorted */
	size_t ngone;
	char **keys;		/* key_properties, sorted; none: the replica identity's */
	size_t nkeys;
	struct sb rec_prefix;	/* {"type": "RECORD", "stream": S, "record": { */
	int warned_toast;
};

struct cval {
	const char *p;
	size_t len;
	int st;			/* V_VAL, V_NULL, V_ABSENT */
	size_t off;		/* in the scratch buffer, before p is known; or W2J_* */
};

/* cval.off of a wal2json string over BIG_VALUE: p..p+len its literal, to decode in place; decoded. */
#define W2J_IN_PLACE ((size_t)-2)
#define W2J_DONE ((size_t)-3)

enum { V_VAL, V_NULL, V_ABSENT };

/* One database's LOG_BASED streams and their slot. */
struct ldb {
	struct tap *t;
	const char *dbname;
	struct lstream *ls;
	size_t nls;
	char *slot;
	char *plugin;		/* the slot's */
	char *publication;
	PGconn *q;		/* queries */
	PGconn *repl;		/* replication=database */
	uint64_t end_lsn;	/* the server's WAL position at the start */
	uint64_t start;		/* where the stream starts */
	uint64_t confirm;	/* the flush position confirmed (from the state) */
	uint64_t pos;		/* the bookmark all streams can take */
	uint64_t commit_lsn;	/* the open transaction's commit */
	long long commit_us;	/* its commit time, µs since 1970 */
	int in_txn;
	struct lrel *rels;
	size_t nrels;
	struct sb extracted;	/* time_extracted */
	struct sb deleted_run;	/* _sdc_deleted_at in format 1: the run's start */
	struct sb deleted_at;	/* the value for this transaction */
	struct sb suffix_tail;	/* , "time_extracted": T}\n */
	struct sb scratch;
	char *w2j_msg;		/* the wal2json message being read, where big strings are decoded */
	struct cval *vals, *olds;
	size_t cap;
	unsigned long long since_state;
	long long last_state_ms;
};

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void lsn_text(uint64_t lsn, char *buf, size_t size)
{
	snprintf(buf, size, "%X/%X", (unsigned)(lsn >> 32), (unsigned)lsn);
}

static int lsn_parse(const char *s, size_t len, uint64_t *out)
{
	char b[40], *slash, *e1, *e2;
	unsigned long hi, lo;

	if (len == 0 || len >= sizeof(b))
		return -1;
	memcpy(b, s, len);
	b[len] = '\0';
	if ((slash = strchr(b, '/')) == NULL)
		return -1;
	*slash = '\0';
	hi = strtoul(b, &e1, 16);
	lo = strtoul(slash + 1, &e2, 16);
	if (*e1 || *e2 || e1 == b || e2 == slash + 1 || hi > 0xffffffffUL || lo > 0xffffffffUL)
		return -1;
	*out = (uint64_t)hi << 32 | lo;
	return 0;
}

/* A time (µs since 1970, UTC) as singer-python prints a date-time after isoformat(). */
static void iso_utc(struct sb *out, long long us)
{
	time_t sec = (time_t)(us >= 0 ? us / 1000000 : (us - 999999) / 1000000);
	long frac = (long)(us - (long long)sec * 1000000);
	struct tm tm;
	char b[64];

	gmtime_r(&sec, &tm);
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	sb_adds(out, b);
	if (frac)
		sb_addf(out, ".%06ld", frac);
	sb_adds(out, "+00:00");
}

/* "YYYY-MM-DD HH:MM:SS[.f]+HH[:MM]" (wal2json's timestamp) as µs since 1970; -1 when not. */
static int parse_ts(const char *s, size_t len, long long *us)
{
	struct tm tm;
	char b[64];
	const char *p;
	long frac = 0, scale = 100000, off = 0;
	int n = 0, sign;

	if (len >= sizeof(b) || len < 19)
		return -1;
	memcpy(b, s, len);
	b[len] = '\0';
	memset(&tm, 0, sizeof(tm));
	if (sscanf(b, "%4d-%2d-%2d %2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
		   &tm.tm_min, &tm.tm_sec, &n) != 6)
		return -1;
	p = b + n;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
			frac += (*p - '0') * scale;
	if (*p == '+' || *p == '-') {
		int h = 0, m = 0;

		sign = *p == '-' ? -1 : 1;
		if (sscanf(p + 1, "%2d:%2d", &h, &m) < 1)
			return -1;
		off = sign * (h * 3600L + m * 60L);
	}
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*us = ((long long)timegm(&tm) - off) * 1000000 + frac;
	return 0;
}

/* "host 'H' port P database 'D' slot 'S'", for messages. */
static void where(struct ldb *d, struct sb *out)
{
	pg_where(&d->t->conf, d->dbname, out);
	if (d->slot)
		sb_addf(out, " slot '%s'", d->slot);
}

/* One line: what failed, where, the server's reason (or none), what to do.  EXIT_FAIL. */
static int lfail(struct ldb *d, const struct lstream *ls, PGconn *conn, const PGresult *res,
		 const char *what, const char *todo)
{
	struct sb w = SB_INIT, why = SB_INIT;

	where(d, &w);
	if (conn || res)
		pg_error_line(conn, res, &why);
	if (ls)
		sb_addf(&w, " table '%s.%s'", ls->s->schema_name, ls->s->table);
	err_msg("%s (%s)%s%s%s%s", what, w.buf, why.len ? ": " : "", why.len ? why.buf : "",
		todo ? ": " : "", todo ? todo : "");
	sb_free(&w);
	sb_free(&why);
	return EXIT_FAIL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int is_prop(const struct lstream *ls, const char *name)
{
	return ls->nprops && bsearch(&name, ls->props, ls->nprops, sizeof(*ls->props), cmp_str) != NULL;
}

static const struct column *sel_col(const struct lstream *ls, const char *name)
{
	struct column key = { .name = (char *)(uintptr_t)name };

	for (size_t i = 0; i < ls->s->ncols; i++)
		if (strcmp(ls->s->cols[i].name, key.name) == 0)
			return &ls->s->cols[i];
	return NULL;
}

/* The kind of a type name with its modifiers ("(12,2)") and [] taken off. */
static enum kind norm_kind(const char *type, int *array)
{
	char b[256];
	size_t j = 0;
	int depth = 0;

	for (const char *p = type; *p && j + 1 < sizeof(b); p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')')
			depth--;
		else if (depth == 0)
			b[j++] = *p;
	}
	b[j] = '\0';
	*array = j > 2 && strcmp(b + j - 2, "[]") == 0;
	if (*array)
		b[j -= 2] = '\0';
	if (strcmp(b, "character varying") == 0 || strcmp(b, "character") == 0)
		return K_STRING;
	return kind_of(b, j);
}

/* Append the schema of a column that the catalog lacks, as discovery would print its type. */
static void new_prop_schema(struct sb *o, const char *type)
{
	int array;
	enum kind k = norm_kind(type, &array);
	const char *j;

	if (array) {
		sb_adds(o, "{\"type\": [\"null\", \"array\"], \"items\": {\"$ref\": \"#/definitions/");
		sb_adds(o, k == K_INT ? "sdc_recursive_integer_array" : k == K_NUMERIC || k == K_FLOAT
			? "sdc_recursive_number_array" : k == K_BOOL || k == K_BIT ? "sdc_recursive_boolean_array"
			: k == K_TS || k == K_TSTZ || k == K_DATE ? "sdc_recursive_timestamp_array"
			: k == K_HSTORE ? "sdc_recursive_object_array" : "sdc_recursive_string_array");
		sb_adds(o, "\"}}");
		return;
	}
	j = k == K_INT ? "integer" : k == K_NUMERIC || k == K_FLOAT ? "number"
	    : k == K_BOOL || k == K_BIT ? "boolean" : k == K_HSTORE ? "object" : "string";
	sb_addf(o, "{\"type\": [\"null\", \"%s\"]", j);
	if (k == K_TS || k == K_TSTZ || k == K_DATE)
		sb_adds(o, ", \"format\": \"date-time\"");
	sb_addc(o, '}');
}

static struct lover *over_of(const struct lstream *ls, const char *name)
{
	for (size_t i = 0; i < ls->nover; i++)
		if (strcmp(ls->over[i].name, name) == 0)
			return &ls->over[i];
	return NULL;
}

static int is_gone(const struct lstream *ls, const char *name)
{
	return ls->ngone && bsearch(&name, ls->gone, ls->ngone, sizeof(*ls->gone), cmp_str) != NULL;
}

/*
 * The stream's schema now: the catalog's, less the columns gone, with the
 * overridden columns' schemas (a retyped one in its place, an added one after
 * the catalog's), then what LOG_BASED adds.  Into out (reset).
 */
static void build_schema(struct ldb *d, const struct lstream *ls, struct sb *out)
{
	const struct sb *cat = &ls->s->schema;
	struct json_span v, props, k, e;
	size_t errpos, pos = 0, at;
	const char *errmsg;
	int n = 0;
	unsigned char *used = xcalloc(ls->nover + 1, 1);

	sb_reset(out);
	if (json_validate(cat->buf, cat->len, &v, &errpos, &errmsg) < 0 ||
	    json_object_get(&v, "properties", &props) != 1 || props.type != JSON_OBJECT) {
		sb_add(out, cat->buf, cat->len);
		free(used);
		return;
	}
	at = (size_t)(props.p - cat->buf);	/* its '{' */
	sb_add(out, cat->buf, at + 1);
	while (json_object_next(&props, &pos, &k, &e)) {
		struct sb nm = SB_INIT;
		const struct lover *o;

		json_string_decode(&k, &nm);
		if (nm.buf && !is_gone(ls, nm.buf)) {
			if (n++)
				sb_adds(out, ", ");
			if ((o = over_of(ls, nm.buf)) != NULL) {
				used[o - ls->over] = 1;
				sb_add(out, k.p, k.len);
				sb_adds(out, ": ");
				sb_adds(out, o->prop);
			} else {
				sb_add(out, k.p, (size_t)(e.p + e.len - k.p));
			}
		}
		sb_free(&nm);
	}
	for (size_t i = 0; i < ls->nover; i++) {
		if (used[i])
			continue;
		if (n++)
			sb_adds(out, ", ");
		py_quotes(out, ls->over[i].name);
		sb_adds(out, ": ");
		sb_adds(out, ls->over[i].prop);
	}
	free(used);
	if (n++)
		sb_adds(out, ", ");
	sb_adds(out, "\"_sdc_deleted_at\": {\"type\": [\"null\", \"string\"], \"format\": \"date-time\"}");
	if (d->t->conf.debug_lsn)
		sb_adds(out, ", \"_sdc_lsn\": {\"type\": [\"null\", \"string\"]}");
	at = (size_t)(props.p + props.len - 1 - cat->buf);	/* its '}' */
	sb_add(out, cat->buf + at, cat->len - at);
}

static void schema_message(struct ldb *d, struct lstream *ls)
{
	struct sb *out = &d->t->out;

	sb_adds(out, "{\"type\": \"SCHEMA\", \"stream\": ");
	py_quotes(out, ls->s->dest);
	sb_adds(out, ", \"schema\": ");
	sb_add(out, ls->schema.buf, ls->schema.len);
	sb_adds(out, ", \"key_properties\": ");
	sb_add(out, ls->s->keys.buf, ls->s->keys.len);
	sb_adds(out, ", \"bookmark_properties\": [\"lsn\"]}\n");
}

/* The stream's properties (from its schema) and what LOG_BASED adds. */
static void lstream_init(struct ldb *d, struct lstream *ls)
{
	struct json_span v, props, k, e;
	size_t errpos, pos = 0;
	const char *errmsg;
	const struct sb *cat = &ls->s->schema;

	if (json_validate(cat->buf, cat->len, &v, &errpos, &errmsg) == 0 &&
	    json_object_get(&v, "properties", &props) == 1 && props.type == JSON_OBJECT) {
		while (json_object_next(&props, &pos, &k, &e)) {
			struct sb n = SB_INIT;

			json_string_decode(&k, &n);
			ls->props = xrealloc(ls->props, (ls->nprops + 1) * sizeof(*ls->props));
			ls->props[ls->nprops++] = n.buf ? sb_detach(&n) : xstrdup("");
		}
	}
	if (ls->nprops)
		qsort(ls->props, ls->nprops, sizeof(*ls->props), cmp_str);
	pos = 0;
	if (json_validate(ls->s->keys.buf, ls->s->keys.len, &v, &errpos, &errmsg) == 0 && v.type == JSON_ARRAY)
		while (json_array_next(&v, &pos, &e)) {
			struct sb n = SB_INIT;

			if (e.type != JSON_STRING)
				continue;
			json_string_decode(&e, &n);
			ls->keys = xrealloc(ls->keys, (ls->nkeys + 1) * sizeof(*ls->keys));
			ls->keys[ls->nkeys++] = n.buf ? sb_detach(&n) : xstrdup("");
		}
	if (ls->nkeys)
		qsort(ls->keys, ls->nkeys, sizeof(*ls->keys), cmp_str);
	build_schema(d, ls, &ls->schema);
	sb_adds(&ls->rec_prefix, "{\"type\": \"RECORD\", \"stream\": ");
	py_quotes(&ls->rec_prefix, ls->s->dest);
	sb_adds(&ls->rec_prefix, ", \"record\": {");
}

static void lstream_free(struct lstream *ls)
{
	sb_free(&ls->version);
	for (size_t i = 0; i < ls->nprops; i++)
		free(ls->props[i]);
	free(ls->props);
	for (size_t i = 0; i < ls->nover; i++) {
		free(ls->over[i].name);
		free(ls->over[i].prop);
	}
	free(ls->over);
	for (size_t i = 0; i < ls->ngone; i++)
		free(ls->gone[i]);
	free(ls->gone);
	for (size_t i = 0; i < ls->nkeys; i++)
		free(ls->keys[i]);
	free(ls->keys);
	sb_free(&ls->schema);
	sb_free(&ls->rec_prefix);
}

static void lrel_clear(struct lrel *r)
{
	for (size_t i = 0; i < r->ncols; i++) {
		free(r->cols[i].name);
		free(r->cols[i].type);
	}
	free(r->cols);
	r->cols = NULL;
	r->ncols = 0;
}

/* Column name's schema is prop (NULL: the catalog's again). */
static void set_over(struct lstream *ls, const char *name, const char *prop)
{
	struct lover *o = over_of(ls, name);

	if (prop == NULL) {
		if (o) {
			free(o->name);
			free(o->prop);
			memmove(o, o + 1, (size_t)(ls->over + ls->nover - o - 1) * sizeof(*o));
			ls->nover--;
		}
		return;
	}
	if (o == NULL) {
		ls->over = xrealloc(ls->over, (ls->nover + 1) * sizeof(*ls->over));
		o = &ls->over[ls->nover++];
		o->name = xstrdup(name);
		o->prop = NULL;
	}
	free(o->prop);
	o->prop = xstrdup(prop);
}

static void set_gone(struct lstream *ls, const char *name, int gone)
{
	char **g = ls->ngone ? bsearch(&name, ls->gone, ls->ngone, sizeof(*ls->gone), cmp_str) : NULL;

	if (gone && g == NULL) {
		ls->gone = xrealloc(ls->gone, (ls->ngone + 1) * sizeof(*ls->gone));
		ls->gone[ls->ngone++] = xstrdup(name);
		qsort(ls->gone, ls->ngone, sizeof(*ls->gone), cmp_str);
	} else if (!gone && g) {
		free(*g);
		memmove(g, g + 1, (size_t)(ls->gone + ls->ngone - g - 1) * sizeof(*g));
		ls->ngone--;
	}
}

static int rel_has(const struct lrel *r, const char *name)
{
	for (size_t i = 0; i < r->ncols; i++)
		if (strcmp(r->cols[i].name, name) == 0)
			return 1;
	return 0;
}

/*
 * Where each column of r goes, its type checked against the catalog's.  A
 * column the catalog lacks is added to the schema, a column whose values
 * changed kind gets its new type's schema, and, when r has every column of
 * the table (complete: pgoutput's Relation, wal2json's insert), a column
 * of the schema that r lacks was dropped: any of these sends a new SCHEMA
 * before the next record, so the lake has the table's columns as they are.
 */
static void lrel_map(struct ldb *d, struct lrel *r, int complete)
{
	struct lstream *ls = r->ls;
	struct sb now = SB_INIT;
	char at[32];

	if (ls == NULL)
		return;
	lsn_text(d->commit_lsn, at, sizeof(at));
	for (size_t i = 0; i < r->ncols; i++) {
		struct lcol *c = &r->cols[i];
		const struct column *sc = sel_col(ls, c->name);
		int arr;
		enum kind k = norm_kind(c->type, &arr);
		const char *nm = c->name;

		if (ls->nkeys)
			c->key = bsearch(&nm, ls->keys, ls->nkeys, sizeof(*ls->keys), cmp_str) != NULL;
		set_gone(ls, c->name, 0);
		if (sc) {
			int carr;
			enum kind ck = norm_kind(sc->sqltype, &carr);

			c->sel = 1;
			if (ck == k && carr == arr) {
				set_over(ls, c->name, NULL);
				c->kind = sc->kind;
				c->array = sc->array;
				continue;
			}
		} else if (is_prop(ls, c->name)) {
			c->sel = 0;	/* not selected */
			continue;
		}
		/* a column added since discovery, or retyped: its values are kept, never dropped */
		{
			struct sb prop = SB_INIT;
			const struct lover *o = over_of(ls, c->name);

			new_prop_schema(&prop, c->type);
			if (sc && (o == NULL || strcmp(o->prop, prop.buf) != 0))
				err_warn("stream '%s': column '%s' changed type from %s to %s at LSN %s: its records"
					 " follow a new SCHEMA; the rows the change rewrote are not in the change"
					 " stream (run the pipeline with --full to copy them anew)",
					 ls->s->id, c->name, sc->sqltype, c->type, at);
			set_over(ls, c->name, prop.buf);
			sb_free(&prop);
		}
		c->sel = 1;
		c->kind = k;
		c->array = arr;
	}
	if (complete) {
		for (size_t i = 0; i < ls->nprops; i++)
			if (!rel_has(r, ls->props[i]) && !is_gone(ls, ls->props[i])) {
				set_gone(ls, ls->props[i], 1);
				if (sel_col(ls, ls->props[i]))
					err_warn("stream '%s': column '%s' was dropped from the table at LSN %s: the"
						 " records follow a new SCHEMA without it", ls->s->id, ls->props[i], at);
			}
		for (size_t i = 0; i < ls->nover;)
			if (!rel_has(r, ls->over[i].name))
				set_over(ls, ls->over[i].name, NULL);
			else
				i++;
	}
	build_schema(d, ls, &now);
	if (now.len != ls->schema.len || memcmp(now.buf, ls->schema.buf, now.len) != 0) {
		sb_free(&ls->schema);
		ls->schema = now;
		schema_message(d, ls);
	} else {
		sb_free(&now);
	}
}

/* ---- records ---- */

static void ensure_vals(struct ldb *d, size_t n)
{
	if (n <= d->cap)
		return;
	d->cap = n * 2;
	d->vals = xrealloc(d->vals, d->cap * sizeof(*d->vals));
	d->olds = xrealloc(d->olds, d->cap * sizeof(*d->olds));
}

/*
 * A value as value_json() prints it; a string over BIG_VALUE written out a
 * piece at a time as it is printed (nothing after it in the record can fail),
 * so that a huge value is not held again whole as JSON text.
 */
static void put_value(struct ldb *d, const struct lcol *c, const struct cval *v)
{
	struct sb *out = &d->t->out;
	const char *f = v->p;
	size_t len = v->len;

	if (v->st != V_VAL || len <= BIG_VALUE || c->kind != K_STRING || c->array) {
		value_json(out, c->kind, c->array, v->st == V_VAL ? v->p : "", v->st == V_VAL ? v->len : 0,
			   v->st != V_VAL);
		return;
	}
	sb_addc(out, '"');
	while (len) {
		size_t cut = utf8_cut(f, len, BIG_VALUE);

		py_quote_body(out, f, cut);
		f += cut;
		len -= cut;
		flush_out(d->t, 0);	/* (a failed write is seen at the record's end) */
	}
	sb_addc(out, '"');
}

/* One RECORD: an insert or update (del 0: the selected columns there) or a delete (the key's). */
static void put_record(struct ldb *d, struct lrel *r, const struct cval *v, int del, uint64_t lsn)
{
	struct lstream *ls = r->ls;
	struct sb *out = &d->t->out;
	int n = 0;

	sb_add(out, ls->rec_prefix.buf, ls->rec_prefix.len);
	for (size_t i = 0; i < r->ncols; i++) {
		const struct lcol *c = &r->cols[i];

		if (!c->sel || (del && !c->key) || v[i].st == V_ABSENT) {
			if (!del && c->sel && v[i].st == V_ABSENT && !ls->warned_toast) {
				ls->warned_toast = 1;
				err_warn("stream '%s': an update left the large (TOASTed) value of column '%s' as it was,"
					 " and the change stream does not carry it: the record lacks the column"
					 " (ALTER TABLE %s.%s REPLICA IDENTITY FULL makes it carry every column)",
					 ls->s->id, c->name, ls->s->schema_name, ls->s->table);
			}
			continue;
		}
		if (n++)
			sb_add(out, ", ", 2);
		py_quotes(out, c->name);
		sb_add(out, ": ", 2);
		put_value(d, c, &v[i]);
	}
	if (n)
		sb_add(out, ", ", 2);
	sb_adds(out, "\"_sdc_deleted_at\": ");
	if (del) {
		sb_addc(out, '"');
		sb_add(out, d->deleted_at.buf, d->deleted_at.len);
		sb_addc(out, '"');
	} else {
		sb_adds(out, "null");
	}
	if (d->t->conf.debug_lsn)
		sb_addf(out, ", \"_sdc_lsn\": \"%llu\"", (unsigned long long)lsn);
	sb_adds(out, "}, \"version\": ");
	sb_add(out, ls->version.buf, ls->version.len);
	sb_add(out, d->suffix_tail.buf, d->suffix_tail.len);
	d->since_state++;
}

/* Whether the old key (the identity's columns in old[]) differs from the new row's. */
static int key_moved(const struct lrel *r, const struct cval *nv, const struct cval *old)
{
	for (size_t i = 0; i < r->ncols; i++) {
		if (!r->cols[i].key || old[i].st == V_ABSENT || nv[i].st == V_ABSENT)
			continue;
		if (old[i].st != nv[i].st || old[i].len != nv[i].len ||
		    (old[i].st == V_VAL && memcmp(old[i].p, nv[i].p, old[i].len) != 0))
			return 1;
	}
	return 0;
}

/*
 * A change of relation r: kind 'I', 'U' or 'D'; nv the new row (I, U), old
 * the old key or row (U: or NULL; D).  An update that moves the key is sent
 * as the old key's delete, then the new row, so that a table kept by key
 * loses the old row.  0, or EXIT_FAIL.
 */
static int change(struct ldb *d, struct lrel *r, char kind, const struct cval *nv, const struct cval *old,
		  uint64_t lsn)
{
	struct lstream *ls = r->ls;

	if (ls == NULL || d->commit_lsn < ls->lsn0)
		return 0;
	if (kind == 'D') {
		put_record(d, r, old, 1, lsn);
	} else {
		if (kind == 'U' && old && key_moved(r, nv, old))
			put_record(d, r, old, 1, lsn);
		put_record(d, r, nv, 0, lsn);
	}
	return flush_out(d->t, OUT_CHUNK) ? EXIT_FAIL : 0;
}

static int truncated(struct ldb *d, struct lstream *ls)
{
	char at[32];
	struct sb what = SB_INIT;
	int rc;

	if (ls == NULL || d->commit_lsn < ls->lsn0)
		return 0;
	lsn_text(d->commit_lsn, at, sizeof(at));
	sb_addf(&what, "cannot replicate: the table was truncated at LSN %s", at);
	rc = lfail(d, ls, NULL, NULL, what.buf, "run the pipeline with --full to copy the table anew");
	sb_free(&what);
	return rc;
}

static void begin_txn(struct ldb *d, uint64_t commit_lsn, long long commit_us)
{
	d->in_txn = 1;
	d->commit_lsn = commit_lsn;
	d->commit_us = commit_us;
	sb_reset(&d->deleted_at);
	if (d->t->conf.message_format == 2)
		iso_utc(&d->deleted_at, commit_us);
	else
		sb_add(&d->deleted_at, d->deleted_run.buf, d->deleted_run.len);
}

static void write_bookmarks(struct ldb *d)
{
	char b[32];

	for (size_t i = 0; i < d->nls; i++) {
		struct lstream *ls = &d->ls[i];

		if (d->pos > ls->lsn)
			ls->lsn = d->pos;
		snprintf(b, sizeof(b), "%llu", (unsigned long long)ls->lsn);
		state_write(&d->t->state, ls->s->id, "lsn", b, strlen(b));
	}
}

/* A transaction's end at end_lsn: the bookmark moves; a STATE now and then. */
static int end_txn(struct ldb *d, uint64_t end_lsn)
{
	long long ms;

	d->in_txn = 0;
	if (end_lsn > d->pos)
		d->pos = end_lsn;
	if (d->since_state == 0)
		return 0;
	ms = now_ms();
	if (d->since_state < STATE_RECORDS && ms - d->last_state_ms < STATE_MS)
		return 0;
	write_bookmarks(d);
	state_message(&d->t->state, &d->t->out);
	d->since_state = 0;
	d->last_state_ms = ms;
	return flush_out(d->t, OUT_CHUNK) ? EXIT_FAIL : 0;
}

/* ---- pgoutput ---- */

struct rd {
	const unsigned char *p, *end;
	int bad;
};

static uint64_t rd64(struct rd *r)
{
	uint64_t v = 0;

	if (r->end - r->p < 8) {
		r->bad = 1;
		return 0;
	}
	for (int i = 0; i < 8; i++)
		v = v << 8 | *r->p++;
	return v;
}

static uint32_t rd32(struct rd *r)
{
	uint32_t v;

	if (r->end - r->p < 4) {
		r->bad = 1;
		return 0;
	}
	v = bin_be32(r->p);
	r->p += 4;
	return v;
}

static unsigned rd16(struct rd *r)
{
	unsigned v;

	if (r->end - r->p < 2) {
		r->bad = 1;
		return 0;
	}
	v = bin_be16(r->p);
	r->p += 2;
	return v;
}

static int rd8(struct rd *r)
{
	if (r->p >= r->end) {
		r->bad = 1;
		return 0;
	}
	return *r->p++;
}

static const char *rdstr(struct rd *r)
{
	const unsigned char *z = memchr(r->p, '\0', (size_t)(r->end - r->p));
	const char *s = (const char *)r->p;

	if (z == NULL) {
		r->bad = 1;
		return "";
	}
	r->p = z + 1;
	return s;
}

static struct lrel *rel_by_id(struct ldb *d, uint32_t relid)
{
	for (size_t i = 0; i < d->nrels; i++)
		if (d->rels[i].relid == relid)
			return &d->rels[i];
	return NULL;
}

static struct lstream *stream_of(struct ldb *d, const char *schema, size_t sl, const char *table, size_t tl)
{
	for (size_t i = 0; i < d->nls; i++) {
		struct stream *s = d->ls[i].s;

		if (strlen(s->schema_name) == sl && memcmp(s->schema_name, schema, sl) == 0 &&
		    strlen(s->table) == tl && memcmp(s->table, table, tl) == 0)
			return &d->ls[i];
	}
	return NULL;
}

/* pgoutput's Relation: the table's columns, their types named by the server. */
static int pg_relation(struct ldb *d, struct rd *r)
{
	uint32_t relid = rd32(r);
	const char *nsp = rdstr(r), *name = rdstr(r);
	struct lrel *rel;
	struct sb sql = SB_INIT;
	PGresult *res = NULL;
	unsigned n;
	int rc = 0;

	rd8(r);		/* replica identity */
	n = rd16(r);
	if (r->bad)
		return -1;
	if ((rel = rel_by_id(d, relid)) == NULL) {
		d->rels = xrealloc(d->rels, (d->nrels + 1) * sizeof(*d->rels));
		rel = &d->rels[d->nrels++];
		memset(rel, 0, sizeof(*rel));
		rel->relid = relid;
	}
	lrel_clear(rel);
	rel->ls = stream_of(d, nsp, strlen(nsp), name, strlen(name));
	rel->cols = xcalloc(n ? n : 1, sizeof(*rel->cols));
	rel->ncols = n;
	sb_adds(&sql, "SELECT format_type(o, m) FROM unnest(ARRAY[0");
	for (unsigned i = 0; i < n; i++) {
		struct lcol *c = &rel->cols[i];
		uint32_t oid, mod;

		c->key = rd8(r) & 1;
		c->name = xstrdup(rdstr(r));
		oid = rd32(r);
		mod = rd32(r);
		sb_addf(&sql, ",%u", oid);
		c->type = (char *)(uintptr_t)(size_t)mod;	/* for now: the modifier */
	}
	if (r->bad)
		goto bad;
	sb_adds(&sql, "]::oid[], ARRAY[0");
	for (unsigned i = 0; i < n; i++)
		sb_addf(&sql, ",%d", (int32_t)(uint32_t)(uintptr_t)rel->cols[i].type);
	sb_adds(&sql, "]) WITH ORDINALITY AS x(o, m, i) WHERE i > 1 ORDER BY i");
	for (unsigned i = 0; i < n; i++)
		rel->cols[i].type = NULL;
	if (rel->ls == NULL)
		goto out;
	res = PQexec(d->q, sql.buf);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != (int)n) {
		rc = lfail(d, rel->ls, d->q, res, "cannot read the types of a table's columns", NULL);
		goto out;
	}
	for (unsigned i = 0; i < n; i++)
		rel->cols[i].type = xstrdup(PQgetvalue(res, (int)i, 0));
	lrel_map(d, rel, 1);
out:
	for (unsigned i = 0; i < n; i++)
		if (rel->cols[i].type == NULL)
			rel->cols[i].type = xstrdup("");
	PQclear(res);
	sb_free(&sql);
	return rc;
bad:
	for (unsigned i = 0; i < n; i++)
		rel->cols[i].type = NULL;
	lrel_clear(rel);
	sb_free(&sql);
	return -1;
}

/* pgoutput's TupleData into v[0..rel->ncols). */
static int pg_tuple(struct rd *r, const struct lrel *rel, struct cval *v)
{
	unsigned n = rd16(r);

	if (r->bad || n != rel->ncols)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		int k = rd8(r);

		v[i].p = NULL;
		v[i].len = 0;
		if (k == 'n') {
			v[i].st = V_NULL;
		} else if (k == 'u') {
			v[i].st = V_ABSENT;
		} else if (k == 't') {
			uint32_t len = rd32(r);

			if (r->bad || (size_t)(r->end - r->p) < len)
				return -1;
			v[i].st = V_VAL;
			v[i].p = (const char *)r->p;
			v[i].len = len;
			r->p += len;
		} else {
			return -1;
		}
	}
	return r->bad ? -1 : 0;
}

/* One pgoutput message (protocol 1) at lsn.  0, EXIT_FAIL, or -1: not as expected. */
static int pgoutput_msg(struct ldb *d, const unsigned char *p, size_t n, uint64_t lsn)
{
	struct rd r = { p + 1, p + n, 0 };
	struct lrel *rel;
	int rc, k;

	if (n == 0)
		return -1;
	switch (p[0]) {
	case 'B': {
		uint64_t final = rd64(&r);
		long long ts = (long long)rd64(&r);

		if (r.bad)
			return -1;
		begin_txn(d, final, ts + PG_EPOCH * 1000000);
		return 0;
	}
	case 'C': {
		uint64_t end;

		rd8(&r);
		rd64(&r);
		end = rd64(&r);
		return r.bad ? -1 : end_txn(d, end);
	}
	case 'R':
		return pg_relation(d, &r);
	case 'I': case 'U': case 'D': {
		int have_old = 0, full = 0;

		rel = rel_by_id(d, rd32(&r));
		if (rel == NULL || r.bad)
			return -1;
		if (rel->ls == NULL || d->commit_lsn < rel->ls->lsn0)
			return 0;
		ensure_vals(d, rel->ncols + 1);
		k = rd8(&r);
		if (p[0] != 'I' && (k == 'K' || k == 'O')) {
			if (pg_tuple(&r, rel, d->olds) < 0)
				return -1;
			have_old = 1;
			full = k == 'O';
			k = p[0] == 'U' ? rd8(&r) : 0;
		}
		if (p[0] != 'D') {
			if (k != 'N' || pg_tuple(&r, rel, d->vals) < 0)
				return -1;
		}
		if (p[0] == 'D' && !have_old)
			return -1;
		if (p[0] == 'U' && full) {
			/* an unchanged TOASTed value is in the old row of REPLICA IDENTITY FULL */
			for (size_t i = 0; i < rel->ncols; i++)
				if (d->vals[i].st == V_ABSENT && d->olds[i].st != V_ABSENT)
					d->vals[i] = d->olds[i];
		}
		return change(d, rel, (char)p[0], d->vals, have_old ? d->olds : NULL, lsn);
	}
	case 'T': {
		uint32_t nrel = rd32(&r);

		rd8(&r);
		for (uint32_t i = 0; i < nrel && !r.bad; i++) {
			rel = rel_by_id(d, rd32(&r));
			if (rel && (rc = truncated(d, rel->ls)) != 0)
				return rc;
		}
		return r.bad ? -1 : 0;
	}
	default:
		/* Origin, Type, Message: nothing to send */
		return 0;
	}
}

/* ---- wal2json (format 2) ---- */

/* The text of a wal2json value: a string decoded (at an offset of scratch), else as printed. */
static void w2j_val(struct ldb *d, const struct json_span *v, struct cval *c)
{
	c->p = NULL;
	c->off = (size_t)-1;
	if (v->type == JSON_NULL || v->type == JSON_NONE) {
		c->st = V_NULL;
		c->len = 0;
		return;
	}
	c->st = V_VAL;
	if (v->type == JSON_STRING && v->len > BIG_VALUE) {
		/* decoded in place by w2j_fix(), not copied: a huge value is held once */
		c->p = v->p;
		c->len = v->len;
		c->off = W2J_IN_PLACE;
	} else if (v->type == JSON_STRING) {
		size_t at = d->scratch.len;

		json_string_decode(v, &d->scratch);
		c->off = at;
		c->len = d->scratch.len - at;
	} else {
		c->p = v->p;
		c->len = v->len;
	}
}

/*
 * The values' text where w2j_val() left it: in the scratch buffer, or a big
 * string decoded in place in the message (once: a value of v that is one of
 * done[], already fixed, is taken from there).
 */
static void w2j_fix(struct ldb *d, struct cval *v, const struct cval *done, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (v[i].st != V_VAL || v[i].off == (size_t)-1 || v[i].off == W2J_DONE)
			continue;
		if (v[i].off != W2J_IN_PLACE) {
			v[i].p = d->scratch.buf + v[i].off;
		} else if (done && done[i].st == V_VAL && done[i].off == W2J_DONE && done[i].p == v[i].p) {
			v[i] = done[i];
		} else {
			char *lit = d->w2j_msg + (v[i].p - d->w2j_msg);

			v[i].len = json_string_decode_in_place(lit, v[i].len);
			v[i].p = lit;
			v[i].off = W2J_DONE;
		}
	}
}

/*
 * The columns of a wal2json change (an array of {"name", "type", "value"})
 * against rel's: rel remapped when they differ from the last change's.
 */
static int w2j_layout(struct ldb *d, struct lrel *rel, const struct json_span *cols, int complete)
{
	struct json_span el, nm, ty;
	size_t pos = 0, start = d->scratch.len;

	while (json_array_next(cols, &pos, &el)) {
		if (json_object_get(&el, "name", &nm) != 1 || json_object_get(&el, "type", &ty) != 1)
			return -1;
		sb_add(&d->scratch, nm.p, nm.len);
		sb_add(&d->scratch, ty.p, ty.len);
	}
	if (rel->sig.len == d->scratch.len - start &&
	    memcmp(rel->sig.buf, d->scratch.buf + start, rel->sig.len) == 0) {
		d->scratch.len = start;
		return 0;
	}
	sb_reset(&rel->sig);
	sb_add(&rel->sig, d->scratch.buf + start, d->scratch.len - start);
	d->scratch.len = start;
	lrel_clear(rel);
	pos = 0;
	while (json_array_next(cols, &pos, &el)) {
		struct sb a = SB_INIT, b = SB_INIT;

		json_object_get(&el, "name", &nm);
		json_object_get(&el, "type", &ty);
		json_string_decode(&nm, &a);
		json_string_decode(&ty, &b);
		rel->cols = xrealloc(rel->cols, (rel->ncols + 1) * sizeof(*rel->cols));
		memset(&rel->cols[rel->ncols], 0, sizeof(*rel->cols));
		rel->cols[rel->ncols].name = a.buf ? sb_detach(&a) : xstrdup("");
		rel->cols[rel->ncols].type = b.buf ? sb_detach(&b) : xstrdup("");
		rel->ncols++;
	}
	lrel_map(d, rel, complete);
	return 0;
}

/* The values of cols (wal2json's columns or identity) into v, by rel's column names. */
static void w2j_values(struct ldb *d, const struct lrel *rel, const struct json_span *cols, struct cval *v,
		       int key)
{
	struct json_span el, nm, val;
	size_t pos = 0, i = 0;

	for (size_t j = 0; j < rel->ncols; j++)
		v[j].st = V_ABSENT;
	while (json_array_next(cols, &pos, &el)) {
		if (json_object_get(&el, "name", &nm) != 1)
			continue;
		/* the columns come in the table's order: look from where the last one was */
		for (size_t tries = 0; tries < rel->ncols; tries++, i = (i + 1) % rel->ncols)
			if (json_string_equal(&nm, rel->cols[i].name, 0))
				break;
		if (rel->ncols == 0 || !json_string_equal(&nm, rel->cols[i].name, 0))
			continue;
		if (json_object_get(&el, "value", &val) != 1)
			val.type = JSON_NULL;
		w2j_val(d, &val, &v[i]);
		if (key)
			rel->cols[i].key = 1;
	}
}

static struct lrel *w2j_rel(struct ldb *d, struct lstream *ls)
{
	for (size_t i = 0; i < d->nrels; i++)
		if (d->rels[i].ls == ls)
			return &d->rels[i];
	d->rels = xrealloc(d->rels, (d->nrels + 1) * sizeof(*d->rels));
	memset(&d->rels[d->nrels], 0, sizeof(*d->rels));
	d->rels[d->nrels].ls = ls;
	return &d->rels[d->nrels++];
}

static int wal2json_msg(struct ldb *d, char *p, size_t n, uint64_t wal_lsn)
{
	static const char *const keys[] = { "action", "timestamp", "lsn", "nextlsn", "schema", "table",
					    "columns", "identity" };
	struct json_span v[8], whole, action;
	struct sb sch = SB_INIT, tab = SB_INIT;
	struct lstream *ls;
	struct lrel *rel;
	size_t errpos;
	const char *errmsg;
	uint64_t lsn = wal_lsn;
	long long us = 0;
	char a;
	int rc = 0;

	if (json_validate_members(p, n, keys, 8, v, &whole, &errpos, &errmsg) < 0 ||
	    v[0].type != JSON_STRING || v[0].len != 3)
		return -1;
	action = v[0];
	a = action.p[1];
	if (v[2].type == JSON_STRING)
		lsn_parse(v[2].p + 1, v[2].len - 2, &lsn);
	switch (a) {
	case 'B':
		if (v[1].type == JSON_STRING)
			parse_ts(v[1].p + 1, v[1].len - 2, &us);
		begin_txn(d, lsn, us);
		return 0;
	case 'C': {
		uint64_t end = wal_lsn;

		if (v[3].type == JSON_STRING)
			lsn_parse(v[3].p + 1, v[3].len - 2, &end);
		return end_txn(d, end);
	}
	case 'I': case 'U': case 'D': case 'T':
		break;
	default:
		return 0;
	}
	if (v[4].type != JSON_STRING || v[5].type != JSON_STRING)
		return -1;
	json_string_decode(&v[4], &sch);
	json_string_decode(&v[5], &tab);
	ls = stream_of(d, sch.buf ? sch.buf : "", sch.len, tab.buf ? tab.buf : "", tab.len);
	sb_free(&sch);
	sb_free(&tab);
	if (ls == NULL || d->commit_lsn < ls->lsn0)
		return 0;
	if (a == 'T')
		return truncated(d, ls);
	rel = w2j_rel(d, ls);
	sb_reset(&d->scratch);
	d->w2j_msg = p;
	if (a != 'D') {
		if (v[6].type != JSON_ARRAY)
			return -1;
		/* an insert has every column; an update lacks the large values it left as they were */
		if ((rc = w2j_layout(d, rel, &v[6], a == 'I')) != 0)
			return rc;
	} else if (rel->ncols == 0) {
		/* a delete before any insert or update: the layout from the identity */
		if (v[7].type != JSON_ARRAY)
			return -1;
		if ((rc = w2j_layout(d, rel, &v[7], 0)) != 0)
			return rc;
		sb_reset(&rel->sig);	/* not the whole row's */
	}
	ensure_vals(d, rel->ncols + 1);
	for (size_t i = 0; i < rel->ncols && ls->nkeys == 0; i++)
		rel->cols[i].key = 0;
	if (a != 'D')
		w2j_values(d, rel, &v[6], d->vals, 0);
	if (v[7].type == JSON_ARRAY)
		w2j_values(d, rel, &v[7], d->olds, ls->nkeys == 0);
	else if (a == 'D')
		return -1;
	if (a == 'U' && v[7].type == JSON_ARRAY)
		for (size_t i = 0; i < rel->ncols; i++)
			if (d->vals[i].st == V_ABSENT && d->olds[i].st != V_ABSENT)
				d->vals[i] = d->olds[i];
	if (v[7].type == JSON_ARRAY)
		w2j_fix(d, d->olds, NULL, rel->ncols);
	if (a != 'D')
		w2j_fix(d, d->vals, v[7].type == JSON_ARRAY ? d->olds : NULL, rel->ncols);
	return change(d, rel, a, d->vals, v[7].type == JSON_ARRAY ? d->olds : NULL, lsn);
}

/* ---- the slot, the publication ---- */

static PGresult *q_exec(struct ldb *d, const char *sql, const char *p1, const char *p2)
{
	const char *params[2] = { p1, p2 };

	return PQexecParams(d->q, sql, p2 ? 2 : p1 ? 1 : 0, NULL, params, NULL, NULL, 0);
}

/* tap-postgres's slot name rule: "stitch_<dbname>", then "stitch"; made as the first. */
static int find_slot(struct ldb *d, char **plugin, char **status, int *active, uint64_t *confirmed)
{
	const char *names[2];
	char *first = NULL;
	int rc = 0;

	if (d->t->conf.slot) {
		names[0] = d->t->conf.slot;
		names[1] = NULL;
	} else {
		struct sb s = SB_INIT;

		sb_adds(&s, "stitch_");
		/* a slot's name holds only a-z, 0-9 and _ */
		for (const char *p = d->dbname; *p; p++)
			sb_addc(&s, (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ? *p
				: (*p >= 'A' && *p <= 'Z') ? (char)(*p + 32) : '_');
		first = sb_detach(&s);
		names[0] = first;
		names[1] = "stitch";
	}
	*plugin = *status = NULL;
	for (int i = 0; i < 2 && names[i]; i++) {
		PGresult *res = q_exec(d, "SELECT plugin, coalesce(wal_status, ''), active_pid IS NOT NULL,"
				       " coalesce(confirmed_flush_lsn::text, '0/0') FROM pg_replication_slots"
				       " WHERE slot_name = $1 AND database = current_database()", names[i], NULL);

		if (PQresultStatus(res) != PGRES_TUPLES_OK) {
			rc = lfail(d, NULL, d->q, res, "cannot read the replication slots", NULL);
			PQclear(res);
			break;
		}
		if (PQntuples(res) == 1) {
			d->slot = xstrdup(names[i]);
			*plugin = xstrdup(PQgetvalue(res, 0, 0));
			*status = xstrdup(PQgetvalue(res, 0, 1));
			*active = PQgetvalue(res, 0, 2)[0] == 't';
			lsn_parse(PQgetvalue(res, 0, 3), strlen(PQgetvalue(res, 0, 3)), confirmed);
			PQclear(res);
			break;
		}
		PQclear(res);
	}
	if (d->slot == NULL && rc == 0)
		d->slot = xstrdup(names[0]);
	free(first);
	return rc;
}

/* The publication pgoutput reads, holding the streams' tables (added when add). */
static int ensure_publication(struct ldb *d, struct lstream **add, size_t nadd, int check_all)
{
	PGresult *res;
	struct sb sql = SB_INIT, name = SB_INIT;
	int rc = 0, exists, all;
	char *pub;

	free(d->publication);
	d->publication = xstrdup(d->t->conf.publication ? d->t->conf.publication : d->slot);
	res = q_exec(d, "SELECT puballtables FROM pg_publication WHERE pubname = $1", d->publication, NULL);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = lfail(d, NULL, d->q, res, "cannot read the publications", NULL);
		PQclear(res);
		return rc;
	}
	exists = PQntuples(res) == 1;
	all = exists && PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	if (all)
		return 0;
	pub = PQescapeIdentifier(d->q, d->publication, strlen(d->publication));
	for (size_t i = 0; i < d->nls && check_all; i++) {
		struct lstream *ls = &d->ls[i];
		int in;

		{
			const char *params[3] = { d->publication, ls->s->schema_name, ls->s->table };

			res = PQexecParams(d->q, "SELECT 1 FROM pg_publication_tables WHERE pubname = $1"
					   " AND schemaname = $2 AND tablename = $3", 3, NULL, params, NULL, NULL, 0);
		}
		in = PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1;
		PQclear(res);
		if (!in) {
			struct sb todo = SB_INIT;

			sb_addf(&todo, "its changes since were not published; add it (ALTER PUBLICATION %s ADD TABLE"
				" %s.%s) and run the pipeline with --full", pub, ls->s->schema_name, ls->s->table);
			sb_reset(&sql);
			sb_addf(&sql, "cannot replicate: the table is not in publication '%s'", d->publication);
			rc = lfail(d, ls, NULL, NULL, sql.buf, todo.buf);
			sb_free(&todo);
			goto out;
		}
	}
	for (size_t i = 0; i < nadd; i++) {
		sb_reset(&name);
		{
			char *a = PQescapeIdentifier(d->q, add[i]->s->schema_name, strlen(add[i]->s->schema_name));
			char *b = PQescapeIdentifier(d->q, add[i]->s->table, strlen(add[i]->s->table));

			sb_addf(&name, "%s.%s", a ? a : "\"\"", b ? b : "\"\"");
			PQfreemem(a);
			PQfreemem(b);
		}
		{
			/* a table without an identity would refuse its own updates and deletes once published */
			char *lit = PQescapeLiteral(d->q, name.buf, name.len);

			sb_reset(&sql);
			sb_addf(&sql, "SELECT c.relreplident = 'f' OR (c.relreplident = 'd' AND EXISTS (SELECT 1"
				" FROM pg_index i WHERE i.indrelid = c.oid AND i.indisprimary)) OR c.relreplident = 'i'"
				" FROM pg_class c WHERE c.oid = %s::regclass", lit ? lit : "''");
			PQfreemem(lit);
			res = PQexec(d->q, sql.buf);
			if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1 ||
			    PQgetvalue(res, 0, 0)[0] != 't') {
				struct sb todo = SB_INIT;

				sb_addf(&todo, "add a primary key, or run ALTER TABLE %s REPLICA IDENTITY FULL", name.buf);
				rc = lfail(d, add[i], d->q, PQresultStatus(res) == PGRES_TUPLES_OK ? NULL : res,
					   "cannot replicate: the table has no primary key nor replica identity, and"
					   " publishing it would make the server refuse its updates and deletes", todo.buf);
				sb_free(&todo);
				PQclear(res);
				goto out;
			}
			PQclear(res);
		}
		sb_reset(&sql);
		if (!exists) {
			sb_addf(&sql, "CREATE PUBLICATION %s FOR TABLE %s", pub ? pub : "\"\"", name.buf);
			exists = 1;
		} else {
			const char *params[3] = { d->publication, add[i]->s->schema_name, add[i]->s->table };

			res = PQexecParams(d->q, "SELECT 1 FROM pg_publication_tables WHERE pubname = $1"
					   " AND schemaname = $2 AND tablename = $3", 3, NULL, params, NULL, NULL, 0);
			if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
				PQclear(res);
				continue;
			}
			PQclear(res);
			sb_addf(&sql, "ALTER PUBLICATION %s ADD TABLE %s", pub ? pub : "\"\"", name.buf);
		}
		res = PQexec(d->q, sql.buf);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			struct sb todo = SB_INIT;

			sb_addf(&todo, "as the table's owner, run: %s; or name a publication that has it in"
				" logical_publication", sql.buf);
			rc = lfail(d, add[i], d->q, res, "cannot publish the table for pgoutput", todo.buf);
			sb_free(&todo);
			PQclear(res);
			goto out;
		}
		PQclear(res);
	}
out:
	PQfreemem(pub);
	sb_free(&sql);
	sb_free(&name);
	return rc;
}

/* A replication connection (replication=database) to the stream's database. */
static PGconn *repl_connect(struct ldb *d)
{
	const struct pgconf *c = &d->t->conf;
	const char *keys[14], *vals[14];
	PGconn *conn;
	int n = 0;

	keys[n] = "host"; vals[n++] = c->host;
	keys[n] = "port"; vals[n++] = c->port;
	keys[n] = "user"; vals[n++] = c->user;
	keys[n] = "dbname"; vals[n++] = d->dbname;
	if (c->password) {
		keys[n] = "password"; vals[n++] = c->password;
	}
	if (c->sslmode) {
		keys[n] = "sslmode"; vals[n++] = c->sslmode;
	}
	keys[n] = "replication"; vals[n++] = "database";
	keys[n] = "connect_timeout"; vals[n++] = "30";
	keys[n] = "client_encoding"; vals[n++] = "UTF8";
	keys[n] = "application_name"; vals[n++] = "dataspoc-tap-postgres";
	/* the text the values are printed in, as the copy's session has it (conn.c) */
	keys[n] = "options"; vals[n++] = "-c DateStyle=ISO,MDY -c IntervalStyle=postgres -c extra_float_digits=1";
	keys[n] = NULL; vals[n] = NULL;
	conn = PQconnectdbParams(keys, vals, 0);
	if (conn == NULL || PQstatus(conn) != CONNECTION_OK) {
		const char *m = conn ? PQerrorMessage(conn) : "";

		lfail(d, NULL, conn, NULL, "cannot open a replication connection",
		      strstr(m, "replication") ? "give the user the REPLICATION attribute"
		      " (ALTER ROLE ... REPLICATION) and allow it a replication connection in pg_hba.conf" : NULL);
		PQfinish(conn);
		return NULL;
	}
	return conn;
}

/*
 * Make slot name (temporary or not) with plugin, exporting its snapshot:
 * the snapshot's name in *snap, its consistent point in *lsn.  0; 1 when
 * the plugin is not installed (quiet); or EXIT_FAIL after reporting.
 */
static int make_slot(struct ldb *d, PGconn *conn, const char *name, int temporary, const char *plugin,
		     char **snap, uint64_t *lsn)
{
	struct sb sql = SB_INIT;
	PGresult *res;
	int rc = 0;

	sb_addf(&sql, "CREATE_REPLICATION_SLOT \"%s\"%s LOGICAL %s EXPORT_SNAPSHOT", name,
		temporary ? " TEMPORARY" : "", plugin);
	res = PQexec(conn, sql.buf);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) < 3 || PQntuples(res) != 1) {
		const char *m = PQresultErrorMessage(res);

		if (strstr(m, "could not access file") && strcmp(plugin, "pgoutput") != 0)
			rc = 1;
		else if (strstr(m, "wal_level"))
			rc = lfail(d, NULL, conn, res, "cannot make the replication slot",
				   "set wal_level = logical in postgresql.conf (ALTER SYSTEM SET wal_level = logical)"
				   " and restart the server");
		else
			rc = lfail(d, NULL, conn, res, "cannot make the replication slot",
				   strstr(m, "already exists") ? "another run made it: try again" :
				   strstr(m, "all replication slots are in use") ?
				   "drop a slot no longer used, or raise max_replication_slots" : NULL);
		goto out;
	}
	*snap = xstrdup(PQgetvalue(res, 0, 2));
	lsn_parse(PQgetvalue(res, 0, 1), strlen(PQgetvalue(res, 0, 1)), lsn);
out:
	PQclear(res);
	sb_free(&sql);
	return rc;
}

/* ---- streaming ---- */

static int send_status(struct ldb *d, int reply)
{
	unsigned char b[34];
	struct timespec ts;
	uint64_t now, v[4];
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	now = (uint64_t)(((long long)ts.tv_sec - PG_EPOCH) * 1000000 + ts.tv_nsec / 1000);
	v[0] = v[1] = v[2] = d->confirm;
	v[3] = now;
	b[0] = 'r';
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 8; j++)
			b[1 + 8 * i + j] = (unsigned char)(v[i] >> (56 - 8 * j));
	b[33] = (unsigned char)reply;
	rc = PQputCopyData(d->repl, (const char *)b, sizeof(b)) == 1 && PQflush(d->repl) == 0 ? 0 : -1;
	if (rc < 0)
		lfail(d, NULL, d->repl, NULL, "cannot write to the replication connection", NULL);
	return rc;
}

static uint64_t be64(const unsigned char *p)
{
	return (uint64_t)bin_be32(p) << 32 | bin_be32(p + 4);
}

static int bad_message(struct ldb *d, uint64_t lsn)
{
	char at[32];
	struct sb what = SB_INIT;

	lsn_text(lsn, at, sizeof(at));
	sb_addf(&what, "cannot read the change stream: a %s message at LSN %s is not as expected", d->plugin, at);
	lfail(d, NULL, NULL, NULL, what.buf, NULL);
	sb_free(&what);
	return EXIT_FAIL;
}

static int start_replication(struct ldb *d)
{
	struct sb sql = SB_INIT;
	char at[32];
	PGresult *res;
	int rc = 0;

	lsn_text(d->start, at, sizeof(at));
	sb_addf(&sql, "START_REPLICATION SLOT \"%s\" LOGICAL %s", d->slot, at);
	if (strcmp(d->plugin, "pgoutput") == 0) {
		char *lit = PQescapeLiteral(d->repl, d->publication, strlen(d->publication));

		sb_addf(&sql, " (proto_version '1', publication_names %s)", lit ? lit : "''");
		PQfreemem(lit);
	} else {
		sb_adds(&sql, " (\"format-version\" '2', \"include-timestamp\" '1', \"include-lsn\" '1',"
			" \"include-types\" '1', \"include-typmod\" '1', \"add-tables\" '");
		for (size_t i = 0; i < d->nls; i++) {
			const char *parts[2] = { d->ls[i].s->schema_name, d->ls[i].s->table };

			if (i)
				sb_addc(&sql, ',');
			for (int j = 0; j < 2; j++) {
				if (j)
					sb_addc(&sql, '.');
				for (const char *p = parts[j]; *p; p++) {
					/* wal2json's escapes, then SQL's quote */
					if (*p == ',' || *p == '.' || *p == '\\' || *p == '*' || *p == ' ')
						sb_addc(&sql, '\\');
					if (*p == '\'')
						sb_addc(&sql, '\'');
					sb_addc(&sql, *p);
				}
			}
		}
		sb_adds(&sql, "')");
	}
	res = PQexec(d->repl, sql.buf);
	if (PQresultStatus(res) != PGRES_COPY_BOTH) {
		const char *m = PQresultErrorMessage(res);

		rc = lfail(d, NULL, d->repl, res, "cannot read the replication slot",
			   strstr(m, "is active for PID") ? "another reader holds the slot: stop it, or wait for it to end" :
			   strstr(m, "invalidated") || strstr(m, "exceeded the maximum reserved size") ?
			   "the server removed the WAL the slot needed; drop the slot and run the pipeline with --full" :
			   NULL);
	}
	PQclear(res);
	sb_free(&sql);
	return rc;
}

/* Read the changes until the end of the run; the bookmarks in d->pos. */
static int stream_changes(struct ldb *d)
{
	const struct pgconf *c = &d->t->conf;
	long long t0 = now_ms(), last_data = t0, last_status = 0, last_ask = 0, still_since = 0;
	double poll_s = c->poll_seconds > 0 ? c->poll_seconds : 1800;
	uint64_t last_walend = 0;
	int rc = 0, pgo = strcmp(d->plugin, "pgoutput") == 0;

	if ((rc = start_replication(d)) != 0)
		return rc;
	/* the flush position the saved state stands for: the server may free the WAL before it */
	if (send_status(d, 1) < 0)
		return EXIT_FAIL;
	last_status = last_ask = now_ms();
	for (;;) {
		char *buf = NULL;
		int n = PQgetCopyData(d->repl, &buf, 1);
		long long ms = now_ms();

		if (n == 0) {
			struct pollfd pfd = { PQsocket(d->repl), POLLIN, 0 };

			if (!d->in_txn) {
				if (c->max_run_seconds > 0 && ms - t0 >= (long long)(c->max_run_seconds * 1000))
					break;
				if (ms - last_data >= (long long)(poll_s * 1000))
					break;
				if (still_since && ms - still_since >= IDLE_MS && c->break_at_end_lsn >= 0)
					break;
			}
			if (ms - last_ask >= IDLE_MS / 4 || ms - last_status >= STATUS_MS) {
				if (send_status(d, 1) < 0)
					return EXIT_FAIL;
				last_status = last_ask = ms;
			}
			if (poll(&pfd, 1, IDLE_MS / 4) < 0 && errno != EINTR)
				return lfail(d, NULL, NULL, NULL, "cannot wait for the replication connection", NULL);
			if (PQconsumeInput(d->repl) == 0)
				return lfail(d, NULL, d->repl, NULL, "cannot read the replication connection", NULL);
			continue;
		}
		if (n == -1) {
			PGresult *res = PQgetResult(d->repl);

			rc = lfail(d, NULL, d->repl, res, "the server ended the change stream", NULL);
			PQclear(res);
			return rc;
		}
		if (n < 0)
			return lfail(d, NULL, d->repl, NULL, "cannot read the replication connection", NULL);
		if (buf[0] == 'k' && n >= 18) {
			uint64_t walend = be64((const unsigned char *)buf + 1);

			if (buf[17])
				rc = send_status(d, 0) < 0 ? EXIT_FAIL : 0;
			PQfreemem(buf);
			if (rc)
				return rc;
			if (!d->in_txn) {
				/* every transaction that committed before walend has come */
				if (walend > d->pos && walend >= d->start)
					d->pos = walend;
				if (c->break_at_end_lsn >= 0 && walend >= d->end_lsn)
					break;
				if (walend != last_walend)
					still_since = 0;
				else if (still_since == 0)
					still_since = ms;
				last_walend = walend;
			}
			continue;
		}
		if (buf[0] == 'w' && n >= 25) {
			const unsigned char *u = (const unsigned char *)buf;
			uint64_t lsn = be64(u + 1);

			last_data = ms;
			still_since = 0;
			if (!d->in_txn) {
				int stop = c->max_run_seconds > 0 && ms - t0 >= (long long)(c->max_run_seconds * 1000);

				/* a transaction that commits past the run's end waits for the next run */
				if (!stop && c->break_at_end_lsn >= 0) {
					uint64_t commit = lsn;

					if (pgo && n > 33 && u[25] == 'B')
						commit = be64(u + 26);
					stop = commit > d->end_lsn && (pgo ? u[25] == 'B' : 1);
					if (!pgo && stop) {
						/* wal2json's B holds the commit's LSN */
						struct json_span v;
						static const char *const k[] = { "lsn" };
						size_t ep;
						const char *em;
						uint64_t cl = 0;

						if (json_validate_members(buf + 25, (size_t)n - 25, k, 1, &v, NULL, &ep, &em) == 0 &&
						    v.type == JSON_STRING && lsn_parse(v.p + 1, v.len - 2, &cl) == 0)
							stop = cl > d->end_lsn;
					}
				}
				if (stop) {
					PQfreemem(buf);
					break;
				}
			}
			rc = pgo ? pgoutput_msg(d, u + 25, (size_t)n - 25, lsn)
				 : wal2json_msg(d, buf + 25, (size_t)n - 25, lsn);
			PQfreemem(buf);
			if (rc < 0)
				return bad_message(d, lsn);
			if (rc)
				return rc;
			if (ms - last_status >= STATUS_MS) {
				if (send_status(d, 0) < 0)
					return EXIT_FAIL;
				last_status = ms;
			}
			continue;
		}
		PQfreemem(buf);
	}
	return 0;
}

/* ---- a database's streams ---- */

static uint64_t bm_lsn(struct tap *t, const char *id, int *has)
{
	struct bookmark *b = state_bookmark(&t->state, id, 0);
	struct kv *kv = b ? kv_get(&b->kv, "lsn") : NULL;

	*has = kv && strcmp(kv->val.buf, "null") != 0 && strcmp(kv->val.buf, "0") != 0;
	return *has ? strtoull(kv->val.buf, NULL, 10) : 0;
}

static int bm_has(struct tap *t, const char *id, const char *key)
{
	struct bookmark *b = state_bookmark(&t->state, id, 0);
	struct kv *kv = b ? kv_get(&b->kv, key) : NULL;

	return kv && strcmp(kv->val.buf, "null") != 0 && strcmp(kv->val.buf, "0") != 0 &&
	       strcmp(kv->val.buf, "\"\"") != 0;
}

/*
 * The first copies of streams new[0..nnew) in one snapshot consistent with
 * the slot: made with it when it does not exist, else a temporary slot's.
 */
static int first_copies(struct ldb *d, struct stream **nw, size_t nnew, int slot_exists, const char *want_plugin)
{
	PGconn *conn = NULL;
	char *snap = NULL;
	uint64_t lsn = 0;
	char b[32];
	int rc = 0;

	if ((conn = repl_connect(d)) == NULL)
		return EXIT_FAIL;
	if (!slot_exists) {
		const char *plugin = want_plugin ? want_plugin : "wal2json";

		if (!want_plugin || strcmp(plugin, "pgoutput") != 0) {
			rc = make_slot(d, conn, d->slot, 0, plugin, &snap, &lsn);
			if (rc == 1 && want_plugin) {
				rc = lfail(d, NULL, NULL, NULL, "cannot make the replication slot: the server has no wal2json",
					   "install it (Debian: postgresql-15-wal2json), or set logical_plugin to pgoutput");
				goto out;
			}
			if (rc == 1) {
				err_msg("note: %s has no wal2json: slot '%s' decodes with pgoutput (logical_plugin chooses)",
					d->dbname, d->slot);
				plugin = "pgoutput";
			} else if (rc == 0 && !want_plugin) {
				err_msg("note: slot '%s' decodes with wal2json (logical_plugin chooses)", d->slot);
			}
		}
		if (strcmp(plugin, "pgoutput") == 0 && snap == NULL) {
			struct lstream **l = xcalloc(nnew, sizeof(*l));

			/* the tables in the publication before the slot starts: none of their changes missed */
			for (size_t i = 0; i < nnew; i++)
				for (size_t j = 0; j < d->nls; j++)
					if (d->ls[j].s == nw[i])
						l[i] = &d->ls[j];
			rc = ensure_publication(d, l, nnew, 0);
			free(l);
			if (rc == 0)
				rc = make_slot(d, conn, d->slot, 0, "pgoutput", &snap, &lsn);
		}
		if (rc)
			goto out;
		free(d->plugin);
		d->plugin = xstrdup(plugin);
	} else {
		char tmp[64];

		if (strcmp(d->plugin, "pgoutput") == 0) {
			struct lstream **l = xcalloc(nnew, sizeof(*l));

			for (size_t i = 0; i < nnew; i++)
				for (size_t j = 0; j < d->nls; j++)
					if (d->ls[j].s == nw[i])
						l[i] = &d->ls[j];
			rc = ensure_publication(d, l, nnew, 0);
			free(l);
			if (rc)
				goto out;
		}
		snprintf(tmp, sizeof(tmp), "dataspoc_copy_%ld", (long)getpid());
		if ((rc = make_slot(d, conn, tmp, 1, "pgoutput", &snap, &lsn)) != 0)
			goto out;
	}
	snprintf(b, sizeof(b), "%llu", (unsigned long long)lsn);
	d->t->snapshot = snap;
	for (size_t i = 0; i < nnew && rc == 0; i++) {
		state_write(&d->t->state, nw[i]->id, "lsn", b, strlen(b));
		rc = sync_stream(d->t, nw[i]);
	}
	d->t->snapshot = NULL;
out:
	free(snap);
	PQfinish(conn);
	return rc;
}

static int sync_db(struct tap *t, const char *dbname, struct stream **ss, size_t n)
{
	struct ldb d;
	struct stream **nw = xcalloc(n, sizeof(*nw));
	size_t nnew = 0, npure = 0;
	char *plugin = NULL, *status = NULL;
	int active = 0, rc = 0, has;
	uint64_t confirmed = 0;
	PGresult *res = NULL;
	struct sb why = SB_INIT;
	long long ms;

	memset(&d, 0, sizeof(d));
	d.t = t;
	d.dbname = dbname;
	d.ls = xcalloc(n, sizeof(*d.ls));
	if ((d.q = pg_connect(&t->conf, dbname, 0, NULL)) == NULL) {
		rc = EXIT_FAIL;
		goto out;
	}
	if ((rc = find_slot(&d, &plugin, &status, &active, &confirmed)) != 0)
		goto out;
	res = PQexec(d.q, "SELECT current_setting('wal_level'), pg_current_wal_lsn()::text");
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = lfail(&d, NULL, d.q, res, "cannot read the server's WAL position", NULL);
		goto out;
	}
	if (strcmp(PQgetvalue(res, 0, 0), "logical") != 0) {
		struct sb what = SB_INIT;

		sb_addf(&what, "cannot replicate: wal_level is '%s', not 'logical'", PQgetvalue(res, 0, 0));
		rc = lfail(&d, NULL, NULL, NULL, what.buf,
			   "set wal_level = logical (ALTER SYSTEM SET wal_level = logical) and restart the server");
		sb_free(&what);
		goto out;
	}
	lsn_parse(PQgetvalue(res, 0, 1), strlen(PQgetvalue(res, 0, 1)), &d.end_lsn);
	PQclear(res);
	res = NULL;
	d.plugin = plugin;
	plugin = NULL;
	if (d.plugin && t->conf.plugin && strcmp(d.plugin, t->conf.plugin) != 0) {
		struct sb what = SB_INIT;

		sb_addf(&what, "cannot replicate: the slot decodes with %s, not logical_plugin's %s", d.plugin,
			t->conf.plugin);
		rc = lfail(&d, NULL, NULL, NULL, what.buf,
			   "remove logical_plugin from the config, or name another slot in logical_slot");
		sb_free(&what);
		goto out;
	}
	if (d.plugin && strcmp(d.plugin, "wal2json") != 0 && strcmp(d.plugin, "pgoutput") != 0) {
		struct sb what = SB_INIT;

		sb_addf(&what, "cannot replicate: the slot decodes with %s, neither wal2json nor pgoutput", d.plugin);
		rc = lfail(&d, NULL, NULL, NULL, what.buf, "name another slot in logical_slot");
		sb_free(&what);
		goto out;
	}

	for (size_t i = 0; i < n; i++) {
		struct lstream *ls = &d.ls[d.nls++];
		uint64_t lsn = bm_lsn(t, ss[i]->id, &has);

		ls->s = ss[i];
		ls->lsn0 = ls->lsn = lsn;
		if (!has && bm_has(t, ss[i]->id, "xmin")) {
			rc = singer_tap_bad("state", t->state_file ? t->state_file : "-",
					    "the bookmark of '%s' has an xmin but no lsn; remove the bookmark"
					    " (or run the pipeline with --full)", ss[i]->id);
			goto out;
		}
		if (!has)
			nw[nnew++] = ss[i];
	}
	if (nnew < n && d.plugin == NULL) {
		/* (before any copy: a slot made now would hide that the changes since are lost) */
		char at[32] = "";
		struct sb what = SB_INIT;

		for (size_t i = 0; i < n; i++)
			if (d.ls[i].lsn0)
				lsn_text(d.ls[i].lsn0, at, sizeof(at));
		sb_addf(&what, "cannot replicate: the replication slot is missing (the saved state is at LSN %s)", at);
		rc = lfail(&d, NULL, NULL, NULL, what.buf,
			   "the changes since are lost to it; run the pipeline with --full to copy the tables anew"
			   " and make the slot");
		sb_free(&what);
		goto out;
	}
	/* a first copy interrupted: resumed by xmin (its changes since come with the stream) */
	for (size_t i = 0; i < n && rc == 0; i++)
		if (d.ls[i].lsn0 && bm_has(t, ss[i]->id, "xmin"))
			rc = sync_stream(t, ss[i]);
	if (rc)
		goto out;
	if (nnew && (rc = first_copies(&d, nw, nnew, d.plugin != NULL, t->conf.plugin)) != 0)
		goto out;
	/* the streams that had an lsn at the start read the changes; the new ones wait for the next run */
	for (size_t i = 0; i < d.nls; i++) {
		if (d.ls[i].lsn0 == 0)
			continue;
		if (npure != i)
			d.ls[npure] = d.ls[i];
		d.ls[npure].version = (struct sb)SB_INIT;
		npure++;
	}
	for (size_t i = npure; i < d.nls; i++)
		memset(&d.ls[i], 0, sizeof(d.ls[i]));
	d.nls = npure;
	if (npure == 0)
		goto out;
	if (status && strcmp(status, "lost") == 0) {
		struct sb todo = SB_INIT;

		sb_addf(&todo, "the WAL it needed is gone; drop it (SELECT pg_drop_replication_slot('%s')) and run"
			" the pipeline with --full", d.slot);
		rc = lfail(&d, NULL, NULL, NULL, "cannot replicate: the slot was invalidated (max_slot_wal_keep_size)",
			   todo.buf);
		sb_free(&todo);
		goto out;
	}
	if (active) {
		rc = lfail(&d, NULL, NULL, NULL, "cannot replicate: another reader holds the slot",
			   "stop it, or wait for its run to end");
		goto out;
	}
	if (strcmp(d.plugin, "pgoutput") == 0 && (rc = ensure_publication(&d, NULL, 0, 1)) != 0)
		goto out;
	d.start = d.ls[0].lsn0;
	for (size_t i = 0; i < d.nls; i++) {
		struct bookmark *b = state_bookmark(&t->state, d.ls[i].s->id, 0);
		struct kv *ver = b ? kv_get(&b->kv, "version") : NULL;

		if (ver == NULL || strcmp(ver->val.buf, "null") == 0) {
			rc = singer_tap_bad("state", t->state_file ? t->state_file : "-",
					    "the bookmark of '%s' has an lsn but no version", d.ls[i].s->id);
			goto out;
		}
		sb_add(&d.ls[i].version, ver->val.buf, ver->val.len);
		if (d.ls[i].lsn0 < d.start)
			d.start = d.ls[i].lsn0;
		lstream_init(&d, &d.ls[i]);
	}
	/* what the saved state says landed: never less than the server already has */
	d.confirm = d.start > confirmed ? d.start : confirmed;
	d.pos = d.start;
	{
		char ext[64];
		long long us;

		now_iso(ext, sizeof(ext), &us);
		sb_addf(&d.suffix_tail, ", \"time_extracted\": \"%s\"}\n", ext);
		iso_utc(&d.deleted_run, us);
	}
	for (size_t i = 0; i < d.nls; i++)
		schema_message(&d, &d.ls[i]);
	if (flush_out(t, 0) != 0) {
		rc = EXIT_FAIL;
		goto out;
	}
	if ((d.repl = repl_connect(&d)) == NULL) {
		rc = EXIT_FAIL;
		goto out;
	}
	ms = now_ms();
	d.last_state_ms = ms;
	if ((rc = stream_changes(&d)) != 0)
		goto out;
	write_bookmarks(&d);
	t->streamed++;
out:
	PQclear(res);
	PQfinish(d.repl);
	PQfinish(d.q);
	for (size_t i = 0; i < d.nrels; i++) {
		lrel_clear(&d.rels[i]);
		sb_free(&d.rels[i].sig);
	}
	free(d.rels);
	for (size_t i = 0; i < d.nls; i++)
		lstream_free(&d.ls[i]);
	free(d.ls);
	free(d.slot);
	free(d.plugin);
	free(d.publication);
	free(d.vals);
	free(d.olds);
	sb_free(&d.extracted);
	sb_free(&d.deleted_run);
	sb_free(&d.deleted_at);
	sb_free(&d.suffix_tail);
	sb_free(&d.scratch);
	sb_free(&why);
	free(plugin);
	free(status);
	free(nw);
	return rc;
}

static int cmp_db(const void *a, const void *b)
{
	const struct stream *x = *(struct stream *const *)a, *y = *(struct stream *const *)b;
	int c = strcmp(x->dbname, y->dbname);

	return c ? c : strcmp(x->id, y->id);
}

int logical_sync(struct tap *t)
{
	struct stream **ss = xcalloc(t->nsync ? t->nsync : 1, sizeof(*ss));
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < t->nsync; i++)
		if (strcmp(t->streams[i].method, "LOG_BASED") == 0)
			ss[n++] = &t->streams[i];
	/* as tap-postgres: by database, a slot each */
	qsort(ss, n, sizeof(*ss), cmp_db);
	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = i;

		while (j < n && strcmp(ss[j]->dbname, ss[i]->dbname) == 0)
			j++;
		rc = sync_db(t, ss[i]->dbname, ss + i, j - i);
		i = j;
	}
	if (rc == 0 && t->streamed) {
		state_currently(&t->state, NULL);
		state_message(&t->state, &t->out);
		rc = flush_out(t, 0) ? EXIT_FAIL : 0;
	}
	free(ss);
	return rc;
}
