/* state: the saved Singer state of a pipeline, .dataspoc/state/P/state.json. */
#ifndef PIPE_STATE_H
#define PIPE_STATE_H

#include "bucket.h"
#include "sb.h"

/*
 * Load the saved state, check it is a JSON object, and append it to out in
 * compact form (one line, numbers and strings byte for byte).  0 found,
 * 1 none saved, -1 error (unreadable, not JSON, not an object: the message
 * names the object and the position).
 */
int state_load(struct bucket *b, const char *pipeline, struct sb *out);

/*
 * Check text as a Singer STATE value for `pipe-state set`: a JSON object,
 * or a whole STATE message {"type":"STATE","value":{...}} whose value is
 * taken.  Appends the value pretty-printed to out.  origin names the input
 * in messages.  0 or -1.
 */
int state_check(const char *text, size_t len, const char *origin, struct sb *out);

#endif
