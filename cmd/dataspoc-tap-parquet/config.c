/*
 * dataspoc-tap-parquet: the config and the catalog (JSON files read with
 * libjq: they hold no record values), the --state file and the STATE
 * message (raw bytes, lib/json.h: other streams' bookmarks pass unchanged).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jv.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "jvx.h"
#include "singer_tap.h"
#include "tap_parquet.h"
#include "util.h"

int in_sorted(char *const *list, size_t n, const char *s)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(list[mid], s);

		if (c == 0)
			return 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

/* The stream's default name: the path's last folder, without ".parquet". */
static char *default_stream(const char *path)
{
	size_t n = strlen(path);
	const char *s;

	while (n > 1 && path[n - 1] == '/')
		n--;
	s = path + n;
	while (s > path && s[-1] != '/')
		s--;
	n = (size_t)(path + n - s);
	if (n > 8 && memcmp(s + n - 8, ".parquet", 8) == 0)
		n -= 8;
	if (n == 0 || s[n - 1] == ':')
		return xstrdup("parquet");
	return xstrndup(s, n);
}

int load_config(struct tap *t)
{
	static const char *const known[] = {
		"path", "stream_name", "glob", "hive_partitioning", "key_properties",
		"endpoint_url"
	};
	const char *file = t->config_file;
	jv conf = jv_invalid(), v;
	int rc;

	rc = singer_tap_load_json("config", file, &conf);
	if (rc)
		goto out;
	if (jv_get_kind(conf) != JV_KIND_OBJECT) {
		rc = singer_tap_bad("config", file, "not a JSON object");
		goto out;
	}
	if (singer_tap_config_string(conf, "path", 0, &t->path) < 0 || t->path == NULL) {
		rc = singer_tap_bad("config", file, "\"path\" must be a non-empty string (a folder or "
			 "a file: /dir, file:///dir, s3://bucket/prefix, gs://bucket/prefix)");
		goto out;
	}
	if (singer_tap_config_string(conf, "stream_name", 0, &t->stream) < 0) {
		rc = singer_tap_bad("config", file, "\"stream_name\" must be a non-empty string");
		goto out;
	}
	if (t->stream == NULL)
		t->stream = default_stream(t->path);
	{
		/* relative to the pipeline's file, as pipe-tap says (its name is the stream's above) */
		char *p = singer_tap_path(t->path);

		free(t->path);
		t->path = p;
	}
	if (singer_tap_config_string(conf, "glob", 0, &t->glob) < 0) {
		rc = singer_tap_bad("config", file, "\"glob\" must be a non-empty string");
		goto out;
	}
	if (t->glob == NULL)
		t->glob = xstrdup("**/*.parquet");
	if (t->glob[0] == '/') {
		rc = singer_tap_bad("config", file, "\"glob\" is relative to \"path\": it cannot start "
			 "with '/'");
		goto out;
	}
	if (singer_tap_config_string(conf, "endpoint_url", 0, &t->endpoint) < 0) {
		rc = singer_tap_bad("config", file, "\"endpoint_url\" must be a non-empty string");
		goto out;
	}
	v = jvx_get(conf, "hive_partitioning");
	if (jv_get_kind(v) == JV_KIND_TRUE)
		t->hive = 1;
	else if (!jvx_absent(v) && jv_get_kind(v) != JV_KIND_FALSE)
		rc = singer_tap_bad("config", file, "\"hive_partitioning\" must be true or false");
	jv_free(v);
	if (rc)
		goto out;
	v = jvx_get(conf, "key_properties");
	if (!jvx_absent(v) && singer_tap_string_list(v, &t->keys, &t->nkeys) != 0)
		rc = singer_tap_bad("config", file, "\"key_properties\" must be an array of strings");
	jv_free(v);
	if (rc)
		goto out;
	singer_tap_warn_unknown(conf, known, sizeof(known) / sizeof(known[0]), file, NULL);
out:
	jv_free(conf);
	return rc;
}

/* ---- the catalog ---- */

int load_catalog(struct tap *t)
{
	/* A catalog that does not list the stream leaves it out. */
	return singer_tap_select_one(t->catalog_what, t->catalog_file, t->stream, &t->selected,
				     &t->drop, &t->ndrop);
}

/* ---- the state ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int state_fail(struct tap *t, size_t pos, const char *why)
{
	return singer_tap_bad_at("state", t->state_file, t->state_text.buf, t->state_text.len, pos,
				 why);
}

int load_state(struct tap *t)
{
	struct json_span top, v, bms, bm, files, e;
	struct sb str = SB_INIT;
	const char *why = NULL;
	size_t pos = 0;
	int rc = 0;

	if (util_read_file(t->state_file, &t->state_text, NULL) < 0) {
		err_msg("state '%s':", t->state_file);
		return EXIT_USAGE;
	}
	if (json_validate(t->state_text.buf ? t->state_text.buf : "", t->state_text.len, &top,
			  &pos, &why) < 0)
		return state_fail(t, pos, why);
	if (top.type != JSON_OBJECT)
		return singer_tap_bad("state", t->state_file, "not a JSON object");
	/* A whole STATE message is accepted too: its value is the state. */
	if (json_object_get(&top, "type", &v) == 1 && v.type == JSON_STRING &&
	    json_string_equal(&v, "STATE", 1) && json_object_get(&top, "value", &v) == 1) {
		if (v.type != JSON_OBJECT)
			return singer_tap_bad("state", t->state_file, "\"value\" is not an object");
		top = v;
	}
	t->state = top;
	if (json_object_get(&top, "bookmarks", &bms) != 1)
		return 0;
	if (bms.type != JSON_OBJECT)
		return singer_tap_bad("state", t->state_file, "\"bookmarks\" is not an object");
	if (json_object_get(&bms, t->stream, &bm) != 1 || bm.type == JSON_NULL)
		return 0;
	if (bm.type != JSON_OBJECT)
		return singer_tap_bad("state", t->state_file, "the bookmark of '%s' is not an object",
			   t->stream);
	if (json_object_get(&bm, "files", &files) != 1 || files.type == JSON_NULL)
		return 0;
	if (files.type != JSON_ARRAY)
		return singer_tap_bad("state", t->state_file, "\"files\" of '%s' is not an array", t->stream);
	pos = 0;
	while (json_array_next(&files, &pos, &e)) {
		if (e.type != JSON_STRING) {
			rc = singer_tap_bad("state", t->state_file, "\"files\" of '%s' holds a value that "
				 "is not a string", t->stream);
			break;
		}
		sb_reset(&str);
		json_string_decode(&e, &str);
		if (str.buf == NULL || memchr(str.buf, '\0', str.len) != NULL)
			continue;
		t->done = xrealloc(t->done, (t->ndone + 1) * sizeof(*t->done));
		t->done[t->ndone++] = sb_detach(&str);
	}
	sb_free(&str);
	if (t->ndone > 1)
		qsort(t->done, t->ndone, sizeof(*t->done), cmp_str);
	return rc;
}

static void add_bookmark(struct tap *t, struct sb *out)
{
	size_t i;

	json_quote(out, t->stream, strlen(t->stream));
	sb_adds(out, ":{\"files\":[");
	for (i = 0; i < t->nread; i++) {
		if (i)
			sb_addc(out, ',');
		json_quote(out, t->read[i], strlen(t->read[i]));
	}
	sb_adds(out, "]}");
}

/* The old bookmarks, this stream's replaced (once, where it was), or added. */
static void add_bookmarks(struct tap *t, const struct json_span *old, struct sb *out)
{
	struct json_span k, v;
	size_t pos = 0;
	int first = 1, done = 0;

	sb_addc(out, '{');
	while (old != NULL && json_object_next(old, &pos, &k, &v)) {
		int mine = json_string_equal(&k, t->stream, 0);

		if (mine && done)
			continue;
		if (!first)
			sb_addc(out, ',');
		first = 0;
		if (mine) {
			add_bookmark(t, out);
			done = 1;
			continue;
		}
		json_compact(&k, out);
		sb_addc(out, ':');
		json_compact(&v, out);
	}
	if (!done) {
		if (!first)
			sb_addc(out, ',');
		add_bookmark(t, out);
	}
	sb_addc(out, '}');
}

void add_state(struct tap *t)
{
	struct json_span k, v;
	size_t pos = 0;
	int first = 1, done = 0;
	struct sb *out = &t->msg;

	sb_adds(out, "{\"type\":\"STATE\",\"value\":{");
	while (t->state.type == JSON_OBJECT && json_object_next(&t->state, &pos, &k, &v)) {
		int bm = json_string_equal(&k, "bookmarks", 0);

		if (bm && done)
			continue;
		if (!first)
			sb_addc(out, ',');
		first = 0;
		json_compact(&k, out);
		sb_addc(out, ':');
		if (bm) {
			add_bookmarks(t, v.type == JSON_OBJECT ? &v : NULL, out);
			done = 1;
		} else
			json_compact(&v, out);
	}
	if (!done) {
		if (!first)
			sb_addc(out, ',');
		sb_adds(out, "\"bookmarks\":");
		add_bookmarks(t, NULL, out);
	}
	sb_adds(out, "}}\n");
}

/* ---- output ---- */

int emit(struct tap *t)
{
	return singer_tap_emit(&t->msg, &t->write_failed);
}

