/*
 * http: the transport rules the stores share (s3_call.c, azure_call.c).
 * One request and its answer (struct http_call), which curl failures may
 * pass, how long to wait before the next try, the reason phrase of a
 * status, and the curl callbacks that are the same for every store: the
 * request's body read and rewound, the answer's body kept, the sends
 * counted, a header line split.  What differs (headers, signing, a
 * store's error codes) stays with the store.
 */
#ifndef PIPE_HTTP_H
#define PIPE_HTTP_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <curl/curl.h>

#include "http_text.h"
#include "sb.h"

/* A request's body as curl reads it; sent starts at 0 on each attempt. */
struct http_upload {
	const void *body;
	size_t len;
	size_t sent;
};

/* CURLOPT_READFUNCTION: the next bytes of the struct http_upload *upload. */
size_t http_on_read(char *dst, size_t size, size_t n, void *upload);
/*
 * CURLOPT_SEEKFUNCTION: curl rewinds the struct http_upload *upload to
 * send it again (a redirect, a resend).  Only SEEK_SET inside the body.
 */
int http_on_seek(void *upload, curl_off_t offset, int origin);
/* CURLOPT_WRITEFUNCTION: the answer's bytes appended to the struct sb *resp. */
size_t http_on_body(char *data, size_t size, size_t n, void *resp);
#if LIBCURL_VERSION_NUM >= 0x075000
/*
 * CURLOPT_PREREQFUNCTION: called each time the request goes out, curl's
 * own resends included; counts them in the int *sends.
 */
int http_on_prereq(void *sends, char *remote_ip, char *local_ip, int remote_port,
		   int local_port);
#endif
/*
 * One header line of an answer, data[0..len) as CURLOPT_HEADERFUNCTION
 * has it.  A status line clears *ended (an answer begins, after a 100
 * too); the blank line after the headers sets it.  For a "Name: value"
 * line, the name is data[0..*nlen) and the value, without the blanks
 * around it, (*v)[0..*vlen); returns 1.  Any other line: 0.
 */
int http_header(const char *data, size_t len, int *ended, size_t *nlen, const char **v,
		size_t *vlen);

/*
 * One attempt's transfer as both stores set it up.  What it points to
 * must outlive http_run(); up.sent starts at 0.
 */
struct http_request {
	const char *method;	/* "GET", "HEAD", "PUT" and "POST" (body in up), or sent as is */
	const char *url;	/* sent as is (CURLOPT_PATH_AS_IS) */
	struct curl_slist *headers;
	long timeout;		/* seconds without a byte moved: the attempt failed */
	char *errbuf;		/* CURL_ERROR_SIZE bytes */
	struct http_upload up;
	struct sb *resp;	/* the answer's body, appended */
	curl_write_callback on_header;	/* the store's, with header_arg; it keeps *ended */
	void *header_arg;
	const int *ended;	/* the blank line after the answer's headers came (http_header) */
	int *sends;		/* times the request went out (http_on_prereq) */
};

/*
 * h reset and set up for r: the timeouts, the callbacks, the method and
 * its body.  The store adds its own options (signing) after.
 */
void http_setup(CURL *h, struct http_request *r);
/*
 * Perform the transfer set up on h.  An answer whose headers were cut
 * (*r->ended still 0) is CURLE_PARTIAL_FILE.  The status into *status,
 * or -1 there, the code into *rc and curl's error (r->errbuf, else
 * curl's words) into why[0..size).  Then h forgets r's url and headers.
 */
void http_run(CURL *h, const struct http_request *r, long *status, CURLcode *rc, char *why,
	      size_t size);

/* A curl failure that may pass when tried again (resets, timeouts, DNS). */
int http_retryable_curl(CURLcode rc);
/*
 * Sleep before try attempt + 2 (attempt counts from 0): a random time in
 * [cap/2, cap], cap doubling from 200 ms up to 20 s.
 */
void http_backoff(int attempt);
/* The reason phrase of a status a store answers ("Not Found"), or "". */
const char *http_reason(long status);

/*
 * One request of a store and its answer, the same for S3 and Azure (each
 * store's *_call.c runs it); the fields marked S3 or Azure are that
 * store's alone.
 */
struct http_call {
	const char *verb;	/* for messages: "read", "write", ... */
	const char *api;	/* "GetObject", "GetBlob", ... */
	const char *method;
	const char *key;	/* below the prefix; NULL: the bucket or container itself */
	const void *body;
	size_t body_len;
	const char *hdr[6];	/* more headers, "Name: value", NULL-terminated */
	const char *query;	/* S3: canonical, or NULL */
	const char *content_type;	/* S3 */
	int error_in_200;	/* S3: CopyObject and friends may fail with 200 */
	struct http_param q[5];	/* Azure: query parameters (values NULL: absent) */
	size_t nq;

	long status;		/* -1: no answer (why) */
	struct sb resp, code, msg;
	char etag[256];
	uint64_t length;
	char why[CURL_ERROR_SIZE + 64];
	CURLcode rc;
	int attempts;
	int headers_ended;	/* the blank line after the last answer's headers came */
	int sends;		/* times the request went out, curl's own resends included */
	int failed200;		/* S3: an error document in a 200 (error_in_200) */
	char region[64];	/* S3: x-amz-bucket-region */
	char copy_status[32];	/* Azure: x-ms-copy-status */
	char copy_id[128];	/* Azure: x-ms-copy-id */
};

/* c zeroed, for a request of api ("GetObject") by method on key (NULL: the bucket). */
void http_call_init(struct http_call *c, const char *verb, const char *api, const char *method,
		    const char *key);
void http_call_free(struct http_call *c);

/* The store's error code (S3's <Code>, Azure's x-ms-error-code) is code. */
static inline int http_code_is(const struct http_call *c, const char *code)
{
	return c->code.len && strcmp(c->code.buf, code) == 0;
}

/* Did c go out more than once, so that an answer was lost after the work was done? */
static inline int http_sent_twice(const struct http_call *c)
{
	return c->sends > 1 || c->attempts > 1;
}

#endif
