/*
 * config: pipeline files (YAML, libyaml) and $DATASPOC_PIPE_HOME.
 *
 * Keys are those of the Python DataSpoc Pipe.  Unknown keys, wrong types and
 * bad values are errors naming file:line:col (libyaml's marks, 1-based).
 */
#ifndef PIPE_CONFIG_H
#define PIPE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

enum compression {
	COMPRESSION_ZSTD = 0,
	COMPRESSION_GZIP,
	COMPRESSION_NONE
};

struct pipe_config {
	char *name;		/* pipeline name */
	char *file;		/* the YAML file it came from */

	/* source: */
	char **tap_argv;	/* NULL-terminated argv, never run through a shell */
	char *tap_config_file;	/* source.config as a path, or NULL */
	char *tap_config_json;	/* source.config as an inline mapping, as JSON text, or NULL */
	char **streams;		/* source.streams, NULL-terminated, or NULL when absent */
	char *catalog_file;	/* source.catalog, or NULL */

	/* destination: */
	char *bucket;		/* as written: file:///abs, /abs, rel, s3://b/prefix */
	char *path;		/* base path inside the bucket, default "raw"; "" allowed */
	enum compression compression;	/* default zstd */
	int compression_level;	/* default: 3 for zstd, 6 for gzip */
	uint64_t max_file_size;	/* roll-over size of a data file, compressed bytes; default 128 MiB */

	/* incremental: */
	int incremental;	/* incremental.enabled, default 0 */

	/* schedule: */
	char *cron;		/* schedule.cron or NULL */
};

/*
 * The home directory: $DATASPOC_PIPE_HOME, else $HOME/.dataspoc-pipe.
 * Returns a static string.
 */
const char *config_home(void);

/* 1 when name is a valid pipeline name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
int config_valid_name(const char *name);

/*
 * Load pipeline NAME from <home>/pipelines/NAME.yaml.  Merges defaults from
 * <home>/config.yaml when that file exists (its "destination:" mapping gives
 * defaults for the pipeline's destination keys).  Reports errors on stderr
 * (err_msg) and returns -1; cfg is then freed.
 */
int config_load_name(const char *name, struct pipe_config *cfg);

/*
 * Load a pipeline from FILE (the -c option); its name is the file's basename
 * without .yaml/.yml.  Same errors as config_load_name().
 */
int config_load_file(const char *file, struct pipe_config *cfg);

void config_free(struct pipe_config *cfg);

/*
 * The source name used in the bucket layout: the tap's basename with a
 * leading "dataspoc-" and then "tap-" removed ("tap-postgres" -> "postgres",
 * "dataspoc-tap-csv" -> "csv").  Newly allocated.
 */
char *config_source_name(const struct pipe_config *cfg);

/* File extension for a compression: ".zst", ".gz" or "". */
const char *config_compression_ext(enum compression c);

/*
 * Parse a size: a non-negative integer with an optional suffix
 * K, KB, KiB, M, MB, MiB, G, GB, GiB (all powers of 1024).  Returns 0 or -1.
 */
int config_parse_size(const char *s, uint64_t *out);

#endif
