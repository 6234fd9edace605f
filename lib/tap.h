/*
 * tap: run a Singer tap as pipe-tap does.  The tap gets --config (a file; an
 * inline mapping is written to a private temporary directory first),
 * --state when the saved state is a non-empty object, and --catalog when the
 * pipeline names one.  Its stdout is copied to out_fd and followed by one end
 * line saying how it ended:
 *
 *   {"type":"DATASPOC_TAP_END","status":"success","exit_status":0}
 *   {"type":"DATASPOC_TAP_END","status":"failure","exit_status":1,"error":"tap-x exited with status 1"}
 *
 * SIGINT, SIGTERM and SIGHUP are passed on to the tap; the temporary
 * directory is removed on every exit path but SIGKILL.
 */
#ifndef PIPE_TAP_H
#define PIPE_TAP_H

#include <stddef.h>

#include "config.h"

/*
 * Run the tap.  state is the saved state as JSON text (may be empty or
 * "{}": no --state).  stderr_path: where the tap's stderr goes (NULL: this
 * process's stderr).  Returns the status pipe-tap exits with: 0, the tap's
 * own exit status, 128+n when killed by signal n, 126 when it cannot run,
 * 127 when not found, 1 on other errors.  When this process itself got a
 * signal, it re-raises it after cleaning up.
 */
int tap_run(const struct pipe_config *cfg, const char *state, size_t state_len,
	    int out_fd, const char *stderr_path);

/*
 * Check that the tap can be run, without running it: 0, or 127 (not found)
 * or 126 (not executable) with the same message tap_run() would print.
 */
int tap_check(const struct pipe_config *cfg);

/*
 * Find a command as execvp(3) would: a name with '/' as is, else along
 * $PATH.  Returns the path (new string), or NULL with errno ENOENT (not
 * found) or EACCES (found but not executable).
 */
char *tap_find_command(const char *name);

#endif
