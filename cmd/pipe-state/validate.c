/*
 * validate: what `dataspoc-pipe validate` prints, for each pipeline in turn:
 *
 *	config		the pipeline loads and its tap's config is a readable
 *			JSON object (in this process)
 *	tap		`pipe-tap -n NAME`: the tap found, its catalog discovered
 *	source		`pipe-tap -s NAME`: the tap's discovery reaches the source
 *			(a wrong password fails here); WARN when no stream is
 *			selected of a tap that takes --properties (tap-postgres
 *			extracts nothing then), naming the streams it offers
 *	transform	`pipe-sink -n NAME`, when transforms/NAME.jq or .py exists
 *	bucket		the probe of lib/check.c
 *	secrets		WARN: check_config()'s secrets warning
 *	placeholders	WARN: check_config()'s placeholders warning
 *
 * A check that fails stops none of the others, except config (nothing else
 * can be read then).  Its reason is the first line it says on stderr,
 * without the program's name: while a check runs, stderr is an anonymous
 * file (a memfd) that lib/'s messages and the child's stderr both go to.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pipe_state.h"

#include "bucket.h"
#include "check.h"
#include "child.h"
#include "cli.h"
#include "config.h"
#include "err.h"
#include "json.h"
#include "mask.h"
#include "sb.h"
#include "util.h"

enum result { RESULT_OK, RESULT_FAIL, RESULT_WARN };

struct validate {
	int json;
	size_t count;		/* results printed */
	int failed;		/* a check failed */
	int unknown;		/* a NAME has no pipeline file */
	int said;		/* the file stderr goes to while a check runs */
	off_t from;		/* where the running check's words begin in it */
	int saved;		/* stderr meanwhile */
	struct sb line;
	/* with json, the pipeline being checked: its checks (JSON objects,
	 * comma-separated), the reasons of those that failed, two of them */
	struct sb checks, errors;
	int pipeline_failed, bucket_ok, tap_ok;
};

/*
 * Print one result: "NAME: CHECK: ok[ (MESSAGE)]", "NAME: CHECK: FAIL:
 * MESSAGE", "NAME: CHECK: WARN: MESSAGE"; with json, keep its object
 * ({"check", "status", "message"}, message null when msg is NULL) for the
 * pipeline's, which pipeline_end() prints.
 */
static void result(struct validate *v, const char *name, const char *check, enum result r,
		   const char *msg, size_t len)
{
	static const char *const words[] = { "ok", "FAIL", "WARN" };
	static const char *const json_words[] = { "ok", "fail", "warn" };
	struct sb *l = &v->line;

	if (r == RESULT_FAIL)
		v->failed = v->pipeline_failed = 1;
	if (v->json) {
		/* the Python tool's two: its bucket test and its tap on PATH */
		if (strcmp(check, "bucket") == 0)
			v->bucket_ok = r != RESULT_FAIL;
		if (strcmp(check, "tap") == 0)
			v->tap_ok = r != RESULT_FAIL;
		if (r == RESULT_FAIL) {
			struct sb e = SB_INIT;

			sb_addf(&e, "%s: ", check);
			sb_add(&e, msg ? msg : "", msg ? len : 0);
			if (v->errors.len)
				sb_addc(&v->errors, ',');
			json_quote(&v->errors, e.buf, e.len);
			sb_free(&e);
		}
		if (v->checks.len)
			sb_addc(&v->checks, ',');
		sb_adds(&v->checks, "{\"check\":");
		json_quote(&v->checks, check, strlen(check));
		sb_addf(&v->checks, ",\"status\":\"%s\",\"message\":", json_words[r]);
		if (msg)
			json_quote(&v->checks, msg, len);
		else
			sb_adds(&v->checks, "null");
		sb_addc(&v->checks, '}');
		return;
	}
	sb_reset(l);
	sb_addf(l, "%s: %s: %s", name, check, words[r]);
	if (r != RESULT_OK || (msg && len)) {
		sb_adds(l, r == RESULT_OK ? " (" : ": ");
		sb_add(l, msg ? msg : "", msg ? len : 0);
		if (r == RESULT_OK)
			sb_addc(l, ')');
	}
	sb_addc(l, '\n');
	/* each as it comes, as the checks may take a while (discovery) */
	fwrite(l->buf, 1, l->len, stdout);
	fflush(stdout);
	v->count++;
}

/*
 * With json, print the pipeline's object, the Python tool's keys first:
 * {"pipeline", "bucket_ok", "tap_ok", ["error": "not found",] "ok",
 * "errors", "checks"}.
 */
static void pipeline_end(struct validate *v, const char *name, int missing)
{
	struct sb *l = &v->line;

	if (!v->json)
		return;
	sb_reset(l);
	sb_adds(l, v->count ? ",\n  {\"pipeline\":" : "[\n  {\"pipeline\":");
	json_quote(l, name, strlen(name));
	sb_addf(l, ",\"bucket_ok\":%s,\"tap_ok\":%s", v->bucket_ok ? "true" : "false",
		v->tap_ok ? "true" : "false");
	if (missing)
		sb_adds(l, ",\"error\":\"not found\"");
	sb_addf(l, ",\"ok\":%s,\"errors\":[", v->pipeline_failed ? "false" : "true");
	sb_add(l, v->errors.buf ? v->errors.buf : "", v->errors.len);
	sb_adds(l, "],\"checks\":[");
	sb_add(l, v->checks.buf ? v->checks.buf : "", v->checks.len);
	sb_adds(l, "]}");
	fwrite(l->buf, 1, l->len, stdout);
	fflush(stdout);
	v->count++;
	sb_reset(&v->checks);
	sb_reset(&v->errors);
}

static void result_sb(struct validate *v, const char *name, const char *check, enum result r,
		      const struct sb *msg)
{
	result(v, name, check, r, msg->buf ? msg->buf : "", msg->len);
}

/* From here until said_end(), what is said on stderr goes to v->said. */
static void said_begin(struct validate *v)
{
	off_t end = lseek(v->said, 0, SEEK_END);

	v->from = end < 0 ? 0 : end;
	fflush(stderr);
	v->saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (v->saved >= 0)
		dup2(v->said, STDERR_FILENO);
}

/* Stderr back; the first line said meanwhile, without "prog: ", into reason. */
static void said_end(struct validate *v, struct sb *reason)
{
	char buf[4096];
	off_t at = v->from;
	ssize_t r;
	const char *p, *nl = NULL;

	fflush(stderr);
	if (v->saved >= 0) {
		dup2(v->saved, STDERR_FILENO);
		close(v->saved);
		v->saved = -1;
	}
	sb_reset(reason);
	while (!nl && (r = pread(v->said, buf, sizeof(buf), at)) > 0) {
		nl = memchr(buf, '\n', (size_t)r);
		sb_add(reason, buf, nl ? (size_t)(nl - buf) : (size_t)r);
		at += r;
	}
	/* the program's name: what `sed 's/^[a-z-]*: //'` took off */
	for (p = reason->buf; p && p < reason->buf + reason->len && ((*p >= 'a' && *p <= 'z') || *p == '-'); p++)
		;
	if (p && reason->len - (size_t)(p - reason->buf) >= 2 && p[0] == ':' && p[1] == ' ') {
		size_t cut = (size_t)(p + 2 - reason->buf);

		memmove(reason->buf, reason->buf + cut, reason->len - cut + 1);
		reason->len -= cut;
	}
}

/*
 * Run `prog flag name`, prog beside this program (built and installed trees
 * keep them together), else on PATH: its exit status (-1: not started), its
 * stdout in out, what it said on stderr in reason.
 */
static int run_sibling(struct validate *v, const char *prog, const char *flag, const char *name,
		       struct sb *out, struct sb *reason)
{
	struct child_process c = CHILD_PROCESS_INIT;
	char *exe = child_sibling(prog);
	int status = -1;

	said_begin(v);
	if (exe == NULL) {
		err_msg("cannot find %s beside %s or on PATH", prog, err_prog);
	} else {
		child_push(&c, prog);
		child_push(&c, flag);
		child_push(&c, name);
		c.exe = exe;
		child_guard_begin();
		status = child_capture(&c, out);
		/* (a signal that stopped it ends this process here) */
		child_guard_end();
	}
	said_end(v, reason);
	free(exe);
	return status;
}

/* Check `prog -n name`: ok when it exits 0, else its first words. */
static int check_program(struct validate *v, const char *name, const char *check, const char *prog)
{
	struct sb out = SB_INIT, reason = SB_INIT;
	int status = run_sibling(v, prog, "-n", name, &out, &reason);

	if (status == 0)
		result(v, name, check, RESULT_OK, NULL, 0);
	else
		result_sb(v, name, check, RESULT_FAIL, &reason);
	sb_free(&out);
	sb_free(&reason);
	return status;
}

/* The source: `pipe-tap -s NAME`, its flag and streams on stdout. */
static void check_source(struct validate *v, const struct pipe_config *cfg, const char *name)
{
	struct sb out = SB_INIT, reason = SB_INIT, msg = SB_INIT;
	int status = run_sibling(v, "pipe-tap", "-s", name, &out, &reason);
	char *nl, *p;
	size_t n = 0;

	if (status != 0) {
		/* the tap's words: a password it echoes stays out of the terminal */
		mask_text(cfg, &reason);
		result_sb(v, name, "source", RESULT_FAIL, &reason);
		goto out;
	}
	nl = out.buf ? strchr(out.buf, '\n') : NULL;
	for (p = nl ? nl + 1 : NULL; p && *p; p = nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL)
			break;
		*nl = '\0';
		sb_addf(&msg, "%s%s", n++ ? ", " : "", p);
	}
	if (n && !cfg->streams && !cfg->metadata_json && !cfg->catalog_file &&
	    strncmp(out.buf, "--properties\n", 13) == 0) {
		struct sb w = SB_INIT;

		sb_addf(&w, "no stream is selected, and a tap that takes --properties (tap-postgres) "
			    "extracts none then: name them in source.streams (its discovery offers: %s)",
			msg.buf);
		result_sb(v, name, "source", RESULT_WARN, &w);
		sb_free(&w);
	} else if (n) {
		struct sb m = SB_INIT;

		sb_addf(&m, "%zu stream(s) offered", n);
		result_sb(v, name, "source", RESULT_OK, &m);
		sb_free(&m);
	} else {
		result(v, name, "source", RESULT_OK, NULL, 0);
	}
out:
	sb_free(&out);
	sb_free(&reason);
	sb_free(&msg);
}

/* transforms/NAME.jq or NAME.py is a file (pipe-sink refuses a .py alone). */
static int has_transform(const char *name)
{
	static const char *const ext[] = { "jq", "py" };
	struct stat st;
	size_t i;
	int found = 0;

	for (i = 0; i < sizeof(ext) / sizeof(ext[0]) && !found; i++) {
		char *path = xasprintf("%s/transforms/%s.%s", config_home(), name, ext[i]);

		found = stat(path, &st) == 0 && S_ISREG(st.st_mode);
		free(path);
	}
	return found;
}

static void validate_one(struct validate *v, const char *name)
{
	struct pipe_config cfg;
	struct sb reason = SB_INIT, secrets = SB_INIT, placeholders = SB_INIT;
	struct bucket *b;
	int ok, conditional = 0, missing;

	free(config_pipeline_file(name, &missing));
	v->unknown |= missing;
	v->pipeline_failed = v->bucket_ok = v->tap_ok = 0;
	said_begin(v);
	ok = config_load_name(name, &cfg) == 0 && check_config(&cfg, &secrets, &placeholders) == 0;
	said_end(v, &reason);
	if (!ok) {
		result_sb(v, name, "config", RESULT_FAIL, &reason);
		goto out;
	}
	/* keys passed over (config_unknown_warn): the first said */
	if (reason.len > 9 && strncmp(reason.buf, "warning: ", 9) == 0)
		result(v, name, "config", RESULT_WARN, reason.buf + 9, reason.len - 9);
	else
		result(v, name, "config", RESULT_OK, NULL, 0);

	/* (the source only through a tap that can start) */
	if (check_program(v, name, "tap", "pipe-tap") == 0)
		check_source(v, &cfg, name);
	if (has_transform(name))
		check_program(v, name, "transform", "pipe-sink");

	said_begin(v);
	b = bucket_open_opts(cfg.bucket, cfg.endpoint_url);
	ok = b && check_probe(b, &conditional) == 0;
	bucket_free(b);
	said_end(v, &reason);
	if (ok) {
		const char *m = conditional ? "conditional create: honoured" : "conditional create: not honoured";

		result(v, name, "bucket", RESULT_OK, m, strlen(m));
	} else {
		result_sb(v, name, "bucket", RESULT_FAIL, &reason);
	}

	if (secrets.len)
		result_sb(v, name, "secrets", RESULT_WARN, &secrets);
	else
		result(v, name, "secrets", RESULT_OK, NULL, 0);
	if (placeholders.len)
		result_sb(v, name, "placeholders", RESULT_WARN, &placeholders);
	else
		result(v, name, "placeholders", RESULT_OK, NULL, 0);
out:
	pipeline_end(v, name, missing);
	config_free(&cfg);
	sb_free(&reason);
	sb_free(&secrets);
	sb_free(&placeholders);
}

int validate_pipelines(char **names, size_t n, int json)
{
	struct validate v = { .json = json, .said = -1, .saved = -1, .line = SB_INIT,
			      .checks = SB_INIT, .errors = SB_INIT };
	char **all = NULL;
	size_t i;
	int ret = CLI_USAGE;

	for (i = 0; i < n; i++) {
		if (!config_name_ok(names[i]))
			return CLI_USAGE;
	}
	if (n == 0) {
		if (config_pipelines(&all, &n) != 0)
			return CLI_FAILED;
		names = all;
	}
	if (n == 0) {
		err_msg("no pipelines in %s/pipelines (dataspoc-pipe add NAME makes one)", config_home());
		if (json)
			fputs("[]\n", stdout);
		ret = CLI_OK;
		goto out;
	}
	v.said = memfd_create("pipe-state validate", MFD_CLOEXEC);
	if (v.said < 0) {
		err_msg("cannot make a file for the checks' messages:");
		ret = CLI_FAILED;
		goto out;
	}
	for (i = 0; i < n; i++)
		validate_one(&v, names[i]);
	if (json)
		fputs("\n]\n", stdout);
	/* an unknown pipeline is bad usage, as for run and logs */
	ret = v.unknown ? CLI_USAGE : v.failed ? CLI_FAILED : CLI_OK;
out:
	if (v.said >= 0)
		close(v.said);
	sb_free(&v.line);
	sb_free(&v.checks);
	sb_free(&v.errors);
	util_strv_free(all);
	return ret;
}
