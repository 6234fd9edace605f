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
 * Sharded runs (docs/SCALE.md): shard I of N selects, of the streams the
 * pipeline selects, those whose tap_stream_id hashes to I:
 * catalog_stream_shard() is FNV-1a (32 bits) of the id's bytes, modulo N,
 * stable across machines and versions.  catalog_shard() makes every later
 * catalog_select() of this process keep only shard index's streams (n 0:
 * all of them), but a stream whose metadata (source.metadata) sets
 * "shard-split": true, which every shard selects: a tap that reads
 * DATASPOC_PIPE_SHARD splits it (the built-in PostgreSQL tap, by page
 * ranges).  catalog_parse_shard() reads "I/N" (0 <= I < N <=
 * CATALOG_SHARDS_MAX): 0, or -1 when text is of another shape.
 */
#define CATALOG_SHARDS_MAX 1000
unsigned long catalog_stream_shard(const char *id, size_t len, unsigned long n);
void catalog_shard(unsigned long index, unsigned long n);
int catalog_parse_shard(const char *text, unsigned long *index, unsigned long *n);

/*
 * What the tap answered before, cached beside the pipeline's YAML file:
 * NAME.catalog.json, its discovered catalog byte for byte, and NAME.tap.json,
 *
 *   {"tap":["tap-mysql"],"catalog_flag":"--properties"}
 *
 * the tap command those answers came from and the flag its --about gave
 * (catalog_flag is absent until asked).  Neither is used when NAME.tap.json
 * is missing, names another tap command, or refresh is set.
 */
struct catalog_cache {
	char *catalog_path;	/* NAME.catalog.json */
	char *tap_path;		/* NAME.tap.json */
	int valid;		/* NAME.tap.json is this tap command's, no refresh */
	int discovered;		/* the catalog was discovered by this process */
	int recheck;		/* a cached catalog is discovered again (and what
				   changed said), unless this run did already */
	const char *flag;	/* the cached flag (static), or NULL */
};

/* Read the cache of cfg's pipeline into c.  Never fails: an unreadable cache is no cache. */
void catalog_cache_open(struct catalog_cache *c, const struct pipe_config *cfg, int refresh);
void catalog_cache_free(struct catalog_cache *c);

/* Where the stderr of the tap's discovery and --about goes. */
struct catalog_log {
	const char *path;	/* appended to; NULL: ours */
	int held;		/* path is a private file, copied to our stderr when
				   discovery fails; --about's stderr is dropped */
	int live;		/* with path: whole lines also shown on our stderr as
				   they come (struct child_process, err_live) */
	const struct mask *mask;	/* secrets masked in it (err_mask); NULL: none */
};

/*
 * The catalog the tap gets, when the pipeline selects streams or sets
 * metadata: source.catalog, or the discovered one (from the cache when
 * valid; the tap runs with config_args and --discover otherwise, or when a
 * name in source.streams is missing from the cached catalog: the tap may
 * offer it since), edited by catalog_select().  The result goes to
 * out_path; selected as above.  0 or -1.
 */
int catalog_prepare(const struct pipe_config *cfg, char *const *config_args,
		    struct catalog_cache *cache, const char *out_path,
		    const struct catalog_log *log, struct sb *selected);

/*
 * The streams the tap's discovery offers (the tap runs with config_args and
 * --discover, its stderr dropped), their tap_stream_ids appended to names
 * as "a, b".  For a run that selected nothing and got nothing: a tap that
 * discovers (tap-postgres) extracts no stream unless told which.  Returns
 * how many, 0 when discovery fails or gives no catalog.
 */
size_t catalog_offered(const struct pipe_config *cfg, char *const *config_args,
		       struct sb *names);

/*
 * The flag that hands the tap its catalog: source.catalog_flag when set,
 * else the cached answer, else "--catalog" when the tap's --about lists the
 * "catalog" capability, else "--properties" (singer-io's taps, which have
 * no --about, read only --properties); the answer is then cached, and
 * when NAME.tap.json cannot be written, kept for the run in the driver's
 * private folder ($DATASPOC_PIPE_RUN_DIR/tap-about.json), where the run's
 * later pipe-tap finds it.  Returns a static string.
 */
const char *catalog_flag(const struct pipe_config *cfg, struct catalog_cache *cache,
			 const struct catalog_log *log);

#endif
