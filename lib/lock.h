/*
 * lock: the run lock of a pipeline, kept in the bucket so that runs on
 * different machines see it.
 *
 * A lock is an object created only if absent (bucket_put_new) holding
 *
 *   {"run_id", "host", "host_id", "pid", "pid_start", "run_dir",
 *    "renew_every", "started_at", "expires_at"}
 *
 * host_id says which machine and PID namespace the pid means something in
 * (the kernel's boot id and the PID namespace's inode): two containers or
 * cloned machines sharing a host name have different ones.  run_dir is the
 * driver's private folder, which every process of the run holds open with a
 * flock(2) on it (scripts/dataspoc-pipe-sh-setup, open_private_dir): the run is alive
 * while any of its processes is, the driver, a stage, the tap.
 *
 * Life of a run's lock across processes:
 *
 *   take     pipe-state get -r RUN (lock_take), before the state is read
 *            and any pending commit is finished;
 *   renew    pipe-sink, every renew_every seconds while the tap runs
 *            (lock_renew: a renewal object of the run's own, never the lock
 *            itself, so a writer that lost the lock overwrites nothing of
 *            its successor's), and pipe-commit before it publishes;
 *   check    pipe-commit before each step of the commit (runlock_check(),
 *            over lock_check()): a commit whose run no longer holds the
 *            lock stops there;
 *   release  pipe-commit, at the end of the commit or of an abort
 *            (lock_release), which also removes the renewals.
 *
 * Taking over: a lock of the same host_id is taken over once none of its
 * run's processes is alive (its run_dir's flock is free and its pid is gone
 * or reused), waiting a few seconds for stages that are going down; any
 * other only once expired: expires_at, pushed on by each renewal, is past
 * by this machine's clock AND no renewal is seen for two renewal intervals
 * of this machine's own steady clock, so a clock ahead cannot take a live
 * lock.  Both with a warning naming the holder.
 */
#ifndef PIPE_LOCK_H
#define PIPE_LOCK_H

#include "bucket.h"

/*
 * Take the lock at key for run_id, held by process pid on this host and by
 * every process holding run_dir locked (NULL: the pid alone), valid for
 * ttl seconds from its last renewal.  what names the lock in messages
 * ("pipeline 'orders'"), unlock the command that removes it by hand
 * ("pipe-state unlock orders"; NULL: none, it only expires).  Waits up to
 * wait_ms for a live holder to go.
 * Taking a lock already held by run_id succeeds.  Returns 0 taken, 1 held
 * by another run (a message naming the holder is printed), -1 error.
 * Locally the lock's bytes are not synced (bucket_put_new_lock()), and a
 * lock a crash left empty is taken over at once, with a warning.
 */
int lock_take_run(struct bucket *b, const char *key, const char *what, const char *unlock,
		  const char *run_id, long pid, const char *run_dir, long ttl, long wait_ms);

/*
 * lock_take_run() for a lock held by one process (run_dir NULL) that
 * nobody renews (renew_every 0: the manifest lock, pipe-state set/clear):
 * past its expiry it is taken over without watching for renewals.  As a
 * run's, its bytes are not synced locally (bucket_put_new_lock()), and one
 * a crash left empty is taken over at once, with a warning.
 */
int lock_take(struct bucket *b, const char *key, const char *what, const char *unlock,
	      const char *run_id, long pid, long ttl, long wait_ms);

/* 1 when the lock at key is held by run_id, 0 when not (or absent), -1 error. */
int lock_held_by(struct bucket *b, const char *key, const char *run_id);

/*
 * 0 when run_id still holds the lock at key; otherwise -1 after saying so
 * ("<what>: run R no longer holds the lock (now run S's, pid P on H);
 * stopping before <step>").
 */
int lock_check(struct bucket *b, const char *key, const char *what, const char *run_id,
	       const char *step);

/*
 * Push the lock's expiry on: 0 renewed, 1 the lock is not run_id's (not
 * said: the caller knows whether it ever was), -1 error.
 */
int lock_renew(struct bucket *b, const char *key, const char *run_id, long ttl);

/*
 * Release the lock at key if run_id holds it (run_id NULL: whoever holds
 * it), and the renewals of runs that no longer hold it.  0 released or not
 * held, -1 error.
 */
int lock_release(struct bucket *b, const char *key, const char *run_id);

/*
 * lock_release() for a lock held for moments, with no renewal (the
 * manifest's): locally its removal is not synced (bucket_delete_lock()).
 */
int lock_release_brief(struct bucket *b, const char *key, const char *run_id);

/*
 * Renew the lock at key for run_id every lock_renew_interval() seconds, in
 * a thread of its own, through b (which no other thread may use meanwhile).
 * NULL when the lock is not run_id's: there is nothing to renew.
 */
struct lock_keeper *lock_keeper_start(struct bucket *b, const char *key, const char *what,
				      const char *run_id, long ttl);

/* Stop renewing: 1 when the lock was found taken over meanwhile (said on stderr), else 0. */
int lock_keeper_stop(struct lock_keeper *k);

/* The run id a lock's text names (newly allocated), or NULL. */
char *lock_run_id(const struct sb *text);

/* The run lock's time to live: $DATASPOC_PIPE_LOCK_TTL seconds, default 6 hours. */
long lock_default_ttl(void);

/* Seconds between renewals: $DATASPOC_PIPE_LOCK_RENEW, default 60. */
long lock_renew_interval(void);


/*
 * The run lock of one pipeline, .dataspoc/state/NAME/lock, as the
 * programs of a run hold it (the life above): each call is the lock_*()
 * call of the same name on its key, in the pipeline's words.
 */
struct runlock {
	struct bucket *b;
	char *key;		/* layout_lock_key(NAME) */
	char *what;		/* "pipeline 'NAME'", for messages */
	char *unlock;		/* "pipe-state unlock NAME", for messages */
	const char *run_id;	/* the run that takes, holds, checks it */
	/*
	 * Set by a runlock_take*() that took over the lock of a run that is
	 * gone ("which is no longer running", "which expired"): that run's
	 * id, and how it ended ("killed: no process of it was left"), for the
	 * taker to log it (commit_log_lost()); else NULL.
	 */
	char *taken_over, *taken_why;
};

void runlock_init(struct runlock *l, struct bucket *b, const char *pipeline, const char *run_id);
void runlock_free(struct runlock *l);

/*
 * Take it for the run of the driver $DATASPOC_PIPE_PID (by hand: the
 * parent, your shell), held too by every process holding the driver's
 * folder $DATASPOC_PIPE_RUN_DIR, for lock_default_ttl(); no wait.
 */
int runlock_take(struct runlock *l);
/*
 * Take it for a sharded run (pipe-shard plan), which no process holds
 * while its shards run anywhere: the lock names no host_id and pid 0, so
 * it is taken over only once expired (lock_default_ttl() from its last
 * renewal: each shard's pipe-sink renews it while its tap runs).
 */
int runlock_take_detached(struct runlock *l);
/* Take it for a moment, for this process alone (pipe-state set, clear). */
int runlock_take_here(struct runlock *l, long ttl);
int runlock_held(const struct runlock *l);
int runlock_check(const struct runlock *l, const char *step);
/* Renew it, unless the lock itself was written within the last
 * lock_renew_interval() (then it is fresh enough: 0). */
int runlock_renew(const struct runlock *l);
/* Release it if the run holds it (run_id NULL: whoever holds it). */
int runlock_release(const struct runlock *l);
/* lock_keeper_start() through b, a bucket of the keeper's own. */
struct lock_keeper *runlock_keep(const struct runlock *l, struct bucket *b);

#endif
