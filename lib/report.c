/* report: run logs, status and the manifest, for people and scripts. */
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "err.h"
#include "json.h"
#include "layout.h"
#include "table.h"
#include "util.h"

/* ---- run logs ---- */

static int parse_log(const char *log, struct json_span *v);

static void list_add(char ***v, size_t *n, size_t *cap, char *s)
{
	if (*n + 1 >= *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

/* A compact log's "command": "compact" (dataspoc-pipe compact's run, not an extraction). */
static int log_is_compact(const struct json_span *v)
{
	struct json_span c;

	return json_object_get(v, "command", &c) == 1 && c.type == JSON_STRING &&
	       json_string_equal(&c, "compact", 0);
}

/* report_logs(); with until_extraction, max is ignored: the logs up to the newest that is no compact's. */
static int read_logs(struct bucket *b, const char *pipeline, size_t max, int until_extraction,
		     char ***logs, size_t *n)
{
	char *prefix = layout_log_key(pipeline, NULL);
	size_t plen = strlen(prefix), nkeys = 0, cap = 0, i;
	char **keys = NULL;
	int ret = -1;

	*logs = NULL;
	*n = 0;
	if (bucket_list(b, prefix, &keys, &nkeys) != 0)
		goto out;
	for (i = nkeys; i-- > 0 && (max == 0 || *n < max);) {
		const char *k = keys[i], *rest = k + plen;
		size_t len = strlen(k), errpos;
		struct sb text = SB_INIT, compact = SB_INIT;
		struct json_span v;
		const char *errmsg;
		int r;

		if (strchr(rest, '/') || len < plen + 6 || strcmp(k + len - 5, ".json") != 0)
			continue;
		r = bucket_get(b, k, &text);
		if (r < 0) {
			sb_free(&text);
			goto out;
		}
		if (r == 1) {
			/* deleted since the listing */
			sb_free(&text);
			continue;
		}
		if (json_validate(text.buf ? text.buf : "", text.len, &v, &errpos, &errmsg) != 0)
			v.type = JSON_NONE;
		else
			errmsg = "not a JSON object";
		if (v.type != JSON_OBJECT) {
			err_warn("skipping run log %s/%s: %s", bucket_url(b), k, errmsg);
			sb_free(&text);
			continue;
		}
		json_compact(&v, &compact);
		list_add(logs, n, &cap, sb_detach(&compact));
		if (until_extraction && !log_is_compact(&v))
			i = 0;	/* (the loop ends) */
		sb_free(&text);
	}
	if (*logs == NULL)
		*logs = xcalloc(1, sizeof(**logs));
	ret = 0;
out:
	if (ret != 0) {
		util_strv_free(*logs);
		*logs = NULL;
		*n = 0;
	}
	util_strv_free(keys);
	free(prefix);
	return ret;
}

int report_logs(struct bucket *b, const char *pipeline, size_t max, char ***logs, size_t *n)
{
	return read_logs(b, pipeline, max, 0, logs, n);
}

int report_last_extraction(struct bucket *b, const char *pipeline, char ***logs, const char **extraction,
			   const char **compact)
{
	size_t n, i;
	struct json_span v;

	*extraction = *compact = NULL;
	if (read_logs(b, pipeline, 0, 1, logs, &n) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (parse_log((*logs)[i], &v) != 0)
			continue;
		if (!log_is_compact(&v)) {
			*extraction = (*logs)[i];
			break;
		}
		if (*compact == NULL)
			*compact = (*logs)[i];
	}
	return 0;
}

/* ---- a failure kept on this machine ---- */

static char *local_failure_dir(void)
{
	return xasprintf("%s/logs", config_home());
}

int report_local_failure(const char *pipeline, const char *run_id, const char *error)
{
	char *dir = local_failure_dir(), *key = xasprintf("%s.failure.json", pipeline);
	char started[32], finished[32];
	struct bucket *b;
	struct sb log = SB_INIT;
	time_t t0 = util_run_id_time(run_id);
	int ret = -1;

	util_iso_time(t0 == -1 ? time(NULL) : t0, started, sizeof(started));
	util_iso_time(time(NULL), finished, sizeof(finished));
	sb_adds(&log, "{\"pipeline\":");
	json_quote(&log, pipeline, strlen(pipeline));
	sb_adds(&log, ",\"run_id\":");
	json_quote(&log, run_id, strlen(run_id));
	sb_addf(&log, ",\"started_at\":\"%s\",\"finished_at\":\"%s\",\"status\":\"failure\",\"error\":",
		started, finished);
	json_quote(&log, error, strlen(error));
	sb_adds(&log, ",\"logged\":\"locally\"}\n");
	b = bucket_open(dir);
	if (b && bucket_put(b, key, log.buf, log.len) == 0)
		ret = 0;
	bucket_free(b);
	sb_free(&log);
	free(key);
	free(dir);
	return ret;
}

/* A string member of a compact log, or NULL. */
static char *log_string(const char *log, const char *key)
{
	struct json_span v, m;
	size_t errpos;
	const char *errmsg;
	struct sb out = SB_INIT;

	if (log == NULL || json_validate(log, strlen(log), &v, &errpos, &errmsg) != 0 ||
	    v.type != JSON_OBJECT || json_object_get(&v, key, &m) != 1 || m.type != JSON_STRING)
		return NULL;
	json_string_decode(&m, &out);
	return sb_detach(&out);
}

/*
 * The failure kept for pipeline (compact JSON, freed by the caller) and its
 * run id in *run_id (freed by the caller), or NULL: none, or not a run log
 * of a run id (skipped with a warning, as a bucket's run log that is not
 * one: else a failure would go unseen).
 */
static char *local_failure(const char *pipeline, char **run_id)
{
	char *dir = local_failure_dir(), *path = xasprintf("%s/%s.failure.json", dir, pipeline);
	struct sb text = SB_INIT, compact = SB_INIT;
	struct json_span v;
	char *ret = NULL;
	size_t errpos;
	const char *why = NULL;

	*run_id = NULL;
	if (util_read_file(path, &text, NULL) == 0) {
		if (json_validate(text.buf ? text.buf : "", text.len, &v, &errpos, &why) != 0)
			v.type = JSON_NONE;
		else if (v.type != JSON_OBJECT)
			why = "not a JSON object";
		if (v.type == JSON_OBJECT) {
			json_compact(&v, &compact);
			*run_id = log_string(compact.buf, "run_id");
			if (*run_id && util_run_id_ok(*run_id)) {
				ret = sb_detach(&compact);
			} else {
				free(*run_id);
				*run_id = NULL;
				why = "no run_id of a run";
			}
		}
		if (why)
			err_warn("skipping the failure kept in %s: %s", path, why);
	}
	sb_free(&compact);
	sb_free(&text);
	free(path);
	free(dir);
	return ret;
}

/* Whether log a is of a later run than b: run ids sort by time; a log of the Python tool's has none: older. */
static int later_run(const char *a_id, const char *b)
{
	char *theirs = log_string(b, "run_id");
	int later = a_id && (theirs == NULL || strcmp(a_id, theirs) > 0);

	free(theirs);
	return later;
}

const char *report_newest(const char *pipeline, const char *log, char **local)
{
	char *mine = NULL, *text = local_failure(pipeline, &mine);
	const char *ret = log;

	*local = NULL;
	if (text && (log == NULL || later_run(mine, log))) {
		*local = text;
		ret = text;
	} else {
		free(text);
	}
	free(mine);
	return ret;
}

void report_logs_local(const char *pipeline, size_t max, char ***logs, size_t *n)
{
	char *mine = NULL, *text = local_failure(pipeline, &mine), *theirs;
	size_t i, at;

	if (text == NULL)
		return;
	/* where it goes, newest first; none if the bucket has its log too */
	for (at = 0; at < *n && !later_run(mine, (*logs)[at]); at++) {
		theirs = log_string((*logs)[at], "run_id");
		if (theirs && strcmp(theirs, mine) == 0)
			at = *n + 1;
		free(theirs);
	}
	if (at > *n || (max && at >= max)) {
		free(text);
		free(mine);
		return;
	}
	*logs = xrealloc(*logs, (*n + 2) * sizeof(**logs));
	for (i = *n + 1; i > at; i--)
		(*logs)[i] = (*logs)[i - 1];
	(*logs)[at] = text;
	(*n)++;
	if (max && *n > max) {
		free((*logs)[*n - 1]);
		(*logs)[--*n] = NULL;
	}
	free(mine);
}

/* ---- formatting values ---- */

/* A JSON number that is a plain non-negative integer, as a number. */
static int plain_uint(const struct json_span *v, unsigned long long *out)
{
	unsigned long long x = 0;
	size_t i;

	if (v->type != JSON_NUMBER || v->len == 0 || v->len > 19)
		return 0;
	for (i = 0; i < v->len; i++) {
		if (v->p[i] < '0' || v->p[i] > '9')
			return 0;
		x = x * 10 + (unsigned long long)(v->p[i] - '0');
	}
	*out = x;
	return 1;
}

/* A count for people: 250,000; other numbers as written; else "-". */
static void add_count(struct sb *out, const struct json_span *v)
{
	unsigned long long x;

	if (plain_uint(v, &x))
		sb_add_thousands(out, x);
	else if (v->type == JSON_NUMBER)
		sb_add(out, v->p, v->len);
	else
		sb_addc(out, '-');
}

void report_failed_count(struct sb *out, unsigned long long landed, unsigned long long read)
{
	sb_add_thousands(out, landed);
	sb_adds(out, " landed, ");
	sb_add_thousands(out, read);
	sb_adds(out, " read");
}

/*
 * A run's records for people: its count; a failed run's as
 * report_failed_count() says them, when its log says what it read
 * (obj: the log, or its stream's member).
 */
static void add_records(struct sb *out, const struct json_span *obj, const char *key)
{
	struct json_span landed = { NULL, 0, JSON_NONE }, read = { NULL, 0, JSON_NONE };
	unsigned long long l, r;

	if (obj->type != JSON_OBJECT || json_object_get(obj, key, &landed) != 1)
		landed.type = JSON_NONE;
	if (obj->type == JSON_OBJECT && json_object_get(obj, "records_read", &read) == 1 &&
	    plain_uint(&landed, &l) && plain_uint(&read, &r))
		report_failed_count(out, l, r);
	else
		add_count(out, &landed);
}

/* A duration in seconds for people: 42s, 3m05s, 2h07m; else "-". */
static void add_duration(struct sb *out, const struct json_span *v)
{
	double d;
	char *num;
	long long s;

	if (v->type != JSON_NUMBER) {
		sb_addc(out, '-');
		return;
	}
	num = xstrndup(v->p, v->len);
	d = strtod(num, NULL);
	free(num);
	if (!(d >= 0 && d < 1e12)) {
		sb_addc(out, '-');
		return;
	}
	s = (long long)(d + 0.5);
	if (s < 60)
		sb_addf(out, "%llds", s);
	else if (s < 3600)
		sb_addf(out, "%lldm%02llds", s / 60, s % 60);
	else
		sb_addf(out, "%lldh%02lldm", s / 3600, s % 3600 / 60);
}

/* A string member for people, control bytes shown as '?'; else "-". */
static void add_text(struct sb *out, const struct json_span *v)
{
	size_t start = out->len, i;

	if (v->type != JSON_STRING) {
		sb_addc(out, '-');
		return;
	}
	json_string_decode(v, out);
	for (i = start; i < out->len; i++) {
		if ((unsigned char)out->buf[i] < 0x20 || out->buf[i] == 0x7f)
			out->buf[i] = '?';
	}
}

static struct json_span member(const struct json_span *obj, const char *key)
{
	struct json_span v = { NULL, 0, JSON_NONE };

	if (obj->type != JSON_OBJECT || json_object_get(obj, key, &v) != 1)
		v.type = JSON_NONE;
	return v;
}

static int parse_log(const char *log, struct json_span *v)
{
	size_t errpos;
	const char *errmsg;

	if (json_validate(log, strlen(log), v, &errpos, &errmsg) != 0) {
		v->type = JSON_NONE;
		return -1;
	}
	return 0;
}

/*
 * The run log's members that report_log_text() and the status report show
 * (DESIGN.md, the run log), in the status report's order: each one's line
 * in the log text (NULL: none of its own), its name in the status report's
 * JSON and its column there (NULL: not in it), and how people read it.
 */
static const struct run_field {
	const char *member, *line, *name, *head;
	char align;
	void (*add)(struct sb *out, const struct json_span *v);
} run_fields[] = {
	{ "started_at", "started", "last_run", "LAST RUN", 'l', add_text },
	{ "status", NULL, "status", "STATUS", 'l', add_text },
	{ "finished_at", "finished", NULL, NULL, 0, add_text },
	{ "duration_seconds", "duration", "duration", "DURATION", 'r', add_duration },
	{ "total_records", "records", "records", "RECORDS", 'r', add_count },
	{ "records_read", NULL, "records_read", NULL, 0, add_count },
	{ "error", NULL, "error", NULL, 0, add_text },
};
#define NRUN_FIELDS (sizeof(run_fields) / sizeof(run_fields[0]))
/* The status report's columns: the pipeline, then the run fields with a head. */
#define NSTATUS_COLS 5

/* A run field of the log v for people; total_records as add_records() says it. */
static void add_field(struct sb *out, const struct run_field *f, const struct json_span *v)
{
	struct json_span m;

	if (strcmp(f->member, "total_records") == 0) {
		add_records(out, v, f->member);
		return;
	}
	m = member(v, f->member);
	f->add(out, &m);
}

/* A line of the log text: two spaces, its label in ten columns. */
static void log_line(struct sb *out, const char *label)
{
	sb_addf(out, "  %-10s", label);
}

void report_log_text(const char *log, struct sb *out)
{
	struct json_span v, m, streams, key, val;
	size_t pos = 0, i;

	parse_log(log, &v);
	sb_adds(out, "Run ");
	m = member(&v, "run_id");
	if (m.type == JSON_NONE)
		m = member(&v, "started_at");
	add_text(out, &m);
	sb_adds(out, ": ");
	m = member(&v, "status");
	add_text(out, &m);
	sb_addc(out, '\n');
	for (i = 0; i < NRUN_FIELDS; i++) {
		if (run_fields[i].line == NULL)
			continue;
		log_line(out, run_fields[i].line);
		add_field(out, &run_fields[i], &v);
		sb_addc(out, '\n');
	}
	streams = member(&v, "streams");
	while (streams.type == JSON_OBJECT && json_object_next(&streams, &pos, &key, &val)) {
		sb_adds(out, "    ");
		add_text(out, &key);
		sb_adds(out, ": ");
		add_records(out, &val, "records");
		sb_addc(out, '\n');
	}
	/* a run with checkpoints: each one, and what a failure did not commit */
	m = member(&v, "checkpoints");
	pos = 0;
	while (m.type == JSON_ARRAY && json_array_next(&m, &pos, &val)) {
		struct json_span f = member(&val, "unit");

		sb_adds(out, "  checkpoint ");
		add_count(out, &f);
		sb_adds(out, " at ");
		f = member(&val, "at");
		add_text(out, &f);
		sb_adds(out, ": ");
		f = member(&val, "records");
		add_count(out, &f);
		sb_adds(out, " records\n");
	}
	m = member(&v, "uncommitted_records");
	if (m.type == JSON_NUMBER) {
		sb_adds(out, "  not committed  ");
		add_count(out, &m);
		sb_adds(out, " records after the last checkpoint\n");
	}
	m = member(&v, "error");
	if (m.type != JSON_NONE && m.type != JSON_NULL) {
		log_line(out, "error");
		if (m.type == JSON_STRING)
			add_text(out, &m);
		else
			json_compact(&m, out);
		sb_addc(out, '\n');
	}
	/* a failure kept on this machine, the bucket having refused its log */
	m = member(&v, "logged");
	if (m.type == JSON_STRING && json_string_equal(&m, "locally", 0)) {
		struct json_span p = member(&v, "pipeline");

		log_line(out, "logged");
		sb_addf(out, "on this machine only, in %s/logs/", config_home());
		add_text(out, &p);
		sb_adds(out, ".failure.json (the bucket did not take it)\n");
	}
	/* the tap's last words, as the failure log kept them (secrets masked) */
	m = member(&v, "tap_stderr");
	pos = 0;
	while (m.type == JSON_ARRAY && json_array_next(&m, &pos, &val)) {
		log_line(out, "tap said");
		if (val.type == JSON_STRING)
			add_text(out, &val);
		else
			json_compact(&val, out);
		sb_addc(out, '\n');
	}
}

/* ---- status ---- */

/* A member as JSON, or null when absent. */
static void json_member(struct sb *out, const struct json_span *obj, const char *key)
{
	struct json_span m = member(obj, key);

	if (m.type == JSON_NONE)
		sb_adds(out, "null");
	else
		json_compact(&m, out);
}

static void status_json(const struct report_status *rows, size_t n, struct sb *out)
{
	size_t i, k;

	sb_adds(out, n ? "[\n" : "[]\n");
	for (i = 0; i < n; i++) {
		struct json_span v = { NULL, 0, JSON_NONE };

		sb_adds(out, "  {\"name\":");
		json_quote(out, rows[i].name, strlen(rows[i].name));
		if (!rows[i].error && rows[i].log != NULL)
			parse_log(rows[i].log, &v);
		for (k = 0; k < NRUN_FIELDS; k++) {
			const struct run_field *f = &run_fields[k];

			if (f->name == NULL)
				continue;
			sb_addf(out, ",\"%s\":", f->name);
			if (rows[i].error && rows[i].why && strcmp(f->member, "error") == 0)
				json_quote(out, rows[i].why, strlen(rows[i].why));
			else if (rows[i].error || rows[i].log == NULL)
				sb_adds(out, strcmp(f->member, "status") != 0 ? "null" :
					rows[i].error ? "\"error\"" : "\"no runs\"");
			else
				json_member(out, &v, f->member);
		}
		if (!rows[i].error && rows[i].compact != NULL && parse_log(rows[i].compact, &v) == 0) {
			sb_adds(out, ",\"last_compact\":{\"run_id\":");
			json_member(out, &v, "run_id");
			sb_adds(out, ",\"started_at\":");
			json_member(out, &v, "started_at");
			sb_adds(out, ",\"status\":");
			json_member(out, &v, "status");
			sb_addc(out, '}');
		}
		sb_addc(out, '}');
		sb_adds(out, i + 1 < n ? ",\n" : "\n]\n");
	}
}

void report_status(const struct report_status *rows, size_t n, int json, struct sb *out)
{
	const char *heads[NSTATUS_COLS] = { "PIPELINE" };
	char align[NSTATUS_COLS + 1] = "l";
	struct table t;
	size_t i, k, cols = 1;

	if (json) {
		status_json(rows, n, out);
		return;
	}
	for (k = 0; k < NRUN_FIELDS; k++) {
		if (run_fields[k].head != NULL) {
			heads[cols] = run_fields[k].head;
			align[cols++] = run_fields[k].align;
		}
	}
	table_init(&t, NSTATUS_COLS, heads, align);
	for (i = 0; i < n; i++) {
		struct sb cell[NSTATUS_COLS] = { SB_INIT, SB_INIT, SB_INIT, SB_INIT, SB_INIT };
		const char *cells[NSTATUS_COLS];
		struct json_span v;

		if (rows[i].error || rows[i].log == NULL) {
			const char *c[NSTATUS_COLS] = { rows[i].name, rows[i].error ? NULL : "never",
							rows[i].error ? "error" : NULL, NULL, NULL };

			table_add(&t, c);
			continue;
		}
		parse_log(rows[i].log, &v);
		cells[0] = rows[i].name;
		for (k = 0, cols = 1; k < NRUN_FIELDS; k++) {
			if (run_fields[k].head == NULL)
				continue;
			add_field(&cell[cols], &run_fields[k], &v);
			cells[cols] = cell[cols].buf;
			cols++;
		}
		table_add(&t, cells);
		for (k = 1; k < NSTATUS_COLS; k++)
			sb_free(&cell[k]);
	}
	table_format(&t, out);
	table_free(&t);
	/* a compact since the last extraction, which the table does not show */
	for (i = 0; i < n; i++) {
		struct json_span v, m;

		if (rows[i].error || rows[i].compact == NULL || parse_log(rows[i].compact, &v) != 0)
			continue;
		sb_addf(out, "%s: compacted since: ", rows[i].name);
		m = member(&v, "started_at");
		add_text(out, &m);
		sb_addc(out, ' ');
		m = member(&v, "status");
		add_text(out, &m);
		sb_addc(out, '\n');
	}
}

/* ---- manifest ---- */

struct mrow {
	char *name;
	struct json_span t;
};

static int cmp_mrow(const void *a, const void *b)
{
	return strcmp(((const struct mrow *)a)->name, ((const struct mrow *)b)->name);
}

int report_manifest(const char *text, size_t len, const char *origin, int json, struct sb *out)
{
	static const char *const heads[] = { "TABLE", "ROWS", "EXTRACTIONS", "LAST EXTRACTION", "COLUMNS" };
	struct json_span v, tables, key, val;
	struct mrow *rows = NULL;
	size_t errpos, pos = 0, n = 0, i;
	const char *errmsg;
	struct table t;

	if (json_validate(text, len, &v, &errpos, &errmsg) != 0) {
		err_msg("%s: byte %zu: %s", origin, errpos + 1, errmsg);
		return -1;
	}
	if (v.type != JSON_OBJECT) {
		err_msg("%s: not a JSON object", origin);
		return -1;
	}
	if (json) {
		sb_add(out, text, len);
		if (len == 0 || text[len - 1] != '\n')
			sb_addc(out, '\n');
		return 0;
	}
	tables = member(&v, "tables");
	while (tables.type == JSON_OBJECT && json_object_next(&tables, &pos, &key, &val)) {
		struct sb name = SB_INIT;

		add_text(&name, &key);
		rows = xrealloc(rows, (n + 1) * sizeof(*rows));
		rows[n].name = sb_detach(&name);
		rows[n].t = val;
		n++;
	}
	if (n > 1)
		qsort(rows, n, sizeof(*rows), cmp_mrow);
	table_init(&t, 5, heads, "lrrlr");
	for (i = 0; i < n; i++) {
		struct sb cell[4] = { SB_INIT, SB_INIT, SB_INIT, SB_INIT };
		struct json_span stats = member(&rows[i].t, "stats"), m, cols, el;
		const char *cells[5];
		size_t apos = 0, ncols = 0;
		int k;

		m = member(&stats, "total_rows");
		add_count(&cell[0], &m);
		m = member(&stats, "extractions");
		add_count(&cell[1], &m);
		m = member(&stats, "last_extraction");
		add_text(&cell[2], &m);
		cols = member(&rows[i].t, "columns");
		if (cols.type == JSON_ARRAY) {
			while (json_array_next(&cols, &apos, &el))
				ncols++;
			sb_addf(&cell[3], "%zu", ncols);
		} else {
			sb_addc(&cell[3], '-');
		}
		cells[0] = rows[i].name;
		for (k = 0; k < 4; k++)
			cells[k + 1] = cell[k].buf;
		table_add(&t, cells);
		for (k = 0; k < 4; k++)
			sb_free(&cell[k]);
		free(rows[i].name);
	}
	table_format(&t, out);
	table_free(&t);
	free(rows);
	return 0;
}

