/*
 * azure: an Azure Blob Storage container (or Azurite) as a bucket:
 * opening it, the object operations of bucket_ops (Get Blob, Put Blob,
 * conditional Put Blob, Get Blob Properties, Delete Blob, Copy Blob then
 * Delete Blob, List Blobs), and the streaming writer (Put Block, Put Block
 * List; one Put Blob when small).  Each request goes through
 * azure_call.c.
 */
#include "azure_impl.h"
#include "bucket.h"
#include "bucket_impl.h"
#include "err.h"
#include "size.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <openssl/evp.h>

static int az_get(struct bucket *b, const char *key, struct sb *out)
{
	struct az_bucket *z = azb(b);
	struct http_call c;
	int r = -1;

	http_call_init(&c, "read", "GetBlob", "GET", key);
	az_perform(z, &c);
	if (az_ok(&c)) {
		sb_add(out, c.resp.buf ? c.resp.buf : "", c.resp.len);
		r = 0;
	} else if (az_no_blob(&c)) {
		r = 1;
	} else {
		az_report(z, &c, NULL);
	}
	http_call_free(&c);
	return r;
}

/*
 * Put Blob of data[0..len) with the header cond (NULL: none).  0; 1 when
 * there was a cond and the service refused it (409 BlobAlreadyExists,
 * 412 ConditionNotMet: nothing reported, *twice set when the request went
 * out more than once); -1 (reported).
 */
static int put_blob(struct az_bucket *z, const char *verb, const char *key, const void *data,
		    size_t len, const char *cond, int *twice)
{
	struct http_call c;
	int r = -1;

	http_call_init(&c, verb, "PutBlob", "PUT", key);
	c.body = data;
	c.body_len = len;
	c.hdr[0] = "x-ms-blob-type: BlockBlob";
	c.hdr[1] = cond;
	az_perform(z, &c);
	if (twice)
		*twice = http_sent_twice(&c);
	if (az_ok(&c))
		r = 0;
	else if (cond && (c.status == 409 || c.status == 412))
		r = 1;
	else
		az_report(z, &c, NULL);
	http_call_free(&c);
	return r;
}

static int az_put(struct bucket *b, const char *key, const void *data, size_t len)
{
	return put_blob(azb(b), "write", key, data, len, NULL, NULL);
}

/* Read key back: 0 it holds data[0..len), 1 something else or gone, -1 error. */
static int same_content(struct bucket *b, const char *key, const void *data, size_t len)
{
	struct sb back = SB_INIT;
	int r = az_get(b, key, &back);

	if (r == 0 && (back.len != len || (len && memcmp(back.buf, data, len) != 0)))
		r = 1;
	sb_free(&back);
	return r;
}

/*
 * Create only if absent: Put Blob with If-None-Match: *, which Azure and
 * Azurite refuse (409) when the blob exists.  A refusal of a request that
 * went out twice may be our own first send, its answer lost: the blob
 * then holds our bytes (a lock holds its run id), and is ours.
 */
static int az_put_new(struct bucket *b, const char *key, const void *data, size_t len)
{
	int twice = 0, r;

	r = put_blob(azb(b), "create", key, data, len, "If-None-Match: *", &twice);
	if (r == 1 && twice)
		r = same_content(b, key, data, len);
	return r;
}

static int az_probe_conditional(struct bucket *b, const char *key)
{
	static const char body[] = "dataspoc-pipe conditional create probe\n";
	int r = put_blob(azb(b), "probe", key, body, sizeof(body) - 1, "If-None-Match: *", NULL);

	return r < 0 ? -1 : r == 1 ? 1 : 0;
}

/*
 * Get Blob Properties: 1 exists (size in *len, ETag into etag), 0
 * missing, -1 error (reported).
 */
static int head(struct az_bucket *z, const char *verb, const char *key, uint64_t *len,
		char *etag, size_t size)
{
	struct http_call c;
	int r = -1;

	http_call_init(&c, verb, "GetBlobProperties", "HEAD", key);
	az_perform(z, &c);
	if (az_ok(&c)) {
		if (len)
			*len = c.length;
		if (etag)
			snprintf(etag, size, "%s", c.etag);
		r = 1;
	} else if (az_no_blob(&c)) {
		r = 0;
	} else {
		az_report(z, &c, NULL);
	}
	http_call_free(&c);
	return r;
}

static int az_exists(struct bucket *b, const char *key)
{
	return head(azb(b), "look at", key, NULL, NULL, 0);
}

static int az_version(struct bucket *b, const char *key, char *buf, size_t size)
{
	int r = head(azb(b), "read", key, NULL, buf, size);

	if (r == 1 && buf[0] == '\0')
		return 2;
	return r;
}

/* Put Blob with If-Match: ETAG (If-None-Match: * for ""). */
static int az_put_if(struct bucket *b, const char *key, const void *data, size_t len,
		     const char *version)
{
	char *cond = version[0] ? xasprintf("If-Match: %s", version) : xstrdup("If-None-Match: *");
	int r = put_blob(azb(b), "write", key, data, len, cond, NULL);

	free(cond);
	return r;
}

static int delete_blob(struct az_bucket *z, const char *verb, const char *key)
{
	struct http_call c;
	int r = -1;

	http_call_init(&c, verb, "DeleteBlob", "DELETE", key);
	c.hdr[0] = "x-ms-delete-snapshots: include";
	az_perform(z, &c);
	if (az_ok(&c) || az_no_blob(&c))
		r = 0;
	else
		az_report(z, &c, NULL);
	http_call_free(&c);
	return r;
}

static int az_delete(struct bucket *b, const char *key)
{
	return delete_blob(azb(b), "delete", key);
}

/*
 * A Copy Blob the service answered "pending": poll the destination's
 * properties until its copy status is success.  0, or -1 (reported).
 */
static int wait_copy(struct az_bucket *z, const char *from, const char *to)
{
	long waited = 0, step = 50;

	for (;;) {
		struct http_call c;
		char status[32];

		util_sleep_ms(step);
		waited += step;
		if (step < 2000)
			step *= 2;
		http_call_init(&c, "move", "GetBlobProperties", "HEAD", to);
		az_perform(z, &c);
		if (!az_ok(&c)) {
			az_report(z, &c, NULL);
			http_call_free(&c);
			return -1;
		}
		snprintf(status, sizeof(status), "%s", c.copy_status);
		http_call_free(&c);
		if (strcmp(status, "pending") != 0 && strcmp(status, "success") != 0) {
			char *subj = az_subject(z, from);

			err_msg("cannot move '%s': CopyBlob: the copy ended '%s'", subj,
				status[0] ? status : "without a status");
			free(subj);
			return -1;
		}
		if (strcmp(status, "success") == 0)
			return 0;
		if (waited >= z->copy_wait_ms) {
			char *subj = az_subject(z, from);

			err_msg("cannot move '%s': CopyBlob: still pending after %ld ms", subj, waited);
			free(subj);
			return -1;
		}
	}
}

/*
 * Copy Blob (server-side, within the account), waited for when pending,
 * then Delete Blob of the source.  Sent twice, a copy copies the same
 * bytes again; a second copy while the first is pending is refused with
 * PendingCopyOperation, and the first is waited for.
 */
static int az_move(struct bucket *b, const char *from, const char *to)
{
	struct az_bucket *z = azb(b);
	struct http_call c;
	char *src, *hsrc;
	int r;

	r = head(z, "move", from, NULL, NULL, 0);
	if (r <= 0)
		return r < 0 ? -1 : 1;
	if (strcmp(from, to) == 0)
		return 0;
	src = az_url(z, from, NULL, 1);
	hsrc = xasprintf("x-ms-copy-source: %s", src);
	memset(src, 0, strlen(src));
	free(src);
	http_call_init(&c, "move", "CopyBlob", "PUT", to);
	c.hdr[0] = hsrc;
	az_perform(z, &c);
	memset(hsrc, 0, strlen(hsrc));
	free(hsrc);
	if (az_no_blob(&c) || http_code_is(&c, "CannotVerifyCopySource")) {
		http_call_free(&c);
		return head(z, "move", from, NULL, NULL, 0) == 0 ? 1 : -1;
	}
	if (!az_ok(&c) && !http_code_is(&c, "PendingCopyOperation")) {
		az_report(z, &c, from);
		http_call_free(&c);
		return -1;
	}
	r = 0;
	if (!az_ok(&c) || strcmp(c.copy_status, "success") != 0)
		r = wait_copy(z, from, to);
	http_call_free(&c);
	if (r < 0)
		return -1;
	return delete_blob(z, "move", from);
}

static int az_list(struct bucket *b, const char *prefix, struct bucket_keys *out)
{
	struct az_bucket *z = azb(b);
	struct sb marker = SB_INIT, next = SB_INIT;
	char *full = xasprintf("%s%s", z->t.prefix, prefix);
	size_t plen = strlen(z->t.prefix);
	char page[24];
	int ret = -1, pages = 0;

	snprintf(page, sizeof(page), "%ld", z->page_size);
	for (;;) {
		struct http_call c;
		char **keys = NULL, **versions = NULL;
		size_t n = 0;

		http_call_init(&c, "list", "ListBlobs", "GET", NULL);
		az_call_param(&c, "restype", "container");
		az_call_param(&c, "comp", "list");
		if (*full)
			az_call_param(&c, "prefix", full);
		az_call_param(&c, "maxresults", page);
		if (marker.len)
			az_call_param(&c, "marker", marker.buf);
		az_perform(z, &c);
		if (!az_ok(&c)) {
			az_report(z, &c, prefix);
			http_call_free(&c);
			goto out;
		}
		if (az_xml_list_versions(c.resp.buf, c.resp.len, &keys, &versions, &n, &next) < 0) {
			snprintf(c.why, sizeof(c.why), "cannot read the answer (page %d)", pages + 1);
			c.status = -1;
			az_report(z, &c, prefix);
			http_call_free(&c);
			goto out;
		}
		http_call_free(&c);
		bucket_keys_take(out, keys, versions, n, full, plen);
		util_strv_free(keys);
		util_strv_free(versions);
		pages++;
		if (next.len == 0)
			break;
		if (marker.len && strcmp(next.buf, marker.buf) == 0) {
			char *subj = az_subject(z, prefix);

			err_msg("cannot list '%s': ListBlobs: the service gives the same marker twice", subj);
			free(subj);
			goto out;
		}
		sb_reset(&marker);
		sb_add(&marker, next.buf, next.len);
	}
	ret = 0;
out:
	sb_free(&marker);
	sb_free(&next);
	free(full);
	return ret;
}

/* ---- the streaming writer: Put Block per block, Put Block List at close ---- */

struct az_writer {
	struct bucket_writer base;
	struct az_bucket *z;
	char *key;
	char *buf;
	size_t len, cap;
	int nblocks;
	struct sb list;		/* <Latest> elements so far */
	int failed;
};

/* Block n's id: base64 of "dspblk-NNNNNNNN" (15 bytes: 20 characters, no padding, one length). */
static void block_id(int n, char id[24])
{
	char raw[32];

	snprintf(raw, sizeof(raw), "dspblk-%08d", n);
	EVP_EncodeBlock((unsigned char *)id, (const unsigned char *)raw, 15);
}

static struct bucket_writer *az_writer_open(struct bucket *b, const char *key)
{
	struct az_writer *w = xcalloc(1, sizeof(*w));

	w->z = azb(b);
	w->key = xstrdup(key);
	return &w->base;
}

/* Put Block of the buffer.  Sent twice, a block is staged again under the same id. */
static int flush_block(struct az_writer *w)
{
	struct http_call c;
	char id[24];
	int r = -1;

	if (w->nblocks >= AZ_MAX_BLOCKS) {
		char *subj = az_subject(w->z, w->key);

		err_msg("cannot write '%s': more than %d blocks (raise DATASPOC_PIPE_AZ_BLOCK_SIZE)",
			subj, AZ_MAX_BLOCKS);
		free(subj);
		return -1;
	}
	block_id(w->nblocks + 1, id);
	http_call_init(&c, "write", "PutBlock", "PUT", w->key);
	az_call_param(&c, "comp", "block");
	az_call_param(&c, "blockid", id);
	c.body = w->buf;
	c.body_len = w->len;
	az_perform(w->z, &c);
	if (az_ok(&c)) {
		w->nblocks++;
		sb_addf(&w->list, "<Latest>%s</Latest>", id);
		w->len = 0;
		r = 0;
	} else {
		az_report(w->z, &c, NULL);
	}
	http_call_free(&c);
	return r;
}

static int az_writer_write(struct bucket_writer *bw, const void *data, size_t len)
{
	struct az_writer *w = (struct az_writer *)bw;
	size_t block = w->z->block_size;
	const char *p = data;

	if (w->failed)
		return -1;
	while (len > 0) {
		size_t n;

		if (w->len == block && flush_block(w) < 0) {
			w->failed = 1;
			return -1;
		}
		n = bucket_part_fill(&w->buf, &w->cap, &w->len, block, p, len);
		p += n;
		len -= n;
	}
	return 0;
}

static void writer_free(struct az_writer *w)
{
	free(w->key);
	free(w->buf);
	sb_free(&w->list);
	free(w);
}

/*
 * Put Block List of every block, in order.  Sent twice, the second finds
 * the blocks committed by the first ("Latest" looks there too) and
 * commits the same blob again.
 */
static int commit_blocks(struct az_writer *w)
{
	struct sb body = SB_INIT;
	struct http_call c;
	int r = -1;

	sb_adds(&body, "<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
	sb_add(&body, w->list.buf ? w->list.buf : "", w->list.len);
	sb_adds(&body, "</BlockList>");
	http_call_init(&c, "write", "PutBlockList", "PUT", w->key);
	az_call_param(&c, "comp", "blocklist");
	c.body = body.buf;
	c.body_len = body.len;
	c.hdr[0] = "Content-Type: application/xml";
	az_perform(w->z, &c);
	if (az_ok(&c))
		r = 0;
	else
		az_report(w->z, &c, NULL);
	http_call_free(&c);
	sb_free(&body);
	return r;
}

static int az_writer_close(struct bucket_writer *bw)
{
	struct az_writer *w = (struct az_writer *)bw;
	int r = -1;

	if (w->failed)
		goto out;
	if (w->nblocks == 0) {
		r = put_blob(w->z, "write", w->key, w->buf, w->len, NULL, NULL);
		goto out;
	}
	if (w->len > 0 && flush_block(w) < 0)
		goto out;
	r = commit_blocks(w);
out:
	/* uncommitted blocks are the service's to drop (after a week); nothing was committed */
	writer_free(w);
	return r;
}

static void az_writer_abort(struct bucket_writer *bw)
{
	writer_free((struct az_writer *)bw);
}

static void az_free(struct bucket *b)
{
	struct az_bucket *z = azb(b);

	if (z->h)
		curl_easy_cleanup(z->h);
	az_creds_free(&z->cr);
	az_target_free(&z->t);
	free(z);
}

static const struct bucket_ops az_ops = {
	.name = "az",
	.free = az_free,
	.get = az_get,
	.put = az_put,
	.put_new = az_put_new,
	.probe_conditional = az_probe_conditional,
	.version = az_version,
	.put_if = az_put_if,
	.del = az_delete,
	.move = az_move,
	.exists = az_exists,
	.list = az_list,
	.writer_open = az_writer_open,
	.writer_write = az_writer_write,
	.writer_close = az_writer_close,
	.writer_abort = az_writer_abort,
};

/* A number from the environment in [lo, hi]; def when unset.  -1 after reporting. */
static int env_num(const char *name, long lo, long hi, long def, long *out)
{
	const char *v = getenv(name);
	char *end;
	long n;

	*out = def;
	if (v == NULL || *v == '\0')
		return 0;
	n = strtol(v, &end, 10);
	if (*end || end == v || n < lo || n > hi) {
		err_msg("%s must be a number from %ld to %ld, not '%s'", name, lo, hi, v);
		return -1;
	}
	*out = n;
	return 0;
}

struct bucket *az_bucket_open(const char *url, const char *endpoint, const char *account)
{
	static int curl_ready;
	struct az_bucket *z = xcalloc(1, sizeof(*z));
	struct sb why = SB_INIT;
	const char *v;
	long n;

	z->base.ops = &az_ops;
	if (!curl_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			err_msg("cannot open bucket '%s': cannot start libcurl", url);
			goto fail;
		}
		curl_ready = 1;
	}
	if (az_creds_load(&z->cr, account, url) < 0)
		goto fail;
	if (endpoint == NULL || *endpoint == '\0')
		endpoint = z->cr.endpoint;
	if (az_target_init(&z->t, url, endpoint, &z->cr.account, &why) < 0) {
		err_msg("invalid bucket '%s': %s", url, why.buf);
		sb_free(&why);
		goto fail;
	}
	if (env_num("DATASPOC_PIPE_AZ_RETRIES", 0, 100, AZ_DEFAULT_RETRIES, &n) < 0)
		goto fail;
	z->retries = (int)n;
	if (env_num("DATASPOC_PIPE_AZ_TIMEOUT", 1, 3600, 60, &z->timeout) < 0)
		goto fail;
	if (env_num("DATASPOC_PIPE_AZ_PAGE_SIZE", 1, AZ_DEFAULT_PAGE, AZ_DEFAULT_PAGE, &z->page_size) < 0)
		goto fail;
	if (env_num("DATASPOC_PIPE_AZ_COPY_WAIT", 1, 86400, 600, &n) < 0)
		goto fail;
	z->copy_wait_ms = n * 1000;
	z->block_size = AZ_DEFAULT_BLOCK;
	v = getenv("DATASPOC_PIPE_AZ_BLOCK_SIZE");
	if (v && *v) {
		uint64_t sz;

		if (config_parse_size(v, &sz) < 0 || sz < AZ_MIN_BLOCK || sz > AZ_MAX_BLOCK) {
			err_msg("DATASPOC_PIPE_AZ_BLOCK_SIZE must be a size from 64KiB to 4000MiB, not '%s'", v);
			goto fail;
		}
		z->block_size = (size_t)sz;
	}
	z->h = curl_easy_init();
	if (z->h == NULL) {
		err_msg("cannot open bucket '%s': cannot start libcurl", url);
		goto fail;
	}
	return &z->base;
fail:
	az_free(&z->base);
	return NULL;
}
