/*
 * bucket_local: a directory as a bucket.  Every operation works relative to
 * a descriptor of the root (the *at() calls), so a later chdir() cannot
 * redirect it.  Durability follows git and zstd: write a temp file, fsync,
 * rename or link, fsync the directory.  The directory syncs of a run of
 * moves or of deletes are gathered, each directory synced once (see struct
 * pending_dirs).  A writer's file is synced, not its name: it is staged,
 * and made durable where a move publishes it.
 */
#include "bucket.h"
#include "bucket_impl.h"
#include "err.h"
#include "layout.h"
#include "util.h"

#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/*
 * Directories whose fsync is put off (keys relative to the root, "." for
 * it).  A run of operations of one kind — moves (a commit's publishing),
 * deletes — needs no order among its members, only that all of them are
 * durable before an operation of another kind starts: so each directory
 * they change is synced once, when the run ends (flush()), not once per
 * file.  A move puts its target's folder in grown (the folders it makes are
 * synced at once; its source's folder, in staging, is not synced at all:
 * see local_move()); a delete its folder in shrunk.  A flush syncs grown in
 * the order the folders came, then shrunk.
 */
struct pending_dirs {
	char **grown, **shrunk;
	size_t ngrown, nshrunk, capgrown, capshrunk;
	int kind;	/* BATCH_*: what the run is made of */
};

enum { BATCH_NONE, BATCH_MOVE, BATCH_DELETE, BATCH_WRITE };

struct local_bucket {
	struct bucket base;
	int fd;		/* the root directory; -1 until it exists */
	char *root;	/* for messages: the directory as given, no trailing '/' */
	char *make;	/* while fd is -1: the directory to create, absolute */
	struct pending_dirs later;
	/* From closes_begin to closes_end: files closed, their fsync to come. */
	int deferring;
	struct local_writer **closed;
	size_t nclosed, capclosed;
};

struct local_writer {
	struct bucket_writer base;
	int fd;
	int failed;
	char *path;	/* for messages */
	off_t written, flushing;	/* bytes written; writeback started up to */
};

/*
 * Writeback is started as a file grows, a step at a time, so that the
 * fsync of its close waits for its last bytes, not for the whole file.
 */
enum { WRITEBACK_STEP = 1 << 20 };

/*
 * A create may race with another process pruning the directories it needs
 * (prune_parents(): a folder is empty from its mkdir until the entry lands
 * in it).  Each loss is one prune of another process, so a bound this high
 * is never reached but by a directory removed on purpose, again and again.
 */
enum { MKDIR_TRIES = 100 };

static struct local_bucket *lb(struct bucket *b)
{
	return (struct local_bucket *)b;
}

static char *path_of(const struct local_bucket *l, const char *key)
{
	return xasprintf("%s/%s", l->root, key);
}


/* The directory part of key ("." when none), newly allocated. */
static char *dir_of(const char *key)
{
	const char *slash = strrchr(key, '/');

	return slash ? xstrndup(key, (size_t)(slash - key)) : xstrdup(".");
}

static const char *base_of(const char *key)
{
	const char *slash = strrchr(key, '/');

	return slash ? slash + 1 : key;
}

static int open_dir(int at, const char *dir)
{
	return openat(at, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* fsync a directory; filesystems that cannot (EINVAL) are not an error. */
static int sync_dir_fd(int fd)
{
	if (fsync(fd) < 0 && errno != EINVAL && errno != EROFS)
		return -1;
	return 0;
}

static int dirs_have(char *const *v, size_t n, const char *dir)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (strcmp(v[i], dir) == 0)
			return 1;
	}
	return 0;
}

static void dirs_add(char ***v, size_t *n, size_t *cap, const char *dir)
{
	if (dirs_have(*v, *n, dir))
		return;
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = xstrdup(dir);
}

/* Directory dir's syncs put off until the run of its kind ends. */
static void grown_later(struct local_bucket *l, const char *dir)
{
	dirs_add(&l->later.grown, &l->later.ngrown, &l->later.capgrown, dir);
}

static void shrunk_later(struct local_bucket *l, const char *dir)
{
	dirs_add(&l->later.shrunk, &l->later.nshrunk, &l->later.capshrunk, dir);
}

/*
 * fsync dir, or when it is no more (pruned once empty: a file was just
 * removed from it), the nearest folder above it that is, so that its
 * removal, and with it what it held, is durable; unless that folder is in
 * done (synced already by this flush), where it goes otherwise.  Reports
 * its own error.
 */
static int sync_dir_or_above(struct local_bucket *l, const char *dir, char ***done, size_t *ndone,
			     size_t *capdone)
{
	char *d = xstrdup(dir), *slash;
	int fd, r = 0;

	for (;;) {
		fd = open_dir(l->fd, d);
		if (fd >= 0 || errno != ENOENT || strcmp(d, ".") == 0)
			break;
		slash = strrchr(d, '/');
		if (slash)
			*slash = '\0';
		else
			strcpy(d, ".");
	}
	if (fd >= 0 && dirs_have(*done, *ndone, d)) {
		close(fd);
		free(d);
		return 0;
	}
	if (fd >= 0)
		dirs_add(done, ndone, capdone, d);
	if (fd < 0 || sync_dir_fd(fd) < 0) {
		char *p = strcmp(d, ".") ? path_of(l, d) : xstrdup(l->root);

		err_msg("cannot sync directory '%s':", p);
		free(p);
		r = -1;
	}
	if (fd >= 0)
		close(fd);
	free(d);
	return r;
}

/*
 * Sync every directory put off, grown ones first (in order), then shrunk
 * ones; 0, or -1 at the first that fails (reported; the rest are dropped:
 * the operation that asked fails).
 */
static int flush(struct local_bucket *l)
{
	struct pending_dirs *p = &l->later;
	char **done = NULL;
	size_t i, ndone = 0, capdone = 0;
	int r = 0;

	for (i = 0; i < p->ngrown; i++) {
		if (r == 0)
			r = sync_dir_or_above(l, p->grown[i], &done, &ndone, &capdone);
		free(p->grown[i]);
	}
	/* (a folder is synced again when it lost a file after it gained
	 * one: done starts anew) */
	for (i = 0; i < ndone; i++)
		free(done[i]);
	ndone = 0;
	for (i = 0; i < p->nshrunk; i++) {
		if (r == 0)
			r = sync_dir_or_above(l, p->shrunk[i], &done, &ndone, &capdone);
		free(p->shrunk[i]);
	}
	for (i = 0; i < ndone; i++)
		free(done[i]);
	free(done);
	p->ngrown = p->nshrunk = 0;
	p->kind = BATCH_NONE;
	return r;
}

/* An operation of kind starts: the run of another kind ends (flush()). */
static int batch(struct local_bucket *l, int kind)
{
	if (l->later.kind != BATCH_NONE && l->later.kind != kind && flush(l) < 0)
		return -1;
	l->later.kind = kind;
	return 0;
}

/*
 * Create the directories leading to key.  With sync, a directory made here
 * is fsynced into its parent so that what is renamed into it survives a
 * crash (without, a writer's staging folders, nothing is synced: see
 * local_writer_open()).  When a parent vanishes on the way down (another
 * process pruned it while it was empty, as it may be between its mkdir and
 * ours), the walk starts again from the top.  Reports its own error.
 */
static int mkdir_parents(struct local_bucket *l, const char *key, int sync)
{
	char *dir = xstrdup(key);
	char *p;
	int r = 0, tries = 0;

again:
	for (p = strchr(dir, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdirat(l->fd, dir, 0777) == 0) {
			char *parent = dir_of(dir);
			int pfd = -1;

			if (!sync) {
				free(parent);
				*p = '/';
				continue;
			}
			pfd = open_dir(l->fd, parent);
			/* the parent gone: so is the empty folder just made in it */
			if (pfd < 0 && errno == ENOENT && ++tries < MKDIR_TRIES) {
				free(parent);
				*p = '/';
				goto again;
			}
			if (pfd < 0 || sync_dir_fd(pfd) < 0) {
				char *path = path_of(l, dir);

				err_msg("cannot sync directory '%s':", path);
				free(path);
				r = -1;
			}
			if (pfd >= 0)
				close(pfd);
			free(parent);
			if (r < 0)
				break;
		} else if (errno == ENOENT && ++tries < MKDIR_TRIES) {
			*p = '/';
			goto again;
		} else if (errno != EEXIST) {
			char *path = path_of(l, dir);

			err_msg("cannot create directory '%s':", path);
			free(path);
			r = -1;
			break;
		}
		*p = '/';
	}
	free(dir);
	return r;
}

/*
 * How many leading bytes of key name folders that prune_parents() keeps:
 * those shared by pipelines, which other processes create and fill at any
 * time.  They are
 * - .dataspoc and its areas (.dataspoc/staging, state, logs, probe, ...):
 *   every run of every pipeline works in them; and a pipeline's staging
 *   folder (.dataspoc/staging/P), which every run of it stages in: kept,
 *   so that no run makes and removes it again (issue #14: a folder
 *   removed frees and, on a filesystem mounted with discard, discards its
 *   block, about 0.4 ms of wall on this project's machine).  (Not
 *   .dataspoc/state/P/pending: kept, the removal of a run's pending plan
 *   would need a sync of its own, where the folder's removal shares the
 *   run lock's, in state/P);
 * - the base folders of a data file in the bucket layout
 *   ([PATH/]SOURCE/TABLE/dt=DAY/FILE): PATH and PATH/SOURCE, where the
 *   tables of every pipeline of a tap meet.
 * A table folder and its dt= folders are shared only by pipelines landing
 * in one table; they go when empty, and whoever makes them again retries
 * (mkdir_parents() and its callers).
 */
static size_t prune_floor(const char *key)
{
	static const char meta[] = ".dataspoc/";
	const char *slash = strrchr(key, '/'), *p;

	if (strncmp(key, meta, sizeof(meta) - 1) == 0) {
		static const char staging[] = ".dataspoc/staging/";
		const char *q;

		p = strchr(key + sizeof(meta) - 1, '/');
		if (p == NULL)
			return sizeof(meta) - 2;
		/* .dataspoc/staging/P/... */
		if (strncmp(key, staging, sizeof(staging) - 1) == 0 && (q = strchr(p + 1, '/')) != NULL)
			return (size_t)(q - key);
		return (size_t)(p - key);
	}
	if (slash == NULL)
		return 0;
	/* the parent, a dt= folder (or partition_by's K=V); p: the slash before it */
	for (p = slash; p > key && p[-1] != '/'; p--)
		;
	if (p == key || !layout_hive_folder(p, (size_t)(slash - p)))
		return 0;
	/* the table folder above it; the folder above that stays */
	for (p--; p > key && p[-1] != '/'; p--)
		;
	return p == key ? 0 : (size_t)(p - 1 - key);
}

/*
 * Remove the directories above key that are empty, deepest first, up to
 * but not including the root and the folders shared by pipelines
 * (prune_floor()).  Best effort: the first directory that cannot go (not
 * empty, busy, no permission) ends it quietly.
 */
static void prune_parents(struct local_bucket *l, const char *key)
{
	char *dir = xstrdup(key);
	size_t floor = prune_floor(key);
	char *slash;

	while ((slash = strrchr(dir, '/')) != NULL && (size_t)(slash - dir) > floor) {
		*slash = '\0';
		if (unlinkat(l->fd, dir, AT_REMOVEDIR) < 0 && errno != ENOENT)
			break;
	}
	free(dir);
}

static int mkdir_p(const char *dir);

/*
 * Open the bucket's directory if it was missing when the bucket was
 * opened: readers see an empty bucket and leave no directory behind; the
 * first writer (create != 0) makes it.  1 open, 0 still missing (readers
 * only), -1 error (reported).
 */
static int have_root(struct local_bucket *l, int create)
{
	if (l->fd >= 0)
		return 1;
	l->fd = open_dir(AT_FDCWD, l->make);
	if (l->fd < 0 && errno == ENOENT && create) {
		if (mkdir_p(l->make) < 0)
			return -1;
		l->fd = open_dir(AT_FDCWD, l->make);
	}
	if (l->fd >= 0)
		return 1;
	if (errno == ENOENT && !create)
		return 0;
	err_msg("cannot open bucket directory '%s':", l->root);
	return -1;
}

static int local_get(struct bucket *b, const char *key, struct sb *out)
{
	struct local_bucket *l = lb(b);
	struct stat st;
	char *path = NULL;
	size_t keep = out->len;
	int fd, r = -1;
	int have = have_root(l, 0);

	if (have <= 0)
		return have < 0 ? -1 : 1;

	fd = openat(l->fd, key, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 1;
		path = path_of(l, key);
		err_msg("cannot open '%s':", path);
		goto out;
	}
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		sb_grow(out, (size_t)st.st_size);
	for (;;) {
		ssize_t n;

		sb_grow(out, 65536);
		out->buf[out->len] = '\0';
		n = read(fd, out->buf + out->len, out->cap - out->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			path = path_of(l, key);
			err_msg("cannot read '%s':", path);
			/* Leave out as it was. */
			out->len = keep;
			out->buf[keep] = '\0';
			goto out;
		}
		if (n == 0)
			break;
		out->len += (size_t)n;
		out->buf[out->len] = '\0';
	}
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	free(path);
	return r;
}

/* ".<base>.tmp-<pid>-<random>": skipped by local_list(). */
static char *temp_name(const char *base)
{
	uint64_t rnd;
	size_t blen = strlen(base);

	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32) ^ (uint64_t)(uintptr_t)&rnd;
	/* Keep the name within NAME_MAX however long base is. */
	if (blen > 128)
		blen = 128;
	return xasprintf(".%.*s.tmp-%ld-%016llx", (int)blen, base, (long)getpid(),
			 (unsigned long long)rnd);
}

/*
 * Write data to a new temp file next to key, fsynced (unless !sync) and
 * closed.  Returns the open directory's descriptor (into *dfd) and the temp
 * name, or NULL after reporting the error (nothing left behind).
 */
static char *write_temp(struct local_bucket *l, const char *key,
			const void *data, size_t len, int sync, int *dfd)
{
	char *dir = dir_of(key), *tmp = NULL, *path = NULL;
	int fd = -1, tries;

	*dfd = -1;
	for (tries = 0;; tries++) {
		int names;

		if (mkdir_parents(l, key, 1) < 0)
			goto fail;
		*dfd = open_dir(l->fd, dir);
		if (*dfd < 0) {
			if (errno == ENOENT && tries + 1 < MKDIR_TRIES)
				continue;
			path = strcmp(dir, ".") ? path_of(l, dir) : xstrdup(l->root);
			err_msg("cannot open directory '%s':", path);
			goto fail;
		}
		for (names = 0; names < 10; names++) {
			free(tmp);
			tmp = temp_name(base_of(key));
			fd = openat(*dfd, tmp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
			if (fd >= 0 || errno != EEXIST)
				break;
		}
		if (fd >= 0)
			break;	/* the temp file keeps the directory from pruning */
		/* pruned between its open and the create: make it again */
		if (errno == ENOENT && tries + 1 < MKDIR_TRIES) {
			close(*dfd);
			*dfd = -1;
			continue;
		}
		path = path_of(l, key);
		err_msg("cannot create a temporary file for '%s':", path);
		goto fail;
	}
	if (util_write_all(fd, data, len) < 0 || (sync && fsync(fd) < 0)) {
		int e = errno;

		close(fd);
		fd = -1;
		errno = e;
		goto write_fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		goto write_fail;
	}
	free(dir);
	return tmp;

write_fail:
	path = path_of(l, key);
	err_msg("cannot write '%s':", path);
	unlinkat(*dfd, tmp, 0);
fail:
	if (fd >= 0)
		close(fd);
	if (*dfd >= 0)
		close(*dfd);
	*dfd = -1;
	free(tmp);
	free(path);
	free(dir);
	return NULL;
}

static int local_put(struct bucket *b, const char *key, const void *data, size_t len)
{
	struct local_bucket *l = lb(b);
	char *tmp, *path = NULL;
	int dfd, r = -1;

	if (have_root(l, 1) < 0 || flush(l) < 0)
		return -1;

	tmp = write_temp(l, key, data, len, 1, &dfd);
	if (tmp == NULL)
		return -1;
	if (renameat(dfd, tmp, dfd, base_of(key)) < 0) {
		path = path_of(l, key);
		err_msg("cannot rename a temporary file to '%s':", path);
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	if (sync_dir_fd(dfd) < 0) {
		path = path_of(l, key);
		err_msg("cannot sync the directory of '%s':", path);
		goto out;
	}
	r = 0;
out:
	close(dfd);
	free(tmp);
	free(path);
	return r;
}

/* Create key if absent; its bytes synced before the link when sync. */
static int put_new(struct local_bucket *l, const char *key, const void *data, size_t len, int sync)
{
	char *tmp, *path = NULL;
	int dfd, r = -1, e;

	if (have_root(l, 1) < 0 || flush(l) < 0)
		return -1;

	tmp = write_temp(l, key, data, len, sync, &dfd);
	if (tmp == NULL)
		return -1;
	if (linkat(dfd, tmp, dfd, base_of(key), 0) == 0) {
		r = 0;
	} else if (errno == EEXIST) {
		r = 1;
	} else if (errno == EPERM || errno == EOPNOTSUPP || errno == ENOSYS) {
		/* No hard links here (some FUSE and FAT mounts): same promise. */
		if (renameat2(dfd, tmp, dfd, base_of(key), RENAME_NOREPLACE) == 0)
			r = 0;
		else if (errno == EEXIST)
			r = 1;
	}
	e = errno;
	unlinkat(dfd, tmp, 0);
	errno = e;
	if (r < 0) {
		path = path_of(l, key);
		err_msg("cannot create '%s':", path);
		goto out;
	}
	/*
	 * No directory sync: create-if-absent makes locks (the run's, the
	 * manifest's) and validate's probe, whose name needs to outlive no
	 * crash.  link(2) is atomic without one, so two live rivals still
	 * never both win, and with sync the content was synced before the
	 * link, so a name that survives has its bytes: a crash leaves the lock
	 * whole or absent (without, the run lock's, also empty).  Absent is
	 * the better, as the crash killed its holder: one that survives names
	 * a boot of this machine that is over, and waits out its TTL (DESIGN.md,
	 * Durability on a local bucket).
	 */
out:
	close(dfd);
	free(tmp);
	free(path);
	return r;
}

static int local_put_new(struct bucket *b, const char *key, const void *data, size_t len)
{
	return put_new(lb(b), key, data, len, 1);
}

/*
 * A lock (the run lock, the manifest lock): not even its bytes are synced.
 * After a crash it is absent, whole or empty (or its block zeros): whole
 * names a boot that is over and waits out its TTL (hours for a run's, 120 s
 * for the manifest's), or 'pipe-state unlock'; empty is taken over at once,
 * as no live holder's lock is ever seen so here (lock.c, DESIGN.md,
 * Durability on a local bucket).  Unsynced, a lock removed within moments
 * never had blocks, which spares the filesystem freeing (and, mounted with
 * discard, discarding) them.
 */
static int local_put_new_lock(struct bucket *b, const char *key, const void *data, size_t len)
{
	return put_new(lb(b), key, data, len, 0);
}

/* Delete key; with sync, its folder is synced when the run of deletes ends. */
static int remove_key(struct local_bucket *l, const char *key, int sync)
{
	char *path, *dir;
	int have = have_root(l, 0);

	if (have <= 0)
		return have;

	if (sync && batch(l, BATCH_DELETE) < 0)
		return -1;
	if (unlinkat(l->fd, key, 0) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		path = path_of(l, key);
		err_msg("cannot delete '%s':", path);
		free(path);
		return -1;
	}
	if (sync) {
		dir = dir_of(key);
		shrunk_later(l, dir);
		free(dir);
	}
	prune_parents(l, key);
	return 0;
}

static int local_delete(struct bucket *b, const char *key)
{
	return remove_key(lb(b), key, 1);
}

/*
 * A lock held for moments: its removal is not synced, as its creation is
 * not (local_put_new()); one back after a crash is waited out.
 */
static int local_delete_lock(struct bucket *b, const char *key)
{
	return remove_key(lb(b), key, 0);
}

static int local_move(struct bucket *b, const char *from, const char *to)
{
	struct local_bucket *l = lb(b);
	struct stat st;
	char *pf, *pt, *df = NULL, *dt = NULL;
	int tries, r = -1;
	int have = have_root(l, 0);

	if (have <= 0)
		return have < 0 ? -1 : 1;

	if (strcmp(from, to) == 0) {
		if (fstatat(l->fd, from, &st, AT_SYMLINK_NOFOLLOW) == 0)
			return 0;
		if (errno == ENOENT || errno == ENOTDIR)
			return 1;
		goto fail;
	}
	if (batch(l, BATCH_MOVE) < 0)
		return -1;
	df = dir_of(from);
	dt = dir_of(to);
	/* the source's folder an earlier target: its sync would make this
	 * file's leaving durable before its arrival */
	if (dirs_have(l->later.grown, l->later.ngrown, df) && flush(l) < 0) {
		free(df);
		free(dt);
		return -1;
	}
	for (tries = 0; tries < MKDIR_TRIES; tries++) {
		/* (its folders synced at once: a later sync of a parent that
		 * is also the source's folder would make the file's leaving
		 * durable before its arrival) */
		if (mkdir_parents(l, to, 1) < 0)
			goto out;
		if (renameat(l->fd, from, l->fd, to) == 0)
			break;
		if (errno != ENOENT && errno != ENOTDIR)
			goto fail;
		/* Which side is missing: the source (fine) or the target's directory (retry)? */
		if (fstatat(l->fd, from, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno == ENOENT || errno == ENOTDIR) {
				r = 1;
				goto out;
			}
			goto fail;
		}
		errno = ENOENT;
	}
	if (tries == MKDIR_TRIES)
		goto fail;
	/*
	 * The target's folder is synced when the run of moves ends, the
	 * source's never (DESIGN.md, Durability on a local bucket): a file
	 * needs to be durable where it goes, and whether its leaving is does
	 * not matter, as a staged name back after a crash is one more name of
	 * the published file, which the retried move (same file: nothing to
	 * do) and the staging's removal take away.
	 */
	grown_later(l, dt);
	prune_parents(l, from);
	r = 0;
	goto out;
fail:
	pf = path_of(l, from);
	pt = path_of(l, to);
	err_msg("cannot move '%s' to '%s':", pf, pt);
	free(pf);
	free(pt);
out:
	free(df);
	free(dt);
	return r;
}

static int local_exists(struct bucket *b, const char *key)
{
	struct local_bucket *l = lb(b);
	struct stat st;
	char *path;
	int have = have_root(l, 0);

	if (have <= 0)
		return have;

	if (fstatat(l->fd, key, &st, 0) == 0)
		return S_ISDIR(st.st_mode) ? 0 : 1;
	if (errno == ENOENT || errno == ENOTDIR)
		return 0;
	path = path_of(l, key);
	err_msg("cannot look at '%s':", path);
	free(path);
	return -1;
}

static int is_temp_name(const char *name)
{
	return name[0] == '.' && strstr(name, ".tmp-") != NULL;
}

/* Could a key under directory dir ("a/b/", with its '/') start with prefix? */
static int dir_matches(const char *dir, size_t dlen, const char *prefix, size_t plen)
{
	return strncmp(dir, prefix, dlen < plen ? dlen : plen) == 0;
}

/*
 * Add the files under directory rel (path->buf, "" for the root, else
 * ending in '/') whose key starts with prefix.
 */
static int walk(struct local_bucket *l, struct sb *rel, const char *prefix,
		size_t plen, struct bucket_keys *out)
{
	DIR *d = NULL;
	struct dirent *de;
	size_t keep = rel->len;
	char *path = NULL;
	int fd, r = -1;

	fd = open_dir(l->fd, rel->len ? rel->buf : ".");
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		goto fail;
	}
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		goto fail;
	}
	for (;;) {
		struct stat st;
		int isdir, isreg;

		errno = 0;
		de = readdir(d);
		if (de == NULL) {
			if (errno != 0)
				goto fail;
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    is_temp_name(de->d_name))
			continue;
		rel->len = keep;
		sb_adds(rel, de->d_name);
		isdir = de->d_type == DT_DIR;
		isreg = de->d_type == DT_REG;
		if (de->d_type == DT_UNKNOWN || de->d_type == DT_LNK) {
			/* Follow a link to a file, never one to a directory (loops). */
			if (fstatat(dirfd(d), de->d_name, &st,
				    de->d_type == DT_LNK ? 0 : AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			isdir = de->d_type != DT_LNK && S_ISDIR(st.st_mode);
			isreg = S_ISREG(st.st_mode);
		}
		if (isdir) {
			sb_addc(rel, '/');
			if (dir_matches(rel->buf, rel->len, prefix, plen) &&
			    walk(l, rel, prefix, plen, out) < 0) {
				closedir(d);
				rel->len = keep;
				rel->buf[keep] = '\0';
				return -1;
			}
		} else if (isreg && strncmp(rel->buf, prefix, plen) == 0) {
			if (bucket_key_ok(rel->buf))
				bucket_keys_add(out, rel->buf, rel->len);
			else
				bucket_keys_skip(out, rel->buf);
		}
	}
	r = 0;
	goto out;
fail:
	rel->buf[keep] = '\0';
	path = keep ? xasprintf("%s/%.*s", l->root, (int)(keep - 1), rel->buf)
		    : xstrdup(l->root);
	err_msg("cannot list '%s':", path);
out:
	if (d)
		closedir(d);
	rel->len = keep;
	if (rel->buf)
		rel->buf[keep] = '\0';
	free(path);
	return r;
}

/*
 * Is the temporary file name, of fstatat()'s st, litter: its writer (the pid
 * in its name) no longer runs here, or it is older than an hour?  A writer
 * keeps one for the milliseconds of a write, so the pid of another host
 * that happens to be free here is still spared for a few seconds.
 */
static int stale_temp(const char *name, const struct stat *st, time_t now)
{
	const char *p = strstr(name, ".tmp-");
	char *end;
	long pid;

	if (now - st->st_mtime > 3600)
		return 1;
	if (p == NULL || now - st->st_mtime < 5)
		return 0;
	pid = strtol(p + 5, &end, 10);
	return end != p + 5 && *end == '-' && pid > 0 && kill((pid_t)pid, 0) < 0 &&
	       errno == ESRCH;
}

static int local_sweep(struct bucket *b, const char *dir)
{
	struct local_bucket *l = lb(b);
	struct dirent *de;
	time_t now = time(NULL);
	DIR *d;
	int fd, n = 0, have = have_root(l, 0);

	if (have <= 0)
		return have;
	fd = open_dir(l->fd, dir);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	d = fdopendir(fd);
	if (d == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;

		if (is_temp_name(de->d_name) &&
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && stale_temp(de->d_name, &st, now) &&
		    unlinkat(dirfd(d), de->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static int local_list(struct bucket *b, const char *prefix, struct bucket_keys *out)
{
	struct sb rel = SB_INIT;
	const char *slash = strrchr(prefix, '/');
	int r;

	/* Start at the deepest directory the prefix names. */
	if (slash)
		sb_add(&rel, prefix, (size_t)(slash - prefix) + 1);
	else
		sb_adds(&rel, "");
	r = have_root(lb(b), 0);
	if (r > 0)
		r = walk(lb(b), &rel, prefix, strlen(prefix), out);
	sb_free(&rel);
	return r;
}

static struct bucket_writer *local_writer_open(struct bucket *b, const char *key)
{
	struct local_bucket *l = lb(b);
	struct local_writer *w;
	char *path;
	int fd = -1, tries;

	if (have_root(l, 1) < 0 || batch(l, BATCH_WRITE) < 0)
		return NULL;

	/*
	 * Neither the folders made for it nor its name are synced, only its
	 * bytes (by the close): a writer writes a staged file, whose name
	 * needs to outlive a crash only where a move publishes it, and that
	 * move's target folder is synced (DESIGN.md, Durability on a local
	 * bucket).
	 */
	for (tries = 0; tries < MKDIR_TRIES; tries++) {
		if (mkdir_parents(l, key, 0) < 0)
			return NULL;
		fd = openat(l->fd, key, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != ENOENT)
			break;
	}
	if (fd < 0) {
		path = path_of(l, key);
		err_msg("cannot create '%s':", path);
		free(path);
		return NULL;
	}
	w = xcalloc(1, sizeof(*w));
	w->fd = fd;
	w->path = path_of(l, key);
	return &w->base;
}

/*
 * The writeback of what w wrote since the last start begins.  Only a
 * start: nothing waits, and a failure is the close's fsync's to report.
 */
static void start_writeback(struct local_writer *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
	(void)sync_file_range(w->fd, w->flushing, w->written - w->flushing, SYNC_FILE_RANGE_WRITE);
#endif
	w->flushing = w->written;
}

static int local_writer_write(struct bucket_writer *bw, const void *data, size_t len)
{
	struct local_writer *w = (struct local_writer *)bw;

	if (w->failed)
		return -1;
	if (util_write_all(w->fd, data, len) < 0) {
		err_msg("cannot write '%s':", w->path);
		w->failed = 1;
		return -1;
	}
	w->written += (off_t)len;
	if (w->written - w->flushing >= WRITEBACK_STEP)
		start_writeback(w);
	return 0;
}

/* Close and remove the file, then its empty directories; frees w. */
static void drop(struct local_writer *w)
{
	struct local_bucket *l = lb(w->base.b);

	if (w->fd >= 0)
		close(w->fd);
	if (unlinkat(l->fd, w->base.key, 0) == 0)
		prune_parents(l, w->base.key);
	free(w->path);
	free(w);
}

/* fsync and close w's file (or remove it when that fails); frees w. */
static int sync_close(struct local_writer *w)
{
	int fd = w->fd;

	if (w->failed)
		goto fail;
	if (fsync(fd) < 0) {
		err_msg("cannot write '%s':", w->path);
		goto fail;
	}
	w->fd = -1;
	if (close(fd) < 0) {
		err_msg("cannot write '%s':", w->path);
		goto fail;
	}
	free(w->path);
	free(w);
	return 0;
fail:
	drop(w);
	return -1;
}

static int local_writer_close(struct bucket_writer *bw)
{
	struct local_writer *w = (struct local_writer *)bw;
	struct local_bucket *l = lb(w->base.b);

	if (!l->deferring || w->failed)
		return sync_close(w);
	/* the rest of the file on its way */
	start_writeback(w);
	/* (bucket.c frees the key once this returns) */
	w->base.key = xstrdup(w->base.key);
	if (l->nclosed == l->capclosed) {
		l->capclosed = l->capclosed ? 2 * l->capclosed : 16;
		l->closed = xrealloc(l->closed, l->capclosed * sizeof(*l->closed));
	}
	l->closed[l->nclosed++] = w;
	return 0;
}

static void local_closes_begin(struct bucket *b)
{
	lb(b)->deferring = 1;
}

/* Every file closed since closes_begin synced (each one's error said). */
static int local_closes_end(struct bucket *b)
{
	struct local_bucket *l = lb(b);
	size_t i;
	int r = 0;

	for (i = 0; i < l->nclosed; i++) {
		char *key = l->closed[i]->base.key;

		if (sync_close(l->closed[i]) != 0)
			r = -1;
		free(key);
	}
	l->nclosed = 0;
	l->deferring = 0;
	return r;
}

static void local_writer_abort(struct bucket_writer *bw)
{
	drop((struct local_writer *)bw);
}

static void local_free(struct bucket *b)
{
	struct local_bucket *l = lb(b);

	/* closes never ended: synced all the same (an error is said) */
	local_closes_end(b);
	free(l->closed);
	/* the end of the last run of moves or deletes (an error is said) */
	if (l->fd >= 0)
		flush(l);
	free(l->later.grown);
	free(l->later.shrunk);
	if (l->fd >= 0)
		close(l->fd);
	free(l->root);
	free(l->make);
	free(l);
}

static const struct bucket_ops local_ops = {
	.name = "local",
	.creates_whole = 1,
	.free = local_free,
	.get = local_get,
	.put = local_put,
	.put_new = local_put_new,
	.put_new_lock = local_put_new_lock,
	.del = local_delete,
	.del_lock = local_delete_lock,
	.move = local_move,
	.exists = local_exists,
	.list = local_list,
	.sweep = local_sweep,
	.writer_open = local_writer_open,
	.writer_write = local_writer_write,
	.writer_close = local_writer_close,
	.writer_abort = local_writer_abort,
	.closes_begin = local_closes_begin,
	.closes_end = local_closes_end,
};

/* mkdir -p dir (absolute or relative to the working directory). */
static int mkdir_p(const char *dir)
{
	char *p, *d = xstrdup(dir);
	int r = 0;

	for (p = d + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(d, 0777) < 0 && errno != EEXIST) {
				err_msg("cannot create bucket directory '%s':", d);
				r = -1;
				break;
			}
			*p = c;
			if (c == '\0')
				break;
			while (p[1] == '/')
				p++;
		}
	}
	free(d);
	return r;
}

struct bucket *local_bucket_open(const char *dir)
{
	struct local_bucket *l;
	struct stat st;
	size_t len = strlen(dir);
	int fd;

	if (len == 0) {
		err_msg("no bucket directory given");
		return NULL;
	}
	/* A missing directory is made by the first write (have_root()). */
	fd = open_dir(AT_FDCWD, dir);
	if (fd < 0 && errno != ENOENT) {
		if (errno == ENOTDIR && stat(dir, &st) == 0 && !S_ISDIR(st.st_mode))
			err_msg("bucket '%s' is not a directory", dir);
		else
			err_msg("cannot open bucket directory '%s':", dir);
		return NULL;
	}
	l = xcalloc(1, sizeof(*l));
	l->base.ops = &local_ops;
	l->fd = fd;
	while (len > 0 && dir[len - 1] == '/')
		len--;
	/* "/" itself: keys print as "/key". */
	l->root = xstrndup(dir, len);
	if (fd < 0) {
		/* Created later, where dir is now, whatever the working
		 * directory is then. */
		char *cwd = dir[0] == '/' ? NULL : getcwd(NULL, 0);

		if (dir[0] != '/' && cwd == NULL) {
			err_msg("cannot open bucket directory '%s': cannot tell the working directory:", dir);
			free(l->root);
			free(l);
			return NULL;
		}
		l->make = cwd ? xasprintf("%s/%s", cwd, l->root) : xstrdup(dir);
		free(cwd);
	}
	return &l->base;
}
