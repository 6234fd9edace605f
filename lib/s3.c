/*
 * s3: an S3 bucket (AWS, or any store that speaks its API: MinIO, R2, Ceph,
 * GCS's XML API) as a bucket.  libcurl does the HTTP and the SigV4 signing
 * (CURLOPT_AWS_SIGV4); this file builds each request the way curl 7.88
 * signs it: keys percent-encoded, queries sorted and encoded, and
 * x-amz-content-sha256 set by hand (curl signs its value as the payload
 * hash).  Failed requests are retried with exponential backoff and jitter
 * when the failure may pass (5xx, 429, SlowDown, timeouts, resets).
 */
#include "bucket.h"
#include "bucket_impl.h"
#include "err.h"
#include "s3.h"
#include "size.h"
#include "util.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <curl/curl.h>

enum {
	MIN_PART = 5 << 20,	/* S3's smallest part but the last */
	DEFAULT_PART = 8 << 20,
	MAX_PARTS = 10000,
	DEFAULT_RETRIES = 5
};
#define MAX_PART ((uint64_t)5 << 30)
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

struct s3_bucket {
	struct bucket base;
	struct s3_target t;
	struct s3_settings st;
	struct s3_creds creds;
	CURL *h;
	char *sigv4;		/* "aws:amz:<region>:s3" */
	int retries;
	size_t part_size;
	uint64_t copy_part;	/* objects above this are copied in parts of this size */
	int no_conditional;	/* the store refused If-None-Match (501) */
	long settle_ms;		/* put_new: wait before the second read-back */
	long timeout;		/* seconds without a byte moved: the attempt failed */
	char errbuf[CURL_ERROR_SIZE];
};

/* One request and its answer. */
struct call {
	const char *verb;	/* for messages: "read", "write", ... */
	const char *api;	/* "GetObject", ... */
	const char *method;
	const char *key;	/* below the prefix; NULL: the bucket itself */
	const char *query;	/* canonical, or NULL */
	const void *body;
	size_t body_len;
	const char *content_type;
	const char *extra[4];	/* more headers, NULL-terminated */
	int error_in_200;	/* CopyObject and friends may fail with 200 */

	long status;		/* -1: no answer (why) */
	int failed200;
	struct sb resp, code, msg;
	char etag[256];
	uint64_t length;
	char region[64];	/* x-amz-bucket-region */
	char why[CURL_ERROR_SIZE + 64];
	CURLcode rc;
	int attempts;
	size_t sent;
	int headers_ended;	/* the blank line after the last answer's headers came */
	int sends;		/* times the request went out, curl's own resends included */
};

struct s3_writer {
	struct bucket_writer base;
	struct s3_bucket *s;
	char *key;
	char *buf;
	size_t len, cap, part;	/* buffered, allocated, current part size */
	char *upload_id;
	struct sb parts;	/* <Part> elements so far */
	int nparts;
	uint64_t total;		/* bytes in the parts sent */
	int failed;
};

static struct s3_bucket *sb3(struct bucket *b)
{
	return (struct s3_bucket *)b;
}

static void call_free(struct call *c)
{
	sb_free(&c->resp);
	sb_free(&c->code);
	sb_free(&c->msg);
}

/* "s3://bucket/prefix/key" for messages. */
static char *subject(const struct s3_bucket *s, const char *key)
{
	if (key && *key)
		return xasprintf("%s://%s/%s%s", s->t.scheme, s->t.bucket, s->t.prefix, key);
	if (*s->t.prefix)
		return xasprintf("%s://%s/%.*s", s->t.scheme, s->t.bucket,
				 (int)strlen(s->t.prefix) - 1, s->t.prefix);
	return xasprintf("%s://%s", s->t.scheme, s->t.bucket);
}

static const char *reason_phrase(long status)
{
	switch (status) {
	case 301: return "Moved Permanently";
	case 307: return "Temporary Redirect";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
	case 411: return "Length Required";
	case 412: return "Precondition Failed";
	case 416: return "Range Not Satisfiable";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default: return "";
	}
}

/* One line: what failed, on which object, and the store's words. */
static void report(const struct s3_bucket *s, const struct call *c, const char *key)
{
	char *subj = subject(s, key ? key : c->key);
	char tries[48] = "";
	const char *code = c->code.len ? c->code.buf : reason_phrase(c->status);
	const char *msg = c->msg.len ? c->msg.buf : "";
	char hint[320] = "";

	if (c->attempts > 1)
		snprintf(tries, sizeof(tries), " (gave up after %d attempts)", c->attempts);
	if (c->status < 0) {
		err_msg("cannot %s '%s': %s: %s%s", c->verb, subj, c->api, c->why, tries);
		free(subj);
		return;
	}
	if (c->region[0] && strcmp(c->region, s->t.region) != 0)
		snprintf(hint, sizeof(hint), " (the bucket is in region %s: set AWS_REGION=%s)",
			 c->region, c->region);
	else if (c->status == 404 && c->code.len && strcmp(c->code.buf, "NoSuchBucket") == 0)
		snprintf(hint, sizeof(hint), " (bucket '%s' at %s)", s->t.bucket, s->t.origin);
	err_msg("cannot %s '%s': %s: HTTP %ld%s%s%s%s%s%s", c->verb, subj, c->api, c->status,
		*code ? " " : "", code, *msg ? ": " : "", msg, hint, tries);
	free(subj);
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct call *c = arg;

	sb_add(&c->resp, data, size * n);
	return size * n;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t len = size * n, nlen, vlen;
	const char *colon = memchr(data, ':', len), *v;

	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0)
		c->headers_ended = 0;	/* a status line: an answer begins (after a 100 too) */
	else if ((len == 2 && data[0] == '\r' && data[1] == '\n') || (len == 1 && data[0] == '\n'))
		c->headers_ended = 1;
	if (colon == NULL)
		return len;
	nlen = (size_t)(colon - data);
	v = colon + 1;
	vlen = len - nlen - 1;
	while (vlen > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen > 0 && (v[vlen - 1] == '\r' || v[vlen - 1] == '\n' || v[vlen - 1] == ' '))
		vlen--;
	if (nlen == 4 && strncasecmp(data, "ETag", 4) == 0 && vlen < sizeof(c->etag)) {
		memcpy(c->etag, v, vlen);
		c->etag[vlen] = '\0';
	} else if (nlen == 14 && strncasecmp(data, "Content-Length", 14) == 0) {
		char num[32];

		if (vlen < sizeof(num)) {
			memcpy(num, v, vlen);
			num[vlen] = '\0';
			c->length = strtoull(num, NULL, 10);
		}
	} else if (nlen == 19 && strncasecmp(data, "x-amz-bucket-region", 19) == 0 &&
		   vlen < sizeof(c->region)) {
		memcpy(c->region, v, vlen);
		c->region[vlen] = '\0';
	}
	return len;
}

static size_t on_read(char *dst, size_t size, size_t n, void *arg)
{
	struct call *c = arg;
	size_t left = c->body_len - c->sent, want = size * n;

	if (want > left)
		want = left;
	if (want)
		memcpy(dst, (const char *)c->body + c->sent, want);
	c->sent += want;
	return want;
}

#if LIBCURL_VERSION_NUM >= 0x075000
/* Called each time the request goes out, curl's own resends included. */
static int on_prereq(void *arg, char *remote_ip, char *local_ip, int remote_port, int local_port)
{
	struct call *c = arg;

	(void)remote_ip;
	(void)local_ip;
	(void)remote_port;
	(void)local_port;
	c->sends++;
	return CURL_PREREQFUNC_OK;
}
#endif

static int on_seek(void *arg, curl_off_t offset, int origin)
{
	struct call *c = arg;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > c->body_len)
		return CURL_SEEKFUNC_FAIL;
	c->sent = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

static int retryable_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_WEIRD_SERVER_REPLY:
		return 1;
	default:
		return 0;
	}
}

static int code_is(const struct call *c, const char *code)
{
	return c->code.len && strcmp(c->code.buf, code) == 0;
}

static int retryable(const struct call *c)
{
	if (c->status < 0)
		return retryable_curl(c->rc);
	if (c->status >= 500 && c->status != 501)
		return 1;
	if (c->status == 429 || code_is(c, "SlowDown") || code_is(c, "RequestTimeout") ||
	    code_is(c, "InternalError") || code_is(c, "ServiceUnavailable") ||
	    code_is(c, "RequestTimeTooSkewed"))
		return 1;
	return 0;
}

/* A 2xx answer that is not an error document in disguise. */
static int ok(const struct call *c)
{
	return c->status >= 200 && c->status < 300 && !c->failed200;
}

static uint64_t rnd64(void)
{
	static uint64_t state;

	if (state == 0) {
		if (getrandom(&state, sizeof(state), GRND_NONBLOCK) != (ssize_t)sizeof(state))
			state = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
		state |= 1;
	}
	/* xorshift64 */
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

static void backoff(int attempt)
{
	long cap = 200L << (attempt < 7 ? attempt : 7);	/* 200 ms, 400 ms, ... 25.6 s */

	if (cap > 20000)
		cap = 20000;
	util_sleep_ms(cap / 2 + (long)(rnd64() % (uint64_t)(cap / 2 + 1)));
}

static int refresh_creds(struct s3_bucket *s)
{
	struct s3_creds fresh;

	if (s->creds.expires == 0 || time(NULL) < s->creds.expires - 300)
		return 0;
	if (s3_creds_load(&fresh, &s->st, s->t.gcs) < 0)
		return -1;
	s3_creds_free(&s->creds);
	s->creds = fresh;
	return 0;
}

/* One try: fills status, or status -1 and why. */
static void attempt(struct s3_bucket *s, struct call *c, const char *hash)
{
	struct curl_slist *hdr = NULL;
	struct sb line = SB_INIT;
	char *url = s3_target_url(&s->t, c->key, c->query);
	CURLcode rc;
	size_t i;

	sb_reset(&c->resp);
	sb_reset(&c->code);
	sb_reset(&c->msg);
	c->etag[0] = c->region[0] = c->why[0] = '\0';
	c->length = 0;
	c->sent = 0;
	c->failed200 = 0;
	c->headers_ended = 0;
	c->rc = CURLE_OK;
	s->errbuf[0] = '\0';

	sb_addf(&line, "x-amz-content-sha256: %s", hash);
	hdr = curl_slist_append(hdr, line.buf);
	if (s->creds.token) {
		sb_reset(&line);
		sb_addf(&line, "x-amz-security-token: %s", s->creds.token);
		hdr = curl_slist_append(hdr, line.buf);
	}
	if (c->content_type) {
		sb_reset(&line);
		sb_addf(&line, "Content-Type: %s", c->content_type);
		hdr = curl_slist_append(hdr, line.buf);
	}
	for (i = 0; i < sizeof(c->extra) / sizeof(c->extra[0]) && c->extra[i]; i++)
		hdr = curl_slist_append(hdr, c->extra[i]);

	curl_easy_reset(s->h);
	curl_easy_setopt(s->h, CURLOPT_URL, url);
	curl_easy_setopt(s->h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(s->h, CURLOPT_ERRORBUFFER, s->errbuf);
	curl_easy_setopt(s->h, CURLOPT_CONNECTTIMEOUT, s->timeout < 10 ? s->timeout : 10L);
	/*
	 * A stalled transfer (nothing sent or received for that long, waiting
	 * for the answer included) counts as a timeout, and is retried.
	 */
	curl_easy_setopt(s->h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(s->h, CURLOPT_LOW_SPEED_TIME, s->timeout);
	curl_easy_setopt(s->h, CURLOPT_USERNAME, s->creds.id);
	curl_easy_setopt(s->h, CURLOPT_PASSWORD, s->creds.secret);
	curl_easy_setopt(s->h, CURLOPT_AWS_SIGV4, s->sigv4);
	curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(s->h, CURLOPT_WRITEDATA, c);
	curl_easy_setopt(s->h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(s->h, CURLOPT_HEADERDATA, c);
#if LIBCURL_VERSION_NUM >= 0x075000
	/*
	 * curl sends a request again by itself when a reused connection
	 * closes without a byte of answer, though the server may have done
	 * the work: counted, for the calls that must know (sent_twice).
	 */
	curl_easy_setopt(s->h, CURLOPT_PREREQFUNCTION, on_prereq);
	curl_easy_setopt(s->h, CURLOPT_PREREQDATA, c);
#endif
	if (strcmp(c->method, "HEAD") == 0) {
		curl_easy_setopt(s->h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(c->method, "PUT") == 0) {
		curl_easy_setopt(s->h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(s->h, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(s->h, CURLOPT_READDATA, c);
		curl_easy_setopt(s->h, CURLOPT_SEEKFUNCTION, on_seek);
		curl_easy_setopt(s->h, CURLOPT_SEEKDATA, c);
		curl_easy_setopt(s->h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->body_len);
	} else if (strcmp(c->method, "POST") == 0) {
		curl_easy_setopt(s->h, CURLOPT_POST, 1L);
		curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, c->body ? (const char *)c->body : "");
		curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
	} else if (strcmp(c->method, "GET") != 0) {
		curl_easy_setopt(s->h, CURLOPT_CUSTOMREQUEST, c->method);
	}

	rc = curl_easy_perform(s->h);
	c->attempts++;
#if LIBCURL_VERSION_NUM < 0x075000
	c->sends = c->attempts;
#endif
	if (rc == CURLE_OK && !c->headers_ended) {
		/*
		 * curl 7.88 takes a connection closed inside the headers for the
		 * whole answer: an ETag or a length may be missing.  A cut answer.
		 */
		rc = CURLE_PARTIAL_FILE;
		snprintf(s->errbuf, sizeof(s->errbuf), "the connection closed inside the answer's headers");
	}
	if (rc != CURLE_OK) {
		c->status = -1;
		c->rc = rc;
		snprintf(c->why, sizeof(c->why), "%s", s->errbuf[0] ? s->errbuf : curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &c->status);
		if (c->status >= 300 || (c->error_in_200 && c->status < 300)) {
			int is_error = s3_xml_error(c->resp.buf, c->resp.len, &c->code, &c->msg);

			if (c->status < 300 && is_error)
				c->failed200 = 1;
		}
	}
	/* curl keeps pointers to these until the next reset */
	curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(s->h, CURLOPT_URL, "");
	curl_slist_free_all(hdr);
	if (line.buf)
		memset(line.buf, 0, line.len);
	sb_free(&line);
	free(url);
}

/* Run c, retrying what may pass.  Returns c->status (or -1). */
static long perform(struct s3_bucket *s, struct call *c)
{
	char hash[65];
	int n;

	if (c->body_len)
		s3_sha256_hex(c->body, c->body_len, hash);
	else
		memcpy(hash, EMPTY_SHA256, sizeof(hash));
	c->attempts = 0;
	for (n = 0;; n++) {
		if (refresh_creds(s) < 0) {
			c->status = -1;
			snprintf(c->why, sizeof(c->why), "no fresh credentials");
			return -1;
		}
		attempt(s, c, hash);
		if (ok(c) || !retryable(c) || n >= s->retries)
			break;
		backoff(n);
	}
	return c->status;
}

/* Did c go out more than once, so that an answer was lost after the work was done? */
static int sent_twice(const struct call *c)
{
	return c->sends > 1 || c->attempts > 1;
}

static void call_init(struct call *c, const char *verb, const char *api,
		      const char *method, const char *key)
{
	memset(c, 0, sizeof(*c));
	c->verb = verb;
	c->api = api;
	c->method = method;
	c->key = key;
}

/* A 404 that means "no such object", not "no such bucket". */
static int no_key(const struct call *c)
{
	return c->status == 404 && !code_is(c, "NoSuchBucket") && !code_is(c, "NoSuchUpload");
}

static int s3_get(struct bucket *b, const char *key, struct sb *out)
{
	struct s3_bucket *s = sb3(b);
	struct call c;
	int r = -1;

	call_init(&c, "read", "GetObject", "GET", key);
	perform(s, &c);
	if (ok(&c)) {
		sb_add(out, c.resp.buf ? c.resp.buf : "", c.resp.len);
		r = 0;
	} else if (no_key(&c)) {
		r = 1;
	} else {
		report(s, &c, NULL);
	}
	call_free(&c);
	return r;
}

static int put_object(struct s3_bucket *s, const char *verb, const char *key,
		      const void *data, size_t len, const char *cond, long *status)
{
	struct call c;
	int r = -1;

	call_init(&c, verb, "PutObject", "PUT", key);
	c.body = data;
	c.body_len = len;
	c.extra[0] = cond;
	perform(s, &c);
	if (status)
		*status = c.status;
	if (ok(&c))
		r = 0;
	else if (cond && (c.status == 412 || c.status == 409 || c.status == 501 ||
			  code_is(&c, "NotImplemented")))
		r = 1;	/* the caller decides */
	else
		report(s, &c, NULL);
	call_free(&c);
	return r;
}

static int s3_put(struct bucket *b, const char *key, const void *data, size_t len)
{
	return put_object(sb3(b), "write", key, data, len, NULL, NULL);
}

/*
 * HEAD: 1 exists (size in *len, ETag into etag when not NULL), 0 missing,
 * -1 error (reported).
 */
static int head_etag(struct s3_bucket *s, const char *verb, const char *key, uint64_t *len,
		     char *etag, size_t size)
{
	struct call c;
	int r = -1;

	call_init(&c, verb, "HeadObject", "HEAD", key);
	perform(s, &c);
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
			struct call g;

			call_init(&g, verb, "HeadObject", "GET", key);
			g.extra[0] = "Range: bytes=0-0";
			perform(s, &g);
			if (g.status == c.status && g.code.len) {
				sb_add(&c.code, g.code.buf, g.code.len);
				sb_add(&c.msg, g.msg.buf ? g.msg.buf : "", g.msg.len);
			}
			call_free(&g);
		}
		report(s, &c, NULL);
	}
	call_free(&c);
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
	r = put_object(s, "create", key, data, len, condition(s), &status);
	if (r == 1 && (status == 501 || status == 400)) {
		/* NotImplemented: this store cannot; rely on the reads alone */
		s->no_conditional = 1;
		r = put_object(s, "create", key, data, len, NULL, NULL);
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
	r = put_object(s, "probe", key, body, sizeof(body) - 1, condition(s), &status);
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
		return put_object(s, "write", key, data, len, NULL, NULL);
	cond = version[0] ? xasprintf("If-Match: %s", version) : xstrdup("If-None-Match: *");
	r = put_object(s, "write", key, data, len, cond, &status);
	free(cond);
	if (r == 1 && (status == 501 || status == 400)) {
		s->no_conditional = 1;
		r = put_object(s, "write", key, data, len, NULL, NULL);
	}
	return r;
}

static int delete_object(struct s3_bucket *s, const char *verb, const char *key)
{
	struct call c;
	int r = -1;

	call_init(&c, verb, "DeleteObject", "DELETE", key);
	perform(s, &c);
	if (ok(&c) || no_key(&c))
		r = 0;
	else
		report(s, &c, NULL);
	call_free(&c);
	return r;
}

static int s3_delete(struct bucket *b, const char *key)
{
	return delete_object(sb3(b), "delete", key);
}

/* "x-amz-copy-source: /bucket/key", the key encoded but for '/' and '='. */
static char *copy_source(const struct s3_bucket *s, const char *key)
{
	struct sb enc = SB_INIT, out = SB_INIT;
	char *full = xasprintf("%s%s", s->t.prefix, key);
	const char *p;

	s3_uri_encode(&enc, full, strlen(full), 1);
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

static void abort_upload(struct s3_bucket *s, const char *key, const char *upload_id);
static void abort_strays(struct s3_bucket *s, const char *key, const char *keep);

static char *create_upload(struct s3_bucket *s, const char *verb, const char *key)
{
	struct call c;
	struct sb id = SB_INIT;
	size_t pos = 0;
	char *ret = NULL;
	struct s3_param q = { "uploads", NULL };
	struct sb query = SB_INIT;

	s3_query(&query, &q, 1);
	call_init(&c, verb, "CreateMultipartUpload", "POST", key);
	c.query = query.buf;
	c.content_type = "application/octet-stream";
	perform(s, &c);
	if (ok(&c) && s3_xml_next(c.resp.buf, c.resp.len, "UploadId", &pos, &id) && id.len) {
		ret = sb_detach(&id);
		/* an earlier attempt may have started an upload whose answer was lost */
		if (sent_twice(&c))
			abort_strays(s, key, ret);
	} else {
		if (ok(&c))
			snprintf(c.why, sizeof(c.why), "no UploadId in the answer"), c.status = -1;
		report(s, &c, NULL);
	}
	sb_free(&id);
	sb_free(&query);
	call_free(&c);
	return ret;
}

static void abort_upload(struct s3_bucket *s, const char *key, const char *upload_id)
{
	struct s3_param q = { "uploadId", upload_id };
	struct sb query = SB_INIT;
	struct call c;

	s3_query(&query, &q, 1);
	call_init(&c, "abort the upload of", "AbortMultipartUpload", "DELETE", key);
	c.query = query.buf;
	perform(s, &c);
	if (c.status == 405 || c.status == 501) {
		/* s3rver, some gateways: nothing to do but say so, once */
		static int said;
		char *subj = subject(s, key);

		if (!said++)
			err_warn("the store cannot abort multipart uploads (%s: HTTP %ld): the parts "
				 "of '%s' stay until a lifecycle rule removes them", c.api, c.status, subj);
		free(subj);
	} else if (!ok(&c) && !(c.status == 404 && code_is(&c, "NoSuchUpload"))) {
		report(s, &c, NULL);
	}
	sb_free(&query);
	call_free(&c);
}

/*
 * Abort the multipart uploads of key but keep (ListMultipartUploads): a
 * CreateMultipartUpload whose answer was lost started one that nobody
 * would complete.  The key is this run's alone (a staged file, or a final
 * name carrying the run id), so every other upload of it is such a one.
 */
static void abort_strays(struct s3_bucket *s, const char *key, const char *keep)
{
	char *full = xasprintf("%s%s", s->t.prefix, key);
	struct s3_param q[2] = { { "prefix", full }, { "uploads", NULL } };
	struct sb query = SB_INIT, k = SB_INIT, id = SB_INIT;
	struct call c;
	size_t pos = 0;

	s3_query(&query, q, 2);
	call_init(&c, "look for uploads of", "ListMultipartUploads", "GET", NULL);
	c.query = query.buf;
	perform(s, &c);
	if (!ok(&c)) {
		char *subj = subject(s, key);

		if (c.status < 0)
			err_warn("cannot look for uploads of '%s' that a retried %s may have left: %s: %s",
				 subj, "CreateMultipartUpload", c.api, c.why);
		else
			err_warn("cannot look for uploads of '%s' that a retried %s may have left: %s: HTTP %ld%s%s",
				 subj, "CreateMultipartUpload", c.api, c.status, c.code.len ? " " : "",
				 c.code.len ? c.code.buf : "");
		free(subj);
		goto out;
	}
	while (s3_xml_next(c.resp.buf, c.resp.len, "Key", &pos, &k) &&
	       s3_xml_next(c.resp.buf, c.resp.len, "UploadId", &pos, &id)) {
		if (strcmp(k.buf, full) == 0 && strcmp(id.buf, keep) != 0)
			abort_upload(s, key, id.buf);
	}
out:
	sb_free(&query);
	sb_free(&k);
	sb_free(&id);
	call_free(&c);
	free(full);
}

/*
 * After a CompleteMultipartUpload that failed once sent again (or with
 * NoSuchUpload): did an earlier send complete it, its answer lost?  The
 * store then says NoSuchUpload (S3) or fails otherwise (s3rver: 500), and
 * the object is there: size bytes, and, when its ETag has the multipart
 * form "...-N", N parts.  1 yes, 0 no.
 */
static int completed_before(struct s3_bucket *s, const char *key, uint64_t size, int nparts)
{
	struct call c;
	int r = 0;

	call_init(&c, "look at", "HeadObject", "HEAD", key);
	perform(s, &c);
	if (ok(&c) && c.length == size) {
		const char *dash = strrchr(c.etag, '-');
		char *end;
		long n;

		r = 1;
		if (dash) {
			n = strtol(dash + 1, &end, 10);
			if (end != dash + 1 && (*end == '"' || *end == '\0') && n != nparts)
				r = 0;
		}
	}
	call_free(&c);
	return r;
}

/* Complete the upload of nparts parts, size bytes in all. */
static int complete_upload(struct s3_bucket *s, const char *verb, const char *key,
			   const char *upload_id, const struct sb *parts, uint64_t size, int nparts)
{
	struct s3_param q = { "uploadId", upload_id };
	struct sb query = SB_INIT, body = SB_INIT;
	struct call c;
	int r = -1;

	s3_query(&query, &q, 1);
	sb_adds(&body, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	sb_add(&body, parts->buf ? parts->buf : "", parts->len);
	sb_adds(&body, "</CompleteMultipartUpload>");
	call_init(&c, verb, "CompleteMultipartUpload", "POST", key);
	c.query = query.buf;
	c.body = body.buf;
	c.body_len = body.len;
	c.content_type = "application/xml";
	c.error_in_200 = 1;
	perform(s, &c);
	if (ok(&c) || ((sent_twice(&c) || code_is(&c, "NoSuchUpload")) &&
			completed_before(s, key, size, nparts)))
		r = 0;
	else
		report(s, &c, NULL);
	sb_free(&query);
	sb_free(&body);
	call_free(&c);
	return r;
}

static void add_part(struct sb *parts, int n, const char *etag)
{
	sb_addf(parts, "<Part><PartNumber>%d</PartNumber><ETag>", n);
	s3_xml_escape(parts, etag);
	sb_adds(parts, "</ETag></Part>");
}

/* Server-side copy of an object above the single-copy limit, in parts. */
static int copy_in_parts(struct s3_bucket *s, const char *from, const char *to, uint64_t size)
{
	char *src = copy_source(s, from);
	char *id = create_upload(s, "move", to);
	struct sb parts = SB_INIT, query = SB_INIT, etag = SB_INIT;
	uint64_t off;
	int n = 0, r = -1;

	if (id == NULL)
		goto out;
	for (off = 0; off < size; off += s->copy_part) {
		uint64_t end = off + s->copy_part < size ? off + s->copy_part : size;
		char range[80], num[16];
		struct s3_param q[2] = { { "partNumber", num }, { "uploadId", id } };
		struct call c;
		size_t pos = 0;

		snprintf(num, sizeof(num), "%d", ++n);
		snprintf(range, sizeof(range), "x-amz-copy-source-range: bytes=%llu-%llu",
			 (unsigned long long)off, (unsigned long long)end - 1);
		sb_reset(&query);
		s3_query(&query, q, 2);
		call_init(&c, "move", "UploadPartCopy", "PUT", to);
		c.query = query.buf;
		c.extra[0] = src;
		c.extra[1] = range;
		c.error_in_200 = 1;
		perform(s, &c);
		if (!ok(&c) || !s3_xml_next(c.resp.buf, c.resp.len, "ETag", &pos, &etag)) {
			if (ok(&c))
				snprintf(c.why, sizeof(c.why), "no ETag in the answer"), c.status = -1;
			report(s, &c, NULL);
			call_free(&c);
			abort_upload(s, to, id);
			goto out;
		}
		add_part(&parts, n, etag.buf);
		call_free(&c);
	}
	if (complete_upload(s, "move", to, id, &parts, size, n) < 0) {
		abort_upload(s, to, id);
		goto out;
	}
	r = 0;
out:
	free(src);
	free(id);
	sb_free(&parts);
	sb_free(&query);
	sb_free(&etag);
	return r;
}

static int s3_move(struct bucket *b, const char *from, const char *to)
{
	struct s3_bucket *s = sb3(b);
	struct call c;
	uint64_t size = 0;
	char *src;
	int r;

	r = head(s, "move", from, &size);
	if (r <= 0)
		return r < 0 ? -1 : 1;
	if (strcmp(from, to) == 0)
		return 0;
	if (size > s->copy_part) {
		if (copy_in_parts(s, from, to, size) < 0)
			return -1;
	} else {
		src = copy_source(s, from);
		call_init(&c, "move", "CopyObject", "PUT", to);
		c.extra[0] = src;
		c.error_in_200 = 1;
		perform(s, &c);
		free(src);
		if (c.status == 404 && code_is(&c, "NoSuchKey")) {
			call_free(&c);
			return 1;	/* moved away meanwhile */
		}
		if (!ok(&c)) {
			report(s, &c, from);
			call_free(&c);
			return -1;
		}
		call_free(&c);
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
		struct s3_param q[4] = {
			{ "encoding-type", "url" }, { "list-type", "2" }, { "prefix", full },
			{ "continuation-token", token.buf },
		};
		struct call c;
		char **keys = NULL;
		size_t n = 0, i;
		int truncated = 0;

		sb_reset(&query);
		s3_query(&query, q, token.len ? 4 : 3);
		call_init(&c, "list", "ListObjectsV2", "GET", NULL);
		c.query = query.buf;
		perform(s, &c);
		if (!ok(&c)) {
			report(s, &c, NULL);
			call_free(&c);
			goto out;
		}
		if (s3_xml_list(c.resp.buf, c.resp.len, &keys, &n, &truncated, &next) < 0) {
			snprintf(c.why, sizeof(c.why), "cannot read the answer (page %d)", pages + 1);
			c.status = -1;
			report(s, &c, NULL);
			call_free(&c);
			goto out;
		}
		call_free(&c);
		for (i = 0; i < n; i++) {
			/* "dir/" markers and keys no caller can name are passed over */
			if (strncmp(keys[i], full, strlen(full)) == 0 && bucket_key_ok(keys[i] + plen))
				bucket_keys_add(out, keys[i] + plen, strlen(keys[i] + plen));
		}
		s3_strv_free(keys);
		pages++;
		if (!truncated)
			break;
		if (next.len == 0 || (token.len && strcmp(next.buf, token.buf) == 0)) {
			char *subj = subject(s, prefix);

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

static struct bucket_writer *s3_writer_open(struct bucket *b, const char *key)
{
	struct s3_writer *w = xcalloc(1, sizeof(*w));

	w->s = sb3(b);
	w->key = xstrdup(key);
	w->part = w->s->part_size;
	return &w->base;
}

/* Upload the buffer as the next part, starting the upload first. */
static int flush_part(struct s3_writer *w)
{
	struct s3_bucket *s = w->s;
	struct s3_param q[2];
	struct sb query = SB_INIT;
	struct call c;
	char num[16];
	int r = -1;

	if (w->upload_id == NULL) {
		w->upload_id = create_upload(s, "write", w->key);
		if (w->upload_id == NULL)
			return -1;
	}
	if (w->nparts >= MAX_PARTS) {
		char *subj = subject(s, w->key);

		err_msg("cannot write '%s': more than %d parts", subj, MAX_PARTS);
		free(subj);
		return -1;
	}
	snprintf(num, sizeof(num), "%d", w->nparts + 1);
	q[0].name = "partNumber";
	q[0].value = num;
	q[1].name = "uploadId";
	q[1].value = w->upload_id;
	s3_query(&query, q, 2);
	call_init(&c, "write", "UploadPart", "PUT", w->key);
	c.query = query.buf;
	c.body = w->buf;
	c.body_len = w->len;
	perform(s, &c);
	if (ok(&c) && c.etag[0]) {
		add_part(&w->parts, ++w->nparts, c.etag);
		w->total += w->len;
		w->len = 0;
		/* keep within 10,000 parts however big the object grows */
		if (w->nparts % 1000 == 0 && w->part * 2 <= MAX_PART)
			w->part *= 2;
		r = 0;
	} else {
		if (ok(&c))
			snprintf(c.why, sizeof(c.why), "no ETag in the answer"), c.status = -1;
		report(s, &c, NULL);
	}
	sb_free(&query);
	call_free(&c);
	return r;
}

static void writer_fail(struct s3_writer *w)
{
	w->failed = 1;
	if (w->upload_id) {
		abort_upload(w->s, w->key, w->upload_id);
		free(w->upload_id);
		w->upload_id = NULL;
	}
}

static int s3_writer_write(struct bucket_writer *bw, const void *data, size_t len)
{
	struct s3_writer *w = (struct s3_writer *)bw;
	const char *p = data;

	if (w->failed)
		return -1;
	while (len > 0) {
		size_t room, n;

		if (w->len == w->part && flush_part(w) < 0) {
			writer_fail(w);
			return -1;
		}
		if (w->cap < w->part && w->len + len > w->cap) {
			size_t cap = w->cap ? w->cap : 65536;

			while (cap < w->len + len && cap < w->part)
				cap *= 2;
			if (cap > w->part)
				cap = w->part;
			w->buf = xrealloc(w->buf, cap);
			w->cap = cap;
		}
		room = w->cap - w->len;
		n = len < room ? len : room;
		memcpy(w->buf + w->len, p, n);
		w->len += n;
		p += n;
		len -= n;
	}
	return 0;
}

static void writer_free(struct s3_writer *w)
{
	free(w->upload_id);
	free(w->key);
	free(w->buf);
	sb_free(&w->parts);
	free(w);
}

static int s3_writer_close(struct bucket_writer *bw)
{
	struct s3_writer *w = (struct s3_writer *)bw;
	int r = -1;

	if (w->failed)
		goto out;
	if (w->upload_id == NULL) {
		r = put_object(w->s, "write", w->key, w->buf, w->len, NULL, NULL);
		goto out;
	}
	if (w->len > 0 && flush_part(w) < 0) {
		writer_fail(w);
		goto out;
	}
	if (complete_upload(w->s, "write", w->key, w->upload_id, &w->parts, w->total, w->nparts) < 0) {
		writer_fail(w);
		goto out;
	}
	r = 0;
out:
	writer_free(w);
	return r;
}

static void s3_writer_abort(struct bucket_writer *bw)
{
	struct s3_writer *w = (struct s3_writer *)bw;

	if (!w->failed)
		writer_fail(w);
	writer_free(w);
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
	const char *why = NULL, *v;
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
		err_msg("invalid bucket '%s': %s", url, why);
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
