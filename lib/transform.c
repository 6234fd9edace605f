/* transform: a jq program applied to every record (see transform.h). */
#include "transform.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jq.h>

#include "err.h"

/* One compiled program per stream, since $stream is bound when compiling. */
struct compiled {
	char *stream;
	jq_state *jq;
};

struct transform {
	char *path;
	char *program;
	struct compiled *v;
	size_t n;
	struct sb errors;
};

static void on_error(void *data, jv msg)
{
	struct transform *t = data;
	jv text = jv_get_kind(msg) == JV_KIND_STRING ? msg : jv_dump_string(msg, 0);

	const char *p = jv_string_value(text);

	if (t->errors.len)
		sb_adds(&t->errors, "; ");
	/* (the message says already that it is jq's error) */
	if (strncmp(p, "jq: error: ", 11) == 0)
		p += 11;
	/*
	 * jq's messages span lines; ours are one.  The program's line it
	 * quotes is padded with blanks (room for a caret): they go.
	 */
	for (; *p; p++) {
		if (*p == '\n' || *p == ' ' || *p == '\t') {
			size_t n = strspn(p, " \t");

			if (p[n] == '\n' || p[n] == '\0') {
				p += n;
				if (*p == '\0')
					break;
			} else {
				sb_add(&t->errors, p, n);
				p += n - 1;
				continue;
			}
		}
		sb_addc(&t->errors, *p == '\n' ? ' ' : *p);
	}
	/* (a last newline, too) */
	while (t->errors.len > 0 && t->errors.buf[t->errors.len - 1] == ' ')
		t->errors.buf[--t->errors.len] = '\0';
	jv_free(text);
}

static jq_state *compile(struct transform *t, const char *stream)
{
	jq_state *jq = jq_init();
	jv args = jv_object_set(jv_object(), jv_string("stream"), jv_string(stream));

	if (jq == NULL) {
		jv_free(args);
		return NULL;
	}
	sb_reset(&t->errors);
	jq_set_error_cb(jq, on_error, t);
	if (!jq_compile_args(jq, t->program, args)) {
		jq_teardown(&jq);
		return NULL;
	}
	return jq;
}

/*
 * The Python DataSpoc Pipe's transform, NAME.py beside NAME.jq, would be
 * skipped without a word: alone, it is an error (its columns would land);
 * beside a .jq, a warning.  -1 when it is an error.
 */
static int python_beside(const char *path, int alone)
{
	size_t n = strlen(path);
	char *py;
	FILE *f;

	if (n < 3 || strcmp(path + n - 3, ".jq") != 0)
		return 0;
	py = xasprintf("%.*s.py", (int)(n - 3), path);
	f = fopen(py, "r");
	if (f == NULL) {
		free(py);
		return 0;
	}
	fclose(f);
	if (alone)
		err_msg("%s: transforms here are jq programs, not Python: write %.*s.jq instead "
			"(drop columns: df.drop(columns=['email', 'ssn']) is del(.email, .ssn); "
			"rename: df.rename(columns={'nm': 'name'}) is .name = .nm | del(.nm); "
			"filter rows: df[df['status'] == 'active'] is select(.status == \"active\"); "
			"see docs/MIGRATING.md); nothing ran", py, (int)(n - 3), path);
	else
		err_warn("%s is ignored: the transform is %s (a jq program)", py, path);
	free(py);
	return alone ? -1 : 0;
}

int transform_load(const char *path, struct transform **tp)
{
	struct transform *t;
	struct sb text = SB_INIT;
	FILE *f = fopen(path, "r");
	char buf[8192];
	size_t n;
	jq_state *jq;

	*tp = NULL;
	if (f == NULL && errno != ENOENT) {
		err_msg("cannot read the transform '%s':", path);
		return -1;
	}
	if (python_beside(path, f == NULL) != 0) {
		if (f != NULL)
			fclose(f);
		return -1;
	}
	if (f == NULL)
		return 1;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		sb_add(&text, buf, n);
	fclose(f);
	t = xcalloc(1, sizeof(*t));
	t->path = xstrdup(path);
	t->program = sb_detach(&text);
	jq = compile(t, "");
	if (jq == NULL) {
		err_msg("%s: the transform does not compile: %s", path,
			t->errors.len ? t->errors.buf : "jq error");
		transform_free(t);
		return -1;
	}
	jq_teardown(&jq);
	*tp = t;
	return 0;
}

static jq_state *for_stream(struct transform *t, const char *stream)
{
	size_t i;

	for (i = 0; i < t->n; i++) {
		if (strcmp(t->v[i].stream, stream) == 0)
			return t->v[i].jq;
	}
	t->v = xrealloc(t->v, (t->n + 1) * sizeof(*t->v));
	t->v[t->n].stream = xstrdup(stream);
	t->v[t->n].jq = compile(t, stream);
	return t->v[t->n++].jq;
}

int transform_apply(struct transform *t, const char *stream, const char *rec, size_t len,
		    struct sb *out, unsigned long long *count, struct sb *err)
{
	jq_state *jq = for_stream(t, stream);
	jv in, r;

	*count = 0;
	if (jq == NULL) {
		sb_addf(err, "the transform does not compile: %s", t->errors.buf ? t->errors.buf : "");
		return -1;
	}
	in = jv_parse_sized(rec, (int)len);
	if (!jv_is_valid(in)) {
		jv msg = jv_invalid_get_msg(in);

		sb_addf(err, "record is not JSON for jq: %s",
			jv_get_kind(msg) == JV_KIND_STRING ? jv_string_value(msg) : "invalid");
		jv_free(msg);
		return -1;
	}
	jq_start(jq, in, 0);
	while (jv_is_valid(r = jq_next(jq))) {
		jv s = jv_dump_string(r, 0);

		sb_adds(out, jv_string_value(s));
		sb_addc(out, '\n');
		jv_free(s);
		(*count)++;
	}
	if (jq_halted(jq)) {
		jv code = jq_get_exit_code(jq), msg = jq_get_error_message(jq);
		int failed = jv_is_valid(code) && !(jv_get_kind(code) == JV_KIND_NUMBER &&
						    jv_number_value(code) == 0);

		if (failed) {
			jv text = jv_get_kind(msg) == JV_KIND_STRING ? jv_copy(msg) : jv_dump_string(jv_copy(msg), 0);

			sb_addf(err, "halt_error: %s", jv_string_value(text));
			jv_free(text);
		}
		jv_free(code);
		jv_free(msg);
		jv_free(r);
		return failed ? -1 : 0;
	}
	if (jv_invalid_has_msg(jv_copy(r))) {
		jv msg = jv_invalid_get_msg(r);
		jv text = jv_get_kind(msg) == JV_KIND_STRING ? msg : jv_dump_string(msg, 0);

		sb_adds(err, jv_string_value(text));
		jv_free(text);
		return -1;
	}
	jv_free(r);
	return 0;
}

void transform_free(struct transform *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++) {
		free(t->v[i].stream);
		if (t->v[i].jq)
			jq_teardown(&t->v[i].jq);
	}
	free(t->v);
	free(t->path);
	free(t->program);
	sb_free(&t->errors);
	free(t);
}
