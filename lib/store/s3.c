/*
 * s3: an S3 bucket (AWS, or any store that speaks its API: MinIO, R2, Ceph,
 * GCS's XML API) as a bucket: opening it, and the object operations of
 * bucket_ops (get, put, create-if-absent, versions, delete, move, list).
 * Each request goes through s3_call.c; uploads in parts are in
 * s3_multipart.c.
 */
#include "bucket.h"
#include "bucket_impl.h"
#include "err.h"
#include "s3_impl.h"
#include "size.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

static int s3_get(struct bucket *b, const char *key, struct sb *out)
{
	struct s3_bucket *s = sb3(b);
	struct http_call c;
	int r = -1;

	http_call_init(&c, "read", "GetObject", "GET", key);
	s3_perform(s, &c);
	if (ok(&c)) {
		sb_add(out, c.resp.buf ? c.resp.buf : "", c.resp.len);
		r = 0;
	} else if (no_key(&c)) {
		r = 1;
	} else {
		s3_report(s, &c, NULL);
	}
	http_call_free(&c);
	return r;
}

int s3_put_object(struct s3_bucket *s, const char *verb, const char *key,
		  const void *data, size_t len, const char *cond, long *status)
{
	struct http_call c;
	int r = -1;

	http_call_init(&c, verb, "PutObject", "PUT", key);
	c.body = data;
	c.body_len = len;
	c.hdr[0] = cond;
	s3_perform(s, &c);
	if (status)
		*status = c.status;
	if (ok(&c))
		r = 0;
	else if (cond && (c.status == 412 || c.status == 409 || c.status == 501 ||
			  http_code_is(&c, "NotImplemented")))
		r = 1;	/* the caller decides */
	else
		s3_report(s, &c, NULL);
	http_call_free(&c);
	return r;
}

static int s3_put(struct bucket *b, const char *key, const void *data, size_t len)
{
	return s3_put_object(sb3(b), "write", key, data, len, NULL, NULL);
}

/*
 * HEAD: 1 exists (size in *len, ETag into etag when not NULL), 0 missing,
 * -1 error (reported).
 */
static int head_etag(struct s3_bucket *s, const char *verb, const char *key, uint64_t *len,
		     char *etag, size_t size)
{
	struct http_call c;
	int r = -1;

	http_call_init(&c, verb, "HeadObject", "HEAD", key);
	s3_perform(s, &c);
	if (ok(&c)) {
		if (len)
			*len = c.length;
		if (etag)
			snprintf(etag, size, "%s", c.etag);
		r = 1;
	} else if (c.status == 404) {
		r = 0;
	} else {
		if (c.status >= 400 && c.code.len == 0) {
			/* an answer to HEAD has no body: ask again for the store's words */
			struct http_call g;

			http_call_init(&g, verb, "HeadObject", "GET", key);
			g.hdr[0] = "Range: bytes=0-0";
			s3_perform(s, &g);
			if (g.status == c.status && g.code.len) {
				sb_add(&c.code, g.code.buf, g.code.len);
				sb_add(&c.msg, g.msg.buf ? g.msg.buf : "", g.msg.len);
			}
			http_call_free(&g);
		}
		s3_report(s, &c, NULL);
	}
	http_call_free(&c);
	return r;
}

static int head(struct s3_bucket *s, const char *verb, const char *key, uint64_t *len)
{
	return head_etag(s, verb, key, len, NULL, 0);
}

static int s3_exists(struct bucket *b, const char *key)
{
	return head(sb3(b), "look at", key, NULL);
}

/* Read key back: 0 it holds data[0..len), 1 it holds something else or is gone, -1 error. */
static int same_content(struct bucket *b, const char *key, const void *data, size_t len)
{
	struct sb back = SB_INIT;
	int r = s3_get(b, key, &back);

	if (r == 0 && (back.len != len || (len && memcmp(back.buf, data, len) != 0)))
		r = 1;
	sb_free(&back);
	return r;
}

static const char *condition(const struct s3_bucket *s)
{
	if (s->no_conditional)
		return NULL;
	return s->t.gcs ? "x-goog-if-generation-match: 0" : "If-None-Match: *";
}

/*
 * Create only if absent.  The store is asked with If-None-Match: * (GCS:
 * x-goog-if-generation-match: 0), and, as some stores ignore that, the
 * object is looked for first and read back after, twice: a rival that
 * looked at the same moment and wrote just after us is seen by the second
 * read, and wins.
 */
static int s3_put_new(struct bucket *b, const char *key, const void *data, size_t len)
{
	struct s3_bucket *s = sb3(b);
	long status = 0;
	int r;

	r = head(s, "create", key, NULL);
	if (r != 0)
		return r < 0 ? -1 : 1;
	r = s3_put_object(s, "create", key, data, len, condition(s), &status);
	if (r == 1 && (status == 501 || status == 400)) {
		/* NotImplemented: this store cannot; rely on the reads alone */
		s->no_conditional = 1;
		r = s3_put_object(s, "create", key, data, len, NULL, NULL);
	} else if (r == 1) {
		/*
		 * Refused, though absent a moment ago: a rival's, or our own
		 * write sent twice (a retry, by us or by curl on a reused
		 * connection), the answer to the first lost.  The reads below
		 * tell: ours is ours byte for byte.
		 */
		r = 0;
	}
	if (r != 0)
		return r;
	r = same_content(b, key, data, len);
	if (r != 0 || s->settle_ms == 0)
		return r;
	util_sleep_ms(s->settle_ms);
	return same_content(b, key, data, len);
}

/*
 * Write over key with If-None-Match: *.  A store that honours it answers
 * 412 (or 409 while a rival write is in flight).
 */
static int s3_probe_conditional(struct bucket *b, const char *key)
{
	struct s3_bucket *s = sb3(b);
	static const char body[] = "dataspoc-pipe conditional create probe\n";
	long status = 0;
	int r;

	if (s->no_conditional)
		return 0;
	r = s3_put_object(s, "probe", key, body, sizeof(body) - 1, condition(s), &status);
	if (r < 0)
		return -1;
	if (r == 0)
		return 0;
	if (status == 412 || status == 409)
		return 1;
	s->no_conditional = 1;	/* 501 NotImplemented */
	return 0;
}

/*
 * An object's version is its ETag.  GCS conditions writes on generations,
 * not ETags, and a store that refused If-None-Match refuses If-Match too:
 * those keep no versions here.
 */
static int s3_version(struct bucket *b, const char *key, char *buf, size_t size)
{
	struct s3_bucket *s = sb3(b);
	int r;

	if (s->t.gcs || s->no_conditional)
		return 2;
	r = head_etag(s, "read", key, NULL, buf, size);
	if (r == 1 && buf[0] == '\0')
		return 2;	/* a store that sends no ETag */
	return r;
}

/* PutObject with If-Match: ETAG (If-None-Match: * for ""). */
static int s3_put_if(struct bucket *b, const char *key, const void *data, size_t len,
		     const char *version)
{
	struct s3_bucket *s = sb3(b);
	char *cond;
	long status = 0;
	int r;

	if (s->t.gcs || s->no_conditional)
		return s3_put_object(s, "write", key, data, len, NULL, NULL);
	cond = version[0] ? xasprintf("If-Match: %s", version) : xstrdup("If-None-Match: *");
	r = s3_put_object(s, "write", key, data, len, cond, &status);
	free(cond);
	if (r == 1 && (status == 501 || status == 400)) {
		s->no_conditional = 1;
		r = s3_put_object(s, "write", key, data, len, NULL, NULL);
	}
	return r;
}

static int delete_object(struct s3_bucket *s, const char *verb, const char *key)
{
	struct http_call c;
	int r = -1;

	http_call_init(&c, verb, "DeleteObject", "DELETE", key);
	s3_perform(s, &c);
	if (ok(&c) || no_key(&c))
		r = 0;
	else
		s3_report(s, &c, NULL);
	http_call_free(&c);
	return r;
}

static int s3_delete(struct bucket *b, const char *key)
{
	return delete_object(sb3(b), "delete", key);
}

char *s3_copy_source(const struct s3_bucket *s, const char *key)
{
	struct sb enc = SB_INIT, out = SB_INIT;
	char *full = xasprintf("%s%s", s->t.prefix, key);
	const char *p;

	http_uri_encode(&enc, full, strlen(full), 1);
	sb_addf(&out, "x-amz-copy-source: /%s/", s->t.bucket);
	/*
	 * '=' (dt=...) left as is: S3 decodes either form, and s3rver decodes
	 * this header with decodeURI, which keeps "%3D" as it is.
	 */
	for (p = enc.buf; *p; p++) {
		if (p[0] == '%' && p[1] == '3' && p[2] == 'D') {
			sb_addc(&out, '=');
			p += 2;
		} else {
			sb_addc(&out, *p);
		}
	}
	sb_free(&enc);
	free(full);
	return sb_detach(&out);
}

static int s3_move(struct bucket *b, const char *from, const char *to)
{
	struct s3_bucket *s = sb3(b);
	struct http_call c;
	uint64_t size = 0;
	char *src;
	int r;

	r = head(s, "move", from, &size);
	if (r <= 0)
		return r < 0 ? -1 : 1;
	if (strcmp(from, to) == 0)
		return 0;
	if (size > s->copy_part) {
		if (s3_copy_in_parts(s, from, to, size) < 0)
			return -1;
	} else {
		src = s3_copy_source(s, from);
		http_call_init(&c, "move", "CopyObject", "PUT", to);
		c.hdr[0] = src;
		c.error_in_200 = 1;
		s3_perform(s, &c);
		free(src);
		if (c.status == 404 && http_code_is(&c, "NoSuchKey")) {
			http_call_free(&c);
			return 1;	/* moved away meanwhile */
		}
		if (!ok(&c)) {
			s3_report(s, &c, from);
			http_call_free(&c);
			return -1;
		}
		http_call_free(&c);
	}
	return delete_object(s, "move", from);
}

static int s3_list(struct bucket *b, const char *prefix, struct bucket_keys *out)
{
	struct s3_bucket *s = sb3(b);
	struct sb token = SB_INIT, next = SB_INIT, query = SB_INIT;
	char *full = xasprintf("%s%s", s->t.prefix, prefix);
	size_t plen = strlen(s->t.prefix);
	int ret = -1, pages = 0;

	for (;;) {
		struct http_param q[4] = {
			{ "encoding-type", "url" }, { "list-type", "2" }, { "prefix", full },
			{ "continuation-token", token.buf },
		};
		struct http_call c;
		char **keys = NULL, **versions = NULL;
		size_t n = 0;
		int truncated = 0;

		sb_reset(&query);
		s3_query(&query, q, token.len ? 4 : 3);
		http_call_init(&c, "list", "ListObjectsV2", "GET", NULL);
		c.query = query.buf;
		s3_perform(s, &c);
		if (!ok(&c)) {
			s3_report(s, &c, NULL);
			http_call_free(&c);
			goto out;
		}
		if (s3_xml_list_versions(c.resp.buf, c.resp.len, &keys, &versions, &n, &truncated,
					 &next) < 0) {
			snprintf(c.why, sizeof(c.why), "cannot read the answer (page %d)", pages + 1);
			c.status = -1;
			s3_report(s, &c, NULL);
			http_call_free(&c);
			goto out;
		}
		http_call_free(&c);
		bucket_keys_take(out, keys, versions, n, full, plen);
		util_strv_free(keys);
		util_strv_free(versions);
		pages++;
		if (!truncated)
			break;
		if (next.len == 0 || (token.len && strcmp(next.buf, token.buf) == 0)) {
			char *subj = s3_subject(s, prefix);

			err_msg("cannot list '%s': ListObjectsV2: the store says there is more but "
				"gives no new continuation token", subj);
			free(subj);
			goto out;
		}
		sb_reset(&token);
		sb_add(&token, next.buf, next.len);
	}
	ret = 0;
out:
	sb_free(&token);
	sb_free(&next);
	sb_free(&query);
	free(full);
	return ret;
}

static void s3_free(struct bucket *b)
{
	struct s3_bucket *s = sb3(b);

	if (s->h)
		curl_easy_cleanup(s->h);
	s3_target_free(&s->t);
	s3_settings_free(&s->st);
	s3_creds_free(&s->creds);
	free(s->sigv4);
	free(s);
}

static const struct bucket_ops s3_ops = {
	.name = "s3",
	.free = s3_free,
	.get = s3_get,
	.put = s3_put,
	.put_new = s3_put_new,
	.probe_conditional = s3_probe_conditional,
	.version = s3_version,
	.put_if = s3_put_if,
	.del = s3_delete,
	.move = s3_move,
	.exists = s3_exists,
	.list = s3_list,
	.writer_open = s3_writer_open,
	.writer_write = s3_writer_write,
	.writer_close = s3_writer_close,
	.writer_abort = s3_writer_abort,
};

/* A size from the environment, clamped to [lo, hi]; def when unset. */
static uint64_t env_size(const char *name, uint64_t def, uint64_t lo, uint64_t hi, int *bad)
{
	const char *v = getenv(name);
	uint64_t n;

	if (v == NULL || *v == '\0')
		return def;
	if (config_parse_size(v, &n) < 0) {
		err_msg("%s must be a size such as 8MiB, not '%s'", name, v);
		*bad = 1;
		return def;
	}
	return n < lo ? lo : n > hi ? hi : n;
}

struct bucket *s3_bucket_open(const char *url, const char *endpoint)
{
	static int curl_ready;
	struct s3_bucket *s = xcalloc(1, sizeof(*s));
	struct sb why = SB_INIT;
	const char *v;
	int bad = 0;

	s->base.ops = &s3_ops;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			err_msg("cannot open bucket '%s': cannot start libcurl", url);
			goto fail;
		}
		curl_ready = 1;
	}
	if (s3_settings_load(&s->st) < 0)
		goto fail;
	if (endpoint == NULL || *endpoint == '\0')
		endpoint = strncasecmp(url, "gs://", 5) == 0 ? NULL : s->st.endpoint;
	if (s3_target_init(&s->t, url, endpoint,
			   strncasecmp(url, "gs://", 5) == 0 ? NULL : s->st.region,
			   s->st.addressing, &why) < 0) {
		err_msg("invalid bucket '%s': %s", url, why.buf);
		sb_free(&why);
		goto fail;
	}
	v = getenv("DATASPOC_PIPE_S3_RETRIES");
	s->retries = DEFAULT_RETRIES;
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);

		if (*end || n < 0 || n > 100) {
			err_msg("DATASPOC_PIPE_S3_RETRIES must be a number from 0 to 100, not '%s'", v);
			goto fail;
		}
		s->retries = (int)n;
	}
	s->part_size = (size_t)env_size("DATASPOC_PIPE_S3_PART_SIZE", DEFAULT_PART, MIN_PART,
					MAX_PART, &bad);
	s->copy_part = env_size("DATASPOC_PIPE_S3_COPY_PART_SIZE", MAX_PART, MIN_PART,
				MAX_PART, &bad);
	s->settle_ms = 200;
	v = getenv("DATASPOC_PIPE_S3_SETTLE_MS");
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);

		if (*end || n < 0 || n > 60000) {
			err_msg("DATASPOC_PIPE_S3_SETTLE_MS must be a number of milliseconds, not '%s'", v);
			goto fail;
		}
		s->settle_ms = n;
	}
	s->timeout = 60;
	v = getenv("DATASPOC_PIPE_S3_TIMEOUT");
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);

		if (*end || n < 1 || n > 3600) {
			err_msg("DATASPOC_PIPE_S3_TIMEOUT must be a number of seconds from 1 to 3600, not '%s'", v);
			goto fail;
		}
		s->timeout = n;
	}
	if (bad)
		goto fail;
	if (s3_creds_load(&s->creds, &s->st, s->t.gcs) < 0)
		goto fail;
	s->sigv4 = xasprintf("aws:amz:%s:s3", s->t.region);
	s->h = curl_easy_init();
	if (s->h == NULL) {
		err_msg("cannot open bucket '%s': cannot start libcurl", url);
		goto fail;
	}
	return &s->base;
fail:
	s3_free(&s->base);
	return NULL;
}
