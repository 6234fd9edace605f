/* tap: run a Singer tap, pass its stream on, say how it ended. */
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "child.h"
#include "err.h"
#include "json.h"
#include "mask.h"
#include "sb.h"
#include "tapline.h"
#include "util.h"


/* "interrupted by SIGTERM": the driver's words for the same event. */
static char *interrupted(int sig)
{
	const char *name = sigabbrev_np(sig);

	return name ? xasprintf("interrupted by SIG%s", name) :
		      xasprintf("interrupted by signal %d", sig);
}

static char opt_config[] = "--config";

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
/* The janitor's rule for descriptor fd: keep a and b, and those above
 * stderr that are not close-on-exec; close the others. */
static void janitor_close(long fd, int a, int b)
{
	int fl;

	if (fd == a || fd == b)
		return;
	if (fd > STDERR_FILENO && (fl = fcntl((int)fd, F_GETFD)) >= 0 && !(fl & FD_CLOEXEC))
		return;
	close((int)fd);
}

/*
 * janitor_close() on each descriptor open, as /proc/self/fd lists them; -1
 * when it cannot tell (then every number up to the limit is tried: 20,000
 * here, two failed system calls each, 8 ms at every start of pipe-tap,
 * issue #14).
 */
static int janitor_close_listed(int a, int b)
{
	int fds[512];
	size_t n = 0, i;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int own;

	if (d == NULL)
		return -1;
	own = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (n == sizeof(fds) / sizeof(*fds)) {
			closedir(d);
			return -1;
		}
		fds[n++] = atoi(de->d_name);
	}
	closedir(d);
	for (i = 0; i < n; i++) {
		if (fds[i] != own)
			janitor_close(fds[i], a, b);
	}
	return 0;
}

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
		if (janitor_close_listed(p[0], lock_fd) != 0) {
			for (fd = 0; fd < max; fd++)
				janitor_close(fd, p[0], lock_fd);
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

/*
 * The maker of a driver's private folder, "PID START HOST_ID": the driver's
 * pid, when it started (util_pid_start()) and this machine and PID
 * namespace (util_host_id()).  It is the folder's extended attribute
 * user.dataspoc-pipe.maker (no file to make and remove in each run, issue
 * #14), else, where the filesystem has no user attributes, its "maker"
 * file.  1 when that driver is known gone (this machine and namespace, and
 * no process of that pid, or one that started at another time), 0 when it
 * lives or it cannot be told (no maker, another host id: another
 * namespace, or another machine sharing this TMPDIR).
 */
#define MAKER_XATTR "user.dataspoc-pipe.maker"

static int maker_gone(int dirfd)
{
	char buf[256], host[160];
	const char *here = util_host_id();
	long pid;
	long long start;
	ssize_t n = fgetxattr(dirfd, MAKER_XATTR, buf, sizeof(buf) - 1);
	int fd;

	if (n < 0) {
		fd = openat(dirfd, "maker", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return 0;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* (another boot id may be another machine sharing this TMPDIR: a live one) */
	if (sscanf(buf, "%ld %lld %159s", &pid, &start, host) != 3 || pid <= 0 || start < 0 ||
	    !*here || strcmp(host, here) != 0)
		return 0;
	return !util_pid_lives(pid, start);
}

/*
 * Remove the driver's private folders in tmpdir that no run holds, this
 * user's: one is proven dead when its lock can be taken and it is a minute
 * old, or its maker is known gone (maker_gone()).  A live run's folder is
 * locked but in two moments of its driver's, who is then alive: between
 * its making and its first lock, and between pipe-tap -n -D's end and the
 * next program's lock (pipe-tap marks it changed as it ends).  Those of
 * pipe-tap's own folders (no maker) go once a minute old, as in the
 * driver's sweep_private_dirs.  What cannot be read is left.
 */
static void sweep_run_dirs(const char *tmpdir)
{
	static const char prefix[] = "dataspoc-pipe.";
	DIR *d = opendir(tmpdir);
	struct dirent *de;
	time_t now = time(NULL);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		char *path;
		int fd, dead;

		if (strncmp(de->d_name, prefix, sizeof(prefix) - 1) != 0 ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid())
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* (judged before the lock is tried: a live folder's next program must find it free) */
		dead = now - st.st_mtime > 60 || maker_gone(fd);
		if (dead && flock(fd, LOCK_EX | LOCK_NB) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0) {
			path = xasprintf("%s/%s", tmpdir, de->d_name);
			util_remove_tree(path);
			free(path);
		}
		close(fd);
	}
	closedir(d);
}

/* The maker of dir, open on dirfd (see maker_gone()); 0 or -1, unsaid (the folder then goes once a minute old). */
static int write_maker(const char *dir, int dirfd, long driver)
{
	struct sb line = SB_INIT;
	char *path;
	int fd, r = -1;

	sb_addf(&line, "%ld %lld %s\n", driver, util_pid_start(driver), util_host_id());
	if (fsetxattr(dirfd, MAKER_XATTR, line.buf, line.len, XATTR_CREATE) == 0) {
		sb_free(&line);
		return 0;
	}
	path = xasprintf("%s/maker", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0) {
		r = util_write_all(fd, line.buf, line.len);
		if (close(fd) != 0)
			r = -1;
	}
	sb_free(&line);
	free(path);
	return r;
}

int tap_make_run_dir(long driver, int *lock_fd)
{
	const char *tmpdir = getenv("TMPDIR");
	char *dir, *log;
	int fd, e;

	if (tmpdir == NULL || *tmpdir == '\0')
		tmpdir = "/tmp";
	sweep_run_dirs(tmpdir);
	dir = private_dir(tmpdir, lock_fd);
	if (dir == NULL) {
		err_msg("cannot create a private directory in '%s':", tmpdir);
		return -1;
	}
	/* the name first, whole, then nothing more on the driver's $(...) */
	if (printf("%s\n", dir) < 0 || fflush(stdout) != 0 ||
	    (fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) < 0 || dup2(fd, STDOUT_FILENO) < 0) {
		err_msg("cannot hand over the private directory '%s':", dir);
		free(dir);
		return -1;
	}
	close(fd);
	write_maker(dir, *lock_fd, driver);
	if (setenv("DATASPOC_PIPE_RUN_DIR", dir, 1) != 0) {
		err_msg("cannot set DATASPOC_PIPE_RUN_DIR:");
		free(dir);
		return -1;
	}
	/* (a TMPDIR without room still takes the file; what it holds is lost, as the driver's 2> lost it) */
	log = xasprintf("%s/check.err", dir);
	fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	e = errno;
	if (fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		errno = fd < 0 ? e : errno;
		err_msg("cannot create '%s':", log);
		if (fd >= 0)
			close(fd);
		free(log);
		free(dir);
		return -1;
	}
	close(fd);
	free(log);
	free(dir);
	return 0;
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
	if (util_write_all(fd, data, len) != 0 || close(fd) != 0) {
		e = errno;
		if (e != ENOSPC && e != EDQUOT)
			err_msg("cannot write '%s':", *path);
		errno = e;
		return -1;
	}
	return 0;
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

/* *want: the state (JSON text) is a non-empty object.  -1 when it is not an object (said). */
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

	tapline_end(&line, status, error);
	if (util_write_all(fd, line.buf, line.len) != 0 && errno != EPIPE)
		err_msg("cannot write the end line:");
	sb_free(&line);
}

/* One run of the tap: what tap_run() makes on its way, and undoes. */
struct run {
	const struct pipe_config *cfg;
	const struct tap_options *opt;
	const char *tap;		/* its name, for messages */
	const char *tmpdir;
	char *exe;			/* where it is */
	char *dir;			/* the private folder, held with dir_lock */
	int dir_lock, janitor;
	char *config_path, *state_path, *catalog_path, *held_log;
	struct catalog_cache cache;
	struct catalog_log clog;	/* where discovery's and --about's stderr goes */
	struct mask *mask;		/* the secrets masked in the tap's stderr */
	struct sb selected;		/* the streams selected (a JSON array), or empty */
	struct child_process child;	/* the tap, its arguments */
	int wrote, last_nl;		/* of its output: some written, the last byte a '\n' */
	int pipe_size;			/* the capacity of the pipe from its stdout */
	int status;			/* what pipe-tap exits with */
	char *error;			/* why it failed, for the end line; NULL: it did not */
};

/*
 * A private file's path, in what the tap says, as what people wrote it
 * from (issue #29: "properties '/tmp/dataspoc-pipe.X/catalog.json': ...",
 * a file that is gone when it is read): its config, the pipeline's
 * file:line:col of source.config; its catalog, the pipeline's file and
 * what made it; its state, the pipeline's saved state.
 */
static void name_private(struct run *r, const char *path)
{
	const struct pipe_config *cfg = r->cfg;
	char *to;

	if (path == r->config_path && cfg->tap_config_line)
		to = xasprintf("%s:%zu:%zu (source.config)", cfg->file, cfg->tap_config_line, cfg->tap_config_col);
	else if (path == r->config_path)
		to = xasprintf("%s (source.config)", cfg->file);
	else if (path == r->catalog_path)
		to = xasprintf("%s (source.streams and source.metadata applied to %s)", cfg->file,
			       cfg->catalog_file ? "source.catalog" : "the tap's catalog");
	else	/* (quoted: "pipeline api-token: ..." read as a NAME: value to mask) */
		to = xasprintf("the saved state of pipeline '%s'", cfg->name);
	mask_rename(r->mask, path, to);
	free(to);
}

static void run_init(struct run *r, const struct pipe_config *cfg, const struct tap_options *opt)
{
	struct child_process child = CHILD_PROCESS_INIT;

	memset(r, 0, sizeof(*r));
	r->cfg = cfg;
	r->opt = opt;
	r->tap = cfg->tap_argv[0];
	r->tmpdir = getenv("TMPDIR");
	if (r->tmpdir == NULL || *r->tmpdir == '\0')
		r->tmpdir = "/tmp";
	r->dir_lock = r->janitor = -1;
	r->selected = (struct sb)SB_INIT;
	r->child = child;
	r->last_nl = 1;
	r->status = 1;
	r->mask = mask_new(cfg);
}

static void run_free(struct run *r)
{
	if (r->catalog_path)
		unlink(r->catalog_path);
	free(r->catalog_path);
	catalog_cache_free(&r->cache);
	if (r->held_log)
		unlink(r->held_log);
	free(r->held_log);
	mask_free(r->mask);
	sb_free(&r->selected);
	if (r->config_path)
		unlink(r->config_path);
	if (r->state_path)
		unlink(r->state_path);
	if (r->dir)
		rmdir(r->dir);
	/* the janitor holds the lock too, until it has removed the folder */
	if (r->dir_lock >= 0)
		close(r->dir_lock);
	if (r->janitor >= 0)
		close(r->janitor);
	free(r->config_path);
	free(r->state_path);
	free(r->dir);
	free(r->exe);
	child_clear(&r->child);
	free(r->error);
}

static int find_tap(struct run *r)
{
	r->exe = child_find_command(r->tap);
	if (r->exe == NULL) {
		r->status = child_missing(r->tap, &r->error);
		err_msg("%s", r->error);
		return -1;
	}
	return 0;
}

static int make_private_dir(struct run *r)
{
	r->dir = private_dir(r->tmpdir, &r->dir_lock);
	if (r->dir == NULL) {
		if (errno == ENOSPC || errno == EDQUOT) {
			r->error = xasprintf("no space left in TMPDIR (%s)", r->tmpdir);
			err_msg("%s", r->error);
		} else {
			err_msg("cannot create a private directory in '%s':", r->tmpdir);
			r->error = xstrdup("cannot create a private temporary directory");
		}
		return -1;
	}
	r->janitor = start_janitor(r->dir, r->dir_lock);
	return 0;
}

/*
 * A private folder only for what goes in it (private_files): an inline
 * config, a state, a catalog and discovery's stderr.  Without them no
 * folder is made and no janitor started (two forks and a folder fewer in a
 * small run's pipe-tap -n and pipe-tap, issue #14).
 */
static int private_dir_needed(const struct run *r, int want_state)
{
	const struct pipe_config *cfg = r->cfg;

	return cfg->tap_config_json || want_state || cfg->streams || cfg->metadata_json ||
	       cfg->catalog_file;
}

/*
 * The catalog the tap gets, when the pipeline selects streams or names
 * one.  Returns 0, -1 when it cannot be made, 1 when the run was stopped
 * (a signal, the driver gone) while it was made.
 */
static int catalog_arguments(struct run *r, char *conf)
{
	const struct pipe_config *cfg = r->cfg;
	char *config_args[3] = { conf ? opt_config : NULL, conf, NULL };

	/*
	 * The stderr of discovery and --about goes where the tap's does; with
	 * no -l, discovery's is held back and shown only when it fails, so a
	 * run that works shows nothing of them (singer-python taps answer
	 * --about with a usage error).
	 */
	r->clog.path = r->opt->stderr_path;
	r->clog.live = r->opt->live;
	r->clog.mask = r->mask;
	if (r->clog.path == NULL && !r->opt->live && r->dir) {
		r->held_log = xasprintf("%s/discover.err", r->dir);
		r->clog.path = r->held_log;
		r->clog.held = 1;
	}
	if (getenv("DATASPOC_PIPE_SHARD")) {
		/* a shard of a sharded run (pipe-shard): its part of source.streams */
		unsigned long index, n;

		if (catalog_parse_shard(getenv("DATASPOC_PIPE_SHARD"), &index, &n) != 0 ||
		    cfg->streams == NULL) {
			r->error = xstrdup(cfg->streams == NULL ?
					   "a sharded run splits source.streams: the pipeline selects none" :
					   "DATASPOC_PIPE_SHARD is not I/N");
			err_msg("%s", r->error);
			r->status = 2;
			return -1;
		}
		catalog_shard(index, n);
	}
	if (cfg->streams || cfg->metadata_json || cfg->catalog_file)
		catalog_cache_open(&r->cache, cfg, r->opt->refresh_catalog);
	/*
	 * A cached catalog is discovered again by an extraction and by a run's
	 * checks; not by a check outside a run (validate's tap check), whose
	 * source check (-s) asks the source itself.
	 */
	r->cache.recheck = !r->opt->check || getenv("DATASPOC_PIPE_RUN_DIR") != NULL;
	if (cfg->streams || cfg->metadata_json) {
		r->catalog_path = xasprintf("%s/catalog.json", r->dir);
		name_private(r, r->catalog_path);
		if (catalog_prepare(cfg, config_args, &r->cache, r->catalog_path, &r->clog,
				    &r->selected) != 0) {
			if (child_guard_signal() || child_driver_gone())
				return 1;
			r->error = xstrdup("cannot prepare the tap's catalog");
			r->status = 2;
			return -1;
		}
		child_push(&r->child, catalog_flag(cfg, &r->cache, &r->clog));
		child_push(&r->child, r->catalog_path);
	} else if (cfg->catalog_file) {
		child_push(&r->child, catalog_flag(cfg, &r->cache, &r->clog));
		child_push(&r->child, cfg->catalog_file);
	}
	return 0;
}

/* The tap's command line: its config, its state, its catalog.  As catalog_arguments(). */
static int tap_arguments(struct run *r, const char *state, size_t state_len, int want_state)
{
	const struct pipe_config *cfg = r->cfg;
	char *conf = NULL;

	child_pushv(&r->child, cfg->tap_argv);
	/*
	 * The config, password included, lives from here until the tap ends
	 * (discovery needs it first), and no shorter: a tap may read it again,
	 * or write it, at any time of its run (the Singer SDK's settings
	 * write-back, singer-io taps that save a refreshed OAuth token in it),
	 * and nothing says when it has read it for the last time.
	 */
	if (cfg->tap_config_json) {
		if (write_private(r->dir, "config.json", cfg->tap_config_json,
				  strlen(cfg->tap_config_json), &r->config_path) != 0) {
			r->error = private_error("the tap's config", r->tmpdir, errno);
			return -1;
		}
		name_private(r, r->config_path);
		conf = r->config_path;
	} else if (cfg->tap_config_file) {
		conf = cfg->tap_config_file;
	}
	if (conf) {
		child_push(&r->child, opt_config);
		child_push(&r->child, conf);
	}
	if (want_state) {
		if (write_private(r->dir, "state.json", state, state_len, &r->state_path) != 0) {
			r->error = private_error("the state file", r->tmpdir, errno);
			return -1;
		}
		name_private(r, r->state_path);
		child_push(&r->child, "--state");
		child_push(&r->child, r->state_path);
	}
	return catalog_arguments(r, conf);
}

/* 1 when the run was stopped before the tap started (then it does not start at all). */
static int stopped_before_start(struct run *r)
{
	if (child_driver_check()) {
		r->status = 1;
		r->error = xasprintf("%s not started: its driver (pid %ld) is gone", r->tap,
				     child_driver_pid());
		err_msg("%s", r->error);
		return 1;
	}
	/* a signal while the catalog was made */
	if (child_guard_signal()) {
		r->status = 128 + child_guard_signal();
		r->error = interrupted(child_guard_signal());
		err_msg("%s", r->error);
		return 1;
	}
	return 0;
}

/*
 * The pipes of the tap's stream are grown to this (as far as the kernel
 * allows): a tap then goes on writing while pipe-tap naps (copy_output())
 * or pipe-sink is busy with a row group, instead of waiting for a reader.
 */
#define PIPE_WANT (1 << 20)

/* Start the tap.  Returns the read end of its stdout, or -1. */
static int start_tap(struct run *r)
{
	int fds[2], e;

	if (pipe2(fds, O_CLOEXEC) != 0) {
		err_msg("cannot make a pipe:");
		r->error = xstrdup("cannot make a pipe");
		return -1;
	}
	r->pipe_size = child_pipe_grow(fds[0], PIPE_WANT);
	r->child.exe = r->exe;
	r->child.out = fds[1];
	r->child.err_path = r->opt->stderr_path;
	r->child.err_live = r->opt->live;
	r->child.err_mask = r->mask;
	if (child_start(&r->child) != 0) {
		e = r->child.exec_errno;
		close(fds[0]);
		r->error = e ? xasprintf("cannot run %s: %s", r->tap, strerror(e)) : xstrdup("cannot fork");
		r->status = e == ENOENT ? 127 : e ? 126 : 1;
		return -1;
	}
	return fds[0];
}

/*
 * Copy the selected line, then the tap's stdout as it comes, to out_fd.
 * Whatever stops the copy (out_fd's reader gone, an error) stops the tap.
 *
 * A Python tap writes each message on its own (singer-python flushes every
 * line): a reader that wakes for each write makes every line a context
 * switch, for pipe-tap and again for pipe-sink, which on two cores costs
 * as much as half the tap's own time.  So after a read that found the pipe
 * all but empty, pipe-tap naps COPY_NAP_MS before it reads again: the tap's
 * next lines wait in the pipe (grown to PIPE_WANT) and come in one read and
 * one write, about one wake-up a millisecond whatever the tap's pace.  A
 * line waits at most that long; a tap that pauses or ends is never waited
 * for (the nap is over before the next read blocks, or sees the end).  A
 * read of at least a sixteenth of the pipe is a tap that writes fast
 * enough: no nap, so that a small pipe never holds a fast tap back.
 */
#define COPY_NAP_MS 1

/*
 * The nap: poll(2) asking for no event, so that only POLLHUP (every write
 * end closed: the tap is done) or a signal ends it early.  A small run's
 * tap ends within a nap of its last line: pipe-tap would otherwise sleep
 * the rest of it before it reads the end (issue #14).
 */
static void copy_nap(int fd)
{
	struct pollfd p = { fd, 0, 0 };

	poll(&p, 1, COPY_NAP_MS);
}

static void copy_output(struct run *r, int in, int out_fd)
{
	char buf[1 << 17];
	size_t small = r->pipe_size > 0 ? (size_t)r->pipe_size / 16 : 4096;

	if (r->selected.len) {
		struct sb line = SB_INIT;
		int ok;

		tapline_selected(&line, r->selected.buf);
		ok = util_write_all(out_fd, line.buf, line.len) == 0;
		if (!ok) {
			if (errno == EPIPE)
				child_guard_set_signal(SIGPIPE);
			child_stop(&r->child, SIGTERM);
		}
		sb_free(&line);
		if (!ok)
			return;
	}
	for (;;) {
		ssize_t n = child_read(&r->child, in, buf, sizeof(buf));

		if (n < 0) {
			err_msg("cannot read the tap's output:");
			child_stop(&r->child, SIGTERM);
			return;
		}
		if (n == 0)
			return;
		if (util_write_all(out_fd, buf, (size_t)n) != 0) {
			if (errno == EPIPE)
				child_guard_set_signal(SIGPIPE);
			else
				r->error = xasprintf("cannot write the tap's output: %s", strerror(errno));
			child_stop(&r->child, SIGTERM);
			return;
		}
		r->wrote = 1;
		r->last_nl = buf[n - 1] == '\n';
		if ((size_t)n < small && !child_guard_signal())
			copy_nap(in);
	}
}

/* The status and the error of a tap that ended with wstatus (as child_finish()). */
static void tap_ended(struct run *r, int wstatus)
{
	r->status = wstatus;
	if (child_driver_gone() && r->error == NULL && wstatus != 0)
		r->error = xasprintf("%s stopped: its driver (pid %ld) is gone", r->tap, child_driver_pid());
	if (r->error) {
		r->status = 1;	/* we stopped the tap: its status says nothing */
	} else if (r->child.killed && r->status == 128 + SIGKILL) {
		r->error = xasprintf("%s did not stop within %ld s: killed", r->tap, r->child.grace);
		r->status = child_guard_signal() ? 128 + child_guard_signal() : 1;
	} else if (r->status > 128)
		r->error = xasprintf("%s was killed by signal %d (%s)", r->tap, r->status - 128,
				     strsignal(r->status - 128));
	else if (r->status != 0)
		r->error = xasprintf("%s exited with status %d", r->tap, r->status);
	if (child_guard_signal() && r->error == NULL) {
		r->status = 128 + child_guard_signal();
		r->error = interrupted(child_guard_signal());
	}
	if (r->error)
		err_msg("%s", r->error);
}

/*
 * A tap that ended well having said nothing at all, in a pipeline that
 * selects no stream: when its discovery offers streams, the run fails and
 * says how to pick them (tap-postgres, given no catalog, extracts nothing
 * and exits 0: the run said "Done! 0 records" and people took it for an
 * empty table, issue #29).  A tap that offers nothing is taken at its word.
 */
static void nothing_selected(struct run *r)
{
	const struct pipe_config *cfg = r->cfg;
	char *conf = r->config_path ? r->config_path : cfg->tap_config_file;
	char *config_args[3] = { conf ? opt_config : NULL, conf, NULL };
	struct sb names = SB_INIT;

	if (r->status != 0 || r->wrote || r->error || cfg->streams || cfg->metadata_json ||
	    cfg->catalog_file || child_guard_signal())
		return;
	if (catalog_offered(cfg, config_args, &names) > 0) {
		r->status = 1;
		r->error = xasprintf("%s extracted nothing: no stream is selected; name the ones "
				     "to extract in source.streams (its discovery offers: %s)",
				     r->tap, names.buf);
		err_msg("%s", r->error);
	}
	sb_free(&names);
}

/* The line of a failed check's stderr that says why: the first that says error, else the last. */
static void why_line(const char *path, struct sb *why)
{
	struct sb text = SB_INIT;
	char *line, *save = NULL, *last = NULL;

	if (util_read_file(path, &text, NULL) != 0 || text.len == 0)
		goto out;
	for (line = strtok_r(text.buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strcasestr(line, "error") || strcasestr(line, "fatal") || strcasestr(line, "denied") ||
		    strcasestr(line, "refused") || strcasestr(line, "could not") ||
		    strcasestr(line, "critical")) {
			last = line;
			break;
		}
		if (line[strspn(line, " \t\r")])
			last = line;
	}
	if (last)
		sb_adds(why, last + strspn(last, " \t"));
out:
	sb_free(&text);
}

/* Seconds the source check may take ($DATASPOC_PIPE_CHECK_TIMEOUT, 1 to 3600, default 30). */
static long check_timeout(void)
{
	const char *v = getenv("DATASPOC_PIPE_CHECK_TIMEOUT");
	long n = v && *v ? util_parse_long(v, 1, 3600, 0) : 0;

	return n > 0 ? n : 30;
}

/*
 * pipe-tap -s: the tap's discovery with its config, under timeout(1) when
 * there is one, so that a source that does not answer fails the check
 * rather than holding it.  validate's "source" check (issue #29): a wrong
 * password used to pass every check.
 */
static void source_check(struct run *r, int out_fd)
{
	const struct pipe_config *cfg = r->cfg;
	struct child_process c = CHILD_PROCESS_INIT;
	struct sb text = SB_INIT, names = SB_INIT, why = SB_INIT, line = SB_INIT;
	char *conf = r->config_path ? r->config_path : cfg->tap_config_file;
	char *config_args[3] = { conf ? opt_config : NULL, conf, NULL };
	char *timeout = child_find_command("timeout"), *log = xasprintf("%s/source.err", r->dir);
	char secs[32];
	struct json_span cat, list, st;
	size_t errpos, pos = 0;
	const char *errmsg, *flag;
	long limit = check_timeout();
	int status;

	snprintf(secs, sizeof(secs), "%ld", limit);
	if (timeout) {
		child_push(&c, "timeout");
		child_push(&c, "-k");
		child_push(&c, "2");
		child_push(&c, secs);
		c.exe = timeout;
	}
	child_pushv(&c, cfg->tap_argv);
	child_pushv(&c, config_args);
	child_push(&c, "--discover");
	if (!timeout)
		c.exe = r->exe;
	c.err_path = log;
	status = child_capture(&c, &text);
	r->status = 1;
	if (status == 124 && timeout) {
		r->error = xasprintf("%s --discover did not answer within %ld s", r->tap, limit);
	} else if (status != 0) {
		why_line(log, &why);
		r->error = why.len ? xasprintf("%s --discover failed: %s", r->tap, why.buf) :
			   status > 0 ? xasprintf("%s --discover exited with status %d", r->tap, status) :
			   xasprintf("%s --discover did not run", r->tap);
	} else if (json_validate(text.buf ? text.buf : "", text.len, &cat, &errpos, &errmsg) != 0 ||
		   cat.type != JSON_OBJECT || json_object_get(&cat, "streams", &list) != 1 ||
		   list.type != JSON_ARRAY) {
		/* a tap without discovery: what it says is no answer, and no failure */
		r->status = 0;
	} else {
		while (json_array_next(&list, &pos, &st)) {
			struct json_span v;

			if (st.type == JSON_OBJECT && json_object_get(&st, "tap_stream_id", &v) == 1 &&
			    v.type == JSON_STRING) {
				json_string_decode(&v, &names);
				sb_addc(&names, '\n');
			}
		}
		r->status = 0;
	}
	if (r->status == 0) {
		catalog_cache_open(&r->cache, cfg, 0);
		r->clog.path = "/dev/null";
		r->clog.held = 1;
		flag = catalog_flag(cfg, &r->cache, &r->clog);
		sb_addf(&line, "%s\n%s", flag, names.len ? names.buf : "");
		if (util_write_all(out_fd, line.buf, line.len) != 0)
			r->status = 1;
	} else {
		err_msg("%s", r->error);
	}
	unlink(log);
	free(log);
	free(timeout);
	sb_free(&text);
	sb_free(&names);
	sb_free(&why);
	sb_free(&line);
}

/*
 * The built-in taps resolve a relative path of their config (the CSV
 * tap's "path") against the folder of the file it was written in, the
 * pipeline's for an inline mapping, as every path of a pipeline is: never
 * against where the run starts (cron starts in $HOME).  They find it in
 * DATASPOC_TAP_CONFIG_DIR (singer_tap_path()).
 */
static void tell_config_dir(const struct pipe_config *cfg)
{
	const char *f = cfg->tap_config_file, *slash = f ? strrchr(f, '/') : NULL;
	char *dir = NULL;

	if (f && slash && *f == '/')
		dir = slash == f ? xstrdup("/") : xstrndup(f, (size_t)(slash - f));
	else if (f == NULL && cfg->dir && *cfg->dir == '/')
		dir = xstrdup(cfg->dir);
	if (dir == NULL)
		unsetenv("DATASPOC_TAP_CONFIG_DIR");
	else if (setenv("DATASPOC_TAP_CONFIG_DIR", dir, 1) != 0)
		err_warn("cannot tell the tap where its config is:");
	free(dir);
}

int tap_run(const struct pipe_config *cfg, const char *state, size_t state_len,
	    int out_fd, const struct tap_options *opt)
{
	struct run r;
	int want_state, ready, in, status;

	run_init(&r, cfg, opt);
	tell_config_dir(cfg);
	child_guard_begin();
	if (state_wanted(state, state_len, &want_state) != 0) {
		r.error = xstrdup("invalid state on stdin");
		r.status = 2;
		goto out;
	}
	if (find_tap(&r) != 0 ||
	    ((opt->source || private_dir_needed(&r, want_state)) && make_private_dir(&r) != 0))
		goto out;
	if (opt->source) {
		if (cfg->tap_config_json &&
		    write_private(r.dir, "config.json", cfg->tap_config_json,
				  strlen(cfg->tap_config_json), &r.config_path) != 0) {
			r.error = private_error("the tap's config", r.tmpdir, errno);
			err_msg("%s", r.error);
			goto out;
		}
		if (r.config_path)
			name_private(&r, r.config_path);
		source_check(&r, out_fd);
		goto out;
	}
	ready = tap_arguments(&r, state, state_len, want_state);
	if (ready < 0)
		goto out;
	if (ready == 0 && opt->check) {
		r.status = 0;
		goto out;
	}
	if (stopped_before_start(&r) || (in = start_tap(&r)) < 0)
		goto out;
	/* the pipe to pipe-sink (the driver's), when stdout is one */
	child_pipe_grow(out_fd, PIPE_WANT);
	copy_output(&r, in, out_fd);
	/*
	 * The read end goes before the wait: a tap that goes on writing (its
	 * output has nowhere to go, or it is being stopped) gets EPIPE or
	 * SIGPIPE, never blocks on a full pipe.
	 */
	close(in);
	tap_ended(&r, child_finish(&r.child));
	nothing_selected(&r);
out:
	if (child_guard_signal() != SIGPIPE && !opt->check && !opt->source) {
		if (r.wrote && !r.last_nl)
			util_write_all(out_fd, "\n", 1);
		end_line(out_fd, r.status, r.error);
	}
	status = r.status;
	run_free(&r);
	child_guard_end();
	return status;
}
