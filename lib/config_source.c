/*
 * config_source: a pipeline's source: mapping, and the check of the tap's
 * config it names (config_check_source()).
 */
#include "config_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "util.h"

static const char *const source_names[] = {
	"tap", "config", "streams", "catalog", "metadata", "catalog_flag"
};
static const struct keys source_keys = { "source", source_names, 6, 6 };
enum { S_TAP, S_CONFIG, S_STREAMS, S_CATALOG, S_METADATA, S_CATALOG_FLAG, S_NKEYS };

/*
 * The Python DataSpoc Pipe's built-in sources, by the names its YAML gives
 * them, are the bundled taps that read the same config.  No Singer tap is
 * named so (theirs are tap-*), so the names shadow nothing a user installs.
 */
static const char *const builtin_taps[][2] = {
	{"parquet", "dataspoc-tap-parquet"},
	{"google-sheets-public", "dataspoc-tap-google-sheets-public"},
};

static void resolve_builtin(char **argv)
{
	size_t i;

	for (i = 0; i < sizeof(builtin_taps) / sizeof(builtin_taps[0]); i++) {
		if (strcmp(argv[0], builtin_taps[i][0]) == 0) {
			free(argv[0]);
			argv[0] = xstrdup(builtin_taps[i][1]);
			return;
		}
	}
}

static int parse_tap(struct yctx *c, yaml_node_t *v, struct pipe_config *cfg)
{
	const char *what = "source.tap must be a string or a list of strings";
	char **argv = NULL;
	size_t n = 0;

	if (v->type == YAML_SCALAR_NODE && !is_null(v)) {
		struct sb why = SB_INIT;
		const char *s;

		if (config_get_str(c, v, "source.tap", "a string or a list of strings", &s) < 0)
			return -1;
		if (config_split_words(s, &argv, &why) < 0) {
			int r = config_yerr(c, v->start_mark, "source.tap: %s", why.buf);

			sb_free(&why);
			return r;
		}
	} else if (v->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;

		for (it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *e = node(c, *it);
			const char *s;

			if (e->type != YAML_SCALAR_NODE) {
				util_strv_free(argv);
				return config_yerr(c, e->start_mark, "%s", what);
			}
			if (config_get_str(c, e, "source.tap", "a string or a list of strings", &s) < 0) {
				util_strv_free(argv);
				return -1;
			}
			push(&argv, &n, xstrdup(s));
		}
	} else {
		return config_yerr(c, v->start_mark, "%s", what);
	}
	if (argv == NULL || argv[0][0] == '\0') {
		util_strv_free(argv);
		return config_yerr(c, v->start_mark, "source.tap names no command");
	}
	resolve_builtin(argv);
	cfg->tap_argv = argv;
	cfg->tap_listed = v->type == YAML_SEQUENCE_NODE;
	return 0;
}

static int parse_config(struct yctx *c, yaml_node_t *v, struct pipe_config *cfg)
{
	struct sb kp = SB_INIT, out = SB_INIT;
	int rc;

	cfg->tap_config_line = v->start_mark.line + 1;
	cfg->tap_config_col = v->start_mark.column + 1;
	if (v->type == YAML_SCALAR_NODE)
		return config_parse_path(c, v, "source.config", &cfg->tap_config_file);
	if (v->type != YAML_MAPPING_NODE)
		return config_yerr(c, v->start_mark, "source.config must be a path (a string) or a mapping");
	sb_adds(&kp, "source.config");
	rc = config_yaml_json(c, v, &kp, &out);
	sb_free(&kp);
	if (rc < 0) {
		sb_free(&out);
		return -1;
	}
	cfg->tap_config_json = sb_detach(&out);
	return 0;
}

static int parse_streams(struct yctx *c, yaml_node_t *v, struct pipe_config *cfg)
{
	yaml_node_item_t *it, *jt;
	char **streams = NULL;
	size_t n = 0;

	if (v->type != YAML_SEQUENCE_NODE)
		return config_yerr(c, v->start_mark, "source.streams must be a list of stream names");
	if (v->data.sequence.items.start == v->data.sequence.items.top)
		return config_yerr(c, v->start_mark, "source.streams is empty (leave it out to take every stream)");
	for (it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
		yaml_node_t *e = node(c, *it);
		const char *s;

		if (config_get_str(c, e, "source.streams", "a list of stream names", &s) < 0)
			goto fail;
		if (*s == '\0') {
			config_yerr(c, e->start_mark, "source.streams: a stream name is empty");
			goto fail;
		}
		for (jt = v->data.sequence.items.start; jt < it; jt++) {
			if (strcmp(sval(node(c, *jt)), s) == 0) {
				config_yerr(c, e->start_mark, "source.streams: duplicate stream '%s'", s);
				goto fail;
			}
		}
		push(&streams, &n, xstrdup(s));
	}
	cfg->streams = streams;
	return 0;
fail:
	util_strv_free(streams);
	return -1;
}

/*
 * source.metadata: {STREAM-OR-PATTERN: {KEY: VALUE, ...}, ...}, Meltano's
 * per-stream metadata overrides, kept as JSON text.
 */
static int parse_metadata(struct yctx *c, yaml_node_t *v, struct pipe_config *cfg)
{
	struct sb kp = SB_INIT, out = SB_INIT;
	yaml_node_pair_t *pair;
	int rc;

	if (v->type != YAML_MAPPING_NODE)
		return config_yerr(c, v->start_mark,
				   "source.metadata must be a mapping of stream names (or patterns) to metadata");
	FOR_PAIRS(v, pair) {
		yaml_node_t *val = node(c, pair->value);

		if (val->type != YAML_MAPPING_NODE)
			return config_yerr(c, val->start_mark,
					   "source.metadata.%s must be a mapping of metadata keys to values",
					   sval(node(c, pair->key)));
	}
	/* where each value is written, for a message about it (issue #29) */
	sb_addc(&out, '{');
	FOR_PAIRS(v, pair) {
		yaml_node_t *k = node(c, pair->key), *val = node(c, pair->value);
		yaml_node_pair_t *kv;
		int m = 0;

		sb_adds(&out, out.len > 1 ? "," : "");
		json_quote(&out, sval(k), strlen(sval(k)));
		sb_adds(&out, ":{");
		for (kv = val->data.mapping.pairs.start; kv < val->data.mapping.pairs.top; kv++) {
			yaml_node_t *mk = node(c, kv->key), *mv = node(c, kv->value);
			char *at;

			if (mk == NULL || mv == NULL || mk->type != YAML_SCALAR_NODE)
				continue;
			at = xasprintf("%s:%zu:%zu", c->file, mv->start_mark.line + 1, mv->start_mark.column + 1);
			sb_adds(&out, m++ ? "," : "");
			json_quote(&out, sval(mk), strlen(sval(mk)));
			sb_addc(&out, ':');
			json_quote(&out, at, strlen(at));
			free(at);
		}
		sb_addc(&out, '}');
	}
	sb_addc(&out, '}');
	cfg->metadata_where = sb_detach(&out);
	sb_adds(&kp, "source.metadata");
	rc = config_yaml_json(c, v, &kp, &out);
	sb_free(&kp);
	if (rc < 0) {
		sb_free(&out);
		return -1;
	}
	cfg->metadata_json = sb_detach(&out);
	return 0;
}

int config_parse_source(struct yctx *c, yaml_node_t *map, struct pipe_config *cfg)
{
	yaml_node_t *seen[S_NKEYS] = { NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return config_yerr(c, map->start_mark, "source must be a mapping");
	FOR_PAIRS(map, pair) {
		int k = config_key_index(c, &source_keys, pair, seen);
		yaml_node_t *v = node(c, pair->value);
		int rc = 0;

		if (k == CONFIG_KEY_IGNORED)
			continue;
		if (k < 0)
			return -1;
		if (k == S_TAP && is_null(v)) {
			/* An empty value's mark is the next token's: name the key. */
			return config_yerr(c, node(c, pair->key)->start_mark,
					   "source.tap must be a string or a list of strings");
		} else if (k == S_TAP) {
			rc = parse_tap(c, v, cfg);
		} else if (is_null(v)) {
			continue;
		} else if (k == S_CONFIG) {
			rc = parse_config(c, v, cfg);
		} else if (k == S_STREAMS) {
			rc = parse_streams(c, v, cfg);
		} else if (k == S_CATALOG) {
			rc = config_parse_path(c, v, "source.catalog", &cfg->catalog_file);
		} else if (k == S_METADATA) {
			rc = parse_metadata(c, v, cfg);
		} else if (k == S_CATALOG_FLAG) {
			static const char *const flags[] = { "catalog", "properties", NULL };
			const char *f;

			rc = config_get_str(c, v, "source.catalog_flag", "catalog or properties", &f);
			if (rc == 0 && !one_of(f, flags))
				rc = config_yerr(c, v->start_mark,
						 "source.catalog_flag must be one of catalog, properties, not '%s'", f);
			if (rc == 0)
				cfg->catalog_flag = xstrdup(f);
		}
		if (rc < 0)
			return -1;
	}
	if (cfg->tap_argv == NULL)
		return config_yerr(c, map->start_mark, "missing required key 'tap' in source");
	return 0;
}

/* ---- the tap's config ---- */

/* 1-based line and column (in characters) of byte off of buf. */
static void line_col(const char *buf, size_t len, size_t off, size_t *line, size_t *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < off && i < len; i++) {
		if (buf[i] == '\n') {
			(*line)++;
			*col = 1;
		} else if (((unsigned char)buf[i] & 0xc0) != 0x80) {
			(*col)++;
		}
	}
}

/* Is string value v one of add's template placeholders? */
static int placeholder(const struct json_span *v)
{
	struct sb s = SB_INIT;
	int r;

	json_string_decode(v, &s);
	r = s.buf && (strstr(s.buf, "CHANGE_ME") || strncmp(s.buf, "/path/to/", 9) == 0);
	sb_free(&s);
	return r;
}

/* Append to found the members (as .a.b[0].c) whose values are placeholders. */
static void find_placeholders(const struct json_span *v, struct sb *where, struct sb *found,
			      int depth)
{
	struct json_span key, val;
	size_t pos = 0, keep = where->len, i = 0;

	if (depth > 64)
		return;
	if (v->type == JSON_STRING) {
		if (placeholder(v)) {
			if (found->len)
				sb_adds(found, ", ");
			sb_add(found, where->len ? where->buf : ".", where->len ? where->len : 1);
		}
		return;
	}
	if (v->type == JSON_ARRAY) {
		while (json_array_next(v, &pos, &val)) {
			sb_addf(where, "[%zu]", i++);
			find_placeholders(&val, where, found, depth + 1);
			where->len = keep;
			where->buf[keep] = '\0';
		}
		return;
	}
	if (v->type != JSON_OBJECT)
		return;
	while (json_object_next(v, &pos, &key, &val)) {
		sb_addc(where, '.');
		json_string_decode(&key, where);
		find_placeholders(&val, where, found, depth + 1);
		where->len = keep;
		if (where->buf)
			where->buf[keep] = '\0';
	}
}

int config_check_source(const struct pipe_config *cfg, struct sb *placeholders)
{
	struct sb text = SB_INIT, where = SB_INIT;
	struct json_span v;
	const char *json, *errmsg;
	size_t len, errpos, line, col;
	struct stat st;
	int fd = -1, rc = -1;

	if (cfg->tap_config_file) {
		const char *f = cfg->tap_config_file;

		int bad = (fd = open(f, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &st) != 0;

		if (!bad && S_ISDIR(st.st_mode)) {
			errno = EISDIR;
			bad = 1;
		}
		if (bad || util_read_fd(fd, &text) != 0) {
			config_say("%s:%zu:%zu: source.config: cannot read '%s': %s", cfg->file,
				   cfg->tap_config_line, cfg->tap_config_col, f, strerror(errno));
			goto out;
		}
		json = text.buf ? text.buf : "";
		len = text.len;
		if (json_validate(json, len, &v, &errpos, &errmsg) != 0) {
			line_col(json, len, errpos, &line, &col);
			config_say("%s:%zu:%zu: the tap's config (source.config) is not JSON: %s", f, line, col,
				   errmsg);
			goto out;
		}
		if (v.type != JSON_OBJECT) {
			line_col(json, len, (size_t)(v.p - json), &line, &col);
			config_say("%s:%zu:%zu: the tap's config (source.config) is not a JSON object", f, line,
				   col);
			goto out;
		}
	} else if (cfg->tap_config_json) {
		json = cfg->tap_config_json;
		if (json_validate(json, strlen(json), &v, &errpos, &errmsg) != 0) {
			rc = 0;	/* made by the loader: cannot happen */
			goto out;
		}
	} else {
		rc = 0;
		goto out;
	}
	if (placeholders)
		find_placeholders(&v, &where, placeholders, 0);
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	sb_free(&text);
	sb_free(&where);
	return rc;
}
