/* plan: the commit plan (see plan.h). */
#include "plan.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"

static char *get_str(const struct json_span *obj, const char *key)
{
	struct json_span v;
	struct sb s = SB_INIT;

	if (json_object_get(obj, key, &v) != 1 || v.type != JSON_STRING)
		return NULL;
	json_string_decode(&v, &s);
	return sb_detach(&s);
}

static char *get_raw(const struct json_span *obj, const char *key, enum json_type want)
{
	struct json_span v;
	struct sb s = SB_INIT;

	if (json_object_get(obj, key, &v) != 1 || v.type != want)
		return NULL;
	json_compact(&v, &s);
	return sb_detach(&s);
}

/* A table version: a JSON number or string, raw, or NULL. */
static char *get_version(const struct json_span *obj, const char *key)
{
	char *v = get_raw(obj, key, JSON_NUMBER);

	return v ? v : get_raw(obj, key, JSON_STRING);
}

/* A count that may be absent: -1 then. */
static long long get_raw_count(const struct json_span *obj, const char *key)
{
	struct json_span v;

	if (json_object_get(obj, key, &v) != 1 || v.type != JSON_NUMBER || *v.p == '-')
		return -1;
	return strtoll(v.p, NULL, 10);
}

static int get_bool(const struct json_span *obj, const char *key)
{
	struct json_span v;

	return json_object_get(obj, key, &v) == 1 && v.type == JSON_TRUE;
}

static unsigned long long get_count(const struct json_span *obj, const char *key)
{
	struct json_span v;

	if (json_object_get(obj, key, &v) != 1 || v.type != JSON_NUMBER)
		return 0;
	return strtoull(v.p, NULL, 10);
}

/* ustates holds units 1..nunits+1 (or is NULL): the unit now open gets a slot. */
static void open_unit(struct plan *p)
{
	p->ustates = xrealloc(p->ustates, (p->nunits + 1) * sizeof(*p->ustates));
	p->ustates[p->nunits] = NULL;
}

int plan_parse(const char *text, size_t len, const char *origin, struct plan *p)
{
	size_t pos = 0, lineno = 0;

	memset(p, 0, sizeof(*p));
	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;
		struct json_span obj;
		size_t errpos;
		const char *errmsg;
		char *type = NULL;

		pos += n + (nl != NULL);
		lineno++;
		if (n == 0)
			continue;
		if (json_validate(line, n, &obj, &errpos, &errmsg) != 0) {
			err_msg("%s:%zu:%zu: not a plan line: %s", origin, lineno, errpos + 1, errmsg);
			goto fail;
		}
		if (p->ended) {
			err_msg("%s:%zu: plan goes on after its end line", origin, lineno);
			goto fail;
		}
		type = obj.type == JSON_OBJECT ? get_str(&obj, "type") : NULL;
		if (type == NULL) {
			err_msg("%s:%zu: not a plan line: no \"type\"", origin, lineno);
			goto fail;
		}
		if (strcmp(type, "run") == 0) {
			if (p->run_id) {
				err_msg("%s:%zu: a second run line", origin, lineno);
				free(type);
				goto fail;
			}
			p->pipeline = get_str(&obj, "pipeline");
			p->run_id = get_str(&obj, "run_id");
			p->started_at = get_str(&obj, "started_at");
			p->source = get_str(&obj, "source");
			p->format = get_str(&obj, "format");
			p->compression = get_str(&obj, "compression");
			p->incremental = get_bool(&obj, "incremental");
			p->replace = get_bool(&obj, "replace");
			p->full = get_bool(&obj, "full");
			p->compact = get_bool(&obj, "compact");
			if (!p->pipeline || !p->run_id || !p->started_at || !p->source) {
				err_msg("%s:%zu: run line lacks pipeline, run_id, started_at or source", origin, lineno);
				free(type);
				goto fail;
			}
		} else if (strcmp(type, "file") == 0) {
			struct plan_file f;

			f.stream = get_str(&obj, "stream");
			f.staged = get_str(&obj, "staged");
			f.final = get_str(&obj, "final");
			f.records = get_count(&obj, "records");
			f.bytes = get_count(&obj, "bytes");
			f.version = get_version(&obj, "version");
			f.unit = p->nunits + 1;
			p->files = xrealloc(p->files, (p->nfiles + 1) * sizeof(*p->files));
			p->files[p->nfiles++] = f;
			if (!f.stream || !f.staged || !f.final) {
				err_msg("%s:%zu: file line lacks stream, staged or final", origin, lineno);
				free(type);
				goto fail;
			}
		} else if (strcmp(type, "stream") == 0) {
			struct plan_stream s;

			s.name = get_str(&obj, "stream");
			s.dir = get_str(&obj, "dir");
			s.records = get_count(&obj, "records");
			s.schema = get_raw(&obj, "schema", JSON_OBJECT);
			s.key_properties = get_raw(&obj, "key_properties", JSON_ARRAY);
			s.parquet_types = get_raw(&obj, "parquet_types", JSON_OBJECT);
			s.inferred = get_bool(&obj, "inferred");
			s.activated = get_version(&obj, "activated");
			s.widened = get_raw(&obj, "widened", JSON_ARRAY);
			s.load_method = get_str(&obj, "load_method");
			s.partition = get_raw(&obj, "partition", JSON_OBJECT);
			s.table_rows = get_count(&obj, "table_rows");
			s.has_table_rows = get_raw_count(&obj, "table_rows") >= 0;
			s.unit = p->nunits + 1;
			p->streams = xrealloc(p->streams, (p->nstreams + 1) * sizeof(*p->streams));
			p->streams[p->nstreams++] = s;
			if (!s.name || !s.dir) {
				err_msg("%s:%zu: stream line lacks stream or dir", origin, lineno);
				free(type);
				goto fail;
			}
		} else if (strcmp(type, "replace") == 0) {
			struct plan_replace r;

			r.stream = get_str(&obj, "stream");
			r.key = get_str(&obj, "key");
			r.rows = get_count(&obj, "rows");
			r.unit = p->nunits + 1;
			p->replaced = xrealloc(p->replaced, (p->nreplaced + 1) * sizeof(*p->replaced));
			p->replaced[p->nreplaced++] = r;
			if (!r.stream || !r.key) {
				err_msg("%s:%zu: replace line lacks stream or key", origin, lineno);
				free(type);
				goto fail;
			}
		} else if (strcmp(type, "state") == 0) {
			free(p->state);
			p->state = get_raw(&obj, "value", JSON_OBJECT);
			if (p->state == NULL) {
				err_msg("%s:%zu: state line without an object \"value\"", origin, lineno);
				free(type);
				goto fail;
			}
			if (p->ustates == NULL)
				open_unit(p);
			free(p->ustates[p->nunits]);
			p->ustates[p->nunits] = xstrdup(p->state);
		} else if (strcmp(type, "checkpoint") == 0) {
			/* the first one says how many units came before this text */
			if (p->nunits == 0 && p->run_id != NULL && get_count(&obj, "unit") > 0 &&
			    get_count(&obj, "unit") <= UINT_MAX)
				p->unit_base = (unsigned)get_count(&obj, "unit") - 1;
			if (get_count(&obj, "unit") != p->unit_base + p->nunits + 1ULL || p->run_id == NULL) {
				err_msg("%s:%zu: checkpoint line out of order (unit %llu after %u)", origin, lineno,
					get_count(&obj, "unit"), p->unit_base + p->nunits);
				free(type);
				goto fail;
			}
			if (p->ustates == NULL)
				open_unit(p);
			p->nunits++;
			open_unit(p);
		} else if (strcmp(type, "end") == 0) {
			char *status = get_str(&obj, "status");

			p->ended = 1;
			p->checkpoint = status && strcmp(status, "checkpoint") == 0;
			p->success = status && (strcmp(status, "success") == 0 || p->checkpoint);
			p->error = get_str(&obj, "error");
			p->records = get_count(&obj, "records");
			p->unit = (unsigned)get_count(&obj, "unit");
			free(status);
		} else {
			err_msg("%s:%zu: unknown plan line type '%s'", origin, lineno, type);
			free(type);
			goto fail;
		}
		free(type);
	}
	if (p->run_id == NULL && (p->nfiles || p->nstreams || p->state || (p->ended && p->success))) {
		err_msg("%s: plan without a run line", origin);
		goto fail;
	}
	return 0;
fail:
	plan_free(p);
	return -1;
}

void plan_free(struct plan *p)
{
	size_t i;

	if (p == NULL)
		return;
	for (i = 0; i < p->nfiles; i++) {
		free(p->files[i].stream);
		free(p->files[i].staged);
		free(p->files[i].final);
		free(p->files[i].version);
	}
	for (i = 0; i < p->nstreams; i++) {
		free(p->streams[i].name);
		free(p->streams[i].dir);
		free(p->streams[i].schema);
		free(p->streams[i].key_properties);
		free(p->streams[i].parquet_types);
		free(p->streams[i].activated);
		free(p->streams[i].widened);
		free(p->streams[i].load_method);
		free(p->streams[i].partition);
	}
	for (i = 0; i < p->nreplaced; i++) {
		free(p->replaced[i].stream);
		free(p->replaced[i].key);
	}
	free(p->replaced);
	for (i = 0; p->ustates && i <= p->nunits; i++)
		free(p->ustates[i]);
	free(p->ustates);
	free(p->files);
	free(p->streams);
	free(p->pipeline);
	free(p->run_id);
	free(p->started_at);
	free(p->source);
	free(p->format);
	free(p->compression);
	free(p->state);
	free(p->error);
	memset(p, 0, sizeof(*p));
}

static void add_str(struct sb *out, const char *key, const char *val)
{
	sb_addf(out, ",\"%s\":", key);
	json_quote(out, val, strlen(val));
}

void plan_format_part(const struct plan *p, int run_line, struct sb *out)
{
	size_t i;

	if (p->run_id && run_line) {
		sb_adds(out, "{\"type\":\"run\"");
		add_str(out, "pipeline", p->pipeline);
		add_str(out, "run_id", p->run_id);
		add_str(out, "started_at", p->started_at);
		add_str(out, "source", p->source);
		add_str(out, "format", p->format ? p->format : "jsonl");
		add_str(out, "compression", p->compression ? p->compression : "zstd");
		sb_addf(out, ",\"incremental\":%s,\"replace\":%s,\"full\":%s%s}\n",
			p->incremental ? "true" : "false", p->replace ? "true" : "false",
			p->full ? "true" : "false", p->compact ? ",\"compact\":true" : "");
	}
	for (i = 0; i < p->nfiles; i++) {
		const struct plan_file *f = &p->files[i];

		sb_adds(out, "{\"type\":\"file\"");
		add_str(out, "stream", f->stream);
		add_str(out, "staged", f->staged);
		add_str(out, "final", f->final);
		sb_addf(out, ",\"records\":%llu,\"bytes\":%llu", f->records, f->bytes);
		if (f->version)
			sb_addf(out, ",\"version\":%s", f->version);
		sb_adds(out, "}\n");
	}
	for (i = 0; i < p->nstreams; i++) {
		const struct plan_stream *s = &p->streams[i];

		sb_adds(out, "{\"type\":\"stream\"");
		add_str(out, "stream", s->name);
		add_str(out, "dir", s->dir);
		sb_addf(out, ",\"records\":%llu,\"schema\":%s,\"key_properties\":%s", s->records,
			s->schema ? s->schema : "null",
			s->key_properties ? s->key_properties : "null");
		if (s->parquet_types)
			sb_addf(out, ",\"parquet_types\":%s", s->parquet_types);
		if (s->inferred)
			sb_adds(out, ",\"inferred\":true");
		if (s->activated)
			sb_addf(out, ",\"activated\":%s", s->activated);
		if (s->widened)
			sb_addf(out, ",\"widened\":%s", s->widened);
		if (s->load_method)
			add_str(out, "load_method", s->load_method);
		if (s->partition)
			sb_addf(out, ",\"partition\":%s", s->partition);
		if (s->has_table_rows)
			sb_addf(out, ",\"table_rows\":%llu", s->table_rows);
		sb_adds(out, "}\n");
	}
	for (i = 0; i < p->nreplaced; i++) {
		sb_adds(out, "{\"type\":\"replace\"");
		add_str(out, "stream", p->replaced[i].stream);
		add_str(out, "key", p->replaced[i].key);
		sb_addf(out, ",\"rows\":%llu}\n", p->replaced[i].rows);
	}
	if (p->state)
		sb_addf(out, "{\"type\":\"state\",\"value\":%s}\n", p->state);
	if (p->ended) {
		sb_addf(out, "{\"type\":\"end\",\"status\":\"%s\",\"records\":%llu",
			!p->success ? "failure" : p->checkpoint ? "checkpoint" : "success", p->records);
		if (p->unit)
			sb_addf(out, ",\"unit\":%u", p->unit);
		if (p->error)
			add_str(out, "error", p->error);
		sb_adds(out, "}\n");
	} else if (p->checkpoint) {
		sb_addf(out, "{\"type\":\"checkpoint\",\"unit\":%u,\"records\":%llu}\n", p->unit, p->records);
	}
}

void plan_format(const struct plan *p, struct sb *out)
{
	plan_format_part(p, 1, out);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* a's widenings, then b's: one JSON array, or NULL */
static char *join_arrays(char *a, const char *b)
{
	char *r;
	size_t la;

	if (b == NULL)
		return a;
	if (a == NULL)
		return xstrdup(b);
	la = strlen(a);
	/* "[x]" + "[y]" = "[x,y]"; an empty one adds nothing */
	if (la <= 2) {
		free(a);
		return xstrdup(b);
	}
	if (strlen(b) <= 2)
		return a;
	r = xasprintf("%.*s,%s", (int)(la - 1), a, b + 1);
	free(a);
	return r;
}

void plan_slice(const struct plan *all, unsigned after, unsigned upto, struct plan *out)
{
	size_t i, j;
	unsigned u;

	memset(out, 0, sizeof(*out));
	out->pipeline = dup_or_null(all->pipeline);
	out->run_id = dup_or_null(all->run_id);
	out->started_at = dup_or_null(all->started_at);
	out->source = dup_or_null(all->source);
	out->format = dup_or_null(all->format);
	out->compression = dup_or_null(all->compression);
	out->incremental = all->incremental;
	out->replace = all->replace;
	out->full = all->full;
	out->compact = all->compact;
	for (i = 0; i < all->nfiles; i++) {
		const struct plan_file *f = &all->files[i];
		struct plan_file *g;

		if (f->unit <= after || f->unit > upto)
			continue;
		out->files = xrealloc(out->files, (out->nfiles + 1) * sizeof(*out->files));
		g = &out->files[out->nfiles++];
		g->stream = xstrdup(f->stream);
		g->staged = xstrdup(f->staged);
		g->final = xstrdup(f->final);
		g->records = f->records;
		g->bytes = f->bytes;
		g->version = dup_or_null(f->version);
		g->unit = 1;
	}
	for (i = 0; i < all->nstreams; i++) {
		const struct plan_stream *s = &all->streams[i];
		struct plan_stream *t = NULL;

		if (s->unit <= after || s->unit > upto)
			continue;
		for (j = 0; j < out->nstreams && t == NULL; j++) {
			if (strcmp(out->streams[j].name, s->name) == 0)
				t = &out->streams[j];
		}
		if (t == NULL) {
			out->streams = xrealloc(out->streams, (out->nstreams + 1) * sizeof(*out->streams));
			t = &out->streams[out->nstreams++];
			memset(t, 0, sizeof(*t));
			t->name = xstrdup(s->name);
			t->dir = xstrdup(s->dir);
			t->unit = 1;
		}
		if (s->load_method) {
			free(t->load_method);
			t->load_method = xstrdup(s->load_method);
		}
		if (s->partition) {
			free(t->partition);
			t->partition = xstrdup(s->partition);
		}
		if (s->has_table_rows) {
			t->has_table_rows = 1;
			t->table_rows = s->table_rows;
		}
		t->records += s->records;
		out->records += s->records;
		if (s->schema) {
			free(t->schema);
			free(t->key_properties);
			t->schema = xstrdup(s->schema);
			t->key_properties = dup_or_null(s->key_properties);
		}
		if (s->parquet_types) {
			free(t->parquet_types);
			t->parquet_types = xstrdup(s->parquet_types);
		}
		t->inferred = s->inferred;
		if (s->activated) {
			free(t->activated);
			t->activated = xstrdup(s->activated);
		}
		t->widened = join_arrays(t->widened, s->widened);
	}
	for (i = 0; i < all->nreplaced; i++) {
		const struct plan_replace *r = &all->replaced[i];
		struct plan_replace *g;

		if (r->unit <= after || r->unit > upto)
			continue;
		out->replaced = xrealloc(out->replaced, (out->nreplaced + 1) * sizeof(*out->replaced));
		g = &out->replaced[out->nreplaced++];
		g->stream = xstrdup(r->stream);
		g->key = xstrdup(r->key);
		g->rows = r->rows;
		g->unit = 1;
	}
	for (u = upto; u > after && out->state == NULL; u--) {
		if (all->ustates && u <= all->nunits + 1 && all->ustates[u - 1])
			out->state = xstrdup(all->ustates[u - 1]);
	}
	out->ended = 1;
	out->success = 1;
	out->unit = all->nunits ? all->unit_base + upto : 0;
	out->checkpoint = upto <= all->nunits;
}

char *plan_folder_key(const struct plan_stream *s)
{
	struct json_span part, col;
	struct sb out = SB_INIT;
	size_t errpos;
	const char *errmsg;

	if (s->partition && json_validate(s->partition, strlen(s->partition), &part, &errpos, &errmsg) == 0 &&
	    json_object_get(&part, "column", &col) == 1 && col.type == JSON_STRING) {
		json_string_decode(&col, &out);
		return sb_detach(&out);
	}
	return xstrdup("dt");
}

int plan_refolded(const struct plan *p, const struct plan_stream *s, const char *column)
{
	char *key;
	int r;

	/* a compact keeps each file in its folder; a stream landing no file has no partition said */
	if (column == NULL || p->compact || !plan_lands(p, s->name))
		return 0;
	key = plan_folder_key(s);
	r = strcmp(key, column) != 0;
	free(key);
	return r;
}

int plan_lands(const struct plan *p, const char *stream)
{
	size_t i;

	for (i = 0; i < p->nfiles; i++)
		if (strcmp(p->files[i].stream, stream) == 0)
			return 1;
	return 0;
}
