/* catalog: discovery and stream selection, editing catalogs byte for byte. */
#include "catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "child.h"
#include "err.h"
#include "json.h"
#include "util.h"

/* One metadata key to set, with its value as raw JSON. */
struct override {
	char *key;		/* decoded, NUL-terminated */
	struct json_span val;
	char *owned;		/* value text we made, if any */
};

struct overrides {
	struct override *v;
	size_t n;
};

static void ov_set(struct overrides *o, const struct json_span *key, const char *literal,
		   const struct json_span *val)
{
	struct sb k = SB_INIT;
	size_t i;

	if (key)
		json_string_decode(key, &k);
	else
		sb_adds(&k, literal);
	for (i = 0; i < o->n; i++) {
		if (strcmp(o->v[i].key, k.buf) == 0)
			break;
	}
	if (i == o->n) {
		o->v = xrealloc(o->v, (o->n + 1) * sizeof(*o->v));
		memset(&o->v[i], 0, sizeof(o->v[i]));
		o->v[i].key = sb_detach(&k);
		o->n++;
	} else {
		sb_free(&k);
	}
	free(o->v[i].owned);
	o->v[i].owned = NULL;
	o->v[i].val = *val;
}

static void ov_free(struct overrides *o)
{
	size_t i;

	for (i = 0; i < o->n; i++) {
		free(o->v[i].key);
		free(o->v[i].owned);
	}
	free(o->v);
	memset(o, 0, sizeof(*o));
}

static const struct json_span json_true = { "true", 4, JSON_TRUE };
static const struct json_span json_false = { "false", 5, JSON_FALSE };

static int is_empty_array(const struct json_span *v)
{
	struct json_span el;
	size_t pos = 0;

	return v->type == JSON_ARRAY && !json_array_next(v, &pos, &el);
}

static int key_is(const struct json_span *key, const char *name)
{
	return json_string_equal(key, name, 0);
}

static int key_in(const struct json_span *key, const struct overrides *o)
{
	size_t i;

	for (i = 0; i < o->n; i++) {
		if (json_string_equal(key, o->v[i].key, 0))
			return 1;
	}
	return 0;
}

static void add_overrides(struct sb *out, const struct overrides *o, int first)
{
	size_t i;

	for (i = 0; i < o->n; i++) {
		if (!first || i)
			sb_addc(out, ',');
		json_quote(out, o->v[i].key, strlen(o->v[i].key));
		sb_addc(out, ':');
		json_compact(&o->v[i].val, out);
	}
}

/* {"breadcrumb":[],"metadata":{...}} with the overrides applied. */
static void stream_metadata(const struct json_span *entry, const struct overrides *o, struct sb *out)
{
	struct json_span key, val, mkey, mval;
	size_t pos = 0, mpos;
	int n = 0, m;

	sb_addc(out, '{');
	while (json_object_next(entry, &pos, &key, &val)) {
		if (n++)
			sb_addc(out, ',');
		json_compact(&key, out);
		sb_addc(out, ':');
		if (!key_is(&key, "metadata") || val.type != JSON_OBJECT) {
			json_compact(&val, out);
			continue;
		}
		sb_addc(out, '{');
		mpos = 0;
		m = 0;
		while (json_object_next(&val, &mpos, &mkey, &mval)) {
			if (key_in(&mkey, o))
				continue;
			if (m++)
				sb_addc(out, ',');
			json_compact(&mkey, out);
			sb_addc(out, ':');
			json_compact(&mval, out);
		}
		add_overrides(out, o, m == 0);
		sb_addc(out, '}');
	}
	sb_addc(out, '}');
}

static int stream_names(const struct json_span *st, struct sb *id, struct sb *name)
{
	struct json_span v;

	if (json_object_get(st, "tap_stream_id", &v) == 1 && v.type == JSON_STRING)
		json_string_decode(&v, id);
	if (json_object_get(st, "stream", &v) == 1 && v.type == JSON_STRING)
		json_string_decode(&v, name);
	if (id->len == 0 && name->len)
		sb_adds(id, name->buf);
	if (name->len == 0 && id->len)
		sb_adds(name, id->buf);
	return id->len ? 0 : -1;
}

/* The shard whose streams this process selects (catalog_shard()); n 0: none. */
static unsigned long shard_index, shard_count;

unsigned long catalog_stream_shard(const char *id, size_t len, unsigned long n)
{
	uint32_t h = 2166136261u;	/* FNV-1a, 32 bits */
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)id[i];
		h *= 16777619u;
	}
	return n ? (unsigned long)(h % n) : 0;
}

void catalog_shard(unsigned long index, unsigned long n)
{
	shard_index = index;
	shard_count = n;
}

int catalog_parse_shard(const char *text, unsigned long *index, unsigned long *n)
{
	char *end;

	if (text == NULL || *text < '0' || *text > '9')
		return -1;
	errno = 0;
	*index = strtoul(text, &end, 10);
	if (errno || *end != '/' || end[1] < '0' || end[1] > '9')
		return -1;
	text = end + 1;
	*n = strtoul(text, &end, 10);
	if (errno || *end != '\0' || *n == 0 || *n > CATALOG_SHARDS_MAX || *index >= *n)
		return -1;
	return 0;
}

static int matches(const char *pattern, const struct sb *id, const struct sb *name)
{
	return fnmatch(pattern, id->buf, 0) == 0 || fnmatch(pattern, name->buf, 0) == 0;
}

/* Rewrite one stream entry of the catalog. */
static void edit_stream(const struct json_span *st, int selected, int select_known,
			const struct overrides *o, struct sb *out)
{
	struct json_span key, val, el;
	size_t pos = 0, apos;
	int n = 0, found;

	sb_addc(out, '{');
	while (json_object_next(st, &pos, &key, &val)) {
		if (n++)
			sb_addc(out, ',');
		json_compact(&key, out);
		sb_addc(out, ':');
		if (key_is(&key, "schema") && val.type == JSON_OBJECT && select_known) {
			struct json_span skey, sval;
			size_t spos = 0;
			int m = 0;

			sb_addc(out, '{');
			while (json_object_next(&val, &spos, &skey, &sval)) {
				if (key_is(&skey, "selected"))
					continue;
				if (m++)
					sb_addc(out, ',');
				json_compact(&skey, out);
				sb_addc(out, ':');
				json_compact(&sval, out);
			}
			sb_addf(out, "%s\"selected\":%s}", m ? "," : "", selected ? "true" : "false");
		} else if (key_is(&key, "metadata") && val.type == JSON_ARRAY) {
			int k = 0;

			sb_addc(out, '[');
			apos = 0;
			found = 0;
			while (json_array_next(&val, &apos, &el)) {
				struct json_span crumb;

				if (k++)
					sb_addc(out, ',');
				if (el.type == JSON_OBJECT && json_object_get(&el, "breadcrumb", &crumb) == 1 &&
				    is_empty_array(&crumb)) {
					stream_metadata(&el, o, out);
					found = 1;
				} else {
					json_compact(&el, out);
				}
			}
			if (!found && o->n) {
				sb_adds(out, k ? ",{\"breadcrumb\":[],\"metadata\":{" : "{\"breadcrumb\":[],\"metadata\":{");
				add_overrides(out, o, 1);
				sb_adds(out, "}}");
			}
			sb_addc(out, ']');
		} else {
			json_compact(&val, out);
		}
	}
	sb_addc(out, '}');
}

/*
 * Why column name of stream st is not selected, as a tap reads the
 * catalog's metadata of breadcrumb ["properties", name] (singer-python's
 * rule): "inclusion": "automatic" is selected; "unsupported" is not;
 * else "selected": false is not.  NULL: it is selected.
 */
static const char *column_unselected(const struct json_span *st, const char *name)
{
	struct json_span md, el, bc, m, a, v;
	size_t pos = 0, bpos;

	if (json_object_get(st, "metadata", &md) != 1 || md.type != JSON_ARRAY)
		return NULL;
	while (json_array_next(&md, &pos, &el)) {
		if (el.type != JSON_OBJECT || json_object_get(&el, "breadcrumb", &bc) != 1 ||
		    bc.type != JSON_ARRAY || json_object_get(&el, "metadata", &m) != 1 ||
		    m.type != JSON_OBJECT)
			continue;
		bpos = 0;
		if (!json_array_next(&bc, &bpos, &a) || !json_string_equal(&a, "properties", 0) ||
		    !json_array_next(&bc, &bpos, &a) || a.type != JSON_STRING ||
		    !json_string_equal(&a, name, 0) || json_array_next(&bc, &bpos, &a))
			continue;
		if (json_object_get(&m, "inclusion", &v) == 1 && json_string_equal(&v, "automatic", 0))
			return NULL;
		if (json_object_get(&m, "inclusion", &v) == 1 && json_string_equal(&v, "unsupported", 0))
			return "its catalog metadata says \"inclusion\": \"unsupported\": the tap cannot extract its type";
		if (json_object_get(&m, "selected", &v) == 1 && v.type == JSON_FALSE)
			return "its catalog metadata says \"selected\": false";
		return NULL;
	}
	return NULL;
}

/*
 * An error is one line: the control bytes of bad from start (a name the
 * user wrote with "\n" or "\t", a column's) said as JSON escapes.
 */
static void visible_controls(struct sb *bad, size_t start)
{
	struct sb out = SB_INIT;
	size_t i;

	for (i = start; i < bad->len; i++)
		if ((unsigned char)bad->buf[i] < 0x20 || bad->buf[i] == 0x7f)
			break;
	if (i == bad->len)
		return;
	sb_add(&out, bad->buf, i);
	for (; i < bad->len; i++) {
		unsigned char c = (unsigned char)bad->buf[i];

		if (c == '\n')
			sb_adds(&out, "\\n");
		else if (c == '\t')
			sb_adds(&out, "\\t");
		else if (c == '\r')
			sb_adds(&out, "\\r");
		else if (c < 0x20 || c == 0x7f)
			sb_addf(&out, "\\u%04x", c);
		else
			sb_addc(&out, (char)c);
	}
	sb_free(bad);
	*bad = out;
}

/*
 * A replication-key, name, of stream st, written at at ("FILE:LINE:COL: "
 * or "") as label (source.metadata.PAT.replication-key, replication-key):
 * when st's schema lists its columns and that is none of them, or one that
 * is not selected, bad is set to the message, in the user's terms: where
 * it is written, "no such column" (with "did you mean" a column near it:
 * util_typo_distance()) and the columns there are, or "not a selected
 * column" and why (the tap would say either as "not a selected column" of
 * its temporary catalog).
 */
static void check_key_column(const struct json_span *st, const struct sb *id, const struct sb *key,
			     const char *at, const char *label, struct sb *bad)
{
	struct json_span schema, props, col, w;
	struct sb cols = SB_INIT, near = SB_INIT;
	struct sb shown = SB_INIT;
	size_t pos = 0, neard = (size_t)-1, from = bad->len, i;
	const char *why = NULL, *name = key->buf ? key->buf : "";

	if (json_object_get(st, "schema", &schema) != 1 || schema.type != JSON_OBJECT ||
	    json_object_get(&schema, "properties", &props) != 1 || props.type != JSON_OBJECT)
		return;
	/* (a name holding "\u0000" is no column, not the column before it) */
	if (strlen(name) == key->len && json_object_get(&props, name, &col) == 1 &&
	    (why = column_unselected(st, name)) == NULL)
		return;
	while (why == NULL && json_object_next(&props, &pos, &col, &w)) {
		size_t start = cols.len + (cols.len ? 2 : 0), d;

		sb_adds(&cols, cols.len ? ", " : "");
		json_string_decode(&col, &cols);
		d = util_typo_distance(name, cols.buf + start);
		if (d < neard) {
			neard = d;
			sb_reset(&near);
			sb_adds(&near, cols.buf + start);
		}
	}
	/* (said whole: a NUL as \u0000, the other control bytes by visible_controls()) */
	for (i = 0; i < key->len; i++)
		if (key->buf[i] == '\0')
			sb_adds(&shown, "\\u0000");
		else
			sb_addc(&shown, key->buf[i]);
	if (shown.buf == NULL)
		sb_adds(&shown, "");
	if (why)
		sb_addf(bad, "%s%s '%s': column '%s' of stream '%s' is not a selected column (%s)",
			at, label, shown.buf, shown.buf, id->buf, why);
	else if (near.len)
		sb_addf(bad, "%s%s '%s': stream '%s' has no such column: did you mean '%s'? (its columns: %s)",
			at, label, shown.buf, id->buf, near.buf, cols.buf);
	else
		sb_addf(bad, "%s%s '%s': stream '%s' has no such column (its columns: %s)",
			at, label, shown.buf, id->buf, cols.len ? cols.buf : "none");
	visible_controls(bad, from);
	sb_free(&shown);
	sb_free(&cols);
	sb_free(&near);
}

static int is_replication_key(const char *key)
{
	return strcmp(key, "replication-key") == 0 || strcmp(key, "replication_key") == 0;
}

/*
 * A replication-key that source.metadata (pattern pat) gives stream st,
 * checked (check_key_column()), named where it is written (where_json:
 * config.h's metadata_where).
 */
static void check_replication_key(const struct json_span *st, const struct sb *id, const char *pat,
				  const struct json_span *mk, const struct json_span *mv,
				  const char *where_json, struct sb *bad)
{
	struct json_span w, wp, wk;
	struct sb key = SB_INIT, name = SB_INIT, at = SB_INIT, label = SB_INIT;
	size_t errpos;
	const char *errmsg;

	if (bad->len || mv->type != JSON_STRING)
		return;
	json_string_decode(mk, &key);
	if (!is_replication_key(key.buf))
		goto out;
	json_string_decode(mv, &name);
	if (name.buf == NULL)
		sb_adds(&name, "");
	if (where_json && json_validate(where_json, strlen(where_json), &w, &errpos, &errmsg) == 0 &&
	    w.type == JSON_OBJECT && json_object_get(&w, pat, &wp) == 1 && wp.type == JSON_OBJECT &&
	    json_object_get(&wp, key.buf, &wk) == 1 && wk.type == JSON_STRING) {
		json_string_decode(&wk, &at);
		sb_adds(&at, ": ");
	}
	sb_addf(&label, "source.metadata.%s.%s", pat, key.buf);
	check_key_column(st, id, &name, at.buf ? at.buf : "", label.buf, bad);
out:
	sb_free(&key);
	sb_free(&name);
	sb_free(&at);
	sb_free(&label);
}

static int has_override(const struct overrides *o, const char *key)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].key, key) == 0)
			return 1;
	return 0;
}

/* Whether stream st's own stream-level metadata says "selected": true. */
static int catalog_selected(const struct json_span *st)
{
	struct json_span md, el, bc, m, v;
	size_t pos = 0;

	if (json_object_get(st, "metadata", &md) != 1 || md.type != JSON_ARRAY)
		return 0;
	while (json_array_next(&md, &pos, &el)) {
		if (el.type == JSON_OBJECT && json_object_get(&el, "breadcrumb", &bc) == 1 &&
		    is_empty_array(&bc) && json_object_get(&el, "metadata", &m) == 1 && m.type == JSON_OBJECT)
			return json_object_get(&m, "selected", &v) == 1 && v.type == JSON_TRUE;
	}
	return 0;
}

/*
 * The replication-key of stream st in a catalog of the user's own
 * (source.catalog, the file origin, text its bytes), in its stream-level
 * metadata, when source.metadata does not set one (o): checked
 * (check_key_column()), named FILE:LINE:COL of its value.
 */
static void check_own_replication_key(const struct json_span *st, const struct sb *id,
				      const struct overrides *o, const char *text, const char *origin,
				      struct sb *bad)
{
	struct json_span md, el, bc, m, v;
	struct sb name = SB_INIT, at = SB_INIT;
	size_t pos = 0, line = 1, col = 1;
	const char *p, *key = NULL;

	if (bad->len || has_override(o, "replication-key") || has_override(o, "replication_key"))
		return;
	if (json_object_get(st, "metadata", &md) != 1 || md.type != JSON_ARRAY)
		return;
	while (json_array_next(&md, &pos, &el)) {
		if (el.type == JSON_OBJECT && json_object_get(&el, "breadcrumb", &bc) == 1 &&
		    is_empty_array(&bc) && json_object_get(&el, "metadata", &m) == 1 && m.type == JSON_OBJECT) {
			if (json_object_get(&m, "replication-key", &v) == 1)
				key = "replication-key";
			else if (json_object_get(&m, "replication_key", &v) == 1)
				key = "replication_key";
			break;
		}
	}
	if (key == NULL || v.type != JSON_STRING)
		return;
	for (p = text; p < v.p; p++) {
		if (*p == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)*p & 0xc0) != 0x80) {
			col++;
		}
	}
	json_string_decode(&v, &name);
	if (name.buf == NULL)
		sb_adds(&name, "");
	sb_addf(&at, "%s:%zu:%zu: ", origin, line, col);
	check_key_column(st, id, &name, at.buf, key, bad);
	sb_free(&name);
	sb_free(&at);
}

/*
 * catalog_select(), but 1 when a name in streams is not offered (reported
 * only with report); own: the catalog is the user's (source.catalog, the
 * file origin), whose replication-keys are checked too.
 */
static int select_streams(const char *text, size_t len, const char *origin, int own,
			  char *const *streams, const char *metadata_json, const char *where_json,
			  struct sb *out, struct sb *selected, int report)
{
	struct json_span cat, list, st, key, val, meta = { NULL, 0, JSON_NONE };
	size_t errpos, pos = 0, nsel = 0, i;
	const char *errmsg;
	int *used = NULL, ret = -1, first = 1;
	struct sb offered = SB_INIT, bad = SB_INIT;

	if (json_validate(text, len, &cat, &errpos, &errmsg) != 0) {
		err_msg("%s: not a catalog: byte %zu: %s", origin, errpos + 1, errmsg);
		return -1;
	}
	if (cat.type != JSON_OBJECT || json_object_get(&cat, "streams", &list) != 1 ||
	    list.type != JSON_ARRAY) {
		err_msg("%s: not a catalog: no \"streams\" list", origin);
		return -1;
	}
	if (metadata_json &&
	    json_validate(metadata_json, strlen(metadata_json), &meta, &errpos, &errmsg) != 0) {
		err_msg("source.metadata: %s", errmsg);
		return -1;
	}
	for (i = 0; streams && streams[i]; i++)
		;
	used = xcalloc(i + 1, sizeof(*used));
	if (selected)
		sb_addc(selected, '[');

	sb_addc(out, '{');
	while (json_object_next(&cat, &pos, &key, &val)) {
		size_t spos = 0;
		int n = 0;

		if (!first)
			sb_addc(out, ',');
		first = 0;
		json_compact(&key, out);
		sb_addc(out, ':');
		if (!key_is(&key, "streams")) {
			json_compact(&val, out);
			continue;
		}
		sb_addc(out, '[');
		while (json_array_next(&val, &spos, &st)) {
			struct sb id = SB_INIT, name = SB_INIT, stream_bad = SB_INIT;
			struct overrides o;
			int sel = 0, split = 0;

			memset(&o, 0, sizeof(o));
			if (n++)
				sb_addc(out, ',');
			if (st.type != JSON_OBJECT || stream_names(&st, &id, &name) != 0) {
				json_compact(&st, out);
				sb_free(&id);
				sb_free(&name);
				continue;
			}
			sb_addf(&offered, "%s%s", offered.len ? ", " : "", id.buf);
			for (i = 0; streams && streams[i]; i++) {
				if (strcmp(streams[i], id.buf) == 0 || strcmp(streams[i], name.buf) == 0) {
					used[i] = 1;
					sel = 1;
				}
			}
			if (streams)
				ov_set(&o, NULL, "selected", sel ? &json_true : &json_false);
			if (meta.type == JSON_OBJECT) {
				struct json_span pat, kv, mk, mv;
				size_t mpos = 0;

				while (json_object_next(&meta, &mpos, &pat, &kv)) {
					struct sb p = SB_INIT;
					size_t kpos = 0;

					json_string_decode(&pat, &p);
					if (matches(p.buf, &id, &name)) {
						while (json_object_next(&kv, &kpos, &mk, &mv)) {
							ov_set(&o, &mk, NULL, &mv);
							check_replication_key(&st, &id, p.buf, &mk, &mv,
									      where_json, &stream_bad);
						}
					}
					sb_free(&p);
				}
			}
			for (i = 0; i < o.n; i++) {
				if (strcmp(o.v[i].key, "selected") == 0)
					sel = o.v[i].val.type == JSON_TRUE;
				if (strcmp(o.v[i].key, "shard-split") == 0)
					split = o.v[i].val.type == JSON_TRUE;
			}
			/* a sharded run: another shard's stream is not selected here,
			 * unless the tap splits it across every shard (shard-split) */
			if (sel && shard_count && !split &&
			    catalog_stream_shard(id.buf, id.len, shard_count) != shard_index) {
				sel = 0;
				ov_set(&o, NULL, "selected", &json_false);
			}
			/* (without source.streams, the catalog's own selection holds) */
			if (own && (sel || (!streams && !has_override(&o, "selected") && catalog_selected(&st))))
				check_own_replication_key(&st, &id, &o, text, origin, &stream_bad);
			if (sel && stream_bad.len && !bad.len)
				sb_add(&bad, stream_bad.buf, stream_bad.len);
			sb_free(&stream_bad);
			if (!streams && o.n == 0) {
				json_compact(&st, out);
			} else {
				edit_stream(&st, sel, streams != NULL || shard_count, &o, out);
			}
			if (selected && (sel || !streams)) {
				sb_adds(selected, nsel++ ? "," : "");
				json_quote(selected, id.buf, id.len);
				if (strcmp(id.buf, name.buf) != 0) {
					sb_addc(selected, ',');
					json_quote(selected, name.buf, name.len);
				}
			}
			ov_free(&o);
			sb_free(&id);
			sb_free(&name);
		}
		sb_addc(out, ']');
	}
	sb_adds(out, "}\n");
	if (selected)
		sb_addc(selected, ']');
	ret = 0;
	for (i = 0; streams && streams[i]; i++) {
		if (!used[i]) {
			if (report)
				err_msg("stream '%s' in source.streams is not offered by the tap (it offers: %s)",
					streams[i], offered.len ? offered.buf : "nothing");
			ret = 1;
			break;
		}
	}
	if (ret == 0 && bad.len) {
		/*
		 * (the tap would say it of its temporary catalog, as "not a
		 * selected column"); a cached catalog may predate the column:
		 * without report, the caller asks the tap again
		 */
		if (report)
			err_msg("%s", bad.buf);
		ret = report ? -1 : 1;
	}
	free(used);
	sb_free(&offered);
	sb_free(&bad);
	return ret;
}

int catalog_select(const char *text, size_t len, const char *origin,
		   char *const *streams, const char *metadata_json,
		   struct sb *out, struct sb *selected)
{
	return select_streams(text, len, origin, 0, streams, metadata_json, NULL, out, selected, 1) == 0 ? 0 : -1;
}

/* A file beside the pipeline's YAML file: DIR/NAME<suffix>. */
static char *beside(const struct pipe_config *cfg, const char *suffix)
{
	const char *slash = strrchr(cfg->file, '/');

	if (slash == NULL)
		return xasprintf("%s%s", cfg->name, suffix);
	return xasprintf("%.*s/%s%s", (int)(slash - cfg->file), cfg->file, cfg->name, suffix);
}

/* Replace path with data (written beside it, then renamed); quiet: no message. */
static int write_file(const char *path, const struct sb *data, int mode_private, int quiet)
{
	char *tmp = xasprintf("%s.tmp-%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	int ok;

	if (f == NULL) {
		if (!quiet)
			err_msg("cannot write '%s':", tmp);
		free(tmp);
		return -1;
	}
	if (mode_private)
		fchmod(fileno(f), 0600);
	ok = fwrite(data->buf, 1, data->len, f) == data->len;
	ok = (fclose(f) == 0) && ok;
	if (!ok || rename(tmp, path) != 0) {
		if (!quiet)
			err_msg("cannot write '%s':", path);
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

static int same_tap(const struct json_span *tap, char *const *argv)
{
	struct json_span el;
	size_t pos = 0, i = 0;

	if (tap->type != JSON_ARRAY)
		return 0;
	while (json_array_next(tap, &pos, &el)) {
		if (argv[i] == NULL || el.type != JSON_STRING || !json_string_equal(&el, argv[i], 0))
			return 0;
		i++;
	}
	return argv[i] == NULL;
}

/*
 * Read a NAME.tap.json document at path: 1 when it is cfg's tap command's
 * (*flag: the flag it holds, static, or NULL), else 0.
 */
static int tap_json_read(const char *path, const struct pipe_config *cfg, const char **flag)
{
	struct sb text = SB_INIT;
	struct json_span v, tap, f;
	size_t errpos;
	const char *errmsg;
	int ours = 0;

	*flag = NULL;
	if (util_read_file(path, &text, NULL) != 0 || text.len == 0 ||
	    json_validate(text.buf, text.len, &v, &errpos, &errmsg) != 0 || v.type != JSON_OBJECT ||
	    json_object_get(&v, "tap", &tap) != 1 || !same_tap(&tap, cfg->tap_argv))
		goto out;
	ours = 1;
	if (json_object_get(&v, "catalog_flag", &f) == 1 && f.type == JSON_STRING) {
		if (json_string_equal(&f, "--catalog", 0))
			*flag = "--catalog";
		else if (json_string_equal(&f, "--properties", 0))
			*flag = "--properties";
	}
out:
	sb_free(&text);
	return ours;
}

/* The NAME.tap.json document of cfg's tap command, with flag when not NULL. */
static void tap_json(const struct pipe_config *cfg, const char *flag, struct sb *text)
{
	size_t i;

	sb_adds(text, "{\"tap\":[");
	for (i = 0; cfg->tap_argv[i]; i++) {
		if (i)
			sb_addc(text, ',');
		json_quote(text, cfg->tap_argv[i], strlen(cfg->tap_argv[i]));
	}
	sb_addc(text, ']');
	if (flag)
		sb_addf(text, ",\"catalog_flag\":\"%s\"", flag);
	sb_adds(text, "}\n");
}

void catalog_cache_open(struct catalog_cache *c, const struct pipe_config *cfg, int refresh)
{
	memset(c, 0, sizeof(*c));
	c->catalog_path = beside(cfg, ".catalog.json");
	c->tap_path = beside(cfg, ".tap.json");
	if (!refresh)
		c->valid = tap_json_read(c->tap_path, cfg, &c->flag);
}

void catalog_cache_free(struct catalog_cache *c)
{
	if (c == NULL)
		return;
	free(c->catalog_path);
	free(c->tap_path);
	memset(c, 0, sizeof(*c));
}

/*
 * Write NAME.tap.json for this tap command.  A cached catalog that came
 * from another tap command goes first, so that the file never vouches for it.
 */
static int cache_save(const struct pipe_config *cfg, struct catalog_cache *c, int quiet)
{
	struct sb text = SB_INIT;
	int ret;

	if (!c->valid && !c->discovered && unlink(c->catalog_path) != 0 && errno != ENOENT) {
		if (!quiet)
			err_msg("cannot remove '%s':", c->catalog_path);
		return -1;
	}
	tap_json(cfg, c->flag, &text);
	ret = write_file(c->tap_path, &text, 0, quiet);
	if (ret == 0)
		c->valid = 1;
	sb_free(&text);
	return ret;
}

/* Copy a held-back log to our stderr, then empty it. */
static void show_held(const struct catalog_log *log)
{
	struct sb text = SB_INIT;
	FILE *f;

	if (!log->held || util_read_file(log->path, &text, NULL) != 0)
		goto out;
	if (text.len && write(STDERR_FILENO, text.buf, text.len) < 0) {
		/* nowhere else to say it */
	}
	f = fopen(log->path, "w");
	if (f)
		fclose(f);
out:
	sb_free(&text);
}

static int discover(const struct pipe_config *cfg, char *const *config_args,
		    const struct catalog_log *log, struct sb *out)
{
	struct child_process c = CHILD_PROCESS_INIT;
	int status;

	child_pushv(&c, cfg->tap_argv);
	child_pushv(&c, config_args);
	child_push(&c, "--discover");
	c.err_path = log->path;
	c.err_live = log->live;
	c.err_mask = log->mask;
	status = child_capture(&c, out);
	if (status != 0) {
		show_held(log);
		if (status > 0)
			err_msg("%s --discover failed with status %d", cfg->tap_argv[0], status);
		return -1;
	}
	return 0;
}

/* Discover the catalog into text and cache it (with NAME.tap.json). */
static int rediscover(const struct pipe_config *cfg, char *const *config_args,
		      struct catalog_cache *cache, const struct catalog_log *log,
		      const char *origin, struct sb *text)
{
	struct sb edited = SB_INIT;
	int ret = -1;

	sb_reset(text);
	if (discover(cfg, config_args, log, text) != 0)
		goto out;
	/* check before caching: a broken catalog is not worth keeping */
	if (catalog_select(text->buf ? text->buf : "", text->len, origin, NULL, NULL, &edited, NULL) != 0) {
		show_held(log);
		goto out;
	}
	if (write_file(cache->catalog_path, text, 0, 0) != 0)
		goto out;
	cache->discovered = 1;
	ret = cache_save(cfg, cache, 0);
out:
	sb_free(&edited);
	return ret;
}

/* The schema.properties of the stream id in a catalog: 1 found, 0 no such stream (or no properties), -1 not a catalog. */
static int stream_props(const struct sb *text, const struct sb *id, struct json_span *props)
{
	struct json_span cat, list, st, schema;
	size_t errpos, pos = 0;
	const char *errmsg;

	if (json_validate(text->buf ? text->buf : "", text->len, &cat, &errpos, &errmsg) != 0 ||
	    cat.type != JSON_OBJECT || json_object_get(&cat, "streams", &list) != 1 ||
	    list.type != JSON_ARRAY)
		return -1;
	while (json_array_next(&list, &pos, &st)) {
		struct sb sid = SB_INIT, sname = SB_INIT;
		int same;

		if (st.type != JSON_OBJECT || stream_names(&st, &sid, &sname) != 0) {
			sb_free(&sid);
			sb_free(&sname);
			continue;
		}
		same = strcmp(sid.buf, id->buf) == 0;
		sb_free(&sid);
		sb_free(&sname);
		if (!same)
			continue;
		props->type = JSON_NONE;
		if (json_object_get(&st, "schema", &schema) == 1 && schema.type == JSON_OBJECT &&
		    json_object_get(&schema, "properties", props) == 1 && props->type == JSON_OBJECT)
			return 1;
		return 0;
	}
	return 0;
}

/* The columns of one stream that came, went or changed type, from old to new, into out. */
static void column_changes(const struct json_span *old, const struct json_span *new, struct sb *out)
{
	struct json_span k, v, ov;
	size_t pos = 0;

	while (json_object_next(new, &pos, &k, &v)) {
		struct sb name = SB_INIT, a = SB_INIT, b = SB_INIT;

		json_string_decode(&k, &name);
		if (old->type != JSON_OBJECT || json_object_get(old, name.buf, &ov) != 1) {
			sb_addf(out, "%scolumn '%s' added", out->len ? ", " : "", name.buf);
		} else {
			struct json_span ot, nt;

			if (json_object_get(&ov, "type", &ot) == 1)
				json_compact(&ot, &a);
			if (json_object_get(&v, "type", &nt) == 1)
				json_compact(&nt, &b);
			if (a.len != b.len || (a.len && memcmp(a.buf, b.buf, a.len) != 0))
				sb_addf(out, "%scolumn '%s' type %s -> %s", out->len ? ", " : "", name.buf,
					a.len ? a.buf : "none", b.len ? b.buf : "none");
		}
		sb_free(&name);
		sb_free(&a);
		sb_free(&b);
	}
	pos = 0;
	while (old->type == JSON_OBJECT && json_object_next(old, &pos, &k, &v)) {
		struct sb name = SB_INIT;

		json_string_decode(&k, &name);
		if (new->type != JSON_OBJECT || json_object_get(new, name.buf, &ov) != 1)
			sb_addf(out, "%scolumn '%s' gone", out->len ? ", " : "", name.buf);
		sb_free(&name);
	}
}

/*
 * Say on stderr what changed from the cached catalog old to the one just
 * discovered, for the streams in streams (every stream of new when NULL):
 * a stream added or gone, a column added or gone, a type changed.
 */
static void say_changes(const char *tap, const struct sb *old, const struct sb *new,
			char *const *streams)
{
	struct json_span cat, list, st;
	size_t errpos, pos = 0;
	const char *errmsg;

	if (json_validate(new->buf ? new->buf : "", new->len, &cat, &errpos, &errmsg) != 0 ||
	    cat.type != JSON_OBJECT || json_object_get(&cat, "streams", &list) != 1 ||
	    list.type != JSON_ARRAY)
		return;
	while (json_array_next(&list, &pos, &st)) {
		struct sb id = SB_INIT, name = SB_INIT, what = SB_INIT;
		struct json_span np = { NULL, 0, JSON_NONE }, op = { NULL, 0, JSON_NONE };
		int wanted = streams == NULL, had, i;

		if (st.type != JSON_OBJECT || stream_names(&st, &id, &name) != 0)
			goto next;
		for (i = 0; streams && streams[i]; i++)
			wanted |= strcmp(streams[i], id.buf) == 0 || strcmp(streams[i], name.buf) == 0;
		if (!wanted)
			goto next;
		stream_props(new, &id, &np);
		had = stream_props(old, &id, &op);
		if (had < 0)
			goto next;
		column_changes(&op, &np, &what);
		if (what.len)
			err_msg("warning: the catalog of %s changed since the last discovery: stream '%s': %s",
				tap, id.buf, what.buf);
next:
		sb_free(&id);
		sb_free(&name);
		sb_free(&what);
	}
}

/*
 * Whether this run has discovered already: a run's first pipe-tap (-n, the
 * checks) rediscovers and marks the run's private folder, so that the
 * extraction's pipe-tap uses what it found rather than asking the source
 * again.  Outside a run, never.
 */
static int fresh_in_run(int mark)
{
	const char *dir = getenv("DATASPOC_PIPE_RUN_DIR");
	char *path;
	int r = 0, fd;

	if (dir == NULL || *dir != '/')
		return 0;
	path = xasprintf("%s/catalog-fresh", dir);
	if (mark) {
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd >= 0)
			close(fd);
	} else {
		r = access(path, F_OK) == 0;
	}
	free(path);
	return r;
}

int catalog_prepare(const struct pipe_config *cfg, char *const *config_args,
		    struct catalog_cache *cache, const char *out_path,
		    const struct catalog_log *log, struct sb *selected)
{
	struct sb text = SB_INIT, edited = SB_INIT;
	char *origin = NULL;
	int r = 1, ret = -1;

	if (cfg->catalog_file) {
		origin = xstrdup(cfg->catalog_file);
		if (util_read_file(cfg->catalog_file, &text, NULL) != 0) {
			err_msg("cannot read the catalog '%s':", cfg->catalog_file);
			goto out;
		}
		r = select_streams(text.buf ? text.buf : "", text.len, origin, 1, cfg->streams,
				   cfg->metadata_json, cfg->metadata_where, &edited, selected, 1);
	} else {
		origin = xasprintf("the catalog of %s", cfg->tap_argv[0]);
		if (cache->valid)
			r = util_read_file(cache->catalog_path, &text, NULL);
		/*
		 * A cached catalog is discovered again once a run (issue #29: a
		 * column added to the table was never extracted), and what
		 * changed is said; the run's second pipe-tap takes the first's.
		 */
		if (r == 0 && cache->recheck && !fresh_in_run(0)) {
			struct sb old = text;

			text = (struct sb)SB_INIT;
			if (rediscover(cfg, config_args, cache, log, origin, &text) != 0) {
				sb_free(&old);
				goto out;
			}
			say_changes(cfg->tap_argv[0], &old, &text, cfg->streams);
			sb_free(&old);
		} else if (r != 0 && rediscover(cfg, config_args, cache, log, origin, &text) != 0) {
			goto out;
		}
		if (cache->discovered)
			fresh_in_run(1);
		r = select_streams(text.buf ? text.buf : "", text.len, origin, 0, cfg->streams,
				   cfg->metadata_json, cfg->metadata_where, &edited, selected, cache->discovered);
		/* a cached catalog may predate the stream: ask the tap once more */
		if (r == 1 && !cache->discovered) {
			sb_reset(&edited);
			if (selected)
				sb_reset(selected);
			if (rediscover(cfg, config_args, cache, log, origin, &text) != 0)
				goto out;
			r = select_streams(text.buf ? text.buf : "", text.len, origin, 0, cfg->streams,
					   cfg->metadata_json, cfg->metadata_where, &edited, selected, 1);
		}
	}
	if (r != 0)
		goto out;
	ret = write_file(out_path, &edited, 1, 0);
out:
	free(origin);
	sb_free(&text);
	sb_free(&edited);
	return ret;
}

size_t catalog_offered(const struct pipe_config *cfg, char *const *config_args,
		       struct sb *names)
{
	struct child_process c = CHILD_PROCESS_INIT;
	struct sb text = SB_INIT;
	struct json_span cat, list, st;
	size_t errpos, pos = 0, n = 0;
	const char *errmsg;

	child_pushv(&c, cfg->tap_argv);
	child_pushv(&c, config_args);
	child_push(&c, "--discover");
	c.err_path = "/dev/null";
	if (child_capture(&c, &text) != 0 || text.len == 0 ||
	    json_validate(text.buf, text.len, &cat, &errpos, &errmsg) != 0 ||
	    cat.type != JSON_OBJECT || json_object_get(&cat, "streams", &list) != 1 ||
	    list.type != JSON_ARRAY)
		goto out;
	while (json_array_next(&list, &pos, &st)) {
		struct sb id = SB_INIT, name = SB_INIT;

		if (st.type == JSON_OBJECT && stream_names(&st, &id, &name) == 0) {
			sb_addf(names, "%s%s", n++ ? ", " : "", id.buf);
		}
		sb_free(&id);
		sb_free(&name);
	}
out:
	sb_free(&text);
	return n;
}

/*
 * The run's own copy of the --about answer, in the driver's private folder
 * ($DATASPOC_PIPE_RUN_DIR, shared by the processes of one run): for a run
 * whose NAME.tap.json cannot be written (a read-only pipelines folder),
 * so that pipe-tap -n's answer serves the extraction's pipe-tap too.
 * NULL outside a run.
 */
static char *run_about_path(void)
{
	const char *dir = getenv("DATASPOC_PIPE_RUN_DIR");

	return dir && *dir == '/' ? xasprintf("%s/tap-about.json", dir) : NULL;
}

const char *catalog_flag(const struct pipe_config *cfg, struct catalog_cache *cache,
			 const struct catalog_log *log)
{
	struct sb about = SB_INIT;
	struct json_span v, caps, el;
	size_t errpos, pos = 0;
	const char *errmsg, *flag = "--properties", *known = NULL;
	struct child_process c = CHILD_PROCESS_INIT;
	char *run_path;

	if (cfg->catalog_flag)
		return strcmp(cfg->catalog_flag, "catalog") == 0 ? "--catalog" : "--properties";
	if (cache && cache->valid && cache->flag)
		return cache->flag;
	run_path = run_about_path();
	if (run_path && tap_json_read(run_path, cfg, &known) && known) {
		free(run_path);
		if (cache)
			cache->flag = known;
		return known;
	}
	child_pushv(&c, cfg->tap_argv);
	child_push(&c, "--about");
	/* a tap without --about says so on stderr: words for the log, not for a terminal */
	c.err_path = log->held ? "/dev/null" : log->path;
	c.err_live = log->live;
	c.err_mask = log->mask;
	if (child_capture(&c, &about) == 0 && about.len &&
	    json_validate(about.buf, about.len, &v, &errpos, &errmsg) == 0 &&
	    v.type == JSON_OBJECT && json_object_get(&v, "capabilities", &caps) == 1 &&
	    caps.type == JSON_ARRAY) {
		while (json_array_next(&caps, &pos, &el)) {
			if (json_string_equal(&el, "catalog", 0)) {
				flag = "--catalog";
				break;
			}
		}
	}
	sb_free(&about);
	if (cache)
		cache->flag = flag;
	/* no cache in a folder we cannot write: the run keeps the answer, the
	 * tap is asked again by the next run */
	if ((cache == NULL || cache_save(cfg, cache, 1) != 0) && run_path) {
		tap_json(cfg, flag, &about);
		write_file(run_path, &about, 1, 1);
		sb_free(&about);
	}
	free(run_path);
	return flag;
}
