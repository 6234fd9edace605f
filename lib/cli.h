/* cli: what every program's main() does the same way. */
#ifndef PIPE_CLI_H
#define PIPE_CLI_H

#include "config.h"

/* Exit statuses (DESIGN.md): 0 success, 1 the work failed, 2 usage or config. */
#define CLI_OK 0
#define CLI_FAILED 1
#define CLI_USAGE 2

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

/* Flush and close stdout; report a failure ("write error: ...").  0 or -1. */
int cli_close_stdout(void);

/* Print "usage: ..." on stderr. */
void cli_usage(const char *usage);

#endif
