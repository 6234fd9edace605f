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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* The tap runs in a process group of its own: what it starts gets the signal too. */
static void signal_tap(int sig)
{
	if (child_pid > 0 && kill(-child_pid, sig) != 0)
		kill(child_pid, sig);
}

static void on_signal(int sig)
{
	got_signal = sig;
	signal_tap(sig);
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
static double hard_kill_at;		/* when the tap gets SIGKILL, once the driver is gone */

static void watch_driver(void)
{
	long pid = util_env_long("DATASPOC_PIPE_PID", 2, INT_MAX, 0);

	if (pid == 0 || pid == (long)getpid() || driver_pid == (pid_t)pid)
		return;
	driver_pid = (pid_t)pid;
#ifdef SYS_pidfd_open
	driver_fd = (int)syscall(SYS_pidfd_open, driver_pid, 0);
	if (driver_fd < 0 && errno == ESRCH)
		driver_gone = 1;
#endif
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

/*
 * read(2) from a child's output, watching the driver meanwhile: once it is
 * gone the tap gets SIGTERM, and SIGKILL 2 s later if it is still there.
 */
static ssize_t watched_read(int fd, char *buf, size_t n)
{
	for (;;) {
		struct pollfd p[2] = { { fd, POLLIN, 0 }, { driver_fd, POLLIN, 0 } };
		nfds_t np = 1;
		int timeout = -1, r;

		if (driver_pid && !driver_gone) {
			if (driver_fd >= 0)
				np = 2;
			else
				timeout = 500;
		} else if (hard_kill_at > 0) {
			double left = hard_kill_at - util_now();

			timeout = left > 0 ? (int)(left * 1000) + 1 : 0;
		}
		r = poll(p, np, timeout);
		if (r < 0)
			return -1;
		if (r > 0 && p[0].revents)
			return read(fd, buf, n);
		if (!driver_gone && driver_check()) {
			hard_kill_at = util_now() + 2;
			signal_tap(SIGTERM);
		} else if (hard_kill_at > 0 && util_now() >= hard_kill_at) {
			hard_kill_at = 0;
			signal_tap(SIGKILL);
		}
	}
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
 * pipe-tap open, so the stream's reader still sees its end.  Returns that
 * write end, or -1 (no janitor: the folder goes as before, signals aside).
 */
static int start_janitor(const char *dir)
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

		/* pipe-tap handles these, then ends: this one stays to see it */
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		prctl(PR_SET_NAME, "tap-janitor", 0, 0, 0);
		if (max <= 0 || max > 65536)
			max = 65536;
		for (fd = 0; fd < max; fd++) {
			if (fd != p[0])
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

static int write_private(const char *dir, const char *name, const char *data, size_t len, char **path)
{
	int fd;

	*path = xasprintf("%s/%s", dir, name);
	fd = open(*path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		err_msg("cannot create '%s':", *path);
		return -1;
	}
	if (write_all(fd, data, len) != 0 || close(fd) != 0) {
		err_msg("cannot write '%s':", *path);
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
 * Start exe with argv, stdin /dev/null, stdout out_w, stderr to stderr_path
 * (NULL: ours).  Returns the pid, or -1 with *exec_errno set when exec
 * failed (0 when fork did), after reporting.
 */
static pid_t spawn(const char *exe, char *const argv[], int out_w, const char *stderr_path,
		   int *exec_errno)
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
		if (stderr_path) {
			int efd = open(stderr_path, O_WRONLY | O_CREAT | O_APPEND, 0600);

			if (efd >= 0)
				dup2(efd, STDERR_FILENO);
		}
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

static int wait_status(pid_t pid)
{
	int wstatus;

	while (waitpid(pid, &wstatus, 0) < 0) {
		if (errno != EINTR)
			return 1;
	}
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return WEXITSTATUS(wstatus);
}

int tap_capture(char *const argv[], const char *stderr_path, struct sb *out)
{
	char *exe = tap_find_command(argv[0]);
	int fds[2], exec_errno, status;
	pid_t pid;

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
	pid = spawn(exe, argv, fds[1], stderr_path, &exec_errno);
	close(fds[1]);
	free(exe);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	child_pid = pid;
	/* one that came while it was being started did not reach it */
	if (got_signal)
		signal_tap(got_signal);
	for (;;) {
		ssize_t r;

		sb_grow(out, 65536);
		r = watched_read(fds[0], out->buf + out->len, out->cap - out->len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err_msg("cannot read the output of '%s':", argv[0]);
		if (r <= 0)
			break;
		out->len += (size_t)r;
		out->buf[out->len] = '\0';
	}
	close(fds[0]);
	status = wait_status(pid);
	child_pid = 0;
	/* what it said when stopped is no answer (tap_run says why) */
	return got_signal || driver_gone ? -1 : status;
}

static char *catalog_option(const struct pipe_config *cfg, struct catalog_cache *cache,
			    const struct catalog_log *log)
{
	return strcmp(catalog_flag(cfg, cache, log), "--catalog") == 0 ? opt_catalog : opt_properties;
}

int tap_run(const struct pipe_config *cfg, const char *state, size_t state_len,
	    int out_fd, const struct tap_options *opt)
{
	char tmpl[4096];
	const char *tmpdir = getenv("TMPDIR");
	char *dir = NULL, *config_path = NULL, *state_path = NULL, *exe = NULL;
	char *error = NULL;
	char **argv = NULL;
	size_t argc = 0, i;
	int fds[2] = { -1, -1 }, janitor = -1;
	int status = 1, want_state, wstatus, last_nl = 1, wrote = 0, exec_errno;
	struct sb selected = SB_INIT;
	struct catalog_cache cache;
	struct catalog_log clog = { NULL, 0 };
	char *catalog_path = NULL, *held_log = NULL, *conf = NULL;
	struct sigaction sa, old_int, old_term, old_hup, old_pipe;
	char buf[1 << 17];
	const char *tap = cfg->tap_argv[0];
	pid_t pid = -1;

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
	snprintf(tmpl, sizeof(tmpl), "%s/dataspoc-pipe.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	if (mkdtemp(tmpl) == NULL) {
		err_msg("cannot create a private directory in '%s':", tmpdir && *tmpdir ? tmpdir : "/tmp");
		error = xstrdup("cannot create a private temporary directory");
		goto out;
	}
	dir = xstrdup(tmpl);
	janitor = start_janitor(dir);
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
	if (cfg->tap_config_json) {
		if (write_private(dir, "config.json", cfg->tap_config_json,
				  strlen(cfg->tap_config_json), &config_path) != 0) {
			error = xstrdup("cannot write the tap's config");
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
			error = xstrdup("cannot write the state file");
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
	pid = spawn(exe, argv, fds[1], opt->stderr_path, &exec_errno);
	close(fds[1]);
	fds[1] = -1;
	if (pid < 0) {
		error = exec_errno ? xasprintf("cannot run %s: %s", tap, strerror(exec_errno)) :
			xstrdup("cannot fork");
		status = exec_errno == ENOENT ? 127 : exec_errno ? 126 : 1;
		goto out;
	}
	child_pid = pid;
	/* one that came while the tap was being started did not reach it */
	if (got_signal)
		signal_tap(got_signal);
	if (selected.len) {
		struct sb line = SB_INIT;

		sb_addf(&line, "{\"type\":\"%s\",\"streams\":%s}\n", TAP_SELECTED_TYPE, selected.buf);
		if (write_all(out_fd, line.buf, line.len) != 0) {
			if (errno == EPIPE)
				got_signal = SIGPIPE;
			signal_tap(SIGTERM);
		}
		sb_free(&line);
	}

	for (;;) {
		ssize_t r = watched_read(fds[0], buf, sizeof(buf));

		if (r < 0) {
			if (errno == EINTR)
				continue;
			err_msg("cannot read the tap's output:");
			break;
		}
		if (r == 0)
			break;
		if (write_all(out_fd, buf, (size_t)r) != 0) {
			if (errno == EPIPE)
				got_signal = SIGPIPE;
			else
				error = xasprintf("cannot write the tap's output: %s", strerror(errno));
			signal_tap(SIGTERM);
			break;
		}
		wrote = 1;
		last_nl = buf[r - 1] == '\n';
	}
	wstatus = wait_status(pid);
	pid = -1;
	child_pid = 0;
	status = wstatus;
	if (driver_gone && error == NULL && wstatus != 0)
		error = xasprintf("%s stopped: its driver (pid %ld) is gone", tap, (long)driver_pid);
	if (error)
		status = 1;	/* we stopped the tap: its status says nothing */
	else if (status > 128)
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
	if (got_signal) {
		signal(got_signal, SIG_DFL);
		raise(got_signal);
	}
	return status;
}
