/* dataspoc-tap-csv: the config and the catalog, JSON files read with libjq. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jv.h>

#include "err.h"
#include "sb.h"
#include "jvx.h"
#include "singer_tap.h"
#include "tap_csv.h"
#include "util.h"

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
	int rc = 0;

	e->delim = ',';
	e->selected = 1;
	if (jv_get_kind(f) != JV_KIND_OBJECT)
		return singer_tap_bad("config", file, "files[%d]: not an object", idx);

	v = jvx_get(f, "entity");
	if (jv_get_kind(v) == JV_KIND_STRING)
		e->name = jvx_cstr(v);
	jv_free(v);
	if (e->name == NULL || *e->name == '\0')
		return singer_tap_bad("config", file,
			   "files[%d]: \"entity\" must be a non-empty string", idx);

	v = jvx_get(f, "path");
	if (jv_get_kind(v) == JV_KIND_STRING)
		e->path = jvx_cstr(v);
	jv_free(v);
	if (e->path == NULL || *e->path == '\0')
		return singer_tap_bad("config", file,
			   "%s: \"path\" must be a non-empty string", e->name);
	{
		/* relative to the pipeline's file, as pipe-tap says */
		char *p = singer_tap_path(e->path);

		free(e->path);
		e->path = p;
	}

	v = jvx_get(f, "keys");
	if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL &&
	    singer_tap_string_list(v, &e->keys, &e->nkeys) < 0)
		rc = singer_tap_bad("config", file,
			 "%s: \"keys\" must be an array of strings", e->name);
	jv_free(v);
	if (rc)
		return rc;

	v = jvx_get(f, "replication_key");
	if (jv_get_kind(v) == JV_KIND_STRING) {
		e->rk = jvx_cstr(v);
		if (e->rk == NULL || *e->rk == '\0')
			rc = singer_tap_bad("config", file, "%s: \"replication_key\" "
				 "must be a non-empty string", e->name);
	} else if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL)
		rc = singer_tap_bad("config", file,
			 "%s: \"replication_key\" must be a string", e->name);
	jv_free(v);
	if (rc)
		return rc;

	v = jvx_get(f, "delimiter");
	if (jv_get_kind(v) == JV_KIND_STRING) {
		const char *d = jv_string_value(v);

		if (jv_string_length_bytes(jv_copy(v)) != 1 || *d == '"' ||
		    *d == '\n' || *d == '\r' || (*d & 0x80))
			rc = singer_tap_bad("config", file, "%s: \"delimiter\" must be one "
				 "ASCII character other than a quote or a line break",
				 e->name);
		else
			e->delim = *d;
	} else if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL)
		rc = singer_tap_bad("config", file,
			 "%s: \"delimiter\" must be a string", e->name);
	jv_free(v);
	if (rc)
		return rc;

	v = jvx_get(f, "encoding");
	if (jv_get_kind(v) == JV_KIND_STRING) {
		if (!encoding_ok(jv_string_value(v)))
			rc = singer_tap_bad("config", file, "%s: encoding '%s' is not "
				 "supported (only UTF-8)", e->name,
				 jv_string_value(v));
	} else if (jv_is_valid(v) && jv_get_kind(v) != JV_KIND_NULL)
		rc = singer_tap_bad("config", file,
			 "%s: \"encoding\" must be a string", e->name);
	jv_free(v);
	if (rc)
		return rc;

	/* Other tap-csv settings (quotechar, ...) are not supported: say so. */
	singer_tap_warn_unknown(f, known, sizeof(known) / sizeof(known[0]), file, e->name);
	return 0;
}

int load_config(struct tap *t)
{
	const char *file = t->config_file;
	const char *list_file = file;
	char *list_path = NULL;
	jv conf = jv_invalid(), files = jv_invalid(), def = jv_invalid();
	int rc, i, n;
	size_t j, k;

	rc = singer_tap_load_json("config", file, &conf);
	if (rc)
		goto out;
	if (jv_get_kind(conf) != JV_KIND_OBJECT) {
		rc = singer_tap_bad("config", file, "not a JSON object");
		goto out;
	}
	files = jvx_get(conf, "files");
	def = jvx_get(conf, "csv_files_definition");
	if (jv_is_valid(def) && jv_get_kind(def) != JV_KIND_NULL) {
		char *path;

		if (jv_is_valid(files) && jv_get_kind(files) != JV_KIND_NULL) {
			rc = singer_tap_bad("config", file, "both \"files\" and "
				 "\"csv_files_definition\" are set");
			goto out;
		}
		if (jv_get_kind(def) != JV_KIND_STRING ||
		    (path = jvx_cstr(def)) == NULL || *path == '\0') {
			rc = singer_tap_bad("config", file, "\"csv_files_definition\" "
				 "must be a file name");
			goto out;
		}
		free(path);
		list_file = list_path = singer_tap_path(jv_string_value(def));
		jv_free(files);
		files = jv_invalid();
		rc = singer_tap_load_json("config", list_file, &files);
		if (rc)
			goto out;
	}
	if (!jv_is_valid(files) || jv_get_kind(files) == JV_KIND_NULL) {
		rc = singer_tap_bad("config", file,
			 "\"files\" or \"csv_files_definition\" is required");
		goto out;
	}
	if (jv_get_kind(files) != JV_KIND_ARRAY) {
		rc = singer_tap_bad("config", list_file,
			 "the list of files must be a JSON array");
		goto out;
	}
	n = jv_array_length(jv_copy(files));
	if (n == 0) {
		rc = singer_tap_bad("config", list_file, "the list of files is empty");
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
				rc = singer_tap_bad("config", list_file, "entity '%s' is "
					 "listed twice", t->ents[j].name);
				goto out;
			}
out:
	jv_free(conf);
	jv_free(files);
	jv_free(def);
	free(list_path);
	return rc;
}

/* ---- the catalog ---- */

struct entity *find_entity(struct tap *t, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < t->nents; i++)
		if (bytes_eq(name, len, t->ents[i].name))
			return &t->ents[i];
	return NULL;
}

/* One stream of the catalog: its selection and its deselected columns. */
static int catalog_stream(struct tap *t, jv s, int idx)
{
	const char *what = t->catalog_what, *file = t->catalog_file;
	struct entity *e;
	jv id;

	if (jv_get_kind(s) != JV_KIND_OBJECT)
		return singer_tap_bad(what, file, "streams[%d]: not an object", idx);
	id = singer_tap_stream_id(s);
	if (!jv_is_valid(id))
		return singer_tap_bad(what, file, "streams[%d]: no \"tap_stream_id\"", idx);
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
	return singer_tap_stream_selection(what, file, e->name, s, &e->selected, &e->drop,
					   &e->ndrop);
}

int load_catalog(struct tap *t)
{
	jv streams;
	int rc, i, n;
	size_t j;

	rc = singer_tap_catalog(t->catalog_what, t->catalog_file, &streams);
	if (rc)
		return rc;
	for (j = 0; j < t->nents; j++)
		t->ents[j].selected = 0;
	n = jv_array_length(jv_copy(streams));
	for (i = 0; i < n && rc == 0; i++) {
		jv s = jv_array_get(jv_copy(streams), i);

		rc = catalog_stream(t, s, i);
		jv_free(s);
	}
	jv_free(streams);
	return rc;
}
