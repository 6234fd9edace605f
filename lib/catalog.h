/*
 * catalog: stream selection (source.streams, source.metadata).  The tap's
 * discovered catalog is edited byte for byte (schemas keep their numbers
 * exactly): chosen streams get stream-level metadata "selected": true (and
 * the legacy "selected": true in their schema), the others false, then the
 * Meltano-style source.metadata overrides are applied.
 */
#ifndef PIPE_CATALOG_H
#define PIPE_CATALOG_H

#include <stddef.h>

#include "config.h"
#include "sb.h"

/*
 * Edit the catalog text (origin names it in messages).  streams: the names
 * (tap_stream_id or stream) to select, NULL to leave selection alone.
 * metadata_json: {"pattern": {"key": value}} or NULL; patterns are fnmatch(3)
 * globs matched against tap_stream_id and stream; later patterns win.
 * Appends the new catalog to out and, to selected (when not NULL), the names
 * and ids of the selected streams as a JSON array.  A name in streams that
 * the catalog does not offer is an error.  0 or -1.
 */
int catalog_select(const char *text, size_t len, const char *origin,
		   char *const *streams, const char *metadata_json,
		   struct sb *out, struct sb *selected);

/*
 * The catalog the tap gets, when the pipeline selects streams or sets
 * metadata: the discovered one (cached at cache_path, rediscovered when
 * missing or refresh is set; the tap runs with config_args and --discover),
 * edited by catalog_select().  The result goes to out_path; selected as
 * above.  tap_log: where the tap's stderr goes (NULL: ours).  0 or -1.
 */
int catalog_prepare(const struct pipe_config *cfg, char *const *config_args,
		    const char *cache_path, int refresh, const char *out_path,
		    const char *tap_log, struct sb *selected);

/*
 * The flag that hands the tap its catalog: source.catalog_flag when set,
 * else "--catalog" when the tap's --about lists the "catalog" capability,
 * else "--properties" (singer-io's taps, which have no --about, read only
 * --properties).  Returns a static string.
 */
const char *catalog_flag(const struct pipe_config *cfg, const char *tap_log);

/* Where a pipeline's discovered catalog is cached: beside its YAML file. */
char *catalog_cache_path(const struct pipe_config *cfg);

#endif
