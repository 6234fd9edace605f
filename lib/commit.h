/*
 * commit: publishing a run (DESIGN.md, "Commit protocol").  Objects first,
 * the reference last: the run's pending plan (pending/RUN.json), then the
 * data files, then state.json, the manifest and the run log, then the
 * pending plan goes.  Every step can be repeated, so a commit cut short by
 * kill -9 is finished by the next run; and every step first checks that
 * the run doing it still holds the pipeline's lock (lock_check), so a
 * commit whose run lost it stops there.
 */
#ifndef PIPE_COMMIT_H
#define PIPE_COMMIT_H

#include "bucket.h"
#include "lock.h"
#include "manifest.h"
#include "plan.h"
#include "sb.h"

/*
 * Publish a plan that ended in success: save it as its run's pending plan,
 * then carry it out.  The caller holds the run lock.  0 or -1.
 */
int commit_publish(struct bucket *b, const struct plan *p);

/*
 * A table's Hive folders name one key (DESIGN.md, "Partitions"): a stream
 * of p whose partition_by lands its files in folders of another key than
 * the manifest records for its table (partition_by changed) is refused,
 * with an error naming the way out, unless the run replaces the table's
 * files (a snapshot, an overwrite, a new table version, --full), which
 * its end does.  known: what manifest_recorded() read of p's tables (its
 * folder keys may be filled in from the bucket), or NULL to read it here.
 * 0 none refolded (or neither the manifest nor the folders could be read:
 * a warning), 1 some the run's end replaces, -1 refused.
 */
int commit_refolds(struct bucket *b, const struct plan *p, struct manifest_rec *known);

/*
 * A run that started after run_id and committed (a success log), or whose
 * commit is pending: 1 with its id in *later (newly allocated), 0 none,
 * -1 error.  A plan of run_id published after it would set the state back.
 */
int commit_later_run(struct bucket *b, const char *pipeline, const char *run_id, char **later);

/*
 * The last checkpoint run_id committed (its record, DESIGN.md "Checkpoints"),
 * 0 when none; *err set on a store error or a record that does not parse.
 */
unsigned commit_checkpoints(struct bucket *b, const char *pipeline, const char *run_id, int *err);

/* 1 when run_id's commit is pending (it began), 0 not, -1 error. */
int commit_pending(struct bucket *b, const char *pipeline, const char *run_id);

/*
 * Clean up after a failed run: delete its staging, write a failure run log
 * saying error.  p may be NULL or a partial plan (its streams and the records
 * it read are logged: "records" and "total_records" count what landed, only
 * what checkpoints committed; "records_read" what the run read).  tap_stderr,
 * when not NULL, is logged as the list "tap_stderr", a member per line
 * (the caller has masked its secrets).  When the log is written here and
 * says the run read records, summary (if not NULL) gets the line for people:
 *   Records: 0 landed, 20 read
 * 0 or -1.
 */
int commit_abort(struct bucket *b, const char *pipeline, const char *run_id,
		 const struct plan *p, const char *error, const char *tap_stderr, struct sb *summary);

/*
 * The run whose lock l's taker took over (l->taken_over, lock.h), dead
 * without a log (killed outright: SIGKILL, a reboot, the OOM killer):
 * logged as failed, saying how it ended, unless it has a log or its commit
 * is pending (recovery finishes it).  Nothing to do when l took over none.
 * (l->run_id NULL: no run took it; pipe-state unlock removed it.)
 * Under the lock, after commit_recover() when the taker runs it.  0 or -1.
 */
int commit_log_lost(struct bucket *b, const char *pipeline, const struct runlock *l);

/*
 * Recovery, under the run lock held by run_id: finish the pending commits,
 * oldest first (one that can never be finished, its staged files gone, is
 * withdrawn and its run logged as failed), then delete staging left by runs
 * that died before committing (all but run_id's).  0 or -1.
 */
int commit_recover(struct bucket *b, const char *pipeline, const char *run_id);

/*
 * Append the human summary of a successful plan:
 *   Done! 250,000 records in 1 stream(s)
 *     public-orders: 250,000
 */
void commit_summary(const struct plan *p, struct sb *out);

#endif
