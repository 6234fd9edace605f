/*
 * server: one MCP session over stdio.  Newline-delimited JSON-RPC 2.0 on
 * stdin and stdout (MCP's stdio transport): nothing but its messages ever
 * goes to stdout, whatever goes to stderr is a log.
 *
 * The loop polls stdin, the children's stdout and stderr, and a pipe the
 * signal handlers write to.  A tools/call or a resources/read is a job: its
 * command runs as a child (lib/child.h: its stdin /dev/null, its own process
 * group, SIGKILL should this process die), at most MAX_RUNNING at a time,
 * the others queued in order; the answer goes once the child has ended.
 * Meanwhile other requests are answered (ping, tools/list, ...), progress
 * notifications sent, and notifications/cancelled stops a job's child with
 * SIGTERM (the driver then stops its run cleanly: nothing published, the
 * lock released) and no answer is sent, as MCP says.
 *
 * The end of stdin ends the session once the jobs in flight are answered.
 * SIGINT, SIGTERM and SIGHUP, or a stdout that can no longer be written (the
 * client is gone; SIGPIPE is ignored for that), stop every job the same
 * way; the signal is raised again once they have ended.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mcp.h"

#include "cli.h"
#include "err.h"
#include "jvx.h"
#include "util.h"

/* The protocol versions spoken, the latest first. */
static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL };

/* structuredContent came with this version. */
#define STRUCTURED_SINCE "2025-06-18"

enum {
	MAX_RUNNING = 4,		/* children at a time */
	MAX_LINE = 4 << 20,		/* the longest message read */
	PIPE_WAIT_MS = 2000,		/* an ended child's pipes held by what it left */
	STOP_MARGIN = 5,		/* seconds past the driver's own grace before SIGKILL */
};

struct server {
	int read_only;
	int initialized;
	const char *version;
	int reading;		/* stdin not at its end */
	struct sb in;		/* what came on stdin, not a whole line yet */
	int skipping;		/* a line too long: skipped up to its newline */
	struct job *jobs;	/* in the order they came */
	size_t running;
	int out_broken;
	int stopping;		/* every job is being stopped */
};

static int sig_pipe[2] = { -1, -1 };
static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	int e = errno;

	if (sig != SIGCHLD)
		got_signal = sig;
	if (write(sig_pipe[1], "", 1) < 0) {
		/* full: a wake-up is pending already */
	}
	errno = e;
}

static int signals_begin(void)
{
	struct sigaction sa;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
		err_msg("cannot make a pipe:");
		return -1;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	/* a client gone: EPIPE, and the runs are stopped cleanly, not killed */
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

static double now(void)
{
	return util_now();
}

/* ---- messages out ---- */

static jv envelope(void)
{
	return jv_object_set(jv_object(), jv_string("jsonrpc"), jv_string("2.0"));
}

/* One message, one line.  Consumes msg. */
static void send_msg(struct server *s, jv msg)
{
	struct sb line = SB_INIT;
	jv text;

	if (s->out_broken) {
		jv_free(msg);
		return;
	}
	text = jv_dump_string(msg, 0);
	sb_add(&line, jv_string_value(text), (size_t)jv_string_length_bytes(jv_copy(text)));
	sb_addc(&line, '\n');
	jv_free(text);
	if (util_write_all(STDOUT_FILENO, line.buf, line.len) != 0) {
		err_msg("cannot write to stdout (the client is gone?):");
		s->out_broken = 1;
	}
	sb_free(&line);
}

/* Consumes id and result. */
static void respond(struct server *s, jv id, jv result)
{
	jv m = jv_object_set(envelope(), jv_string("id"), id);

	send_msg(s, jv_object_set(m, jv_string("result"), result));
}

/* A JSON-RPC error; data may be invalid (none).  Consumes id and data. */
static void respond_error(struct server *s, jv id, int code, const char *message, jv data)
{
	jv e = jv_object_set(jv_object(), jv_string("code"), jv_number(code));
	jv m = jv_object_set(envelope(), jv_string("id"), id);

	e = jv_object_set(e, jv_string("message"), jv_string(message));
	if (jv_is_valid(data))
		e = jv_object_set(e, jv_string("data"), data);
	else
		jv_free(data);
	err_msg("error %d: %s", code, message);
	send_msg(s, jv_object_set(m, jv_string("error"), e));
}

static void respond_errorf(struct server *s, jv id, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void respond_errorf(struct server *s, jv id, int code, const char *fmt, ...)
{
	va_list ap;
	jv msg;

	va_start(ap, fmt);
	msg = jv_string_vfmt(fmt, ap);
	va_end(ap);
	respond_error(s, id, code, jv_string_value(msg), jv_invalid());
	jv_free(msg);
}

/* ---- jobs ---- */

static void job_free(struct job *j)
{
	jv_free(j->id);
	jv_free(j->token);
	jv_free(j->args);
	if (j->have_cfg)
		config_free(&j->cfg);
	child_clear(&j->c);
	free(j->exe);
	if (j->out_fd >= 0)
		close(j->out_fd);
	if (j->err_fd >= 0)
		close(j->err_fd);
	sb_free(&j->out);
	sb_free(&j->err);
	sb_free(&j->part[0]);
	sb_free(&j->part[1]);
	free(j);
}

static struct job *job_new(jv id, jv token)
{
	struct job *j = xcalloc(1, sizeof(*j));
	struct child_process init = CHILD_PROCESS_INIT;

	j->id = id;
	j->token = token;
	j->args = jv_null();
	j->c = init;
	j->out_fd = j->err_fd = -1;
	return j;
}

static void job_unlink(struct server *s, struct job *j)
{
	struct job **p;

	for (p = &s->jobs; *p; p = &(*p)->next) {
		if (*p == j) {
			*p = j->next;
			return;
		}
	}
}

static struct job *job_with_id(struct server *s, jv id)
{
	struct job *j;

	for (j = s->jobs; j; j = j->next) {
		if (jv_equal(jv_copy(j->id), jv_copy(id)))
			break;
	}
	jv_free(id);
	return j;
}

static const char *job_name(const struct job *j)
{
	return j->tool ? tools_name(j->tool) : MCP_PIPELINES_URI;
}

/* Answer j, its command ended with status (-1: it could not be started). */
static void job_answer(struct server *s, struct job *j, int status)
{
	int code = RPC_INTERNAL_ERROR;
	char *why = NULL;
	jv r;

	if (j->cancelled)
		return;
	if (status != 0)
		err_msg("%s: %s exited with status %d", job_name(j), j->prog, status);
	r = tools_result(j, status, &code, &why);
	if (jv_is_valid(r)) {
		respond(s, jv_copy(j->id), r);
	} else {
		jv_free(r);
		respond_error(s, jv_copy(j->id), code, why ? why : "internal error", jv_invalid());
	}
	free(why);
}

/* Send SIGTERM to j's group; SIGKILL follows if it lingers. */
static void job_stop(struct job *j)
{
	long grace;

	if (!j->running || j->stopped || j->exited)
		return;
	if (kill(-j->c.pid, SIGTERM) != 0)
		kill(j->c.pid, SIGTERM);
	j->stopped = 1;
	/* the driver's own grace for the stages, and then some */
	grace = util_env_long("DATASPOC_PIPE_KILL_GRACE", 0, 3600, 5);
	j->kill_at = now() + (double)(grace + STOP_MARGIN);
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Start j's command; 0, or -1 when it could not be (j answered). */
static int job_start(struct server *s, struct job *j)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 };
	char path[64];

	if (j->c.exe == NULL) {
		sb_addf(&j->err, "pipe-mcp: cannot find %s beside pipe-mcp or on PATH\n", j->prog);
		goto fail;
	}
	if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
		sb_addf(&j->err, "pipe-mcp: cannot make a pipe: %s\n", strerror(errno));
		goto fail;
	}
	/* its stderr: the pipe's write end, reopened by child_start() as a
	 * file that is not a regular one, and given to it as is */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", err[1]);
	j->c.out = out[1];
	out[1] = -1;
	j->c.err_path = path;
	if (child_start(&j->c) != 0) {
		j->c.err_path = NULL;
		sb_addf(&j->err, "pipe-mcp: cannot run %s\n", j->c.exe);
		goto fail;
	}
	j->c.err_path = NULL;
	close(err[1]);
	j->out_fd = out[0];
	j->err_fd = err[0];
	set_nonblock(j->out_fd);
	set_nonblock(j->err_fd);
	j->running = 1;
	s->running++;
	return 0;
fail:
	if (out[0] >= 0)
		close(out[0]);
	if (out[1] >= 0)
		close(out[1]);
	if (err[0] >= 0)
		close(err[0]);
	if (err[1] >= 0)
		close(err[1]);
	job_answer(s, j, -1);
	return -1;
}

/* A line of run_pipeline's output as a progress notification. */
static void progress(struct server *s, struct job *j, const char *p, size_t n)
{
	struct sb text = SB_INIT;
	jv params, m;

	while (n && (p[n - 1] == '\r' || p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	while (n && (*p == ' ' || *p == '\t')) {
		p++;
		n--;
	}
	if (n == 0 || jv_get_kind(j->token) == JV_KIND_NULL || j->cancelled)
		return;
	sb_add(&text, p, n);
	show_mask_text(j->have_cfg ? &j->cfg : NULL, &text);
	j->progress += 1;
	params = jv_object_set(jv_object(), jv_string("progressToken"), jv_copy(j->token));
	params = jv_object_set(params, jv_string("progress"), jv_number(j->progress));
	params = jv_object_set(params, jv_string("message"), jv_string_sized(text.buf, (int)text.len));
	m = jv_object_set(envelope(), jv_string("method"), jv_string("notifications/progress"));
	send_msg(s, jv_object_set(m, jv_string("params"), params));
	sb_free(&text);
}

/* The whole lines of part as progress; at the end (last), what is left too. */
static void progress_lines(struct server *s, struct job *j, struct sb *part, int last)
{
	size_t start = 0;
	const char *nl;

	while (part->len > start && (nl = memchr(part->buf + start, '\n', part->len - start)) != NULL) {
		progress(s, j, part->buf + start, (size_t)(nl - part->buf) - start);
		start = (size_t)(nl - part->buf) + 1;
	}
	if (last && part->len > start) {
		progress(s, j, part->buf + start, part->len - start);
		start = part->len;
	}
	if (start) {
		memmove(part->buf, part->buf + start, part->len - start);
		part->len -= start;
		part->buf[part->len] = '\0';
	}
}

/* No more of j's stdout (which 0) or stderr (1). */
static void job_close(struct server *s, struct job *j, int which)
{
	int *fd = which ? &j->err_fd : &j->out_fd;

	if (*fd < 0)
		return;
	close(*fd);
	*fd = -1;
	if (tools_reports_progress(j->tool))
		progress_lines(s, j, &j->part[which], 1);
}

/*
 * Read what j's stdout (which 0) or stderr (1) holds now.  1 when it gave
 * something, 0 at its end (closed), -1 when nothing is there yet.
 */
static int job_read(struct server *s, struct job *j, int which)
{
	int fd = which ? j->err_fd : j->out_fd;
	struct sb *keep = which ? &j->err : &j->out;
	char buf[65536];
	ssize_t r;

	if (fd < 0)
		return 0;
	r = read(fd, buf, sizeof(buf));
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return -1;
	if (r <= 0) {
		job_close(s, j, which);
		return 0;
	}
	if (keep->len + (size_t)r <= MCP_OUTPUT_MAX)
		sb_add(keep, buf, (size_t)r);
	else
		j->truncated = 1;
	if (tools_reports_progress(j->tool) && j->part[which].len < MAX_LINE) {
		sb_add(&j->part[which], buf, (size_t)r);
		progress_lines(s, j, &j->part[which], 0);
	}
	return 1;
}

/* Whether j's child has ended (it stays a zombie until child_finish() reaps it). */
static void job_check_exit(struct job *j)
{
	siginfo_t si;

	if (!j->running || j->exited)
		return;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)j->c.pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == j->c.pid) {
		j->exited = 1;
		j->give_up_at = now() + PIPE_WAIT_MS / 1000.0;
	}
}

/* j's child has ended and its pipes too (or we waited enough): reap, answer, free. */
static void job_finish(struct server *s, struct job *j)
{
	int status;

	/* what is left, without waiting: what it left may hold them open */
	while (job_read(s, j, 0) > 0)
		;
	while (job_read(s, j, 1) > 0)
		;
	job_close(s, j, 0);
	job_close(s, j, 1);
	/* a child that was stopped: what it left in its group goes too (its
	 * pid, a zombie's, cannot have been reused yet) */
	if (j->stopped)
		kill(-j->c.pid, SIGKILL);
	status = child_finish(&j->c);
	j->running = 0;
	s->running--;
	job_unlink(s, j);
	if (j->cancelled)
		err_msg("%s: cancelled (its command ended with status %d)", job_name(j), status);
	job_answer(s, j, status);
	job_free(j);
}

/* Start what is queued, in order, while there is room. */
static void jobs_start(struct server *s)
{
	struct job *j, *next;

	for (j = s->jobs; j && s->running < MAX_RUNNING && !s->stopping; j = next) {
		next = j->next;
		if (j->running)
			continue;
		if (job_start(s, j) != 0) {
			job_unlink(s, j);
			job_free(j);
		}
	}
}

/* Stop every job: the running ones with SIGTERM, the queued ones dropped unanswered. */
static void jobs_stop_all(struct server *s)
{
	struct job *j, *next;

	s->stopping = 1;
	s->reading = 0;
	for (j = s->jobs; j; j = next) {
		next = j->next;
		if (j->running) {
			job_stop(j);
		} else {
			job_unlink(s, j);
			job_free(j);
		}
	}
}

/* ---- requests ---- */

/* v is "2.0"; consumes v */
static int is_version(jv v)
{
	int r = jv_get_kind(v) == JV_KIND_STRING && strcmp(jv_string_value(v), "2.0") == 0;

	jv_free(v);
	return r;
}

static void do_initialize(struct server *s, jv id, jv params)
{
	jv want = jvx_get(params, "protocolVersion"), caps, info, r;
	size_t i;

	if (jv_get_kind(want) != JV_KIND_STRING) {
		jv_free(want);
		jv_free(params);
		respond_errorf(s, id, RPC_INVALID_PARAMS, "Invalid params: initialize needs a protocolVersion string");
		return;
	}
	if (s->initialized) {
		jv_free(want);
		jv_free(params);
		respond_errorf(s, id, RPC_INVALID_REQUEST, "Invalid Request: the session is initialized already");
		return;
	}
	/* the client's version when it is one of ours, else our latest */
	s->version = versions[0];
	for (i = 0; versions[i]; i++) {
		if (strcmp(versions[i], jv_string_value(want)) == 0)
			s->version = versions[i];
	}
	if (strcmp(s->version, jv_string_value(want)) != 0)
		err_msg("the client asks for protocol version '%s': answering with %s", jv_string_value(want),
			s->version);
	jv_free(want);
	jv_free(params);
	s->initialized = 1;

	caps = jv_object_set(jv_object(), jv_string("tools"),
			     jv_object_set(jv_object(), jv_string("listChanged"), jv_false()));
	caps = jv_object_set(caps, jv_string("resources"),
			     jv_object_set(jv_object_set(jv_object(), jv_string("subscribe"), jv_false()),
					   jv_string("listChanged"), jv_false()));
	info = jv_object_set(jv_object(), jv_string("name"), jv_string(MCP_SERVER_NAME));
	info = jv_object_set(info, jv_string("title"), jv_string("DataSpoc Pipe"));
	info = jv_object_set(info, jv_string("version"), jv_string(MCP_SERVER_VERSION));
	r = jv_object_set(jv_object(), jv_string("protocolVersion"), jv_string(s->version));
	r = jv_object_set(r, jv_string("capabilities"), caps);
	r = jv_object_set(r, jv_string("serverInfo"), info);
	r = jv_object_set(r, jv_string("instructions"), jv_string(s->read_only ?
		"DataSpoc Pipe lands the records of Singer taps in a bucket. List the pipelines, read their "
		"config (secrets masked), status, logs and the bucket's manifest, and validate them. This "
		"server is read-only: it runs no pipeline." :
		"DataSpoc Pipe lands the records of Singer taps in a bucket. List the pipelines, read their "
		"config (secrets masked), status, logs and the bucket's manifest, validate them, and run "
		"them: a run takes the pipeline's lock, reports progress, and can be cancelled."));
	respond(s, id, r);
}

/* A list method's cursor: there is one page, so any cursor is not ours. */
static int bad_cursor(struct server *s, jv id, jv params)
{
	jv c = jvx_get(params, "cursor");

	jv_free(params);
	if (!jv_is_valid(c) || jv_get_kind(c) == JV_KIND_NULL) {
		jv_free(c);
		jv_free(id);
		return 0;
	}
	jv_free(c);
	respond_errorf(s, id, RPC_INVALID_PARAMS, "Invalid params: unknown cursor");
	return 1;
}

/* The request's _meta.progressToken, or null. */
static jv progress_token(jv params)
{
	jv meta = jvx_get(params, "_meta"), t = jvx_get(meta, "progressToken");

	jv_free(meta);
	if (jv_get_kind(t) == JV_KIND_STRING || jv_get_kind(t) == JV_KIND_NUMBER)
		return t;
	jv_free(t);
	return jv_null();
}

static void queue(struct server *s, struct job *j)
{
	struct job **p = &s->jobs;

	while (*p)
		p = &(*p)->next;
	*p = j;
	j->structured = strcmp(s->version, STRUCTURED_SINCE) >= 0;
}

static void do_call(struct server *s, jv id, jv params)
{
	jv name = jvx_get(params, "name"), args = jvx_get(params, "arguments");
	const struct tool *t;
	struct job *j;
	char *why = NULL;
	int disabled;

	if (jv_get_kind(name) != JV_KIND_STRING) {
		respond_errorf(s, id, RPC_INVALID_PARAMS, "Invalid params: tools/call needs the tool's name");
		goto out;
	}
	t = tools_find(jv_string_value(name), s->read_only, &disabled);
	if (t == NULL) {
		if (disabled)
			respond_errorf(s, id, RPC_INVALID_PARAMS, "Unknown tool: %s is disabled (read-only server)",
				       jv_string_value(name));
		else
			respond_errorf(s, id, RPC_INVALID_PARAMS, "Unknown tool: %s", jv_string_value(name));
		goto out;
	}
	if (jv_is_valid(args) && jv_get_kind(args) != JV_KIND_OBJECT && jv_get_kind(args) != JV_KIND_NULL) {
		respond_errorf(s, id, RPC_INVALID_PARAMS, "Invalid params: the arguments must be an object");
		goto out;
	}
	j = job_new(jv_copy(id), progress_token(params));
	if (tools_prepare(t, args, j, &why) != 0) {
		args = jv_invalid();
		respond_errorf(s, id, RPC_INVALID_PARAMS, "Invalid params: %s", why);
		free(why);
		job_free(j);
		goto out;
	}
	args = jv_invalid();
	jv_free(id);
	queue(s, j);
out:
	jv_free(name);
	jv_free(args);
	jv_free(params);
}

static void do_read(struct server *s, jv id, jv params)
{
	jv uri = jvx_get(params, "uri");
	struct job *j;

	if (jv_get_kind(uri) != JV_KIND_STRING) {
		respond_errorf(s, id, RPC_INVALID_PARAMS, "Invalid params: resources/read needs a uri");
	} else if (strcmp(jv_string_value(uri), MCP_PIPELINES_URI) != 0) {
		respond_error(s, id, MCP_RESOURCE_NOT_FOUND, "Resource not found",
			      jv_object_set(jv_object(), jv_string("uri"), jv_copy(uri)));
	} else {
		j = job_new(id, progress_token(params));
		tools_prepare_resource(j);
		queue(s, j);
	}
	jv_free(uri);
	jv_free(params);
}

/* A request (it has an id): answered now, or once its job ends. */
static void on_request(struct server *s, jv id, const char *method, jv params)
{
	struct job *j = job_with_id(s, jv_copy(id));

	if (j) {
		respond_errorf(s, id, RPC_INVALID_REQUEST, "Invalid Request: id already in use by a request in flight");
		jv_free(params);
		return;
	}
	if (strcmp(method, "ping") == 0) {
		respond(s, id, jv_object());
	} else if (strcmp(method, "initialize") == 0) {
		do_initialize(s, id, jv_copy(params));
	} else if (!s->initialized) {
		respond_errorf(s, id, RPC_INVALID_REQUEST, "Invalid Request: initialize the session first");
	} else if (strcmp(method, "tools/list") == 0) {
		if (!bad_cursor(s, jv_copy(id), jv_copy(params)))
			respond(s, id, jv_object_set(jv_object(), jv_string("tools"), tools_list(s->read_only)));
		else
			jv_free(id);
	} else if (strcmp(method, "tools/call") == 0) {
		do_call(s, id, params);
		return;
	} else if (strcmp(method, "resources/list") == 0) {
		if (!bad_cursor(s, jv_copy(id), jv_copy(params)))
			respond(s, id, jv_object_set(jv_object(), jv_string("resources"), tools_resources()));
		else
			jv_free(id);
	} else if (strcmp(method, "resources/templates/list") == 0) {
		respond(s, id, jv_object_set(jv_object(), jv_string("resourceTemplates"), jv_array()));
	} else if (strcmp(method, "resources/read") == 0) {
		do_read(s, id, params);
		return;
	} else {
		respond_errorf(s, id, RPC_METHOD_NOT_FOUND, "Method not found: %s", method);
	}
	jv_free(params);
}

/* A notification: never answered. */
static void on_notification(struct server *s, const char *method, jv params)
{
	if (strcmp(method, "notifications/cancelled") == 0) {
		jv rid = jvx_get(params, "requestId");
		struct job *j = jv_is_valid(rid) ? job_with_id(s, jv_copy(rid)) : NULL;

		if (j && !j->cancelled) {
			err_msg("%s: cancelled by the client", job_name(j));
			j->cancelled = 1;
			if (j->running) {
				job_stop(j);
			} else {
				job_unlink(s, j);
				job_free(j);
			}
		}
		jv_free(rid);
	}
	/* notifications/initialized, and any other: nothing to do */
	jv_free(params);
}

/* The id of msg (only looked at) when it is a valid one (a string or a number), else null. */
static jv valid_id(jv msg)
{
	jv id = jvx_get(msg, "id");

	if (jv_get_kind(id) == JV_KIND_STRING || jv_get_kind(id) == JV_KIND_NUMBER)
		return id;
	jv_free(id);
	return jv_null();
}

static void on_line(struct server *s, const char *line, size_t len)
{
	jv msg, method, params, id;
	int has_id;

	while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t'))
		len--;
	while (len && (*line == ' ' || *line == '\t')) {
		line++;
		len--;
	}
	if (len == 0)
		return;
	msg = jv_parse_sized(line, (int)len);
	if (!jv_is_valid(msg)) {
		jv why = jv_invalid_get_msg(msg);
		const char *w = jv_get_kind(why) == JV_KIND_STRING ? jv_string_value(why) : "not JSON";
		/* jq's reason ends with the whole line: said once is enough */
		const char *cut = strstr(w, " (while parsing");

		respond_errorf(s, jv_null(), RPC_PARSE_ERROR, "Parse error: %.*s",
			       (int)(cut ? (size_t)(cut - w) : strlen(w)), w);
		jv_free(why);
		return;
	}
	if (jv_get_kind(msg) == JV_KIND_ARRAY) {
		respond_errorf(s, jv_null(), RPC_INVALID_REQUEST, "Invalid Request: %s",
			       jv_array_length(jv_copy(msg)) == 0 ? "an empty batch" : "batches are not supported");
		jv_free(msg);
		return;
	}
	if (jv_get_kind(msg) != JV_KIND_OBJECT) {
		respond_errorf(s, jv_null(), RPC_INVALID_REQUEST, "Invalid Request: not a JSON-RPC message");
		jv_free(msg);
		return;
	}
	has_id = jv_object_has(jv_copy(msg), jv_string("id"));
	id = valid_id(msg);
	method = jvx_get(msg, "method");
	params = jvx_get(msg, "params");
	if (!is_version(jvx_get(msg, "jsonrpc"))) {
		respond_errorf(s, id, RPC_INVALID_REQUEST, "Invalid Request: jsonrpc must be \"2.0\"");
	} else if (has_id && jv_get_kind(id) == JV_KIND_NULL) {
		respond_errorf(s, id, RPC_INVALID_REQUEST, "Invalid Request: the id must be a string or a number");
	} else if (!jv_is_valid(method)) {
		/* a response (to a request we never send): nothing to do */
		if (!has_id || (!jv_object_has(jv_copy(msg), jv_string("result")) &&
				!jv_object_has(jv_copy(msg), jv_string("error"))))
			respond_errorf(s, id, RPC_INVALID_REQUEST, "Invalid Request: no method");
		else
			jv_free(id);
	} else if (jv_get_kind(method) != JV_KIND_STRING) {
		respond_errorf(s, id, RPC_INVALID_REQUEST, "Invalid Request: the method must be a string");
	} else if (jv_is_valid(params) && jv_get_kind(params) != JV_KIND_OBJECT) {
		if (has_id)
			respond_errorf(s, id, jv_get_kind(params) == JV_KIND_ARRAY ? RPC_INVALID_PARAMS :
				       RPC_INVALID_REQUEST, "Invalid params: the params must be an object");
		else
			jv_free(id);
	} else if (!has_id) {
		jv_free(id);
		on_notification(s, jv_string_value(method), params);
		params = jv_invalid();
	} else {
		on_request(s, id, jv_string_value(method), params);
		params = jv_invalid();
	}
	jv_free(method);
	jv_free(params);
	jv_free(msg);
}

/* ---- the loop ---- */

/* The whole lines of what stdin gave. */
static void take_lines(struct server *s, int at_end)
{
	size_t start = 0;
	const char *nl;

	while (s->in.len > start && (nl = memchr(s->in.buf + start, '\n', s->in.len - start)) != NULL) {
		size_t n = (size_t)(nl - s->in.buf) - start;

		if (s->skipping)
			s->skipping = 0;
		else
			on_line(s, s->in.buf + start, n);
		start += n + 1;
	}
	if (s->in.len - start > MAX_LINE) {
		if (!s->skipping)
			respond_errorf(s, jv_null(), RPC_INVALID_REQUEST, "Invalid Request: a message longer than %d bytes",
				       MAX_LINE);
		s->skipping = 1;
		start = s->in.len;
	}
	if (at_end && s->in.len > start) {
		/* a last line without its newline */
		if (!s->skipping)
			on_line(s, s->in.buf + start, s->in.len - start);
		start = s->in.len;
	}
	if (start) {
		memmove(s->in.buf, s->in.buf + start, s->in.len - start);
		s->in.len -= start;
		s->in.buf[s->in.len] = '\0';
	}
}

static void read_stdin(struct server *s)
{
	char buf[65536];
	ssize_t r = read(STDIN_FILENO, buf, sizeof(buf));

	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (r <= 0) {
		if (r < 0)
			err_msg("cannot read stdin:");
		s->reading = 0;
		take_lines(s, 1);
		return;
	}
	sb_add(&s->in, buf, (size_t)r);
	take_lines(s, 0);
}

/* Milliseconds until the next deadline of a job, -1: none. */
static int next_timeout(const struct server *s)
{
	const struct job *j;
	double t = 0, left;

	for (j = s->jobs; j; j = j->next) {
		double at = j->exited ? j->give_up_at : j->kill_at;

		if (j->running && at > 0 && (t == 0 || at < t))
			t = at;
	}
	if (t == 0)
		return -1;
	left = t - now();
	return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* One turn: wait for something, then deal with it. */
static int turn(struct server *s)
{
	struct pollfd *p;
	struct job *j, *next;
	size_t n = 0, cap = 2 + 2 * s->running;
	int r, in_ready;

	p = xcalloc(cap, sizeof(*p));
	p[n++] = (struct pollfd){ sig_pipe[0], POLLIN, 0 };
	if (s->reading)
		p[n++] = (struct pollfd){ STDIN_FILENO, POLLIN, 0 };
	for (j = s->jobs; j; j = j->next) {
		if (j->out_fd >= 0)
			p[n++] = (struct pollfd){ j->out_fd, POLLIN, 0 };
		if (j->err_fd >= 0)
			p[n++] = (struct pollfd){ j->err_fd, POLLIN, 0 };
	}
	r = poll(p, (nfds_t)n, next_timeout(s));
	in_ready = r > 0 && s->reading && p[1].revents != 0;
	free(p);
	if (r < 0 && errno != EINTR) {
		err_msg("poll:");
		return -1;
	}
	{
		char drain[64];

		while (read(sig_pipe[0], drain, sizeof(drain)) > 0)
			;
	}
	if (got_signal && !s->stopping) {
		err_msg("%s: stopping", strsignal(got_signal));
		jobs_stop_all(s);
	}
	if (s->reading && in_ready)
		read_stdin(s);
	for (j = s->jobs; j; j = j->next) {
		while (job_read(s, j, 0) > 0)
			;
		while (job_read(s, j, 1) > 0)
			;
		job_check_exit(j);
	}
	for (j = s->jobs; j; j = next) {
		double t = now();

		next = j->next;
		if (!j->running)
			continue;
		if (j->exited && ((j->out_fd < 0 && j->err_fd < 0) || t >= j->give_up_at)) {
			job_finish(s, j);
			/* (it answered: the list may have changed) */
			next = s->jobs;
			continue;
		}
		if (!j->exited && j->kill_at > 0 && t >= j->kill_at) {
			err_msg("%s: its command did not stop: SIGKILL", job_name(j));
			kill(-j->c.pid, SIGKILL);
			kill(j->c.pid, SIGKILL);
			j->kill_at = 0;
		}
	}
	if (s->out_broken && !s->stopping)
		jobs_stop_all(s);
	jobs_start(s);
	return 0;
}

int server_run(int read_only)
{
	static const char *const run_env[] = {
		"DATASPOC_RUN_ID", "DATASPOC_PIPE_PID", "DATASPOC_PIPE_DRIVER", "DATASPOC_PIPE_RUN_DIR",
		"DATASPOC_PIPE_RUN_DIR_FD", "DATASPOC_PIPE_STAGES_FD", NULL
	};
	struct server s;
	int ret = CLI_OK, sig;
	size_t i;

	memset(&s, 0, sizeof(s));
	s.read_only = read_only;
	s.version = versions[0];
	s.reading = 1;
	/* what a run of the driver's sets is no run of ours: each child is its own */
	for (i = 0; run_env[i]; i++)
		unsetenv(run_env[i]);
	if (signals_begin() != 0)
		return CLI_FAILED;
	while (s.reading || s.jobs) {
		if (turn(&s) != 0) {
			/* (the children die with this process: SIGKILL) */
			ret = CLI_FAILED;
			break;
		}
	}
	if (s.out_broken)
		ret = CLI_FAILED;
	sb_free(&s.in);
	sig = got_signal;
	if (sig) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
	return ret;
}
