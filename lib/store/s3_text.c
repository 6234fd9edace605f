/*
 * s3_text: the S3 store's text work, no network: SigV4's query strings,
 * S3's error and listing answers, SHA-256, and where a bucket url points
 * (the encodings and XML beneath are http_text.c's).
 */
#include "s3.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "bucket.h"
#include "err.h"
#include "util.h"

struct enc_param {
	char *name;
	char *value;
};

static int cmp_param(const void *a, const void *b)
{
	const struct enc_param *x = a, *y = b;
	int r = strcmp(x->name, y->name);

	return r ? r : strcmp(x->value, y->value);
}

void s3_query(struct sb *out, const struct http_param *params, size_t n)
{
	struct enc_param *v;
	struct sb tmp = SB_INIT;
	size_t i;

	if (n == 0)
		return;
	v = xcalloc(n, sizeof(*v));
	for (i = 0; i < n; i++) {
		const char *val = params[i].value ? params[i].value : "";

		http_uri_encode(&tmp, params[i].name, strlen(params[i].name), 0);
		v[i].name = sb_detach(&tmp);
		http_uri_encode(&tmp, val, strlen(val), 0);
		v[i].value = sb_detach(&tmp);
	}
	qsort(v, n, sizeof(*v), cmp_param);
	for (i = 0; i < n; i++) {
		if (i)
			sb_addc(out, '&');
		sb_adds(out, v[i].name);
		sb_addc(out, '=');
		sb_adds(out, v[i].value);
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

int s3_xml_error(const char *xml, size_t len, struct sb *code, struct sb *msg)
{
	size_t pos = 0, start;
	int is_error;
	struct sb whole = SB_INIT;

	sb_reset(code);
	sb_reset(msg);
	if (xml == NULL || len == 0)
		return 0;
	is_error = http_xml_next(xml, len, "Error", &pos, &whole);
	sb_free(&whole);
	if (!is_error)
		return 0;
	start = http_find(xml, len, 0, "<Error");
	pos = start;
	if (!http_xml_next(xml, len, "Code", &pos, code))
		sb_reset(code);
	pos = start;
	if (!http_xml_next(xml, len, "Message", &pos, msg))
		sb_reset(msg);
	return 1;
}

int s3_xml_list(const char *xml, size_t len, char ***keys, size_t *nkeys,
		int *truncated, struct sb *next)
{
	return s3_xml_list_versions(xml, len, keys, NULL, nkeys, truncated, next);
}

int s3_xml_list_versions(const char *xml, size_t len, char ***keys, char ***versions,
			 size_t *nkeys, int *truncated, struct sb *next)
{
	struct sb text = SB_INIT, contents = SB_INIT, key = SB_INIT;
	size_t pos = 0, n = 0, cap = 8;
	char **v = xcalloc(cap, sizeof(*v)), **ver = versions ? xcalloc(cap, sizeof(*ver)) : NULL;
	int encoded = 0, ret = -1;

	*keys = NULL;
	if (versions)
		*versions = NULL;
	*nkeys = 0;
	*truncated = 0;
	sb_reset(next);
	if (http_find(xml, len, 0, "<ListBucketResult") == len)
		goto out;
	pos = 0;
	if (http_xml_next(xml, len, "EncodingType", &pos, &text))
		encoded = strcasecmp(text.buf, "url") == 0;
	pos = 0;
	if (http_xml_next(xml, len, "IsTruncated", &pos, &text))
		*truncated = strcmp(text.buf, "true") == 0;
	pos = 0;
	if (http_xml_next(xml, len, "NextContinuationToken", &pos, &text))
		sb_add(next, text.buf, text.len);
	pos = 0;
	/* Contents' text is not unescaped twice: take Key from the raw range. */
	for (;;) {
		size_t start = http_find(xml, len, pos, "<Contents>"), end, kpos;

		if (start == len)
			break;
		end = http_find(xml, len, start, "</Contents>");
		if (end == len)
			goto out;
		kpos = start;
		if (!http_xml_next(xml, end, "Key", &kpos, &text))
			goto out;
		sb_reset(&key);
		if (encoded) {
			if (http_url_decode(&key, text.buf, text.len, 1) < 0)
				goto out;
		} else {
			sb_add(&key, text.buf, text.len);
		}
		if (n + 1 >= cap) {
			cap *= 2;
			v = xrealloc(v, cap * sizeof(*v));
			if (ver)
				ver = xrealloc(ver, cap * sizeof(*ver));
		}
		if (ver) {
			/* (the ETag's quotes unescaped: "&quot;..&quot;" is "\"..\"") */
			kpos = start;
			ver[n] = http_xml_next(xml, end, "ETag", &kpos, &text) ? xstrdup(text.buf) : xstrdup("");
			ver[n + 1] = NULL;
		}
		v[n++] = sb_detach(&key);
		v[n] = NULL;
		pos = end + 11;
	}
	*keys = v;
	if (versions)
		*versions = ver;
	*nkeys = n;
	v = ver = NULL;
	ret = 0;
out:
	if (v) {
		v[n] = NULL;
		util_strv_free(v);
	}
	if (ver) {
		ver[n] = NULL;
		util_strv_free(ver);
	}
	sb_free(&text);
	sb_free(&contents);
	sb_free(&key);
	return ret;
}

void s3_sha256_hex(const void *data, size_t len, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;

	if (EVP_Digest(data ? data : "", len, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != 32) {
		err_msg("cannot compute SHA-256");
		memset(md, 0, sizeof(md));
		mdlen = 32;
	}
	for (i = 0; i < mdlen; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}

static int bucket_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > 255)
		return 0;
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '.' && c != '-' && c != '_')
			return 0;
	}
	return 1;
}

void s3_target_free(struct s3_target *t)
{
	if (t == NULL)
		return;
	free(t->scheme);
	free(t->bucket);
	free(t->prefix);
	free(t->origin);
	free(t->base);
	free(t->region);
	memset(t, 0, sizeof(*t));
}

int s3_target_init(struct s3_target *t, const char *url, const char *endpoint,
		   const char *region, const char *addressing, struct sb *why)
{
	const char *rest, *slash, *p;
	size_t blen;
	char *prefix = NULL;
	int virt;

	memset(t, 0, sizeof(*t));
	if (strncasecmp(url, "s3://", 5) == 0) {
		t->scheme = xstrdup("s3");
	} else if (strncasecmp(url, "gs://", 5) == 0) {
		t->scheme = xstrdup("gs");
		t->gcs = 1;
	} else {
		sb_adds(why, "not an s3:// or gs:// url");
		goto fail;
	}
	rest = url + 5;
	slash = strchr(rest, '/');
	blen = slash ? (size_t)(slash - rest) : strlen(rest);
	if (blen == 0) {
		sb_adds(why, "no bucket name after the scheme");
		goto fail;
	}
	if (!bucket_name_ok(rest, blen)) {
		sb_adds(why, "a bucket name holds only letters, digits, '.', '-' and '_'");
		goto fail;
	}
	t->bucket = xstrndup(rest, blen);
	if (slash) {
		/* "s3://b/", "s3://b/pre", "s3://b/pre/fix/" */
		size_t plen;

		p = slash + 1;
		plen = strlen(p);
		while (plen > 0 && p[plen - 1] == '/')
			plen--;
		prefix = xstrndup(p, plen);
		if (plen > 0 && !bucket_key_ok(prefix)) {
			sb_adds(why, "the prefix after the bucket name must be a relative path "
			       "without empty, '.' or '..' components or control characters");
			goto fail;
		}
		t->prefix = plen ? xasprintf("%s/", prefix) : xstrdup("");
		free(prefix);
		prefix = NULL;
	} else {
		t->prefix = xstrdup("");
	}
	if (region && *region)
		t->region = xstrdup(region);
	else
		t->region = xstrdup(t->gcs ? "auto" : "us-east-1");
	for (p = t->region; *p; p++) {
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') {
			sb_adds(why, "the region holds only letters, digits, '-' and '_'");
			goto fail;
		}
	}
	if (endpoint && *endpoint) {
		const char *hs, *he;
		size_t elen = strlen(endpoint);

		if (strncasecmp(endpoint, "http://", 7) == 0)
			hs = endpoint + 7;
		else if (strncasecmp(endpoint, "https://", 8) == 0)
			hs = endpoint + 8;
		else {
			sb_adds(why, "the endpoint must be an http:// or https:// url");
			goto fail;
		}
		he = hs + strcspn(hs, "/?#");
		if (he == hs || *he == '?' || *he == '#' || strpbrk(endpoint, " \t\r\n@")) {
			sb_adds(why, "the endpoint must be an http:// or https:// url with a host and no query");
			goto fail;
		}
		while (elen > (size_t)(he - endpoint) && endpoint[elen - 1] == '/')
			elen--;
		if (addressing && strcasecmp(addressing, "virtual") == 0) {
			virt = 1;
		} else if (addressing == NULL || *addressing == '\0' ||
			   strcasecmp(addressing, "auto") == 0 || strcasecmp(addressing, "path") == 0) {
			virt = 0;
		} else {
			sb_adds(why, "the addressing style is path, virtual or auto");
			goto fail;
		}
		if (virt)
			t->origin = xasprintf("%.*s%s.%.*s", (int)(hs - endpoint), endpoint,
					      t->bucket, (int)(he - hs), hs);
		else
			t->origin = xstrndup(endpoint, (size_t)(he - endpoint));
		/* The endpoint's own path goes before everything. */
		t->base = virt ? xstrndup(he, elen - (size_t)(he - endpoint))
			       : xasprintf("%.*s/%s", (int)(elen - (size_t)(he - endpoint)), he, t->bucket);
		t->path_style = !virt;
		return 0;
	}
	if (t->gcs) {
		virt = addressing && strcasecmp(addressing, "virtual") == 0;
		t->origin = virt ? xasprintf("https://%s.storage.googleapis.com", t->bucket)
				 : xstrdup("https://storage.googleapis.com");
	} else {
		const char *dom = strncmp(t->region, "cn-", 3) == 0 ? "amazonaws.com.cn" : "amazonaws.com";

		if (addressing && strcasecmp(addressing, "path") == 0)
			virt = 0;
		else if (addressing && strcasecmp(addressing, "virtual") == 0)
			virt = 1;
		else if (addressing == NULL || *addressing == '\0' || strcasecmp(addressing, "auto") == 0)
			virt = strchr(t->bucket, '.') == NULL;	/* dots break TLS names */
		else {
			sb_adds(why, "the addressing style is path, virtual or auto");
			goto fail;
		}
		t->origin = virt ? xasprintf("https://%s.s3.%s.%s", t->bucket, t->region, dom)
				 : xasprintf("https://s3.%s.%s", t->region, dom);
	}
	t->base = virt ? xstrdup("") : xasprintf("/%s", t->bucket);
	t->path_style = !virt;
	return 0;
fail:
	free(prefix);
	s3_target_free(t);
	return -1;
}

char *s3_target_url(const struct s3_target *t, const char *key, const char *query)
{
	struct sb u = SB_INIT;

	sb_adds(&u, t->origin);
	sb_adds(&u, t->base);
	if (key && *key) {
		sb_addc(&u, '/');
		http_uri_encode(&u, t->prefix, strlen(t->prefix), 1);
		http_uri_encode(&u, key, strlen(key), 1);
	} else if (*t->base == '\0') {
		sb_addc(&u, '/');
	}
	if (query && *query) {
		sb_addc(&u, '?');
		sb_adds(&u, query);
	}
	return sb_detach(&u);
}
