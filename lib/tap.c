/* tap: run a Singer tap, pass its stream on, say how it ended. */
#include "tap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "sink.h"
#include "catalog.h"
#include "util.h"


/* "interrupted by SIGTERM": the driver's words for the same event. */
static char *interrupted(int sig)
{
	const char *name = sigabbrev_np(sig);

	return name ? xasprintf("interrupted by SIG%s", name) :
		      xasprintf("interrupted by signal %d", sig);
}
static char opt_config[] = "--config", opt_state[] = "--state";
static char opt_catalog[] = "--catalog", opt_properties[] = "--properties";
static volatile sig_atomic_t got_signal;
static volatile pid_t child_pid;
/* The signal handler's wake-up for poll(2) (a signal between a check of
 * got_signal and poll would otherwise wait for the tap's next output). */
static int sig_pipe[2] = { -1, -1 };

/* The tap runs in a process group of its own: what it starts gets the signal too. */
static void signal_tap(int sig)
{
	if (child_pid > 0 && kill(-child_pid, sig) != 0)
		kill(child_pid, sig);
}

static void on_signal(int sig)
{
	int e = errno;

	got_signal = sig;
	signal_tap(sig);
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

/*
 * Stopping the tap (a signal, pipe-tap's reader gone, a write error, the
 * driver gone): SIGTERM, then SIGKILL of its group once the grace period
 * ($DATASPOC_PIPE_KILL_GRACE seconds) is over.  A tap may ignore SIGTERM
 * (one run as PID 1 in a container does): without the SIGKILL it would
 * hold the run, and its lock, for good.
 */
#define KILL_GRACE_DEFAULT 5
static double kill_at;			/* when the tap's group gets SIGKILL; 0: not stopping */
static int killed;			/* it has had it */
static long grace;			/* the grace period it had, in seconds */

static void stop_tap(int sig)
{
	if (sig)
		signal_tap(sig);
	if (kill_at == 0 && !killed) {
		grace = util_env_long("DATASPOC_PIPE_KILL_GRACE", 0, 3600, KILL_GRACE_DEFAULT);
		kill_at = mono_now() + (double)grace;
	}
}

/*
 * The driver (dataspoc-pipe, whose pid is $DATASPOC_PIPE_PID): when it is
 * gone, killed with SIGKILL, so is the run, and the tap must not go on
 * alone in the driver's session.  Its pidfd says when it ends (a zombie
 * counts as gone); without pidfds it is polled with kill(2).
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

/* 1 when the watched driver has gone. */
static int driver_check(void)
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

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/*
 * The stderr of the tap (and of its discovery and --about) kept in a file
 * (-l, or discovery's held-back log): only its end, so that a tap that
 * talks a lot cannot fill TMPDIR.  The file grows to 2 * LOG_KEEP bytes,
 * then is cut to its last LOG_KEEP (from the start of a line).  What is
 * shown of it (the driver's failure line, the run log) is its last 20
 * lines.  With live, whole lines are also copied to our stderr as they come.
 * A file that is not a regular one (/dev/null) is given to the child as is.
 */
#define LOG_KEEP (64 * 1024)

struct errlog {
	int fd;			/* the file, appended to; -1: none */
	int in;			/* the pipe from the child's stderr; -1: none, or at its end */
	int live;
	off_t size;		/* the file's size */
	struct sb tail;		/* its last bytes */
	struct sb part;		/* live: the start of a line not shown yet */
};

static void errlog_add(struct errlog *l, const char *p, size_t n)
{
	/* a log that cannot be written (TMPDIR full) does not stop the tap;
	 * the driver names a full TMPDIR */
	if (write_all(l->fd, p, n) == 0)
		l->size += (off_t)n;
	sb_add(&l->tail, p, n);
	if (l->tail.len > 2 * LOG_KEEP) {
		memmove(l->tail.buf, l->tail.buf + l->tail.len - LOG_KEEP, LOG_KEEP);
		l->tail.len = LOG_KEEP;
		l->tail.buf[l->tail.len] = '\0';
	}
	if (l->size > 2 * LOG_KEEP) {
		size_t start = l->tail.len > LOG_KEEP ? l->tail.len - LOG_KEEP : 0;
		const char *nl = memchr(l->tail.buf + start, '\n', l->tail.len - start);

		if (nl && (size_t)(nl + 1 - l->tail.buf) < l->tail.len)
			start = (size_t)(nl + 1 - l->tail.buf);
		memmove(l->tail.buf, l->tail.buf + start, l->tail.len - start);
		l->tail.len -= start;
		l->tail.buf[l->tail.len] = '\0';
		if (ftruncate(l->fd, 0) == 0) {
			l->size = 0;
			if (write_all(l->fd, l->tail.buf, l->tail.len) == 0)
				l->size = (off_t)l->tail.len;
		}
	}
	if (l->live) {
		const char *last;

		sb_add(&l->part, p, n);
		last = memrchr(l->part.buf, '\n', l->part.len);
		if (last || l->part.len > LOG_KEEP) {
			size_t k = last ? (size_t)(last + 1 - l->part.buf) : l->part.len;

			if (write_all(STDERR_FILENO, l->part.buf, k) != 0) {
				/* nowhere to say it */
			}
			memmove(l->part.buf, l->part.buf + k, l->part.len - k);
			l->part.len -= k;
			l->part.buf[l->part.len] = '\0';
		}
	}
}

/*
 * Open path for a child's stderr.  Sets *child_err to the descriptor the
 * child gets as its stderr (-1: ours), which the caller closes once the
 * child is started.
 */
static void errlog_open(struct errlog *l, const char *path, int live, int *child_err)
{
	struct stat st;
	int fd, p[2];

	memset(l, 0, sizeof(*l));
	l->fd = l->in = -1;
	l->live = live;
	*child_err = -1;
	if (path == NULL)
		return;
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
	}
}

/* Copy what the child's stderr holds now; 0 at its end (then closed). */
static int errlog_read(struct errlog *l)
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

static void errlog_close(struct errlog *l)
{
	/* what is left, without waiting: a child of the tap may hold it open */
	while (errlog_read(l) > 0)
		;
	if (l->in >= 0)
		close(l->in);
	if (l->live && l->part.len) {
		sb_addc(&l->part, '\n');
		if (write_all(STDERR_FILENO, l->part.buf, l->part.len) != 0) {
			/* nowhere to say it */
		}
	}
	if (l->fd >= 0)
		close(l->fd);
	sb_free(&l->tail);
	sb_free(&l->part);
	l->fd = l->in = -1;
}

/* Whether the stderr kept in files is also shown as it comes (-v with -l). */
static int log_live;

/* A child started by child_start(): the tap, its discovery or --about. */
struct child {
	pid_t pid;
	int pidfd;		/* readable once it has ended; -1: none (polled) */
	struct errlog log;
};

/*
 * Wait until fd is readable (fd >= 0) or the child has ended (fd < 0:
 * reaped, its status in *status), meanwhile copying its stderr to the log,
 * watching the driver, and stopping the tap on a signal.  Returns 1 when
 * fd is readable, 0 when the child was reaped, 2 when it was killed after
 * its grace period while fd was read (its output is no longer wanted),
 * -1 on an error of poll(2).
 */
static int child_wait(struct child *c, int fd, int *status)
{
	for (;;) {
		struct pollfd p[5];
		nfds_t n = 0;
		int ifd = -1, ilog = -1, isig = -1, timeout = -1, r;

		/* passed on by the handler; the grace period starts */
		if (got_signal && kill_at == 0 && !killed)
			stop_tap(0);
		if (kill_at > 0) {
			double left = kill_at - mono_now();

			if (left <= 0) {
				kill_at = 0;
				killed = 1;
				signal_tap(SIGKILL);
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
		if (c->log.in >= 0) {
			ilog = (int)n;
			p[n++] = (struct pollfd){ c->log.in, POLLIN, 0 };
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
			errlog_read(&c->log);
		if (!driver_gone && driver_check())
			stop_tap(SIGTERM);
		if (r > 0 && ifd >= 0 && p[ifd].revents)
			return 1;
		if (fd < 0) {
			int ws;
			pid_t w = waitpid(c->pid, &ws, WNOHANG);

			if (w == c->pid || (w < 0 && errno == ECHILD)) {
				*status = w < 0 ? 1 : WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
				return 0;
			}
		}
	}
}

/*
 * Wait for the child's end and return its status (128+n: killed by signal
 * n).  When it was being stopped, what it left in its group goes too,
 * SIGKILL once the grace period is over: no process of a stopped tap
 * outlives pipe-tap.
 */
static int child_reap(struct child *c)
{
	int status = 1;

	if (child_wait(c, -1, &status) < 0) {
		int ws = 1 << 8;

		/* poll(2) failed: a plain wait */
		while (waitpid(c->pid, &ws, 0) < 0 && errno == EINTR)
			;
		status = WIFSIGNALED(ws) ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
	}
	if (kill_at > 0 || killed) {
		while (kill(-c->pid, 0) == 0 && kill_at > 0 && mono_now() < kill_at) {
			while (errlog_read(&c->log) > 0)
				;
			util_sleep_ms(50);
		}
		if (kill(-c->pid, 0) == 0)
			kill(-c->pid, SIGKILL);
	}
	errlog_close(&c->log);
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->pidfd = -1;
	child_pid = 0;
	return status;
}

/* What pipe-tap may put in its private folder. */
static const char *const private_files[] = {
	"config.json", "state.json", "catalog.json", "discover.err"
};

/*
 * SIGKILL cannot be caught: a process forked here removes the private
 * folder (and the tap's password in it) when pipe-tap ends, however it
 * ends.  It waits for the end of a pipe whose write end only pipe-tap holds
 * (close-on-exec: the tap does not get it) and keeps nothing else of
 * pipe-tap open, so the stream's reader still sees its end, in a session
 * of its own, so that a kill of pipe-tap's group spares it.  It keeps
 * lock_fd, the folder's flock(2), so that no sweep (dataspoc-pipe's, of
 * folders whose lock is free) removes it while either lives, and the
 * descriptors pipe-tap got from its caller to pass on (not close-on-exec,
 * but stdin, stdout and stderr): the tap gets them too, and the driver's
 * locks on them say that a process of the run is still there.  Returns
 * that write end, or -1 (no janitor: the folder goes as before, signals
 * aside).
 */
static int start_janitor(const char *dir, int lock_fd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		long fd, max = sysconf(_SC_OPEN_MAX);
		char c, path[4200];
		size_t i;

		/* pipe-tap handles these, then ends: this one stays to see it,
		 * out of the reach of a SIGKILL of pipe-tap's group or session
		 * (the driver's, when pipe-tap does not end) */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		setsid();
		prctl(PR_SET_NAME, "tap-janitor", 0, 0, 0);
		if (max <= 0 || max > 65536)
			max = 65536;
		for (fd = 0; fd < max; fd++) {
			int fl;

			if (fd == p[0] || fd == lock_fd)
				continue;
			if (fd > STDERR_FILENO && (fl = fcntl((int)fd, F_GETFD)) >= 0 && !(fl & FD_CLOEXEC))
				continue;
			close((int)fd);
		}
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		for (i = 0; i < sizeof(private_files) / sizeof(*private_files); i++) {
			snprintf(path, sizeof(path), "%s/%s", dir, private_files[i]);
			unlink(path);
		}
		rmdir(dir);
		_exit(0);
	}
	close(p[0]);
	return p[1];
}

/*
 * The private folder: made with mkdtemp(3) in TMPDIR and held, from then
 * until it is removed, with a flock(2) lock on *lock_fd (close-on-exec:
 * the tap does not hold it).  dataspoc-pipe's sweep removes the folders
 * whose lock is free (those of runs killed outright, the janitor with them,
 * which may hold a password); one that vanished or that a sweep holds
 * between mkdtemp and flock is left to it, and another made.
 */
static char *private_dir(const char *tmpdir, int *lock_fd)
{
	char tmpl[4096];
	int tries;

	*lock_fd = -1;
	for (tries = 0; tries < 5; tries++) {
		struct stat by_fd, by_path;
		int fd;

		snprintf(tmpl, sizeof(tmpl), "%s/dataspoc-pipe.XXXXXX", tmpdir);
		if (mkdtemp(tmpl) == NULL)
			return NULL;
		fd = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &by_fd) == 0 &&
		    stat(tmpl, &by_path) == 0 && by_fd.st_nlink > 0 &&
		    by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino) {
			*lock_fd = fd;
			return xstrdup(tmpl);
		}
		close(fd);
	}
	errno = EAGAIN;
	return NULL;
}

char *tap_find_command(const char *name)
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

/* The message and status for a tap that cannot be found or run. */
static int tap_missing(const char *tap, char **error)
{
	if (errno == EACCES) {
		*error = xasprintf("%s cannot be run: Permission denied", tap);
		return 126;
	}
	/* The Python tool's users come with tap-csv configs, which the bundled
	 * tap reads as they are. */
	const char *base = strrchr(tap, '/') ? strrchr(tap, '/') + 1 : tap;
	*error = xasprintf("%s not found%s — install it or set source.tap%s", tap,
			   strchr(tap, '/') ? "" : " on PATH",
			   strcmp(base, "tap-csv") == 0 ?
			   " (the bundled dataspoc-tap-csv reads tap-csv's config)" : "");
	return 127;
}

/* 0, or -1 with errno set, said unless TMPDIR is full (the caller says so). */
static int write_private(const char *dir, const char *name, const char *data, size_t len, char **path)
{
	int fd, e;

	*path = xasprintf("%s/%s", dir, name);
	fd = open(*path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		e = errno;
		if (e != ENOSPC && e != EDQUOT)
			err_msg("cannot create '%s':", *path);
		errno = e;
		return -1;
	}
	if (write_all(fd, data, len) != 0 || close(fd) != 0) {
		e = errno;
		if (e != ENOSPC && e != EDQUOT)
			err_msg("cannot write '%s':", *path);
		errno = e;
		return -1;
	}
	return 0;
}

/* The state's text, when it holds a non-empty object; NULL otherwise. */
static int state_wanted(const char *state, size_t len, int *want)
{
	struct json_span v, key, val;
	size_t errpos, pos = 0;
	const char *errmsg;

	*want = 0;
	while (len > 0 && (state[len - 1] == '\n' || state[len - 1] == ' ' || state[len - 1] == '\r'))
		len--;
	if (len == 0)
		return 0;
	if (json_validate(state, len, &v, &errpos, &errmsg) != 0) {
		err_msg("<stdin>:1:%zu: the state is not JSON: %s", errpos + 1, errmsg);
		return -1;
	}
	if (v.type != JSON_OBJECT) {
		err_msg("<stdin>: the state is not a JSON object");
		return -1;
	}
	*want = json_object_next(&v, &pos, &key, &val);
	return 0;
}

static void end_line(int fd, int status, const char *error)
{
	struct sb line = SB_INIT;

	sb_addf(&line, "{\"type\":\"%s\",\"status\":\"%s\",\"exit_status\":%d", SINK_END_TYPE,
		error ? "failure" : "success", status);
	if (error) {
		sb_adds(&line, ",\"error\":");
		json_quote(&line, error, strlen(error));
	}
	sb_adds(&line, "}\n");
	if (write_all(fd, line.buf, line.len) != 0 && errno != EPIPE)
		err_msg("cannot write the end line:");
	sb_free(&line);
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

		/* its own group, which dies with pipe-tap (killed with SIGKILL) */
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

/*
 * Start a child as spawn() does, its stderr kept by the errlog of
 * stderr_path (NULL: ours).  Returns 0, or -1 as spawn().
 */
static int child_start(struct child *c, const char *exe, char *const argv[], int out_w,
		       const char *stderr_path, int *exec_errno)
{
	int err_w;

	c->pid = -1;
	c->pidfd = -1;
	errlog_open(&c->log, stderr_path, log_live, &err_w);
	c->pid = spawn(exe, argv, out_w, err_w, exec_errno);
	if (err_w >= 0)
		close(err_w);
	if (c->pid < 0) {
		errlog_close(&c->log);
		return -1;
	}
	c->pidfd = pidfd_of(c->pid);
	kill_at = 0;
	killed = 0;
	child_pid = c->pid;
	/* one that came while it was being started did not reach it */
	if (got_signal)
		signal_tap(got_signal);
	return 0;
}

int tap_capture(char *const argv[], const char *stderr_path, struct sb *out)
{
	char *exe = tap_find_command(argv[0]);
	int fds[2], exec_errno, status;
	struct child c;

	if (exe == NULL) {
		char *error = NULL;

		tap_missing(argv[0], &error);
		err_msg("%s", error);
		free(error);
		return -1;
	}
	if (pipe2(fds, O_CLOEXEC) != 0) {
		err_msg("cannot make a pipe:");
		free(exe);
		return -1;
	}
	status = child_start(&c, exe, argv, fds[1], stderr_path, &exec_errno);
	close(fds[1]);
	free(exe);
	if (status != 0) {
		close(fds[0]);
		return -1;
	}
	for (;;) {
		ssize_t r;
		int w = child_wait(&c, fds[0], NULL);

		if (w == 2)
			break;
		if (w < 0) {
			err_msg("cannot read the output of '%s':", argv[0]);
			stop_tap(SIGTERM);
			break;
		}
		sb_grow(out, 65536);
		r = read(fds[0], out->buf + out->len, out->cap - out->len - 1);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0) {
			err_msg("cannot read the output of '%s':", argv[0]);
			stop_tap(SIGTERM);
		}
		if (r <= 0)
			break;
		out->len += (size_t)r;
		out->buf[out->len] = '\0';
	}
	close(fds[0]);
	status = child_reap(&c);
	/* what it said when stopped is no answer (tap_run says why) */
	return got_signal || driver_gone ? -1 : status;
}

static char *catalog_option(const struct pipe_config *cfg, struct catalog_cache *cache,
			    const struct catalog_log *log)
{
	return strcmp(catalog_flag(cfg, cache, log), "--catalog") == 0 ? opt_catalog : opt_properties;
}

/* The error of a private file not written (write_private() said why, but
 * for a full TMPDIR, which is said here). */
static char *private_error(const char *what, const char *tmpdir, int e)
{
	char *error;

	if (e != ENOSPC && e != EDQUOT)
		return xasprintf("cannot write %s", what);
	error = xasprintf("no space left in TMPDIR (%s) for %s", tmpdir, what);
	err_msg("%s", error);
	return error;
}

int tap_run(const struct pipe_config *cfg, const char *state, size_t state_len,
	    int out_fd, const struct tap_options *opt)
{
	const char *tmpdir = getenv("TMPDIR");
	char *dir = NULL, *config_path = NULL, *state_path = NULL, *exe = NULL;
	char *error = NULL;
	char **argv = NULL;
	size_t argc = 0, i;
	int fds[2] = { -1, -1 }, janitor = -1, dir_lock = -1;
	int status = 1, want_state, wstatus, last_nl = 1, wrote = 0, exec_errno, reading = 1;
	struct sb selected = SB_INIT;
	struct catalog_cache cache;
	struct catalog_log clog = { NULL, 0 };
	char *catalog_path = NULL, *held_log = NULL, *conf = NULL;
	struct sigaction sa, old_int, old_term, old_hup, old_pipe;
	char buf[1 << 17];
	const char *tap = cfg->tap_argv[0];
	struct child c;

	if (tmpdir == NULL || *tmpdir == '\0')
		tmpdir = "/tmp";
	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
		sig_pipe[0] = sig_pipe[1] = -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	/* EPIPE instead of death, so the private files still go */
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, &old_pipe);
	memset(&cache, 0, sizeof(cache));
	log_live = opt->live;
	watch_driver();

	if (state_wanted(state, state_len, &want_state) != 0) {
		error = xstrdup("invalid state on stdin");
		status = 2;
		goto out;
	}
	exe = tap_find_command(tap);
	if (exe == NULL) {
		status = tap_missing(tap, &error);
		err_msg("%s", error);
		goto out;
	}
	dir = private_dir(tmpdir, &dir_lock);
	if (dir == NULL) {
		if (errno == ENOSPC || errno == EDQUOT) {
			error = xasprintf("no space left in TMPDIR (%s)", tmpdir);
			err_msg("%s", error);
		} else {
			err_msg("cannot create a private directory in '%s':", tmpdir);
			error = xstrdup("cannot create a private temporary directory");
		}
		goto out;
	}
	janitor = start_janitor(dir, dir_lock);
	/*
	 * The stderr of discovery and --about goes where the tap's does; with
	 * no -l, discovery's is held back and shown only when it fails, so a
	 * run that works shows nothing of them (singer-python taps answer
	 * --about with a usage error).
	 */
	clog.path = opt->stderr_path;
	if (clog.path == NULL && !opt->live) {
		held_log = xasprintf("%s/discover.err", dir);
		clog.path = held_log;
		clog.held = 1;
	}
	if (cfg->streams || cfg->metadata_json || cfg->catalog_file)
		catalog_cache_open(&cache, cfg, opt->refresh_catalog);

	for (i = 0; cfg->tap_argv[i]; i++)
		;
	argv = xcalloc(i + 8, sizeof(*argv));
	for (i = 0; cfg->tap_argv[i]; i++)
		argv[argc++] = cfg->tap_argv[i];
	/*
	 * The config, password included, lives from here until the tap ends
	 * (discovery needs it first), and no shorter: a tap may read it again,
	 * or write it, at any time of its run (the Singer SDK's settings
	 * write-back, singer-io taps that save a refreshed OAuth token in it),
	 * and nothing says when it has read it for the last time.
	 */
	if (cfg->tap_config_json) {
		if (write_private(dir, "config.json", cfg->tap_config_json,
				  strlen(cfg->tap_config_json), &config_path) != 0) {
			error = private_error("the tap's config", tmpdir, errno);
			goto out;
		}
		conf = config_path;
	} else if (cfg->tap_config_file) {
		conf = cfg->tap_config_file;
	}
	if (conf) {
		argv[argc++] = opt_config;
		argv[argc++] = conf;
	}
	if (want_state) {
		if (write_private(dir, "state.json", state, state_len, &state_path) != 0) {
			error = private_error("the state file", tmpdir, errno);
			goto out;
		}
		argv[argc++] = opt_state;
		argv[argc++] = state_path;
	}
	if (cfg->streams || cfg->metadata_json) {
		char *config_args[3] = { conf ? opt_config : NULL, conf, NULL };

		catalog_path = xasprintf("%s/catalog.json", dir);
		if (catalog_prepare(cfg, config_args, &cache, catalog_path, &clog, &selected) != 0) {
			if (got_signal || driver_gone)
				goto stopped;
			error = xstrdup("cannot prepare the tap's catalog");
			status = 2;
			goto out;
		}
		argv[argc++] = catalog_option(cfg, &cache, &clog);
		argv[argc++] = catalog_path;
	} else if (cfg->catalog_file) {
		argv[argc++] = catalog_option(cfg, &cache, &clog);
		argv[argc++] = cfg->catalog_file;
	}
	argv[argc] = NULL;
	if (opt->check) {
		status = 0;
		goto out;
	}
stopped:
	if (driver_check()) {
		status = 1;
		error = xasprintf("%s not started: its driver (pid %ld) is gone", tap, (long)driver_pid);
		err_msg("%s", error);
		goto out;
	}
	/* A signal while the catalog was made: the tap does not start at all. */
	if (got_signal) {
		status = 128 + got_signal;
		error = interrupted(got_signal);
		err_msg("%s", error);
		goto out;
	}

	if (pipe2(fds, O_CLOEXEC) != 0) {
		err_msg("cannot make a pipe:");
		error = xstrdup("cannot make a pipe");
		goto out;
	}
	if (child_start(&c, exe, argv, fds[1], opt->stderr_path, &exec_errno) != 0) {
		close(fds[1]);
		fds[1] = -1;
		error = exec_errno ? xasprintf("cannot run %s: %s", tap, strerror(exec_errno)) :
			xstrdup("cannot fork");
		status = exec_errno == ENOENT ? 127 : exec_errno ? 126 : 1;
		goto out;
	}
	close(fds[1]);
	fds[1] = -1;
	if (selected.len) {
		struct sb line = SB_INIT;

		sb_addf(&line, "{\"type\":\"%s\",\"streams\":%s}\n", TAP_SELECTED_TYPE, selected.buf);
		if (write_all(out_fd, line.buf, line.len) != 0) {
			if (errno == EPIPE)
				got_signal = SIGPIPE;
			stop_tap(SIGTERM);
			reading = 0;
		}
		sb_free(&line);
	}

	while (reading) {
		ssize_t r;
		int w = child_wait(&c, fds[0], NULL);

		if (w == 2)
			break;
		if (w < 0) {
			err_msg("cannot read the tap's output:");
			stop_tap(SIGTERM);
			break;
		}
		r = read(fds[0], buf, sizeof(buf));
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			err_msg("cannot read the tap's output:");
			stop_tap(SIGTERM);
			break;
		}
		if (r == 0)
			break;
		if (write_all(out_fd, buf, (size_t)r) != 0) {
			if (errno == EPIPE)
				got_signal = SIGPIPE;
			else
				error = xasprintf("cannot write the tap's output: %s", strerror(errno));
			stop_tap(SIGTERM);
			break;
		}
		wrote = 1;
		last_nl = buf[r - 1] == '\n';
	}
	/*
	 * The read end goes before the wait: a tap that goes on writing (its
	 * output has nowhere to go, or it is being stopped) gets EPIPE or
	 * SIGPIPE, never blocks on a full pipe.
	 */
	close(fds[0]);
	fds[0] = -1;
	wstatus = child_reap(&c);
	status = wstatus;
	if (driver_gone && error == NULL && wstatus != 0)
		error = xasprintf("%s stopped: its driver (pid %ld) is gone", tap, (long)driver_pid);
	if (error) {
		status = 1;	/* we stopped the tap: its status says nothing */
	} else if (killed && status == 128 + SIGKILL) {
		error = xasprintf("%s did not stop within %ld s: killed", tap, grace);
		status = got_signal ? 128 + got_signal : 1;
	} else if (status > 128)
		error = xasprintf("%s was killed by signal %d (%s)", tap, status - 128, strsignal(status - 128));
	else if (status != 0)
		error = xasprintf("%s exited with status %d", tap, status);
	if (got_signal && error == NULL) {
		status = 128 + got_signal;
		error = interrupted(got_signal);
	}
	if (error)
		err_msg("%s", error);
out:
	if (got_signal != SIGPIPE && !opt->check) {
		if (wrote && !last_nl)
			write_all(out_fd, "\n", 1);
		end_line(out_fd, status, error);
	}
	for (i = 0; i < 2; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	if (catalog_path)
		unlink(catalog_path);
	free(catalog_path);
	catalog_cache_free(&cache);
	if (held_log)
		unlink(held_log);
	free(held_log);
	sb_free(&selected);
	if (config_path)
		unlink(config_path);
	if (state_path)
		unlink(state_path);
	if (dir)
		rmdir(dir);
	/* the janitor holds the lock too, until it has removed the folder */
	if (dir_lock >= 0)
		close(dir_lock);
	if (janitor >= 0)
		close(janitor);
	free(config_path);
	free(state_path);
	free(dir);
	free(exe);
	free(argv);
	free(error);
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
	return status;
}
