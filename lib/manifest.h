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

/* What the manifest records of the table in one of a plan's streams' folder. */
struct manifest_rec {
	char *version;	/* its "table_version" (the version last activated there), raw JSON, or NULL */
	char *column;	/* its "partition"'s "column": the key of its Hive folders, or NULL */
	int unknown;	/* the manifest could not be read: nothing is known of the table */
};

/*
 * What the manifest records of each of the plan's streams' tables, into
 * rec[i] (members newly allocated, NULL when not recorded); an unreadable
 * manifest records nothing (with a warning that the versions are unknown,
 * when warn).  0 or -1.
 */
int manifest_recorded(struct bucket *b, const struct plan *p, struct manifest_rec *rec, int warn);

/* Free rec[0..n) and rec. */
void manifest_recs_free(struct manifest_rec *rec, size_t n);

/*
 * Merge the plan's tables into .dataspoc/manifest.json (under the manifest
 * lock).  A manifest.json that cannot be read is kept as
 * manifest.json.broken-RUN and rebuilt from the bucket's data files and
 * success run logs (one warning): only a store error fails it.  0 or -1.
 */
int manifest_update(struct bucket *b, const struct plan *p);

#endif
