/*
 * config: pipeline files (YAML, libyaml) and $DATASPOC_PIPE_HOME.
 *
 * Keys are those of the Python DataSpoc Pipe.  Unknown keys, wrong types and
 * bad values are errors naming file:line:col (libyaml's marks, 1-based).
 *
 * The schema (anything else is an error):
 *
 *   source:           required mapping
 *     tap:            required: a string, split into words as sh(1) would
 *                     split a simple command, or a list of strings (argv,
 *                     taken verbatim).  No shell ever runs it, so a string
 *                     holding what sh would expand or interpret ($ ` | & ;
 *                     < > ( ) * ? [ unquoted, $ or ` inside "...", a word
 *                     starting with ~ or #, a newline, a leading VAR=value)
 *                     is refused rather than passed on literally.  Single
 *                     quotes are literal; in double quotes \ escapes $ ` " \.
 *     config:         a path to a JSON file, or an inline mapping (below)
 *     streams:        a non-empty list of distinct, non-empty stream names
 *     catalog:        a path
 *     metadata:       {stream-or-glob: {metadata-key: value}}, Meltano-style
 *                     overrides applied to the discovered catalog
 *     catalog_flag:   catalog | properties: how the tap takes a catalog
 *                     (default: asked from the tap's --about)
 *   destination:      a mapping, required unless config.yaml gives the bucket
 *     bucket:         required (here or in config.yaml): file:///abs/dir,
 *                     /abs/dir, ~/dir, a relative directory (relative to the
 *                     directory of the YAML file it is written in, as
 *                     source.config is; config.yaml's relative to
 *                     config.yaml's), s3://bucket[/prefix] or
 *                     gs://bucket[/prefix]; other schemes, and s3:, gs: or
 *                     file: without "//", are refused.  Stored absolute.
 *     path:           default "raw"; "" or relative components, none of
 *                     them empty, "." or ".."
 *     compression:    zstd | gzip | none, default zstd; snappy too with
 *                     format: parquet (the Python tool's Parquet codecs)
 *     compression_level:  zstd 1..19 (default 3), gzip 1..9 (default 6);
 *                     none for snappy
 *     max_file_size:  bytes, or a size for config_parse_size() (lib/size.h);
 *                     at least 1 KiB; default 128 MiB
 *     endpoint_url:   http:// or https:// URL of an S3-compatible store, or
 *                     of an Azure account's blob endpoint (docs/AZURE.md)
 *     account_name:   az:// only: the Azure storage account (3 to 24
 *                     lower-case letters and digits)
 *     format:         parquet (default, as the Python tool) or jsonl
 *                     (lib/parquet.h, lib/zwriter.h)
 *     row_group_rows: parquet only: rows to a row group, 1..2^31-1,
 *                     default 1000000
 *     row_group_size: parquet only: a size (config_parse_size()), at least
 *                     1 KiB, default 16 MiB: uncompressed value bytes to a
 *                     row group, and about the memory each open file holds.
 *     string_columns: parquet only: {stream: [column, ...], ...}, both
 *                     fnmatch(3) patterns: those columns are STRING whatever
 *                     their schema says, each value its JSON text (a string's
 *                     decoded contents)
 *     schema_mismatch: parquet only: widen (default) or fail: what a value
 *                     that does not fit its column does (widen: the stream
 *                     goes on in a new file whose column holds it, see
 *                     lib/parquet.h; fail: the run fails)
 *                     These four keys in a pipeline whose format is not
 *                     parquet are an error (config.yaml's defaults may set
 *                     them for all)
 *     load_method:    append-only | upsert | overwrite: how each stream's
 *                     table takes a run's records (default: append-only for
 *                     an incremental pipeline, overwrite otherwise); upsert
 *                     needs format parquet and no checkpoint_every
 *     hard_delete:    true/false (default true): with upsert, a record whose
 *                     _sdc_deleted_at is set removes its key
 *     key_properties: a list of property names: the key of the streams
 *                     whose SCHEMA gives none (upsert)
 *     streams:        {stream-pattern: {load_method, hard_delete,
 *                     key_properties}}: per-stream overrides, fnmatch(3)
 *                     patterns, the first that matches a stream wins
 *     partition_by:   _extraction_date (default: the dt= folder of the run's
 *                     UTC date, what the Python DataSpoc Pipe writes into
 *                     every pipeline), a record field (FIELD), or a mapping
 *                     {field: FIELD, granularity: day|hour|month|year|value}:
 *                     each record lands in the Hive folder of its own value,
 *                     <table>/FIELD_GRANULARITY=VALUE/ (docs/LAKE.md,
 *                     Partitions); without a granularity, day when the
 *                     stream's SCHEMA says format date-time or date, else
 *                     value.  With load_method upsert a key is in the
 *                     folder of its latest value only (lib/merge.c).
 *   incremental:
 *     enabled:        true/false/yes/no/on/off, any case; default false
 *     checkpoint_every: a duration (30s, 15m, 1h) or a size of records
 *                     (512MiB): at the first STATE after each, the run
 *                     commits what it has so far (DESIGN.md, Checkpoints);
 *                     needs enabled: true
 *   schedule:
 *     cron:           five crontab fields, or @hourly, @daily, ...
 *
 * A key whose value is YAML null (empty, ~, null) is taken as absent, except
 * source, destination, source.tap and destination.bucket, where it is an
 * error.  Paths (source.config, source.catalog, a destination.bucket that is
 * not a URL) are resolved one way: ~ or a leading ~/ is $HOME (~user is
 * refused), /... is kept, anything else is relative to the YAML file's
 * directory (leading ./ dropped, leading ../ taken off the directory's real
 * path); they are stored absolute.
 *
 * An inline source.config mapping becomes compact JSON text, keys in file
 * order.  Quoted and block scalars are strings; plain scalars follow the
 * YAML 1.2 core schema: null/~/empty -> null, true/false (3 casings) ->
 * true/false, decimal/0o/0x integers and floats -> JSON numbers (normalised
 * to JSON syntax: 0x1F -> 31, +1 -> 1, .5 -> 0.5, 1. -> 1.0), anything else
 * a string.  Plain scalars that YAML 1.1 (the Python tool's PyYAML) reads
 * differently are refused with a hint to quote them: yes/no/on/off (a
 * boolean there, a string here) and integers with a leading zero (octal
 * there).  .inf and .nan have no JSON form and are refused too.
 *
 * Anchors, aliases, merge keys (<<) and tags are refused: they make a
 * pipeline hard to audit.  A file holds one YAML document, at most 1 MiB.
 *
 * <home>/config.yaml, when it exists, may hold a mapping with a
 * "destination:" mapping (same keys and checks as a pipeline's; "defaults:",
 * as written by the Python tool's init, is read the same way, before
 * destination:).  Each key set there is a default for every pipeline,
 * whether loaded by name or by file; a pipeline may then leave out
 * destination: altogether.  A default compression_level applies
 * only when the pipeline ends up with the compression it was given for.  An
 * empty config.yaml, or one holding only comments, is fine.
 */
#ifndef PIPE_CONFIG_H
#define PIPE_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "compression.h"
#include "sb.h"

/* How a stream's table takes a run's records (destination.load_method). */
enum config_method { CONFIG_LOAD_DEFAULT, CONFIG_LOAD_APPEND, CONFIG_LOAD_UPSERT, CONFIG_LOAD_OVERWRITE };

/* One load setting: the pipeline's (pattern NULL) or a destination.streams entry. */
struct config_load {
	char *pattern;		/* fnmatch(3) pattern of stream names, or NULL */
	enum config_method method;	/* CONFIG_LOAD_DEFAULT: not set here */
	int hard_delete;	/* 0, 1, or -1: not set here */
	char *keys;		/* key_properties as a JSON array of strings, or NULL */
	size_t line;		/* where its load_method is (1-based), or 0 */
};

/* destination.partition_by's granularity (AUTO: by the field's SCHEMA). */
enum config_granularity {
	CONFIG_GRAN_AUTO, CONFIG_GRAN_DAY, CONFIG_GRAN_HOUR, CONFIG_GRAN_MONTH, CONFIG_GRAN_YEAR,
	CONFIG_GRAN_VALUE
};

/* Its name, as written in the config and in folder names ("day"; AUTO: "auto"). */
const char *config_granularity_name(enum config_granularity g);

struct pipe_config {
	char *name;		/* pipeline name */
	char *file;		/* the YAML file it came from */
	char *dir;		/* file's folder, absolute: what its relative paths are relative to */

	/* source: */
	char **tap_argv;	/* NULL-terminated argv, never run through a shell */
	int tap_listed;		/* source.tap was a YAML list (ours), not a string (Python's) */
	char *tap_config_file;	/* source.config as a path, or NULL */
	char *tap_config_json;	/* source.config as an inline mapping, as JSON text, or NULL */
	size_t tap_config_line, tap_config_col;	/* where source.config is in file (1-based) */
	char **streams;		/* source.streams, NULL-terminated, or NULL when absent */
	char *catalog_file;	/* source.catalog, or NULL */
	char *metadata_json;	/* source.metadata as JSON text {"pattern": {...}}, or NULL */
	char *metadata_where;	/* where each of its values is: {"pattern": {"key": "file:line:col"}} */
	char *catalog_flag;	/* source.catalog_flag: "catalog", "properties" or NULL (ask the tap) */

	/* destination: */
	char *bucket;		/* a URL as written (file:///abs, s3://b/prefix), or an absolute path */
	char *path;		/* base path inside the bucket, default "raw"; "" allowed */
	enum compression compression;	/* default zstd */
	int compression_level;	/* default: 3 for zstd, 6 for gzip */
	uint64_t max_file_size;	/* roll-over size of a data file, compressed bytes; default 128 MiB */
	char *endpoint_url;	/* destination.endpoint_url (S3-compatible store), or NULL */
	char *account_name;	/* destination.account_name (az://), or NULL */
	char *format;		/* destination.format: "jsonl" or "parquet" */
	int parquet;		/* format is parquet */
	int mismatch_fail;	/* parquet: schema_mismatch: fail */
	uint64_t row_group_rows;	/* parquet: rows to a row group, default 1,000,000 */
	uint64_t row_group_size;	/* parquet: uncompressed bytes to a row group, default 16 MiB */
	char **string_columns;	/* parquet: fnmatch(3) patterns in pairs, stream then column,
				 * NULL-terminated, or NULL: the columns written as strings */
	struct config_load *loads;	/* [0] the pipeline's, then destination.streams; NULL: none */
	size_t nloads;
	char *partition_by;	/* destination.partition_by: a record field, or NULL: the dt= of
				 * the run's date (_extraction_date) */
	enum config_granularity partition_granularity;

	/* incremental: */
	int incremental;	/* incremental.enabled, default 0 */
	unsigned long checkpoint_seconds;	/* incremental.checkpoint_every as a duration, or 0 */
	uint64_t checkpoint_bytes;	/* ... as a size of records (their JSON text), or 0 */

	/* schedule: */
	char *cron;		/* schedule.cron or NULL */
};

/*
 * The home directory: $DATASPOC_PIPE_HOME, else $HOME/.dataspoc-pipe
 * (trailing slashes removed); with HOME unset or empty, the user's home
 * from the password database.  Returns a static string, valid until a later
 * call finds those variables changed.
 */
const char *config_home(void);

/*
 * From now on config_home() asks getent(1) for the user's home, not
 * getpwuid(3), and reads /etc/passwd itself when getent cannot run: for a
 * statically linked program (pipe-tap), whose getpwuid(3) would load the
 * NSS modules of the shared C library, which it cannot promise to run.
 */
void config_home_by_getent(void);

/* 1 when name is a valid pipeline name: [A-Za-z0-9][A-Za-z0-9._-]{0,63}. */
int config_valid_name(const char *name);

/*
 * The pipeline files.  Pipeline NAME is <home>/pipelines/NAME.yaml, or
 * NAME.yml when there is no NAME.yaml; a file given with -c is named by its
 * base name without .yaml or .yml.  These functions are the one place that
 * rule is written.
 */

/* config_valid_name(), else 0 and said: "invalid pipeline name 'x' (...)". */
int config_name_ok(const char *name);

/*
 * The file of pipeline NAME (newly allocated): NAME.yaml when it exists (or
 * cannot be looked at), else NAME.yml when that one does, else NAME.yaml
 * with *missing set to 1 (0 otherwise): the file a new pipeline gets.
 */
char *config_pipeline_file(const char *name, int *missing);

/* The length of base's ".yaml" or ".yml" ending, 0 when it has none (or is only that). */
size_t config_pipeline_ext(const char *base);

/*
 * The pipelines of the home directory: NAME for each valid name with a
 * pipelines/NAME.yaml or NAME.yml, sorted bytewise, once each (a file whose
 * name is not a pipeline's is skipped with a warning).  *names is
 * NULL-terminated, freed with util_strv_free().  A missing directory has
 * none.  0, or -1 (reported) when it cannot be read.
 */
int config_pipelines(char ***names, size_t *n);

/*
 * 0 when pipeline NAME surely has no transform: no <home>/transforms/NAME.jq
 * nor NAME.py (not even a dangling link), or no transforms folder at all;
 * else 1 (one of them is there, or the folder cannot be searched), for
 * pipe-sink -n to check.
 */
int config_transform_maybe(const char *name);

/*
 * Load pipeline NAME from <home>/pipelines/NAME.yaml (NAME.yml when there is
 * no .yaml).  Merges defaults from <home>/config.yaml when that file exists
 * (its "destination:" mapping gives defaults for the pipeline's destination
 * keys).  Returns 0 with every field of cfg set (cfg's previous contents are
 * overwritten, not freed).  Reports errors on stderr (err_msg, one line,
 * "<file>:<line>:<col>: <what>" where a position is known) and returns -1;
 * cfg is then all zero.
 */
int config_load_name(const char *name, struct pipe_config *cfg);

/*
 * Load a pipeline from FILE (the -c option); its name is the file's basename
 * without .yaml/.yml, and must be a valid name.  Defaults from
 * <home>/config.yaml apply as for config_load_name().  Same errors.
 */
int config_load_file(const char *file, struct pipe_config *cfg);

/*
 * Check a destination.bucket value as a pipeline's is checked, and resolve
 * it as one written in a file in directory dir (absolute): a URL is kept as
 * written, a path resolved as the header says.  The one rule of every
 * bucket a command takes (pipe-state -b, manifest BUCKET).  Returns the
 * value, newly allocated, or NULL with the reason in why, what (NULL:
 * "destination.bucket") naming the value ("bucket 's3:/b' is not a valid
 * URL (...)"); nothing printed.
 */
char *config_bucket_resolve(const char *bucket, const char *dir, const char *what, struct sb *why);

/*
 * The destination.bucket default of <home>/config.yaml, resolved, in *out
 * (newly allocated), or NULL when it gives none.  -1 after reporting when
 * config.yaml does not load.
 */
int config_default_bucket(char **out);

/*
 * What runs need of the tap's config beyond the pipeline file: a
 * source.config file must be readable and hold a JSON object.  Reports
 *   <pipeline file>:<line>:<col>: source.config: cannot read '<f>': <reason>
 *   <f>:<line>:<col>: the tap's config (source.config) is not JSON: <why>
 * and returns -1; otherwise 0.  When placeholders is not NULL, the members
 * of the tap's config (file or inline) still holding a template value of
 * `dataspoc-pipe add` (a string containing CHANGE_ME, or starting with
 * /path/to/) are appended to it as ".password, .files[0].path".
 */
struct sb;
int config_check_source(const struct pipe_config *cfg, struct sb *placeholders);

/*
 * Whether a key no config knows, and no typo of one, is said (a warning;
 * the Python DataSpoc Pipe ignores such keys, its users' files carry them):
 * set by the programs of `run` and `validate` that read the config first,
 * so that a run says it once.  0 by default.
 */
extern int config_unknown_warn;

/* Free every field and zero cfg; fine on a zeroed struct and on NULL. */
void config_free(struct pipe_config *cfg);

/*
 * The source name used in the bucket layout, by the Python DataSpoc Pipe's
 * rule so that its tables stay where they are: of source.tap's last word
 * (the first, for a YAML list: a list is ours), the path's stem (no
 * folder, no last ".suffix") with a leading "dataspoc-" and every "tap-"
 * removed ("tap-postgres" -> "postgres", "python mock_tap.py" ->
 * "mock_tap", "/opt/taps/tap-x" -> "x", "dataspoc-tap-csv" -> "csv").
 * "tap" when that leaves nothing, "." or "..", or there is no tap.  Newly
 * allocated.
 */
char *config_source_name(const struct pipe_config *cfg);

/* File extension for a compression: ".zst", ".gz" or "". */
const char *config_compression_ext(enum compression c);
/* "zstd", "gzip", "none" or "snappy". */
const char *config_compression_name(enum compression c);

/*
 * The load settings of stream (as the tap names it): the pipeline's, each
 * overridden by the first destination.streams entry matching the stream
 * that sets it.  *method is never CONFIG_LOAD_DEFAULT (append-only for an
 * incremental pipeline, overwrite otherwise), *hard_delete defaults to 1,
 * *keys (a JSON array, cfg's) to NULL.
 */
void config_stream_load(const struct pipe_config *cfg, const char *stream, enum config_method *method,
			int *hard_delete, const char **keys);
/* "append-only", "upsert", "overwrite" */
const char *config_method_name(enum config_method m);
/* 1 when some stream may be upsert. */
int config_any_upsert(const struct pipe_config *cfg);

/* 1 when the pipeline has incremental.checkpoint_every. */
int config_checkpoints(const struct pipe_config *cfg);

#endif
