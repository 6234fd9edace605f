/* lock: the run lock kept in the bucket (see lock.h). */
#include "lock.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jv.h>

#include "err.h"
#include "json.h"
#include "jvx.h"
#include "layout.h"
#include "util.h"

/* Seconds a lock may read as garbage before it is reported. */
#define LOCK_UNREADABLE_GRACE 2.0
/* The longest renewal interval believed when confirming an expiry. */
#define LOCK_RENEW_MAX 600
/*
 * How far ahead another machine's clock may be believed: a lock claiming to
 * last longer than the longest lease granted (the run lock's TTL, or the
 * lease being asked for) plus this is not believed (a clock years ahead,
 * a lock written by hand): it is judged as an expired one.
 */
#define LOCK_SKEW_MAX 3600

struct holder {
	char run_id[64];
	char host[256];
	char host_id[128];
	char run_dir[4096];
	long pid;
	long long pid_start;		/* -1: not recorded */
	long renew_every;		/* 0: never renewed (an older writer) */
	char started[32];
	char expires[32];
	time_t expires_at;
};

static void copy_field(jv obj, const char *name, char *dst, size_t size)
{
	jv v = jv_object_get(jv_copy(obj), jv_string(name));

	dst[0] = '\0';
	if (jv_get_kind(v) == JV_KIND_STRING) {
		strncpy(dst, jv_string_value(v), size - 1);
		dst[size - 1] = '\0';
	}
	jv_free(v);
}

/*
 * A lock document is one line (json_quote() escapes every newline).  Two
 * rivals writing one key of a store whose writes are not atomic (s3rver
 * truncates, then writes, each in its own request) can leave the shorter
 * document followed by the tail of the longer: the first line is the
 * document that was written last, whole.
 */
static int parse_holder_jv(const char *buf, size_t len, struct holder *h)
{
	jv obj = jv_parse_sized(buf, (int)len);
	double every;

	memset(h, 0, sizeof(*h));
	if (jv_get_kind(obj) != JV_KIND_OBJECT) {
		jv_free(obj);
		return -1;
	}
	copy_field(obj, "run_id", h->run_id, sizeof(h->run_id));
	copy_field(obj, "host", h->host, sizeof(h->host));
	copy_field(obj, "host_id", h->host_id, sizeof(h->host_id));
	copy_field(obj, "run_dir", h->run_dir, sizeof(h->run_dir));
	copy_field(obj, "started_at", h->started, sizeof(h->started));
	copy_field(obj, "expires_at", h->expires, sizeof(h->expires));
	h->pid = (long)jvx_number(obj, "pid", 0);
	h->pid_start = (long long)jvx_number(obj, "pid_start", -1);
	every = jvx_number(obj, "renew_every", 0);
	h->renew_every = every < 0 ? 0 : every > LOCK_RENEW_MAX ? LOCK_RENEW_MAX : (long)every;
	jv_free(obj);
	h->expires_at = util_parse_iso_time(h->expires);
	return h->run_id[0] && h->expires_at != -1 ? 0 : -1;
}

/*
 * The last line parsed by this thread, and what it gave: a commit reads the
 * run lock before each of its steps (the fence), and libjq's parser costs
 * about 80,000 instructions a time for the same bytes (issue #14: a third
 * of a small run's pipe-commit).  A line too long for the copy is parsed
 * every time.
 */
static _Thread_local struct {
	char line[6144];
	size_t len;	/* 0: nothing kept */
	int r;
	struct holder h;
} last;

static int parse_holder(const struct sb *text, struct holder *h)
{
	const char *buf = text->buf ? text->buf : "";
	const char *end = memchr(buf, '\n', text->len);
	size_t len = end ? (size_t)(end - buf) + 1 : text->len;

	if (last.len && len == last.len && memcmp(buf, last.line, len) == 0) {
		*h = last.h;
		return last.r;
	}
	last.r = parse_holder_jv(buf, len, h);
	last.len = 0;
	if (len > 0 && len <= sizeof(last.line)) {
		memcpy(last.line, buf, len);
		last.len = len;
		last.h = *h;
	}
	return last.r;
}

long lock_default_ttl(void)
{
	return util_env_long("DATASPOC_PIPE_LOCK_TTL", 1, 100L * 365 * 86400, 6 * 3600);
}

long lock_renew_interval(void)
{
	return util_env_long("DATASPOC_PIPE_LOCK_RENEW", 1, LOCK_RENEW_MAX, 60);
}

static double steady_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The run's folder is held by a process (flock): 1 yes, 0 no, -1 cannot tell. */
static int run_dir_held(const char *dir)
{
	int fd, r;

	if (dir[0] != '/')
		return -1;
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -1;
	r = flock(fd, LOCK_EX | LOCK_NB);
	if (r == 0)
		flock(fd, LOCK_UN);
	close(fd);
	if (r == 0)
		return 0;
	return errno == EWOULDBLOCK ? 1 : -1;
}

/* The driver's process is alive (and is the one the lock names). */
static int holder_pid_alive(const struct holder *h)
{
	return util_pid_lives(h->pid, h->pid_start);
}

enum liveness { LIVE, STAGES_LEFT, GONE, NOT_LOCAL };

/* What this machine can prove of the holder's processes. */
static enum liveness judge(const struct holder *h)
{
	int held;

	if (!h->host_id[0] || strcmp(h->host_id, util_host_id()) != 0 ||
	    strcmp(h->host, util_hostname()) != 0)
		return NOT_LOCAL;
	held = h->run_dir[0] ? run_dir_held(h->run_dir) : 0;
	if (holder_pid_alive(h))
		return LIVE;
	if (held == 1)
		return STAGES_LEFT;
	return held == 0 ? GONE : LIVE;
}

static char *renewal_key(const char *key, const char *run_id)
{
	return xasprintf("%s.%s.renewed", key, run_id);
}

typedef int delete_fn(struct bucket *b, const char *key);

/* The renewal of run_id, if any (a missing key is no error). */
static int delete_renewal(struct bucket *b, const char *key, const char *run_id, delete_fn *del)
{
	char *rkey = renewal_key(key, run_id);
	int r = del(b, rkey);

	free(rkey);
	return r;
}

/* A renewal's expiry, -1 when there is none or it is unreadable. */
static time_t renewed_until(const struct sb *text)
{
	jv obj = jv_parse_sized(text->buf ? text->buf : "", (int)text->len);
	char until[32];
	time_t t = -1;

	if (jv_get_kind(obj) == JV_KIND_OBJECT) {
		copy_field(obj, "expires_at", until, sizeof(until));
		t = util_parse_iso_time(until);
	}
	jv_free(obj);
	return t;
}

/*
 * An expired lock of another machine: its last renewal, read now and again
 * after two of its renewal intervals on this machine's steady clock (with
 * untrusted, a lease not believed: its renewal's expiry is not either, only
 * a renewal seen meanwhile is).  The lock itself is read again meanwhile,
 * so that one released (or taken by another run) is seen at once.  0
 * expired for sure, 1 renewed meanwhile (a clock is off), 2 no longer the
 * holder's lock, -1 error.
 */
static int confirm_expired(struct bucket *b, const char *key, const struct holder *h,
			   int untrusted, time_t *until)
{
	char *rkey = renewal_key(key, h->run_id);
	struct sb first = SB_INIT, later = SB_INIT;
	double deadline;
	int r, ret = 0;

	r = bucket_get(b, rkey, &first);
	if (r < 0) {
		ret = -1;
		goto out;
	}
	*until = r == 0 && !untrusted ? renewed_until(&first) : -1;
	if (*until != -1 && *until >= time(NULL))
		goto out;	/* renewed: the caller sees it is not expired */
	if (h->renew_every == 0)
		goto out;
	deadline = steady_now() + 2.0 * (double)h->renew_every + 1.0;
	while (steady_now() < deadline) {
		struct holder now;

		util_sleep_ms(h->renew_every >= 4 ? 1000 : 250);
		sb_reset(&later);
		r = bucket_get(b, key, &later);
		if (r < 0) {
			ret = -1;
			goto out;
		}
		if (r == 1 || parse_holder(&later, &now) != 0 || strcmp(now.run_id, h->run_id) != 0) {
			ret = 2;	/* released, or another's now: the caller looks again */
			break;
		}
		sb_reset(&later);
		r = bucket_get(b, rkey, &later);
		if (r < 0) {
			ret = -1;
			goto out;
		}
		if (r == 0 && (later.len != first.len || memcmp(later.buf, first.buf, first.len) != 0)) {
			ret = 1;
			break;
		}
	}
out:
	free(rkey);
	sb_free(&first);
	sb_free(&later);
	return ret;
}

/* renew_every: 0 for a lock nobody renews (its holder is one short process). */
static void lock_document(struct sb *out, const char *run_id, long pid, const char *run_dir,
			  long ttl, long renew_every)
{
	char started[32], expires[32];
	time_t now = time(NULL);
	long long start = pid > 0 ? util_pid_start(pid) : -1;

	util_iso_time(now, started, sizeof(started));
	util_iso_time(now + ttl, expires, sizeof(expires));
	sb_addf(out, "{\"run_id\": \"%s\", \"host\": ", run_id);
	json_quote(out, util_hostname(), strlen(util_hostname()));
	/* pid 0: no process holds it (a sharded run's): no host_id, judged by
	 * its expiry alone wherever it is read */
	if (pid > 0) {
		sb_adds(out, ", \"host_id\": ");
		json_quote(out, util_host_id(), strlen(util_host_id()));
	}
	sb_addf(out, ", \"pid\": %ld", pid);
	if (pid > 0 && start >= 0)
		sb_addf(out, ", \"pid_start\": %lld", start);
	if (run_dir && *run_dir) {
		sb_adds(out, ", \"run_dir\": ");
		json_quote(out, run_dir, strlen(run_dir));
	}
	sb_addf(out, ", \"renew_every\": %ld, \"started_at\": \"%s\", \"expires_at\": \"%s\"}\n",
		renew_every, started, expires);
}

/*
 * Delete the lock we judged (seen, held by run_id), not one a rival just
 * took; and that run's renewal (run_id NULL: a lock naming none).
 */
static int delete_if_same(struct bucket *b, const char *key, const struct sb *seen,
			  const char *run_id)
{
	struct sb again = SB_INIT;
	int r = bucket_get(b, key, &again);

	if (r == 0 && again.len == seen->len && memcmp(again.buf, seen->buf, seen->len) == 0) {
		r = bucket_delete(b, key);
		if (r == 0 && run_id)
			r = delete_renewal(b, key, run_id, bucket_delete);
	}
	else if (r == 1)
		r = 0;
	sb_free(&again);
	return r;
}

/*
 * Is seen, a lock that does not parse, what a crash left of one whose bytes
 * were not synced (bucket_put_new_lock())?  Only where no reader sees a
 * create in progress, and only when it holds nothing but NUL bytes: a lock
 * of another version of this program, or a person's edit, is never that.
 */
static int left_by_crash(const struct bucket *b, const struct sb *seen)
{
	if (!bucket_creates_whole(b))
		return 0;
	for (size_t i = 0; i < seen->len; i++)
		if (seen->buf[i] != '\0')
			return 0;
	return 1;
}

/*
 * A run whose lock is taken over, for its log (struct runlock's taken_over):
 * its id, and how it ended.
 */
static void note_taken_over(char **over, char **why, const struct holder *h, const char *how)
{
	if (over == NULL || !util_run_id_ok(h->run_id))
		return;
	free(*over);
	free(*why);
	*over = xstrdup(h->run_id);
	*why = xstrdup(how);
}

static int take(struct bucket *b, const char *key, const char *what, const char *unlock,
		const char *run_id, long pid, const char *run_dir, long ttl, long renew_every,
		long wait_ms, char **over, char **why)
{
	struct sb content = SB_INIT, seen = SB_INIT;
	double deadline = util_now() + (double)wait_ms / 1000.0, unreadable_since = 0;
	/* the stages of a run whose driver is gone get the tap's grace, twice */
	double stages_since = 0, stages_grace = 2.0 + 2.0 * (double)util_env_long(
		"DATASPOC_PIPE_KILL_GRACE", 0, 3600, 5);
	int ret = -1, r, tries;
	long lease_max = (ttl > lock_default_ttl() ? ttl : lock_default_ttl()) + LOCK_SKEW_MAX;

	lock_document(&content, run_id, pid, run_dir, ttl, renew_every);
	for (tries = 0; tries < 100000; tries++) {
		struct holder h;
		enum liveness live;
		time_t renewed = -1, expires;

		r = bucket_put_new_lock(b, key, content.buf, content.len);
		if (r == 0) {
			ret = 0;
			goto out;
		}
		if (r < 0)
			goto out;
		sb_reset(&seen);
		r = bucket_get(b, key, &seen);
		if (r < 0)
			goto out;
		if (r == 1)
			continue;	/* released meanwhile */
		if (parse_holder(&seen, &h) != 0) {
			if (left_by_crash(b, &seen)) {
				err_warn("%s: taking over the lock '%s' in %s, which a crash left empty",
					 what, key, bucket_url(b));
				if (delete_if_same(b, key, &seen, NULL) != 0)
					goto out;
				continue;
			}
			/*
			 * Stores whose writes are not atomic (s3rver, some
			 * FUSE mounts) show a lock being written empty or cut
			 * short: only one that stays unreadable is an error.
			 */
			if (unreadable_since == 0)
				unreadable_since = util_now();
			if (util_now() - unreadable_since < LOCK_UNREADABLE_GRACE) {
				util_sleep_ms(20 + (tries % 5) * 10);
				continue;
			}
			if (unlock)
				err_msg("%s: the lock '%s' in %s is unreadable; if no run is going on, remove it with '%s'",
					what, key, bucket_url(b), unlock);
			else
				err_msg("%s: the lock '%s' in %s is unreadable", what, key, bucket_url(b));
			goto out;
		}
		unreadable_since = 0;
		if (strcmp(h.run_id, run_id) == 0) {
			ret = 0;
			goto out;
		}
		live = judge(&h);
		if (live == GONE) {
			err_warn("%s: taking over the lock of run %s (pid %ld on %s), which is no longer running",
				 what, h.run_id, h.pid, h.host);
			if (delete_if_same(b, key, &seen, h.run_id) != 0)
				goto out;
			note_taken_over(over, why, &h, "killed: no process of it was left");
			continue;
		}
		if (live == STAGES_LEFT) {
			/* its driver is gone; its stages are going down with it */
			if (stages_since == 0)
				stages_since = util_now();
			if (util_now() - stages_since < stages_grace) {
				util_sleep_ms(100);
				continue;
			}
			err_msg("%s is locked by run %s: its driver (pid %ld on %s) is gone, but processes of that run still hold %s; stop them, or wait for them to end",
				what, h.run_id, h.pid, h.host, h.run_dir);
			ret = 1;
			goto out;
		}
		expires = h.expires_at;
		if (live == NOT_LOCAL && expires - time(NULL) > lease_max) {
			/* a lease longer than any granted: a clock years ahead, a hand's edit */
			r = confirm_expired(b, key, &h, 1, &renewed);
			if (r < 0)
				goto out;
			if (r == 2)
				continue;
			if (r == 1) {
				err_msg("%s is locked by run %s (pid %ld on %s), which claims it until %s and renewed it just now: check the clocks of both machines",
					what, h.run_id, h.pid, h.host, h.expires);
				ret = 1;
				goto out;
			}
			err_warn("%s: taking over the lock of run %s (pid %ld on %s), which claims it until %s, longer than any lease granted (%ld s): a clock far ahead, or a lock written by hand",
				 what, h.run_id, h.pid, h.host, h.expires, lease_max);
			if (delete_if_same(b, key, &seen, h.run_id) != 0)
				goto out;
			continue;
		}
		if (live == NOT_LOCAL && time(NULL) > expires) {
			r = confirm_expired(b, key, &h, 0, &renewed);
			if (r < 0)
				goto out;
			if (r == 2)
				continue;	/* released meanwhile: take it, nothing to take over */
			if (renewed > expires)
				expires = renewed;
			if (r == 1) {
				err_msg("%s is locked by run %s (pid %ld on %s), which renewed it just now although it expired at %s by this machine's clock: check the clocks of both machines",
					what, h.run_id, h.pid, h.host, h.expires);
				ret = 1;
				goto out;
			}
			if (time(NULL) > expires) {
				err_warn("%s: taking over the lock of run %s (pid %ld on %s), which expired at %s",
					 what, h.run_id, h.pid, h.host, h.expires);
				if (delete_if_same(b, key, &seen, h.run_id) != 0)
					goto out;
				note_taken_over(over, why, &h, "killed or cut off: its lock expired");
				continue;
			}
		}
		if (util_now() < deadline) {
			util_sleep_ms(20 + (tries % 5) * 10);
			continue;
		}
		if (unlock)
			err_msg("%s is locked by run %s (pid %ld on %s, since %s, until %s); if that run is gone, use '%s'",
				what, h.run_id, h.pid, h.host, h.started, h.expires, unlock);
		else
			err_msg("%s is locked by run %s (pid %ld on %s, since %s, until %s)",
				what, h.run_id, h.pid, h.host, h.started, h.expires);
		ret = 1;
		goto out;
	}
	err_msg("%s: could not take the lock '%s'", what, key);
out:
	sb_free(&content);
	sb_free(&seen);
	return ret;
}

/* A run's lock is renewed while it runs (lock.h). */
int lock_take_run(struct bucket *b, const char *key, const char *what, const char *unlock,
		  const char *run_id, long pid, const char *run_dir, long ttl, long wait_ms)
{
	return take(b, key, what, unlock, run_id, pid, run_dir, ttl, lock_renew_interval(),
		    wait_ms, NULL, NULL);
}

/* One process's lock (the manifest's, pipe-state set's) is never renewed. */
int lock_take(struct bucket *b, const char *key, const char *what, const char *unlock,
	      const char *run_id, long pid, long ttl, long wait_ms)
{
	return take(b, key, what, unlock, run_id, pid, NULL, ttl, 0, wait_ms, NULL, NULL);
}

char *lock_run_id(const struct sb *text)
{
	struct holder h;

	return parse_holder(text, &h) == 0 && util_run_id_ok(h.run_id) ? xstrdup(h.run_id) : NULL;
}

/* The holder of the lock at key: 0, 1 when there is none, -1 error or unreadable. */
static int read_holder(struct bucket *b, const char *key, struct holder *h)
{
	struct sb seen = SB_INIT;
	int r = bucket_get(b, key, &seen);

	if (r == 0 && parse_holder(&seen, h) != 0)
		r = -1;
	sb_free(&seen);
	return r;
}

int lock_held_by(struct bucket *b, const char *key, const char *run_id)
{
	struct holder h;
	int r = read_holder(b, key, &h);

	if (r == 0)
		return strcmp(h.run_id, run_id) == 0;
	return r == 1 ? 0 : r;
}

int lock_check(struct bucket *b, const char *key, const char *what, const char *run_id,
	       const char *step)
{
	struct holder h;
	int r = read_holder(b, key, &h);

	if (r == 0 && strcmp(h.run_id, run_id) == 0)
		return 0;
	if (r == 0)
		err_msg("%s: run %s no longer holds the lock (now run %s's, pid %ld on %s): stopping before %s",
			what, run_id, h.run_id, h.pid, h.host, step);
	else if (r == 1)
		err_msg("%s: run %s no longer holds the lock (no run does): stopping before %s",
			what, run_id, step);
	else
		err_msg("%s: cannot tell whether run %s still holds the lock: stopping before %s",
			what, run_id, step);
	return -1;
}

int lock_renew(struct bucket *b, const char *key, const char *run_id, long ttl)
{
	char *rkey;
	char now[32], until[32];
	struct sb text = SB_INIT;
	time_t t;
	int r = lock_held_by(b, key, run_id);

	if (r != 1)
		return r == 0 ? 1 : -1;
	t = time(NULL);
	util_iso_time(t, now, sizeof(now));
	util_iso_time(t + ttl, until, sizeof(until));
	/* the steady clock's reading makes every renewal differ from the last */
	sb_addf(&text, "{\"run_id\": \"%s\", \"renewed_at\": \"%s\", \"expires_at\": \"%s\", \"beat\": %.3f}\n",
		run_id, now, until, steady_now());
	rkey = renewal_key(key, run_id);
	r = bucket_put(b, rkey, text.buf, text.len);
	free(rkey);
	sb_free(&text);
	return r == 0 ? 0 : -1;
}

static int release(struct bucket *b, const char *key, const char *run_id, delete_fn *del)
{
	struct holder h;
	int r = read_holder(b, key, &h);

	if (r < 0 && run_id != NULL)
		return -1;
	if (r == 0 && run_id != NULL && strcmp(h.run_id, run_id) != 0)
		return 0;	/* another's: leave it, and its renewal */
	if (r != 1 && del(b, key) != 0)
		return -1;
	if (r == 0)
		return delete_renewal(b, key, h.run_id, del);
	return run_id ? delete_renewal(b, key, run_id, del) : 0;
}

int lock_release(struct bucket *b, const char *key, const char *run_id)
{
	return release(b, key, run_id, bucket_delete);
}

int lock_release_brief(struct bucket *b, const char *key, const char *run_id)
{
	return release(b, key, run_id, bucket_delete_lock);
}

void runlock_init(struct runlock *l, struct bucket *b, const char *pipeline, const char *run_id)
{
	l->b = b;
	l->key = layout_lock_key(pipeline);
	l->what = xasprintf("pipeline '%s'", pipeline);
	l->unlock = xasprintf("pipe-state unlock %s", pipeline);
	l->run_id = run_id;
	l->taken_over = l->taken_why = NULL;
}

void runlock_free(struct runlock *l)
{
	free(l->key);
	free(l->what);
	free(l->unlock);
	free(l->taken_over);
	free(l->taken_why);
	l->key = l->what = l->unlock = l->taken_over = l->taken_why = NULL;
}

/* The driver's pid ($DATASPOC_PIPE_PID), else the parent's. */
static long owner_pid(void)
{
	return util_env_long("DATASPOC_PIPE_PID", 1, 0x7fffffffL, (long)getppid());
}

/* The driver's folder, which every process of its run holds (lock.h). */
static const char *owner_dir(void)
{
	const char *dir = getenv("DATASPOC_PIPE_RUN_DIR");

	if (getenv("DATASPOC_PIPE_PID") == NULL || dir == NULL || dir[0] != '/')
		return NULL;
	return dir;
}

int runlock_take(struct runlock *l)
{
	return take(l->b, l->key, l->what, l->unlock, l->run_id, owner_pid(), owner_dir(),
		    lock_default_ttl(), lock_renew_interval(), 0, &l->taken_over, &l->taken_why);
}

int runlock_take_detached(struct runlock *l)
{
	return take(l->b, l->key, l->what, l->unlock, l->run_id, 0, NULL, lock_default_ttl(),
		    lock_renew_interval(), 0, &l->taken_over, &l->taken_why);
}

int runlock_take_here(struct runlock *l, long ttl)
{
	return take(l->b, l->key, l->what, l->unlock, l->run_id, (long)getpid(), NULL, ttl, 0, 0,
		    &l->taken_over, &l->taken_why);
}

int runlock_held(const struct runlock *l)
{
	return lock_held_by(l->b, l->key, l->run_id);
}

int runlock_check(const struct runlock *l, const char *step)
{
	return lock_check(l->b, l->key, l->what, l->run_id, step);
}

int runlock_renew(const struct runlock *l)
{
	long ttl = lock_default_ttl(), every = lock_renew_interval();
	struct holder h;

	/*
	 * A lock of this run written within the last renewal interval expires
	 * no sooner than pipe-sink's renewals keep a lock: no renewal object
	 * is written yet (a small run's commit writes none: a put and its two
	 * fsyncs fewer, issue #14).
	 */
	if (ttl > every && read_holder(l->b, l->key, &h) == 0 && strcmp(h.run_id, l->run_id) == 0 &&
	    h.expires_at - time(NULL) >= ttl - every)
		return 0;
	return lock_renew(l->b, l->key, l->run_id, ttl);
}

int runlock_release(const struct runlock *l)
{
	return lock_release(l->b, l->key, l->run_id);
}

struct lock_keeper {
	struct bucket *b;
	char *key;
	char *what;
	char *run_id;
	long ttl, every;
	int stop, lost;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t wake;
};

static void *keeper_main(void *arg)
{
	struct lock_keeper *k = arg;
	struct timespec at;

	clock_gettime(CLOCK_MONOTONIC, &at);
	pthread_mutex_lock(&k->mu);
	while (!k->stop && !k->lost) {
		int r;

		at.tv_sec += k->every;
		while (!k->stop && pthread_cond_timedwait(&k->wake, &k->mu, &at) == 0)
			;
		if (k->stop)
			break;
		pthread_mutex_unlock(&k->mu);
		/* an error of the store is said by it and tried again next time */
		r = lock_renew(k->b, k->key, k->run_id, k->ttl);
		pthread_mutex_lock(&k->mu);
		if (r == 1) {
			k->lost = 1;
			err_warn("%s: the run lock was taken over by another run while run %s ran; it will not be committed",
				 k->what, k->run_id);
		}
	}
	pthread_mutex_unlock(&k->mu);
	return NULL;
}

static void keeper_free(struct lock_keeper *k)
{
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->mu);
	free(k->key);
	free(k->what);
	free(k->run_id);
	free(k);
}

struct lock_keeper *lock_keeper_start(struct bucket *b, const char *key, const char *what,
				      const char *run_id, long ttl)
{
	struct lock_keeper *k;
	pthread_condattr_t attr;

	if (lock_held_by(b, key, run_id) != 1)
		return NULL;
	k = xcalloc(1, sizeof(*k));
	k->b = b;
	k->key = xstrdup(key);
	k->what = xstrdup(what);
	k->run_id = xstrdup(run_id);
	k->ttl = ttl;
	k->every = lock_renew_interval();
	pthread_mutex_init(&k->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&k->wake, &attr);
	pthread_condattr_destroy(&attr);
	if (pthread_create(&k->thread, NULL, keeper_main, k) != 0) {
		err_warn("%s: cannot start renewing the run lock", what);
		keeper_free(k);
		return NULL;
	}
	return k;
}

struct lock_keeper *runlock_keep(const struct runlock *l, struct bucket *b)
{
	return lock_keeper_start(b, l->key, l->what, l->run_id, lock_default_ttl());
}

int lock_keeper_stop(struct lock_keeper *k)
{
	int lost;

	if (k == NULL)
		return 0;
	pthread_mutex_lock(&k->mu);
	k->stop = 1;
	pthread_cond_signal(&k->wake);
	pthread_mutex_unlock(&k->mu);
	pthread_join(k->thread, NULL);
	lost = k->lost;
	keeper_free(k);
	return lost;
}
