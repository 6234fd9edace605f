/*
 * bucket: the store-independent half.  Parses the url, picks the store
 * from the table of schemes (a local directory, file://, s3:// and gs://,
 * az://),
 * validates keys once for every store, sorts listings.
 */
#include "bucket.h"
#include "bucket_impl.h"
#include "err.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/*
 * Keys and urls come from configs and taps: show control bytes escaped so a
 * message stays one line.
 */
static char *printable(const char *s)
{
	struct sb sb = SB_INIT;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			sb_addf(&sb, "\\x%02x", c);
		else
			sb_addc(&sb, (char)c);
	}
	return sb_detach(&sb);
}

static void bad_key(const struct bucket *b, const char *what, const char *key)
{
	char *p = printable(key ? key : "(null)");

	err_msg("invalid %s '%s' in bucket '%s': keys are relative paths without "
		"empty, '.' or '..' components or control characters",
		what, p, b->url);
	free(p);
}

int bucket_key_ok(const char *key)
{
	const char *p, *comp;

	if (key == NULL || *key == '\0' || *key == '/')
		return 0;
	for (p = comp = key;; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '/' || c == '\0') {
			size_t len = (size_t)(p - comp);

			if (len == 0 || (len == 1 && comp[0] == '.') ||
			    (len == 2 && comp[0] == '.' && comp[1] == '.'))
				return 0;
			if (c == '\0')
				return 1;
			comp = p + 1;
		} else if (c < 0x20 || c == 0x7f) {
			return 0;
		}
	}
}

/* "" or a string whose part before the last '/' (if any) is a valid key. */
static int prefix_ok(const char *prefix)
{
	size_t len;
	char *dir;
	int ok;

	if (prefix == NULL)
		return 0;
	len = strlen(prefix);
	if (len == 0)
		return 1;
	if (prefix[len - 1] == '/')
		len--;
	dir = xstrndup(prefix, len);
	ok = bucket_key_ok(dir);
	free(dir);
	return ok;
}

/* "name://" with an RFC 3986 scheme name: length of name, else 0. */
static size_t scheme_len(const char *url)
{
	size_t i = 0;

	if (!((url[0] >= 'a' && url[0] <= 'z') || (url[0] >= 'A' && url[0] <= 'Z')))
		return 0;
	for (i = 1; url[i]; i++) {
		char c = url[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'))
			break;
	}
	return strncmp(url + i, "://", 3) == 0 ? i : 0;
}

/* "file:///abs/dir" (or "file://localhost/abs/dir"): the directory. */
static struct bucket *open_file(const char *url, const char *endpoint, const char *account)
{
	const char *path = url + strlen("file://");
	char *p;

	(void)endpoint;
	(void)account;
	/* RFC 8089 allows an empty or "localhost" authority, nothing else. */
	if (strncasecmp(path, "localhost/", 10) == 0)
		path += 9;
	if (*path != '/') {
		p = printable(url);
		err_msg("invalid bucket '%s': a file:// url must be absolute, "
			"as in file:///abs/dir", p);
		free(p);
		return NULL;
	}
	return local_bucket_open(path);
}

static struct bucket *open_s3(const char *url, const char *endpoint, const char *account)
{
	(void)account;
	return s3_bucket_open(url, endpoint);
}

/*
 * The stores by url scheme, as git's refs_backends[]: "NAME://..." opens
 * with the entry named NAME (in any case), a url without a scheme is a
 * local directory.  The messages naming what a bucket may be are made
 * from this table.
 */
static const struct bucket_scheme {
	const char *name;
	const char *example;	/* in those messages */
	struct bucket *(*open)(const char *url, const char *endpoint, const char *account);
} schemes[] = {
	{ "file", "file:///abs/dir", open_file },
	{ "s3", "s3://bucket", open_s3 },
	{ "gs", "gs://bucket", open_s3 },
	{ "az", "az://container", az_bucket_open },
};
#define N_SCHEMES (sizeof(schemes) / sizeof(schemes[0]))

/* "a local directory, file:///abs/dir, ... or az://container" */
static char *schemes_hint(void)
{
	struct sb sb = SB_INIT;
	size_t i;

	sb_adds(&sb, "a local directory");
	for (i = 0; i < N_SCHEMES; i++)
		sb_addf(&sb, "%s%s", i + 1 < N_SCHEMES ? ", " : " or ", schemes[i].example);
	return sb_detach(&sb);
}

static const struct bucket_scheme *scheme_find(const char *url, size_t n)
{
	size_t i;

	for (i = 0; i < N_SCHEMES; i++)
		if (strlen(schemes[i].name) == n && strncasecmp(url, schemes[i].name, n) == 0)
			return &schemes[i];
	return NULL;
}

struct bucket *bucket_open(const char *url)
{
	return bucket_open_opts(url, NULL);
}

struct bucket *bucket_open_opts(const char *url, const char *endpoint)
{
	return bucket_open_account(url, endpoint, NULL);
}

struct bucket *bucket_open_account(const char *url, const char *endpoint, const char *account)
{
	const struct bucket_scheme *s;
	struct bucket *b;
	char *p, *hint;
	size_t n;

	if (url == NULL || *url == '\0') {
		hint = schemes_hint();
		err_msg("no bucket given: use %s", hint);
		free(hint);
		return NULL;
	}
	n = scheme_len(url);
	if (n == 0) {
		b = local_bucket_open(url);
	} else if ((s = scheme_find(url, n)) != NULL) {
		b = s->open(url, endpoint, account);
	} else {
		p = printable(url);
		hint = schemes_hint();
		err_msg("unsupported bucket '%s': use %s", p, hint);
		free(hint);
		free(p);
		return NULL;
	}
	if (b == NULL)
		return NULL;
	b->url = xstrdup(url);
	return b;
}

void bucket_free(struct bucket *b)
{
	if (b == NULL)
		return;
	free(b->url);
	b->url = NULL;
	b->ops->free(b);
}

const char *bucket_url(const struct bucket *b)
{
	return b->url;
}

char *bucket_location(const struct bucket *b, const char *key)
{
	const char *url = b->url;
	size_t n = strlen(url);
	char *base, *loc, cwd[4096];

	while (n > 1 && url[n - 1] == '/')
		n--;
	if (scheme_len(url) > 0)
		base = xstrndup(url, n);
	else if (url[0] == '/')
		base = xasprintf("file://%.*s", (int)n, url);
	else if (getcwd(cwd, sizeof(cwd)) != NULL)
		base = xasprintf("file://%s%s%.*s", cwd, strcmp(cwd, "/") ? "/" : "",
				 (int)(n - (strncmp(url, "./", 2) == 0 ? 2 : 0)),
				 url + (strncmp(url, "./", 2) == 0 ? 2 : 0));
	else
		base = xstrndup(url, n);
	if (key == NULL || *key == '\0')
		return base;
	loc = xasprintf("%s/%s", base, key);
	free(base);
	return loc;
}

int bucket_is_local(const struct bucket *b)
{
	return strcmp(b->ops->name, "local") == 0;
}

int bucket_get(struct bucket *b, const char *key, struct sb *out)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return b->ops->get(b, key, out);
}

int bucket_put(struct bucket *b, const char *key, const void *data, size_t len)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return b->ops->put(b, key, data, len);
}

int bucket_put_new(struct bucket *b, const char *key, const void *data, size_t len)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return b->ops->put_new(b, key, data, len);
}

int bucket_put_new_lock(struct bucket *b, const char *key, const void *data, size_t len)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return (b->ops->put_new_lock ? b->ops->put_new_lock : b->ops->put_new)(b, key, data, len);
}

int bucket_creates_whole(const struct bucket *b)
{
	return b->ops->creates_whole;
}

int bucket_probe_conditional(struct bucket *b, const char *key)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return b->ops->probe_conditional ? b->ops->probe_conditional(b, key) : 1;
}

int bucket_version(struct bucket *b, const char *key, char *buf, size_t size)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	buf[0] = '\0';
	return b->ops->version ? b->ops->version(b, key, buf, size) : 2;
}

int bucket_put_if(struct bucket *b, const char *key, const void *data, size_t len,
		  const char *version)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	if (version == NULL || b->ops->put_if == NULL)
		return b->ops->put(b, key, data, len);
	return b->ops->put_if(b, key, data, len, version);
}

int bucket_sweep(struct bucket *b, const char *dir)
{
	return b->ops->sweep ? b->ops->sweep(b, dir) : 0;
}

int bucket_delete(struct bucket *b, const char *key)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return b->ops->del(b, key);
}

int bucket_delete_lock(struct bucket *b, const char *key)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return b->ops->del_lock ? b->ops->del_lock(b, key) : b->ops->del(b, key);
}

int bucket_move(struct bucket *b, const char *from, const char *to)
{
	if (!bucket_key_ok(from)) {
		bad_key(b, "key", from);
		return -1;
	}
	if (!bucket_key_ok(to)) {
		bad_key(b, "key", to);
		return -1;
	}
	return b->ops->move(b, from, to);
}

int bucket_exists(struct bucket *b, const char *key)
{
	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return -1;
	}
	return b->ops->exists(b, key);
}

void bucket_keys_add_version(struct bucket_keys *k, const char *key, size_t len,
			     const char *version)
{
	if (k->n + 1 >= k->cap) {
		k->cap = k->cap ? 2 * k->cap : 64;
		k->v = xrealloc(k->v, k->cap * sizeof(*k->v));
		k->ver = xrealloc(k->ver, k->cap * sizeof(*k->ver));
	}
	k->ver[k->n] = version && *version ? xstrdup(version) : NULL;
	k->v[k->n++] = xstrndup(key, len);
}

void bucket_keys_add(struct bucket_keys *k, const char *key, size_t len)
{
	bucket_keys_add_version(k, key, len, NULL);
}

size_t bucket_part_fill(char **buf, size_t *cap, size_t *len, size_t part, const void *data,
			size_t n)
{
	size_t room;

	if (*cap < part && *len + n > *cap) {
		size_t c = *cap ? *cap : 65536;

		while (c < *len + n && c < part)
			c *= 2;
		if (c > part)
			c = part;
		*buf = xrealloc(*buf, c);
		*cap = c;
	}
	room = *cap - *len;
	if (n > room)
		n = room;
	memcpy(*buf + *len, data, n);
	*len += n;
	return n;
}

static int cmp_keys(const void *a, const void *b)
{
	/* strcmp compares as unsigned char: bytewise, as S3 lists. */
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A key and its version, sorted together. */
struct key_version {
	char *key, *version;
};

static int cmp_key_versions(const void *a, const void *b)
{
	return strcmp(((const struct key_version *)a)->key, ((const struct key_version *)b)->key);
}

void bucket_keys_take(struct bucket_keys *k, char *const *keys, char *const *versions, size_t n,
		      const char *full, size_t plen)
{
	size_t i, flen = strlen(full);

	for (i = 0; i < n; i++) {
		/* "dir/" markers and keys no caller can name are passed over */
		if (strncmp(keys[i], full, flen) != 0)
			continue;
		if (bucket_key_ok(keys[i] + plen))
			bucket_keys_add_version(k, keys[i] + plen, strlen(keys[i] + plen), versions[i]);
		else
			bucket_keys_skip(k, keys[i] + plen);
	}
}

void bucket_keys_skip(struct bucket_keys *k, const char *rest)
{
	size_t len = strlen(rest);

	if (len > 0 && rest[len - 1] != '/')
		k->skipped++;
}

size_t bucket_list_skipped(const struct bucket *b)
{
	return b->list_skipped;
}

int bucket_list_versions(struct bucket *b, const char *prefix, char ***keys, char ***versions,
			 size_t *n)
{
	struct bucket_keys k = { NULL, NULL, 0, 0, 0 };
	struct key_version *kv;
	size_t i;

	*keys = NULL;
	if (versions)
		*versions = NULL;
	if (n)
		*n = 0;
	if (!prefix_ok(prefix)) {
		bad_key(b, "prefix", prefix);
		return -1;
	}
	b->list_skipped = 0;
	if (b->ops->list(b, prefix, &k) < 0) {
		for (i = 0; i < k.n; i++) {
			free(k.v[i]);
			free(k.ver[i]);
		}
		free(k.v);
		free(k.ver);
		return -1;
	}
	b->list_skipped = k.skipped;
	if (k.v == NULL) {
		k.v = xmalloc(sizeof(*k.v));
		k.ver = xmalloc(sizeof(*k.ver));
	}
	if (versions == NULL) {
		for (i = 0; i < k.n; i++)
			free(k.ver[i]);
		free(k.ver);
		qsort(k.v, k.n, sizeof(*k.v), cmp_keys);
	} else {
		kv = xcalloc(k.n ? k.n : 1, sizeof(*kv));
		for (i = 0; i < k.n; i++) {
			kv[i].key = k.v[i];
			kv[i].version = k.ver[i];
		}
		qsort(kv, k.n, sizeof(*kv), cmp_key_versions);
		for (i = 0; i < k.n; i++) {
			k.v[i] = kv[i].key;
			k.ver[i] = kv[i].version;
		}
		free(kv);
		k.ver[k.n] = NULL;
		*versions = k.ver;
	}
	k.v[k.n] = NULL;
	*keys = k.v;
	if (n)
		*n = k.n;
	return 0;
}

int bucket_list(struct bucket *b, const char *prefix, char ***keys, size_t *n)
{
	return bucket_list_versions(b, prefix, keys, NULL, n);
}

struct bucket_writer *bucket_writer_open(struct bucket *b, const char *key)
{
	struct bucket_writer *w;

	if (!bucket_key_ok(key)) {
		bad_key(b, "key", key);
		return NULL;
	}
	w = b->ops->writer_open(b, key);
	if (w == NULL)
		return NULL;
	w->b = b;
	w->key = xstrdup(key);
	return w;
}

const struct bucket *bucket_writer_bucket(const struct bucket_writer *w)
{
	return w->b;
}

const char *bucket_writer_key(const struct bucket_writer *w)
{
	return w->key;
}

int bucket_writer_write(struct bucket_writer *w, const void *data, size_t len)
{
	if (len == 0)
		return 0;
	return w->b->ops->writer_write(w, data, len);
}

int bucket_writer_close(struct bucket_writer *w)
{
	char *key;
	int r;

	if (w == NULL)
		return -1;
	key = w->key;
	r = w->b->ops->writer_close(w);
	free(key);
	return r;
}

void bucket_closes_begin(struct bucket *b)
{
	if (b->ops->closes_begin)
		b->ops->closes_begin(b);
}

int bucket_closes_end(struct bucket *b)
{
	return b->ops->closes_end ? b->ops->closes_end(b) : 0;
}

void bucket_writer_abort(struct bucket_writer *w)
{
	char *key;

	if (w == NULL)
		return;
	key = w->key;
	w->b->ops->writer_abort(w);
	free(key);
}
