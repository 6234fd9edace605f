/* child: start, watch, stop and reap the tap's processes; the guard of a run. */
#include "child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "mask.h"
#include "util.h"

static volatile sig_atomic_t got_signal;
static volatile pid_t child_pid;
/* The signal handler's wake-up for poll(2) (a signal between a check of
 * got_signal and poll would otherwise wait for the child's next output). */
static int sig_pipe[2] = { -1, -1 };
static struct sigaction old_int, old_term, old_hup, old_pipe;

/* The child runs in a process group of its own: what it starts gets the signal too. */
static void signal_child(int sig)
{
	if (child_pid > 0 && kill(-child_pid, sig) != 0)
		kill(child_pid, sig);
}

static void on_signal(int sig)
{
	int e = errno;

	got_signal = sig;
	signal_child(sig);
	if (sig_pipe[1] >= 0 && write(sig_pipe[1], "", 1) < 0) {
		/* full: a wake-up is pending already */
	}
	errno = e;
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define KILL_GRACE_DEFAULT 5

void child_stop(struct child_process *c, int sig)
{
	if (sig)
		signal_child(sig);
	if (c->kill_at == 0 && !c->killed) {
		c->grace = util_env_long("DATASPOC_PIPE_KILL_GRACE", 0, 3600, KILL_GRACE_DEFAULT);
		c->kill_at = mono_now() + (double)c->grace;
	}
}

/*
 * The driver: its pidfd says when it ends (a zombie counts as gone);
 * without pidfds it is polled with kill(2).
 */
static pid_t driver_pid;		/* 0: none watched */
static int driver_fd = -1;
static int driver_gone;

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static void watch_driver(void)
{
	long pid = util_env_long("DATASPOC_PIPE_PID", 2, INT_MAX, 0);

	if (pid == 0 || pid == (long)getpid() || driver_pid == (pid_t)pid)
		return;
	driver_pid = (pid_t)pid;
	driver_fd = pidfd_of(driver_pid);
	if (driver_fd < 0 && errno == ESRCH)
		driver_gone = 1;
	/* started by the driver itself (pipe-tap -n): its death is ours too */
	if (getppid() == driver_pid) {
		prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
		if (getppid() != driver_pid)
			driver_gone = 1;
	}
}

int child_driver_check(void)
{
	if (driver_pid == 0 || driver_gone)
		return driver_gone;
	if (driver_fd >= 0) {
		struct pollfd p = { driver_fd, POLLIN, 0 };

		if (poll(&p, 1, 0) > 0)
			driver_gone = 1;
	} else if (kill(driver_pid, 0) != 0 && errno == ESRCH) {
		driver_gone = 1;
	}
	return driver_gone;
}

int child_driver_gone(void)
{
	return driver_gone;
}

long child_driver_pid(void)
{
	return (long)driver_pid;
}

void child_guard_begin(void)
{
	struct sigaction sa;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		sig_pipe[0] = sig_pipe[1] = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	/* EPIPE instead of death, so that what the run made still goes */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);
	watch_driver();
}

void child_guard_end(void)
{
	size_t i;

	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigaction(SIGPIPE, &old_pipe, NULL);
	for (i = 0; i < 2; i++) {
		if (sig_pipe[i] >= 0)
			close(sig_pipe[i]);
		sig_pipe[i] = -1;
	}
	if (got_signal) {
		signal(got_signal, SIG_DFL);
		raise(got_signal);
	}
}

int child_guard_signal(void)
{
	return got_signal;
}

void child_guard_set_signal(int sig)
{
	got_signal = sig;
}

/*
 * The stderr of a child kept in a file (-l, or discovery's held-back log):
 * only its end, so that a tap that talks a lot cannot fill TMPDIR.  The
 * file grows to 2 * LOG_KEEP bytes, then is cut to its last LOG_KEEP (from
 * the start of a line).  What is shown of it (the driver's failure line,
 * the run log) is its last 20 lines.  With live, whole lines are also
 * copied to our stderr as they come.
 */
#define LOG_KEEP (64 * 1024)
/* a line without a newline held to be masked whole, at most (errlog_add()) */
#define LOG_HOLD (16 * LOG_KEEP)

struct child_log {
	int fd;			/* the file, appended to; -1: none (yet) */
	char *path;		/* the file to make at the first byte, when it was not there */
	int in;			/* the pipe from the child's stderr; -1: none, or at its end */
	int live;
	off_t size;		/* the file's size */
	struct sb tail;		/* its last bytes */
	struct sb part;		/* live: the start of a line not shown yet */
	const struct mask *mask;	/* lines masked before they go anywhere; NULL: none */
	struct sb line;		/* with mask: the start of a line not masked yet */
};

static void errlog_emit(struct child_log *l, const char *p, size_t n)
{
	if (l->path) {
		l->fd = open(l->path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
		free(l->path);
		l->path = NULL;
	}
	/* a log that cannot be written (TMPDIR full) does not stop the tap;
	 * the driver names a full TMPDIR; one that could not be made: ours */
	if (l->fd < 0) {
		if (util_write_all(STDERR_FILENO, p, n) != 0) {
			/* nowhere to say it */
		}
		return;
	}
	if (util_write_all(l->fd, p, n) == 0)
		l->size += (off_t)n;
	sb_add(&l->tail, p, n);
	if (l->tail.len > 2 * LOG_KEEP) {
		/* the last LOG_KEEP bytes, from the start of their first line */
		size_t cut = l->tail.len - LOG_KEEP;
		const char *nl = memrchr(l->tail.buf, '\n', cut);

		if (nl)
			cut = (size_t)(nl + 1 - l->tail.buf);
		memmove(l->tail.buf, l->tail.buf + cut, l->tail.len - cut);
		l->tail.len -= cut;
		l->tail.buf[l->tail.len] = '\0';
	}
	if (l->size > 2 * LOG_KEEP) {
		size_t start = l->tail.len > LOG_KEEP ? l->tail.len - LOG_KEEP : 0;
		/* from the start of the line at start (tail starts a line): LOG_KEEP bytes at least */
		const char *nl = start ? memrchr(l->tail.buf, '\n', start) : NULL;

		start = nl ? (size_t)(nl + 1 - l->tail.buf) : 0;
		memmove(l->tail.buf, l->tail.buf + start, l->tail.len - start);
		l->tail.len -= start;
		l->tail.buf[l->tail.len] = '\0';
		if (ftruncate(l->fd, 0) == 0) {
			l->size = 0;
			if (util_write_all(l->fd, l->tail.buf, l->tail.len) == 0)
				l->size = (off_t)l->tail.len;
		}
	}
	if (l->live) {
		const char *last;

		sb_add(&l->part, p, n);
		last = memrchr(l->part.buf, '\n', l->part.len);
		if (last || l->part.len > LOG_KEEP) {
			size_t k = last ? (size_t)(last + 1 - l->part.buf) : l->part.len;

			if (util_write_all(STDERR_FILENO, l->part.buf, k) != 0) {
				/* nowhere to say it */
			}
			memmove(l->part.buf, l->part.buf + k, l->part.len - k);
			l->part.len -= k;
			l->part.buf[l->part.len] = '\0';
		}
	}
}

/*
 * With a mask, whole lines are masked before they are written or shown;
 * a line longer than LOG_KEEP without its newline yet, in pieces cut where
 * no secret, private path or credential-shaped part spans (mask_cut());
 * the end of a last line comes at errlog_close().
 */
static void errlog_add(struct child_log *l, const char *p, size_t n)
{
	struct sb text = SB_INIT;
	const char *last;
	size_t k;

	if (l->mask == NULL) {
		errlog_emit(l, p, n);
		return;
	}
	sb_add(&l->line, p, n);
	last = memrchr(l->line.buf, '\n', l->line.len);
	if (last == NULL && l->line.len <= LOG_KEEP)
		return;
	k = last ? (size_t)(last + 1 - l->line.buf) : mask_cut(l->mask, l->line.buf, l->line.len);
	/* (a line that no cut masks apart: held up to LOG_HOLD, then whole) */
	if (k == 0 && l->line.len <= LOG_HOLD)
		return;
	if (k == 0)
		k = l->line.len;
	sb_add(&text, l->line.buf, k);
	mask_apply(l->mask, &text);
	errlog_emit(l, text.buf, text.len);
	sb_free(&text);
	memmove(l->line.buf, l->line.buf + k, l->line.len - k);
	l->line.len -= k;
	l->line.buf[l->line.len] = '\0';
}

/*
 * Open path for a child's stderr.  Sets *child_err to the descriptor the
 * child gets as its stderr (-1: ours), which the caller closes once the
 * child is started.
 */
static void errlog_open(struct child_log *l, const char *path, int live, const struct mask *mask,
			int *child_err)
{
	struct stat st;
	int fd, p[2];

	memset(l, 0, sizeof(*l));
	l->fd = l->in = -1;
	l->live = live;
	l->mask = mask;
	*child_err = -1;
	if (path == NULL) {
		/* ours, masked: through a pipe (errlog_emit() with no file) */
		if (mask && pipe2(p, O_CLOEXEC) == 0) {
			fcntl(p[0], F_SETFL, O_NONBLOCK);
			l->live = 0;
			l->in = p[0];
			*child_err = p[1];
		}
		return;
	}
	fd = open(path, O_RDWR | O_APPEND | O_CLOEXEC | O_NOCTTY);
	/*
	 * Not there: made at the child's first byte, so that a child that
	 * says nothing leaves no file to make and remove (issue #14: a small
	 * run's tap.log).
	 */
	if (fd < 0 && errno == ENOENT && pipe2(p, O_CLOEXEC) == 0) {
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		l->path = xstrdup(path);
		l->in = p[0];
		*child_err = p[1];
		return;
	}
	if (fd < 0)
		fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0)
		return;		/* as before -l: it goes to ours */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || pipe2(p, O_CLOEXEC) != 0) {
		*child_err = fd;
		return;
	}
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	l->fd = fd;
	l->in = p[0];
	*child_err = p[1];
	l->size = st.st_size;
	if (st.st_size > 0) {
		/* what the file holds already (discovery's words) is cut with the rest */
		off_t from = st.st_size > LOG_KEEP ? st.st_size - LOG_KEEP : 0;
		ssize_t r;

		sb_grow(&l->tail, LOG_KEEP);
		r = pread(fd, l->tail.buf, (size_t)(st.st_size - from), from);
		l->tail.len = r > 0 ? (size_t)r : 0;
		l->tail.buf[l->tail.len] = '\0';
		if (from > 0) {
			/* the tail starts a line */
			const char *nl = memchr(l->tail.buf, '\n', l->tail.len);
			size_t k = nl ? (size_t)(nl + 1 - l->tail.buf) : 0;

			memmove(l->tail.buf, l->tail.buf + k, l->tail.len - k);
			l->tail.len -= k;
			l->tail.buf[l->tail.len] = '\0';
		}
	}
}

/* Copy what the child's stderr holds now; 0 at its end (then closed). */
static int errlog_read(struct child_log *l)
{
	char buf[1 << 16];
	ssize_t r;

	if (l->in < 0)
		return 0;
	r = read(l->in, buf, sizeof(buf));
	if (r > 0) {
		errlog_add(l, buf, (size_t)r);
		return 1;
	}
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return -1;
	close(l->in);
	l->in = -1;
	return 0;
}

static void errlog_close(struct child_log *l)
{
	/* what is left, without waiting: a child of the tap may hold it open */
	while (errlog_read(l) > 0)
		;
	if (l->in >= 0)
		close(l->in);
	if (l->mask && l->line.len) {
		/* a last line without its newline: one, so that nothing is glued to it */
		errlog_add(l, "\n", 1);
	}
	if (l->live && l->part.len) {
		sb_addc(&l->part, '\n');
		if (util_write_all(STDERR_FILENO, l->part.buf, l->part.len) != 0) {
			/* nowhere to say it */
		}
	}
	if (l->fd >= 0)
		close(l->fd);
	free(l->path);
	l->path = NULL;
	sb_free(&l->tail);
	sb_free(&l->part);
	sb_free(&l->line);
	l->fd = l->in = -1;
}

void child_push(struct child_process *c, const char *arg)
{
	c->argv = xrealloc(c->argv, (c->argc + 2) * sizeof(*c->argv));
	c->argv[c->argc++] = xstrdup(arg);
	c->argv[c->argc] = NULL;
}

void child_pushv(struct child_process *c, char *const *args)
{
	size_t i;

	for (i = 0; args && args[i]; i++)
		child_push(c, args[i]);
}

void child_clear(struct child_process *c)
{
	size_t i;

	for (i = 0; i < c->argc; i++)
		free(c->argv[i]);
	free(c->argv);
	c->argv = NULL;
	c->argc = 0;
}

char *child_find_command(const char *name)
{
	const char *path = getenv("PATH");
	const char *p, *end;
	int denied = 0;

	if (strchr(name, '/') != NULL) {
		if (access(name, X_OK) == 0)
			return xstrdup(name);
		return NULL;
	}
	if (path == NULL)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path;; p = end + 1) {
		struct stat st;
		char *cand;

		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		cand = end == p ? xasprintf("./%s", name) : xasprintf("%.*s/%s", (int)(end - p), p, name);
		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(cand, X_OK) == 0)
				return cand;
			denied = 1;
		}
		free(cand);
		if (*end == '\0')
			break;
	}
	errno = denied ? EACCES : ENOENT;
	return NULL;
}

char *child_sibling(const char *prog)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	const char *slash = n > 0 ? memrchr(self, '/', (size_t)n) : NULL;

	if (slash) {
		char *path = xasprintf("%.*s/%s", (int)(slash - self), self, prog);

		if (access(path, X_OK) == 0)
			return path;
		free(path);
	}
	return child_find_command(prog);
}

int child_missing(const char *name, char **why)
{
	if (errno == EACCES) {
		*why = xasprintf("%s cannot be run: Permission denied", name);
		return 126;
	}
	/* The Python tool's users come with tap-csv configs, which the bundled
	 * tap reads as they are. */
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	*why = xasprintf("%s not found%s — install it or set source.tap%s", name,
			 strchr(name, '/') ? "" : " on PATH",
			 strcmp(base, "tap-csv") == 0 ?
			 " (the bundled dataspoc-tap-csv reads tap-csv's config)" : "");
	return 127;
}

/* A wait(2) status as an exit status: 128+n when killed by signal n. */
static int exit_status(int ws)
{
	return WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
}

/*
 * Start exe with argv, stdin /dev/null, stdout out_w, stderr err_w (-1:
 * ours).  Returns the pid, or -1 with *exec_errno set when exec failed (0
 * when fork did), after reporting.
 */
static pid_t spawn(const char *exe, char *const argv[], int out_w, int err_w, int *exec_errno)
{
	int errpipe[2], e;
	ssize_t r;
	pid_t pid, self = getpid();

	*exec_errno = 0;
	if (pipe2(errpipe, O_CLOEXEC) != 0) {
		err_msg("cannot make a pipe:");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		err_msg("cannot fork:");
		close(errpipe[0]);
		close(errpipe[1]);
		return -1;
	}
	if (pid == 0) {
		int devnull;

		/* its own group, which dies with this process (killed with SIGKILL) */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getppid() != self)
			_exit(127);
		devnull = open("/dev/null", O_RDONLY);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		if (devnull >= 0)
			dup2(devnull, STDIN_FILENO);
		dup2(out_w, STDOUT_FILENO);
		if (err_w >= 0)
			dup2(err_w, STDERR_FILENO);
		execv(exe, argv);
		e = errno;
		if (write(errpipe[1], &e, sizeof(e)) < 0) {
			/* the parent sees a closed pipe and a 127 */
		}
		_exit(127);
	}
	setpgid(pid, pid);	/* (fails harmlessly once it has run execv) */
	close(errpipe[1]);
	do
		r = read(errpipe[0], &e, sizeof(e));
	while (r < 0 && errno == EINTR);
	close(errpipe[0]);
	if (r == (ssize_t)sizeof(e)) {
		errno = e;
		err_msg("cannot run '%s':", exe);
		waitpid(pid, NULL, 0);
		*exec_errno = e;
		return -1;
	}
	return pid;
}

int child_start(struct child_process *c)
{
	int err_w;

	c->pid = -1;
	c->pidfd = -1;
	c->log = xmalloc(sizeof(*c->log));
	errlog_open(c->log, c->err_path, c->err_live, c->err_mask, &err_w);
	c->pid = spawn(c->exe, c->argv, c->out, err_w, &c->exec_errno);
	if (err_w >= 0)
		close(err_w);
	if (c->out >= 0)
		close(c->out);
	c->out = -1;
	if (c->pid < 0) {
		errlog_close(c->log);
		free(c->log);
		c->log = NULL;
		child_clear(c);
		return -1;
	}
	c->pidfd = pidfd_of(c->pid);
	c->kill_at = 0;
	c->killed = 0;
	child_pid = c->pid;
	/* one that came while it was being started did not reach it */
	if (got_signal)
		signal_child(got_signal);
	return 0;
}

/*
 * Wait until fd is readable (fd >= 0) or the child has ended (fd < 0:
 * reaped, its status in *status), meanwhile copying its stderr to the log,
 * watching the driver, and stopping the child on a signal.  Returns 1 when
 * fd is readable, 0 when the child was reaped, 2 when it was killed after
 * its grace period while fd was read (its output is no longer wanted),
 * -1 on an error of poll(2).
 */
static int child_wait(struct child_process *c, int fd, int *status)
{
	for (;;) {
		struct pollfd p[5];
		nfds_t n = 0;
		int ifd = -1, ilog = -1, isig = -1, timeout = -1, r;

		/* passed on by the handler; the grace period starts */
		if (got_signal && c->kill_at == 0 && !c->killed)
			child_stop(c, 0);
		if (c->kill_at > 0) {
			double left = c->kill_at - mono_now();

			if (left <= 0) {
				c->kill_at = 0;
				c->killed = 1;
				signal_child(SIGKILL);
				if (fd >= 0)
					return 2;
				continue;
			}
			timeout = (int)(left * 1000) + 1;
		}
		if (fd >= 0) {
			ifd = (int)n;
			p[n++] = (struct pollfd){ fd, POLLIN, 0 };
		}
		if (c->log->in >= 0) {
			ilog = (int)n;
			p[n++] = (struct pollfd){ c->log->in, POLLIN, 0 };
		}
		if (sig_pipe[0] >= 0) {
			isig = (int)n;
			p[n++] = (struct pollfd){ sig_pipe[0], POLLIN, 0 };
		}
		if (driver_pid && !driver_gone) {
			if (driver_fd >= 0)
				p[n++] = (struct pollfd){ driver_fd, POLLIN, 0 };
			else if (timeout < 0 || timeout > 500)
				timeout = 500;
		}
		if (fd < 0) {
			if (c->pidfd >= 0)
				p[n++] = (struct pollfd){ c->pidfd, POLLIN, 0 };
			else if (timeout < 0 || timeout > 100)
				timeout = 100;
		}
		r = poll(p, n, timeout);
		if (r < 0 && errno != EINTR)
			return -1;
		if (r > 0 && isig >= 0 && p[isig].revents) {
			char drain[64];

			while (read(sig_pipe[0], drain, sizeof(drain)) > 0)
				;
		}
		if (r > 0 && ilog >= 0 && p[ilog].revents)
			errlog_read(c->log);
		if (!driver_gone && child_driver_check())
			child_stop(c, SIGTERM);
		if (r > 0 && ifd >= 0 && p[ifd].revents)
			return 1;
		if (fd < 0) {
			int ws;
			pid_t w = waitpid(c->pid, &ws, WNOHANG);

			if (w == c->pid || (w < 0 && errno == ECHILD)) {
				*status = w < 0 ? 1 : exit_status(ws);
				return 0;
			}
		}
	}
}

ssize_t child_read(struct child_process *c, int fd, void *buf, size_t n)
{
	for (;;) {
		ssize_t r;
		int w = child_wait(c, fd, NULL);

		if (w == 2)
			return 0;
		if (w < 0)
			return -1;
		r = read(fd, buf, n);
		if (r >= 0 || (errno != EINTR && errno != EAGAIN))
			return r;
	}
}

int child_finish(struct child_process *c)
{
	int status = 1;

	if (child_wait(c, -1, &status) < 0) {
		int ws = 1 << 8;

		/* poll(2) failed: a plain wait */
		while (waitpid(c->pid, &ws, 0) < 0 && errno == EINTR)
			;
		status = exit_status(ws);
	}
	if (c->kill_at > 0 || c->killed) {
		while (kill(-c->pid, 0) == 0 && c->kill_at > 0 && mono_now() < c->kill_at) {
			while (errlog_read(c->log) > 0)
				;
			util_sleep_ms(50);
		}
		if (kill(-c->pid, 0) == 0)
			kill(-c->pid, SIGKILL);
	}
	errlog_close(c->log);
	free(c->log);
	c->log = NULL;
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	child_pid = 0;
	child_clear(c);
	return status;
}

/* /proc/sys/fs/pipe-max-size, or want when it cannot be read. */
static int pipe_max_size(int want)
{
	FILE *f = fopen("/proc/sys/fs/pipe-max-size", "re");
	int max = want;

	if (f) {
		if (fscanf(f, "%d", &max) != 1 || max <= 0)
			max = want;
		fclose(f);
	}
	return max;
}

int child_pipe_grow(int fd, int want)
{
	int size = fcntl(fd, F_GETPIPE_SZ), max;

	if (size < 0)
		return -1;
	if (size >= want)
		return size;
	max = pipe_max_size(want);
	if (want > max)
		want = max;
	/* EPERM: past the user's share of pipe memory; a smaller size may fit */
	for (; want > size; want /= 2) {
		int got = fcntl(fd, F_SETPIPE_SZ, want);

		if (got >= 0)
			return got;
		if (errno != EPERM)
			break;
	}
	return size;
}

int child_capture(struct child_process *c, struct sb *out)
{
	char *found = NULL;
	int fds[2], status;

	if (c->exe == NULL) {
		found = child_find_command(c->argv[0]);
		if (found == NULL) {
			char *why = NULL;

			child_missing(c->argv[0], &why);
			err_msg("%s", why);
			free(why);
			child_clear(c);
			return -1;
		}
		c->exe = found;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		err_msg("cannot make a pipe:");
		fds[0] = -1;
		status = -1;
	} else {
		c->out = fds[1];
		status = child_start(c);
	}
	if (found) {
		c->exe = NULL;
		free(found);
	}
	if (status != 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		child_clear(c);
		return -1;
	}
	for (;;) {
		ssize_t r;

		sb_grow(out, 65536);
		r = child_read(c, fds[0], out->buf + out->len, out->cap - out->len - 1);
		if (r < 0) {
			err_msg("cannot read the output of '%s':", c->argv[0]);
			child_stop(c, SIGTERM);
		}
		if (r <= 0)
			break;
		out->len += (size_t)r;
		out->buf[out->len] = '\0';
	}
	close(fds[0]);
	status = child_finish(c);
	/* what it said when stopped is no answer (the caller says why) */
	return got_signal || driver_gone ? -1 : status;
}
