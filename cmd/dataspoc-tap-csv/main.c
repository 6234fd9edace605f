/*
 * dataspoc-tap-csv: the project's built-in sample source, a Singer tap that
 * reads CSV files (RFC 4180) and prints SCHEMA, RECORD and STATE messages.
 *
 * Every value is a JSON string.  Files are read one row at a time, so memory
 * stays bounded by the longest row, whatever the size of the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jv.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "util.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif

/* A STATE after this many records, on top of the one after each stream. */
#define STATE_EVERY 10000

enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

struct entity {
	char *name;		/* the stream: "entity" */
	char *path;		/* relative to the working directory */
	char **keys;		/* "keys": the stream's key_properties */
	size_t nkeys;
	char *rk;		/* "replication_key", or NULL: full table */
	char delim;
	int selected;		/* 0 when the catalog deselects the stream */
	char **drop;		/* columns the catalog deselects */
	size_t ndrop;
	struct sb bm;		/* the bookmark: last replication_key_value */
	int has_bm;
	int bm_changed;		/* bm differs from the --state file's */
	int mark;		/* scratch for state_value() */
};

struct tap {
	const char *config_file;
	const char *state_file;
	const char *catalog_file;
	const char *catalog_what;	/* "catalog" or "properties" */
	struct entity *ents;
	size_t nents;
	struct sb state_text;		/* the --state file */
	struct json_span state;		/* its value, or JSON_NONE */
	struct sb msg;			/* the message being built */
	unsigned long long nrecords;
	int write_failed;		/* already reported */
};

static const char usage_line[] =
	"usage: dataspoc-tap-csv [-d] -c config [-s state] "
	"[-p properties | --catalog catalog]\n";

static const char help_text[] =
	"Read CSV files and print them as a Singer stream.\n"
	"\n"
	"  -c, --config FILE      the tap's config (required): {\"files\": [{\"entity\",\n"
	"                         \"path\", \"keys\", \"replication_key\", \"delimiter\"}]}\n"
	"                         or {\"csv_files_definition\": \"FILE\"}\n"
	"  -s, --state FILE       resume from this Singer state (bookmarks)\n"
	"  -p, --properties FILE  a catalog: streams or columns with\n"
	"      --catalog FILE     \"selected\": false are left out\n"
	"  -d, --discover         print the catalog of the configured files\n"
	"      --about            print the tap's name and capabilities as JSON\n"
	"      --version          print the version\n"
	"  -h, --help             print this help\n"
	"\n"
	"Messages go to stdout, one JSON object a line; every value is a string.\n"
	"Exit status: 0 success, 1 a file could not be read or is not valid CSV,\n"
	"2 usage, config, state or catalog error.  See dataspoc-tap-csv(1).\n";

static const char about_json[] =
	"{\"name\":\"dataspoc-tap-csv\","
	"\"description\":\"Singer tap for CSV files, the sample source of dataspoc-pipe\","
	"\"version\":\"" PIPE_VERSION "\","
	"\"capabilities\":[\"discover\",\"catalog\",\"properties\",\"state\"],"
	"\"settings\":{\"type\":\"object\",\"properties\":{"
	"\"files\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
	"\"properties\":{"
	"\"entity\":{\"type\":\"string\"},"
	"\"path\":{\"type\":\"string\"},"
	"\"keys\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"replication_key\":{\"type\":\"string\"},"
	"\"delimiter\":{\"type\":\"string\"},"
	"\"encoding\":{\"type\":\"string\"}},"
	"\"required\":[\"entity\",\"path\"]}},"
	"\"csv_files_definition\":{\"type\":\"string\"}}}}";

/* ---- small helpers ---- */

/* Print "what 'file': why" and return EXIT_USAGE (a config-type error). */
static int bad(const char *what, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bad(const char *what, const char *file, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	err_msg("%s '%s': %s", what, file, why);
	return EXIT_USAGE;
}

static int bytes_eq(const char *a, size_t alen, const char *b)
{
	return alen == strlen(b) && memcmp(a, b, alen) == 0;
}

/* Compare two byte strings as memcmp would, the shorter first on a tie. */
static int bytes_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;

	if (c != 0 || alen == blen)
		return c;
	return alen < blen ? -1 : 1;
}

static int in_list(char *const *list, size_t n, const char *s, size_t len)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (bytes_eq(s, len, list[i]))
			return 1;
	return 0;
}

static void free_list(char **list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

/* 1 when s[0..n) is well-formed UTF-8 (no overlongs, surrogates or > U+10FFFF). */
static int utf8_valid(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k, need;
		unsigned char lo = 0x80, hi = 0xBF;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			need = 1;
		else if (c >= 0xE0 && c <= 0xEF) {
			need = 2;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else
			return 0;
		if (n - i <= need)
			return 0;
		for (k = 1; k <= need; k++) {
			unsigned char d = s[i + k];

			if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF))
				return 0;
		}
		i += need + 1;
	}
	return 1;
}

/* Read a whole file.  0, or -1 with errno set. */
static int slurp(const char *path, struct sb *out)
{
	int fd, saved;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (util_read_fd(fd, out) < 0) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	return 0;
}

/* ---- output ---- */

/* Write t->msg to stdout and empty it.  0, or -1 after reporting. */
static int emit(struct tap *t)
{
	if (t->msg.len > 0 &&
	    fwrite(t->msg.buf, 1, t->msg.len, stdout) != t->msg.len) {
		if (errno != EPIPE)
			err_msg("cannot write 'standard output':");
		t->write_failed = 1;
		sb_reset(&t->msg);
		return -1;
	}
	sb_reset(&t->msg);
	return 0;
}

/* ---- JSON files read with libjq: config and catalog ---- */

static int load_json(const char *what, const char *path, jv *out)
{
	struct sb text = SB_INIT;
	jv v, msg;

	if (slurp(path, &text) < 0) {
		err_msg("%s '%s':", what, path);
		sb_free(&text);
		return EXIT_USAGE;
	}
	if (text.len > INT32_MAX) {
		sb_free(&text);
		return bad(what, path, "too large");
	}
	v = jv_parse_sized(text.buf ? text.buf : "", (int)text.len);
	sb_free(&text);
	if (!jv_is_valid(v)) {
		msg = jv_invalid_get_msg(v);
		if (jv_get_kind(msg) == JV_KIND_STRING) {
			/* jq quotes the whole text: it may hold secrets. */
			const char *m = jv_string_value(msg);
			const char *cut = strstr(m, " (while parsing '");

			bad(what, path, "%.*s", cut ? (int)(cut - m) : (int)strlen(m), m);
		} else
			bad(what, path, "not JSON");
		jv_free(msg);
		return EXIT_USAGE;
	}
	*out = v;
	return 0;
}

/* obj[key], obj borrowed; invalid when absent. */
static jv jget(jv obj, const char *key)
{
	return jv_object_get(jv_copy(obj), jv_string(key));
}

/* A C copy of the JSON string v (borrowed), or NULL when it holds a NUL. */
static char *jcstr(jv v)
{
	const char *s = jv_string_value(v);
	size_t n = (size_t)jv_string_length_bytes(jv_copy(v));

	if (memchr(s, '\0', n) != NULL)
		return NULL;
	return xstrndup(s, n);
}

/* An array of strings into a list; -1 when v is not one. */
static int jstrlist(jv v, char ***list, size_t *n)
{
	int i, len;

	*list = NULL;
	*n = 0;
	if (jv_get_kind(v) != JV_KIND_ARRAY)
		return -1;
	len = jv_array_length(jv_copy(v));
	*list = xcalloc((size_t)len + 1, sizeof(**list));
	for (i = 0; i < len; i++) {
		jv s = jv_array_get(jv_copy(v), i);
		char *c = NULL;

		if (jv_get_kind(s) == JV_KIND_STRING)
			c = jcstr(s);
		jv_free(s);
		if (c == NULL)
			return -1;
		(*list)[(*n)++] = c;
	}
	return 0;
}

static int encoding_ok(const char *e)
{
	static const char *const ok[] = {
		"utf-8", "utf8", "utf_8", "utf-8-sig", "utf_8_sig", "ascii",
		"us-ascii"
	};
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcasecmp(e, ok[i]) == 0)
			return 1;
	return 0;
}

static int config_entity(const char *file, int idx, jv f, struct entity *e)
{
	static const char *const known[] = {
		"entity", "path", "keys", "replication_key", "delimiter",
		"encoding"
	};
	jv v;
	int it, rc = 0;
	size_t i;

	e->delim = ',';
	e->selected = 1;
	if (jv_get_kind(f) != JV_KIND_OBJECT)
		return bad("config", file, "files[%d]: not an object", idx);

	v = jget(f, "entity");
	if (jv_get_kind(v) == JV_KIND_STRING)
		e->name = jcstr(v);
	jv_free(v);
	if (e->name == NULL || *e->name == '\0')
		return bad("config", file,
			   "files[%d]: \"entity\" must be a non-empty string", idx);

	v = jget(f, "path");
	if (jv_get_kind(v) == JV_KIND_STRING)
		e->path = jcstr(v);
	jv_free(v);
	if (e->path == NULL || *e->path == '\0')
		return bad("config", file,
			   "%s: \"path\" must be a non-empty string", e->name);

	v = jget(f, "keys");
	if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL &&
	    jstrlist(v, &e->keys, &e->nkeys) < 0)
		rc = bad("config", file,
			 "%s: \"keys\" must be an array of strings", e->name);
	jv_free(v);
	if (rc)
		return rc;

	v = jget(f, "replication_key");
	if (jv_get_kind(v) == JV_KIND_STRING) {
		e->rk = jcstr(v);
		if (e->rk == NULL || *e->rk == '\0')
			rc = bad("config", file, "%s: \"replication_key\" "
				 "must be a non-empty string", e->name);
	} else if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL)
		rc = bad("config", file,
			 "%s: \"replication_key\" must be a string", e->name);
	jv_free(v);
	if (rc)
		return rc;

	v = jget(f, "delimiter");
	if (jv_get_kind(v) == JV_KIND_STRING) {
		const char *d = jv_string_value(v);

		if (jv_string_length_bytes(jv_copy(v)) != 1 || *d == '"' ||
		    *d == '\n' || *d == '\r' || (*d & 0x80))
			rc = bad("config", file, "%s: \"delimiter\" must be one "
				 "ASCII character other than a quote or a line break",
				 e->name);
		else
			e->delim = *d;
	} else if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL)
		rc = bad("config", file,
			 "%s: \"delimiter\" must be a string", e->name);
	jv_free(v);
	if (rc)
		return rc;

	v = jget(f, "encoding");
	if (jv_get_kind(v) == JV_KIND_STRING) {
		if (!encoding_ok(jv_string_value(v)))
			rc = bad("config", file, "%s: encoding '%s' is not "
				 "supported (only UTF-8)", e->name,
				 jv_string_value(v));
	} else if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL)
		rc = bad("config", file,
			 "%s: \"encoding\" must be a string", e->name);
	jv_free(v);
	if (rc)
		return rc;

	/* Other tap-csv settings (quotechar, ...) are not supported: say so. */
	for (it = jv_object_iter(f); jv_object_iter_valid(f, it);
	     it = jv_object_iter_next(f, it)) {
		jv k = jv_object_iter_key(f, it);
		const char *ks = jv_string_value(k);

		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strcmp(ks, known[i]) == 0)
				break;
		if (i == sizeof(known) / sizeof(known[0]))
			err_warn("config '%s': %s: key '%s' ignored", file,
				 e->name, ks);
		jv_free(k);
	}
	return 0;
}

static int load_config(struct tap *t)
{
	const char *file = t->config_file;
	const char *list_file = file;
	jv conf = jv_invalid(), files = jv_invalid(), def = jv_invalid();
	int rc, i, n;
	size_t j, k;

	rc = load_json("config", file, &conf);
	if (rc)
		goto out;
	if (jv_get_kind(conf) != JV_KIND_OBJECT) {
		rc = bad("config", file, "not a JSON object");
		goto out;
	}
	files = jget(conf, "files");
	def = jget(conf, "csv_files_definition");
	if (jv_is_valid(def) && jv_get_kind(def) != JV_KIND_NULL) {
		char *path;

		if (jv_is_valid(files) && jv_get_kind(files) != JV_KIND_NULL) {
			rc = bad("config", file, "both \"files\" and "
				 "\"csv_files_definition\" are set");
			goto out;
		}
		if (jv_get_kind(def) != JV_KIND_STRING ||
		    (path = jcstr(def)) == NULL || *path == '\0') {
			rc = bad("config", file, "\"csv_files_definition\" "
				 "must be a file name");
			goto out;
		}
		free(path);
		list_file = jv_string_value(def);
		jv_free(files);
		files = jv_invalid();
		rc = load_json("config", list_file, &files);
		if (rc)
			goto out;
	}
	if (!jv_is_valid(files) || jv_get_kind(files) == JV_KIND_NULL) {
		rc = bad("config", file,
			 "\"files\" or \"csv_files_definition\" is required");
		goto out;
	}
	if (jv_get_kind(files) != JV_KIND_ARRAY) {
		rc = bad("config", list_file,
			 "the list of files must be a JSON array");
		goto out;
	}
	n = jv_array_length(jv_copy(files));
	if (n == 0) {
		rc = bad("config", list_file, "the list of files is empty");
		goto out;
	}
	t->ents = xcalloc((size_t)n, sizeof(*t->ents));
	for (i = 0; i < n; i++) {
		jv f = jv_array_get(jv_copy(files), i);

		t->nents++;
		rc = config_entity(list_file, i, f, &t->ents[i]);
		jv_free(f);
		if (rc)
			goto out;
	}
	for (j = 0; j < t->nents; j++)
		for (k = 0; k < j; k++)
			if (strcmp(t->ents[j].name, t->ents[k].name) == 0) {
				rc = bad("config", list_file, "entity '%s' is "
					 "listed twice", t->ents[j].name);
				goto out;
			}
out:
	jv_free(conf);
	jv_free(files);
	jv_free(def);
	return rc;
}

static struct entity *find_entity(struct tap *t, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < t->nents; i++)
		if (bytes_eq(name, len, t->ents[i].name))
			return &t->ents[i];
	return NULL;
}

/* 1 when metadata entry m (an object) says "selected": false. */
static int deselected(jv m)
{
	jv md = jget(m, "metadata");
	int r = 0;

	if (jv_get_kind(md) == JV_KIND_OBJECT) {
		jv s = jget(md, "selected");

		r = jv_get_kind(s) == JV_KIND_FALSE;
		jv_free(s);
	}
	jv_free(md);
	return r;
}

/* One stream of the catalog: its selection and its deselected columns. */
static int catalog_stream(struct tap *t, jv s, int idx)
{
	const char *what = t->catalog_what, *file = t->catalog_file;
	struct entity *e;
	jv id, md = jv_invalid(), schema;
	int i, n, rc = 0;

	if (jv_get_kind(s) != JV_KIND_OBJECT)
		return bad(what, file, "streams[%d]: not an object", idx);
	id = jget(s, "tap_stream_id");
	if (jv_get_kind(id) != JV_KIND_STRING) {
		jv_free(id);
		id = jget(s, "stream");
	}
	if (jv_get_kind(id) != JV_KIND_STRING) {
		jv_free(id);
		return bad(what, file, "streams[%d]: no \"tap_stream_id\"", idx);
	}
	e = find_entity(t, jv_string_value(id),
			(size_t)jv_string_length_bytes(jv_copy(id)));
	if (e == NULL) {
		err_warn("%s '%s': stream '%s' is not in the config", what,
			 file, jv_string_value(id));
		jv_free(id);
		return 0;
	}
	jv_free(id);
	e->selected = 1;

	/* The legacy form: "selected" in the stream's schema. */
	schema = jget(s, "schema");
	if (jv_get_kind(schema) == JV_KIND_OBJECT) {
		jv sel = jget(schema, "selected");

		if (jv_get_kind(sel) == JV_KIND_FALSE)
			e->selected = 0;
		jv_free(sel);
	}
	jv_free(schema);

	md = jget(s, "metadata");
	if (!jv_is_valid(md) || jv_get_kind(md) == JV_KIND_NULL)
		goto out;
	if (jv_get_kind(md) != JV_KIND_ARRAY) {
		rc = bad(what, file, "%s: \"metadata\" is not an array", e->name);
		goto out;
	}
	n = jv_array_length(jv_copy(md));
	for (i = 0; i < n && rc == 0; i++) {
		jv m = jv_array_get(jv_copy(md), i), bc = jv_invalid();
		int len;

		if (jv_get_kind(m) != JV_KIND_OBJECT) {
			rc = bad(what, file, "%s: metadata[%d] is not an object",
				 e->name, i);
			goto next;
		}
		bc = jget(m, "breadcrumb");
		if (jv_get_kind(bc) != JV_KIND_ARRAY) {
			rc = bad(what, file, "%s: metadata[%d] has no "
				 "\"breadcrumb\" array", e->name, i);
			goto next;
		}
		len = jv_array_length(jv_copy(bc));
		if (len == 0) {
			if (deselected(m))
				e->selected = 0;
		} else if (len == 2) {
			jv a = jv_array_get(jv_copy(bc), 0);
			jv b = jv_array_get(jv_copy(bc), 1);

			if (jv_get_kind(a) == JV_KIND_STRING &&
			    strcmp(jv_string_value(a), "properties") == 0 &&
			    jv_get_kind(b) == JV_KIND_STRING && deselected(m)) {
				char *col = jcstr(b);

				if (col != NULL) {
					e->drop = xrealloc(e->drop, (e->ndrop + 1) *
							   sizeof(*e->drop));
					e->drop[e->ndrop++] = col;
				}
			}
			jv_free(a);
			jv_free(b);
		}
next:
		jv_free(bc);
		jv_free(m);
	}
out:
	jv_free(md);
	return rc;
}

/*
 * With a catalog, only the streams it lists are extracted, less those whose
 * stream-level metadata says "selected": false.
 */
static int load_catalog(struct tap *t)
{
	jv cat = jv_invalid(), streams = jv_invalid();
	int rc, i, n;
	size_t j;

	rc = load_json(t->catalog_what, t->catalog_file, &cat);
	if (rc)
		goto out;
	if (jv_get_kind(cat) == JV_KIND_OBJECT)
		streams = jget(cat, "streams");
	if (jv_get_kind(streams) != JV_KIND_ARRAY) {
		rc = bad(t->catalog_what, t->catalog_file,
			 "not a catalog: {\"streams\": [...]} expected");
		goto out;
	}
	for (j = 0; j < t->nents; j++)
		t->ents[j].selected = 0;
	n = jv_array_length(jv_copy(streams));
	for (i = 0; i < n && rc == 0; i++) {
		jv s = jv_array_get(jv_copy(streams), i);

		rc = catalog_stream(t, s, i);
		jv_free(s);
	}
out:
	jv_free(cat);
	jv_free(streams);
	return rc;
}

/* ---- state, kept as bytes so other streams' bookmarks pass unchanged ---- */

static int state_fail(struct tap *t, size_t pos, const char *why)
{
	size_t i, line = 1, col = 1;

	for (i = 0; i < pos && i < t->state_text.len; i++) {
		if (t->state_text.buf[i] == '\n') {
			line++;
			col = 1;
		} else
			col++;
	}
	return bad("state", t->state_file, "line %zu, column %zu: %s", line,
		   col, why);
}

static int load_state(struct tap *t)
{
	struct json_span top, v, bms, bm, s;
	struct sb str = SB_INIT;
	const char *why = NULL;
	size_t pos = 0, i;
	int rc = 0;

	if (slurp(t->state_file, &t->state_text) < 0) {
		err_msg("state '%s':", t->state_file);
		return EXIT_USAGE;
	}
	if (json_validate(t->state_text.buf ? t->state_text.buf : "",
			  t->state_text.len, &top, &pos, &why) < 0)
		return state_fail(t, pos, why);
	if (top.type != JSON_OBJECT)
		return bad("state", t->state_file, "not a JSON object");
	/* A whole STATE message is accepted too: its value is the state. */
	if (json_object_get(&top, "type", &v) == 1 && v.type == JSON_STRING) {
		json_string_decode(&v, &str);
		if (strcasecmp(str.buf, "STATE") == 0 &&
		    json_object_get(&top, "value", &v) == 1) {
			if (v.type != JSON_OBJECT) {
				sb_free(&str);
				return bad("state", t->state_file,
					   "\"value\" is not an object");
			}
			top = v;
		}
	}
	t->state = top;
	if (json_object_get(&top, "bookmarks", &bms) != 1)
		goto out;
	if (bms.type != JSON_OBJECT) {
		rc = bad("state", t->state_file, "\"bookmarks\" is not an object");
		goto out;
	}
	for (i = 0; i < t->nents; i++) {
		struct entity *e = &t->ents[i];

		if (e->rk == NULL || json_object_get(&bms, e->name, &bm) != 1)
			continue;
		if (bm.type != JSON_OBJECT) {
			rc = bad("state", t->state_file, "bookmark of '%s' is "
				 "not an object", e->name);
			goto out;
		}
		if (json_object_get(&bm, "replication_key", &s) == 1 &&
		    s.type == JSON_STRING) {
			sb_reset(&str);
			json_string_decode(&s, &str);
			if (!bytes_eq(str.buf, str.len, e->rk)) {
				err_warn("state '%s': %s was bookmarked on '%s', "
					 "not '%s': extracting every row",
					 t->state_file, e->name, str.buf, e->rk);
				continue;
			}
		}
		if (json_object_get(&bm, "replication_key_value", &s) != 1 ||
		    s.type == JSON_NULL)
			continue;
		if (s.type != JSON_STRING) {
			rc = bad("state", t->state_file, "replication_key_value "
				 "of '%s' is not a string", e->name);
			goto out;
		}
		json_string_decode(&s, &e->bm);
		e->has_bm = 1;
	}
out:
	sb_free(&str);
	return rc;
}

static void add_bookmark(struct sb *out, const struct entity *e)
{
	json_quote(out, e->name, strlen(e->name));
	sb_adds(out, ":{\"replication_key\":");
	json_quote(out, e->rk, strlen(e->rk));
	sb_adds(out, ",\"replication_key_value\":");
	json_quote(out, e->bm.buf, e->bm.len);
	sb_addc(out, '}');
}

static int changed(const struct entity *e)
{
	return e->rk != NULL && e->has_bm && e->bm_changed;
}

static void add_bookmarks(struct tap *t, const struct json_span *old,
			  struct sb *out)
{
	struct json_span k, v;
	struct sb key = SB_INIT;
	size_t pos = 0, i;
	int first = 1;

	for (i = 0; i < t->nents; i++)
		t->ents[i].mark = 0;
	sb_addc(out, '{');
	while (old != NULL && json_object_next(old, &pos, &k, &v)) {
		struct entity *e;

		sb_reset(&key);
		json_string_decode(&k, &key);
		e = find_entity(t, key.buf, key.len);
		if (e != NULL && changed(e)) {
			if (e->mark)
				continue;	/* a duplicate key: replaced once */
			e->mark = 1;
			if (!first)
				sb_addc(out, ',');
			add_bookmark(out, e);
		} else {
			if (!first)
				sb_addc(out, ',');
			json_compact(&k, out);
			sb_addc(out, ':');
			json_compact(&v, out);
		}
		first = 0;
	}
	for (i = 0; i < t->nents; i++) {
		if (!changed(&t->ents[i]) || t->ents[i].mark)
			continue;
		if (!first)
			sb_addc(out, ',');
		add_bookmark(out, &t->ents[i]);
		first = 0;
	}
	sb_addc(out, '}');
	sb_free(&key);
}

/*
 * The state: the --state value with the bookmarks of the streams extracted
 * so far replaced, every other member copied byte for byte.
 */
static void state_value(struct tap *t, struct sb *out)
{
	struct json_span k, v;
	struct sb key = SB_INIT;
	size_t pos = 0, i;
	int first = 1, done = 0, any = 0;

	for (i = 0; i < t->nents; i++)
		any |= changed(&t->ents[i]);
	sb_addc(out, '{');
	while (t->state.type == JSON_OBJECT &&
	       json_object_next(&t->state, &pos, &k, &v)) {
		sb_reset(&key);
		json_string_decode(&k, &key);
		if (bytes_eq(key.buf, key.len, "bookmarks") && any) {
			if (done)
				continue;
			done = 1;
		}
		if (!first)
			sb_addc(out, ',');
		first = 0;
		json_compact(&k, out);
		sb_addc(out, ':');
		if (bytes_eq(key.buf, key.len, "bookmarks") && any)
			add_bookmarks(t, &v, out);
		else
			json_compact(&v, out);
	}
	if (any && !done) {
		if (!first)
			sb_addc(out, ',');
		sb_adds(out, "\"bookmarks\":");
		add_bookmarks(t, NULL, out);
	}
	sb_addc(out, '}');
	sb_free(&key);
}

static int emit_state(struct tap *t)
{
	sb_adds(&t->msg, "{\"type\":\"STATE\",\"value\":");
	state_value(t, &t->msg);
	sb_adds(&t->msg, "}\n");
	return emit(t);
}

/* ---- CSV (RFC 4180), read one row at a time ---- */

#define CSV_EOF (-1)
#define CSV_ERR (-2)

struct csv {
	const char *path;
	int fd;
	char delim;
	unsigned long line;	/* the physical line being read, 1-based */
	unsigned long row_line;	/* the line the last row started on */
	const char *err;	/* why csv_next() failed; NULL: see errno */
	unsigned long err_line;
	struct sb row;		/* the row's fields, back to back */
	size_t *end;		/* end[i]: where field i ends in row */
	size_t nfields, cap;
	size_t pos, len;
	int eof;
	char buf[1 << 16];
};

static struct csv *csv_open(const char *path, char delim)
{
	static const char bom[] = "\xEF\xBB\xBF";
	struct csv *c;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	c->path = path;
	c->fd = fd;
	c->delim = delim;
	c->line = 1;
	/* Enough bytes to see a byte order mark, even from a slow pipe. */
	while (c->len < 3) {
		n = read(fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;

			close(fd);
			free(c);
			errno = saved;
			return NULL;
		}
		if (n == 0) {
			c->eof = 1;
			break;
		}
		c->len += (size_t)n;
	}
	if (c->len >= 3 && memcmp(c->buf, bom, 3) == 0)
		c->pos = 3;
	return c;
}

static void csv_close(struct csv *c)
{
	if (c == NULL)
		return;
	close(c->fd);
	sb_free(&c->row);
	free(c->end);
	free(c);
}

static int csv_peek(struct csv *c)
{
	ssize_t n;

	while (c->pos == c->len) {
		if (c->eof)
			return CSV_EOF;
		n = read(c->fd, c->buf, sizeof(c->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return CSV_ERR;
		if (n == 0)
			c->eof = 1;
		c->pos = 0;
		c->len = (size_t)n;
	}
	return (unsigned char)c->buf[c->pos];
}

static int csv_getc(struct csv *c)
{
	int ch = csv_peek(c);

	if (ch >= 0)
		c->pos++;
	return ch;
}

/* After '\n', '\r' or "\r\n" outside quotes. */
static void csv_eol(struct csv *c, int ch)
{
	if (ch == '\r' && csv_peek(c) == '\n')
		c->pos++;
	c->line++;
}

static void csv_field_end(struct csv *c)
{
	if (c->nfields == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->end = xrealloc(c->end, c->cap * sizeof(*c->end));
	}
	c->end[c->nfields++] = c->row.len;
}

static const char *csv_field(const struct csv *c, size_t i, size_t *len)
{
	size_t start = i ? c->end[i - 1] : 0;

	*len = c->end[i] - start;
	return c->row.buf ? c->row.buf + start : "";
}

/*
 * The next row.  1 with a row, 0 at the end of the file, -1 on error (c->err
 * says why, or errno when c->err is NULL).  Empty lines are skipped, as
 * Python's csv module does.
 */
static int csv_next(struct csv *c)
{
	enum { START, PLAIN, QUOTED, CLOSED } st = START;
	int ch;

	sb_reset(&c->row);
	c->nfields = 0;
	c->row_line = c->line;
	for (;;) {
		ch = csv_getc(c);
		if (ch == CSV_ERR) {
			c->err = NULL;
			return -1;
		}
		switch (st) {
		case START:
			if (ch == '"') {
				st = QUOTED;
				break;
			}
			if (ch == CSV_EOF || ch == '\n' || ch == '\r') {
				if (c->nfields == 0) {
					if (ch == CSV_EOF)
						return 0;
					csv_eol(c, ch);
					c->row_line = c->line;
					break;
				}
				csv_field_end(c);
				if (ch != CSV_EOF)
					csv_eol(c, ch);
				return 1;
			}
			if (ch == c->delim) {
				csv_field_end(c);
				break;
			}
			sb_addc(&c->row, (char)ch);
			st = PLAIN;
			break;
		case PLAIN:
			if (ch == c->delim) {
				csv_field_end(c);
				st = START;
			} else if (ch == CSV_EOF || ch == '\n' || ch == '\r') {
				csv_field_end(c);
				if (ch != CSV_EOF)
					csv_eol(c, ch);
				return 1;
			} else
				sb_addc(&c->row, (char)ch);	/* a bare '"' too */
			break;
		case QUOTED:
			if (ch == CSV_EOF) {
				c->err = "unterminated quoted field";
				c->err_line = c->row_line;
				return -1;
			}
			if (ch == '"') {
				st = CLOSED;
				break;
			}
			if (ch == '\n' || (ch == '\r' && csv_peek(c) != '\n'))
				c->line++;
			sb_addc(&c->row, (char)ch);
			break;
		case CLOSED:
			if (ch == '"') {
				sb_addc(&c->row, '"');
				st = QUOTED;
			} else if (ch == c->delim) {
				csv_field_end(c);
				st = START;
			} else if (ch == CSV_EOF || ch == '\n' || ch == '\r') {
				csv_field_end(c);
				if (ch != CSV_EOF)
					csv_eol(c, ch);
				return 1;
			} else {
				c->err = "unexpected character after a closing quote";
				c->err_line = c->line;
				return -1;
			}
			break;
		}
	}
}

/* Report a csv_next() failure, after what was printed before it. */
static int csv_fail(const struct csv *c)
{
	fflush(stdout);
	if (c->err == NULL)
		err_msg("cannot read '%s':", c->path);
	else
		err_msg("%s:%lu: %s", c->path, c->err_line, c->err);
	return EXIT_FAIL;
}

/* ---- streams ---- */

struct header {
	size_t ncols;
	char **cols;		/* header names */
	size_t *out;		/* indexes of the columns printed */
	size_t nout;
	size_t rk;		/* index of the replication key */
};

static void header_free(struct header *h)
{
	free_list(h->cols, h->ncols);
	free(h->out);
}

/*
 * Open e's file and read its header.  Returns 0 with *cp open (NULL when the
 * file is empty), or an exit status after reporting.
 */
static int open_stream(const struct tap *t, struct entity *e,
		       struct csv **cp, struct header *h)
{
	struct csv *c;
	size_t i, j, len;
	const char *f;
	int r;

	memset(h, 0, sizeof(*h));
	h->rk = SIZE_MAX;
	*cp = c = csv_open(e->path, e->delim);
	if (c == NULL) {
		fflush(stdout);
		err_msg("cannot open '%s':", e->path);
		return EXIT_FAIL;
	}
	r = csv_next(c);
	if (r < 0)
		return csv_fail(c);
	if (r == 0)
		return 0;	/* empty: no columns, nothing to check */
	h->ncols = c->nfields;
	h->cols = xcalloc(h->ncols, sizeof(*h->cols));
	for (i = 0; i < c->nfields; i++) {
		f = csv_field(c, i, &len);
		if (!utf8_valid((const unsigned char *)f, len) ||
		    memchr(f, '\0', len) != NULL) {
			fflush(stdout);
			err_msg("%s:%lu: column %zu: invalid UTF-8 in the header",
				e->path, c->row_line, i + 1);
			return EXIT_FAIL;
		}
		h->cols[i] = xstrndup(f, len);
		for (j = 0; j < i; j++)
			if (strcmp(h->cols[i], h->cols[j]) == 0) {
				fflush(stdout);
				err_msg("%s:%lu: column '%s' appears twice",
					e->path, c->row_line, h->cols[i]);
				return EXIT_FAIL;
			}
	}
	for (i = 0; i < e->nkeys; i++)
		if (!in_list(h->cols, h->ncols, e->keys[i], strlen(e->keys[i]))) {
			fflush(stdout);
			return bad("config", t->config_file, "%s: key '%s' is "
				   "not a column of '%s'", e->name, e->keys[i],
				   e->path);
		}
	for (i = 0; e->rk != NULL && i < h->ncols; i++)
		if (strcmp(h->cols[i], e->rk) == 0)
			h->rk = i;
	if (e->rk != NULL && h->rk == SIZE_MAX) {
		fflush(stdout);
		return bad("config", t->config_file, "%s: replication_key '%s' "
			   "is not a column of '%s'", e->name, e->rk, e->path);
	}
	/* Keys and the replication key are always printed ("automatic"). */
	h->out = xcalloc(h->ncols, sizeof(*h->out));
	for (i = 0; i < h->ncols; i++) {
		const char *col = h->cols[i];

		if (in_list(e->drop, e->ndrop, col, strlen(col)) && i != h->rk &&
		    !in_list(e->keys, e->nkeys, col, strlen(col)))
			continue;
		h->out[h->nout++] = i;
	}
	return 0;
}

static void add_string_list(struct sb *out, char *const *list, size_t n)
{
	size_t i;

	sb_addc(out, '[');
	for (i = 0; i < n; i++) {
		if (i)
			sb_addc(out, ',');
		json_quote(out, list[i], strlen(list[i]));
	}
	sb_addc(out, ']');
}

static void add_schema(struct sb *out, const struct header *h)
{
	size_t i;

	sb_adds(out, "{\"type\":\"object\",\"properties\":{");
	for (i = 0; i < h->nout; i++) {
		const char *col = h->cols[h->out[i]];

		if (i)
			sb_addc(out, ',');
		json_quote(out, col, strlen(col));
		sb_adds(out, ":{\"type\":[\"null\",\"string\"]}");
	}
	sb_adds(out, "}}");
}

static int sync_stream(struct tap *t, struct entity *e)
{
	struct csv *c = NULL;
	struct header h;
	struct sb pre = SB_INIT, max = SB_INIT;
	size_t *colpre = NULL;	/* where each "col": starts in pre */
	size_t i, len, name_end;
	const char *f;
	int rc, r, has_max = 0;

	rc = open_stream(t, e, &c, &h);
	if (rc)
		goto out;

	sb_adds(&t->msg, "{\"type\":\"SCHEMA\",\"stream\":");
	json_quote(&t->msg, e->name, strlen(e->name));
	sb_adds(&t->msg, ",\"schema\":");
	add_schema(&t->msg, &h);
	sb_adds(&t->msg, ",\"key_properties\":");
	add_string_list(&t->msg, e->keys, e->nkeys);
	if (e->rk != NULL) {
		sb_adds(&t->msg, ",\"bookmark_properties\":");
		add_string_list(&t->msg, &e->rk, 1);
	}
	sb_adds(&t->msg, "}\n");
	rc = EXIT_FAIL;
	if (emit(t) < 0)
		goto out;

	/* The bytes every RECORD starts with, then each column's "name": */
	sb_adds(&pre, "{\"type\":\"RECORD\",\"stream\":");
	json_quote(&pre, e->name, strlen(e->name));
	sb_adds(&pre, ",\"record\":{");
	name_end = pre.len;
	colpre = xcalloc(h.nout + 1, sizeof(*colpre));
	for (i = 0; i < h.nout; i++) {
		const char *col = h.cols[h.out[i]];

		colpre[i] = pre.len;
		if (i)
			sb_addc(&pre, ',');
		json_quote(&pre, col, strlen(col));
		sb_addc(&pre, ':');
	}
	colpre[h.nout] = pre.len;

	while (h.ncols > 0 && (r = csv_next(c)) != 0) {
		if (r < 0) {
			rc = csv_fail(c);
			goto out;
		}
		if (c->nfields != h.ncols) {
			fflush(stdout);
			err_msg("%s:%lu: expected %zu fields, got %zu", e->path,
				c->row_line, h.ncols, c->nfields);
			goto out;
		}
		if (e->rk != NULL) {
			f = csv_field(c, h.rk, &len);
			/* At-least-once: the row on the bookmark comes again. */
			if (e->has_bm && bytes_cmp(f, len, e->bm.buf, e->bm.len) < 0)
				continue;
			if (!has_max || bytes_cmp(f, len, max.buf, max.len) > 0) {
				sb_reset(&max);
				sb_add(&max, f, len);
				has_max = 1;
			}
		}
		sb_add(&t->msg, pre.buf, name_end);
		for (i = 0; i < h.nout; i++) {
			f = csv_field(c, h.out[i], &len);
			if (!utf8_valid((const unsigned char *)f, len)) {
				fflush(stdout);
				err_msg("%s:%lu: column '%s': invalid UTF-8", e->path,
					c->row_line, h.cols[h.out[i]]);
				goto out;
			}
			sb_add(&t->msg, pre.buf + colpre[i],
			       colpre[i + 1] - colpre[i]);
			json_quote(&t->msg, f, len);
		}
		sb_adds(&t->msg, "}}\n");
		if (emit(t) < 0)
			goto out;
		/*
		 * Rows need not be in replication key order, so a STATE in
		 * the middle of a stream keeps the bookmark it started with.
		 */
		if (++t->nrecords % STATE_EVERY == 0 && emit_state(t) < 0)
			goto out;
	}
	if (has_max) {
		sb_reset(&e->bm);
		sb_add(&e->bm, max.buf, max.len);
		e->has_bm = 1;
		e->bm_changed = 1;
	}
	if (emit_state(t) < 0)
		goto out;
	rc = 0;
out:
	csv_close(c);
	header_free(&h);
	sb_free(&pre);
	sb_free(&max);
	free(colpre);
	return rc;
}

/* ---- discovery ---- */

static void add_metadata(struct sb *out, const struct entity *e,
			 const struct header *h)
{
	size_t i;

	sb_adds(out, "[{\"breadcrumb\":[],\"metadata\":{"
		"\"inclusion\":\"available\",\"selected-by-default\":true,"
		"\"table-key-properties\":");
	add_string_list(out, e->keys, e->nkeys);
	if (e->rk != NULL) {
		sb_adds(out, ",\"valid-replication-keys\":");
		add_string_list(out, &e->rk, 1);
		sb_adds(out, ",\"forced-replication-method\":\"INCREMENTAL\"");
	} else
		sb_adds(out, ",\"forced-replication-method\":\"FULL_TABLE\"");
	sb_adds(out, "}}");
	for (i = 0; i < h->ncols; i++) {
		const char *col = h->cols[i];
		int automatic = i == h->rk ||
			in_list(e->keys, e->nkeys, col, strlen(col));

		sb_adds(out, ",{\"breadcrumb\":[\"properties\",");
		json_quote(out, col, strlen(col));
		sb_adds(out, "],\"metadata\":{\"inclusion\":");
		sb_adds(out, automatic ? "\"automatic\"" : "\"available\"");
		sb_adds(out, ",\"selected-by-default\":true}}");
	}
	sb_addc(out, ']');
}

static int print_pretty(struct tap *t, const char *json, size_t len)
{
	struct json_span v;
	const char *why = NULL;
	size_t pos = 0;

	if (json_validate(json, len, &v, &pos, &why) < 0) {
		err_msg("internal error: invalid JSON at byte %zu: %s", pos, why);
		return EXIT_FAIL;
	}
	json_pretty(&v, &t->msg);
	return emit(t) < 0 ? EXIT_FAIL : 0;
}

static int discover(struct tap *t)
{
	struct sb cat = SB_INIT;
	struct csv *c = NULL;
	struct header h;
	size_t i, j;
	int rc = 0;

	sb_adds(&cat, "{\"streams\":[");
	for (i = 0; i < t->nents && rc == 0; i++) {
		struct entity *e = &t->ents[i];

		rc = open_stream(t, e, &c, &h);
		if (rc == 0) {
			/* The catalog lists every column: drop nothing. */
			h.nout = h.ncols;
			for (j = 0; j < h.ncols; j++)
				h.out[j] = j;
			if (i)
				sb_addc(&cat, ',');
			sb_adds(&cat, "{\"tap_stream_id\":");
			json_quote(&cat, e->name, strlen(e->name));
			sb_adds(&cat, ",\"stream\":");
			json_quote(&cat, e->name, strlen(e->name));
			sb_adds(&cat, ",\"schema\":");
			add_schema(&cat, &h);
			sb_adds(&cat, ",\"key_properties\":");
			add_string_list(&cat, e->keys, e->nkeys);
			if (e->rk != NULL) {
				sb_adds(&cat, ",\"replication_key\":");
				json_quote(&cat, e->rk, strlen(e->rk));
				sb_adds(&cat, ",\"replication_method\":\"INCREMENTAL\"");
			} else
				sb_adds(&cat, ",\"replication_method\":\"FULL_TABLE\"");
			sb_adds(&cat, ",\"metadata\":");
			add_metadata(&cat, e, &h);
			sb_addc(&cat, '}');
		}
		csv_close(c);
		c = NULL;
		header_free(&h);
	}
	sb_adds(&cat, "]}");
	if (rc == 0)
		rc = print_pretty(t, cat.buf, cat.len);
	sb_free(&cat);
	return rc;
}

/* ---- main ---- */

static void tap_free(struct tap *t)
{
	size_t i;

	for (i = 0; i < t->nents; i++) {
		struct entity *e = &t->ents[i];

		free(e->name);
		free(e->path);
		free_list(e->keys, e->nkeys);
		free(e->rk);
		free_list(e->drop, e->ndrop);
		sb_free(&e->bm);
	}
	free(t->ents);
	sb_free(&t->state_text);
	sb_free(&t->msg);
}

static int usage(void)
{
	fputs(usage_line, stderr);
	return EXIT_USAGE;
}

enum { OPT_ABOUT = 256, OPT_CATALOG, OPT_VERSION };

/*
 * Parse the options; with --config, extract (or with --discover, describe)
 * the configured files, then check that stdout took everything.
 */
int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "about", no_argument, NULL, OPT_ABOUT },
		{ "catalog", required_argument, NULL, OPT_CATALOG },
		{ "config", required_argument, NULL, 'c' },
		{ "discover", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "properties", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	struct tap t;
	const char *catalog = NULL, *properties = NULL;
	int about = 0, disc = 0, ch, rc = 0;
	size_t i;

	err_init(argv[0]);
	memset(&t, 0, sizeof(t));
	opterr = 0;	/* getopt would print the whole argv[0] */
	while ((ch = getopt_long(argc, argv, ":c:dhp:s:", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_ABOUT:
			about = 1;
			break;
		case OPT_CATALOG:
			catalog = optarg;
			break;
		case 'c':
			t.config_file = optarg;
			break;
		case 'd':
			disc = 1;
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs("\n", stdout);
			fputs(help_text, stdout);
			goto out;
		case 'p':
			properties = optarg;
			break;
		case 's':
			t.state_file = optarg;
			break;
		case OPT_VERSION:
			printf("dataspoc-tap-csv %s\n", PIPE_VERSION);
			goto out;
		case ':':
			err_msg("option '%s' needs an argument", argv[optind - 1]);
			rc = usage();
			goto out;
		default:
			if (optopt > 0 && optopt < 256)
				err_msg("unknown option '-%c'", optopt);
			else
				err_msg("unknown option '%s'", argv[optind - 1]);
			rc = usage();
			goto out;
		}
	}
	if (optind < argc) {
		err_msg("unexpected argument '%s'", argv[optind]);
		rc = usage();
		goto out;
	}
	if (about) {
		rc = print_pretty(&t, about_json, sizeof(about_json) - 1);
		goto out;
	}
	if (t.config_file == NULL) {
		err_msg("--config is required");
		rc = usage();
		goto out;
	}
	if (catalog != NULL && properties != NULL) {
		err_msg("--catalog and --properties are exclusive");
		rc = usage();
		goto out;
	}
	t.catalog_file = catalog ? catalog : properties;
	t.catalog_what = catalog ? "catalog" : "properties";

	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	rc = load_config(&t);
	if (rc)
		goto out;
	if (disc) {
		rc = discover(&t);
		goto out;
	}
	if (t.catalog_file != NULL && (rc = load_catalog(&t)) != 0)
		goto out;
	if (t.state_file != NULL && (rc = load_state(&t)) != 0)
		goto out;
	for (i = 0; i < t.nents && rc == 0; i++)
		if (t.ents[i].selected)
			rc = sync_stream(&t, &t.ents[i]);
out:
	tap_free(&t);
	if (fclose(stdout) != 0 && !t.write_failed) {
		if (errno != EPIPE)
			err_msg("cannot write 'standard output':");
		if (rc == 0)
			rc = EXIT_FAIL;
	}
	if (t.write_failed && rc == 0)
		rc = EXIT_FAIL;
	return rc;
}
