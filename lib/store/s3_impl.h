/*
 * s3_impl: what the files of the S3 store share; only they include this
 * header.  The store is cut along its seams:
 *
 *	s3.c		opening a bucket, the object operations, bucket_ops
 *	s3_call.c	one request: built, signed by curl, sent, retried, reported
			(the transport rules it shares with the Azure store,
			and the request and answer, struct http_call: http.h)
 *	s3_multipart.c	multipart uploads: the streaming writer, copies in parts
 *	s3_text.c	SigV4 queries, S3's XML answers, urls (s3.h; the
 *			encodings and XML it shares with the Azure store:
 *			http_text.h)
 *	s3_creds.c	settings and the credential chain (s3.h)
 */
#ifndef PIPE_S3_IMPL_H
#define PIPE_S3_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <curl/curl.h>

#include "bucket.h"
#include "bucket_impl.h"
#include "http.h"
#include "s3.h"
#include "sb.h"

enum {
	MIN_PART = 5 << 20,	/* S3's smallest part but the last */
	DEFAULT_PART = 8 << 20,
	MAX_PARTS = 10000,
	DEFAULT_RETRIES = 5
};
#define MAX_PART ((uint64_t)5 << 30)

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


static inline struct s3_bucket *sb3(struct bucket *b)
{
	return (struct s3_bucket *)b;
}

/* A 2xx answer that is not an error document in disguise. */
static inline int ok(const struct http_call *c)
{
	return c->status >= 200 && c->status < 300 && !c->failed200;
}

/* A 404 that means "no such object", not "no such bucket". */
static inline int no_key(const struct http_call *c)
{
	return c->status == 404 && !http_code_is(c, "NoSuchBucket") &&
	       !http_code_is(c, "NoSuchUpload");
}

/* ---- s3_call.c ---- */

/*
 * Run c, retrying what may pass (5xx, 429, SlowDown, timeouts, resets),
 * with exponential backoff and jitter, refreshing credentials that are
 * about to expire.  Returns c->status (or -1: no answer, c->why says why).
 */
long s3_perform(struct s3_bucket *s, struct http_call *c);
/* One line: what failed, on which object (key, or NULL: c's), and the store's words. */
void s3_report(const struct s3_bucket *s, const struct http_call *c, const char *key);
/* "s3://bucket/prefix/key" for messages, newly allocated. */
char *s3_subject(const struct s3_bucket *s, const char *key);

/* ---- s3.c ---- */

/*
 * PutObject of data[0..len) with the header cond (NULL: none); the
 * status into *status when not NULL.  0; 1 when there was a cond and the
 * store refused it or does not know it (412, 409, 501, NotImplemented:
 * the caller decides, nothing reported); -1 (reported).
 */
int s3_put_object(struct s3_bucket *s, const char *verb, const char *key,
		  const void *data, size_t len, const char *cond, long *status);
/* "x-amz-copy-source: /bucket/key", the key encoded but for '/' and '='. */
char *s3_copy_source(const struct s3_bucket *s, const char *key);

/* ---- s3_multipart.c ---- */

/* Server-side copy of an object above the single-copy limit, in parts.  0 or -1. */
int s3_copy_in_parts(struct s3_bucket *s, const char *from, const char *to, uint64_t size);

/* bucket_ops' writer: buffered parts of a multipart upload, or one PutObject when small. */
struct bucket_writer *s3_writer_open(struct bucket *b, const char *key);
int s3_writer_write(struct bucket_writer *bw, const void *data, size_t len);
int s3_writer_close(struct bucket_writer *bw);
void s3_writer_abort(struct bucket_writer *bw);

#endif
