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

/* The Python DataSpoc Pipe's manifest version. */
#define MANIFEST_VERSION "1.0"

/*
 * Columns from a SCHEMA, in the schema's order: [{"name","type","nullable"
 * [,"format"][,"parquet_type"]}].  types: the plan's parquet_types, or NULL;
 * its columns that are no property (the extra column) come last.
 */
static void columns_json(const char *schema, const char *types, struct sb *out)
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

static jv table_update(jv t, const struct plan *p, const struct plan_stream *s,
		       const char *table, const char *now)
{
	jv stats = jv_object_get(jv_copy(t), jv_string("stats"));
	double total, extractions;

	if (jv_get_kind(stats) != JV_KIND_OBJECT) {
		jv_free(stats);
		stats = jv_object();
	}
	total = num(stats, "total_rows");
	extractions = num(stats, "extractions");
	total = p->replace ? (double)s->records : total + (double)s->records;
	stats = jv_object_set(stats, jv_string("total_rows"), jv_number(total));
	stats = jv_object_set(stats, jv_string("extractions"), jv_number(extractions + 1));
	stats = jv_object_set(stats, jv_string("last_extraction"), jv_string(now));
	stats = jv_object_set(stats, jv_string("last_extraction_rows"), jv_number((double)s->records));

	t = jv_object_set(t, jv_string("source"), jv_string(p->source));
	t = jv_object_set(t, jv_string("table"), jv_string(table));
	t = jv_object_set(t, jv_string("stream"), jv_string(s->name));
	t = jv_object_set(t, jv_string("path"), jv_string(s->dir));
	if (s->schema) {
		struct sb cols = SB_INIT;

		columns_json(s->schema, s->parquet_types, &cols);
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
	t = jv_object_set(t, jv_string("stats"), stats);
	t = jv_object_set(t, jv_string("last_run_id"), jv_string(p->run_id));
	return t;
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
		char *name = xasprintf("%s/%s", p->source, table);
		jv t = jv_object_get(jv_copy(tables), jv_string(name));
		jv last;

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
		tables = jv_object_set(tables, jv_string(name), table_update(t, p, s, table, now));
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
