/*
 * http: the transport rules both stores share (http.h): one attempt's
 * transfer, the curl callbacks, the curl failures retried, backoff with
 * jitter, the reason phrases.
 */
#include "http.h"
#include "sb.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

size_t http_on_read(char *dst, size_t size, size_t n, void *upload)
{
	struct http_upload *u = upload;
	size_t left = u->len - u->sent, want = size * n;

	if (want > left)
		want = left;
	if (want)
		memcpy(dst, (const char *)u->body + u->sent, want);
	u->sent += want;
	return want;
}

int http_on_seek(void *upload, curl_off_t offset, int origin)
{
	struct http_upload *u = upload;

	if (origin != SEEK_SET || offset < 0 || (uint64_t)offset > u->len)
		return CURL_SEEKFUNC_FAIL;
	u->sent = (size_t)offset;
	return CURL_SEEKFUNC_OK;
}

size_t http_on_body(char *data, size_t size, size_t n, void *resp)
{
	sb_add(resp, data, size * n);
	return size * n;
}

#if LIBCURL_VERSION_NUM >= 0x075000
int http_on_prereq(void *sends, char *remote_ip, char *local_ip, int remote_port,
		   int local_port)
{
	(void)remote_ip;
	(void)local_ip;
	(void)remote_port;
	(void)local_port;
	(*(int *)sends)++;
	return CURL_PREREQFUNC_OK;
}
#endif

int http_header(const char *data, size_t len, int *ended, size_t *nlen, const char **v,
		size_t *vlen)
{
	const char *colon = memchr(data, ':', len);

	if (len >= 5 && memcmp(data, "HTTP/", 5) == 0)
		*ended = 0;
	else if ((len == 2 && data[0] == '\r' && data[1] == '\n') || (len == 1 && data[0] == '\n'))
		*ended = 1;
	if (colon == NULL)
		return 0;
	*nlen = (size_t)(colon - data);
	*v = colon + 1;
	*vlen = len - *nlen - 1;
	while (*vlen > 0 && (**v == ' ' || **v == '\t')) {
		(*v)++;
		(*vlen)--;
	}
	while (*vlen > 0 && ((*v)[*vlen - 1] == '\r' || (*v)[*vlen - 1] == '\n' ||
			     (*v)[*vlen - 1] == ' '))
		(*vlen)--;
	return 1;
}

void http_setup(CURL *h, struct http_request *r)
{
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, r->url);
	curl_easy_setopt(h, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, r->errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, r->timeout < 10 ? r->timeout : 10L);
	/*
	 * A stalled transfer (nothing sent or received for that long, waiting
	 * for the answer included) counts as a timeout, and is retried.
	 */
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, r->timeout);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, r->resp);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, r->on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, r->header_arg);
#if LIBCURL_VERSION_NUM >= 0x075000
	/*
	 * curl sends a request again by itself when a reused connection
	 * closes without a byte of answer, though the server may have done
	 * the work: counted, for the calls that must know (sent_twice).
	 */
	curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, http_on_prereq);
	curl_easy_setopt(h, CURLOPT_PREREQDATA, r->sends);
#endif
	if (strcmp(r->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(r->method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_READFUNCTION, http_on_read);
		curl_easy_setopt(h, CURLOPT_READDATA, &r->up);
		curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, http_on_seek);
		curl_easy_setopt(h, CURLOPT_SEEKDATA, &r->up);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)r->up.len);
	} else if (strcmp(r->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_POST, 1L);
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, r->up.body ? (const char *)r->up.body : "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->up.len);
	} else if (strcmp(r->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, r->method);
	}
}

void http_run(CURL *h, const struct http_request *r, long *status, CURLcode *rc, char *why,
	      size_t size)
{
	*rc = curl_easy_perform(h);
	if (*rc == CURLE_OK && !*r->ended) {
		/*
		 * curl 7.88 takes a connection closed inside the headers for the
		 * whole answer: an ETag or a length may be missing.  A cut answer.
		 */
		*rc = CURLE_PARTIAL_FILE;
		snprintf(r->errbuf, CURL_ERROR_SIZE, "the connection closed inside the answer's headers");
	}
	if (*rc != CURLE_OK) {
		*status = -1;
		snprintf(why, size, "%s", r->errbuf[0] ? r->errbuf : curl_easy_strerror(*rc));
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, status);
	}
	/* curl keeps pointers to these until the next reset */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_URL, "");
}

int http_retryable_curl(CURLcode rc)
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

void http_backoff(int attempt)
{
	long cap = 200L << (attempt < 7 ? attempt : 7);	/* 200 ms, 400 ms, ... 20 s */

	if (cap > 20000)
		cap = 20000;
	util_sleep_ms(cap / 2 + (long)(rnd64() % (uint64_t)(cap / 2 + 1)));
}

const char *http_reason(long status)
{
	switch (status) {
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 409: return "Conflict";
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

void http_call_init(struct http_call *c, const char *verb, const char *api, const char *method,
		    const char *key)
{
	memset(c, 0, sizeof(*c));
	c->verb = verb;
	c->api = api;
	c->method = method;
	c->key = key;
}

void http_call_free(struct http_call *c)
{
	sb_free(&c->resp);
	sb_free(&c->code);
	sb_free(&c->msg);
}
