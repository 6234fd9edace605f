/* config: pipeline files (YAML, libyaml) and $DATASPOC_PIPE_HOME. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <yaml.h>

#include "cron.h"
#include "err.h"
#include "json.h"
#include "sb.h"
#include "size.h"
#include "util.h"

#define FILE_MAX (1024 * 1024)
#define DEPTH_MAX 64
#define DEFAULT_MAX_FILE_SIZE (128ULL * 1024 * 1024)
#define DEFAULT_ROW_GROUP_ROWS 1000000ULL
#define DEFAULT_ROW_GROUP_SIZE (16ULL * 1024 * 1024)

/* One YAML file being read. */
struct yctx {
	const char *file;	/* for messages */
	char *dir;		/* its directory, absolute when we could tell */
	yaml_document_t doc;
	int loaded;
};

/* Destination keys, as read from one file, before defaults are merged. */
enum {
	D_BUCKET, D_PATH, D_COMPRESSION, D_LEVEL, D_MAXSIZE, D_ENDPOINT,
	D_FORMAT, D_RG_ROWS, D_RG_SIZE, D_STRCOLS, D_MISMATCH, D_PARTITION, D_NKEYS
};

struct dest {
	int set[D_NKEYS];
	yaml_mark_t at[D_NKEYS];
	char *bucket, *path, *endpoint_url;
	enum compression compression;
	long level;
	const char *level_text;	/* inside the document: valid while it is loaded */
	uint64_t max_file_size;
	int parquet;		/* format: parquet */
	int mismatch_fail;	/* schema_mismatch: fail */
	uint64_t rg_rows, rg_size;
	char **strcols;		/* string_columns: stream, column, stream, ... NULL */
};

/* Keys allowed in one mapping; the first `shown` are listed in hints. */
struct keys {
	const char *section;	/* "destination", or NULL at the top level */
	const char *const *names;
	size_t n, shown;
};

static const char *const top_names[] = {
	"source", "destination", "incremental", "schedule"
};
static const struct keys top_keys = { NULL, top_names, 4, 4 };
enum { T_SOURCE, T_DESTINATION, T_INCREMENTAL, T_SCHEDULE };

static const char *const home_names[] = { "destination", "defaults" };
static const struct keys home_keys = { NULL, home_names, 2, 1 };

static const char *const source_names[] = {
	"tap", "config", "streams", "catalog", "metadata", "catalog_flag"
};
static const struct keys source_keys = { "source", source_names, 6, 6 };
enum { S_TAP, S_CONFIG, S_STREAMS, S_CATALOG, S_METADATA, S_CATALOG_FLAG, S_NKEYS };

static const char *const dest_names[] = {
	"bucket", "path", "compression", "compression_level", "max_file_size",
	"endpoint_url", "format", "row_group_rows", "row_group_size", "string_columns",
	"schema_mismatch", "partition_by"
};
static const struct keys dest_keys = { "destination", dest_names, D_NKEYS, D_NKEYS - 1 };

static const char *const incr_names[] = { "enabled" };
static const struct keys incr_keys = { "incremental", incr_names, 1, 1 };

static const char *const sched_names[] = { "cron" };
static const struct keys sched_keys = { "schedule", sched_names, 1, 1 };

/* Messages stay on one line whatever bytes the file or its values hold. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[2048];
	va_list ap;
	char *p;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (p = buf; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	err_msg("%s", buf);
}

static int yerr(const struct yctx *c, yaml_mark_t m, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int yerr(const struct yctx *c, yaml_mark_t m, const char *fmt, ...)
{
	char what[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	say("%s:%zu:%zu: %s", c->file, m.line + 1, m.column + 1, what);
	return -1;
}

/* ---- home and names ---- */

const char *config_home(void)
{
	static char *home;
	const char *env = getenv("DATASPOC_PIPE_HOME");
	char *now;
	size_t len;

	if (env && *env) {
		now = xstrdup(env);
	} else {
		const char *h = getenv("HOME");
		struct passwd *pw;

		if ((h == NULL || *h == '\0') && (pw = getpwuid(getuid())) != NULL)
			h = pw->pw_dir;
		if (h == NULL)
			h = "";
		len = strlen(h);
		while (len > 0 && h[len - 1] == '/')
			len--;
		now = xasprintf("%.*s/.dataspoc-pipe", (int)len, h);
	}
	len = strlen(now);
	while (len > 1 && now[len - 1] == '/')
		now[--len] = '\0';
	/* Keep the string callers hold unless the environment changed. */
	if (home && strcmp(home, now) == 0) {
		free(now);
		return home;
	}
	free(home);
	home = now;
	return home;
}

int config_valid_name(const char *name)
{
	size_t i;

	if (name == NULL || !isalnum((unsigned char)name[0]))
		return 0;
	for (i = 1; name[i]; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (i >= 64 || !(isalnum(ch) || ch == '.' || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

const char *config_compression_name(enum compression c)
{
	static const char *const names[] = { "zstd", "gzip", "none", "snappy" };

	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

const char *config_compression_ext(enum compression c)
{
	switch (c) {
	case COMPRESSION_ZSTD:
		return ".zst";
	case COMPRESSION_GZIP:
		return ".gz";
	case COMPRESSION_NONE:
	case COMPRESSION_SNAPPY:
		break;
	}
	return "";
}

char *config_source_name(const struct pipe_config *cfg)
{
	const char *s, *slash;

	if (cfg == NULL || cfg->tap_argv == NULL || cfg->tap_argv[0] == NULL)
		return xstrdup("tap");
	s = cfg->tap_argv[0];
	slash = strrchr(s, '/');
	if (slash)
		s = slash + 1;
	if (strncmp(s, "dataspoc-", 9) == 0)
		s += 9;
	if (strncmp(s, "tap-", 4) == 0)
		s += 4;
	/* It becomes a folder of the bucket layout. */
	if (*s == '\0' || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		s = "tap";
	return xstrdup(s);
}

static void free_argv(char **v)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; v[i]; i++)
		free(v[i]);
	free(v);
}

void config_free(struct pipe_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->name);
	free(cfg->file);
	free_argv(cfg->tap_argv);
	free(cfg->tap_config_file);
	free(cfg->tap_config_json);
	free_argv(cfg->streams);
	free_argv(cfg->string_columns);
	free(cfg->catalog_file);
	free(cfg->metadata_json);
	free(cfg->catalog_flag);
	free(cfg->bucket);
	free(cfg->path);
	free(cfg->endpoint_url);
	free(cfg->format);
	free(cfg->cron);
	memset(cfg, 0, sizeof(*cfg));
}

/* ---- reading and loading a YAML file ---- */

/*
 * Read all of file (a pipe too) into *bufp.  Returns 0; -2 when the file
 * does not exist and missing_ok; otherwise reports and returns -1.
 */
static int read_all(const char *file, const char *noun, int missing_ok,
		    char **bufp, size_t *lenp)
{
	struct sb sb = SB_INIT;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT && missing_ok)
			return -2;
		say("cannot open '%s': %s", file, strerror(errno));
		return -1;
	}
	for (;;) {
		ssize_t n;

		sb_grow(&sb, 65536);
		n = read(fd, sb.buf + sb.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			say("cannot read '%s': %s", file, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		sb.len += (size_t)n;
		sb.buf[sb.len] = '\0';
		if (sb.len > FILE_MAX) {
			say("%s: %s too large (more than 1 MiB)", file, noun);
			goto fail;
		}
	}
	close(fd);
	*lenp = sb.len;
	*bufp = sb_detach(&sb);
	return 0;
fail:
	close(fd);
	sb_free(&sb);
	return -1;
}

/* Byte offset of a (0-based) line and character column in buf. */
static size_t mark_offset(const char *buf, size_t len, yaml_mark_t m)
{
	size_t i = 0, line = 0, col = 0;

	while (i < len && line < m.line)
		if (buf[i++] == '\n')
			line++;
	while (i < len && col < m.column && buf[i] != '\n') {
		i++;
		while (i < len && ((unsigned char)buf[i] & 0xc0) == 0x80)
			i++;
		col++;
	}
	return i;
}

static int parser_error(const struct yctx *c, const yaml_parser_t *p,
			const char *buf, size_t len)
{
	yaml_mark_t m = p->problem_mark;
	const char *problem = p->problem ? p->problem : "invalid YAML";
	size_t off;

	if (p->error == YAML_MEMORY_ERROR) {
		say("%s: out of memory", c->file);
		return -1;
	}
	if (p->error == YAML_READER_ERROR) {
		size_t i;

		/* A reader error carries a byte offset, not a mark. */
		memset(&m, 0, sizeof(m));
		for (i = 0; i < p->problem_offset && i < len; i++) {
			if (buf[i] == '\n') {
				m.line++;
				m.column = 0;
			} else if (((unsigned char)buf[i] & 0xc0) != 0x80) {
				m.column++;
			}
		}
		return yerr(c, m, "%s", problem);
	}
	off = mark_offset(buf, len, m);
	if (off < len && buf[off] == '\t')
		return yerr(c, m, "%s (a tab: YAML indents with spaces)", problem);
	if (p->context && (p->context_mark.line != m.line ||
			   p->context_mark.column != m.column))
		return yerr(c, m, "%s (%s at line %zu, column %zu)", problem,
			    p->context, p->context_mark.line + 1,
			    p->context_mark.column + 1);
	return yerr(c, m, "%s", problem);
}

/*
 * A pass over the events, before loading, for what the loaded document no
 * longer shows: anchors and aliases (resolved by the loader), tags (the
 * default tag looks like an explicit !!str), nesting and extra documents.
 */
static int check_events(const struct yctx *c, const char *buf, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, docs = 0, rc = -1, done = 0;

	if (!yaml_parser_initialize(&p)) {
		say("%s: out of memory", c->file);
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	while (!done) {
		const yaml_char_t *anchor = NULL, *tag = NULL;
		int bad = 0;

		if (!yaml_parser_parse(&p, &ev)) {
			parser_error(c, &p, buf, len);
			goto out;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++docs > 1) {
				yerr(c, ev.start_mark, "more than one YAML document in the file");
				bad = 1;
			}
			break;
		case YAML_ALIAS_EVENT:
			yerr(c, ev.start_mark, "aliases (*%s) are not supported: write the value out",
			     (const char *)ev.data.alias.anchor);
			bad = 1;
			break;
		case YAML_SCALAR_EVENT:
			anchor = ev.data.scalar.anchor;
			tag = ev.data.scalar.tag;
			break;
		case YAML_SEQUENCE_START_EVENT:
			anchor = ev.data.sequence_start.anchor;
			tag = ev.data.sequence_start.tag;
			depth++;
			break;
		case YAML_MAPPING_START_EVENT:
			anchor = ev.data.mapping_start.anchor;
			tag = ev.data.mapping_start.tag;
			depth++;
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		default:
			break;
		}
		if (!bad && anchor) {
			yerr(c, ev.start_mark, "anchors (&%s) are not supported: write the value out",
			     (const char *)anchor);
			bad = 1;
		}
		if (!bad && tag) {
			yerr(c, ev.start_mark, "tags (%s) are not supported: quote a value to make it a string",
			     (const char *)tag);
			bad = 1;
		}
		if (!bad && depth > DEPTH_MAX) {
			yerr(c, ev.start_mark, "nested more than %d levels deep", DEPTH_MAX);
			bad = 1;
		}
		yaml_event_delete(&ev);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	yaml_parser_delete(&p);
	return rc;
}

static char *dir_of(const char *file)
{
	const char *slash = strrchr(file, '/');
	char *dir, *cwd, *abs;

	if (slash == file)
		return xstrdup("/");
	dir = slash ? xstrndup(file, (size_t)(slash - file)) : xstrdup(".");
	if (dir[0] == '/' || (cwd = getcwd(NULL, 0)) == NULL)
		return dir;
	if (strcmp(dir, ".") == 0)
		abs = xstrdup(cwd);
	else
		abs = xasprintf("%s/%s", strcmp(cwd, "/") ? cwd : "", dir);
	free(cwd);
	free(dir);
	return abs;
}

static int yload(struct yctx *c, const char *file, const char *buf, size_t len)
{
	yaml_parser_t p;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->file = file;
	if (check_events(c, buf, len) < 0)
		return -1;
	if (!yaml_parser_initialize(&p)) {
		say("%s: out of memory", file);
		return -1;
	}
	yaml_parser_set_input_string(&p, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&p, &c->doc)) {
		parser_error(c, &p, buf, len);
		goto out;
	}
	c->loaded = 1;
	c->dir = dir_of(file);
	rc = 0;
out:
	yaml_parser_delete(&p);
	return rc;
}

static void yclose(struct yctx *c)
{
	if (c->loaded)
		yaml_document_delete(&c->doc);
	free(c->dir);
	memset(c, 0, sizeof(*c));
}

/* ---- node helpers ---- */

static yaml_node_t *node(struct yctx *c, int i)
{
	return yaml_document_get_node(&c->doc, i);
}

static const char *sval(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE &&
	       n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static int is_null(const yaml_node_t *n)
{
	const char *s;

	if (!is_plain(n))
		return 0;
	s = sval(n);
	return *s == '\0' || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 ||
	       strcmp(s, "Null") == 0 || strcmp(s, "NULL") == 0;
}

/* The scalar n as a C string; type is what `what` must be, for the message. */
static int get_str(struct yctx *c, const yaml_node_t *n, const char *what,
		   const char *type, const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return yerr(c, n->start_mark, "%s must be %s", what, type);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return yerr(c, n->start_mark, "%s contains a NUL byte", what);
	*out = sval(n);
	return 0;
}

/*
 * Check the key of pair in mapping map against ks; seen[] remembers key
 * nodes met so far.  Returns the key's index, or -1 after reporting.
 */
static int key_index(struct yctx *c, const struct keys *ks,
		     const yaml_node_pair_t *pair, yaml_node_t **seen)
{
	yaml_node_t *k = node(c, pair->key);
	const char *name;
	struct sb hint = SB_INIT;
	size_t i;

	if (k->type != YAML_SCALAR_NODE)
		return ks->section ?
			yerr(c, k->start_mark, "keys in %s must be strings", ks->section) :
			yerr(c, k->start_mark, "keys must be strings");
	name = sval(k);
	for (i = 0; i < ks->n; i++) {
		if (strcmp(name, ks->names[i]) != 0)
			continue;
		if (seen[i]) {
			if (ks->section)
				return yerr(c, k->start_mark, "duplicate key '%s' in %s (also at line %zu)",
					    name, ks->section, seen[i]->start_mark.line + 1);
			return yerr(c, k->start_mark, "duplicate key '%s' (also at line %zu)",
				    name, seen[i]->start_mark.line + 1);
		}
		seen[i] = k;
		return (int)i;
	}
	for (i = 0; i < ks->shown; i++)
		sb_addf(&hint, "%s%s", i ? ", " : "", ks->names[i]);
	if (ks->section)
		yerr(c, k->start_mark, "unknown key '%s' in %s (expected one of: %s)",
		     name, ks->section, hint.buf);
	else
		yerr(c, k->start_mark, "unknown top-level key '%s' (expected one of: %s)",
		     name, hint.buf);
	sb_free(&hint);
	return -1;
}

#define FOR_PAIRS(map, pair) \
	for ((pair) = (map)->data.mapping.pairs.start; \
	     (pair) < (map)->data.mapping.pairs.top; (pair)++)

/* ---- source ---- */

static void push(char ***v, size_t *n, char *s)
{
	*v = xrealloc(*v, (*n + 2) * sizeof(**v));
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
}

/*
 * Split s into words as sh(1) would split a simple command, refusing
 * anything sh would expand or interpret: no shell runs the tap, and passing
 * "$HOME" on literally would be a silent surprise.  On error returns -1 with
 * why[] filled.
 */
static int split_words(const char *s, char ***argvp, char *why, size_t whysz)
{
	struct sb w = SB_INIT;
	char **argv = NULL;
	size_t n = 0, i = 0;
	int inword = 0;

	for (;;) {
		char ch = s[i];

		if (ch == '\\' && s[i + 1] == '\n') {
			i += 2;
			continue;
		}
		if (ch == '\0' || ch == ' ' || ch == '\t') {
			if (inword) {
				push(&argv, &n, sb_detach(&w));
				inword = 0;
			}
			if (ch == '\0')
				break;
			i++;
			continue;
		}
		if (!inword && (ch == '#' || ch == '~')) {
			snprintf(why, whysz, "a word starting with '%c' is special to a shell, "
				 "and the tap runs without one: quote it, or write source.tap as a list", ch);
			goto fail;
		}
		inword = 1;
		if (ch == '\'') {
			const char *end = strchr(s + i + 1, '\'');

			if (end == NULL) {
				snprintf(why, whysz, "unterminated single quote");
				goto fail;
			}
			sb_add(&w, s + i + 1, (size_t)(end - (s + i + 1)));
			i = (size_t)(end - s) + 1;
		} else if (ch == '"') {
			for (i++; s[i] != '"'; i++) {
				if (s[i] == '\0') {
					snprintf(why, whysz, "unterminated double quote");
					goto fail;
				}
				if (s[i] == '\\' && s[i + 1] && strchr("$`\"\\\n", s[i + 1])) {
					if (s[++i] != '\n')
						sb_addc(&w, s[i]);
				} else if (s[i] == '$' || s[i] == '`') {
					snprintf(why, whysz, "'%c' inside double quotes is expanded by a shell, "
						 "and the tap runs without one: use single quotes, or write "
						 "source.tap as a list", s[i]);
					goto fail;
				} else {
					sb_addc(&w, s[i]);
				}
			}
			i++;
		} else if (ch == '\\') {
			if (s[i + 1] == '\0') {
				snprintf(why, whysz, "a backslash at the end");
				goto fail;
			}
			sb_addc(&w, s[i + 1]);
			i += 2;
		} else if (ch == '\n') {
			snprintf(why, whysz, "a newline separates commands in a shell, "
				 "and the tap runs without one: write source.tap on one line or as a list");
			goto fail;
		} else if (strchr("$`|&;<>()*?[", ch)) {
			snprintf(why, whysz, "'%c' is special to a shell, and the tap runs without one: "
				 "quote it, or write source.tap as a list", ch);
			goto fail;
		} else {
			sb_addc(&w, ch);
			i++;
		}
	}
	if (n > 0) {
		const char *p = argv[0];

		if (isalpha((unsigned char)*p) || *p == '_') {
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			if (*p == '=') {
				snprintf(why, whysz, "'%.64s' would set a variable in a shell, "
					 "and the tap runs without one: set it in the environment", argv[0]);
				goto fail;
			}
		}
	}
	*argvp = argv;
	return 0;
fail:
	sb_free(&w);
	free_argv(argv);
	return -1;
}

static int parse_tap(struct yctx *c, yaml_node_t *v, struct pipe_config *cfg)
{
	const char *what = "source.tap must be a string or a list of strings";
	char **argv = NULL;
	size_t n = 0;

	if (v->type == YAML_SCALAR_NODE && !is_null(v)) {
		char why[512];
		const char *s;

		if (get_str(c, v, "source.tap", "a string or a list of strings", &s) < 0)
			return -1;
		if (split_words(s, &argv, why, sizeof(why)) < 0)
			return yerr(c, v->start_mark, "source.tap: %s", why);
	} else if (v->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;

		for (it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *e = node(c, *it);
			const char *s;

			if (e->type != YAML_SCALAR_NODE) {
				free_argv(argv);
				return yerr(c, e->start_mark, "%s", what);
			}
			if (get_str(c, e, "source.tap", "a string or a list of strings", &s) < 0) {
				free_argv(argv);
				return -1;
			}
			push(&argv, &n, xstrdup(s));
		}
	} else {
		return yerr(c, v->start_mark, "%s", what);
	}
	if (argv == NULL || argv[0][0] == '\0') {
		free_argv(argv);
		return yerr(c, v->start_mark, "source.tap names no command");
	}
	cfg->tap_argv = argv;
	return 0;
}

/*
 * Resolve path s as the file in directory dir (absolute) would mean it:
 * ~ and ~/... are $HOME, /... is kept, anything else is relative to dir,
 * with leading ./ dropped and leading ../ taken off dir.  what names the
 * key in messages.  Returns the path, or NULL with the reason in why.
 */
static char *resolve_path(const char *s, const char *dir, const char *what,
			  char *why, size_t whysz)
{
	char *base, *out;

	if (*s == '\0') {
		snprintf(why, whysz, "%s is empty", what);
		return NULL;
	}
	if (s[0] == '~') {
		const char *home = getenv("HOME");

		if (s[1] != '\0' && s[1] != '/') {
			snprintf(why, whysz, "%s '%s': only a leading ~/ is expanded (write "
				 "the home directory in full)", what, s);
			return NULL;
		}
		if (home == NULL || *home == '\0') {
			snprintf(why, whysz, "%s starts with ~ but $HOME is not set", what);
			return NULL;
		}
		return xasprintf("%s%s", home, s + 1);
	}
	if (s[0] == '/')
		return xstrdup(s);
	while (s[0] == '.' && s[1] == '/')
		for (s += 2; *s == '/'; s++)
			;
	if (strcmp(s, ".") == 0 || *s == '\0')
		return xstrdup(dir);
	base = xstrdup(dir);
	if (strncmp(s, "../", 3) == 0 || strcmp(s, "..") == 0) {
		/* dir's parent, not the parent of a symlink's name */
		char *real = realpath(dir, NULL);

		if (real) {
			free(base);
			base = real;
		}
		while (strncmp(s, "../", 3) == 0 || strcmp(s, "..") == 0) {
			char *slash = strrchr(base, '/');

			if (slash == NULL)
				break;
			*(slash == base ? slash + 1 : slash) = '\0';
			for (s += 2; *s == '/'; s++)
				;
		}
		if (*s == '\0')
			return base;
	}
	out = xasprintf("%s/%s", strcmp(base, "/") ? base : "", s);
	free(base);
	return out;
}

/* A path from the file: ~/ is $HOME, relative is relative to the file. */
static int parse_path(struct yctx *c, yaml_node_t *v, const char *what, char **out)
{
	char why[1024];
	const char *s;

	if (get_str(c, v, what, "a path (a string)", &s) < 0)
		return -1;
	if ((*out = resolve_path(s, c->dir, what, why, sizeof(why))) == NULL)
		return yerr(c, v->start_mark, "%s", why);
	return 0;
}

static int all_digits(const char *s, size_t n, int base)
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

enum plain_result { PLAIN_OK, PLAIN_STRING, PLAIN_OCTAL, PLAIN_BOOL11, PLAIN_NONFINITE, PLAIN_RANGE };

static int one_of(const char *s, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/* A plain scalar under the YAML 1.2 core schema, as a JSON literal. */
static enum plain_result plain_json(const char *s, struct sb *out)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", NULL };
	static const char *const bool11[] = {
		"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON",
		"off", "Off", "OFF", NULL
	};
	static const char *const nonfinite[] = {
		".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
		"-.INF", ".nan", ".NaN", ".NAN", NULL
	};
	size_t len = strlen(s), i, ib, ie, fb = 0, fe = 0, eb = 0;
	int neg = 0, dot = 0;

	if (one_of(s, nulls)) {
		sb_adds(out, "null");
		return PLAIN_OK;
	}
	if (one_of(s, trues) || one_of(s, falses)) {
		sb_adds(out, one_of(s, trues) ? "true" : "false");
		return PLAIN_OK;
	}
	if (one_of(s, bool11))
		return PLAIN_BOOL11;
	if (one_of(s, nonfinite))
		return PLAIN_NONFINITE;
	if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		int base = s[1] == 'o' ? 8 : 16;
		unsigned long long v;
		char *end;

		if (!all_digits(s + 2, len - 2, base))
			return PLAIN_STRING;
		errno = 0;
		v = strtoull(s + 2, &end, base);
		if (errno == ERANGE)
			return PLAIN_RANGE;
		sb_addf(out, "%llu", v);
		return PLAIN_OK;
	}
	/* [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )? */
	i = 0;
	if (s[i] == '-' || s[i] == '+')
		neg = s[i++] == '-';
	ib = i;
	while (isdigit((unsigned char)s[i]))
		i++;
	ie = i;
	if (s[i] == '.') {
		dot = 1;
		fb = ++i;
		while (isdigit((unsigned char)s[i]))
			i++;
		fe = i;
	}
	if (ie == ib && (!dot || fe == fb))
		return PLAIN_STRING;
	if (s[i] == 'e' || s[i] == 'E') {
		size_t d;

		eb = i++;
		if (s[i] == '-' || s[i] == '+')
			i++;
		d = i;
		while (isdigit((unsigned char)s[i]))
			i++;
		if (i == d)
			return PLAIN_STRING;
	}
	if (s[i] != '\0')
		return PLAIN_STRING;
	if (!dot && !eb) {
		if (ie - ib > 1 && s[ib] == '0')
			return PLAIN_OCTAL;
		if (neg)
			sb_addc(out, '-');
		sb_add(out, s + ib, ie - ib);
		return PLAIN_OK;
	}
	if (neg)
		sb_addc(out, '-');
	while (ie - ib > 1 && s[ib] == '0')
		ib++;
	if (ie == ib)
		sb_addc(out, '0');
	else
		sb_add(out, s + ib, ie - ib);
	if (dot) {
		sb_addc(out, '.');
		if (fe == fb)
			sb_addc(out, '0');
		else
			sb_add(out, s + fb, fe - fb);
	}
	if (eb)
		sb_adds(out, s + eb);
	return PLAIN_OK;
}

/* The inline source.config value n as JSON; kp is its key path. */
static int to_json(struct yctx *c, yaml_node_t *n, struct sb *kp, struct sb *out)
{
	size_t kplen = kp->len;

	if (n->type == YAML_SCALAR_NODE) {
		const char *s = sval(n);

		if (!is_plain(n)) {
			json_quote(out, s, n->data.scalar.length);
			return 0;
		}
		switch (plain_json(s, out)) {
		case PLAIN_OK:
			return 0;
		case PLAIN_STRING:
			json_quote(out, s, n->data.scalar.length);
			return 0;
		case PLAIN_OCTAL:
			return yerr(c, n->start_mark, "%s: %s is octal in YAML 1.1 and decimal in YAML 1.2: "
				    "quote it for a string, or drop the leading zero", kp->buf, s);
		case PLAIN_BOOL11:
			return yerr(c, n->start_mark, "%s: %s is a boolean in YAML 1.1 and a string in YAML 1.2: "
				    "write true or false, or quote it for a string", kp->buf, s);
		case PLAIN_NONFINITE:
			return yerr(c, n->start_mark, "%s: %s has no JSON form: quote it for a string",
				    kp->buf, s);
		case PLAIN_RANGE:
			return yerr(c, n->start_mark, "%s: %s is too large", kp->buf, s);
		}
		return -1;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;
		size_t i = 0;

		sb_addc(out, '[');
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++) {
			if (i)
				sb_addc(out, ',');
			sb_addf(kp, "[%zu]", i);
			if (to_json(c, node(c, *it), kp, out) < 0)
				return -1;
			kp->len = kplen;
			kp->buf[kplen] = '\0';
		}
		sb_addc(out, ']');
		return 0;
	}
	if (n->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *pair, *q;

		sb_addc(out, '{');
		FOR_PAIRS(n, pair) {
			yaml_node_t *k = node(c, pair->key);
			const char *ks;

			if (k->type != YAML_SCALAR_NODE)
				return yerr(c, k->start_mark, "%s: keys must be strings", kp->buf);
			ks = sval(k);
			if (is_plain(k) && strcmp(ks, "<<") == 0)
				return yerr(c, k->start_mark, "%s: merge keys (<<) are not supported", kp->buf);
			for (q = n->data.mapping.pairs.start; q < pair; q++) {
				yaml_node_t *k2 = node(c, q->key);

				if (k2->data.scalar.length == k->data.scalar.length &&
				    memcmp(sval(k2), ks, k->data.scalar.length) == 0)
					return yerr(c, k->start_mark, "duplicate key '%s' in %s (also at line %zu)",
						    ks, kp->buf, k2->start_mark.line + 1);
			}
			if (pair > n->data.mapping.pairs.start)
				sb_addc(out, ',');
			json_quote(out, ks, k->data.scalar.length);
			sb_addc(out, ':');
			sb_addf(kp, ".%s", ks);
			if (to_json(c, node(c, pair->value), kp, out) < 0)
				return -1;
			kp->len = kplen;
			kp->buf[kplen] = '\0';
		}
		sb_addc(out, '}');
		return 0;
	}
	return yerr(c, n->start_mark, "%s: unsupported YAML node", kp->buf);
}

static int parse_config(struct yctx *c, yaml_node_t *v, struct pipe_config *cfg)
{
	struct sb kp = SB_INIT, out = SB_INIT;
	int rc;

	cfg->tap_config_line = v->start_mark.line + 1;
	cfg->tap_config_col = v->start_mark.column + 1;
	if (v->type == YAML_SCALAR_NODE)
		return parse_path(c, v, "source.config", &cfg->tap_config_file);
	if (v->type != YAML_MAPPING_NODE)
		return yerr(c, v->start_mark, "source.config must be a path (a string) or a mapping");
	sb_adds(&kp, "source.config");
	rc = to_json(c, v, &kp, &out);
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
		return yerr(c, v->start_mark, "source.streams must be a list of stream names");
	if (v->data.sequence.items.start == v->data.sequence.items.top)
		return yerr(c, v->start_mark, "source.streams is empty (leave it out to take every stream)");
	for (it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
		yaml_node_t *e = node(c, *it);
		const char *s;

		if (get_str(c, e, "source.streams", "a list of stream names", &s) < 0)
			goto fail;
		if (*s == '\0') {
			yerr(c, e->start_mark, "source.streams: a stream name is empty");
			goto fail;
		}
		for (jt = v->data.sequence.items.start; jt < it; jt++) {
			if (strcmp(sval(node(c, *jt)), s) == 0) {
				yerr(c, e->start_mark, "source.streams: duplicate stream '%s'", s);
				goto fail;
			}
		}
		push(&streams, &n, xstrdup(s));
	}
	cfg->streams = streams;
	return 0;
fail:
	free_argv(streams);
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
		return yerr(c, v->start_mark,
			    "source.metadata must be a mapping of stream names (or patterns) to metadata");
	FOR_PAIRS(v, pair) {
		yaml_node_t *val = node(c, pair->value);

		if (val->type != YAML_MAPPING_NODE)
			return yerr(c, val->start_mark,
				    "source.metadata.%s must be a mapping of metadata keys to values",
				    sval(node(c, pair->key)));
	}
	sb_adds(&kp, "source.metadata");
	rc = to_json(c, v, &kp, &out);
	sb_free(&kp);
	if (rc < 0) {
		sb_free(&out);
		return -1;
	}
	cfg->metadata_json = sb_detach(&out);
	return 0;
}

static int parse_source(struct yctx *c, yaml_node_t *map, struct pipe_config *cfg)
{
	yaml_node_t *seen[S_NKEYS] = { NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return yerr(c, map->start_mark, "source must be a mapping");
	FOR_PAIRS(map, pair) {
		int k = key_index(c, &source_keys, pair, seen);
		yaml_node_t *v = node(c, pair->value);
		int rc = 0;

		if (k < 0)
			return -1;
		if (k == S_TAP && is_null(v)) {
			/* An empty value's mark is the next token's: name the key. */
			return yerr(c, node(c, pair->key)->start_mark,
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
			rc = parse_path(c, v, "source.catalog", &cfg->catalog_file);
		} else if (k == S_METADATA) {
			rc = parse_metadata(c, v, cfg);
		} else if (k == S_CATALOG_FLAG) {
			static const char *const flags[] = { "catalog", "properties", NULL };
			const char *f;

			rc = get_str(c, v, "source.catalog_flag", "catalog or properties", &f);
			if (rc == 0 && !one_of(f, flags))
				rc = yerr(c, v->start_mark,
					  "source.catalog_flag must be one of catalog, properties, not '%s'", f);
			if (rc == 0)
				cfg->catalog_flag = xstrdup(f);
		}
		if (rc < 0)
			return -1;
	}
	if (cfg->tap_argv == NULL)
		return yerr(c, map->start_mark, "missing required key 'tap' in source");
	return 0;
}

/* ---- destination ---- */

static void dest_free(struct dest *d)
{
	free(d->bucket);
	free(d->path);
	free(d->endpoint_url);
	free_argv(d->strcols);
	memset(d, 0, sizeof(*d));
}

/*
 * Check destination.bucket value b; *url is set when it is a URL (kept as
 * written), not a path.  0, or -1 with the reason in why.
 */
static int bucket_problem(const char *b, int *url, char *why, size_t whysz)
{
	const char *hint = "expected file:///dir, s3://bucket[/prefix], gs://bucket[/prefix] or a path";
	size_t i = 0;

	*url = 0;
	if (*b == '\0') {
		snprintf(why, whysz, "destination.bucket is empty");
		return -1;
	}
	if (isalpha((unsigned char)b[0])) {
		while (isalnum((unsigned char)b[i]) || b[i] == '+' || b[i] == '-' || b[i] == '.')
			i++;
	}
	if (i == 0 || b[i] != ':')
		return 0;
	if (strncmp(b + i, "://", 3) != 0) {
		if ((i == 4 && strncasecmp(b, "file", 4) == 0) ||
		    (i == 2 && (strncasecmp(b, "s3", 2) == 0 || strncasecmp(b, "gs", 2) == 0))) {
			snprintf(why, whysz, "destination.bucket '%s' is not a valid URL (%s)", b, hint);
			return -1;
		}
		return 0;	/* a relative directory such as "lake:2024" */
	}
	*url = 1;
	if (i == 4 && strncmp(b, "file", 4) == 0) {
		if (b[7] != '/') {
			snprintf(why, whysz, "destination.bucket '%s': a file:// URL needs an "
				 "absolute path, as in file:///data/lake", b);
			return -1;
		}
		return 0;
	}
	if (i == 2 && (strncmp(b, "s3", 2) == 0 || strncmp(b, "gs", 2) == 0)) {
		if (b[5] == '\0' || b[5] == '/') {
			snprintf(why, whysz, "destination.bucket '%s' names no bucket", b);
			return -1;
		}
		return 0;
	}
	snprintf(why, whysz, "destination.bucket: unsupported scheme '%.*s://' (%s)", (int)i, b, hint);
	return -1;
}

char *config_bucket_resolve(const char *bucket, const char *dir, char *why, size_t whysz)
{
	int url;

	if (bucket_problem(bucket, &url, why, whysz) < 0)
		return NULL;
	if (url)
		return xstrdup(bucket);
	return resolve_path(bucket, dir, "destination.bucket", why, whysz);
}

static int check_path(struct yctx *c, yaml_node_t *v, const char *p)
{
	const char *comp = p;

	if (*p == '\0')
		return 0;
	if (*p == '/')
		return yerr(c, v->start_mark, "destination.path '%s' must be relative (no leading '/')", p);
	for (;;) {
		size_t n = strcspn(comp, "/");
		size_t j;

		if (n == 0)
			return yerr(c, v->start_mark, "destination.path '%s' has an empty component", p);
		if ((n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
			return yerr(c, v->start_mark, "destination.path '%s' must not have '.' or '..' components", p);
		for (j = 0; j < n; j++)
			if ((unsigned char)comp[j] < 0x20 || comp[j] == 0x7f)
				return yerr(c, v->start_mark, "destination.path has a control character");
		if (comp[n] == '\0')
			return 0;
		comp += n + 1;
	}
}

static int valid_level(struct yctx *c, const struct dest *d, enum compression comp)
{
	long max = comp == COMPRESSION_ZSTD ? 19 : 9;

	if (!d->set[D_LEVEL])
		return 0;
	if (comp == COMPRESSION_NONE || comp == COMPRESSION_SNAPPY)
		return yerr(c, d->at[D_LEVEL], "destination.compression_level does not apply to compression %s",
			    comp == COMPRESSION_NONE ? "none" : "snappy");
	if (d->level < 1 || d->level > max)
		return yerr(c, d->at[D_LEVEL], "destination.compression_level must be from 1 to %ld for %s, not %s",
			    max, comp == COMPRESSION_ZSTD ? "zstd" : "gzip", d->level_text);
	return 0;
}

/*
 * destination.string_columns: {STREAM-PATTERN: [COLUMN-PATTERN, ...], ...},
 * into d->strcols as pairs.
 */
static int parse_strcols(struct yctx *c, yaml_node_t *v, struct dest *d)
{
	static const char what[] = "a mapping of stream names to lists of column names";
	yaml_node_pair_t *pair;
	char **pairs = NULL;
	size_t n = 0;

	if (v->type != YAML_MAPPING_NODE)
		return yerr(c, v->start_mark, "destination.string_columns must be %s", what);
	FOR_PAIRS(v, pair) {
		yaml_node_t *key = node(c, pair->key), *list = node(c, pair->value);
		yaml_node_item_t *it;
		const char *stream, *col;

		if (get_str(c, key, "destination.string_columns", what, &stream) < 0)
			goto fail;
		if (*stream == '\0') {
			yerr(c, key->start_mark, "destination.string_columns: a stream name is empty");
			goto fail;
		}
		if (list->type != YAML_SEQUENCE_NODE ||
		    list->data.sequence.items.start == list->data.sequence.items.top) {
			yerr(c, list->start_mark, "destination.string_columns.%s must be a list of column names",
			     stream);
			goto fail;
		}
		for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
			yaml_node_t *e = node(c, *it);

			if (get_str(c, e, "destination.string_columns", "a list of column names", &col) < 0)
				goto fail;
			if (*col == '\0') {
				yerr(c, e->start_mark, "destination.string_columns.%s: a column name is empty", stream);
				goto fail;
			}
			push(&pairs, &n, xstrdup(stream));
			push(&pairs, &n, xstrdup(col));
		}
	}
	free_argv(d->strcols);
	d->strcols = pairs;
	return 0;
fail:
	free_argv(pairs);
	return -1;
}

static int parse_dest_value(struct yctx *c, int k, yaml_node_t *v, struct dest *d)
{
	const char *s;

	if (k == D_BUCKET) {
		char why[1536];

		if (get_str(c, v, "destination.bucket", "a string", &s) < 0)
			return -1;
		if ((d->bucket = config_bucket_resolve(s, c->dir, why, sizeof(why))) == NULL)
			return yerr(c, v->start_mark, "%s", why);
		return 0;
	}
	if (k == D_PATH) {
		if (get_str(c, v, "destination.path", "a string", &s) < 0 || check_path(c, v, s) < 0)
			return -1;
		d->path = xstrdup(s);
		return 0;
	}
	if (k == D_COMPRESSION) {
		if (get_str(c, v, "destination.compression", "a string", &s) < 0)
			return -1;
		if (strcmp(s, "zstd") == 0)
			d->compression = COMPRESSION_ZSTD;
		else if (strcmp(s, "gzip") == 0)
			d->compression = COMPRESSION_GZIP;
		else if (strcmp(s, "none") == 0)
			d->compression = COMPRESSION_NONE;
		else if (strcmp(s, "snappy") == 0)
			d->compression = COMPRESSION_SNAPPY;
		else
			return yerr(c, v->start_mark, "destination.compression must be one of zstd, snappy, gzip, none, not '%s'", s);
		return 0;
	}
	if (k == D_LEVEL) {
		const char *p;

		if (get_str(c, v, "destination.compression_level", "an integer", &s) < 0)
			return -1;
		p = s + (*s == '-' || *s == '+');
		if (!all_digits(p, strlen(p), 10))
			return yerr(c, v->start_mark, "destination.compression_level must be an integer, not '%s'", s);
		errno = 0;
		d->level = strtol(s, NULL, 10);
		if (errno == ERANGE)
			d->level = *s == '-' ? -1 : 1000;
		d->level_text = s;
		return 0;
	}
	if (k == D_MAXSIZE) {
		if (get_str(c, v, "destination.max_file_size", "a size", &s) < 0)
			return -1;
		if (config_parse_size(s, &d->max_file_size) < 0)
			return yerr(c, v->start_mark, "destination.max_file_size must be a size such as "
				    "134217728, 64MiB or 1G, not '%s'", s);
		if (d->max_file_size < 1024)
			return yerr(c, v->start_mark, "destination.max_file_size must be at least 1 KiB, not '%s'", s);
		return 0;
	}
	if (k == D_ENDPOINT) {
		if (get_str(c, v, "destination.endpoint_url", "a string", &s) < 0)
			return -1;
		if (!((strncasecmp(s, "http://", 7) == 0 && s[7]) ||
		      (strncasecmp(s, "https://", 8) == 0 && s[8])))
			return yerr(c, v->start_mark, "destination.endpoint_url must be an http:// or https:// URL, not '%s'", s);
		d->endpoint_url = xstrdup(s);
		return 0;
	}
	if (k == D_FORMAT) {
		if (get_str(c, v, "destination.format", "a string", &s) < 0)
			return -1;
		if (strcmp(s, "jsonl") != 0 && strcmp(s, "parquet") != 0)
			return yerr(c, v->start_mark, "destination.format must be jsonl or parquet, not '%s'", s);
		d->parquet = strcmp(s, "parquet") == 0;
		return 0;
	}
	if (k == D_MISMATCH) {
		if (get_str(c, v, "destination.schema_mismatch", "a string", &s) < 0)
			return -1;
		if (strcmp(s, "widen") != 0 && strcmp(s, "fail") != 0)
			return yerr(c, v->start_mark, "destination.schema_mismatch must be widen or fail, not '%s'", s);
		d->mismatch_fail = strcmp(s, "fail") == 0;
		return 0;
	}
	if (k == D_RG_ROWS) {
		if (get_str(c, v, "destination.row_group_rows", "an integer", &s) < 0)
			return -1;
		errno = 0;
		if (!all_digits(s, strlen(s), 10) || (d->rg_rows = strtoull(s, NULL, 10)) < 1 ||
		    d->rg_rows > INT32_MAX || errno == ERANGE)
			return yerr(c, v->start_mark, "destination.row_group_rows must be an integer "
				    "from 1 to 2147483647, not '%s'", s);
		return 0;
	}
	if (k == D_STRCOLS)
		return parse_strcols(c, v, d);
	if (k == D_RG_SIZE) {
		if (get_str(c, v, "destination.row_group_size", "a size", &s) < 0)
			return -1;
		if (config_parse_size(s, &d->rg_size) < 0)
			return yerr(c, v->start_mark, "destination.row_group_size must be a size such as "
				    "67108864, 64MiB or 1G, not '%s'", s);
		if (d->rg_size < 1024)
			return yerr(c, v->start_mark, "destination.row_group_size must be at least 1 KiB, not '%s'", s);
		return 0;
	}
	/* D_PARTITION: the Python tool wrote it into every pipeline. */
	if (get_str(c, v, "destination.partition_by", "a string", &s) < 0)
		return -1;
	if (strcmp(s, "_extraction_date") != 0)
		return yerr(c, v->start_mark, "destination.partition_by must be _extraction_date "
			    "(files are partitioned by extraction date), not '%s'", s);
	return 0;
}

/* Read a destination mapping into d (which may hold earlier keys). */
static int parse_dest(struct yctx *c, yaml_node_t *map, struct dest *d)
{
	yaml_node_t *seen[D_NKEYS] = { NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return yerr(c, map->start_mark, "destination must be a mapping");
	FOR_PAIRS(map, pair) {
		int k = key_index(c, &dest_keys, pair, seen);
		yaml_node_t *v = node(c, pair->value);

		if (k < 0)
			return -1;
		if (is_null(v) && k == D_BUCKET)
			return yerr(c, node(c, pair->key)->start_mark,
				    "destination.bucket must be a string");
		if (is_null(v))
			continue;
		/* A later mapping (destination: after defaults:) wins. */
		if (k == D_BUCKET || k == D_PATH || k == D_ENDPOINT) {
			char **slot = k == D_BUCKET ? &d->bucket : k == D_PATH ? &d->path : &d->endpoint_url;

			free(*slot);
			*slot = NULL;
		}
		if (parse_dest_value(c, k, v, d) < 0)
			return -1;
		d->set[k] = 1;
		d->at[k] = v->start_mark;
	}
	return 0;
}

/* ---- incremental, schedule ---- */

static int parse_bool(const char *s, int *out)
{
	static const char *const t[] = { "true", "yes", "on" };
	static const char *const f[] = { "false", "no", "off" };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (strcasecmp(s, t[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, f[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

static int parse_incremental(struct yctx *c, yaml_node_t *map, struct pipe_config *cfg)
{
	yaml_node_t *seen[1] = { NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return yerr(c, map->start_mark, "incremental must be a mapping");
	FOR_PAIRS(map, pair) {
		yaml_node_t *v = node(c, pair->value);
		const char *s;

		if (key_index(c, &incr_keys, pair, seen) < 0)
			return -1;
		if (is_null(v))
			continue;
		if (get_str(c, v, "incremental.enabled", "true or false", &s) < 0)
			return -1;
		if (parse_bool(s, &cfg->incremental) < 0)
			return yerr(c, v->start_mark, "incremental.enabled must be true or false, not '%s'", s);
	}
	return 0;
}

static int parse_schedule(struct yctx *c, yaml_node_t *map, struct pipe_config *cfg)
{
	yaml_node_t *seen[1] = { NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return yerr(c, map->start_mark, "schedule must be a mapping");
	FOR_PAIRS(map, pair) {
		yaml_node_t *v = node(c, pair->value);
		struct sb why = SB_INIT;
		const char *s;
		int r;

		if (key_index(c, &sched_keys, pair, seen) < 0)
			return -1;
		if (is_null(v))
			continue;
		if (get_str(c, v, "schedule.cron", "a string", &s) < 0)
			return -1;
		if (cron_check(s, &why) != 0) {
			if (why.len == 0)
				return yerr(c, v->start_mark, "schedule.cron must be five crontab fields "
					    "(as in \"0 */2 * * *\") or @hourly, @daily, ..., not '%s'", s);
			r = yerr(c, v->start_mark, "schedule.cron '%s': %s", s, why.buf);
			sb_free(&why);
			return r;
		}
		cfg->cron = xstrdup(s);
	}
	return 0;
}

/* ---- files ---- */

/*
 * Read <home>/config.yaml into d.  Its own compression_level is checked
 * against its own compression here, while its document is loaded.
 */
static int load_home(struct dest *d)
{
	char *file = xasprintf("%s/config.yaml", config_home());
	char *buf = NULL;
	size_t len = 0;
	struct yctx c;
	yaml_node_t *root, *seen[2] = { NULL, NULL };
	yaml_node_pair_t *pair;
	int rc = -1, r;

	memset(&c, 0, sizeof(c));
	r = read_all(file, "config file", 1, &buf, &len);
	if (r == -2)
		rc = 0;
	if (r < 0)
		goto out;
	if (yload(&c, file, buf, len) < 0)
		goto out;
	root = yaml_document_get_root_node(&c.doc);
	if (root == NULL || is_null(root)) {
		rc = 0;
		goto out;
	}
	if (root->type != YAML_MAPPING_NODE) {
		yerr(&c, root->start_mark, "config.yaml must be a mapping (with destination:)");
		goto out;
	}
	/* defaults: first, so that destination: wins wherever it is written. */
	for (r = 1; r >= 0; r--) {
		FOR_PAIRS(root, pair) {
			yaml_node_t *v = node(&c, pair->value);
			int k = key_index(&c, &home_keys, pair, seen);

			if (k < 0)
				goto out;
			if (k == r && !is_null(v) && parse_dest(&c, v, d) < 0)
				goto out;
		}
		memset(seen, 0, sizeof(seen));
	}
	if (valid_level(&c, d, d->set[D_COMPRESSION] ? d->compression : COMPRESSION_ZSTD) < 0)
		goto out;
	d->level_text = NULL;
	rc = 0;
out:
	yclose(&c);
	free(buf);
	free(file);
	if (rc < 0)
		dest_free(d);
	return rc;
}

static char **take_argv(char ***p)
{
	char **v = *p;

	*p = NULL;
	return v;
}

static char **copy_argv(char *const *v)
{
	char **out = NULL;
	size_t n = 0;

	while (*v)
		push(&out, &n, xstrdup(*v++));
	return out;
}

static char *take(char **p)
{
	char *s = *p;

	*p = NULL;
	return s;
}

/* Parse the pipeline document of c into cfg, with defaults def. */
static int parse_pipeline(struct yctx *c, struct dest *def, struct pipe_config *cfg)
{
	yaml_node_t *root = yaml_document_get_root_node(&c->doc);
	yaml_node_t *seen[4] = { NULL, NULL, NULL, NULL };
	yaml_node_t *dmap = NULL;
	yaml_node_pair_t *pair;
	struct dest d;
	enum compression comp, defcomp;
	int rc = -1;

	memset(&d, 0, sizeof(d));
	if (root == NULL || is_null(root)) {
		yaml_mark_t m = { 0, 0, 0 };

		return yerr(c, root ? root->start_mark : m, "empty pipeline file");
	}
	if (root->type != YAML_MAPPING_NODE)
		return yerr(c, root->start_mark, "a pipeline file must be a mapping (with source: and destination:)");
	FOR_PAIRS(root, pair) {
		yaml_node_t *v = node(c, pair->value);
		int k = key_index(c, &top_keys, pair, seen), r = 0;

		if (k < 0)
			goto out;
		if (k == T_SOURCE) {
			r = parse_source(c, v, cfg);
		} else if (k == T_DESTINATION) {
			dmap = v;
			r = parse_dest(c, v, &d);
		} else if (is_null(v)) {
			continue;
		} else if (k == T_INCREMENTAL) {
			r = parse_incremental(c, v, cfg);
		} else {
			r = parse_schedule(c, v, cfg);
		}
		if (r < 0)
			goto out;
	}
	if (seen[T_SOURCE] == NULL) {
		yerr(c, root->start_mark, "missing required key 'source'");
		goto out;
	}
	if (d.bucket)
		cfg->bucket = take(&d.bucket);
	else if (def->bucket)
		cfg->bucket = xstrdup(def->bucket);
	else if (dmap == NULL) {
		yerr(c, root->start_mark, "missing required key 'destination' (with a bucket: "
		     "config.yaml gives no destination.bucket)");
		goto out;
	} else {
		yerr(c, dmap->start_mark, "missing required key 'bucket' in destination");
		goto out;
	}
	cfg->path = xstrdup(d.path ? d.path : def->path ? def->path : "raw");
	if (d.endpoint_url)
		cfg->endpoint_url = take(&d.endpoint_url);
	else if (def->endpoint_url)
		cfg->endpoint_url = xstrdup(def->endpoint_url);
	cfg->max_file_size = d.set[D_MAXSIZE] ? d.max_file_size :
			     def->set[D_MAXSIZE] ? def->max_file_size : DEFAULT_MAX_FILE_SIZE;

	defcomp = def->set[D_COMPRESSION] ? def->compression : COMPRESSION_ZSTD;
	comp = d.set[D_COMPRESSION] ? d.compression : defcomp;
	cfg->compression = comp;
	if (valid_level(c, &d, comp) < 0)
		goto out;
	if (d.set[D_LEVEL])
		cfg->compression_level = (int)d.level;
	else if (def->set[D_LEVEL] && defcomp == comp)
		cfg->compression_level = (int)def->level;
	else
		cfg->compression_level = comp == COMPRESSION_ZSTD ? 3 :
					 comp == COMPRESSION_GZIP ? 6 : 0;
	cfg->parquet = d.set[D_FORMAT] ? d.parquet : def->set[D_FORMAT] ? def->parquet : 1;
	cfg->format = xstrdup(cfg->parquet ? "parquet" : "jsonl");
	if (!cfg->parquet && (d.set[D_RG_ROWS] || d.set[D_RG_SIZE] || d.set[D_STRCOLS] ||
			      d.set[D_MISMATCH])) {
		int k = d.set[D_RG_ROWS] ? D_RG_ROWS : d.set[D_RG_SIZE] ? D_RG_SIZE :
			d.set[D_STRCOLS] ? D_STRCOLS : D_MISMATCH;

		yerr(c, d.at[k], "destination.%s applies only to format: parquet", dest_names[k]);
		goto out;
	}
	if (!cfg->parquet && comp == COMPRESSION_SNAPPY) {
		yerr(c, d.set[D_COMPRESSION] ? d.at[D_COMPRESSION] : dmap ? dmap->start_mark : root->start_mark,
		     "destination.compression snappy applies only to format: parquet "
		     "(JSON lines take zstd, gzip or none)");
		goto out;
	}
	cfg->mismatch_fail = d.set[D_MISMATCH] ? d.mismatch_fail :
			     def->set[D_MISMATCH] ? def->mismatch_fail : 0;
	if (d.strcols)
		cfg->string_columns = take_argv(&d.strcols);
	else if (def->strcols)
		cfg->string_columns = copy_argv(def->strcols);
	cfg->row_group_rows = d.set[D_RG_ROWS] ? d.rg_rows :
			      def->set[D_RG_ROWS] ? def->rg_rows : DEFAULT_ROW_GROUP_ROWS;
	cfg->row_group_size = d.set[D_RG_SIZE] ? d.rg_size :
			      def->set[D_RG_SIZE] ? def->rg_size : DEFAULT_ROW_GROUP_SIZE;
	rc = 0;
out:
	dest_free(&d);
	return rc;
}

static int load(const char *name, const char *file, const char *buf, size_t len,
		struct pipe_config *cfg)
{
	struct dest def;
	struct yctx c;
	int rc = -1;

	memset(&def, 0, sizeof(def));
	memset(&c, 0, sizeof(c));
	if (load_home(&def) < 0)
		goto out;
	if (yload(&c, file, buf, len) < 0)
		goto out;
	cfg->name = xstrdup(name);
	cfg->file = xstrdup(file);
	rc = parse_pipeline(&c, &def, cfg);
out:
	yclose(&c);
	dest_free(&def);
	if (rc < 0)
		config_free(cfg);
	return rc;
}

int config_load_name(const char *name, struct pipe_config *cfg)
{
	char *file = NULL, *buf = NULL;
	size_t len = 0;
	int rc = -1, r;

	memset(cfg, 0, sizeof(*cfg));
	if (!config_valid_name(name)) {
		say("invalid pipeline name '%s' (letters, digits, '.', '_' and '-', "
		    "starting with a letter or digit, at most 64)", name ? name : "");
		return -1;
	}
	file = xasprintf("%s/pipelines/%s.yaml", config_home(), name);
	r = read_all(file, "pipeline file", 1, &buf, &len);
	if (r == -2) {
		char *yml = xasprintf("%s/pipelines/%s.yml", config_home(), name);

		r = read_all(yml, "pipeline file", 1, &buf, &len);
		if (r == -2)
			say("no pipeline '%s' (looked for %s)", name, file);
		else {
			free(file);
			file = yml;
			yml = NULL;
		}
		free(yml);
	}
	if (r == 0)
		rc = load(name, file, buf, len, cfg);
	free(buf);
	free(file);
	return rc;
}

int config_load_file(const char *file, struct pipe_config *cfg)
{
	const char *base = strrchr(file, '/');
	char *name, *buf = NULL;
	size_t len = 0, n;
	int rc = -1;

	memset(cfg, 0, sizeof(*cfg));
	base = base ? base + 1 : file;
	n = strlen(base);
	if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
		n -= 5;
	else if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
		n -= 4;
	name = xstrndup(base, n);
	if (!config_valid_name(name)) {
		say("%s: '%s' is not a valid pipeline name (letters, digits, '.', '_' and '-', "
		    "starting with a letter or digit, at most 64): rename the file", file, name);
		goto out;
	}
	if (read_all(file, "pipeline file", 0, &buf, &len) == 0)
		rc = load(name, file, buf, len, cfg);
out:
	free(buf);
	free(name);
	return rc;
}

int config_default_bucket(char **out)
{
	struct dest def;

	*out = NULL;
	memset(&def, 0, sizeof(def));
	if (load_home(&def) < 0)
		return -1;
	*out = take(&def.bucket);
	dest_free(&def);
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
			say("%s:%zu:%zu: source.config: cannot read '%s': %s", cfg->file,
			    cfg->tap_config_line, cfg->tap_config_col, f, strerror(errno));
			goto out;
		}
		json = text.buf ? text.buf : "";
		len = text.len;
		if (json_validate(json, len, &v, &errpos, &errmsg) != 0) {
			line_col(json, len, errpos, &line, &col);
			say("%s:%zu:%zu: the tap's config (source.config) is not JSON: %s", f, line, col,
			    errmsg);
			goto out;
		}
		if (v.type != JSON_OBJECT) {
			line_col(json, len, (size_t)(v.p - json), &line, &col);
			say("%s:%zu:%zu: the tap's config (source.config) is not a JSON object", f, line,
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
