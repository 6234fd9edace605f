/* cli: what every program's main() does the same way. */
#ifndef PIPE_CLI_H
#define PIPE_CLI_H

#include "config.h"

/* Exit statuses (DESIGN.md): 0 success, 1 the work failed, 2 usage or config;
 * 75 (sysexits' EX_TEMPFAIL) the pipeline's run lock is another live run's,
 * nothing done: try later (pipe-state get, and so the driver's run). */
#define CLI_OK 0
#define CLI_FAILED 1
#define CLI_USAGE 2
#define CLI_LOCKED 75

/*
 * Load the pipeline: from file when not NULL (-c FILE), else by name.
 * Exactly one must be given; otherwise a usage error is printed.  0 or -1.
 */
int cli_load_config(const char *file, const char *name, struct pipe_config *cfg);

/*
 * The run id: arg (from -r) when not NULL, else $DATASPOC_RUN_ID when set,
 * else NULL.  A malformed one is reported and *bad set.
 */
const char *cli_run_id(const char *arg, int *bad);

/*
 * A program started by the driver itself ($DATASPOC_PIPE_PID is its
 * parent) dies with it (SIGKILL), so that no stage of a killed run goes on
 * writing to the bucket.
 */
void cli_die_with_driver(void);

/*
 * The run's locks on descriptors (DESIGN.md, the driver's run), taken by
 * the programs the driver starts, not by flock(1) programs of its own: a
 * flock(2) lock belongs to the open file, which every process holding the
 * descriptor shares, so the first program to lock it holds it for the
 * driver and every process of the run until the last of them ends.
 *
 * $DATASPOC_PIPE_RUN_DIR_FD: a descriptor open on the driver's private
 * folder.  -1 when it cannot be locked (a sweep has it: the folder is
 * going) or the folder is gone, said; 0 otherwise, or when unset.
 *
 * $DATASPOC_PIPE_STAGES_FD (the stages only): a descriptor open on a file
 * of that folder, locked by the first stage to start, so that the lock is
 * free only once no process of the stages (the tap and its children,
 * pipe-tap's janitor) is left.  Not a failure when it cannot be locked.
 *
 * Call it first in main(), before any handler is set or child started: a
 * stage that a forwarded signal reaches before it has the lock dies of it.
 */
int cli_lock_run(void);

/* Flush and close stdout; report a failure ("write error: ...").  0 or -1. */
int cli_close_stdout(void);

/* Print "usage: ..." on stderr. */
void cli_usage(const char *usage);

/* The version of the toolkit, as dataspoc-pipe --version prints it. */
#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif

/*
 * argv is "PROG --version": print "PROG VERSION" (PROG argv[0]'s last
 * component, whatever name the program speaks under) and return 1, when
 * the caller exits as after --help; else 0.
 */
int cli_version(int argc, char **argv);

#endif
