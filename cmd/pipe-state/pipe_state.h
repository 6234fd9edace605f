/*
 * pipe_state: what the files of pipe-state share; only they include it.
 *
 *	main.c		the options, --help, the command table and the
 *			commands on one pipeline's bucket
 *	validate.c	validate: every check of `dataspoc-pipe validate`, one
 *			line (or JSON object) each
 */
#ifndef CMD_PIPE_STATE_H
#define CMD_PIPE_STATE_H

#include <stddef.h>

/*
 * validate: check pipelines names[0..n) (n 0: every pipeline of the home)
 * and print one result a check, as text or (json) a JSON array.  Returns
 * the exit status: 2 when a NAME is invalid (nothing printed) or unknown,
 * else 1 when a check failed, else 0.
 */
int validate_pipelines(char **names, size_t n, int json);

#endif
