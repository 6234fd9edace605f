/*
 * show: what pipe-mcp prints itself, in a child of the server as the other
 * tools' commands do (-p NAME: pipeline_config's answer; -l: the
 * pipe://pipelines resource), and the masking of secrets in every answer.
 *
 * What is a secret is lib/mask.c's rule, the one `validate` warns with and
 * the run logs and the terminal are masked by: a member whose name looks
 * like one (password, token, api_key, ...) holds a secret, and mask_apply()
 * masks the tap's secret values, credential-shaped text (AccountKey=, sig=,
 * "NAME=value", ...) and the environment's credentials wherever they appear.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"

#include "cli.h"
#include "config.h"
#include "err.h"
#include "mask.h"
#include "util.h"

/* What a masked secret reads as. */
#define MASK MASK_WORD

/*
 * 1 when a member called name[0..len) holds a secret: mask.c's rule (a NUL
 * in the name becomes '_', so that the whole name is judged).
 */
static int secret_member(const char *name, size_t len)
{
	char *z;
	size_t i;
	int hit;

	if (len == 0)
		return 0;
	z = xstrndup(name, len);
	for (i = 0; i < len; i++)
		if (z[i] == '\0')
			z[i] = '_';
	hit = mask_secret_name(z);
	free(z);
	return hit;
}

void show_mask_text(const struct pipe_config *cfg, struct sb *text)
{
	mask_text(cfg, text);
}

/* A jv string through mask_apply(); consumes s. */
static jv mask_string(const struct mask *m, jv s)
{
	struct sb t = SB_INIT;
	int len = jv_string_length_bytes(jv_copy(s));

	sb_add(&t, jv_string_value(s), (size_t)len);
	mask_apply(m, &t);
	if (t.len != (size_t)len || memcmp(t.buf, jv_string_value(s), t.len) != 0) {
		jv_free(s);
		s = jv_string_sized(t.buf, (int)t.len);
	}
	sb_free(&t);
	return s;
}

/* Every string and key of v masked, one by one. */
static jv mask_leaves(const struct mask *m, jv v, int depth)
{
	jv out;

	if (depth > 256)
		return v;
	switch (jv_get_kind(v)) {
	case JV_KIND_STRING:
		return mask_string(m, v);
	case JV_KIND_ARRAY: {
		int i, n = jv_array_length(jv_copy(v));

		for (i = 0; i < n; i++)
			v = jv_array_set(v, i, mask_leaves(m, jv_array_get(jv_copy(v), i), depth + 1));
		return v;
	}
	case JV_KIND_OBJECT:
		out = jv_object();
		jv_object_foreach(v, k, val)
			out = jv_object_set(out, mask_string(m, k), mask_leaves(m, val, depth + 1));
		jv_free(v);
		return out;
	default:
		return v;
	}
}

jv show_mask(const struct pipe_config *cfg, jv v)
{
	struct sb t = SB_INIT;
	struct mask *m = mask_new(cfg);
	jv text = jv_dump_string(jv_copy(v), 0);
	size_t len = (size_t)jv_string_length_bytes(jv_copy(text));
	int same;

	/* most answers hold nothing to mask: one pass over the whole text says so */
	sb_add(&t, jv_string_value(text), len);
	mask_apply(m, &t);
	same = t.len == len && memcmp(t.buf, jv_string_value(text), len) == 0;
	sb_free(&t);
	jv_free(text);
	if (!same)
		v = mask_leaves(m, v, 0);
	mask_free(m);
	return v;
}

/* The members of v whose names hold secrets: their values masked, at any depth. */
static jv mask_members(jv v, int depth)
{
	jv out;

	if (depth > 256)
		return v;
	if (jv_get_kind(v) == JV_KIND_ARRAY) {
		int i, n = jv_array_length(jv_copy(v));

		for (i = 0; i < n; i++)
			v = jv_array_set(v, i, mask_members(jv_array_get(jv_copy(v), i), depth + 1));
		return v;
	}
	if (jv_get_kind(v) != JV_KIND_OBJECT)
		return v;
	out = jv_object();
	jv_object_foreach(v, k, val) {
		jv_kind kind = jv_get_kind(val);
		int empty = kind == JV_KIND_NULL ||
			    (kind == JV_KIND_STRING && jv_string_length_bytes(jv_copy(val)) == 0);

		/* a secret's value goes whatever it is (an object of them too);
		 * that it is unset (null, "") stays visible */
		if (!empty && secret_member(jv_string_value(k), (size_t)jv_string_length_bytes(jv_copy(k)))) {
			jv_free(val);
			val = jv_string(MASK);
		} else {
			val = mask_members(val, depth + 1);
		}
		out = jv_object_set(out, k, val);
	}
	jv_free(v);
	return out;
}

int show_load_quiet(const char *name, struct pipe_config *cfg)
{
	int saved, null, r;

	fflush(stderr);
	saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (saved >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	if (null >= 0)
		close(null);
	r = config_load_name(name, cfg);
	if (saved >= 0) {
		dup2(saved, STDERR_FILENO);
		close(saved);
	}
	return r;
}

static jv str_or_null(const char *s)
{
	return s ? jv_string(s) : jv_null();
}

static jv strv(char *const *v)
{
	jv a = jv_array();
	size_t i;

	for (i = 0; v && v[i]; i++)
		a = jv_array_append(a, jv_string(v[i]));
	return a;
}

/* JSON text the config loader made (an inline mapping, metadata), as a value. */
static jv parsed(const char *json)
{
	jv v = jv_parse(json);

	if (!jv_is_valid(v)) {
		jv_free(v);
		return jv_null();
	}
	return v;
}

/*
 * The pipeline as loaded, in the YAML file's keys (config.h), config.yaml's
 * defaults merged and paths resolved: what a run would use.
 */
static jv config_json(const struct pipe_config *cfg)
{
	jv src = jv_object(), dest = jv_object(), top = jv_object();
	size_t i;

	src = jv_object_set(src, jv_string("tap"), strv(cfg->tap_argv));
	if (cfg->tap_config_file)
		src = jv_object_set(src, jv_string("config"), jv_string(cfg->tap_config_file));
	else if (cfg->tap_config_json)
		src = jv_object_set(src, jv_string("config"), parsed(cfg->tap_config_json));
	if (cfg->streams)
		src = jv_object_set(src, jv_string("streams"), strv(cfg->streams));
	if (cfg->catalog_file)
		src = jv_object_set(src, jv_string("catalog"), jv_string(cfg->catalog_file));
	if (cfg->metadata_json)
		src = jv_object_set(src, jv_string("metadata"), parsed(cfg->metadata_json));
	if (cfg->catalog_flag)
		src = jv_object_set(src, jv_string("catalog_flag"), jv_string(cfg->catalog_flag));

	dest = jv_object_set(dest, jv_string("bucket"), str_or_null(cfg->bucket));
	dest = jv_object_set(dest, jv_string("path"), str_or_null(cfg->path));
	dest = jv_object_set(dest, jv_string("format"), str_or_null(cfg->format));
	dest = jv_object_set(dest, jv_string("compression"), jv_string(config_compression_name(cfg->compression)));
	if (cfg->compression_level > 0)
		dest = jv_object_set(dest, jv_string("compression_level"), jv_number(cfg->compression_level));
	dest = jv_object_set(dest, jv_string("max_file_size"), jv_number((double)cfg->max_file_size));
	if (cfg->endpoint_url)
		dest = jv_object_set(dest, jv_string("endpoint_url"), jv_string(cfg->endpoint_url));
	if (cfg->parquet) {
		jv cols = jv_object();

		dest = jv_object_set(dest, jv_string("row_group_rows"), jv_number((double)cfg->row_group_rows));
		dest = jv_object_set(dest, jv_string("row_group_size"), jv_number((double)cfg->row_group_size));
		dest = jv_object_set(dest, jv_string("schema_mismatch"), jv_string(cfg->mismatch_fail ? "fail" : "widen"));
		for (i = 0; cfg->string_columns && cfg->string_columns[i] && cfg->string_columns[i + 1]; i += 2) {
			jv key = jv_string(cfg->string_columns[i]);
			jv list = jv_object_get(jv_copy(cols), jv_copy(key));

			if (!jv_is_valid(list)) {
				jv_free(list);
				list = jv_array();
			}
			cols = jv_object_set(cols, key, jv_array_append(list, jv_string(cfg->string_columns[i + 1])));
		}
		if (cfg->string_columns)
			dest = jv_object_set(dest, jv_string("string_columns"), cols);
		else
			jv_free(cols);
	}

	top = jv_object_set(top, jv_string("name"), jv_string(cfg->name));
	top = jv_object_set(top, jv_string("file"), str_or_null(cfg->file));
	top = jv_object_set(top, jv_string("source"), src);
	top = jv_object_set(top, jv_string("destination"), dest);
	top = jv_object_set(top, jv_string("incremental"),
			    jv_object_set(jv_object(), jv_string("enabled"), jv_bool(cfg->incremental)));
	if (cfg->cron)
		top = jv_object_set(top, jv_string("schedule"),
				    jv_object_set(jv_object(), jv_string("cron"), jv_string(cfg->cron)));
	return top;
}

/* v on stdout, pretty, and stdout closed.  Consumes v. */
static int print_json(jv v)
{
	jv text = jv_dump_string(v, JV_PRINT_INDENT_FLAGS(2));

	fwrite(jv_string_value(text), 1, (size_t)jv_string_length_bytes(jv_copy(text)), stdout);
	putchar('\n');
	jv_free(text);
	return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
}

int show_config(const char *name)
{
	struct pipe_config cfg;
	jv v;
	int ret;

	if (!config_valid_name(name)) {
		err_msg("invalid pipeline name '%s'", name);
		return CLI_USAGE;
	}
	if (config_load_name(name, &cfg) != 0)
		return CLI_USAGE;
	v = show_mask(&cfg, mask_members(config_json(&cfg), 0));
	ret = print_json(v);
	config_free(&cfg);
	return ret;
}

int show_pipelines(void)
{
	char **names = NULL;
	size_t n = 0, i;
	jv list = jv_array();

	if (config_pipelines(&names, &n) != 0) {
		jv_free(list);
		return CLI_FAILED;
	}
	for (i = 0; i < n; i++) {
		struct pipe_config cfg;
		jv e = jv_object_set(jv_object(), jv_string("name"), jv_string(names[i]));

		/* the Python tool's entry, "error" for a pipeline that does not load */
		if (show_load_quiet(names[i], &cfg) == 0) {
			e = jv_object_set(e, jv_string("tap"), str_or_null(cfg.tap_argv ? cfg.tap_argv[0] : NULL));
			e = jv_object_set(e, jv_string("bucket"), str_or_null(cfg.bucket));
			e = show_mask(&cfg, e);
			config_free(&cfg);
		} else {
			e = jv_object_set(e, jv_string("tap"), jv_string("error"));
			e = jv_object_set(e, jv_string("bucket"), jv_string("error"));
		}
		list = jv_array_append(list, e);
	}
	util_strv_free(names);
	return print_json(list);
}
