/* lock: locks kept in the bucket (see lock.h). */
#include "lock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jv.h>

#include "err.h"
#include "util.h"

/* Seconds a lock may read as garbage before it is reported. */
#define LOCK_UNREADABLE_GRACE 2.0

struct holder {
	char run_id[64];
	char host[256];
	long pid;
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

static int parse_holder(const struct sb *text, struct holder *h)
{
	jv obj = jv_parse_sized(text->buf ? text->buf : "", (int)text->len);
	jv pid;

	memset(h, 0, sizeof(*h));
	if (jv_get_kind(obj) != JV_KIND_OBJECT) {
		jv_free(obj);
		return -1;
	}
	copy_field(obj, "run_id", h->run_id, sizeof(h->run_id));
	copy_field(obj, "host", h->host, sizeof(h->host));
	copy_field(obj, "started_at", h->started, sizeof(h->started));
	copy_field(obj, "expires_at", h->expires, sizeof(h->expires));
	pid = jv_object_get(jv_copy(obj), jv_string("pid"));
	if (jv_get_kind(pid) == JV_KIND_NUMBER)
		h->pid = (long)jv_number_value(pid);
	jv_free(pid);
	jv_free(obj);
	h->expires_at = util_parse_iso_time(h->expires);
	return h->run_id[0] && h->expires_at != -1 ? 0 : -1;
}

long lock_default_ttl(void)
{
	return util_env_long("DATASPOC_PIPE_LOCK_TTL", 1, 100L * 365 * 86400, 6 * 3600);
}

int lock_take(struct bucket *b, const char *key, const char *what,
	      const char *run_id, long pid, long ttl, long wait_ms)
{
	struct sb content = SB_INIT, seen = SB_INIT, again = SB_INIT;
	char started[32], expires[32];
	time_t now = time(NULL);
	double deadline = util_now() + (double)wait_ms / 1000.0, unreadable_since = 0;
	int ret = -1, r, tries;

	util_iso_time(now, started, sizeof(started));
	util_iso_time(now + ttl, expires, sizeof(expires));
	sb_addf(&content, "{\"run_id\": \"%s\", \"host\": \"", run_id);
	/* host names are plain; keep the document valid even if one is not */
	for (const char *p = util_hostname(); *p; p++)
		sb_addc(&content, (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20) ? '_' : *p);
	sb_addf(&content, "\", \"pid\": %ld, \"started_at\": \"%s\", \"expires_at\": \"%s\"}\n",
		pid, started, expires);

	for (tries = 0; tries < 100000; tries++) {
		struct holder h;
		int stale_dead, stale_expired;

		r = bucket_put_new(b, key, content.buf, content.len);
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
			err_msg("%s: the lock '%s' in %s is unreadable; if no run is going on, remove it with 'pipe-state unlock'",
				what, key, bucket_url(b));
			goto out;
		}
		unreadable_since = 0;
		if (strcmp(h.run_id, run_id) == 0) {
			ret = 0;
			goto out;
		}
		stale_dead = strcmp(h.host, util_hostname()) == 0 && !util_pid_alive(h.pid);
		stale_expired = time(NULL) > h.expires_at;
		if (stale_dead || stale_expired) {
			/* Delete only the lock we judged, not one a rival just took. */
			sb_reset(&again);
			r = bucket_get(b, key, &again);
			if (r < 0)
				goto out;
			if (r == 0 && again.len == seen.len && memcmp(again.buf, seen.buf, seen.len) == 0) {
				if (stale_dead)
					err_warn("%s: taking over the lock of run %s (pid %ld on %s), which is no longer running",
						 what, h.run_id, h.pid, h.host);
				else
					err_warn("%s: taking over the lock of run %s (pid %ld on %s), which expired at %s",
						 what, h.run_id, h.pid, h.host, h.expires);
				if (bucket_delete(b, key) != 0)
					goto out;
			}
			continue;
		}
		if (util_now() < deadline) {
			util_sleep_ms(20 + (tries % 5) * 10);
			continue;
		}
		err_msg("%s is locked by run %s (pid %ld on %s, since %s, until %s); if that run is gone, use 'pipe-state unlock'",
			what, h.run_id, h.pid, h.host, h.started, h.expires);
		ret = 1;
		goto out;
	}
	err_msg("%s: could not take the lock '%s'", what, key);
out:
	sb_free(&content);
	sb_free(&seen);
	sb_free(&again);
	return ret;
}

int lock_held_by(struct bucket *b, const char *key, const char *run_id)
{
	struct sb seen = SB_INIT;
	struct holder h;
	int r = bucket_get(b, key, &seen);

	if (r == 0)
		r = parse_holder(&seen, &h) == 0 && strcmp(h.run_id, run_id) == 0;
	else if (r == 1)
		r = 0;
	sb_free(&seen);
	return r;
}

int lock_release(struct bucket *b, const char *key, const char *run_id)
{
	int held;

	if (run_id != NULL) {
		held = lock_held_by(b, key, run_id);
		if (held <= 0)
			return held;
	}
	return bucket_delete(b, key);
}
