/*
 * manifest: .dataspoc/manifest.json, the catalog DataSpoc Lens reads (the
 * tables, their columns and counts), updated at each commit under its own
 * lock (DESIGN.md, "Manifest").
 */
#ifndef PIPE_MANIFEST_H
#define PIPE_MANIFEST_H

#include "bucket.h"
#include "plan.h"

/* The Python DataSpoc Pipe's manifest version. */
#define MANIFEST_VERSION "1.0"

/*
 * A manifest with no table: what the Python tool reads of a bucket that has
 * none (catalog.py, load_manifest()), and so what `manifest` shows of it.
 */
#define MANIFEST_EMPTY "{\"version\":\"" MANIFEST_VERSION "\",\"updated_at\":null,\"tables\":{}}"

/*
 * The table version the manifest records for each of the plan's streams
 * (its "table_version", the version last activated in its folder), as raw
 * JSON into versions[i] (newly allocated), or NULL; an unreadable manifest
 * gives none, with a warning.  0 or -1.
 */
int manifest_table_versions(struct bucket *b, const struct plan *p, char **versions);

/*
 * Merge the plan's tables into .dataspoc/manifest.json (under the manifest
 * lock).  A manifest.json that cannot be read is kept as
 * manifest.json.broken-RUN and rebuilt from the bucket's data files and
 * success run logs (one warning): only a store error fails it.  0 or -1.
 */
int manifest_update(struct bucket *b, const struct plan *p);

#endif
