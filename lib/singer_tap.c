/* singer_tap: the built-in Singer taps' command line and JSON files. */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jv.h>

#include "err.h"
#include "json.h"
#include "jvx.h"
#include "sb.h"
#include "singer_tap.h"
#include "util.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif

enum { OPT_ABOUT = 256, OPT_CATALOG, OPT_VERSION };

static int usage(const char *usage_line)
{
	fputs(usage_line, stderr);
	return 2;
}

int singer_tap_args(int argc, char **argv, const char *name, const char *usage_line,
		    const char *help, struct singer_tap_args *a)
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
	int ch;

	memset(a, 0, sizeof(*a));
	opterr = 0;	/* getopt would print the whole argv[0] */
	while ((ch = getopt_long(argc, argv, ":c:dhp:s:", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_ABOUT:
			a->about = 1;
			break;
		case OPT_CATALOG:
			a->catalog = optarg;
			break;
		case 'c':
			a->config = optarg;
			break;
		case 'd':
			a->discover = 1;
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs("\n", stdout);
			fputs(help, stdout);
			return 0;
		case 'p':
			a->properties = optarg;
			break;
		case 's':
			a->state = optarg;
			break;
		case OPT_VERSION:
			printf("%s %s\n", name, PIPE_VERSION);
			return 0;
		case ':':
			err_msg("option '%s' needs an argument", argv[optind - 1]);
			return usage(usage_line);
		default:
			if (optopt > 0 && optopt < 256)
				err_msg("unknown option '-%c'", optopt);
			else
				err_msg("unknown option '%s'", argv[optind - 1]);
			return usage(usage_line);
		}
	}
	if (optind < argc) {
		err_msg("unexpected argument '%s'", argv[optind]);
		return usage(usage_line);
	}
	if (a->about)
		return SINGER_TAP_GO;
	if (a->config == NULL) {
		err_msg("--config is required");
		return usage(usage_line);
	}
	if (a->catalog != NULL && a->properties != NULL) {
		err_msg("--catalog and --properties are exclusive");
		return usage(usage_line);
	}
	return SINGER_TAP_GO;
}

int singer_tap_load_json(const char *what, const char *path, jv *out)
{
	struct sb text = SB_INIT;
	jv v, msg;

	if (util_read_file(path, &text, NULL) < 0) {
		err_msg("%s '%s':", what, path);
		sb_free(&text);
		return 2;
	}
	if (text.len > INT32_MAX) {
		sb_free(&text);
		err_msg("%s '%s': too large", what, path);
		return 2;
	}
	v = jv_parse_sized(text.buf ? text.buf : "", (int)text.len);
	sb_free(&text);
	if (!jv_is_valid(v)) {
		msg = jv_invalid_get_msg(v);
		if (jv_get_kind(msg) == JV_KIND_STRING) {
			/* jq quotes the whole text: it may hold secrets. */
			const char *m = jv_string_value(msg);
			const char *cut = strstr(m, " (while parsing '");

			err_msg("%s '%s': %.*s", what, path,
				cut ? (int)(cut - m) : (int)strlen(m), m);
		} else
			err_msg("%s '%s': not JSON", what, path);
		jv_free(msg);
		return 2;
	}
	*out = v;
	return 0;
}

int singer_tap_string_list(jv v, char ***list, size_t *n)
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
			c = jvx_cstr(s);
		jv_free(s);
		if (c == NULL)
			return -1;
		(*list)[(*n)++] = c;
	}
	return 0;
}

void singer_tap_free_list(char **list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(list[i]);
	free(list);
}

int singer_tap_in_list(char *const *list, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(list[i], s) == 0)
			return 1;
	return 0;
}

char *singer_tap_path(const char *path)
{
	const char *dir = getenv("DATASPOC_TAP_CONFIG_DIR"), *p = path;

	if (dir == NULL || *dir != '/' || *path == '/' || *path == '\0')
		return xstrdup(path);
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
	       *p == '+' || *p == '-' || *p == '.')
		p++;
	if (p > path && strncmp(p, "://", 3) == 0)
		return xstrdup(path);
	while (path[0] == '.' && path[1] == '/')
		for (path += 2; *path == '/'; path++)
			;
	return xasprintf("%s%s%s", dir, strcmp(dir, "/") ? "/" : "", path);
}

int singer_tap_bad(const char *what, const char *file, const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	err_msg("%s '%s': %s", what, file, why);
	return 2;
}

int singer_tap_deselected(jv m)
{
	jv md = jvx_get(m, "metadata"), s = jvx_get(md, "selected");
	int r = jv_get_kind(s) == JV_KIND_FALSE;

	jv_free(s);
	jv_free(md);
	return r;
}

int singer_tap_catalog(const char *what, const char *file, jv *streams)
{
	jv cat = jv_invalid();
	int rc = singer_tap_load_json(what, file, &cat);

	*streams = jv_invalid();
	if (rc == 0) {
		*streams = jvx_get(cat, "streams");
		if (jv_get_kind(*streams) != JV_KIND_ARRAY) {
			jv_free(*streams);
			*streams = jv_invalid();
			rc = singer_tap_bad(what, file, "not a catalog: {\"streams\": [...]} expected");
		}
	}
	jv_free(cat);
	return rc;
}

jv singer_tap_stream_id(jv s)
{
	jv id = jvx_get(s, "tap_stream_id");

	if (jv_get_kind(id) != JV_KIND_STRING) {
		jv_free(id);
		id = jvx_get(s, "stream");
	}
	if (jv_get_kind(id) != JV_KIND_STRING) {
		jv_free(id);
		id = jv_invalid();
	}
	return id;
}

/* The property NAME of breadcrumb ["properties", NAME] (bc borrowed), or NULL. */
static char *breadcrumb_property(jv bc)
{
	jv a = jv_array_get(jv_copy(bc), 0), b = jv_array_get(jv_copy(bc), 1);
	char *col = NULL;

	if (jv_get_kind(a) == JV_KIND_STRING && strcmp(jv_string_value(a), "properties") == 0 &&
	    jv_get_kind(b) == JV_KIND_STRING)
		col = jvx_cstr(b);
	jv_free(a);
	jv_free(b);
	return col;
}

int singer_tap_stream_selection(const char *what, const char *file, const char *name, jv s,
				int *selected, char ***drop, size_t *ndrop)
{
	jv schema = jvx_get(s, "schema"), sel = jvx_get(schema, "selected");
	jv md = jvx_get(s, "metadata");
	int i, n, rc = 0;

	if (jv_get_kind(sel) == JV_KIND_FALSE)
		*selected = 0;
	jv_free(sel);
	jv_free(schema);
	if (jvx_absent(md))
		goto out;
	if (jv_get_kind(md) != JV_KIND_ARRAY) {
		rc = singer_tap_bad(what, file, "%s: \"metadata\" is not an array", name);
		goto out;
	}
	n = jv_array_length(jv_copy(md));
	for (i = 0; i < n && rc == 0; i++) {
		jv m = jv_array_get(jv_copy(md), i), bc = jvx_get(m, "breadcrumb");
		char *col;

		if (jv_get_kind(m) != JV_KIND_OBJECT)
			rc = singer_tap_bad(what, file, "%s: metadata[%d] is not an object", name, i);
		else if (jv_get_kind(bc) != JV_KIND_ARRAY)
			rc = singer_tap_bad(what, file, "%s: metadata[%d] has no \"breadcrumb\" array",
					    name, i);
		else if (!singer_tap_deselected(m))
			;
		else if (jv_array_length(jv_copy(bc)) == 0)
			*selected = 0;
		else if (jv_array_length(jv_copy(bc)) == 2 && (col = breadcrumb_property(bc)) != NULL) {
			*drop = xrealloc(*drop, (*ndrop + 1) * sizeof(**drop));
			(*drop)[(*ndrop)++] = col;
		}
		jv_free(bc);
		jv_free(m);
	}
out:
	jv_free(md);
	return rc;
}

int singer_tap_config_string(jv conf, const char *key, int num, char **out)
{
	jv v = jvx_get(conf, key);
	int r = 0;

	*out = NULL;
	if (jvx_absent(v))
		r = 0;
	else if (jv_get_kind(v) == JV_KIND_STRING) {
		const char *s = jv_string_value(v);
		size_t n = (size_t)jv_string_length_bytes(jv_copy(v));

		if (n == 0 || memchr(s, '\0', n) != NULL)
			r = -1;
		else
			*out = xstrndup(s, n);
	} else if (num && jv_get_kind(v) == JV_KIND_NUMBER) {
		double d = jv_number_value(v);

		if (d < 0 || d > 4294967295.0 || d != (double)(uint64_t)d)
			r = -1;
		else
			*out = xasprintf("%llu", (unsigned long long)d);
	} else
		r = -1;
	jv_free(v);
	return r;
}

int singer_tap_emit(struct sb *msg, int *write_failed)
{
	int r = 0;

	if (msg->len > 0 && fwrite(msg->buf, 1, msg->len, stdout) != msg->len) {
		if (errno != EPIPE)
			err_msg("cannot write 'standard output':");
		*write_failed = 1;
		r = -1;
	}
	sb_reset(msg);
	return r;
}

int singer_tap_print_pretty(const char *json, size_t len, struct sb *msg, int *write_failed)
{
	struct json_span v;
	const char *why = NULL;
	size_t pos = 0;

	if (json_validate(json, len, &v, &pos, &why) < 0) {
		err_msg("internal error: invalid JSON at byte %zu: %s", pos, why);
		return EXIT_FAIL;
	}
	json_pretty(&v, msg);
	return singer_tap_emit(msg, write_failed) < 0 ? EXIT_FAIL : 0;
}

int singer_tap_finish(int rc, int write_failed)
{
	if (fclose(stdout) != 0 && !write_failed) {
		if (errno != EPIPE)
			err_msg("cannot write 'standard output':");
		if (rc == 0)
			rc = EXIT_FAIL;
	}
	if (write_failed && rc == 0)
		rc = EXIT_FAIL;
	return rc;
}

int singer_tap_main(int argc, char **argv, const struct singer_tap_hooks *h, void *tap)
{
	struct singer_tap_args a;
	struct sb msg = SB_INIT;
	int rc, write_failed = 0, about_failed = 0;

	err_init(argv[0]);
	rc = singer_tap_args(argc, argv, h->name, h->usage_line, h->help, &a);
	if (rc == SINGER_TAP_GO) {
		setvbuf(stdout, NULL, _IOFBF, 1 << 16);
		if (a.about && h->about)
			rc = h->about(tap);
		else if (a.about)
			rc = singer_tap_print_pretty(h->about_json, strlen(h->about_json), &msg,
						     &about_failed);
		else if ((rc = h->config(tap, &a)) == 0)
			rc = a.discover ? h->discover(tap) : h->sync(tap);
	}
	rc = h->end(tap, rc, &write_failed);
	sb_free(&msg);
	return singer_tap_finish(rc, write_failed || about_failed);
}

int singer_tap_select_one(const char *what, const char *file, const char *stream, int *selected,
			  char ***drop, size_t *ndrop)
{
	jv streams;
	int rc, i, n;

	*selected = 0;
	rc = singer_tap_catalog(what, file, &streams);
	if (rc)
		return rc;
	n = jv_array_length(jv_copy(streams));
	for (i = 0; i < n && rc == 0; i++) {
		jv s = jv_array_get(jv_copy(streams), i), id = singer_tap_stream_id(s);

		if (jv_is_valid(id) && strcmp(jv_string_value(id), stream) == 0) {
			*selected = 1;
			rc = singer_tap_stream_selection(what, file, stream, s, selected, drop, ndrop);
		}
		jv_free(id);
		jv_free(s);
	}
	jv_free(streams);
	return rc;
}

void singer_tap_warn_unknown(jv obj, const char *const *known, size_t n, const char *file,
			     const char *where)
{
	int it;

	for (it = jv_object_iter(obj); jv_object_iter_valid(obj, it); it = jv_object_iter_next(obj, it)) {
		jv key = jv_object_iter_key(obj, it);
		const char *ks = jv_string_value(key);
		size_t k;

		for (k = 0; k < n && strcmp(ks, known[k]) != 0; k++)
			;
		/* (a key of "_..." is a comment: the Python tool's templates write "_comment") */
		if (k == n && ks[0] != '_')
			err_warn("config '%s': %s%skey '%s' ignored", file, where ? where : "",
				 where ? ": " : "", ks);
		jv_free(key);
	}
}

int singer_tap_bad_at(const char *what, const char *file, const char *text, size_t len,
		      size_t pos, const char *why)
{
	size_t i, line = 1, col = 1;

	for (i = 0; i < pos && i < len; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else
			col++;
	}
	return singer_tap_bad(what, file, "line %zu, column %zu: %s", line, col, why);
}
