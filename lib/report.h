/*
 * report: what people read about their pipelines and buckets: the run logs
 * (.dataspoc/logs/P/RUN.json), the status of each pipeline, the manifest
 * (.dataspoc/manifest.json).  Formats of the JSON documents: DESIGN.md.
 */
#ifndef PIPE_REPORT_H
#define PIPE_REPORT_H

#include <stddef.h>

#include "bucket.h"
#include "sb.h"

/*
 * The run logs of pipeline, newest first (keys sort by time: run ids, and
 * the Python DataSpoc Pipe's timestamps), at most max of them (0: all).
 * Each is compact JSON text (one line, numbers and strings byte for byte).
 * A log that is not a JSON object is skipped with a warning naming it.
 * *logs is NULL-terminated, freed with util_strv_free().  0, or -1 on a
 * bucket error (reported).
 */
int report_logs(struct bucket *b, const char *pipeline, size_t max, char ***logs, size_t *n);

/*
 * Append a run log (as report_logs() gives it) for people:
 *
 *   Run 20261130T004809Z-3fa9c1: success
 *     started   2026-11-30T00:48:09Z
 *     finished  2026-11-30T00:48:12Z
 *     duration  3s
 *     records   340
 *       public-orders: 340
 *     error     ...            (failures only)
 *
 * A failure that says what it read ("records_read") counts its records as
 * report_failed_count() does: "records   0 landed, 20 read", and so
 * each stream.
 *
 * Missing members print as "-".
 */
void report_log_text(const char *log, struct sb *out);

/*
 * A failed run's records for people, as the terminal, logs and status say
 * them: "0 landed, 20 read" (thousands separators).
 */
void report_failed_count(struct sb *out, unsigned long long landed, unsigned long long read);

/*
 * What status shows of pipeline: its last extraction, the newest run log
 * that is not a compact's ("command": "compact", which extracts nothing),
 * in *extraction (NULL: none), and a compact's log newer than it in
 * *compact (NULL: none), both pointing into *logs (the logs read, newest
 * first, down to that extraction; freed with util_strv_free()).  0, or -1
 * on a bucket error (reported).
 */
int report_last_extraction(struct bucket *b, const char *pipeline, char ***logs, const char **extraction,
			   const char **compact);

/*
 * A failure the bucket could not be told of (a scheduled run without the
 * shell's credentials: issue #29 item 9), kept on this machine, in the home:
 * <home>/logs/NAME.failure.json, a run log of one line, {"pipeline",
 * "run_id", "started_at", "finished_at", "status":"failure", "error",
 * "logged":"locally"}, replacing the one before.  0, or -1 (said).
 */
int report_local_failure(const char *pipeline, const char *run_id, const char *error);

/*
 * The run log status shows for pipeline: log (its newest in the bucket, or
 * NULL), unless the local failure (above) is of a later run; then that one,
 * in *local (freed by the caller).  Returns log or *local.
 */
const char *report_newest(const char *pipeline, const char *log, char **local);

/*
 * The logs of pipeline (report_logs()'s, *n of them, the last max; 0: all)
 * with the failure kept on this machine (above) among them, in its place
 * by its run id, unless the bucket holds its log or it is older than the
 * max kept.
 */
void report_logs_local(const char *pipeline, size_t max, char ***logs, size_t *n);

/* One pipeline in a status report. */
struct report_status {
	const char *name;
	const char *log;	/* its last extraction's run log (compact JSON), or NULL: never run */
	const char *compact;	/* the log of a compact newer than it, or NULL */
	int error;		/* its config or bucket could not be read */
	const char *why;	/* error: what was said of it, or NULL */
};

/*
 * Append the status of pipelines as a table:
 *
 *   PIPELINE  LAST RUN              STATUS   DURATION  RECORDS
 *   orders    2026-11-30T00:48:09Z  success  3s            340
 *   new       never                 -        -               -
 *   broken    -                     error    -               -
 *
 * (a failure's RECORDS as report_failed_count() says them), or, json set,
 * a JSON array of {"name", "last_run", "status", "duration", "records",
 * "records_read", "error"} (the Python DataSpoc Pipe's keys first), one
 * object a line: last_run is the log's started_at, duration its
 * duration_seconds, records its total_records (what landed), records_read
 * its records_read (a failure's; null when missing), error its error (a
 * failure's reason, else null); a pipeline never run has status "no runs"
 * (the Python tool's word), one that could not be read "error" with why in
 * error (null when nothing was said), and nulls; and ours, last_compact:
 * {"run_id", "started_at", "status"} of a compact run after the last
 * extraction, only then.  The table says such a compact on a line of its
 * own after the table: "orders: compacted since: 2026-12-01T09:00:00Z
 * success".
 */
void report_status(const struct report_status *rows, size_t n, int json, struct sb *out);

/*
 * Append the manifest text[0..len) (origin names it in messages) as a
 * table of its tables, sorted by name:
 *
 *   TABLE          ROWS  EXTRACTIONS  LAST EXTRACTION       COLUMNS
 *   csv/customers     3            1  2026-11-30T00:48:09Z        3
 *
 * or, json set, as stored.  0, or -1 (reported) when it is not a JSON
 * object.
 */
int report_manifest(const char *text, size_t len, const char *origin, int json, struct sb *out);

#endif
