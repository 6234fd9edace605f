/*
 * pipe_state: what the files of pipe-state share; only they include it.
 *
 *	main.c		the options, --help, the command table and the
 *			commands on one pipeline's bucket
 *	validate.c	validate: every check of `dataspoc-pipe validate`, one
 *			line (or JSON object) each
 *	objects.c	objects and fetch: the bucket's objects for a reader
 *			of the lake (scripts/lake's door to lib/store)
 */
#ifndef CMD_PIPE_STATE_H
#define CMD_PIPE_STATE_H

#include <stddef.h>

struct bucket;

/*
 * validate: check pipelines names[0..n) (n 0: every pipeline of the home)
 * and print one result a check, as text or (json) a JSON array.  Returns
 * the exit status: 2 when a NAME is invalid (nothing printed) or unknown,
 * else 1 when a check failed, else 0.
 */
int validate_pipelines(char **names, size_t n, int json);

/*
 * objects: print "VERSION<TAB>KEY" for every object under prefix (NULL or
 * "": all), sorted by key; VERSION is the store's (S3 and Azure: the
 * ETag, quotes and all), a local object's "SIZE.SECONDS.NANOSECONDS" (its
 * size and change time), or "-" when the store keeps none (GCS).
 * fetch: write object key to standard output.  Return the exit status.
 */
int objects_list(struct bucket *b, const char *prefix);
int objects_fetch(struct bucket *b, const char *key);

#endif
