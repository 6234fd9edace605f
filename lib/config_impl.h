/*
 * config_impl: what the files of the config module share; only they include
 * this header (the module's contract is config.h).  config.c is cut along
 * its seams:
 *
 *	config.c	the home, names, freeing; loading a pipeline file: its
 *			top level, incremental: and schedule:
 *	config_yaml.c	reading and loading one YAML file (what is refused
 *			before loading: anchors, aliases, tags, nesting, more
 *			documents), its nodes and keys, the messages naming
 *			file:line:col, and the paths written in it
 *	config_source.c	source: (source.tap, .config, .streams, ...), and the
 *			check of the tap's config (config_check_source())
 *	config_words.c	source.tap as a string: its words, as sh(1) would split
 *			them, refusing what a shell would expand
 *	config_json.c	an inline mapping (source.config, source.metadata) as
 *			JSON text, under the YAML 1.2 core schema
 *	config_dest.c	destination: its keys and checks, config.yaml's
 *			defaults, and the two merged into the pipeline's
 *
 * Every check reports once, with config_yerr() at the node it is about, and
 * returns -1; its callers unwind and return -1 in turn.
 */
#ifndef PIPE_CONFIG_IMPL_H
#define PIPE_CONFIG_IMPL_H

#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <yaml.h>

#include "config.h"
#include "err.h"
#include "sb.h"

/* One YAML file being read. */
struct yctx {
	const char *file;	/* for messages */
	char *dir;		/* its directory, absolute when we could tell */
	yaml_document_t doc;
	int loaded;
};

/* Keys allowed in one mapping; the first `shown` are listed in hints. */
struct keys {
	const char *section;	/* "destination", or NULL at the top level */
	const char *const *names;
	size_t n, shown;
};

/* Destination keys, as read from one file, before defaults are merged. */
enum {
	D_BUCKET, D_PATH, D_COMPRESSION, D_LEVEL, D_MAXSIZE, D_ENDPOINT,
	D_FORMAT, D_RG_ROWS, D_RG_SIZE, D_STRCOLS, D_MISMATCH, D_ACCOUNT, D_LOAD, D_HARDDEL,
	D_KEYPROPS, D_STREAMS, D_PARTITION, D_NKEYS
};

struct dest {
	int set[D_NKEYS];
	yaml_mark_t at[D_NKEYS];
	char *bucket, *path, *endpoint_url, *account_name;
	enum compression compression;
	long level;
	const char *level_text;	/* inside the document: valid while it is loaded */
	uint64_t max_file_size;
	int parquet;		/* format: parquet */
	int mismatch_fail;	/* schema_mismatch: fail */
	uint64_t rg_rows, rg_size;
	char **strcols;		/* string_columns: stream, column, stream, ... NULL */
	/* load_method, hard_delete, key_properties ([0], pattern NULL) and streams: */
	struct config_load *loads;
	size_t nloads;
	char *part_field;	/* partition_by: a field, or NULL (_extraction_date) */
	enum config_granularity part_gran;
};

#define FOR_PAIRS(map, pair) \
	for ((pair) = (map)->data.mapping.pairs.start; \
	     (pair) < (map)->data.mapping.pairs.top; (pair)++)

/* ---- small helpers, static inline ---- */

static inline yaml_node_t *node(struct yctx *c, int i)
{
	return yaml_document_get_node(&c->doc, i);
}

static inline const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static inline int is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

/* YAML null: an empty, ~ or null plain scalar. */
static inline int is_null(const yaml_node_t *n)
{
	const char *s;

	if (!is_plain(n))
		return 0;
	s = sval(n);
	return *s == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* 1 when s is one of list (NULL-terminated). */
static inline int one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* 1 when s[0..n) is n > 0 digits of base 8, 10 or 16. */
static inline int all_digits(const char *s, size_t n, int base)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (base == 8 ? !(ch >= '0' && ch <= '7') :
		    base == 16 ? !isxdigit(ch) : !isdigit(ch))
			return 0;
	}
	return 1;
}

/* Append s to the NULL-terminated vector *v of *n strings. */
static inline void push(char ***v, size_t *n, char *s)
{
	*v = xrealloc(*v, (*n + 2) * sizeof(**v));
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

/* Free a NULL-terminated vector of strings; NULL is fine. */
/* ---- between the files ---- */

/* config_yaml.c */

/* err_msg() of the formatted text, control characters shown as '?'. */
void config_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* config_say() of "file:line:col: " and the text, m being the place in c's file; -1. */
int config_yerr(const struct yctx *c, yaml_mark_t m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * Read all of file (a pipe too, at most 1 MiB; noun names it in messages)
 * into *bufp, NUL-terminated, its length in *lenp.  Returns 0; -2 when the
 * file does not exist and missing_ok; otherwise reports and returns -1.
 */
int config_read_file(const char *file, const char *noun, int missing_ok,
		     char **bufp, size_t *lenp);
/*
 * Check and load buf, the text of file, into c (overwritten): one document,
 * without anchors, aliases or tags, nested at most 64 deep; c->dir is its
 * directory.  0, or -1 after reporting.  config_yaml_close() c either way.
 */
int config_yaml_load(struct yctx *c, const char *file, const char *buf, size_t len);
void config_yaml_close(struct yctx *c);
/* The scalar n as a C string in *out; what names it and type what it must be, for messages. */
int config_get_str(struct yctx *c, const yaml_node_t *n, const char *what,
		   const char *type, const char **out);
/*
 * The index in ks of the key of pair, a pair of a mapping; seen[] (ks->n
 * entries, NULL at first) remembers the keys met so far, so that a
 * duplicate is refused.  -1 after reporting a duplicate key or a typo of a
 * known one (within a small edit distance: "did you mean"); any other
 * unknown key is CONFIG_KEY_IGNORED, as the Python tool ignores it, with a
 * warning when config_unknown_warn (config.h) is set.
 */
#define CONFIG_KEY_IGNORED (-2)
int config_key_index(struct yctx *c, const struct keys *ks,
		     const yaml_node_pair_t *pair, yaml_node_t **seen);
/*
 * Resolve path s as a file in directory dir (absolute) means it: ~ and ~/...
 * are $HOME, /... is kept, anything else is relative to dir, with leading ./
 * dropped and leading ../ taken off dir.  what names the key in messages.
 * Returns the path, newly allocated, or NULL with the reason in why.
 */
char *config_resolve_path(const char *s, const char *dir, const char *what,
			  struct sb *why);
/* The path scalar v, resolved against c's directory, into *out; what names the key. */
int config_parse_path(struct yctx *c, yaml_node_t *v, const char *what, char **out);

/* config_words.c */

/*
 * Split s into words as sh(1) would split a simple command into *argvp
 * (NULL-terminated; NULL when s holds none).  -1 with why[] filled when s
 * holds what a shell would expand or interpret.
 */
int config_split_words(const char *s, char ***argvp, struct sb *why);

/* config_load.c */

/*
 * destination.load_method, .hard_delete, .key_properties (k: D_LOAD,
 * D_HARDDEL, D_KEYPROPS) into d->loads[0], and destination.streams
 * (D_STREAMS) into the entries after it.  0, or -1 after reporting.
 */
int config_parse_load(struct yctx *c, int k, yaml_node_t *v, struct dest *d);
/*
 * cfg's load settings from d, else from def (config.yaml's), and their
 * checks against the rest of cfg (format, checkpoints).  0 or -1.
 */
int config_load_merge(struct yctx *c, struct dest *d, const struct dest *def,
		      struct pipe_config *cfg);
void config_loads_free(struct config_load *l, size_t n);

/* config_json.c */

/*
 * Append the YAML value n as JSON to out; kp is its key path
 * ("source.config.a[0]") for messages, and is left as it was given.
 * 0, or -1 after reporting.
 */
int config_yaml_json(struct yctx *c, yaml_node_t *n, struct sb *kp, struct sb *out);

/* config_source.c */

/* Read the source: mapping map into cfg.  0, or -1 after reporting. */
int config_parse_source(struct yctx *c, yaml_node_t *map, struct pipe_config *cfg);

/* config_dest.c */

/* Free d's strings and zero it. */
void config_dest_free(struct dest *d);
/* Read a destination mapping into d (which may hold earlier keys: those of map win). */
int config_parse_dest(struct yctx *c, yaml_node_t *map, struct dest *d);
/*
 * Set cfg's destination fields from d, what the pipeline's destination:
 * mapping (dmap; NULL when it has none) gives, and from def, config.yaml's
 * defaults, for what it leaves out; d's strings are taken.  root, the
 * document, is for messages.  0, or -1 after reporting.
 */
int config_dest_merge(struct yctx *c, struct dest *d, const struct dest *def,
		      const yaml_node_t *dmap, const yaml_node_t *root, struct pipe_config *cfg);
/*
 * Read <home>/config.yaml, when it exists, into d (zeroed): its defaults:
 * and destination: mappings.  0, or -1 after reporting (d freed).
 */
int config_load_home(struct dest *d);

#endif
