/* check: what `dataspoc-pipe validate` checks beyond the config's syntax. */
#ifndef PIPE_CHECK_H
#define PIPE_CHECK_H

#include "bucket.h"
#include "config.h"
#include "sb.h"

/*
 * Probe the bucket with objects under .dataspoc/probe/: write one, read it
 * back and compare, find it in a listing, delete it and see it gone; then
 * create another with bucket_put_new() twice (the second must be refused)
 * and ask bucket_probe_conditional() whether the store itself refuses to
 * create an object that exists.  *conditional is set to 1 when it does
 * (conditional create honoured: the run lock keeps two runs apart
 * atomically), 0 when bucket_put_new() has to emulate it.  Every probe
 * object is deleted on every path.  0, or -1 with a message naming the
 * step that failed ("bucket probe: read back ...").
 */
int check_probe(struct bucket *b, int *conditional);

/*
 * The tap's config: a source.config file must be readable and hold a JSON
 * object (error: -1, reported naming the file).  When the file that holds
 * the tap's config (that file, or the pipeline file for an inline mapping)
 * has members that look like secrets (password, secret, token, api_key,
 * ... holding a non-empty string, at any depth) and is readable by its
 * group or others, a warning is appended to warning and 1 returned:
 *
 *   '/h/sources/pg.json' holds secrets (password) and is readable by other
 *   users (mode 0644): chmod 600 '/h/sources/pg.json'
 *
 * Otherwise 0.
 */
int check_tap_config(const struct pipe_config *cfg, struct sb *warning);

/*
 * What `pipe-state check` and `validate` check of a loaded pipeline beyond
 * its file: config_check_source() and check_tap_config().  An error is said
 * (the tap's config file cannot be read, is not a JSON object) and -1
 * returned.  Otherwise 0, with the two warnings handed back, not said: the
 * secrets one (check_tap_config()'s) appended to secrets, and when the tap's
 * config still holds values of `dataspoc-pipe add`'s templates, this one to
 * placeholders:
 *
 *   the tap's config file '/h/sources/pg.json' still holds placeholders of
 *   add's template (.password): fill them in
 *
 * ("the tap's config in '/h/pipelines/pg.yaml'" for an inline mapping).
 */
int check_config(const struct pipe_config *cfg, struct sb *secrets, struct sb *placeholders);

#endif
