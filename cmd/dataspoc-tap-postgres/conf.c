/*
 * dataspoc-tap-postgres: the config, the catalog and the state files, read
 * as JSON spans: keys in their order, numbers as their digits.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "tap_pg.h"
#include "util.h"

/* Read and validate a JSON file into text; *v its value.  0 or EXIT_USAGE. */
static int read_json(const char *what, const char *file, struct sb *text, struct json_span *v)
{
	size_t errpos;
	const char *errmsg;

	if (util_read_file(file, text, NULL) < 0) {
		err_msg("cannot read %s '%s':", what, file);
		return EXIT_USAGE;
	}
	if (json_validate(text->buf ? text->buf : "", text->len, v, &errpos, &errmsg) < 0)
		return singer_tap_bad(what, file, "invalid JSON at byte %zu: %s", errpos + 1, errmsg);
	if (v->type != JSON_OBJECT)
		return singer_tap_bad(what, file, "not a JSON object");
	return 0;
}

/* Python's truth of a value: false, null, 0, "", [] and {} are false. */
static int truthy(const struct json_span *v)
{
	switch (v->type) {
	case JSON_NONE: case JSON_FALSE: case JSON_NULL:
		return 0;
	case JSON_STRING:
		return v->len > 2;
	case JSON_NUMBER:
		for (size_t i = 0; i < v->len; i++)
			if (v->p[i] >= '1' && v->p[i] <= '9')
				return 1;
		return 0;
	case JSON_OBJECT: case JSON_ARRAY: {
		struct json_span k, e;
		size_t pos = 0;

		return v->type == JSON_OBJECT ? json_object_next(v, &pos, &k, &e)
					      : json_array_next(v, &pos, &e);
	}
	default:
		return 1;
	}
}

/* A string (decoded) or a number (its digits) as a new C string; NULL otherwise. */
static char *scalar(const struct json_span *v)
{
	struct sb s = SB_INIT;

	if (v->type == JSON_STRING) {
		json_string_decode(v, &s);
		if (memchr(s.buf ? s.buf : "", '\0', s.len)) {
			sb_free(&s);
			return NULL;
		}
		return sb_detach(&s);
	}
	if (v->type == JSON_NUMBER)
		return xstrndup(v->p, v->len);
	return NULL;
}

/* "true" or true. */
static int is_true(const struct json_span *v)
{
	return v->type == JSON_TRUE || (v->type == JSON_STRING && json_string_equal(v, "true", 0));
}

int load_config(struct tap *t)
{
	static const struct {
		const char *key;
		size_t off;
	} strs[] = {
		{ "host", offsetof(struct pgconf, host) },
		{ "port", offsetof(struct pgconf, port) },
		{ "user", offsetof(struct pgconf, user) },
		{ "password", offsetof(struct pgconf, password) },
		{ "dbname", offsetof(struct pgconf, dbname) },
		{ "sslmode", offsetof(struct pgconf, sslmode) },
		{ "filter_dbs", offsetof(struct pgconf, filter_dbs) },
		{ "filter_schemas", offsetof(struct pgconf, filter_schemas) },
		{ "default_replication_method", offsetof(struct pgconf, default_method) },
	};
	struct pgconf *c = &t->conf;
	struct sb text = SB_INIT;
	struct json_span v, k, e;
	size_t pos = 0;
	int rc;

	if ((rc = read_json("config", t->config_file, &text, &v)) != 0)
		goto out;
	while (json_object_next(&v, &pos, &k, &e)) {
		size_t i;

		for (i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
			char **dst = (char **)(void *)((char *)c + strs[i].off);

			if (!json_string_equal(&k, strs[i].key, 0))
				continue;
			if (e.type == JSON_NULL)
				break;
			free(*dst);
			if ((*dst = scalar(&e)) == NULL) {
				rc = singer_tap_bad("config", t->config_file, "'%s' must be a string", strs[i].key);
				goto out;
			}
			break;
		}
		if (i < sizeof(strs) / sizeof(strs[0]))
			continue;
		if ((rc = logical_config(t, &k, &e)) != 0) {
			if (rc != 1)
				goto out;
			rc = 0;
		} else if (json_string_equal(&k, "ssl", 0)) {
			if (is_true(&e) && c->sslmode == NULL)
				c->sslmode = xstrdup("require");
		} else if (json_string_equal(&k, "include_schemas_in_destination_stream_name", 0)) {
			c->schema_in_name = is_true(&e);
		}
		/* the rest tap-postgres takes (itersize, debug_lsn, ...) has nothing to do here */
	}
	if (c->host == NULL || c->user == NULL || c->dbname == NULL) {
		rc = singer_tap_bad("config", t->config_file, "'%s' is required",
			 c->host == NULL ? "host" : c->user == NULL ? "user" : "dbname");
		goto out;
	}
	if (c->port == NULL)
		c->port = xstrdup("5432");
	if (c->message_format == 0)
		c->message_format = 1;
	if (c->default_method && c->default_method[0] == '\0') {
		free(c->default_method);
		c->default_method = NULL;
	}
out:
	sb_free(&text);
	return rc;
}

/* ---- the catalog ---- */

/* The metadata object of breadcrumb [] (prop NULL) or ["properties", prop]. */
static int md_find(const struct json_span *md, const char *prop, struct json_span *out)
{
	struct json_span el, bc, m, a, b;
	size_t pos = 0, bpos;

	if (md->type != JSON_ARRAY)
		return 0;
	while (json_array_next(md, &pos, &el)) {
		if (el.type != JSON_OBJECT || json_object_get(&el, "breadcrumb", &bc) != 1 ||
		    bc.type != JSON_ARRAY || json_object_get(&el, "metadata", &m) != 1 ||
		    m.type != JSON_OBJECT)
			continue;
		bpos = 0;
		if (prop == NULL) {
			if (!json_array_next(&bc, &bpos, &a)) {
				*out = m;
				return 1;
			}
			continue;
		}
		if (json_array_next(&bc, &bpos, &a) && json_string_equal(&a, "properties", 0) &&
		    json_array_next(&bc, &bpos, &b) && b.type == JSON_STRING &&
		    json_string_equal(&b, prop, 0) && !json_array_next(&bc, &bpos, &a)) {
			*out = m;
			return 1;
		}
	}
	return 0;
}

static char *member_str(const struct json_span *obj, const char *key)
{
	struct json_span v;

	if (obj->type != JSON_OBJECT || json_object_get(obj, key, &v) != 1)
		return NULL;
	return v.type == JSON_STRING ? scalar(&v) : NULL;
}

static int cmp_col(const void *a, const void *b)
{
	return strcmp(((const struct column *)a)->name, ((const struct column *)b)->name);
}

static int cmp_stream(const void *a, const void *b)
{
	return strcmp(((const struct stream *)a)->id, ((const struct stream *)b)->id);
}

static void stream_free(struct stream *s)
{
	free(s->id);
	free(s->table);
	free(s->dest);
	free(s->schema_name);
	free(s->dbname);
	free(s->method);
	free(s->rk);
	sb_free(&s->schema);
	sb_free(&s->keys);
	for (size_t i = 0; i < s->ncols; i++) {
		free(s->cols[i].name);
		free(s->cols[i].sqltype);
	}
	free(s->cols);
}

/* One selected stream of the catalog into s.  0 or EXIT_USAGE. */
static int load_stream(struct tap *t, const struct json_span *js, const struct json_span *md,
		       const struct json_span *smd, struct stream *s)
{
	const char *file = t->catalog_file;
	struct json_span schema, props, k, e, v, cmd;
	size_t pos = 0;
	char *stream_name;

	s->rk_col = -1;
	s->id = member_str(js, "tap_stream_id");
	s->table = member_str(js, "table_name");
	stream_name = member_str(js, "stream");
	if (s->id == NULL || s->table == NULL || stream_name == NULL) {
		free(stream_name);
		return singer_tap_bad("properties", file, "a selected stream lacks a string '%s'",
			   s->id == NULL ? "tap_stream_id" : s->table == NULL ? "table_name" : "stream");
	}
	if (json_object_get(js, "schema", &schema) != 1 || schema.type != JSON_OBJECT ||
	    json_object_get(&schema, "properties", &props) != 1 || props.type != JSON_OBJECT) {
		free(stream_name);
		return singer_tap_bad("properties", file, "stream '%s' has no schema with properties", s->id);
	}
	py_dump(&s->schema, &schema);
	s->schema_name = member_str(smd, "schema-name");
	s->dbname = member_str(smd, "database-name");
	if (s->schema_name == NULL || s->dbname == NULL) {
		free(stream_name);
		return singer_tap_bad("properties", file, "stream '%s' has no '%s' in its metadata", s->id,
			   s->schema_name == NULL ? "schema-name" : "database-name");
	}
	if (t->conf.schema_in_name) {
		s->dest = xasprintf("%s_%s", s->schema_name, stream_name);
		free(stream_name);
	} else {
		s->dest = stream_name;
	}
	s->is_view = json_object_get(smd, "is-view", &v) == 1 && truthy(&v);
	s->split = json_object_get(smd, "shard-split", &v) == 1 && truthy(&v);
	if (json_object_get(smd, s->is_view ? "view-key-properties" : "table-key-properties", &v) == 1 &&
	    v.type != JSON_NULL)
		py_dump(&s->keys, &v);
	else
		sb_adds(&s->keys, "[]");
	s->method = member_str(smd, "replication-method");
	if (s->method == NULL && t->conf.default_method)
		s->method = xstrdup(t->conf.default_method);
	s->rk = member_str(smd, "replication-key");

	while (json_object_next(&props, &pos, &k, &e)) {
		struct sb name = SB_INIT;
		struct json_span incl;
		int sync = 1;
		struct column *c;
		size_t tl;

		json_string_decode(&k, &name);
		if (name.buf == NULL)
			sb_adds(&name, "");
		if (!md_find(md, name.buf, &cmd)) {
			cmd.type = JSON_NONE;
		}
		if (cmd.type == JSON_OBJECT && json_object_get(&cmd, "inclusion", &incl) == 1 &&
		    json_string_equal(&incl, "automatic", 0)) {
			sync = 1;
		} else if (cmd.type == JSON_OBJECT && json_object_get(&cmd, "inclusion", &incl) == 1 &&
			   json_string_equal(&incl, "unsupported", 0)) {
			sync = 0;
		} else if (cmd.type == JSON_OBJECT && json_object_get(&cmd, "selected", &v) == 1 &&
			   v.type != JSON_NULL) {
			sync = truthy(&v);
		}
		if (!sync) {
			sb_free(&name);
			continue;
		}
		s->cols = xrealloc(s->cols, (s->ncols + 1) * sizeof(*s->cols));
		c = &s->cols[s->ncols++];
		memset(c, 0, sizeof(*c));
		c->name = sb_detach(&name);
		c->sqltype = cmd.type == JSON_OBJECT ? member_str(&cmd, "sql-datatype") : NULL;
		if (c->sqltype == NULL)
			return singer_tap_bad("properties", file, "column '%s' of stream '%s' has no sql-datatype in its metadata",
				   c->name, s->id);
		tl = strlen(c->sqltype);
		c->array = tl > 2 && strcmp(c->sqltype + tl - 2, "[]") == 0;
		c->kind = kind_of(c->sqltype, c->array ? tl - 2 : tl);
	}
	qsort(s->cols, s->ncols, sizeof(*s->cols), cmp_col);
	if (s->rk)
		for (size_t i = 0; i < s->ncols; i++)
			if (strcmp(s->cols[i].name, s->rk) == 0)
				s->rk_col = (int)i;
	return 0;
}

int load_catalog(struct tap *t)
{
	const char *file = t->catalog_file;
	struct json_span v, streams, el, md, smd, sel;
	size_t pos = 0;
	int rc;

	if ((rc = read_json("properties", file, &t->catalog_text, &v)) != 0)
		return rc;
	if (json_object_get(&v, "streams", &streams) != 1 || streams.type != JSON_ARRAY)
		return singer_tap_bad("properties", file, "no 'streams' array");
	while (json_array_next(&streams, &pos, &el)) {
		struct stream *s;

		if (el.type != JSON_OBJECT)
			return singer_tap_bad("properties", file, "a stream that is not an object");
		if (json_object_get(&el, "metadata", &md) != 1 || !md_find(&md, NULL, &smd))
			continue;
		if (json_object_get(&smd, "selected", &sel) != 1 || !truthy(&sel))
			continue;
		t->streams = xrealloc(t->streams, (t->nstreams + 1) * sizeof(*t->streams));
		s = &t->streams[t->nstreams++];
		memset(s, 0, sizeof(*s));
		if ((rc = load_stream(t, &el, &md, &smd, s)) != 0)
			return rc;
	}
	qsort(t->streams, t->nstreams, sizeof(*t->streams), cmp_stream);
	return 0;
}

/* ---- the state ---- */

int load_state(struct tap *t)
{
	const char *file = t->state_file;
	struct sb text = SB_INIT, val = SB_INIT;
	struct json_span v, k, e, bk, be, ty;
	struct state *s = &t->state;
	size_t pos = 0;
	int rc;

	if ((rc = read_json("state", file, &text, &v)) != 0)
		goto out;
	/* a whole STATE message, as some schedulers save it */
	if (json_object_get(&v, "type", &ty) == 1 && json_string_equal(&ty, "STATE", 1) &&
	    json_object_get(&v, "value", &e) == 1 && e.type == JSON_OBJECT)
		v = e;
	while (json_object_next(&v, &pos, &k, &e)) {
		struct sb key = SB_INIT;

		json_string_decode(&k, &key);
		if (key.buf == NULL)
			sb_adds(&key, "");
		if (strcmp(key.buf, "bookmarks") == 0) {
			size_t bpos = 0;

			if (e.type != JSON_OBJECT) {
				sb_free(&key);
				rc = singer_tap_bad("state", file, "'bookmarks' is not an object");
				goto out;
			}
			if (!s->has_bookmarks) {
				kv_set(&s->top, "bookmarks", "{}", 2);
				s->bookmarks_at = s->top.n - 1;
				s->has_bookmarks = 1;
			}
			while (json_object_next(&e, &bpos, &bk, &be)) {
				struct sb id = SB_INIT;
				struct bookmark *b;
				size_t mpos = 0;
				struct json_span mk, mv;

				json_string_decode(&bk, &id);
				if (be.type != JSON_OBJECT) {
					rc = singer_tap_bad("state", file, "the bookmark of '%s' is not an object",
						 id.buf ? id.buf : "");
					sb_free(&id);
					sb_free(&key);
					goto out;
				}
				b = state_bookmark(s, id.buf ? id.buf : "", 1);
				sb_free(&id);
				kv_free(&b->kv);
				while (json_object_next(&be, &mpos, &mk, &mv)) {
					struct sb mkey = SB_INIT;

					json_string_decode(&mk, &mkey);
					sb_reset(&val);
					py_dump(&val, &mv);
					kv_set(&b->kv, mkey.buf ? mkey.buf : "", val.buf, val.len);
					sb_free(&mkey);
				}
			}
		} else {
			sb_reset(&val);
			py_dump(&val, &e);
			kv_set(&s->top, key.buf, val.buf, val.len);
		}
		sb_free(&key);
	}
out:
	sb_free(&text);
	sb_free(&val);
	return rc;
}

void conf_free(struct tap *t)
{
	struct pgconf *c = &t->conf;

	free(c->host);
	free(c->port);
	free(c->user);
	free(c->password);
	free(c->dbname);
	free(c->sslmode);
	free(c->filter_dbs);
	free(c->filter_schemas);
	free(c->default_method);
	free(c->plugin);
	free(c->slot);
	free(c->publication);
	for (size_t i = 0; i < t->nstreams; i++)
		stream_free(&t->streams[i]);
	free(t->streams);
	sb_free(&t->catalog_text);
	state_free(&t->state);
	sb_free(&t->out);
}
