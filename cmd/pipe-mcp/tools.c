/*
 * tools: the Python DataSpoc Pipe's MCP tools, with its names and arguments,
 * each over one of the existing commands, run as a child:
 *
 *	list_pipelines		pipe-state pipelines
 *	pipeline_config(name)	pipe-mcp -p NAME (show.c)
 *	run_pipeline(name, full)	dataspoc-pipe run NAME [--full]
 *	pipeline_status		pipe-state status -o json
 *	pipeline_logs(name)	pipe-state logs -n 1 -o json NAME
 *	show_manifest(bucket)	pipe-state manifest -o json -b BUCKET
 *	validate_pipeline(name)	dataspoc-pipe validate -o json NAME
 *
 * and the resource pipe://pipelines (pipe-mcp -l).  A command that gives
 * JSON gives the answer's structuredContent and, serialised, its text; one
 * that fails gives a result with isError true and what it said.  Every word
 * goes through show_mask() first.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp.h"

#include "config.h"
#include "err.h"
#include "sb.h"

struct tool {
	const char *name;
	const char *title;
	const char *description;
	const char *schema;	/* inputSchema, JSON text */
	const char *hints;	/* annotations beside the title, JSON members */
	int writes;		/* left out by a read-only server (-r) */
	int progress;		/* its lines are progress notifications */
	void (*command)(struct job *j);
	jv (*answer)(struct job *j, int status);
};

/* ---- the commands ---- */

static const char *arg_str(const struct job *j, const char *key)
{
	jv v = jv_object_get(jv_copy(j->args), jv_string(key));
	const char *s = NULL;

	/* (the string lives as long as j->args, which holds it) */
	if (jv_get_kind(v) == JV_KIND_STRING)
		s = jv_string_value(v);
	jv_free(v);
	return s;
}

static int arg_true(const struct job *j, const char *key)
{
	jv v = jv_object_get(jv_copy(j->args), jv_string(key));
	int t = jv_get_kind(v) == JV_KIND_TRUE;

	jv_free(v);
	return t;
}

static void command(struct job *j, const char *prog)
{
	j->exe = child_sibling(prog);
	j->c.exe = j->exe;
	j->prog = prog;
	child_push(&j->c, prog);
}

static void cmd_list(struct job *j)
{
	command(j, "pipe-state");
	child_push(&j->c, "pipelines");
}

static void cmd_config(struct job *j)
{
	command(j, "pipe-mcp");
	child_push(&j->c, "-p");
	child_push(&j->c, arg_str(j, "name"));
}

static void cmd_run(struct job *j)
{
	command(j, "dataspoc-pipe");
	child_push(&j->c, "run");
	if (arg_true(j, "full"))
		child_push(&j->c, "--full");
	/* (a valid name never starts with '-') */
	child_push(&j->c, arg_str(j, "name"));
}

static void cmd_status(struct job *j)
{
	command(j, "pipe-state");
	child_push(&j->c, "status");
	child_push(&j->c, "-o");
	child_push(&j->c, "json");
}

static void cmd_logs(struct job *j)
{
	command(j, "pipe-state");
	child_push(&j->c, "logs");
	child_push(&j->c, "-n");
	child_push(&j->c, "1");
	child_push(&j->c, "-o");
	child_push(&j->c, "json");
	child_push(&j->c, "--");
	child_push(&j->c, arg_str(j, "name"));
}

static void cmd_manifest(struct job *j)
{
	command(j, "pipe-state");
	child_push(&j->c, "manifest");
	child_push(&j->c, "-o");
	child_push(&j->c, "json");
	child_push(&j->c, "-b");
	child_push(&j->c, arg_str(j, "bucket"));
}

static void cmd_validate(struct job *j)
{
	command(j, "dataspoc-pipe");
	child_push(&j->c, "validate");
	child_push(&j->c, "-o");
	child_push(&j->c, "json");
	child_push(&j->c, arg_str(j, "name"));
}

/* ---- the answers ---- */

/* text content */
static jv text_item(const char *s, size_t len)
{
	jv item = jv_object_set(jv_object(), jv_string("type"), jv_string("text"));

	return jv_object_set(item, jv_string("text"), jv_string_sized(s ? s : "", (int)len));
}

/*
 * A tools/call result: text, and structured (an object, or invalid: none)
 * as structuredContent when the session knows it.  Consumes structured.
 */
static jv result(const struct job *j, const char *text, size_t len, jv structured, int is_error)
{
	jv r = jv_object_set(jv_object(), jv_string("content"), JV_ARRAY(text_item(text, len)));

	if (jv_get_kind(structured) == JV_KIND_OBJECT && j->structured)
		r = jv_object_set(r, jv_string("structuredContent"), structured);
	else
		jv_free(structured);
	return jv_object_set(r, jv_string("isError"), jv_bool(is_error));
}

/* A result whose text is structured's JSON, pretty. */
static jv json_result(const struct job *j, jv shown, jv structured)
{
	jv text = jv_dump_string(shown, JV_PRINT_INDENT_FLAGS(2));
	jv r = result(j, jv_string_value(text), (size_t)jv_string_length_bytes(jv_copy(text)), structured, 0);

	jv_free(text);
	return r;
}

/* What a command said on stderr, trimmed; NULL when nothing. */
static const char *said(const struct job *j, size_t *len)
{
	const char *s = j->err.buf;
	size_t n = j->err.len;

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	*len = n;
	return n ? s : NULL;
}

/* The command failed: isError, with its words (or its status). */
static jv failed(const struct job *j, int status, jv structured)
{
	size_t len;
	const char *s = said(j, &len);
	char *why;
	jv r;

	if (s)
		return result(j, s, len, structured, 1);
	why = status < 0 ? xasprintf("%s could not be started", j->prog) :
			   xasprintf("%s exited with status %d", j->prog, status);
	r = result(j, why, strlen(why), structured, 1);
	free(why);
	return r;
}

/* The command's stdout as JSON of kind want, masked; invalid when it is not. */
static jv output_json(const struct job *j, jv_kind want)
{
	jv v;

	if (j->truncated || j->out.len == 0 || j->out.len > INT_MAX)
		return jv_invalid();
	v = jv_parse_sized(j->out.buf, (int)j->out.len);
	if (jv_get_kind(v) != want) {
		jv_free(v);
		return jv_invalid();
	}
	return show_mask(j->have_cfg ? &j->cfg : NULL, v);
}

static jv answer_list(struct job *j, int status)
{
	jv names = jv_array();
	struct sb text = SB_INIT;
	const char *p = j->out.buf, *end = p + j->out.len, *nl;
	jv r;

	if (status != 0)
		return failed(j, status, jv_invalid());
	for (; p && p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (nl > p) {
			names = jv_array_append(names, jv_string_sized(p, (int)(nl - p)));
			sb_add(&text, p, (size_t)(nl - p) + (nl < end));
		}
	}
	/* the Python tool's words for none */
	if (text.len == 0)
		sb_adds(&text, "No pipelines configured.");
	while (text.len && text.buf[text.len - 1] == '\n')
		text.buf[--text.len] = '\0';
	r = result(j, text.buf, text.len, jv_object_set(jv_object(), jv_string("pipelines"), names), 0);
	sb_free(&text);
	return r;
}

/* A command whose whole answer is the object it printed. */
static jv answer_object(struct job *j, int status)
{
	jv v = status == 0 ? output_json(j, JV_KIND_OBJECT) : jv_invalid();

	if (!jv_is_valid(v)) {
		jv_free(v);
		return failed(j, status, jv_invalid());
	}
	return json_result(j, jv_copy(v), v);
}

/* status: its list, even when some pipeline could not be read (status 1). */
static jv answer_status(struct job *j, int status)
{
	jv v = status == 0 || status == 1 ? output_json(j, JV_KIND_ARRAY) : jv_invalid();

	if (!jv_is_valid(v)) {
		jv_free(v);
		return failed(j, status, jv_invalid());
	}
	return json_result(j, jv_copy(v), jv_object_set(jv_object(), jv_string("pipelines"), v));
}

/* logs: the latest run log, as the Python tool answers. */
static jv answer_logs(struct job *j, int status)
{
	jv v = status == 0 ? output_json(j, JV_KIND_ARRAY) : jv_invalid(), log;

	if (!jv_is_valid(v)) {
		jv_free(v);
		return failed(j, status, jv_invalid());
	}
	if (jv_array_length(jv_copy(v)) == 0) {
		jv_free(v);
		return result(j, "No logs found", strlen("No logs found"), jv_invalid(), 0);
	}
	log = jv_array_get(v, 0);
	return json_result(j, jv_copy(log), log);
}

/*
 * validate: the pipeline's object of `validate -o json` (its checks and the
 * Python tool's summary of them: bucket_ok, tap_ok, errors).  A failed check
 * is the answer, not an error of the tool: only a pipeline that cannot be
 * validated (unknown: status 2) is.
 */
static jv answer_validate(struct job *j, int status)
{
	jv list = status == 0 || status == 1 ? output_json(j, JV_KIND_ARRAY) : jv_invalid();
	jv out;

	if (!jv_is_valid(list) || jv_array_length(jv_copy(list)) != 1) {
		jv_free(list);
		return failed(j, status, jv_invalid());
	}
	out = jv_array_get(list, 0);
	if (jv_get_kind(out) != JV_KIND_OBJECT) {
		jv_free(out);
		return failed(j, status, jv_invalid());
	}
	return json_result(j, jv_copy(out), out);
}

/* "1,234" -> 1234; -1 when s is not such a count. */
static double count_of(const char *s, size_t n)
{
	double v = 0;
	size_t i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			v = v * 10 + (s[i] - '0');
		else if (s[i] != ',')
			return -1;
	}
	return v;
}

/*
 * The driver's summary (DESIGN.md, "What a person sees"): "Done! N records
 * in K stream(s)", then "  STREAM: N" a stream; a failure's "Records: N
 * landed, M read" (pipe-commit -a) gives records and read.
 */
static void run_summary(const struct sb *out, double *records, double *read, jv *streams)
{
	const char *p = out->buf, *end = p + out->len, *nl;
	static const char failed[] = "Records: ", landed[] = " landed, ", tail[] = " read";
	int done = 0;

	for (; p && p < end; p = nl + 1) {
		const char *colon;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if ((size_t)(nl - p) > strlen(failed) && memcmp(p, failed, strlen(failed)) == 0) {
			const char *n = p + strlen(failed), *l = memmem(n, (size_t)(nl - n), landed, strlen(landed));
			const char *m = l ? l + strlen(landed) : NULL;

			if (l && (size_t)(nl - m) > strlen(tail) &&
			    memcmp(nl - strlen(tail), tail, strlen(tail)) == 0) {
				*records = count_of(n, (size_t)(l - n));
				*read = count_of(m, (size_t)(nl - strlen(tail) - m));
			}
			continue;
		}
		if (!done) {
			if ((size_t)(nl - p) > 6 && memcmp(p, "Done! ", 6) == 0) {
				const char *sp = memchr(p + 6, ' ', (size_t)(nl - p - 6));

				done = 1;
				*records = count_of(p + 6, sp ? (size_t)(sp - p - 6) : 0);
			}
			continue;
		}
		if ((size_t)(nl - p) < 3 || p[0] != ' ' || p[1] != ' ')
			continue;
		for (colon = nl - 1; colon > p + 2 && !(colon[0] == ':' && colon[1] == ' '); colon--)
			;
		if (colon > p + 2) {
			double n = count_of(colon + 2, (size_t)(nl - colon - 2));

			if (n >= 0)
				*streams = jv_object_set(*streams, jv_string_sized(p + 2, (int)(colon - p - 2)),
							 jv_number(n));
		}
	}
}

/*
 * The driver's reason: its last "dataspoc-pipe: " line, that word taken
 * off; else the last line said (pipe-mcp's, when it could not start it).
 */
static jv run_error(const struct job *j, int status)
{
	size_t len, n;
	const char *s = said(j, &len), *line, *best = NULL, *last = NULL;
	size_t best_len = 0, last_len = 0;
	static const char prefix[] = "dataspoc-pipe: ", mine[] = "pipe-mcp: ";

	for (line = s; line && line < s + len; line += n + 1) {
		const char *nl = memchr(line, '\n', (size_t)(s + len - line));

		n = nl ? (size_t)(nl - line) : (size_t)(s + len - line);
		if (n > strlen(prefix) && memcmp(line, prefix, strlen(prefix)) == 0) {
			best = line + strlen(prefix);
			best_len = n - strlen(prefix);
		}
		if (n) {
			last = line;
			last_len = n;
		}
	}
	if (best)
		return jv_string_sized(best, (int)best_len);
	if (last && last_len > strlen(mine) && memcmp(last, mine, strlen(mine)) == 0)
		return jv_string_sized(last + strlen(mine), (int)(last_len - strlen(mine)));
	if (last)
		return jv_string_sized(last, (int)last_len);
	return jv_string_fmt("dataspoc-pipe exited with status %d", status);
}

/* run: the driver's words, and the Python tool's {success, streams, error}. */
static jv answer_run(struct job *j, int status)
{
	double records = -1, read = -1;
	jv streams = jv_object(), out, shown;
	struct sb text = SB_INIT;
	size_t len;
	const char *s;

	run_summary(&j->out, &records, &read, &streams);
	out = jv_object_set(jv_object(), jv_string("success"), jv_bool(status == 0));
	out = jv_object_set(out, jv_string("pipeline"), jv_string(arg_str(j, "name")));
	out = jv_object_set(out, jv_string("full"), jv_bool(arg_true(j, "full")));
	out = jv_object_set(out, jv_string("records"), records >= 0 ? jv_number(records) : jv_null());
	if (status != 0)
		out = jv_object_set(out, jv_string("records_read"), read >= 0 ? jv_number(read) : jv_null());
	out = jv_object_set(out, jv_string("streams"), streams);
	out = jv_object_set(out, jv_string("error"), status == 0 ? jv_null() : run_error(j, status));
	out = jv_object_set(out, jv_string("exit_status"), jv_number(status));
	out = jv_object_set(out, jv_string("output"), jv_string_sized(j->out.buf ? j->out.buf : "", (int)j->out.len));
	out = show_mask(j->have_cfg ? &j->cfg : NULL, out);

	/* the text: what the driver printed, and on a failure what it said */
	shown = jv_object_get(jv_copy(out), jv_string("output"));
	sb_add(&text, jv_string_value(shown), (size_t)jv_string_length_bytes(jv_copy(shown)));
	jv_free(shown);
	if (status != 0 && (s = said(j, &len)) != NULL) {
		if (text.len && text.buf[text.len - 1] != '\n')
			sb_addc(&text, '\n');
		sb_add(&text, s, len);
		show_mask_text(j->have_cfg ? &j->cfg : NULL, &text);
	}
	while (text.len && text.buf[text.len - 1] == '\n')
		text.buf[--text.len] = '\0';
	if (text.len == 0)
		sb_adds(&text, status == 0 ? "Done" : "the run failed");
	shown = result(j, text.buf, text.len, out, status != 0);
	sb_free(&text);
	return shown;
}

/* ---- the table ---- */

/* the annotations of a tool that only reads: local files, or buckets too */
#define READ_LOCAL \
	"\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":true,\"openWorldHint\":false"
#define READ_BUCKET \
	"\"readOnlyHint\":true,\"destructiveHint\":false,\"idempotentHint\":true,\"openWorldHint\":true"

#define NAME_SCHEMA \
	"\"name\":{\"type\":\"string\",\"description\":\"the pipeline's name (pipelines/NAME.yaml)\"," \
	"\"pattern\":\"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$\"}"

static const struct tool tools[] = {
	{ "list_pipelines", "List pipelines",
	  "List the configured pipeline names, one per line ($DATASPOC_PIPE_HOME/pipelines).",
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  READ_LOCAL,
	  0, 0, cmd_list, answer_list },
	{ "pipeline_config", "Pipeline configuration",
	  "Return the configuration of a pipeline as JSON, as a run would use it (config.yaml's defaults "
	  "merged, paths resolved), with passwords, keys and tokens masked as \"***\".",
	  "{\"type\":\"object\",\"properties\":{" NAME_SCHEMA "},\"required\":[\"name\"],"
	  "\"additionalProperties\":false}",
	  READ_LOCAL,
	  0, 0, cmd_config, answer_object },
	{ "run_pipeline", "Run a pipeline",
	  "Run an extraction pipeline (dataspoc-pipe run): the tap's records land in the bucket, "
	  "incrementally from the saved state unless full is true. Returns a JSON object with success, "
	  "records (landed), streams (records per stream) and error; a failure also records_read. Takes the pipeline's lock as any run does; "
	  "progress notifications carry the run's lines; cancelling the request interrupts the run "
	  "cleanly (nothing is published, the state stays).",
	  "{\"type\":\"object\",\"properties\":{" NAME_SCHEMA ","
	  "\"full\":{\"type\":\"boolean\",\"default\":false,"
	  "\"description\":\"ignore the saved state: a full extraction\"}},"
	  "\"required\":[\"name\"],\"additionalProperties\":false}",
	  "\"readOnlyHint\":false,\"destructiveHint\":true,\"idempotentHint\":false,\"openWorldHint\":true",
	  1, 1, cmd_run, answer_run },
	{ "pipeline_status", "Pipelines' status",
	  "Return the last run of every configured pipeline as JSON: name, last_run, status "
	  "(success, failure, never, error), duration, records (landed), records_read (a failure's).",
	  "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
	  READ_BUCKET,
	  0, 0, cmd_status, answer_status },
	{ "pipeline_logs", "Pipeline's latest log",
	  "Return the latest run log of a pipeline as JSON (pipeline, run_id, started_at, finished_at, "
	  "duration_seconds, status, streams, total_records (landed), records_read (a failure's), error), "
	  "or \"No logs found\".",
	  "{\"type\":\"object\",\"properties\":{" NAME_SCHEMA "},\"required\":[\"name\"],"
	  "\"additionalProperties\":false}",
	  READ_BUCKET,
	  0, 0, cmd_logs, answer_logs },
	{ "show_manifest", "Bucket manifest",
	  "Return the manifest (catalog) of a bucket as JSON: its tables, their columns, locations "
	  "and statistics.",
	  "{\"type\":\"object\",\"properties\":{\"bucket\":{\"type\":\"string\",\"minLength\":1,"
	  "\"description\":\"the bucket, as a pipeline's destination.bucket: s3://bucket[/prefix], "
	  "gs://..., az://container[/prefix], file:///abs/dir or a directory\"}},"
	  "\"required\":[\"bucket\"],\"additionalProperties\":false}",
	  READ_BUCKET,
	  0, 0, cmd_manifest, answer_object },
	{ "validate_pipeline", "Validate a pipeline",
	  "Check a pipeline (dataspoc-pipe validate): its config, its tap, its transform, its bucket "
	  "(a probe object written, read back and deleted), secrets readable by others, template "
	  "placeholders. Returns JSON: pipeline, ok, bucket_ok, tap_ok, errors, checks.",
	  "{\"type\":\"object\",\"properties\":{" NAME_SCHEMA "},\"required\":[\"name\"],"
	  "\"additionalProperties\":false}",
	  "\"readOnlyHint\":false,\"destructiveHint\":false,\"idempotentHint\":true,\"openWorldHint\":true",
	  0, 0, cmd_validate, answer_validate },
};

#define NTOOLS (sizeof(tools) / sizeof(tools[0]))


/* JSON text of this file, parsed (it is known to be JSON). */
static jv constant(const char *text)
{
	jv v = jv_parse(text);

	if (!jv_is_valid(v)) {
		jv_free(v);
		return jv_object();
	}
	return v;
}

jv tools_list(int read_only)
{
	jv list = jv_array();
	size_t i;

	for (i = 0; i < NTOOLS; i++) {
		const struct tool *t = &tools[i];
		jv d;
		char *hints;

		if (read_only && t->writes)
			continue;
		hints = xasprintf("{\"title\":\"%s\",%s}", t->title, t->hints);
		d = jv_object_set(jv_object(), jv_string("name"), jv_string(t->name));
		d = jv_object_set(d, jv_string("title"), jv_string(t->title));
		d = jv_object_set(d, jv_string("description"), jv_string(t->description));
		d = jv_object_set(d, jv_string("inputSchema"), constant(t->schema));
		d = jv_object_set(d, jv_string("annotations"), constant(hints));
		free(hints);
		list = jv_array_append(list, d);
	}
	return list;
}

jv tools_resources(void)
{
	jv r = jv_object_set(jv_object(), jv_string("uri"), jv_string(MCP_PIPELINES_URI));

	r = jv_object_set(r, jv_string("name"), jv_string("pipelines"));
	r = jv_object_set(r, jv_string("title"), jv_string("Pipelines"));
	r = jv_object_set(r, jv_string("description"),
			  jv_string("Every configured pipeline with its tap and its bucket, as a JSON list of "
				    "{name, tap, bucket} (\"error\" for a pipeline whose config does not load)."));
	r = jv_object_set(r, jv_string("mimeType"), jv_string("application/json"));
	return JV_ARRAY(r);
}

const struct tool *tools_find(const char *name, int read_only, int *disabled)
{
	size_t i;

	*disabled = 0;
	for (i = 0; i < NTOOLS; i++) {
		if (strcmp(tools[i].name, name) != 0)
			continue;
		if (read_only && tools[i].writes) {
			*disabled = 1;
			return NULL;
		}
		return &tools[i];
	}
	return NULL;
}

const char *tools_name(const struct tool *t)
{
	return t->name;
}

int tools_reports_progress(const struct tool *t)
{
	return t && t->progress;
}

/* A string argument's own checks: no control bytes; a pipeline's name, config_valid_name(). */
static int check_string(const char *key, jv v, jv prop, char **why)
{
	const char *s = jv_string_value(v);
	int len = jv_string_length_bytes(jv_copy(v)), i;
	jv min = jv_object_get(jv_copy(prop), jv_string("minLength"));
	int ret = 0;

	for (i = 0; i < len && ret == 0; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			*why = xasprintf("argument '%s' holds a control character", key);
			ret = -1;
		}
	}
	if (ret == 0 && jv_get_kind(min) == JV_KIND_NUMBER && len < (int)jv_number_value(min)) {
		*why = xasprintf("argument '%s' must not be empty", key);
		ret = -1;
	}
	/* the rule of every pipeline name, config_valid_name(): no '/', no "..", no '-' first */
	if (ret == 0 && strcmp(key, "name") == 0 && !config_valid_name(s)) {
		*why = xasprintf("invalid pipeline name '%s' (letters, digits, '.', '_' and '-', starting "
				 "with a letter or digit, at most 64)", s);
		ret = -1;
	}
	jv_free(min);
	return ret;
}

int tools_prepare(const struct tool *t, jv args, struct job *j, char **why)
{
	jv schema = constant(t->schema);
	jv props = jv_object_get(jv_copy(schema), jv_string("properties"));
	jv required = jv_object_get(jv_copy(schema), jv_string("required"));
	int ret = -1;

	*why = NULL;
	if (jv_get_kind(args) == JV_KIND_NULL || jv_get_kind(args) == JV_KIND_INVALID) {
		jv_free(args);
		args = jv_object();
	}
	if (jv_get_kind(args) != JV_KIND_OBJECT) {
		*why = xasprintf("the arguments of %s must be an object", t->name);
		goto out;
	}
	jv_object_foreach(args, key, val) {
		jv prop = jv_object_get(jv_copy(props), jv_copy(key));
		jv type = jv_is_valid(prop) ? jv_object_get(jv_copy(prop), jv_string("type")) : jv_invalid();
		const char *k = jv_string_value(key);
		const char *tn = jv_get_kind(type) == JV_KIND_STRING ? jv_string_value(type) : "";

		if (*why == NULL && !jv_is_valid(prop)) {
			*why = xasprintf("%s takes no argument '%s'", t->name, k);
		} else if (*why == NULL && strcmp(tn, "string") == 0) {
			if (jv_get_kind(val) != JV_KIND_STRING)
				*why = xasprintf("argument '%s' must be a string", k);
			else
				check_string(k, val, prop, why);
		} else if (*why == NULL && strcmp(tn, "boolean") == 0) {
			if (jv_get_kind(val) != JV_KIND_TRUE && jv_get_kind(val) != JV_KIND_FALSE)
				*why = xasprintf("argument '%s' must be true or false", k);
		}
		jv_free(type);
		jv_free(prop);
		jv_free(key);
		jv_free(val);
	}
	if (*why)
		goto out;
	if (jv_get_kind(required) != JV_KIND_ARRAY) {
		jv_free(required);
		required = jv_array();
	}
	jv_array_foreach(required, i, r) {
		if (*why == NULL && !jv_object_has(jv_copy(args), jv_copy(r)))
			*why = xasprintf("%s needs the argument '%s'", t->name, jv_string_value(r));
		(void)i;
		jv_free(r);
	}
	if (*why)
		goto out;
	j->tool = t;
	j->args = args;
	args = jv_invalid();
	/* for masking what its command says (a pipeline that does not load
	 * masks the patterns only; its command says why) */
	if (arg_str(j, "name") && show_load_quiet(arg_str(j, "name"), &j->cfg) == 0)
		j->have_cfg = 1;
	t->command(j);
	ret = 0;
out:
	jv_free(args);
	jv_free(schema);
	jv_free(props);
	jv_free(required);
	return ret;
}

void tools_prepare_resource(struct job *j)
{
	j->tool = NULL;
	j->args = jv_object();
	command(j, "pipe-mcp");
	child_push(&j->c, "-l");
}

jv tools_result(struct job *j, int status, int *code, char **why)
{
	jv list, text, item;
	size_t len;
	const char *s;

	*why = NULL;
	if (j->tool)
		return j->tool->answer(j, status);
	list = status == 0 ? output_json(j, JV_KIND_ARRAY) : jv_invalid();
	if (!jv_is_valid(list)) {
		jv_free(list);
		*code = RPC_INTERNAL_ERROR;
		s = said(j, &len);
		*why = s ? xstrndup(s, len) : xasprintf("pipe-mcp -l exited with status %d", status);
		return jv_invalid();
	}
	text = jv_dump_string(list, JV_PRINT_INDENT_FLAGS(2));
	item = jv_object_set(jv_object(), jv_string("uri"), jv_string(MCP_PIPELINES_URI));
	item = jv_object_set(item, jv_string("mimeType"), jv_string("application/json"));
	item = jv_object_set(item, jv_string("text"), text);
	return jv_object_set(jv_object(), jv_string("contents"), JV_ARRAY(item));
}
