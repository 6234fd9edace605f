/*
 * azure_call: one request to the Blob service and its answer.  libcurl
 * does the HTTP; the request is signed here (SharedKey: HMAC-SHA256 of
 * the string-to-sign, azure_auth.c) or carries the SAS in its query.
 * Failed requests are retried with exponential backoff and jitter when
 * the failure may pass (5xx, 408, 429, ServerBusy, OperationTimedOut,
 * timeouts, resets).
 */
#include "azure_impl.h"
#include "err.h"
#include "http.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

void az_call_param(struct http_call *c, const char *name, const char *value)
{
	if (c->nq < sizeof(c->q) / sizeof(c->q[0])) {
		c->q[c->nq].name = name;
		c->q[c->nq].value = value;
		c->nq++;
	}
}

char *az_subject(const struct az_bucket *z, const char *key)
{
	if (key && *key)
		return xasprintf("az://%s/%s%s", z->t.container, z->t.prefix, key);
	if (*z->t.prefix)
		return xasprintf("az://%s/%.*s", z->t.container, (int)strlen(z->t.prefix) - 1,
				 z->t.prefix);
	return xasprintf("az://%s", z->t.container);
}

/* The path as sent: base, container, the blob's name encoded (its '/' kept). */
static void add_path(struct sb *out, const struct az_bucket *z, const char *key)
{
	sb_adds(out, z->t.base);
	sb_addc(out, '/');
	sb_adds(out, z->t.container);
	if (key) {
		char *full = xasprintf("%s%s", z->t.prefix, key);

		sb_addc(out, '/');
		http_uri_encode(out, full, strlen(full), 1);
		free(full);
	}
}

char *az_url(const struct az_bucket *z, const char *key, const struct http_call *c, int with_sas)
{
	struct sb u = SB_INIT;
	char sep = '?';
	size_t i;

	sb_adds(&u, z->t.origin);
	add_path(&u, z, key);
	if (with_sas && z->cr.sas && *z->cr.sas) {
		sb_addf(&u, "?%s", z->cr.sas);
		sep = '&';
	}
	for (i = 0; c && i < c->nq; i++) {
		sb_addc(&u, sep);
		sep = '&';
		http_uri_encode(&u, c->q[i].name, strlen(c->q[i].name), 0);
		sb_addc(&u, '=');
		if (c->q[i].value)
			http_uri_encode(&u, c->q[i].value, strlen(c->q[i].value), 0);
	}
	return sb_detach(&u);
}

void az_report(const struct az_bucket *z, const struct http_call *c, const char *key)
{
	char *subj = az_subject(z, key ? key : c->key);
	char tries[48] = "", hint[512] = "";
	const char *code = c->code.len ? c->code.buf : http_reason(c->status);
	const char *msg = c->msg.len ? c->msg.buf : "";

	if (c->attempts > 1)
		snprintf(tries, sizeof(tries), " (gave up after %d attempts)", c->attempts);
	if (c->status < 0) {
		err_msg("cannot %s '%s': %s: %s%s", c->verb, subj, c->api, c->why, tries);
		free(subj);
		return;
	}
	if (http_code_is(c, "ContainerNotFound"))
		/* (a new Azurite has no container: the first run met this, issue #29) */
		snprintf(hint, sizeof(hint), " (container '%s' of account '%s' at %s: create it first, "
			 "as with 'az storage container create --name %s')",
			 z->t.container, z->cr.account, z->t.origin, z->t.container);
	else if (c->status == 403 && (http_code_is(c, "AuthenticationFailed") ||
				      http_code_is(c, "AuthorizationFailure")))
		snprintf(hint, sizeof(hint), " (credentials from %s)", z->cr.source);
	err_msg("cannot %s '%s': %s: HTTP %ld%s%s%s%s%s%s", c->verb, subj, c->api, c->status,
		*code ? " " : "", code, *msg ? ": " : "", msg, hint, tries);
	free(subj);
}

static void copy_value(char *dst, size_t size, const char *v, size_t vlen)
{
	if (vlen < size) {
		memcpy(dst, v, vlen);
		dst[vlen] = '\0';
	}
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct http_call *c = arg;
	size_t len = size * n, nlen, vlen;
	const char *v;

	if (!http_header(data, len, &c->headers_ended, &nlen, &v, &vlen))
		return len;
	if (nlen == 4 && strncasecmp(data, "ETag", 4) == 0) {
		copy_value(c->etag, sizeof(c->etag), v, vlen);
	} else if (nlen == 14 && strncasecmp(data, "Content-Length", 14) == 0) {
		char num[32] = "";

		copy_value(num, sizeof(num), v, vlen);
		c->length = strtoull(num, NULL, 10);
	} else if (nlen == 16 && strncasecmp(data, "x-ms-copy-status", 16) == 0) {
		copy_value(c->copy_status, sizeof(c->copy_status), v, vlen);
	} else if (nlen == 12 && strncasecmp(data, "x-ms-copy-id", 12) == 0) {
		copy_value(c->copy_id, sizeof(c->copy_id), v, vlen);
	} else if (nlen == 15 && strncasecmp(data, "x-ms-error-code", 15) == 0) {
		sb_reset(&c->code);
		sb_add(&c->code, v, vlen);
	}
	return len;
}

static int retryable(const struct http_call *c)
{
	if (c->status < 0)
		return http_retryable_curl(c->rc);
	if (c->status >= 500 && c->status != 501)
		return 1;
	return c->status == 408 || c->status == 429 || http_code_is(c, "ServerBusy") ||
	       http_code_is(c, "OperationTimedOut") || http_code_is(c, "InternalError");
}

/* RFC 1123 in GMT, in English whatever the locale. */
static void http_date(char *buf, size_t size)
{
	static const char *const wd[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *const mo[] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	snprintf(buf, size, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday], tm.tm_mday,
		 mo[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* One try: fills status, or status -1 and why. */
static void attempt(struct az_bucket *z, struct http_call *c)
{
	const char *hdr[16];
	char date[64], vers[64], clen[48];
	struct curl_slist *list = NULL;
	struct sb auth = SB_INIT, path = SB_INIT, sts = SB_INIT;
	char *url = az_url(z, c->key, c, 1);
	struct http_request r = {
		.method = c->method, .timeout = z->timeout, .errbuf = z->errbuf,
		.up = { c->body, c->body_len, 0 }, .resp = &c->resp,
		.on_header = on_header, .header_arg = c, .ended = &c->headers_ended,
		.sends = &c->sends,
	};
	int put = strcmp(c->method, "PUT") == 0;
	size_t n = 0, i;

	sb_reset(&c->resp);
	sb_reset(&c->code);
	sb_reset(&c->msg);
	c->etag[0] = c->copy_status[0] = c->copy_id[0] = c->why[0] = '\0';
	c->length = 0;
	c->headers_ended = 0;
	c->rc = CURLE_OK;
	z->errbuf[0] = '\0';

	memcpy(date, "x-ms-date: ", 11);
	http_date(date + 11, sizeof(date) - 11);
	snprintf(vers, sizeof(vers), "x-ms-version: %s", AZ_VERSION);
	hdr[n++] = date;
	hdr[n++] = vers;
	if (put) {
		snprintf(clen, sizeof(clen), "Content-Length: %zu", c->body_len);
		hdr[n++] = clen;
	}
	for (i = 0; i < sizeof(c->hdr) / sizeof(c->hdr[0]) && c->hdr[i]; i++)
		hdr[n++] = c->hdr[i];
	if (z->cr.key) {
		add_path(&path, z, c->key);
		az_string_to_sign(&sts, c->method, hdr, n, z->cr.account, path.buf, c->q, c->nq);
		sb_addf(&auth, "Authorization: SharedKey %s:", z->cr.account);
		az_sign(&auth, z->cr.key, z->cr.key_len, sts.buf, sts.len);
	}
	for (i = 0; i < n; i++)
		if (hdr[i] != clen)	/* curl sends its own, from the upload size */
			list = curl_slist_append(list, hdr[i]);
	if (auth.len)
		list = curl_slist_append(list, auth.buf);
	list = curl_slist_append(list, "Expect:");
	if (put)
		list = curl_slist_append(list, "Content-Type:");

	r.url = url;
	r.headers = list;
	http_setup(z->h, &r);

	http_run(z->h, &r, &c->status, &c->rc, c->why, sizeof(c->why));
	c->attempts++;
#if LIBCURL_VERSION_NUM < 0x075000
	c->sends = c->attempts;
#endif
	if (c->status >= 300 && c->resp.len) {
		struct sb code = SB_INIT;

		az_xml_error(c->resp.buf, c->resp.len, &code, &c->msg);
		if (code.len) {
			sb_reset(&c->code);
			sb_add(&c->code, code.buf, code.len);
		}
		sb_free(&code);
	}
	curl_slist_free_all(list);
	if (url)
		memset(url, 0, strlen(url));	/* it may hold the SAS */
	free(url);
	sb_free(&auth);
	sb_free(&path);
	sb_free(&sts);
}

long az_perform(struct az_bucket *z, struct http_call *c)
{
	int n;

	c->attempts = 0;
	for (n = 0;; n++) {
		attempt(z, c);
		if (az_ok(c) || !retryable(c) || n >= z->retries)
			break;
		http_backoff(n);
	}
	return c->status;
}
