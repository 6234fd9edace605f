/*
 * dataspoc-tap-postgres: a Singer tap for PostgreSQL in C, a drop-in for
 * singer-io's tap-postgres: its flags, its config, its catalog, its
 * messages and bookmarks, so a pipeline switches between the two and keeps
 * its state.  Rows are read with COPY and printed as they come (memory stays
 * flat); values are printed as tap-postgres prints them, numbers with their
 * digits.  FULL_TABLE, INCREMENTAL, and LOG_BASED (logical.c: wal2json or
 * pgoutput, the first copy in the slot's snapshot).
 * The program's files, and what each holds, are listed in tap_pg.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "sb.h"
#include "singer_tap.h"
#include "tap_pg.h"
#include "util.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif

static const char usage_line[] =
	"usage: dataspoc-tap-postgres [-d] -c config [-s state] "
	"[-p properties | --catalog catalog]\n";

static const char help_text[] =
	"Read PostgreSQL tables and print them as a Singer stream, as singer-io's\n"
	"tap-postgres does.\n"
	"\n"
	"  -c, --config FILE      the tap's config (required): {\"host\", \"port\",\n"
	"                         \"user\", \"password\", \"dbname\", \"filter_dbs\",\n"
	"                         \"filter_schemas\", \"default_replication_method\",\n"
	"                         \"ssl\", \"sslmode\", ...}\n"
	"  -s, --state FILE       resume from this Singer state (bookmarks)\n"
	"  -p, --properties FILE  the catalog with streams selected: what to sync\n"
	"      --catalog FILE     the same\n"
	"  -d, --discover         print the catalog of every reachable database\n"
	"      --about            print the tap's name and capabilities as JSON\n"
	"      --version          print the version\n"
	"  -h, --help             print this help\n"
	"\n"
	"Replication methods: FULL_TABLE, INCREMENTAL and LOG_BASED (a logical slot,\n"
	"wal_level = logical; config: logical_plugin, logical_slot,\n"
	"logical_publication, logical_poll_total_seconds, break_at_end_lsn,\n"
	"max_run_seconds, wal2json_message_format, debug_lsn).  Without a catalog,\n"
	"nothing is synced.\n"
	"Exit status: 0 success, 1 the database failed (connection, query, COPY),\n"
	"2 usage, config, state or catalog error.  See dataspoc-tap-postgres(1).\n";

static const char about_json[] =
	"{\"name\":\"dataspoc-tap-postgres\","
	"\"description\":\"Singer tap for PostgreSQL in C, a drop-in for singer-io's tap-postgres\","
	"\"version\":\"" PIPE_VERSION "\","
	"\"capabilities\":[\"discover\",\"properties\",\"state\"],"
	"\"settings\":{\"type\":\"object\",\"properties\":{"
	"\"host\":{\"type\":\"string\"},"
	"\"port\":{\"type\":\"integer\"},"
	"\"user\":{\"type\":\"string\"},"
	"\"password\":{\"type\":\"string\"},"
	"\"dbname\":{\"type\":\"string\"},"
	"\"filter_dbs\":{\"type\":\"string\"},"
	"\"filter_schemas\":{\"type\":\"string\"},"
	"\"default_replication_method\":{\"type\":\"string\","
	"\"enum\":[\"FULL_TABLE\",\"INCREMENTAL\",\"LOG_BASED\"]},"
	"\"ssl\":{\"type\":\"string\"},"
	"\"sslmode\":{\"type\":\"string\"},"
	"\"include_schemas_in_destination_stream_name\":{\"type\":\"string\"}},"
	"\"required\":[\"host\",\"user\",\"dbname\"]}}";

int flush_out(struct tap *t, size_t min)
{
	if (t->out.len < min || t->out.len == 0)
		return 0;
	if (t->write_failed || util_write_all(STDOUT_FILENO, t->out.buf, t->out.len) < 0) {
		if (!t->write_failed && errno != EPIPE)
			err_msg("cannot write 'standard output':");
		t->write_failed = 1;
		sb_reset(&t->out);
		return -1;
	}
	sb_reset(&t->out);
	return 0;
}

/*
 * tap-postgres's checks before any sync (sync_method_for_streams): a state
 * reset when the method or the key changed, the method known, the
 * replication key a synced column; then the currently_syncing stream first.
 */
static int plan_streams(struct tap *t)
{
	struct state *st = &t->state;
	struct kv *cur = kv_get(&st->top, "currently_syncing");
	struct sb q = SB_INIT;
	size_t i, keep = 0;

	for (i = 0; i < t->nstreams; i++) {
		struct stream *s = &t->streams[i];
		struct bookmark *b = state_bookmark(st, s->id, 0);
		struct kv *last = b ? kv_get(&b->kv, "last_replication_method") : NULL;

		sb_reset(&q);
		py_quotes(&q, s->method ? s->method : "");
		if (last && strcmp(last->val.buf, "null") != 0 && strcmp(last->val.buf, q.buf) != 0)
			state_reset(st, s->id);
		if (s->method && strcmp(s->method, "INCREMENTAL") == 0) {
			struct kv *rk;
			struct sb k = SB_INIT;

			b = state_bookmark(st, s->id, 0);
			rk = b ? kv_get(&b->kv, "replication_key") : NULL;
			if (s->rk)
				py_quotes(&k, s->rk);
			else
				sb_adds(&k, "null");
			if (b && !(rk ? strcmp(rk->val.buf, k.buf) == 0 : s->rk == NULL))
				state_reset(st, s->id);
			sb_free(&k);
		}
		if (s->method)
			state_write(st, s->id, "last_replication_method", q.buf, q.len);
		else
			state_write(st, s->id, "last_replication_method", "null", 4);
		if (s->method == NULL || (strcmp(s->method, "FULL_TABLE") != 0 &&
					  strcmp(s->method, "INCREMENTAL") != 0 &&
					  strcmp(s->method, "LOG_BASED") != 0)) {
			sb_free(&q);
			return singer_tap_bad("properties", t->catalog_file,
				   "stream '%s': unknown replication-method '%s' (FULL_TABLE, INCREMENTAL or LOG_BASED;"
				   " or set default_replication_method in the config)",
				   s->id, s->method ? s->method : "(none)");
		}
		if (strcmp(s->method, "LOG_BASED") == 0 && s->is_view) {
			sb_free(&q);
			return singer_tap_bad("properties", t->catalog_file,
				   "stream '%s': LOG_BASED replication is not supported for views;"
				   " use FULL_TABLE or INCREMENTAL for it", s->id);
		}
		if (s->ncols == 0) {
			err_warn("there are no columns selected for stream '%s', skipping it", s->id);
			continue;
		}
		if (strcmp(s->method, "INCREMENTAL") == 0) {
			static const char *const legal[] = { "replication_key", "replication_key_value",
							     "version", "last_replication_method" };

			if (s->rk == NULL || s->rk_col < 0) {
				sb_free(&q);
				return singer_tap_bad("properties", t->catalog_file,
					   s->rk ? "stream '%s': its replication-key '%s' is not a selected column"
						 : "stream '%s': INCREMENTAL needs a replication-key%s",
					   s->id, s->rk ? s->rk : "");
			}
			b = state_bookmark(st, s->id, 0);
			for (size_t j = 0; b && j < b->kv.n; j++) {
				size_t l;

				for (l = 0; l < 4; l++)
					if (strcmp(b->kv.v[j].key, legal[l]) == 0)
						break;
				if (l == 4) {
					sb_free(&q);
					return singer_tap_bad("state", t->state_file ? t->state_file : "-",
						   "invalid key '%s' in the bookmark of '%s'", b->kv.v[j].key, s->id);
				}
			}
		}
		if (keep != i) {
			struct stream tmp = t->streams[keep];

			t->streams[keep] = *s;
			*s = tmp;
		}
		keep++;
	}
	/* the streams skipped (no column) stay after nstreams, freed with the rest */
	sb_free(&q);
	if (cur && cur->val.buf[0] == '"') {
		for (i = 0; i < keep; i++) {
			sb_reset(&q);
			py_quotes(&q, t->streams[i].id);
			if (strcmp(q.buf, cur->val.buf) == 0 && i > 0) {
				struct stream tmp = t->streams[i];

				memmove(&t->streams[1], &t->streams[0], i * sizeof(*t->streams));
				t->streams[0] = tmp;
				break;
			}
		}
		sb_free(&q);
	}
	t->nsync = keep;
	return 0;
}

/* --about as tap-postgres prints it (Python's json.dumps, indent 2). */
static int pg_about(void *p)
{
	struct tap *t = p;
	struct json_span v;
	size_t errpos;
	const char *errmsg;

	json_validate(about_json, sizeof(about_json) - 1, &v, &errpos, &errmsg);
	py_dump_indent(&t->out, &v);
	sb_addc(&t->out, '\n');
	return flush_out(t, 0) ? EXIT_FAIL : 0;
}

static int pg_config(void *p, const struct singer_tap_args *a)
{
	struct tap *t = p;

	t->config_file = a->config;
	t->state_file = a->state;
	t->catalog_file = a->catalog ? a->catalog : a->properties;
	return load_config(t);
}

static int pg_discover(void *t)
{
	return discover(t);
}

/*
 * The catalog (none: nothing to do), the state, the checks, then each
 * stream, the LOG_BASED ones last and together (logical_sync()).
 */
static int pg_sync(void *p)
{
	struct tap *t = p;
	int rc;

	if (t->catalog_file == NULL) {
		/* as tap-postgres: no selection, nothing to do */
		err_msg("no properties were given (--properties): nothing to sync");
		return 0;
	}
	if ((rc = load_catalog(t)) != 0)
		return rc;
	if (t->state_file != NULL && (rc = load_state(t)) != 0)
		return rc;
	if ((rc = plan_streams(t)) != 0)
		return rc;
	if (getenv("DATASPOC_PIPE_PG_HOLD"))
		return split_hold(t);
	if ((rc = split_check(t)) != 0)
		return rc;
	for (size_t i = 0; i < t->nsync && rc == 0; i++)
		if (strcmp(t->streams[i].method, "LOG_BASED") != 0)
			rc = sync_stream(t, &t->streams[i]);
	if (rc == 0)
		rc = logical_sync(t);
	if (rc != 0) {
		/*
		 * As tap-postgres, which writes each message as it comes: the
		 * messages whole before the error go out (a row cut short by
		 * it does not).
		 */
		const char *nl = t->out.len ? memrchr(t->out.buf, '\n', t->out.len) : NULL;

		t->out.len = nl ? (size_t)(nl - t->out.buf) + 1 : 0;
		flush_out(t, 0);
	}
	return rc;
}

/* What is left in the buffer goes out; then the tap is freed. */
static int pg_end(void *p, int rc, int *write_failed)
{
	struct tap *t = p;

	if (rc == 0 && flush_out(t, 0) != 0)
		rc = EXIT_FAIL;
	conf_free(t);
	*write_failed = t->write_failed;
	return rc;
}

static const struct singer_tap_hooks hooks = {
	.name = "dataspoc-tap-postgres",
	.usage_line = usage_line,
	.help = help_text,
	.about = pg_about,
	.config = pg_config,
	.discover = pg_discover,
	.sync = pg_sync,
	.end = pg_end,
};

/*
 * Parse the options; with --config, sync the selected streams (or with
 * --discover, print the catalog), then check that stdout took everything.
 */
int main(int argc, char **argv)
{
	struct tap t;

	memset(&t, 0, sizeof(t));
	return singer_tap_main(argc, argv, &hooks, &t);
}
