/*
 * tap: run a Singer tap as pipe-tap does.  The tap gets --config (a file; an
 * inline mapping is written to a private temporary directory first),
 * --state when the saved state is a non-empty object, and a catalog
 * (--catalog or --properties, see catalog.h) when the pipeline selects
 * streams or names one.  Its stdout is copied to out_fd, after the selected
 * line when streams are selected, and followed by one end line saying how
 * it ended (tapline.h).
 *
 * The tap, its discovery and --about run as child.h says: in a process
 * group of their own, SIGINT, SIGTERM and SIGHUP passed on to that group.
 * The temporary directory is held with a flock(2) lock while it exists and
 * removed on every exit path (by a helper process after a SIGKILL).  The
 * tap gets SIGKILL when pipe-tap dies.  When
 * $DATASPOC_PIPE_PID names the driver and that process ends (kill -9), or
 * out_fd's reader goes away, the tap's group gets SIGTERM (and the read end
 * of its output is closed when nothing reads it any more).  Whatever stops
 * the tap, its group gets SIGKILL when the tap is still there
 * $DATASPOC_PIPE_KILL_GRACE seconds (default 5) later.
 */
#ifndef PIPE_TAP_H
#define PIPE_TAP_H

#include <stddef.h>

#include "config.h"
#include "sb.h"

/*
 * Run the tap.  state is the saved state as JSON text (may be empty or
 * "{}": no --state).  Returns the status pipe-tap exits with: 0, the tap's
 * own exit status, 128+n when killed by signal n, 126 when it cannot run,
 * 127 when not found, 2 when the state or the stream selection is bad (a
 * stream the tap does not offer), 1 on other errors.  When this process itself got a
 * signal, it re-raises it after cleaning up.
 */
struct tap_options {
	const char *stderr_path;	/* where the tap's stderr goes (its end only:
					   cut to the last 64 KiB past 128 KiB); NULL: ours */
	int live;			/* with no stderr_path: the stderr of discovery and
					   --about shown as it comes (else discovery's is
					   shown only when it fails, --about's never); with
					   one: the tap's too, whole lines, on our stderr */
	int refresh_catalog;		/* discover again even when a catalog is cached */
	int check;			/* prepare everything (find the tap, write its
					   config, select streams), run nothing, print nothing
					   on stdout: the status says whether a run could start */
	int source;			/* touch the source instead: the tap's discovery,
					   with its config, within $DATASPOC_PIPE_CHECK_TIMEOUT
					   seconds (default 30); on stdout the flag that hands
					   it a catalog, then the streams it offers, one a
					   line; a failure's reason is its stderr's first line
					   that says error (else its last) */
};

int tap_run(const struct pipe_config *cfg, const char *state, size_t state_len,
	    int out_fd, const struct tap_options *opt);

/*
 * pipe-tap -n -D PID: make the private folder of the driver whose pid is
 * driver, for its run, so that no mktemp starts (issue #14): first the
 * folders of runs that are over go (the driver's sweep, with one more proof
 * of death: a folder whose maker is known gone goes at once, not a minute
 * later), then a folder as pipe-tap's own (mkdtemp(3) in TMPDIR,
 * "dataspoc-pipe.XXXXXX"), held with a flock(2) lock on *lock_fd
 * (close-on-exec) while this process lives, with a "maker" file naming the
 * driver (its pid, when it started, this machine and PID namespace).  Its
 * path goes to stdout, on a line of its own, and nothing else does (stdout
 * is /dev/null after it: pipe-tap prints the run id's line on a copy of it
 * made before); it is exported as DATASPOC_PIPE_RUN_DIR, and
 * stderr goes to its check.err from then on.  0, or -1 (said on the stderr
 * of the caller).
 */
int tap_make_run_dir(long driver, int *lock_fd);

#endif
