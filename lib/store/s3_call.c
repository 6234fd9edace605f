/*
 * s3_call: one request to the store and its answer.  libcurl does the HTTP
 * and the SigV4 signing (CURLOPT_AWS_SIGV4); the request is built the way
 * curl 7.88 signs it: keys percent-encoded, queries sorted and encoded,
 * and x-amz-content-sha256 set by hand (curl signs its value as the
 * payload hash).  Failed requests are retried with exponential backoff and
 * jitter when the failure may pass (5xx, 429, SlowDown, timeouts, resets).
 */
#include "err.h"
#include "http.h"
#include "s3_impl.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

char *s3_subject(const struct s3_bucket *s, const char *key)
{
	if (key && *key)
		return xasprintf("%s://%s/%s%s", s->t.scheme, s->t.bucket, s->t.prefix, key);
	if (*s->t.prefix)
		return xasprintf("%s://%s/%.*s", s->t.scheme, s->t.bucket,
				 (int)strlen(s->t.prefix) - 1, s->t.prefix);
	return xasprintf("%s://%s", s->t.scheme, s->t.bucket);
}

/* The redirects and 411 are S3's own; the rest is every store's. */
static const char *reason_phrase(long status)
{
	switch (status) {
	case 301: return "Moved Permanently";
	case 307: return "Temporary Redirect";
	case 411: return "Length Required";
	default: return http_reason(status);
	}
}

void s3_report(const struct s3_bucket *s, const struct http_call *c, const char *key)
{
	char *subj = s3_subject(s, key ? key : c->key);
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

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct http_call *c = arg;
	size_t len = size * n, nlen, vlen;
	const char *v;

	if (!http_header(data, len, &c->headers_ended, &nlen, &v, &vlen))
		return len;
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

static int retryable(const struct http_call *c)
{
	if (c->status < 0)
		return http_retryable_curl(c->rc);
	if (c->status >= 500 && c->status != 501)
		return 1;
	if (c->status == 429 || http_code_is(c, "SlowDown") || http_code_is(c, "RequestTimeout") ||
	    http_code_is(c, "InternalError") || http_code_is(c, "ServiceUnavailable") ||
	    http_code_is(c, "RequestTimeTooSkewed"))
		return 1;
	return 0;
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
static void attempt(struct s3_bucket *s, struct http_call *c, const char *hash)
{
	struct curl_slist *hdr = NULL;
	struct sb line = SB_INIT;
	char *url = s3_target_url(&s->t, c->key, c->query);
	struct http_request r = {
		.method = c->method, .timeout = s->timeout, .errbuf = s->errbuf,
		.up = { c->body, c->body_len, 0 }, .resp = &c->resp,
		.on_header = on_header, .header_arg = c, .ended = &c->headers_ended,
		.sends = &c->sends,
	};
	size_t i;

	sb_reset(&c->resp);
	sb_reset(&c->code);
	sb_reset(&c->msg);
	c->etag[0] = c->region[0] = c->why[0] = '\0';
	c->length = 0;
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
	for (i = 0; i < sizeof(c->hdr) / sizeof(c->hdr[0]) && c->hdr[i]; i++)
		hdr = curl_slist_append(hdr, c->hdr[i]);

	r.url = url;
	r.headers = hdr;
	http_setup(s->h, &r);
	curl_easy_setopt(s->h, CURLOPT_USERNAME, s->creds.id);
	curl_easy_setopt(s->h, CURLOPT_PASSWORD, s->creds.secret);
	curl_easy_setopt(s->h, CURLOPT_AWS_SIGV4, s->sigv4);

	http_run(s->h, &r, &c->status, &c->rc, c->why, sizeof(c->why));
	c->attempts++;
#if LIBCURL_VERSION_NUM < 0x075000
	c->sends = c->attempts;
#endif
	if (c->status >= 300 || (c->error_in_200 && c->status >= 0 && c->status < 300)) {
		int is_error = s3_xml_error(c->resp.buf, c->resp.len, &c->code, &c->msg);

		if (c->status < 300 && is_error)
			c->failed200 = 1;
	}
	curl_slist_free_all(hdr);
	if (line.buf)
		memset(line.buf, 0, line.len);
	sb_free(&line);
	free(url);
}

long s3_perform(struct s3_bucket *s, struct http_call *c)
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
		http_backoff(n);
	}
	return c->status;
}
