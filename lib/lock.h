/*
 * lock: locks that live in the bucket, so runs on different machines see
 * them.  A lock is an object created only if absent (bucket_put_new) holding
 * {"run_id", "host", "pid", "started_at", "expires_at"}.  A lock whose holder
 * is provably gone (same host, process not alive) is taken over at once; one
 * from another host once past its expiry; both with a warning naming the
 * holder.
 */
#ifndef PIPE_LOCK_H
#define PIPE_LOCK_H

#include "bucket.h"

/*
 * Take the lock at key for run_id, held by process pid on this host, valid
 * for ttl seconds.  what names the lock in messages ("pipeline 'orders'").
 * Waits up to wait_ms for a live holder to go.  Taking a lock already held
 * by run_id succeeds.  Returns 0 taken, 1 held by another run (a message
 * naming the holder is printed), -1 error.
 */
int lock_take(struct bucket *b, const char *key, const char *what,
	      const char *run_id, long pid, long ttl, long wait_ms);

/* 1 when the lock at key is held by run_id, 0 when not (or absent), -1 error. */
int lock_held_by(struct bucket *b, const char *key, const char *run_id);

/*
 * Release the lock at key if run_id holds it (run_id NULL: whoever holds
 * it).  0 released or not held, -1 error.
 */
int lock_release(struct bucket *b, const char *key, const char *run_id);

/* The run lock's time to live: $DATASPOC_PIPE_LOCK_TTL seconds, default 6 hours. */
long lock_default_ttl(void);

#endif
