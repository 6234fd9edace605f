/*
 * dataspoc-tap-parquet: the files under the path, listed through
 * lib/bucket.h, matched to the glob, read with lib/pqread.h and printed as
 * SCHEMA and RECORD messages; discovery's catalog.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bucket.h"
#include "err.h"
#include "json.h"
#include "pqread.h"
#include "sb.h"
#include "singer_tap.h"
#include "tap_parquet.h"
#include "util.h"

/* Output is written once this much is waiting. */
#define EMIT_AT (256 * 1024)

/* ---- the glob ---- */

static int seg_match(const char *pat, size_t pl, const char *s, size_t sl)
{
	char pb[1024], sbuf[1024];

	if (pl >= sizeof(pb) || sl >= sizeof(sbuf))
		return 0;
	memcpy(pb, pat, pl);
	pb[pl] = '\0';
	memcpy(sbuf, s, sl);
	sbuf[sl] = '\0';
	return fnmatch(pb, sbuf, FNM_PERIOD) == 0;
}

static int match_from(const char *pat, const char *key)
{
	const char *pe = strchr(pat, '/'), *ke;
	size_t pl = pe ? (size_t)(pe - pat) : strlen(pat);

	if (pl == 2 && pat[0] == '*' && pat[1] == '*') {
		const char *rest = pe ? pe + 1 : "";

		/* "**" is any number of folders, none of them hidden. */
		for (;;) {
			if (*rest == '\0' ? *key == '\0' || key[0] != '.' : match_from(rest, key))
				return 1;
			if (*key == '.' || (ke = strchr(key, '/')) == NULL)
				return 0;
			key = ke + 1;
		}
	}
	ke = strchr(key, '/');
	if (!seg_match(pat, pl, key, ke ? (size_t)(ke - key) : strlen(key)))
		return 0;
	if (pe == NULL)
		return ke == NULL;
	return ke != NULL && match_from(pe + 1, ke + 1);
}

int glob_match(const char *glob, const char *key)
{
	return match_from(glob, key);
}

/* ---- the source ---- */

struct source {
	struct bucket *b;
	char *dir;		/* a local bucket's folder */
	char **keys;		/* the files to consider, sorted */
	size_t n;
	int single;		/* path named one file */
};

static void source_free(struct source *s)
{
	bucket_free(s->b);
	free(s->dir);
	util_strv_free(s->keys);
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* Open the path and list what matches the glob. */
static int open_source(struct tap *t, struct source *s)
{
	char *parent = NULL, *loc = NULL, **all = NULL;
	const char *url = t->path, *base = NULL;
	size_t n = 0, i;
	struct stat st;
	int rc = EXIT_FAIL;

	memset(s, 0, sizeof(*s));
	if (ends_with(t->path, ".parquet")) {
		const char *slash = strrchr(t->path, '/');

		s->single = 1;
		if (slash == NULL) {
			parent = xstrdup(".");
			base = t->path;
		} else {
			parent = xstrndup(t->path, (size_t)(slash - t->path) +
					  (slash == t->path || slash[-1] == '/'));
			base = slash + 1;
		}
		url = parent;
	}
	s->b = bucket_open_opts(url, t->endpoint);
	if (s->b == NULL)
		goto out;
	if (bucket_is_local(s->b)) {
		loc = bucket_location(s->b, NULL);
		s->dir = xstrdup(strncmp(loc, "file://", 7) == 0 ? loc + 7 : loc);
		if (!s->single && (stat(s->dir, &st) < 0 || !S_ISDIR(st.st_mode))) {
			if (errno == 0 || stat(s->dir, &st) == 0)
				errno = ENOTDIR;
			err_msg("cannot read '%s':", t->path);
			goto out;
		}
	}
	if (s->single) {
		int r = bucket_key_ok(base) ? bucket_exists(s->b, base) : -1;

		if (r <= 0) {
			if (r == 0)
				err_msg("cannot read '%s': no such file", t->path);
			else if (!bucket_key_ok(base))
				err_msg("cannot read '%s': not a file name", t->path);
			goto out;
		}
		s->keys = xcalloc(2, sizeof(*s->keys));
		s->keys[0] = xstrdup(base);
		s->n = 1;
		rc = 0;
		goto out;
	}
	if (bucket_list(s->b, "", &all, &n) < 0)
		goto out;
	s->keys = xcalloc(n + 1, sizeof(*s->keys));
	for (i = 0; i < n; i++)
		if (glob_match(t->glob, all[i])) {
			s->keys[s->n++] = all[i];
			all[i] = NULL;
		}
	rc = 0;
out:
	if (all != NULL) {
		for (i = 0; i < n; i++)
			free(all[i]);
		free(all);
	}
	free(parent);
	free(loc);
	return rc;
}

/* The file's name for messages: the path as configured, and the key under it. */
static char *file_name(const struct tap *t, const struct source *s, const char *key)
{
	size_t n = strlen(t->path);

	if (s->single)
		return xstrdup(t->path);
	while (n > 1 && t->path[n - 1] == '/')
		n--;
	return xasprintf("%.*s/%s", (int)n, t->path, key);
}

/* A file's bytes: mapped when local, else fetched whole. */
struct content {
	void *map;
	size_t len;
	struct sb buf;
};

/* key's bytes into c; name: how messages call it. */
static int fetch(struct source *s, const char *key, const char *name, struct content *c)
{
	memset(c, 0, sizeof(*c));
	if (s->dir != NULL) {
		char *p = xasprintf("%s/%s", s->dir, key);
		struct stat st;
		/* O_NONBLOCK: a FIFO that matches the glob must not hang the run */
		int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), rc = -1;

		if (fd < 0 || fstat(fd, &st) < 0) {
			err_msg("cannot read '%s':", p);
		} else if (!S_ISREG(st.st_mode)) {
			err_msg("cannot read '%s': not a regular file (%s)", name,
				S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" :
				S_ISCHR(st.st_mode) ? "a character device" : S_ISBLK(st.st_mode) ? "a block device" :
				S_ISDIR(st.st_mode) ? "a directory" : "not a file");
		} else if (st.st_size == 0) {
			rc = 0;
		} else {
			c->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (c->map == MAP_FAILED) {
				c->map = NULL;
				err_msg("cannot map '%s':", p);
			} else {
				c->len = (size_t)st.st_size;
				rc = 0;
			}
		}
		if (fd >= 0)
			close(fd);
		free(p);
		return rc;
	}
	switch (bucket_get(s->b, key, &c->buf)) {
	case 0:
		c->len = c->buf.len;
		return 0;
	case 1:
		err_msg("cannot read '%s/%s': it was removed while the tap ran", bucket_url(s->b),
			key);
		return -1;
	default:
		return -1;
	}
}

static const void *content_bytes(const struct content *c)
{
	return c->map ? c->map : c->buf.buf ? (const void *)c->buf.buf : "";
}

static void content_free(struct content *c)
{
	if (c->map)
		munmap(c->map, c->len);
	sb_free(&c->buf);
}

/* ---- a file's columns ---- */

struct hive {
	char *name, *value;
};

struct layout {
	size_t ncols;
	int *on;		/* the file's column i is printed */
	struct hive *hive;	/* partition columns from k=v folders */
	size_t nhive;
	struct sb names;	/* the "name": of each printed column, back to back */
	size_t *name_end;
	int extra;		/* pipe-sink's extra column (below): its members go back, or -1 */
	struct sb value;	/* scratch: one value of the extra column */
};

/*
 * pipe-sink lands the members a record has beyond its schema as one JSON
 * object in a last column "_extra" ("__extra" when the schema has an
 * "_extra", ...).  Read back, they are the record's members again, as the
 * tap sent them, and the column is no column of the schema.
 */
static int extra_column(const struct pq_read_file *f)
{
	size_t n = pq_read_ncolumns(f);
	const struct pq_read_column *c;

	if (n == 0 || strncmp(pq_read_created_by(f), "dataspoc-pipe ", 14) != 0)
		return -1;
	c = pq_read_column(f, n - 1);
	return c->kind == PQ_READ_JSON && pq_read_extra_name(c) ? (int)(n - 1) : -1;
}

/*
 * Append the members of the extra column's value (an object, or null) to a
 * record whose printed members so far are k; 0, or -1 when it is not an
 * object (said).
 */
static int add_extra(struct pq_read_file *f, struct layout *l, size_t k, struct sb *out,
		     const char *key)
{
	const char *p, *e;

	sb_reset(&l->value);
	if (pq_read_value_json(f, (size_t)l->extra, &l->value) < 0)
		return -1;
	p = l->value.buf;
	e = p + l->value.len;
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
		p++;
	while (e > p && (e[-1] == ' ' || e[-1] == '\n' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	if ((size_t)(e - p) == 4 && memcmp(p, "null", 4) == 0)
		return 0;
	if (e - p < 2 || *p != '{' || e[-1] != '}') {
		fflush(stdout);
		err_msg("cannot read '%s': its column '%s' (the members beyond the schema) holds %.*s, not an object",
			key, pq_read_column(f, (size_t)l->extra)->name,
			(int)(e - p > 40 ? 40 : e - p), p);
		return -1;
	}
	p++;
	e--;
	while (p < e && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
		p++;
	if (p == e)
		return 0;
	if (k)
		sb_addc(out, ',');
	sb_add(out, p, (size_t)(e - p));
	return 0;
}

static void layout_free(struct layout *l)
{
	size_t i;

	for (i = 0; i < l->nhive; i++) {
		free(l->hive[i].name);
		free(l->hive[i].value);
	}
	free(l->hive);
	free(l->on);
	sb_free(&l->names);
	sb_free(&l->value);
	free(l->name_end);
}

static int dropped(const struct tap *t, const char *name)
{
	return singer_tap_in_list(t->drop, t->ndrop, name) &&
	       !singer_tap_in_list(t->keys, t->nkeys, name);
}

static int has_column(const struct pq_read_file *f, const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < pq_read_ncolumns(f); i++) {
		const struct pq_read_column *c = pq_read_column(f, i);

		if (c->name_len == len && memcmp(c->name, name, len) == 0)
			return 1;
	}
	return 0;
}

/* The hive columns of key's folders ("dt=2024-01-01/x.parquet"). */
static void hive_columns(const struct tap *t, const char *key, const struct pq_read_file *f,
			 struct layout *l)
{
	const char *p = key, *slash, *eq;
	size_t i;

	while ((slash = strchr(p, '/')) != NULL) {
		eq = memchr(p, '=', (size_t)(slash - p));
		if (eq != NULL && eq > p) {
			char *name = xstrndup(p, (size_t)(eq - p));
			int dup = has_column(f, p, (size_t)(eq - p));

			/* A file's own column wins; a deeper k=v replaces a shallower one. */
			for (i = 0; !dup && i < l->nhive; i++)
				if (strcmp(l->hive[i].name, name) == 0) {
					free(l->hive[i].value);
					l->hive[i].value = xstrndup(eq + 1, (size_t)(slash - eq - 1));
					dup = 1;
				}
			if (dup || dropped(t, name)) {
				free(name);
			} else {
				l->hive = xrealloc(l->hive, (l->nhive + 1) * sizeof(*l->hive));
				l->hive[l->nhive].name = name;
				l->hive[l->nhive].value = xstrndup(eq + 1, (size_t)(slash - eq - 1));
				l->nhive++;
			}
		}
		p = slash + 1;
	}
}

/*
 * What of file f is printed, its schema into schema; checks the key
 * properties are among its columns.
 */
static int plan_file(struct tap *t, const char *key, struct pq_read_file *f, struct layout *l,
		     struct sb *schema)
{
	size_t i, j, n = pq_read_ncolumns(f), k = 0;

	memset(l, 0, sizeof(*l));
	l->ncols = n;
	l->on = xcalloc(n ? n : 1, sizeof(*l->on));
	l->extra = extra_column(f);
	if (t->hive)
		hive_columns(t, key, f, l);
	l->name_end = xcalloc(n + l->nhive + 1, sizeof(*l->name_end));
	sb_adds(schema, "{\"type\":\"object\",\"properties\":{");
	for (i = 0; i < n; i++) {
		const struct pq_read_column *c = pq_read_column(f, i);

		for (j = 0; j < i; j++) {
			const struct pq_read_column *d = pq_read_column(f, j);

			if (d->name_len == c->name_len && memcmp(d->name, c->name, c->name_len) == 0) {
				fflush(stdout);
				err_msg("cannot read '%s': column '%s' appears twice", key, c->name);
				return EXIT_FAIL;
			}
		}
		l->on[i] = strlen(c->name) != c->name_len || !dropped(t, c->name);
		pq_read_select(f, i, l->on[i]);
		if (!l->on[i])
			continue;
		if (c->unsupported) {
			fflush(stdout);
			err_msg("cannot read '%s': column '%s': %s", key, c->name, c->unsupported);
			return EXIT_FAIL;
		}
		if ((int)i == l->extra)
			continue;
		if (k++)
			sb_addc(schema, ',');
		json_quote(schema, c->name, c->name_len);
		sb_addc(schema, ':');
		pq_read_schema_json(c, schema);
		if (l->names.len)
			sb_addc(&l->names, ',');
		json_quote(&l->names, c->name, c->name_len);
		sb_addc(&l->names, ':');
		l->name_end[k - 1] = l->names.len;
	}
	for (i = 0; i < l->nhive; i++) {
		if (k++)
			sb_addc(schema, ',');
		json_quote(schema, l->hive[i].name, strlen(l->hive[i].name));
		sb_adds(schema, ":{\"type\":\"string\"}");
		if (l->names.len)
			sb_addc(&l->names, ',');
		json_quote(&l->names, l->hive[i].name, strlen(l->hive[i].name));
		sb_addc(&l->names, ':');
		l->name_end[k - 1] = l->names.len;
	}
	sb_adds(schema, "}}");
	for (i = 0; i < t->nkeys; i++) {
		int found = has_column(f, t->keys[i], strlen(t->keys[i]));

		for (j = 0; !found && j < l->nhive; j++)
			found = strcmp(l->hive[j].name, t->keys[i]) == 0;
		if (!found) {
			fflush(stdout);
			return singer_tap_bad("config", t->config_file, "key property '%s' is not a column "
				   "of '%s'", t->keys[i], key);
		}
	}
	return 0;
}

/* Print one file: a SCHEMA when its columns differ from the last one's, its rows. */
static int sync_file(struct tap *t, struct source *s, const char *key)
{
	struct content c;
	struct pq_read_file *f = NULL;
	struct layout l;
	struct sb schema = SB_INIT, pre = SB_INIT;
	char *name = file_name(t, s, key);
	size_t i, k, row_start;
	int rc = EXIT_FAIL, r;

	memset(&l, 0, sizeof(l));
	if (fetch(s, key, name, &c) < 0)
		goto out;
	f = pq_read_open(content_bytes(&c), c.len, name);
	if (f == NULL)
		goto out;
	rc = plan_file(t, name, f, &l, &schema);
	if (rc)
		goto out;
	rc = EXIT_FAIL;
	if (!t->has_schema || schema.len != t->schema.len ||
	    memcmp(schema.buf, t->schema.buf, schema.len) != 0) {
		sb_adds(&t->msg, "{\"type\":\"SCHEMA\",\"stream\":");
		json_quote(&t->msg, t->stream, strlen(t->stream));
		sb_adds(&t->msg, ",\"schema\":");
		sb_add(&t->msg, schema.buf, schema.len);
		sb_adds(&t->msg, ",\"key_properties\":");
		json_quote_list(&t->msg, t->keys, t->nkeys);
		sb_adds(&t->msg, "}\n");
		sb_reset(&t->schema);
		sb_add(&t->schema, schema.buf, schema.len);
		t->has_schema = 1;
	}
	sb_adds(&pre, "{\"type\":\"RECORD\",\"stream\":");
	json_quote(&pre, t->stream, strlen(t->stream));
	sb_adds(&pre, ",\"record\":{");
	while ((r = pq_read_next_row(f)) == 1) {
		size_t at = 0;

		row_start = t->msg.len;
		sb_add(&t->msg, pre.buf, pre.len);
		for (i = 0, k = 0; i < l.ncols; i++) {
			if (!l.on[i] || (int)i == l.extra)
				continue;
			sb_add(&t->msg, l.names.buf + at, l.name_end[k] - at);
			at = l.name_end[k++];
			if (pq_read_value_json(f, i, &t->msg) < 0) {
				t->msg.len = row_start;
				goto out;
			}
		}
		for (i = 0; i < l.nhive; i++) {
			sb_add(&t->msg, l.names.buf + at, l.name_end[k] - at);
			at = l.name_end[k++];
			json_quote(&t->msg, l.hive[i].value, strlen(l.hive[i].value));
		}
		if (l.extra >= 0 && l.on[l.extra] && add_extra(f, &l, k, &t->msg, name) < 0) {
			t->msg.len = row_start;
			goto out;
		}
		sb_adds(&t->msg, "}}\n");
		t->nrecords++;
		if (t->msg.len >= EMIT_AT && emit(t) < 0)
			goto out;
	}
	if (r < 0)
		goto out;
	rc = emit(t) < 0 ? EXIT_FAIL : 0;
out:
	if (rc && !t->write_failed) {
		/* What was read whole goes out; the error was said. */
		if (emit(t) == 0)
			fflush(stdout);
	}
	pq_read_free(f);
	content_free(&c);
	layout_free(&l);
	sb_free(&schema);
	sb_free(&pre);
	free(name);
	return rc;
}

int sync_files(struct tap *t)
{
	struct source s;
	size_t i;
	int rc;

	rc = open_source(t, &s);
	if (rc)
		goto out;
	t->read = xcalloc(s.n + 1, sizeof(*t->read));
	for (i = 0; i < s.n && rc == 0; i++) {
		const char *key = s.keys[i];

		if (in_sorted(t->done, t->ndone, key)) {
			t->read[t->nread++] = xstrdup(key);
			continue;
		}
		if (!t->selected)
			continue;
		rc = sync_file(t, &s, key);
		if (rc == 0)
			t->read[t->nread++] = xstrdup(key);
	}
	if (rc == 0 && t->selected) {
		add_state(t);
		if (emit(t) < 0)
			rc = EXIT_FAIL;
	}
out:
	source_free(&s);
	return rc;
}

/* ---- discovery ---- */

int discover(struct tap *t)
{
	struct source s;
	struct content c;
	struct pq_read_file *f = NULL;
	struct layout l;
	struct sb schema = SB_INIT, cat = SB_INIT;
	char *name = NULL;
	size_t i;
	int rc;

	memset(&c, 0, sizeof(c));
	memset(&l, 0, sizeof(l));
	rc = open_source(t, &s);
	if (rc)
		goto out;
	rc = EXIT_FAIL;
	if (s.n == 0) {
		err_msg("cannot discover '%s': no file matches '%s'", t->path, t->glob);
		goto out;
	}
	name = file_name(t, &s, s.keys[0]);
	if (fetch(&s, s.keys[0], name, &c) < 0 || (f = pq_read_open(content_bytes(&c), c.len, name)) == NULL)
		goto out;
	/* An unsupported column is listed in the metadata, not in the schema. */
	for (i = 0; i < pq_read_ncolumns(f); i++)
		if (pq_read_column(f, i)->unsupported) {
			t->drop = xrealloc(t->drop, (t->ndrop + 1) * sizeof(*t->drop));
			t->drop[t->ndrop++] = xstrdup(pq_read_column(f, i)->name);
		}
	rc = plan_file(t, name, f, &l, &schema);
	if (rc)
		goto out;
	sb_adds(&cat, "{\"streams\":[{\"tap_stream_id\":");
	json_quote(&cat, t->stream, strlen(t->stream));
	sb_adds(&cat, ",\"stream\":");
	json_quote(&cat, t->stream, strlen(t->stream));
	sb_adds(&cat, ",\"schema\":");
	sb_add(&cat, schema.buf, schema.len);
	sb_adds(&cat, ",\"key_properties\":");
	json_quote_list(&cat, t->keys, t->nkeys);
	sb_adds(&cat, ",\"replication_method\":\"INCREMENTAL\",\"metadata\":[{\"breadcrumb\":[],"
		"\"metadata\":{\"inclusion\":\"available\",\"selected-by-default\":true,"
		"\"table-key-properties\":");
	json_quote_list(&cat, t->keys, t->nkeys);
	sb_adds(&cat, ",\"forced-replication-method\":\"INCREMENTAL\"}}");
	for (i = 0; i < pq_read_ncolumns(f); i++) {
		const struct pq_read_column *col = pq_read_column(f, i);

		sb_adds(&cat, ",{\"breadcrumb\":[\"properties\",");
		json_quote(&cat, col->name, col->name_len);
		sb_adds(&cat, "],\"metadata\":{\"inclusion\":");
		sb_adds(&cat, singer_tap_in_list(t->keys, t->nkeys, col->name) ? "\"automatic\"" :
			col->unsupported ? "\"unsupported\"" : "\"available\"");
		sb_adds(&cat, ",\"selected-by-default\":");
		sb_adds(&cat, col->unsupported ? "false" : "true");
		sb_adds(&cat, "}}");
	}
	for (i = 0; i < l.nhive; i++) {
		sb_adds(&cat, ",{\"breadcrumb\":[\"properties\",");
		json_quote(&cat, l.hive[i].name, strlen(l.hive[i].name));
		sb_adds(&cat, "],\"metadata\":{\"inclusion\":\"available\","
			"\"selected-by-default\":true}}");
	}
	sb_adds(&cat, "]}]}");
	rc = singer_tap_print_pretty(cat.buf, cat.len, &t->msg, &t->write_failed);
out:
	pq_read_free(f);
	content_free(&c);
	layout_free(&l);
	source_free(&s);
	sb_free(&schema);
	sb_free(&cat);
	free(name);
	return rc;
}
