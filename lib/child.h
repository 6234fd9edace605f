/*
 * child: the processes the programs run: pipe-tap's tap, its discovery and
 * --about (tap.c, catalog.c), pipe-state validate's checks of a tap, and
 * pipe-mcp's commands,
 * after git's run-command.h: fill a struct child_process, child_start() it,
 * read its output with child_read(), child_finish() it; child_capture() does
 * it all for a command whose output is wanted whole.
 *
 * A child runs without a shell, its stdin /dev/null, in a process group of
 * its own (what it starts gets the signals too), and gets SIGKILL when this
 * process dies.  Stopping it (child_stop()) starts a grace period of
 * $DATASPOC_PIPE_KILL_GRACE seconds (default 5), after which its group gets
 * SIGKILL: a tap may ignore SIGTERM (one run as PID 1 in a container does),
 * and would hold the run, and its lock, for good.  Once a stopped child has
 * ended, what it left in its group goes too: no process of it outlives
 * this one.
 *
 * The guard (child_guard_begin() to child_guard_end()) is the time of one
 * run.  SIGINT, SIGTERM and SIGHUP are passed on to the running child's
 * group and stop it; SIGPIPE is ignored (EPIPE instead, so that what the run
 * made still goes).  The driver, dataspoc-pipe, whose pid is
 * $DATASPOC_PIPE_PID, is watched (its pidfd, else kill(2) every 500 ms): when
 * it is gone (killed with SIGKILL) so is the run, and the child is stopped
 * with SIGTERM rather than left to go on alone in the driver's session.
 */
#ifndef PIPE_CHILD_H
#define PIPE_CHILD_H

#include <stddef.h>
#include <sys/types.h>

#include "sb.h"

struct child_log;
struct mask;

struct child_process {
	/* set by the caller: CHILD_PROCESS_INIT, then these */
	char **argv;		/* NULL-terminated, copies: child_push(), child_pushv() */
	size_t argc;
	const char *exe;	/* the program's path (child_find_command()) */
	int out;		/* the descriptor its stdout goes to, closed by child_start() */
	const char *err_path;	/* its stderr appended to, only its end kept (cut to the
				   last 64 KiB past 128 KiB, from the start of a line); a
				   file that is not a regular one (/dev/null) is given to
				   it as is; NULL, or a file that cannot be opened: ours */
	int err_live;		/* with err_path: whole lines also shown on our stderr
				   as they come */
	const struct mask *err_mask;	/* its stderr masked line by line (mask.h) before
					   it goes to err_path or ours; NULL: as it is */

	/* set by child_start() and child_finish() */
	pid_t pid;
	int exec_errno;		/* child_start() failed: exec's errno, 0 when it did
				   not get that far (a pipe or fork failed) */
	int killed;		/* it had SIGKILL at the end of its grace period */
	long grace;		/* the grace period it had, in seconds */

	/* private */
	int pidfd;
	double kill_at;
	struct child_log *log;
};

#define CHILD_PROCESS_INIT { .out = -1, .pid = -1, .pidfd = -1 }

/* Append a copy of arg to c->argv; of each of args (NULL-terminated, may be NULL). */
void child_push(struct child_process *c, const char *arg);
void child_pushv(struct child_process *c, char *const *args);

/* Free c->argv, so that c can be filled again.  Its results stay. */
void child_clear(struct child_process *c);

/*
 * Find a command as execvp(3) would: a name with '/' as is, else along
 * $PATH.  Returns the path (new string), or NULL with errno ENOENT (not
 * found) or EACCES (found but not executable).
 */
char *child_find_command(const char *name);

/*
 * The program prog beside this one (/proc/self/exe's folder) when it is
 * there and executable, else as child_find_command() finds it: how a
 * pipe-* program runs another of the toolkit's.
 */
char *child_sibling(const char *prog);

/*
 * Why child_find_command(name) failed, with errno as it left it, in the
 * words pipe-tap uses for the tap (*why: a new string, "tap-x not found on
 * PATH — install it or set source.tap").  Returns the status that stands
 * for it: 126 (cannot run) or 127 (not found).
 */
int child_missing(const char *name, char **why);

/*
 * Start c->exe with c->argv as above.  Returns 0, or -1 (said, and
 * c->exec_errno set) with c cleared.  A signal that came while it was being
 * started is passed on to it.
 */
int child_start(struct child_process *c);

/*
 * Read what the child writes to fd (a pipe from its stdout) into buf,
 * meanwhile keeping its stderr, watching the driver and stopping the child
 * on a signal.  Returns the bytes read; 0 at the end of fd or when the child
 * was killed at the end of its grace period (what it writes is no longer
 * wanted); -1 on an error, errno set: the caller says so and stops it.
 */
ssize_t child_read(struct child_process *c, int fd, void *buf, size_t n);

/*
 * Stop the child: sig (0: none) to its group, and SIGKILL at the end of the
 * grace period, unless that has started already.
 */
void child_stop(struct child_process *c, int sig);

/*
 * Wait for the child's end and clear c.  When it was being stopped, what it
 * left in its group goes too, with SIGKILL at the end of the grace period.
 * Returns its exit status, 128+n when killed by signal n.
 */
int child_finish(struct child_process *c);

/*
 * Run c (c->exe, when NULL, is c->argv[0] found by child_find_command(); c->out
 * is a pipe of its own), appending its stdout to out, and clear c.  Returns
 * its exit status (128+n when killed by signal n), or -1 when it could not be
 * run (said) or the run is being stopped (a signal came, the driver is gone:
 * what it said then is no answer).
 */
int child_capture(struct child_process *c, struct sb *out);

/*
 * Grow the pipe fd to want bytes when it holds less, as far as the kernel
 * lets this process (/proc/sys/fs/pipe-max-size; an unprivileged user past
 * its share of pipe memory gets less, or the size it had).  Returns the
 * pipe's capacity, or -1 when fd is not a pipe.
 */
int child_pipe_grow(int fd, int want);

/* Begin the guard: the handlers of SIGINT, SIGTERM, SIGHUP and SIGPIPE, the driver watched. */
void child_guard_begin(void);

/*
 * End the guard: the handlers as they were.  When a signal stops the run
 * (child_guard_signal()), it is raised again, its action the default: call
 * it last, once everything is cleaned up.
 */
void child_guard_end(void);

/* The signal that stops the run: the last that came or was set; 0: none. */
int child_guard_signal(void);

/* Take sig as the signal that stops the run (SIGPIPE: the output's reader is gone). */
void child_guard_set_signal(int sig);

/*
 * 1 when the driver watched is gone: as last seen (child_driver_gone()), or
 * looked at now (child_driver_check()); 0 while it lives or none is watched.
 */
int child_driver_gone(void);
int child_driver_check(void);

/* The pid of the driver watched, 0: none. */
long child_driver_pid(void);

#endif
