/*
 * transform: transforms/NAME.jq, a jq program applied to every record, with
 * $stream bound to the record's stream.  It may reshape a record, emit
 * several, or drop one with `empty`.  Records pass through libjq's jv, so a
 * transformed record is re-printed by jq 1.6 (integers beyond 2^53 lose
 * digits, as in jq itself); records of a pipeline without a transform keep
 * their exact bytes.
 */
#ifndef PIPE_TRANSFORM_H
#define PIPE_TRANSFORM_H

#include <stddef.h>

#include "sb.h"

struct transform;

/*
 * Load the program at path and compile it once to check it.  Returns 0 with
 * *t set, 1 when path does not exist (*t NULL), -1 on a read or compile
 * error (reported with jq's message).  A Python transform (path's .jq
 * replaced by .py, the Python DataSpoc Pipe's) is an error when there is no
 * .jq (it would be skipped and its columns would land), a warning beside one.
 */
int transform_load(const char *path, struct transform **t);

/*
 * Apply the program to one record (its JSON text) of stream.  Each output is
 * appended to out, compact, followed by '\n'; *count gets how many.
 * Returns 0, or -1 with jq's error message in err.
 */
int transform_apply(struct transform *t, const char *stream, const char *rec, size_t len,
		    struct sb *out, unsigned long long *count, struct sb *err);

void transform_free(struct transform *t);

#endif
