/*
 * pipe-stages: the driver's stages of one run, in a session of their own:
 *
 *   pipe-tap -l DIR/tap.log NAME <DIR/state 2>DIR/check.err | pipe-sink NAME >DIR/plan
 *   (-k: ... | pipe-sink NAME | pipe-commit -k NAME >DIR/plan)
 *
 * each stage's exit status written to DIR/rc as it ends, a line "tap N",
 * "sink N" or "ck N" (128+n when signal n killed it): one file for the
 * driver to read, not one a stage (issue #14: a file made and removed costs
 * a small run 60-150 us of CPU on this machine's journal-less ext4).
 * pipe-tap's stderr goes to check.err, which the checks and pipe-state get
 * wrote before and the driver has said by then: a file the run has already.
 * What `setsid sh -c '...'` did for the driver, without the two programs to
 * start (issue #14).  It sets no
 * handler: a signal does to it what it did to that shell (SIGTERM and SIGHUP
 * end it, SIGINT and SIGHUP stay ignored when they came ignored), and the
 * stages inherit the dispositions it was given.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "err.h"

static const char usage_line[] = "pipe-stages [-fhkv] -d DIR NAME | -c FILE.yaml";

static const char help_text[] =
	"usage: pipe-stages [-fhkv] -d DIR NAME\n"
	"       pipe-stages [-fhkv] -d DIR -c FILE.yaml\n"
	"\n"
	"Run the stages of one run in a session of their own (setsid(2)), as the\n"
	"driver does: pipe-tap -l DIR/tap.log NAME < DIR/state | pipe-sink NAME >\n"
	"DIR/plan, pipe-tap's stderr in DIR/check.err.  Each stage's exit status\n"
	"(128+n when signal n killed it) is appended to DIR/rc when it ends, a line\n"
	"\"tap N\", \"sink N\" (or \"ck N\"); it waits for all of them.\n"
	"\n"
	"Options:\n"
	"  -c FILE      the pipeline file, instead of NAME\n"
	"  -d DIR       the run's private folder (required)\n"
	"  -f           pipe-sink -f (a full extraction)\n"
	"  -h, --help   this help\n"
	"  --version    its version\n"
	"  -k           checkpoints: ... | pipe-sink NAME | pipe-commit -k NAME > DIR/plan\n"
	"  -v           pipe-tap -v; of pipe-tap's stderr, its own lines (\"pipe-tap: ...\")\n"
	"               go to DIR/check.err, the tap's to this stderr\n"
	"\n"
	"It sets no signal handler: SIGTERM and SIGHUP end it, and an ignored\n"
	"signal stays ignored for the stages.  $DATASPOC_PIPE_STAGES_FD is locked\n"
	"first (pipe-tap(1), cli_lock_run()).\n"
	"\n"
	"Exit status: the last stage's, as a shell pipeline's; 1 when a stage could\n"
	"not be started, 2 bad usage.\n";

enum { TAP, SINK, CK, NSTAGES };

static const char *const rc_name[NSTAGES] = { "tap", "sink", "ck" };

struct stage {
	char **argv;
	int in, out, err;	/* descriptors for its 0, 1 and 2; -1: the path's, or ours */
	const char *in_path, *out_path, *err_path;
	pid_t pid;
};

static const char *dir;

static char *in_dir(const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

/* dup2 from onto to, or open path there; 0 or -1 (said). */
static int put_fd(int from, const char *path, int flags, int to)
{
	int fd = from;

	if (fd < 0 && path == NULL)
		return 0;
	if (fd < 0 && (fd = open(path, flags, 0666)) < 0) {
		err_msg("cannot open '%s':", path);
		return -1;
	}
	if (fd != to && dup2(fd, to) < 0) {
		err_msg("cannot set up descriptor %d:", to);
		return -1;
	}
	return 0;
}

/* Fork and exec s; its pid, or -1 (said).  The child's redirections come in the order a shell makes them. */
static pid_t start(struct stage *s)
{
	pid_t pid = fork();

	if (pid != 0) {
		if (pid < 0)
			err_msg("cannot start %s:", s->argv[0]);
		return pid;
	}
	if (put_fd(s->in, s->in_path, O_RDONLY, STDIN_FILENO) != 0 ||
	    put_fd(s->out, s->out_path, O_WRONLY | O_CREAT | O_TRUNC, STDOUT_FILENO) != 0 ||
	    put_fd(s->err, s->err_path, O_WRONLY | O_CREAT | O_TRUNC, STDERR_FILENO) != 0)
		_exit(2);
	execvp(s->argv[0], s->argv);
	err_msg("cannot run %s:", s->argv[0]);
	_exit(errno == ENOENT ? 127 : 126);
}

/* A status as a shell has it in $?. */
static int shell_status(int st)
{
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

/* Append "NAME STATUS" to DIR/rc as `echo NAME $? >>FILE 2>/dev/null` does: what fails stays unsaid. */
static void write_rc(const char *name, int status)
{
	char *path = in_dir("rc"), line[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	int n = snprintf(line, sizeof(line), "%s %d\n", name, status);

	if (fd >= 0) {
		if (write(fd, line, (size_t)n) != n) {
			/* the file stays short: the driver reads "did not finish" */
		}
		close(fd);
	}
	free(path);
}

/* Reap children (flags: 0 or WNOHANG) and write each stage's rc line; the last stage's status in *last. */
static void reap(struct stage *st, int nst, int flags, int *last)
{
	pid_t pid;
	int status, i;

	while ((pid = waitpid(-1, &status, flags)) > 0 || (pid < 0 && errno == EINTR)) {
		if (pid < 0)
			continue;
		for (i = 0; i < nst; i++) {
			if (st[i].pid != pid)
				continue;
			st[i].pid = -1;
			write_rc(rc_name[i], shell_status(status));
			if (i == nst - 1)
				*last = shell_status(status);
		}
	}
}

/*
 * -v: pipe-tap's stderr, line by line, as the driver's filter did: its own
 * lines (its messages, which the driver reads to say why a run failed) to
 * DIR/check.err, the tap's to our stderr, each once it is whole (a last
 * line without its newline gets one; a line longer than the buffer goes in
 * parts, where its start went).
 */
static void filter_tap_stderr(int fd, struct stage *st, int nst, int *last)
{
	/* ("pipe-tap: ", or the driver's name, which pipe-tap speaks under) */
	char *own = xasprintf("%s: ", err_stage_name("pipe-tap"));
	size_t own_len = strlen(own);
	char buf[65536 + 1];	/* (room for the newline of a last line) */
	const size_t size = sizeof(buf) - 1;
	char *path = in_dir("check.err"), *nl;
	size_t len = 0, start;
	int to = -1;		/* where the line being read goes: 1 check.err, 2 stderr, -1 not known yet */
	int errfd = -1, eof = 0;
	ssize_t n;

	/* (what the checks and pipe-state get said there, the driver has said) */
	if (truncate(path, 0) != 0) {
		/* none there yet: made at pipe-tap's first line of its own */
	}
	while (!eof) {
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			eof = 1;
		else
			len += (size_t)n;
		start = 0;
		for (;;) {
			size_t end;
			int whole;

			nl = memchr(buf + start, '\n', len - start);
			if (nl) {
				end = (size_t)(nl - buf) + 1;
				whole = 1;
			} else if (len > start && (eof || (start == 0 && len == size))) {
				if (eof)
					buf[len++] = '\n';
				end = len;
				whole = eof;
			} else {
				break;
			}
			if (to < 0)
				to = end - start >= own_len &&
					memcmp(buf + start, own, own_len) == 0 ? 1 : 2;
			if (to == 1 && errfd < 0)
				errfd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
			if ((to == 2 || errfd >= 0) &&
			    write(to == 1 ? errfd : STDERR_FILENO, buf + start, end - start) < 0) {
				/* a line that cannot be kept is dropped, as the shell's printf dropped it */
			}
			if (whole)
				to = -1;
			start = end;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		reap(st, nst, WNOHANG, last);
	}
	if (errfd >= 0)
		close(errfd);
	free(own);
	free(path);
}

static void push(char **argv, int *n, const char *arg)
{
	argv[(*n)++] = (char *)(uintptr_t)arg;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct stage st[NSTAGES];
	char *args[NSTAGES][8];
	const char *file = NULL, *name;
	int full = 0, ck = 0, live = 0, c, i, nst, last = 0, ret = CLI_OK;
	int tap_pipe[2] = { -1, -1 }, sink_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	int n[NSTAGES] = { 0, 0, 0 };
	char *paths[4];

	err_init_stage(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	while ((c = getopt_long(argc, argv, "+c:d:fhkv", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			file = optarg;
			break;
		case 'd':
			dir = optarg;
			break;
		case 'f':
			full = 1;
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'k':
			ck = 1;
			break;
		case 'v':
			live = 1;
			break;
		default:
			cli_usage(usage_line);
			return CLI_USAGE;
		}
	}
	name = optind < argc ? argv[optind] : NULL;
	if (dir == NULL || *dir == '\0' || argc - optind > 1 || (file == NULL) == (name == NULL)) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	/* The driver's `&` made this process; it leads no group, so this cannot fail. */
	if (setsid() < 0) {
		err_msg("cannot start a session:");
		return CLI_FAILED;
	}
	if (cli_lock_run() != 0)
		return CLI_FAILED;

	paths[0] = in_dir("tap.log");
	paths[1] = in_dir("state");
	paths[2] = in_dir("check.err");
	paths[3] = in_dir("plan");
	nst = ck ? 3 : 2;
	memset(st, 0, sizeof(st));
	for (i = 0; i < NSTAGES; i++) {
		st[i].argv = args[i];
		st[i].in = st[i].out = st[i].err = -1;
		st[i].pid = -1;
	}
	push(args[TAP], &n[TAP], "pipe-tap");
	if (live)
		push(args[TAP], &n[TAP], "-v");
	push(args[TAP], &n[TAP], "-l");
	push(args[TAP], &n[TAP], paths[0]);
	push(args[SINK], &n[SINK], "pipe-sink");
	if (full)
		push(args[SINK], &n[SINK], "-f");
	push(args[CK], &n[CK], "pipe-commit");
	push(args[CK], &n[CK], "-k");
	for (i = 0; i < NSTAGES; i++) {
		if (file) {
			push(args[i], &n[i], "-c");
			push(args[i], &n[i], file);
		} else {
			push(args[i], &n[i], name);
		}
		args[i][n[i]] = NULL;
	}

	if (pipe2(tap_pipe, O_CLOEXEC) != 0 || (ck && pipe2(sink_pipe, O_CLOEXEC) != 0) ||
	    (live && pipe2(err_pipe, O_CLOEXEC) != 0)) {
		err_msg("cannot make a pipe:");
		ret = CLI_FAILED;
		goto out;
	}
	st[TAP].in_path = paths[1];
	st[TAP].out = tap_pipe[1];
	if (live)
		st[TAP].err = err_pipe[1];
	else
		st[TAP].err_path = paths[2];
	st[SINK].in = tap_pipe[0];
	if (ck) {
		st[SINK].out = sink_pipe[1];
		st[CK].in = sink_pipe[0];
		st[CK].out_path = paths[3];
	} else {
		st[SINK].out_path = paths[3];
	}
	/* left to right, as a shell starts a pipeline; each closes its ends once started */
	for (i = 0; i < nst; i++) {
		if ((st[i].pid = start(&st[i])) < 0) {
			ret = CLI_FAILED;
			break;
		}
		if (st[i].in >= 0)
			close(st[i].in);
		if (st[i].out >= 0)
			close(st[i].out);
		if (st[i].err >= 0)
			close(st[i].err);
		st[i].in = st[i].out = st[i].err = -1;
	}
	/* (the ends of the stages not started, so that those started see the end) */
	for (; i < nst; i++) {
		if (st[i].in >= 0)
			close(st[i].in);
		if (st[i].out >= 0)
			close(st[i].out);
	}
	if (live) {
		if (st[TAP].pid > 0)
			filter_tap_stderr(err_pipe[0], st, nst, &last);
		close(err_pipe[0]);
	}
	reap(st, nst, 0, &last);
	if (ret == CLI_OK)
		ret = last;
out:
	for (i = 0; i < 4; i++)
		free(paths[i]);
	return ret;
}
