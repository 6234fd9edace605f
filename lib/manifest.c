/* manifest: the bucket's catalog of tables, .dataspoc/manifest.json (see manifest.h). */
#include "manifest.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jv.h>

#include "err.h"
#include "json.h"
#include "jvx.h"
#include "layout.h"
#include "lock.h"
#include "util.h"

static int table_at(jv t, const char *dir);

/*
 * The widening of column name this run (the plan's "widened" list, NULL
 * or a JSON array): ,"widened":{"from":first,"to":last,"why":..,"record":n}.
 */
static void widened_json(const char *widened, const char *name, size_t len, struct sb *out)
{
	struct json_span list, el, v;
	size_t errpos, pos = 0;
	const char *errmsg;
	struct sb from = SB_INIT, to = SB_INIT, why = SB_INIT, rec = SB_INIT, col = SB_INIT;

	if (widened == NULL ||
	    json_validate(widened, strlen(widened), &list, &errpos, &errmsg) != 0 || list.type != JSON_ARRAY)
		return;
	while (json_array_next(&list, &pos, &el)) {
		sb_reset(&col);
		if (json_object_get(&el, "column", &v) != 1 || v.type != JSON_STRING)
			continue;
		json_string_decode(&v, &col);
		if (col.len != len || memcmp(col.buf, name, len) != 0)
			continue;
		if (from.len == 0 && json_object_get(&el, "from", &v) == 1 && v.type == JSON_STRING)
			json_compact(&v, &from);
		if (json_object_get(&el, "to", &v) == 1 && v.type == JSON_STRING) {
			sb_reset(&to);
			json_compact(&v, &to);
		}
		if (why.len == 0 && json_object_get(&el, "why", &v) == 1 && v.type == JSON_STRING)
			json_compact(&v, &why);
		if (rec.len == 0 && json_object_get(&el, "record", &v) == 1 && v.type == JSON_NUMBER)
			json_compact(&v, &rec);
	}
	if (from.len && to.len && why.len && rec.len)
		sb_addf(out, ",\"widened\":{\"from\":%s,\"to\":%s,\"why\":%s,\"record\":%s}",
			from.buf, to.buf, why.buf, rec.buf);
	sb_free(&from);
	sb_free(&to);
	sb_free(&why);
	sb_free(&rec);
	sb_free(&col);
}

/*
 * Columns from a SCHEMA, in the schema's order: [{"name","type","nullable"
 * [,"format"][,"parquet_type"][,"widened"]}].  types: the plan's
 * parquet_types, or NULL; its columns that are no property (the extra
 * column) come last.  widened: the plan's widened list, or NULL.
 */
static void columns_json(const char *schema, const char *types, const char *widened, struct sb *out)
{
	struct json_span obj, props, key, val, t, tobj;
	size_t errpos, pos = 0, n = 0;
	const char *errmsg;
	int have_types = types && json_validate(types, strlen(types), &tobj, &errpos, &errmsg) == 0 &&
			 tobj.type == JSON_OBJECT;

	sb_addc(out, '[');
	if (json_validate(schema, strlen(schema), &obj, &errpos, &errmsg) != 0 ||
	    json_object_get(&obj, "properties", &props) != 1 || props.type != JSON_OBJECT)
		goto done;
	while (json_object_next(&props, &pos, &key, &val)) {
		struct sb type = SB_INIT;
		int nullable = 0;

		if (val.type == JSON_OBJECT && json_object_get(&val, "type", &t) == 1) {
			if (t.type == JSON_STRING) {
				json_string_decode(&t, &type);
				nullable = strcmp(type.buf, "null") == 0;
			} else if (t.type == JSON_ARRAY) {
				struct json_span el;
				size_t apos = 0;

				while (json_array_next(&t, &apos, &el)) {
					struct sb one = SB_INIT;

					if (el.type != JSON_STRING)
						continue;
					json_string_decode(&el, &one);
					if (strcmp(one.buf, "null") == 0)
						nullable = 1;
					else if (type.len == 0)
						sb_adds(&type, one.buf);
					sb_free(&one);
				}
			}
		}
		if (type.len == 0) {
			sb_reset(&type);
			sb_adds(&type, nullable ? "null" : "any");
		}
		sb_adds(out, n++ ? ",{\"name\":" : "{\"name\":");
		json_compact(&key, out);
		sb_adds(out, ",\"type\":");
		json_quote(out, type.buf, type.len);
		sb_addf(out, ",\"nullable\":%s", nullable ? "true" : "false");
		if (val.type == JSON_OBJECT && json_object_get(&val, "format", &t) == 1 && t.type == JSON_STRING) {
			sb_adds(out, ",\"format\":");
			json_compact(&t, out);
		}
		if (have_types) {
			struct sb name = SB_INIT;

			json_string_decode(&key, &name);
			if (json_object_get(&tobj, name.buf ? name.buf : "", &t) == 1 && t.type == JSON_STRING) {
				sb_adds(out, ",\"parquet_type\":");
				json_compact(&t, out);
			}
			widened_json(widened, name.buf ? name.buf : "", name.len, out);
			sb_free(&name);
		}
		sb_addc(out, '}');
		sb_free(&type);
	}
	if (have_types) {
		/* The extra column of undeclared members. */
		pos = 0;
		while (json_object_next(&tobj, &pos, &key, &t)) {
			struct sb name = SB_INIT;

			json_string_decode(&key, &name);
			if (json_object_get(&props, name.buf ? name.buf : "", &val) != 1) {
				sb_adds(out, n++ ? ",{\"name\":" : "{\"name\":");
				json_compact(&key, out);
				sb_adds(out, ",\"type\":\"object\",\"nullable\":true,\"parquet_type\":");
				json_compact(&t, out);
				sb_addc(out, '}');
			}
			sb_free(&name);
		}
	}
done:
	sb_addc(out, ']');
}

/* The raw JSON of table t's recorded table version, or NULL. */
static char *recorded_version(jv t)
{
	jv tv = jv_object_get(jv_copy(t), jv_string("table_version"));
	char *v = NULL;

	if (jv_get_kind(tv) == JV_KIND_NUMBER || jv_get_kind(tv) == JV_KIND_STRING) {
		jv d = jv_dump_string(jv_copy(tv), 0);

		v = xstrdup(jv_string_value(d));
		jv_free(d);
	}
	jv_free(tv);
	return v;
}

/* 1 when activated (NULL: none) replaces the version table t records (see commit.c). */
static int new_version(jv t, const char *activated)
{
	char *v = activated ? recorded_version(t) : NULL;
	int r = v != NULL && strcmp(v, activated) != 0;

	free(v);
	return r;
}

/* 1 when a --full run lands table t anew in the folders of its new partition_by (see commit.c). */
static int relaid(jv t, const struct plan *p, const struct plan_stream *s)
{
	jv part;
	char *column;
	int r;

	if (!p->full)
		return 0;
	part = jvx_get(t, "partition");
	column = jvx_string(part, "column");
	r = plan_refolded(p, s, column);
	jv_free(part);
	free(column);
	return r;
}

static jv table_update(jv t, const struct plan *p, const struct plan_stream *s,
		       const char *table, const char *location, const char *now, int same_run)
{
	jv stats = jv_object_get(jv_copy(t), jv_string("stats"));
	double total, extractions, run_rows;

	if (jv_get_kind(stats) != JV_KIND_OBJECT) {
		jv_free(stats);
		stats = jv_object();
	}
	total = jvx_number(stats, "total_rows", 0);
	extractions = jvx_number(stats, "extractions", 0);
	/* a later commit unit of a run whose checkpoints are in: one extraction */
	run_rows = (double)s->records;
	if (same_run) {
		run_rows += jvx_number(stats, "last_extraction_rows", 0);
		extractions--;
	}
	if (s->has_table_rows)
		total = (double)s->table_rows;	/* upsert: what pipe-merge counted */
	else if (s->load_method && strcmp(s->load_method, "overwrite") == 0)
		total = run_rows;
	else if (s->load_method && strcmp(s->load_method, "append-only") == 0)
		total = new_version(t, s->activated) || relaid(t, p, s) ? run_rows : total + (double)s->records;
	else
		total = p->replace || new_version(t, s->activated) || relaid(t, p, s) ? run_rows :
			total + (double)s->records;
	stats = jv_object_set(stats, jv_string("total_rows"), jv_number(total));
	/* a compact extracts nothing: the table's rows are what they were */
	if (!p->compact) {
		stats = jv_object_set(stats, jv_string("extractions"), jv_number(extractions + 1));
		stats = jv_object_set(stats, jv_string("last_extraction"), jv_string(now));
		stats = jv_object_set(stats, jv_string("last_extraction_rows"), jv_number(run_rows));
	}

	t = jv_object_set(t, jv_string("source"), jv_string(p->source));
	t = jv_object_set(t, jv_string("table"), jv_string(table));
	t = jv_object_set(t, jv_string("stream"), jv_string(s->name));
	t = jv_object_set(t, jv_string("path"), jv_string(s->dir));
	t = jv_object_set(t, jv_string("location"), jv_string(location));
	if (!jv_object_has(jv_copy(t), jv_string("pipeline")))
		t = jv_object_set(t, jv_string("pipeline"), jv_string(p->pipeline));
	if (s->schema) {
		struct sb cols = SB_INIT;

		columns_json(s->schema, s->parquet_types, s->widened, &cols);
		t = jv_object_set(t, jv_string("columns"), jv_parse(cols.buf));
		sb_free(&cols);
	} else if (!jv_object_has(jv_copy(t), jv_string("columns"))) {
		t = jv_object_set(t, jv_string("columns"), jv_array());
	}
	if (s->key_properties)
		t = jv_object_set(t, jv_string("key_properties"), jv_parse(s->key_properties));
	else if (!jv_object_has(jv_copy(t), jv_string("key_properties")))
		t = jv_object_set(t, jv_string("key_properties"), jv_array());
	if (s->load_method)
		t = jv_object_set(t, jv_string("load_method"), jv_string(s->load_method));
	t = jv_object_set(t, jv_string("format"), jv_string(p->format ? p->format : "jsonl"));
	t = jv_object_set(t, jv_string("compression"), jv_string(p->compression ? p->compression : "zstd"));
	if (s->activated)
		t = jv_object_set(t, jv_string("table_version"), jv_parse(s->activated));
	/* the Hive folders of its files: partition_by's, or dt= of the run's date (kept when it lands none) */
	if (s->partition)
		t = jv_object_set(t, jv_string("partition"), jv_parse(s->partition));
	else if (plan_lands(p, s->name) || !jv_object_has(jv_copy(t), jv_string("partition")))
		t = jv_object_set(t, jv_string("partition"),
				  jv_parse("{\"by\":\"_extraction_date\",\"granularity\":\"day\",\"column\":\"dt\"}"));
	if (!p->compact || !jv_object_has(jv_copy(t), jv_string("last_extraction")))
		t = jv_object_set(t, jv_string("last_extraction"), jv_string(now));
	t = jv_object_set(t, jv_string("stats"), stats);
	t = jv_object_set(t, jv_string("last_run_id"), jv_string(p->run_id));
	if (p->unit)
		t = jv_object_set(t, jv_string("last_unit"), jv_number(p->unit));
	else
		t = jv_object_delete(t, jv_string("last_unit"));
	return t;
}

/* 1 when table t's folder is dir ("path", the key this tool writes). */
static int table_at(jv t, const char *dir)
{
	jv path = jv_object_get(jv_copy(t), jv_string("path"));
	int r = jv_get_kind(path) == JV_KIND_STRING && strcmp(jv_string_value(path), dir) == 0;

	jv_free(path);
	return r;
}

/*
 * The manifest key of the table in folder dir: the key of the table already
 * there, else "<source>/<table>" (the Python tool's key) when that is free,
 * else the folder itself: one table per folder, two paths two tables.
 */
static char *table_key(jv tables, const char *source, const char *table, const char *dir)
{
	char *key = NULL;
	jv t;

	jv_object_foreach(tables, k, v) {
		if (key == NULL && jv_get_kind(v) == JV_KIND_OBJECT && table_at(v, dir))
			key = xstrdup(jv_string_value(k));
		jv_free(k);
		jv_free(v);
	}
	if (key != NULL)
		return key;
	key = xasprintf("%s/%s", source, table);
	t = jv_object_get(jv_copy(tables), jv_string(key));
	if (jv_get_kind(t) == JV_KIND_OBJECT) {
		jv path = jv_object_get(jv_copy(t), jv_string("path"));

		/* A table of the Python tool (no path) is the one it would land here. */
		if (jv_get_kind(path) == JV_KIND_STRING) {
			free(key);
			key = xstrdup(dir);
		}
		jv_free(path);
	}
	jv_free(t);
	return key;
}

/* Another pipeline owns the folder: say so, once per table and run. */
static void check_owner(jv t, const struct plan *p, const char *dir)
{
	jv owner = jv_object_get(jv_copy(t), jv_string("pipeline"));

	if (jv_get_kind(owner) == JV_KIND_STRING && strcmp(jv_string_value(owner), p->pipeline) != 0)
		err_warn("table folder '%s' belongs to pipeline '%s': pipeline '%s' lands its files there "
			 "too; each pipeline replaces only the files it landed (give one of them another "
			 "destination.path)", dir, jv_string_value(owner), p->pipeline);
	jv_free(owner);
}

/*
 * The manifest text[0..len) as a jv object, or jv_invalid() with what is
 * wrong with it in why: it is not JSON (cut short, invalid UTF-8, a NUL),
 * not an object, or its "tables" or one of its tables is not an object.
 */
static jv manifest_parse(const char *text, size_t len, struct sb *why)
{
	struct json_span v;
	size_t errpos;
	const char *errmsg;
	jv m, tables;
	int bad = 0;

	if (len == 0) {
		sb_adds(why, "it is empty");
		return jv_invalid();
	}
	if (json_validate(text, len, &v, &errpos, &errmsg) != 0) {
		sb_addf(why, "byte %zu: %s", errpos + 1, errmsg);
		return jv_invalid();
	}
	if (v.type != JSON_OBJECT) {
		sb_adds(why, "not a JSON object");
		return jv_invalid();
	}
	m = jv_parse_sized(text, (int)len);
	if (jv_get_kind(m) != JV_KIND_OBJECT) {
		jv msg = jv_invalid_get_msg(m);

		sb_addf(why, "jq cannot read it: %s",
			jv_get_kind(msg) == JV_KIND_STRING ? jv_string_value(msg) : "not an object");
		jv_free(msg);
		return jv_invalid();
	}
	tables = jv_object_get(jv_copy(m), jv_string("tables"));
	if (jv_get_kind(tables) == JV_KIND_OBJECT) {
		jv_object_foreach(tables, k, t) {
			if (!bad && jv_get_kind(t) != JV_KIND_OBJECT) {
				sb_adds(why, "its table ");
				json_quote(why, jv_string_value(k), (size_t)jv_string_length_bytes(jv_copy(k)));
				sb_adds(why, " is not an object");
				bad = 1;
			}
			jv_free(k);
			jv_free(t);
		}
	} else if (jv_get_kind(tables) != JV_KIND_INVALID && jv_get_kind(tables) != JV_KIND_NULL) {
		sb_adds(why, "its \"tables\" is not an object");
		bad = 1;
	}
	jv_free(tables);
	if (bad) {
		jv_free(m);
		return jv_invalid();
	}
	return m;
}

/* ---- rebuilding a broken manifest from what the bucket holds ---- */

/* A run that landed files: its success log, read once. */
struct rb_run {
	char *id;
	const char *log;	/* its log's key among the listed keys, or NULL */
	jv obj;			/* the log, JV_KIND_INVALID until read or when unusable */
	int read;
};

/* A table folder holding data files, and the runs whose files are there. */
struct rb_table {
	char *dir;
	char *safe;		/* the stream's folder-safe name, as the file names give it */
	const char *format;
	const char *compression;	/* NULL: the files do not say (Parquet) */
	char **runs;
	size_t nruns;
	const char *first;	/* the earliest run counted, NULL: none */
	jv json;		/* the table for the manifest, jv_null(): none */
};

struct rebuild {
	struct rb_run *runs;
	size_t nruns;
	struct rb_table *tables;
	size_t ntables;
	size_t logs_read;	/* success logs that gave rows */
	size_t unlogged;	/* runs with files and no success log naming the stream */
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_id_run(const void *id, const void *r)
{
	return strcmp(id, ((const struct rb_run *)r)->id);
}

static struct rb_run *find_run(struct rebuild *rb, const char *id)
{
	return bsearch(id, rb->runs, rb->nruns, sizeof(*rb->runs), cmp_id_run);
}

/* The folders and runs of every data file but this run's, and the runs' logs. */
static void rb_scan(struct rebuild *rb, char **keys, size_t n, const char *run_id)
{
	size_t i, j, nids = 0;
	char **ids = NULL;

	for (i = 0; i < n; i++) {
		char *dir, *safe, *run;
		const char *format, *compression;
		struct rb_table *t = NULL;

		if (layout_data_key_split(keys[i], &dir, &safe, &run, &format, &compression) != 0)
			continue;
		if (strcmp(run, run_id) == 0) {
			/* this run's own files: the merge counts them */
			free(dir);
			free(safe);
			free(run);
			continue;
		}
		/* keys come sorted: a folder's files are together */
		if (rb->ntables > 0 && strcmp(rb->tables[rb->ntables - 1].dir, dir) == 0)
			t = &rb->tables[rb->ntables - 1];
		for (j = 0; t == NULL && j < rb->ntables; j++) {
			if (strcmp(rb->tables[j].dir, dir) == 0)
				t = &rb->tables[j];
		}
		if (t == NULL) {
			rb->tables = xrealloc(rb->tables, (rb->ntables + 1) * sizeof(*rb->tables));
			t = &rb->tables[rb->ntables++];
			memset(t, 0, sizeof(*t));
			t->dir = dir;
			t->safe = safe;
			t->format = format;
			t->compression = compression;
			t->json = jv_null();
			dir = safe = NULL;
		}
		free(dir);
		free(safe);
		/* a run's files are together too; repeats that are not go below */
		if (t->nruns > 0 && strcmp(t->runs[t->nruns - 1], run) == 0) {
			free(run);
			continue;
		}
		t->runs = xrealloc(t->runs, (t->nruns + 1) * sizeof(*t->runs));
		t->runs[t->nruns++] = run;
	}
	/* each folder's distinct runs, sorted, then every folder's */
	for (i = 0; i < rb->ntables; i++) {
		struct rb_table *t = &rb->tables[i];
		size_t kept = 0;

		if (t->nruns > 1)
			qsort(t->runs, t->nruns, sizeof(*t->runs), cmp_str);
		for (j = 0; j < t->nruns; j++) {
			if (kept > 0 && strcmp(t->runs[kept - 1], t->runs[j]) == 0) {
				free(t->runs[j]);
				continue;
			}
			t->runs[kept++] = t->runs[j];
		}
		t->nruns = kept;
		ids = xrealloc(ids, (nids + kept + 1) * sizeof(*ids));
		memcpy(ids + nids, t->runs, kept * sizeof(*ids));
		nids += kept;
	}
	if (nids > 1)
		qsort(ids, nids, sizeof(*ids), cmp_str);
	rb->runs = xcalloc(nids + 1, sizeof(*rb->runs));
	for (i = 0; i < nids; i++) {
		if (rb->nruns > 0 && strcmp(rb->runs[rb->nruns - 1].id, ids[i]) == 0)
			continue;
		rb->runs[rb->nruns].id = xstrdup(ids[i]);
		rb->runs[rb->nruns].obj = jv_invalid();
		rb->nruns++;
	}
	free(ids);
	for (i = 0; i < n; i++) {
		char *id = layout_log_run(keys[i]);
		struct rb_run *r = id ? find_run(rb, id) : NULL;

		/* a run id in two pipelines' logs: the first one listed */
		if (r != NULL && r->log == NULL)
			r->log = keys[i];
		free(id);
	}
}

/* Run r's log, when it says success; read once.  0, or -1 on a store error. */
static int rb_log(struct bucket *b, struct rb_run *r)
{
	struct sb text = SB_INIT;
	struct json_span v;
	size_t errpos;
	const char *errmsg;
	jv obj, status;
	int got;

	if (r->read || r->log == NULL)
		return 0;
	r->read = 1;
	got = bucket_get(b, r->log, &text);
	if (got != 0) {
		sb_free(&text);
		return got < 0 ? -1 : 0;
	}
	if (json_validate(text.buf, text.len, &v, &errpos, &errmsg) != 0 || v.type != JSON_OBJECT) {
		sb_free(&text);
		return 0;
	}
	obj = jv_parse_sized(text.buf, (int)text.len);
	sb_free(&text);
	status = jv_object_get(jv_copy(obj), jv_string("status"));
	if (jv_get_kind(status) == JV_KIND_STRING && strcmp(jv_string_value(status), "success") == 0) {
		jv_free(r->obj);
		r->obj = obj;
	} else {
		jv_free(obj);
	}
	jv_free(status);
	return 0;
}

/*
 * The records a success log gives the stream whose safe name is safe, and
 * its name as the tap gave it (*name, newly allocated); 0, or -1 when the
 * log names no such stream.
 */
static int log_records(jv log, const char *safe, double *records, char **name)
{
	jv streams = jv_object_get(jv_copy(log), jv_string("streams"));
	int ret = -1;

	if (jv_get_kind(streams) == JV_KIND_OBJECT) {
		jv_object_foreach(streams, k, s) {
			struct sb why = SB_INIT;
			char *sn = NULL;
			jv rec = jv_invalid();

			if (ret != 0) {
				sn = layout_stream_folder(jv_string_value(k), (size_t)jv_string_length_bytes(jv_copy(k)), &why);
				sb_free(&why);
				if (jv_get_kind(s) == JV_KIND_OBJECT)
					rec = jv_object_get(jv_copy(s), jv_string("records"));
			}
			if (sn != NULL && strcmp(sn, safe) == 0 && jv_get_kind(rec) == JV_KIND_NUMBER) {
				*records = jv_number_value(rec);
				*name = xstrdup(jv_string_value(k));
				ret = 0;
			}
			jv_free(rec);
			free(sn);
			jv_free(k);
			jv_free(s);
		}
	}
	jv_free(streams);
	return ret;
}

/*
 * Table t as the manifest would hold it after the runs whose files are in
 * its folder, as their success logs tell: rows, extractions, the last one,
 * its owner; the columns, key properties and table version no file says.
 * jv_null() when no success log names the stream.
 */
static jv rb_table_json(struct bucket *b, struct rebuild *rb, struct rb_table *t,
			const struct plan *p, int *err)
{
	double total = 0, extractions = 0, last_rows = 0;
	char *stream = NULL, *owner = NULL, *last = NULL, *finished = NULL, *location;
	const char *seg, *table;
	char *source;
	size_t i;
	jv o, stats;

	for (i = 0; i < t->nruns; i++) {
		struct rb_run *r = find_run(rb, t->runs[i]);
		double records;
		char *name;

		if (r == NULL || rb_log(b, r) != 0) {
			*err = 1;
			break;
		}
		if (jv_get_kind(r->obj) != JV_KIND_OBJECT || log_records(r->obj, t->safe, &records, &name) != 0) {
			rb->unlogged++;
			continue;
		}
		rb->logs_read++;
		total += records;
		extractions++;
		last_rows = records;
		free(stream);
		stream = name;
		if (owner == NULL) {
			/* the first pipeline to land there; its log's folder names it too */
			owner = jvx_string(r->obj, "pipeline");
			if (owner == NULL)
				owner = xstrndup(r->log + 15, (size_t)(strrchr(r->log, '/') - r->log - 15));
			t->first = r->id;
		}
		last = r->id;
		free(finished);
		finished = jvx_string(r->obj, "finished_at");
	}
	if (*err || last == NULL) {
		free(stream);
		free(owner);
		free(finished);
		return jv_null();
	}
	if (finished == NULL || util_parse_iso_time(finished) == -1) {
		char iso[32];
		time_t when = util_run_id_time(last);

		util_iso_time(when == -1 ? time(NULL) : when, iso, sizeof(iso));
		free(finished);
		finished = xstrdup(iso);
	}
	/* <path>/<source>/<table>: the folder's last two segments */
	table = strrchr(t->dir, '/') ? strrchr(t->dir, '/') + 1 : t->dir;
	for (seg = table - 1; seg > t->dir && seg[-1] != '/'; seg--)
		;
	source = table > t->dir ? xstrndup(seg, (size_t)(table - 1 - seg)) : xstrdup(table);
	location = xstrdup(t->dir);
	stats = jv_object();
	stats = jv_object_set(stats, jv_string("total_rows"), jv_number(total));
	stats = jv_object_set(stats, jv_string("extractions"), jv_number(extractions));
	stats = jv_object_set(stats, jv_string("last_extraction"), jv_string(finished));
	stats = jv_object_set(stats, jv_string("last_extraction_rows"), jv_number(last_rows));
	o = jv_object();
	o = jv_object_set(o, jv_string("source"), jv_string(source));
	o = jv_object_set(o, jv_string("table"), jv_string(table));
	o = jv_object_set(o, jv_string("stream"), jv_string(stream));
	o = jv_object_set(o, jv_string("path"), jv_string(t->dir));
	o = jv_object_set(o, jv_string("location"), jv_string(location));
	o = jv_object_set(o, jv_string("pipeline"), jv_string(owner));
	o = jv_object_set(o, jv_string("columns"), jv_array());
	o = jv_object_set(o, jv_string("key_properties"), jv_array());
	o = jv_object_set(o, jv_string("format"), jv_string(t->format));
	/* Parquet's codec is inside the files: known for this pipeline's only */
	if (t->compression)
		o = jv_object_set(o, jv_string("compression"), jv_string(t->compression));
	else if (owner && strcmp(owner, p->pipeline) == 0 && p->compression)
		o = jv_object_set(o, jv_string("compression"), jv_string(p->compression));
	o = jv_object_set(o, jv_string("last_extraction"), jv_string(finished));
	o = jv_object_set(o, jv_string("stats"), stats);
	o = jv_object_set(o, jv_string("last_run_id"), jv_string(last));
	free(location);
	free(source);
	free(stream);
	free(owner);
	free(finished);
	return o;
}

/* Folders by the first run counted in them: the first landed keeps the Python key. */
static int cmp_table(const void *a, const void *b)
{
	const struct rb_table *x = a, *y = b;

	if (x->first && y->first && strcmp(x->first, y->first) != 0)
		return strcmp(x->first, y->first);
	return strcmp(x->dir, y->dir);
}

/*
 * Keep the broken manifest text[0..len) as <manifest>.broken-<run-id> (a
 * recovery of this run finds its copy there; another content gets -2, -3...)
 * and name its key in *kept.  0 or -1.
 */
static int keep_broken(struct bucket *b, const char *run_id, const char *text, size_t len, char **kept)
{
	struct sb there = SB_INIT;
	int i, r;

	for (i = 1; i < 100; i++) {
		char *key = i == 1 ? xasprintf("%s.broken-%s", LAYOUT_MANIFEST_KEY, run_id)
				   : xasprintf("%s.broken-%s-%d", LAYOUT_MANIFEST_KEY, run_id, i);

		sb_reset(&there);
		r = bucket_get(b, key, &there);
		if (r == 1)
			r = bucket_put(b, key, text, len);
		else if (r == 0)
			r = there.len == len && (len == 0 || memcmp(there.buf, text, len) == 0) ? 0 : 1;
		if (r == 0) {
			*kept = key;
			sb_free(&there);
			return 0;
		}
		free(key);
		if (r < 0)
			break;
	}
	if (r > 0)
		err_msg("cannot keep the broken manifest aside in %s: 99 copies of run %s are there already",
			bucket_url(b), run_id);
	sb_free(&there);
	return -1;
}

/*
 * manifest.json is unreadable (text[0..len), why says how): keep it aside,
 * then rebuild its tables from the bucket — every folder of data files,
 * counted by the success run logs of the runs whose files are there (this
 * run's own are left to the merge).  *m is the new manifest, and *said the
 * warning to print once it is written.  0, or -1 on a store error only.
 */
static int manifest_rebuild(struct bucket *b, const struct plan *p, const char *text, size_t len,
			    const char *why, jv *m, struct sb *said)
{
	struct rebuild rb;
	char **keys = NULL, *kept = NULL;
	size_t n = 0, i, j, ntables = 0, others = 0;
	int err = 0, ret = -1;
	jv tables = jv_object();

	memset(&rb, 0, sizeof(rb));
	if (keep_broken(b, p->run_id, text, len, &kept) != 0 || bucket_list(b, "", &keys, &n) != 0)
		goto out;
	rb_scan(&rb, keys, n, p->run_id);
	for (i = 0; i < rb.ntables && !err; i++)
		rb.tables[i].json = rb_table_json(b, &rb, &rb.tables[i], p, &err);
	if (err)
		goto out;
	if (rb.ntables > 1)
		qsort(rb.tables, rb.ntables, sizeof(*rb.tables), cmp_table);
	for (i = 0; i < rb.ntables; i++) {
		struct rb_table *t = &rb.tables[i];
		jv src, tbl;
		char *key;

		if (jv_get_kind(t->json) != JV_KIND_OBJECT)
			continue;
		src = jv_object_get(jv_copy(t->json), jv_string("source"));
		tbl = jv_object_get(jv_copy(t->json), jv_string("table"));
		key = table_key(tables, jv_string_value(src), jv_string_value(tbl), t->dir);
		tables = jv_object_set(tables, jv_string(key), t->json);
		t->json = jv_null();
		free(key);
		jv_free(src);
		jv_free(tbl);
		ntables++;
		for (j = 0; j < p->nstreams && strcmp(p->streams[j].dir, t->dir) != 0; j++)
			;
		others += j == p->nstreams;
	}
	*m = jv_object();
	*m = jv_object_set(*m, jv_string("version"), jv_string(MANIFEST_VERSION));
	*m = jv_object_set(*m, jv_string("updated_at"), jv_null());
	*m = jv_object_set(*m, jv_string("tables"), tables);
	tables = jv_invalid();
	sb_addf(said, "%s/%s was unreadable (%s): kept it as '%s' and rebuilt it from the bucket: "
		"%zu table(s) of earlier runs, their rows from %zu success run log(s)",
		bucket_url(b), LAYOUT_MANIFEST_KEY, why, kept, ntables, rb.logs_read);
	if (rb.unlogged)
		sb_addf(said, ", not counting the files of %zu run(s) that no success log names", rb.unlogged);
	if (others)
		sb_addf(said, "; the columns, key properties and table version of the %zu table(s) this run "
			"did not land come back with their pipeline's next run", others);
	ret = 0;
out:
	for (i = 0; i < rb.ntables; i++) {
		for (j = 0; j < rb.tables[i].nruns; j++)
			free(rb.tables[i].runs[j]);
		free(rb.tables[i].runs);
		free(rb.tables[i].dir);
		free(rb.tables[i].safe);
		jv_free(rb.tables[i].json);
	}
	for (i = 0; i < rb.nruns; i++) {
		free(rb.runs[i].id);
		jv_free(rb.runs[i].obj);
	}
	free(rb.tables);
	free(rb.runs);
	util_strv_free(keys);
	free(kept);
	jv_free(tables);
	return ret;
}

int manifest_recorded(struct bucket *b, const struct plan *p, struct manifest_rec *rec, int warn)
{
	struct sb text = SB_INIT, why = SB_INIT;
	jv m, tables;
	size_t i;
	int r = bucket_get(b, LAYOUT_MANIFEST_KEY, &text);

	for (i = 0; i < p->nstreams; i++)
		rec[i].version = rec[i].column = NULL, rec[i].unknown = r < 0;
	if (r != 0) {
		sb_free(&text);
		return r < 0 ? -1 : 0;
	}
	m = manifest_parse(text.buf, text.len, &why);
	sb_free(&text);
	if (jv_get_kind(m) != JV_KIND_OBJECT) {
		/* the update rebuilds it; nothing is known meanwhile, so nothing is dropped */
		if (warn)
			err_warn("%s/%s is unreadable (%s): the table versions it recorded are unknown, so "
				 "the earlier files of the streams that activated one are kept", bucket_url(b),
				 LAYOUT_MANIFEST_KEY, why.buf);
		for (i = 0; i < p->nstreams; i++)
			rec[i].unknown = 1;
		jv_free(m);
		sb_free(&why);
		return 0;
	}
	sb_free(&why);
	tables = jv_object_get(m, jv_string("tables"));
	for (i = 0; i < p->nstreams; i++)
		rec[i].unknown = jv_get_kind(tables) != JV_KIND_OBJECT;
	if (jv_get_kind(tables) == JV_KIND_OBJECT) {
		jv_object_foreach(tables, k, v) {
			for (i = 0; i < p->nstreams; i++) {
				if (rec[i].version == NULL && rec[i].column == NULL &&
				    jv_get_kind(v) == JV_KIND_OBJECT && table_at(v, p->streams[i].dir)) {
					jv part = jvx_get(v, "partition");

					rec[i].version = recorded_version(v);
					rec[i].column = jvx_string(part, "column");
					jv_free(part);
				}
			}
			jv_free(k);
			jv_free(v);
		}
	}
	jv_free(tables);
	return 0;
}

void manifest_recs_free(struct manifest_rec *rec, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(rec[i].version);
		free(rec[i].column);
	}
	free(rec);
}

int manifest_update(struct bucket *b, const struct plan *p)
{
	struct sb text = SB_INIT, said = SB_INIT;
	jv m = jv_invalid(), tables, dumped;
	char now[32];
	size_t i;
	char *unlock;
	int ret = -1, r, changed = 0;

	if (p->nstreams == 0)
		return 0;
	/* DATASPOC_PIPE_MANIFEST_WAIT: how long a commit waits for the manifest's lock (s) */
	unlock = xasprintf("pipe-state unlock -b %s", bucket_url(b));
	r = lock_take(b, LAYOUT_MANIFEST_LOCK_KEY, "the manifest", unlock, p->run_id, (long)getpid(), 120,
		      1000 * util_env_long("DATASPOC_PIPE_MANIFEST_WAIT", 0, 3600, 120));
	free(unlock);
	if (r != 0)
		return -1;
	r = bucket_get(b, LAYOUT_MANIFEST_KEY, &text);
	if (r < 0)
		goto out;
	if (r == 0) {
		struct sb why = SB_INIT;

		m = manifest_parse(text.buf, text.len, &why);
		if (jv_get_kind(m) != JV_KIND_OBJECT) {
			/*
			 * The state has moved already: a broken manifest must not fail
			 * the commit, so it is rebuilt from what the bucket holds.
			 */
			jv_free(m);
			m = jv_invalid();
			r = manifest_rebuild(b, p, text.buf, text.len, why.buf, &m, &said);
			sb_free(&why);
			if (r != 0)
				goto out;
			/* the rebuild may outlast the lock's 120 s: write only while it is ours */
			r = lock_held_by(b, LAYOUT_MANIFEST_LOCK_KEY, p->run_id);
			if (r != 1) {
				if (r == 0)
					err_msg("lost the manifest lock '%s' in %s while rebuilding the manifest; "
						"the next run finishes the commit", LAYOUT_MANIFEST_LOCK_KEY, bucket_url(b));
				goto out;
			}
			changed = 1;
		}
		sb_free(&why);
	} else {
		m = jv_object();
		m = jv_object_set(m, jv_string("version"), jv_string(MANIFEST_VERSION));
	}
	tables = jv_object_get(jv_copy(m), jv_string("tables"));
	if (jv_get_kind(tables) != JV_KIND_OBJECT) {
		jv_free(tables);
		tables = jv_object();
	}
	util_iso_time(time(NULL), now, sizeof(now));
	for (i = 0; i < p->nstreams; i++) {
		const struct plan_stream *s = &p->streams[i];
		const char *table = strrchr(s->dir, '/') ? strrchr(s->dir, '/') + 1 : s->dir;
		char *name = table_key(tables, p->source, table, s->dir);
		jv t = jv_object_get(jv_copy(tables), jv_string(name));
		jv last;
		char *location;
		int same_run;

		if (jv_get_kind(t) != JV_KIND_OBJECT) {
			jv_free(t);
			/*
			 * A table enters the catalog with its first file: a stream
			 * that sent its SCHEMA and no record has none, and a reader
			 * of the manifest (Lens's read_parquet of the location) would
			 * find no file to read.
			 */
			if (s->records == 0) {
				free(name);
				continue;
			}
			t = jv_object();
		}
		last = jv_object_get(jv_copy(t), jv_string("last_run_id"));
		same_run = jv_get_kind(last) == JV_KIND_STRING && strcmp(jv_string_value(last), p->run_id) == 0;
		jv_free(last);
		/* this run (this unit of it, with checkpoints) is in already: a recovery repeating the step */
		if (same_run && (p->unit == 0 || jvx_number(t, "last_unit", 0) >= (double)p->unit)) {
			jv_free(t);
			free(name);
			continue;
		}
		check_owner(t, p, s->dir);
		location = xstrdup(s->dir);
		tables = jv_object_set(tables, jv_string(name),
				       table_update(t, p, s, table, location, now, same_run));
		free(location);
		changed = 1;
		free(name);
	}
	m = jv_object_set(m, jv_string("updated_at"), jv_string(now));
	m = jv_object_set(m, jv_string("tables"), tables);
	if (!changed) {
		ret = 0;
		goto out;
	}
	dumped = jv_dump_string(jv_copy(m), JV_PRINT_INDENT_FLAGS(2));
	sb_reset(&text);
	sb_adds(&text, jv_string_value(dumped));
	sb_addc(&text, '\n');
	jv_free(dumped);
	ret = bucket_put(b, LAYOUT_MANIFEST_KEY, text.buf, text.len);
	if (ret == 0 && said.len)
		err_warn("%s", said.buf);
out:
	jv_free(m);
	sb_free(&text);
	sb_free(&said);
	if (lock_release_brief(b, LAYOUT_MANIFEST_LOCK_KEY, p->run_id) != 0)
		ret = -1;
	return ret;
}
