/*
 * tapline: pipe-tap's in-band lines, the two of its own that it puts in the
 * Singer stream it passes on to pipe-sink (DESIGN.md, "Line protocol"):
 *
 *   {"type":"DATASPOC_TAP_SELECTED","streams":["customers","appdb-public-customers"]}
 *   ... the tap's stdout, byte for byte ...
 *   {"type":"DATASPOC_TAP_END","status":"success","exit_status":0}
 *   {"type":"DATASPOC_TAP_END","status":"failure","exit_status":1,"error":"tap-x exited with status 1"}
 *
 * The selected line comes first, and only when the pipeline selects
 * streams: it names them (ids and names), so that pipe-sink can drop the
 * records of others from taps that ignore the catalog.  The end line comes
 * last, on every path but a broken stdout and SIGKILL: exit_status is
 * pipe-tap's own exit status, error says why it failed.  The lines are
 * written here and read here; what they mean for a run is the sink's.
 */
#ifndef PIPE_TAPLINE_H
#define PIPE_TAPLINE_H

#include <stddef.h>

#include "json.h"
#include "sb.h"

#define TAPLINE_SELECTED_TYPE "DATASPOC_TAP_SELECTED"
#define TAPLINE_END_TYPE "DATASPOC_TAP_END"

/* Append the selected line to out; streams_json: a JSON array of strings. */
void tapline_selected(struct sb *out, const char *streams_json);

/* Append the end line to out: "failure" with error when error is not NULL. */
void tapline_end(struct sb *out, int exit_status, const char *error);

/*
 * 1 when type, the "type" string of a Singer message as it came, is the
 * selected line's (its decoded text; case counts) or the end line's (byte
 * for byte), else 0.
 */
int tapline_is_selected(const struct json_span *type);
int tapline_is_end(const struct json_span *type);

/*
 * The stream names of a selected line (valid JSON, as tapline_is_selected()
 * found): a new array of *n new strings (non-NULL, even when *n is 0); its
 * members that are not strings are skipped.  -1 when the line has no
 * "streams" array.
 */
int tapline_parse_selected(const char *line, size_t len, char ***names, size_t *n);

/*
 * Whether an end line (valid JSON, as tapline_is_end() found) says success:
 * 0 when it does, else -1 with *error its error text (a new string), or
 * NULL when it has none or an empty one.
 */
int tapline_parse_end(const char *line, size_t len, char **error);

#endif
