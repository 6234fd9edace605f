/*
 * s3_text: the S3 store's text work, no network: percent-encoding, query
 * strings, the little XML S3 answers with, SHA-256, and where a bucket url
 * points.
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

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
}

void s3_uri_encode(struct sb *out, const char *s, size_t len, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	sb_grow(out, len);
	sb_add(out, "", 0);	/* NUL-terminated even when nothing follows */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (unreserved(c) || (keep_slash && c == '/')) {
			sb_addc(out, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			sb_add(out, e, 3);
		}
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int s3_url_decode(struct sb *out, const char *s, size_t len, int plus)
{
	size_t i;

	sb_grow(out, len);
	sb_add(out, "", 0);	/* NUL-terminated even when nothing follows */
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -1;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			sb_addc(out, (char)(hi * 16 + lo));
			i += 2;
		} else if (c == '+' && plus) {
			sb_addc(out, ' ');
		} else if (c == '\0') {
			return -1;
		} else {
			sb_addc(out, c);
		}
	}
	return 0;
}

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

void s3_query(struct sb *out, const struct s3_param *params, size_t n)
{
	struct enc_param *v;
	struct sb tmp = SB_INIT;
	size_t i;

	if (n == 0)
		return;
	v = xcalloc(n, sizeof(*v));
	for (i = 0; i < n; i++) {
		const char *val = params[i].value ? params[i].value : "";

		s3_uri_encode(&tmp, params[i].name, strlen(params[i].name), 0);
		v[i].name = sb_detach(&tmp);
		s3_uri_encode(&tmp, val, strlen(val), 0);
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

/* Append the UTF-8 encoding of code point cp; 0, or -1 when cp is not one. */
static int add_utf8(struct sb *out, unsigned long cp)
{
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	if (cp < 0x80) {
		sb_addc(out, (char)cp);
	} else if (cp < 0x800) {
		sb_addc(out, (char)(0xC0 | (cp >> 6)));
		sb_addc(out, (char)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		sb_addc(out, (char)(0xE0 | (cp >> 12)));
		sb_addc(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
		sb_addc(out, (char)(0x80 | (cp & 0x3F)));
	} else {
		sb_addc(out, (char)(0xF0 | (cp >> 18)));
		sb_addc(out, (char)(0x80 | ((cp >> 12) & 0x3F)));
		sb_addc(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
		sb_addc(out, (char)(0x80 | (cp & 0x3F)));
	}
	return 0;
}

void s3_xml_unescape(struct sb *out, const char *s, size_t len)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {
		{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' }, { "apos", '\'' },
	};
	size_t i;

	sb_grow(out, len);
	sb_add(out, "", 0);	/* NUL-terminated even when nothing follows */
	for (i = 0; i < len; i++) {
		const char *semi;
		size_t n, k;

		if (s[i] != '&') {
			sb_addc(out, s[i]);
			continue;
		}
		semi = memchr(s + i, ';', len - i < 12 ? len - i : 12);
		if (semi == NULL) {
			sb_addc(out, '&');
			continue;
		}
		n = (size_t)(semi - (s + i)) - 1;	/* between '&' and ';' */
		for (k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
			if (strlen(named[k].name) == n && memcmp(s + i + 1, named[k].name, n) == 0)
				break;
		}
		if (k < sizeof(named) / sizeof(named[0])) {
			sb_addc(out, named[k].c);
			i += n + 1;
			continue;
		}
		if (n >= 2 && s[i + 1] == '#') {
			int base = (s[i + 2] == 'x' || s[i + 2] == 'X') ? 16 : 10;
			size_t d = base == 16 ? 2 : 1, j;
			unsigned long cp = 0;
			int good = d < n;
			size_t keep = out->len;

			for (j = d; j < n && good; j++) {
				int v = base == 16 ? hexval(s[i + 1 + j]) :
					(isdigit((unsigned char)s[i + 1 + j]) ? s[i + 1 + j] - '0' : -1);

				if (v < 0 || cp > 0x10FFFF)
					good = 0;
				else
					cp = cp * (unsigned long)base + (unsigned long)v;
			}
			if (good && add_utf8(out, cp) == 0) {
				i += n + 1;
				continue;
			}
			out->len = keep;
			out->buf[keep] = '\0';
		}
		sb_addc(out, '&');
	}
}

void s3_xml_escape(struct sb *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': sb_adds(out, "&amp;"); break;
		case '<': sb_adds(out, "&lt;"); break;
		case '>': sb_adds(out, "&gt;"); break;
		case '"': sb_adds(out, "&quot;"); break;
		case '\'': sb_adds(out, "&apos;"); break;
		default: sb_addc(out, *s);
		}
	}
}

/* Find needle[0..nlen) in hay[from..len); offset or len when absent. */
static size_t find(const char *hay, size_t len, size_t from, const char *needle, size_t nlen)
{
	size_t i;

	if (nlen == 0 || len < nlen)
		return len;
	for (i = from; i + nlen <= len; i++) {
		if (hay[i] == needle[0] && memcmp(hay + i, needle, nlen) == 0)
			return i;
	}
	return len;
}

int s3_xml_next(const char *xml, size_t len, const char *tag, size_t *pos, struct sb *out)
{
	size_t tlen = strlen(tag), i = *pos;
	char *close = xasprintf("</%s>", tag);
	int found = 0;

	sb_reset(out);
	while (i < len) {
		size_t start, end;
		char after;

		i = find(xml, len, i, "<", 1);
		if (i + 1 + tlen >= len)
			break;
		if (memcmp(xml + i + 1, tag, tlen) != 0) {
			i++;
			continue;
		}
		after = xml[i + 1 + tlen];
		if (after != '>' && after != ' ' && after != '/' && after != '\t' &&
		    after != '\n' && after != '\r') {
			i++;
			continue;
		}
		start = find(xml, len, i, ">", 1);
		if (start == len)
			break;
		if (xml[start - 1] == '/') {
			/* <Tag/>: empty */
			*pos = start + 1;
			if (out->buf == NULL)
				sb_adds(out, "");
			found = 1;
			break;
		}
		start++;
		end = find(xml, len, start, close, tlen + 3);
		if (end == len)
			break;
		s3_xml_unescape(out, xml + start, end - start);
		if (out->buf == NULL)
			sb_adds(out, "");
		*pos = end + tlen + 3;
		found = 1;
		break;
	}
	free(close);
	return found;
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
	is_error = s3_xml_next(xml, len, "Error", &pos, &whole);
	sb_free(&whole);
	if (!is_error)
		return 0;
	start = find(xml, len, 0, "<Error", 6);
	pos = start;
	if (!s3_xml_next(xml, len, "Code", &pos, code))
		sb_reset(code);
	pos = start;
	if (!s3_xml_next(xml, len, "Message", &pos, msg))
		sb_reset(msg);
	return 1;
}

int s3_xml_list(const char *xml, size_t len, char ***keys, size_t *nkeys,
		int *truncated, struct sb *next)
{
	struct sb text = SB_INIT, contents = SB_INIT, key = SB_INIT;
	size_t pos = 0, n = 0, cap = 8;
	char **v = xcalloc(cap, sizeof(*v));
	int encoded = 0, ret = -1;

	*keys = NULL;
	*nkeys = 0;
	*truncated = 0;
	sb_reset(next);
	if (find(xml, len, 0, "<ListBucketResult", 17) == len)
		goto out;
	pos = 0;
	if (s3_xml_next(xml, len, "EncodingType", &pos, &text))
		encoded = strcasecmp(text.buf, "url") == 0;
	pos = 0;
	if (s3_xml_next(xml, len, "IsTruncated", &pos, &text))
		*truncated = strcmp(text.buf, "true") == 0;
	pos = 0;
	if (s3_xml_next(xml, len, "NextContinuationToken", &pos, &text))
		sb_add(next, text.buf, text.len);
	pos = 0;
	/* Contents' text is not unescaped twice: take Key from the raw range. */
	for (;;) {
		size_t start = find(xml, len, pos, "<Contents>", 10), end, kpos;

		if (start == len)
			break;
		end = find(xml, len, start, "</Contents>", 11);
		if (end == len)
			goto out;
		kpos = start;
		if (!s3_xml_next(xml, end, "Key", &kpos, &text))
			goto out;
		sb_reset(&key);
		if (encoded) {
			if (s3_url_decode(&key, text.buf, text.len, 1) < 0)
				goto out;
		} else {
			sb_add(&key, text.buf, text.len);
		}
		if (n + 1 >= cap) {
			cap *= 2;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n++] = sb_detach(&key);
		v[n] = NULL;
		pos = end + 11;
	}
	*keys = v;
	*nkeys = n;
	v = NULL;
	ret = 0;
out:
	if (v) {
		v[n] = NULL;
		util_strv_free(v);
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
		s3_uri_encode(&u, t->prefix, strlen(t->prefix), 1);
		s3_uri_encode(&u, key, strlen(key), 1);
	} else if (*t->base == '\0') {
		sb_addc(&u, '/');
	}
	if (query && *query) {
		sb_addc(&u, '?');
		sb_adds(&u, query);
	}
	return sb_detach(&u);
}
