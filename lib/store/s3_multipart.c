/*
 * s3_multipart: multipart uploads (CreateMultipartUpload, UploadPart or
 * UploadPartCopy, CompleteMultipartUpload, AbortMultipartUpload): the
 * store's streaming writer, which sends an object of more than one part
 * this way, and server-side copies above the single-copy limit.  Uploads
 * that a lost answer may have left behind are found and aborted.
 */
#include "bucket_impl.h"
#include "err.h"
#include "s3_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void abort_upload(struct s3_bucket *s, const char *key, const char *upload_id);
static void abort_strays(struct s3_bucket *s, const char *key, const char *keep);

static char *create_upload(struct s3_bucket *s, const char *verb, const char *key)
{
	struct http_call c;
	struct sb id = SB_INIT;
	size_t pos = 0;
	char *ret = NULL;
	struct http_param q = { "uploads", NULL };
	struct sb query = SB_INIT;

	s3_query(&query, &q, 1);
	http_call_init(&c, verb, "CreateMultipartUpload", "POST", key);
	c.query = query.buf;
	c.content_type = "application/octet-stream";
	s3_perform(s, &c);
	if (ok(&c) && http_xml_next(c.resp.buf, c.resp.len, "UploadId", &pos, &id) && id.len) {
		ret = sb_detach(&id);
		/* an earlier attempt may have started an upload whose answer was lost */
		if (http_sent_twice(&c))
			abort_strays(s, key, ret);
	} else {
		if (ok(&c))
			snprintf(c.why, sizeof(c.why), "no UploadId in the answer"), c.status = -1;
		s3_report(s, &c, NULL);
	}
	sb_free(&id);
	sb_free(&query);
	http_call_free(&c);
	return ret;
}

static void abort_upload(struct s3_bucket *s, const char *key, const char *upload_id)
{
	struct http_param q = { "uploadId", upload_id };
	struct sb query = SB_INIT;
	struct http_call c;

	s3_query(&query, &q, 1);
	http_call_init(&c, "abort the upload of", "AbortMultipartUpload", "DELETE", key);
	c.query = query.buf;
	s3_perform(s, &c);
	if (c.status == 405 || c.status == 501) {
		/* s3rver, some gateways: nothing to do but say so, once */
		static int said;
		char *subj = s3_subject(s, key);

		if (!said++)
			err_warn("the store cannot abort multipart uploads (%s: HTTP %ld): the parts "
				 "of '%s' stay until a lifecycle rule removes them", c.api, c.status, subj);
		free(subj);
	} else if (!ok(&c) && !(c.status == 404 && http_code_is(&c, "NoSuchUpload"))) {
		s3_report(s, &c, NULL);
	}
	sb_free(&query);
	http_call_free(&c);
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
	struct http_param q[2] = { { "prefix", full }, { "uploads", NULL } };
	struct sb query = SB_INIT, k = SB_INIT, id = SB_INIT;
	struct http_call c;
	size_t pos = 0;

	s3_query(&query, q, 2);
	http_call_init(&c, "look for uploads of", "ListMultipartUploads", "GET", NULL);
	c.query = query.buf;
	s3_perform(s, &c);
	if (!ok(&c)) {
		char *subj = s3_subject(s, key);

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
	while (http_xml_next(c.resp.buf, c.resp.len, "Key", &pos, &k) &&
	       http_xml_next(c.resp.buf, c.resp.len, "UploadId", &pos, &id)) {
		if (strcmp(k.buf, full) == 0 && strcmp(id.buf, keep) != 0)
			abort_upload(s, key, id.buf);
	}
out:
	sb_free(&query);
	sb_free(&k);
	sb_free(&id);
	http_call_free(&c);
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
	struct http_call c;
	int r = 0;

	http_call_init(&c, "look at", "HeadObject", "HEAD", key);
	s3_perform(s, &c);
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
	http_call_free(&c);
	return r;
}

/* Complete the upload of nparts parts, size bytes in all. */
static int complete_upload(struct s3_bucket *s, const char *verb, const char *key,
			   const char *upload_id, const struct sb *parts, uint64_t size, int nparts)
{
	struct http_param q = { "uploadId", upload_id };
	struct sb query = SB_INIT, body = SB_INIT;
	struct http_call c;
	int r = -1;

	s3_query(&query, &q, 1);
	sb_adds(&body, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">");
	sb_add(&body, parts->buf ? parts->buf : "", parts->len);
	sb_adds(&body, "</CompleteMultipartUpload>");
	http_call_init(&c, verb, "CompleteMultipartUpload", "POST", key);
	c.query = query.buf;
	c.body = body.buf;
	c.body_len = body.len;
	c.content_type = "application/xml";
	c.error_in_200 = 1;
	s3_perform(s, &c);
	if (ok(&c) || ((http_sent_twice(&c) || http_code_is(&c, "NoSuchUpload")) &&
			completed_before(s, key, size, nparts)))
		r = 0;
	else
		s3_report(s, &c, NULL);
	sb_free(&query);
	sb_free(&body);
	http_call_free(&c);
	return r;
}

static void add_part(struct sb *parts, int n, const char *etag)
{
	sb_addf(parts, "<Part><PartNumber>%d</PartNumber><ETag>", n);
	http_xml_escape(parts, etag);
	sb_adds(parts, "</ETag></Part>");
}

int s3_copy_in_parts(struct s3_bucket *s, const char *from, const char *to, uint64_t size)
{
	char *src = s3_copy_source(s, from);
	char *id = create_upload(s, "move", to);
	struct sb parts = SB_INIT, query = SB_INIT, etag = SB_INIT;
	uint64_t off;
	int n = 0, r = -1;

	if (id == NULL)
		goto out;
	for (off = 0; off < size; off += s->copy_part) {
		uint64_t end = off + s->copy_part < size ? off + s->copy_part : size;
		char range[80], num[16];
		struct http_param q[2] = { { "partNumber", num }, { "uploadId", id } };
		struct http_call c;
		size_t pos = 0;

		snprintf(num, sizeof(num), "%d", ++n);
		snprintf(range, sizeof(range), "x-amz-copy-source-range: bytes=%llu-%llu",
			 (unsigned long long)off, (unsigned long long)end - 1);
		sb_reset(&query);
		s3_query(&query, q, 2);
		http_call_init(&c, "move", "UploadPartCopy", "PUT", to);
		c.query = query.buf;
		c.hdr[0] = src;
		c.hdr[1] = range;
		c.error_in_200 = 1;
		s3_perform(s, &c);
		if (!ok(&c) || !http_xml_next(c.resp.buf, c.resp.len, "ETag", &pos, &etag)) {
			if (ok(&c))
				snprintf(c.why, sizeof(c.why), "no ETag in the answer"), c.status = -1;
			s3_report(s, &c, NULL);
			http_call_free(&c);
			abort_upload(s, to, id);
			goto out;
		}
		add_part(&parts, n, etag.buf);
		http_call_free(&c);
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

struct bucket_writer *s3_writer_open(struct bucket *b, const char *key)
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
	struct http_param q[2];
	struct sb query = SB_INIT;
	struct http_call c;
	char num[16];
	int r = -1;

	if (w->upload_id == NULL) {
		w->upload_id = create_upload(s, "write", w->key);
		if (w->upload_id == NULL)
			return -1;
	}
	if (w->nparts >= MAX_PARTS) {
		char *subj = s3_subject(s, w->key);

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
	http_call_init(&c, "write", "UploadPart", "PUT", w->key);
	c.query = query.buf;
	c.body = w->buf;
	c.body_len = w->len;
	s3_perform(s, &c);
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
		s3_report(s, &c, NULL);
	}
	sb_free(&query);
	http_call_free(&c);
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

int s3_writer_write(struct bucket_writer *bw, const void *data, size_t len)
{
	struct s3_writer *w = (struct s3_writer *)bw;
	const char *p = data;

	if (w->failed)
		return -1;
	while (len > 0) {
		size_t n;

		if (w->len == w->part && flush_part(w) < 0) {
			writer_fail(w);
			return -1;
		}
		n = bucket_part_fill(&w->buf, &w->cap, &w->len, w->part, p, len);
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

int s3_writer_close(struct bucket_writer *bw)
{
	struct s3_writer *w = (struct s3_writer *)bw;
	int r = -1;

	if (w->failed)
		goto out;
	if (w->upload_id == NULL) {
		r = s3_put_object(w->s, "write", w->key, w->buf, w->len, NULL, NULL);
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

void s3_writer_abort(struct bucket_writer *bw)
{
	struct s3_writer *w = (struct s3_writer *)bw;

	if (!w->failed)
		writer_fail(w);
	writer_free(w);
}
