/*
 * config_yaml: one YAML file of the config: read, checked for what the
 * loaded document no longer shows, loaded; its nodes and keys, messages
 * naming file:line:col, and the paths written in it.
 */
#include "config_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "config.h"
#include "err.h"
#include "sb.h"
#include "util.h"

#define FILE_MAX (1024 * 1024)
#define DEPTH_MAX 64

/* Messages stay on one line whatever bytes the file or its values hold. */
void config_say(const char *fmt, ...)
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

int config_yerr(const struct yctx *c, yaml_mark_t m, const char *fmt, ...)
{
	char what[1536];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	config_say("%s:%zu:%zu: %s", c->file, m.line + 1, m.column + 1, what);
	return -1;
}

/* ---- reading and loading a YAML file ---- */

int config_read_file(const char *file, const char *noun, int missing_ok,
		     char **bufp, size_t *lenp)
{
	struct sb sb = SB_INIT;
	int fd = open(file, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		if (errno == ENOENT && missing_ok)
			return -2;
		config_say("cannot open '%s': %s", file, strerror(errno));
		return -1;
	}
	for (;;) {
		ssize_t n;

		sb_grow(&sb, 65536);
		n = read(fd, sb.buf + sb.len, 65536);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			config_say("cannot read '%s': %s", file, strerror(errno));
			goto fail;
		}
		if (n == 0)
			break;
		sb.len += (size_t)n;
		sb.buf[sb.len] = '\0';
		if (sb.len > FILE_MAX) {
			config_say("%s: %s too large (more than 1 MiB)", file, noun);
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
		config_say("%s: out of memory", c->file);
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
		return config_yerr(c, m, "%s", problem);
	}
	off = mark_offset(buf, len, m);
	if (off < len && buf[off] == '\t')
		return config_yerr(c, m, "%s (a tab: YAML indents with spaces)", problem);
	if (p->context && (p->context_mark.line != m.line ||
			   p->context_mark.column != m.column))
		return config_yerr(c, m, "%s (%s at line %zu, column %zu)", problem,
				   p->context, p->context_mark.line + 1,
				   p->context_mark.column + 1);
	return config_yerr(c, m, "%s", problem);
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
		config_say("%s: out of memory", c->file);
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
				config_yerr(c, ev.start_mark, "more than one YAML document in the file");
				bad = 1;
			}
			break;
		case YAML_ALIAS_EVENT:
			config_yerr(c, ev.start_mark, "aliases (*%s) are not supported: write the value out",
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
			config_yerr(c, ev.start_mark, "anchors (&%s) are not supported: write the value out",
				    (const char *)anchor);
			bad = 1;
		}
		if (!bad && tag) {
			config_yerr(c, ev.start_mark, "tags (%s) are not supported: quote a value to make it a string",
				    (const char *)tag);
			bad = 1;
		}
		if (!bad && depth > DEPTH_MAX) {
			config_yerr(c, ev.start_mark, "nested more than %d levels deep", DEPTH_MAX);
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

int config_yaml_load(struct yctx *c, const char *file, const char *buf, size_t len)
{
	yaml_parser_t p;
	int rc = -1;

	memset(c, 0, sizeof(*c));
	c->file = file;
	if (check_events(c, buf, len) < 0)
		return -1;
	if (!yaml_parser_initialize(&p)) {
		config_say("%s: out of memory", file);
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

void config_yaml_close(struct yctx *c)
{
	if (c->loaded)
		yaml_document_delete(&c->doc);
	free(c->dir);
	memset(c, 0, sizeof(*c));
}

/* ---- nodes and keys ---- */

int config_get_str(struct yctx *c, const yaml_node_t *n, const char *what,
		   const char *type, const char **out)
{
	if (n->type != YAML_SCALAR_NODE)
		return config_yerr(c, n->start_mark, "%s must be %s", what, type);
	if (memchr(n->data.scalar.value, '\0', n->data.scalar.length))
		return config_yerr(c, n->start_mark, "%s contains a NUL byte", what);
	*out = sval(n);
	return 0;
}

int config_unknown_warn;

/*
 * The known key name is a typo of (util_typo_distance()), or NULL: the
 * nearest (compresion, bucekt, incremental's enabeld).
 */
static const char *typo_of(const char *name, const struct keys *ks)
{
	const char *best = NULL;
	size_t i, bestd = 10;

	for (i = 0; i < ks->n; i++) {
		size_t d = util_typo_distance(name, ks->names[i]);

		if (d < bestd) {
			best = ks->names[i];
			bestd = d;
		}
	}
	return best;
}

int config_key_index(struct yctx *c, const struct keys *ks,
		     const yaml_node_pair_t *pair, yaml_node_t **seen)
{
	yaml_node_t *k = node(c, pair->key);
	const char *name, *near;
	struct sb hint = SB_INIT;
	size_t i;

	if (k->type != YAML_SCALAR_NODE)
		return ks->section ?
			config_yerr(c, k->start_mark, "keys in %s must be strings", ks->section) :
			config_yerr(c, k->start_mark, "keys must be strings");
	name = sval(k);
	for (i = 0; i < ks->n; i++) {
		if (strcmp(name, ks->names[i]) != 0)
			continue;
		if (seen[i]) {
			if (ks->section)
				return config_yerr(c, k->start_mark, "duplicate key '%s' in %s (also at line %zu)",
						   name, ks->section, seen[i]->start_mark.line + 1);
			return config_yerr(c, k->start_mark, "duplicate key '%s' (also at line %zu)",
					   name, seen[i]->start_mark.line + 1);
		}
		seen[i] = k;
		return (int)i;
	}
	for (i = 0; i < ks->shown; i++)
		sb_addf(&hint, "%s%s", i ? ", " : "", ks->names[i]);
	near = typo_of(name, ks);
	if (near != NULL) {
		if (ks->section)
			config_yerr(c, k->start_mark, "unknown key '%s' in %s: did you mean '%s'? (expected one of: %s)",
				    name, ks->section, near, hint.buf);
		else
			config_yerr(c, k->start_mark, "unknown top-level key '%s': did you mean '%s'? (expected one of: %s)",
				    name, near, hint.buf);
		sb_free(&hint);
		return -1;
	}
	/* The Python tool (pydantic) ignores such keys: its users' files carry them. */
	if (config_unknown_warn) {
		config_say("warning: %s:%zu:%zu: unknown key '%s'%s%s ignored (known: %s)", c->file,
			   k->start_mark.line + 1, k->start_mark.column + 1, name,
			   ks->section ? " in " : "", ks->section ? ks->section : "", hint.buf);
	}
	sb_free(&hint);
	return CONFIG_KEY_IGNORED;
}

/* ---- paths ---- */

char *config_resolve_path(const char *s, const char *dir, const char *what, struct sb *why)
{
	char *base, *out;

	if (*s == '\0') {
		sb_addf(why, "%s is empty", what);
		return NULL;
	}
	if (s[0] == '~') {
		const char *home = getenv("HOME");

		if (s[1] != '\0' && s[1] != '/') {
			sb_addf(why, "%s '%s': only a leading ~/ is expanded (write "
				 "the home directory in full)", what, s);
			return NULL;
		}
		if (home == NULL || *home == '\0') {
			sb_addf(why, "%s starts with ~ but $HOME is not set", what);
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

int config_parse_path(struct yctx *c, yaml_node_t *v, const char *what, char **out)
{
	struct sb why = SB_INIT;
	const char *s;
	int r = 0;

	if (config_get_str(c, v, what, "a path (a string)", &s) < 0)
		return -1;
	if ((*out = config_resolve_path(s, c->dir, what, &why)) == NULL)
		r = config_yerr(c, v->start_mark, "%s", why.buf);
	sb_free(&why);
	return r;
}
