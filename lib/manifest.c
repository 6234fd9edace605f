/* manifest: the bucket's catalog of tables, .dataspoc/manifest.json. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jv.h>

#include "commit.h"
#include "err.h"
#include "json.h"
#include "lock.h"
#include "util.h"

static int table_at(jv t, const char *dir);

/* The Python DataSpoc Pipe's manifest version. */
#define MANIFEST_VERSION "1.0"

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

static double num(jv obj, const char *key)
{
	jv v = jv_object_get(jv_copy(obj), jv_string(key));
	double d = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : 0;

	jv_free(v);
	return d;
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

static jv table_update(jv t, const struct plan *p, const struct plan_stream *s,
		       const char *table, const char *location, const char *now)
{
	jv stats = jv_object_get(jv_copy(t), jv_string("stats"));
	double total, extractions;

	if (jv_get_kind(stats) != JV_KIND_OBJECT) {
		jv_free(stats);
		stats = jv_object();
	}
	total = num(stats, "total_rows");
	extractions = num(stats, "extractions");
	total = p->replace || new_version(t, s->activated) ? (double)s->records : total + (double)s->records;
	stats = jv_object_set(stats, jv_string("total_rows"), jv_number(total));
	stats = jv_object_set(stats, jv_string("extractions"), jv_number(extractions + 1));
	stats = jv_object_set(stats, jv_string("last_extraction"), jv_string(now));
	stats = jv_object_set(stats, jv_string("last_extraction_rows"), jv_number((double)s->records));

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
	t = jv_object_set(t, jv_string("format"), jv_string(p->format ? p->format : "jsonl"));
	t = jv_object_set(t, jv_string("compression"), jv_string(p->compression ? p->compression : "zstd"));
	if (s->activated)
		t = jv_object_set(t, jv_string("table_version"), jv_parse(s->activated));
	t = jv_object_set(t, jv_string("last_extraction"), jv_string(now));
	t = jv_object_set(t, jv_string("stats"), stats);
	t = jv_object_set(t, jv_string("last_run_id"), jv_string(p->run_id));
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

int manifest_table_versions(struct bucket *b, const struct plan *p, char **versions)
{
	struct sb text = SB_INIT;
	jv m, tables;
	size_t i;
	int r = bucket_get(b, UTIL_MANIFEST_KEY, &text);

	for (i = 0; i < p->nstreams; i++)
		versions[i] = NULL;
	if (r != 0) {
		sb_free(&text);
		return r < 0 ? -1 : 0;
	}
	m = jv_parse_sized(text.buf, (int)text.len);
	sb_free(&text);
	if (jv_get_kind(m) != JV_KIND_OBJECT) {
		jv_free(m);
		err_msg("%s/%s is not a JSON object; fix or remove it", bucket_url(b), UTIL_MANIFEST_KEY);
		return -1;
	}
	tables = jv_object_get(m, jv_string("tables"));
	if (jv_get_kind(tables) == JV_KIND_OBJECT) {
		jv_object_foreach(tables, k, v) {
			for (i = 0; i < p->nstreams; i++) {
				if (versions[i] == NULL && jv_get_kind(v) == JV_KIND_OBJECT &&
				    table_at(v, p->streams[i].dir))
					versions[i] = recorded_version(v);
			}
			jv_free(k);
			jv_free(v);
		}
	}
	jv_free(tables);
	return 0;
}

int manifest_update(struct bucket *b, const struct plan *p)
{
	struct sb text = SB_INIT;
	jv m = jv_invalid(), tables, dumped;
	char now[32];
	size_t i;
	int ret = -1, r, changed = 0;

	if (p->nstreams == 0)
		return 0;
	r = lock_take(b, UTIL_MANIFEST_LOCK_KEY, "the manifest", p->run_id, (long)getpid(), 120, 120000);
	if (r != 0)
		return -1;
	r = bucket_get(b, UTIL_MANIFEST_KEY, &text);
	if (r < 0)
		goto out;
	if (r == 0) {
		m = jv_parse_sized(text.buf, (int)text.len);
		if (jv_get_kind(m) != JV_KIND_OBJECT) {
			err_msg("%s/%s is not a JSON object; fix or remove it", bucket_url(b), UTIL_MANIFEST_KEY);
			goto out;
		}
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

		if (jv_get_kind(t) != JV_KIND_OBJECT) {
			jv_free(t);
			t = jv_object();
		}
		last = jv_object_get(jv_copy(t), jv_string("last_run_id"));
		if (jv_get_kind(last) == JV_KIND_STRING && strcmp(jv_string_value(last), p->run_id) == 0) {
			/* this run is in already: a recovery repeating the step */
			jv_free(last);
			jv_free(t);
			free(name);
			continue;
		}
		jv_free(last);
		check_owner(t, p, s->dir);
		location = bucket_location(b, s->dir);
		tables = jv_object_set(tables, jv_string(name), table_update(t, p, s, table, location, now));
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
	ret = bucket_put(b, UTIL_MANIFEST_KEY, text.buf, text.len);
out:
	jv_free(m);
	sb_free(&text);
	if (lock_release(b, UTIL_MANIFEST_LOCK_KEY, p->run_id) != 0)
		ret = -1;
	return ret;
}
