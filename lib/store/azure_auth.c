/*
 * azure_auth: the Azure store's parts that need no network: credentials
 * from the environment (connection string, account key, SAS), where a
 * container lives (endpoint, account, path-style for Azurite), the
 * SharedKey string-to-sign and its HMAC, and the XML of List Blobs pages
 * and error bodies.
 */
#include "azure_impl.h"
#include "err.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

/* ---- the string-to-sign ---- */

/* The value of header name in hdr ("Name: value"), trimmed, or NULL. */
static const char *header_value(const char *const *hdr, size_t n, const char *name, size_t *vlen)
{
	size_t nlen = strlen(name), i;

	for (i = 0; i < n; i++) {
		const char *h = hdr[i], *v;
		size_t len;

		if (strncasecmp(h, name, nlen) != 0 || h[nlen] != ':')
			continue;
		v = h + nlen + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		len = strlen(v);
		while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
			len--;
		*vlen = len;
		return v;
	}
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void az_string_to_sign(struct sb *out, const char *method, const char *const *hdr, size_t nhdr,
		       const char *account, const char *path, const struct http_param *q, size_t nq)
{
	static const char *const std[] = {
		"Content-Encoding", "Content-Language", "Content-Length", "Content-MD5",
		"Content-Type", "Date", "If-Modified-Since", "If-Match", "If-None-Match",
		"If-Unmodified-Since", "Range"
	};
	char **lines = xcalloc(nhdr + nq + 1, sizeof(*lines));
	size_t i, j, n = 0;

	sb_adds(out, method);
	sb_addc(out, '\n');
	for (i = 0; i < sizeof(std) / sizeof(std[0]); i++) {
		size_t vlen = 0;
		const char *v = header_value(hdr, nhdr, std[i], &vlen);

		/* since version 2015-02-21, a zero Content-Length is signed as empty */
		if (v && !(i == 2 && vlen == 1 && v[0] == '0'))
			sb_add(out, v, vlen);
		sb_addc(out, '\n');
	}

	/* x-ms-* headers: name lower-cased, value trimmed, sorted by name */
	for (i = 0; i < nhdr; i++) {
		const char *h = hdr[i], *colon = strchr(h, ':'), *v;
		struct sb line = SB_INIT;
		size_t len;

		if (colon == NULL || strncasecmp(h, "x-ms-", 5) != 0)
			continue;
		for (j = 0; h + j < colon; j++)
			sb_addc(&line, (char)tolower((unsigned char)h[j]));
		sb_addc(&line, ':');
		v = colon + 1;
		while (*v == ' ' || *v == '\t')
			v++;
		len = strlen(v);
		while (len > 0 && (v[len - 1] == ' ' || v[len - 1] == '\t'))
			len--;
		sb_add(&line, v, len);
		lines[n++] = sb_detach(&line);
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (i = 0; i < n; i++) {
		sb_adds(out, lines[i]);
		sb_addc(out, '\n');
		free(lines[i]);
	}

	/* the canonicalized resource */
	sb_addf(out, "/%s%s", account, path);
	n = 0;
	for (i = 0; i < nq; i++) {
		struct sb line = SB_INIT;

		for (j = 0; q[i].name[j]; j++)
			sb_addc(&line, (char)tolower((unsigned char)q[i].name[j]));
		sb_addc(&line, ':');
		sb_adds(&line, q[i].value ? q[i].value : "");
		lines[n++] = sb_detach(&line);
	}
	/* "name:value" sorted: by name, then by value, as ':' sorts below letters */
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (i = 0; i < n; i++) {
		size_t nlen = (size_t)(strchr(lines[i], ':') - lines[i]);

		if (i > 0 && strncmp(lines[i - 1], lines[i], nlen + 1) == 0) {
			sb_addc(out, ',');
			sb_adds(out, lines[i] + nlen + 1);
		} else {
			sb_addc(out, '\n');
			sb_adds(out, lines[i]);
		}
	}
	for (i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
}

void az_sign(struct sb *out, const unsigned char *key, size_t key_len, const char *msg, size_t len)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int mlen = 0;
	char b64[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];

	if (HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg, len, mac, &mlen) == NULL)
		mlen = 0;
	EVP_EncodeBlock((unsigned char *)b64, mac, (int)mlen);
	sb_adds(out, b64);
	OPENSSL_cleanse(mac, sizeof(mac));
}

int az_base64_decode(const char *s, unsigned char **out, size_t *len)
{
	size_t n = strlen(s), pad = 0, i;
	unsigned char *buf;
	int r;

	*out = NULL;
	*len = 0;
	if (n == 0 || n % 4 != 0)
		return -1;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!(isalnum((unsigned char)c) || c == '+' || c == '/' ||
		      (c == '=' && i >= n - 2)))
			return -1;
	}
	if (s[n - 1] == '=')
		pad++;
	if (s[n - 2] == '=')
		pad++;
	buf = xmalloc(n / 4 * 3 + 1);
	r = EVP_DecodeBlock(buf, (const unsigned char *)s, (int)n);
	if (r < 0 || (size_t)r < pad) {
		free(buf);
		return -1;
	}
	*out = buf;
	*len = (size_t)r - pad;
	return 0;
}

/* ---- credentials ---- */

void az_creds_free(struct az_creds *cr)
{
	free(cr->account);
	if (cr->key) {
		OPENSSL_cleanse(cr->key, cr->key_len);
		free(cr->key);
	}
	if (cr->sas) {
		OPENSSL_cleanse(cr->sas, strlen(cr->sas));
		free(cr->sas);
	}
	free(cr->endpoint);
	memset(cr, 0, sizeof(*cr));
}

/* The storage emulator's account key, which Microsoft publishes (Azurite's too). */
#define AZ_DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static char *sas_of(const char *s)
{
	return xstrdup(*s == '?' ? s + 1 : s);
}

int az_conn_parse(struct az_creds *cr, const char *conn, struct sb *why)
{
	char *copy = xstrdup(conn), *seg, *save = NULL;
	char *proto = NULL, *suffix = NULL, *blob = NULL;
	int ret = -1, dev = 0;

	for (seg = strtok_r(copy, ";", &save); seg; seg = strtok_r(NULL, ";", &save)) {
		char *eq = strchr(seg, '='), *name = seg, *v;

		while (*name == ' ' || *name == '\t' || *name == '\n' || *name == '\r')
			name++;
		if (*name == '\0')
			continue;
		if (eq == NULL) {
			/* the segment may hold a secret: name nothing of it */
			sb_adds(why, "a part has no '=' (expected Name=value;Name=value...)");
			goto out;
		}
		*eq = '\0';
		v = eq + 1;
		if (strcasecmp(name, "AccountName") == 0) {
			free(cr->account);
			cr->account = xstrdup(v);
		} else if (strcasecmp(name, "AccountKey") == 0) {
			if (cr->key) {
				OPENSSL_cleanse(cr->key, cr->key_len);
				free(cr->key);
			}
			if (az_base64_decode(v, &cr->key, &cr->key_len) < 0 || cr->key_len == 0) {
				sb_adds(why, "its AccountKey is not base64");
				goto out;
			}
		} else if (strcasecmp(name, "SharedAccessSignature") == 0) {
			free(cr->sas);
			cr->sas = sas_of(v);
		} else if (strcasecmp(name, "BlobEndpoint") == 0) {
			free(blob);
			blob = xstrdup(v);
		} else if (strcasecmp(name, "DefaultEndpointsProtocol") == 0) {
			free(proto);
			proto = xstrdup(v);
		} else if (strcasecmp(name, "EndpointSuffix") == 0) {
			free(suffix);
			suffix = xstrdup(v);
		} else if (strcasecmp(name, "UseDevelopmentStorage") == 0) {
			if (strcasecmp(v, "true") != 0 && strcasecmp(v, "false") != 0) {
				sb_addf(why, "UseDevelopmentStorage must be true or false, not '%s'", v);
				goto out;
			}
			dev = strcasecmp(v, "true") == 0;
		}
		/* QueueEndpoint, TableEndpoint, ...: not ours */
	}
	/*
	 * The emulator's well-known account, as Azure's own tools take
	 * "UseDevelopmentStorage=true": Azurite's devstoreaccount1 and its
	 * published key, its blob service on 127.0.0.1:10000 (what the string
	 * gives besides wins; destination.endpoint_url names another port)
	 */
	if (dev) {
		if (cr->account == NULL)
			cr->account = xstrdup("devstoreaccount1");
		if (cr->key == NULL && cr->sas == NULL &&
		    az_base64_decode(AZ_DEV_KEY, &cr->key, &cr->key_len) < 0) {
			sb_adds(why, "the emulator's key does not decode");
			goto out;
		}
		if (blob == NULL)
			blob = xstrdup("http://127.0.0.1:10000/devstoreaccount1");
	}
	if (cr->key == NULL && cr->sas == NULL) {
		sb_adds(why, "it gives neither an AccountKey nor a SharedAccessSignature");
		goto out;
	}
	if (proto && strcasecmp(proto, "http") != 0 && strcasecmp(proto, "https") != 0) {
		sb_addf(why, "DefaultEndpointsProtocol must be http or https, not '%s'", proto);
		goto out;
	}
	if (blob) {
		cr->endpoint = blob;
		blob = NULL;
	} else if (cr->account) {
		cr->endpoint = xasprintf("%s://%s.blob.%s", proto ? proto : "https", cr->account,
					 suffix ? suffix : "core.windows.net");
	}
	ret = 0;
out:
	OPENSSL_cleanse(copy, strlen(conn));
	free(copy);
	free(proto);
	free(suffix);
	free(blob);
	return ret;
}

int az_creds_load(struct az_creds *cr, const char *account, const char *url)
{
	const char *conn = getenv("AZURE_STORAGE_CONNECTION_STRING");
	const char *key = getenv("AZURE_STORAGE_KEY");
	const char *sas = getenv("AZURE_STORAGE_SAS_TOKEN");
	const char *env_account = getenv("AZURE_STORAGE_ACCOUNT");
	struct sb why = SB_INIT;

	memset(cr, 0, sizeof(*cr));
	if (account && *account == '\0')
		account = NULL;
	if (env_account && *env_account == '\0')
		env_account = NULL;
	if (conn && *conn) {
		cr->source = "AZURE_STORAGE_CONNECTION_STRING";
		if (az_conn_parse(cr, conn, &why) < 0) {
			err_msg("cannot open bucket '%s': AZURE_STORAGE_CONNECTION_STRING: %s", url, why.buf);
			sb_free(&why);
			az_creds_free(cr);
			return -1;
		}
		if (account && cr->account && strcmp(account, cr->account) != 0) {
			err_msg("cannot open bucket '%s': the destination's account_name '%s' is not the "
				"connection string's AccountName '%s'", url, account, cr->account);
			az_creds_free(cr);
			return -1;
		}
		if (cr->account == NULL && account)
			cr->account = xstrdup(account);
		return 0;
	}
	if (account == NULL)
		account = env_account;
	if (key && *key) {
		cr->source = "AZURE_STORAGE_KEY";
		if (az_base64_decode(key, &cr->key, &cr->key_len) < 0 || cr->key_len == 0) {
			err_msg("cannot open bucket '%s': AZURE_STORAGE_KEY is not base64 (an account key "
				"as the portal shows it)", url);
			az_creds_free(cr);
			return -1;
		}
	} else if (sas && *sas) {
		cr->source = "AZURE_STORAGE_SAS_TOKEN";
		cr->sas = sas_of(sas);
	} else {
		err_msg("cannot open bucket '%s': no Azure credentials: set "
			"AZURE_STORAGE_CONNECTION_STRING, AZURE_STORAGE_ACCOUNT and AZURE_STORAGE_KEY, "
			"or AZURE_STORAGE_SAS_TOKEN", url);
		return -1;
	}
	if (account)
		cr->account = xstrdup(account);
	return 0;
}

/* ---- where the container lives ---- */

void az_target_free(struct az_target *t)
{
	free(t->container);
	free(t->prefix);
	free(t->origin);
	free(t->base);
	memset(t, 0, sizeof(*t));
}

/* Azure's container names: 3-63 of a-z 0-9 '-', no leading, trailing or double '-'; or $root, $web, $logs. */
static int container_ok(const char *s, size_t n)
{
	size_t i;

	if ((n == 5 && memcmp(s, "$root", 5) == 0) || (n == 4 && memcmp(s, "$web", 4) == 0) ||
	    (n == 5 && memcmp(s, "$logs", 5) == 0))
		return 1;
	if (n < 3 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
			return 0;
		if (c == '-' && s[i + 1] == '-')
			return 0;
	}
	return 1;
}

/* An IP address, localhost, or a name without a dot (a compose service): the account goes in the path. */
static int ip_style(const char *host, size_t n)
{
	size_t i;

	if (n > 0 && host[0] == '[')
		return 1;
	if (n == 9 && strncasecmp(host, "localhost", 9) == 0)
		return 1;
	if (memchr(host, '.', n) == NULL)
		return 1;
	for (i = 0; i < n; i++)
		if (!(isdigit((unsigned char)host[i]) || host[i] == '.'))
			return 0;
	return 1;
}

static int account_ok(const char *s)
{
	size_t n = strlen(s), i;

	if (n < 1 || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '-')
			return 0;
	return 1;
}

int az_target_init(struct az_target *t, const char *url, const char *endpoint, char **account,
		   struct sb *why)
{
	const char *p, *slash, *host, *path;
	size_t clen, hlen, plen;
	struct sb prefix = SB_INIT;
	char *dir, *o;

	memset(t, 0, sizeof(*t));
	if (strncasecmp(url, "az://", 5) != 0) {
		sb_adds(why, "not an az:// url");
		return -1;
	}
	p = url + 5;
	slash = strchr(p, '/');
	clen = slash ? (size_t)(slash - p) : strlen(p);
	if (!container_ok(p, clen)) {
		sb_addf(why, "'%.*s' is not a container name (3 to 63 lower-case letters, digits and "
			"single hyphens, starting and ending with a letter or digit)", (int)clen, p);
		return -1;
	}
	t->container = xstrndup(p, clen);
	if (slash) {
		const char *q = slash + 1;
		size_t n = strlen(q);

		while (n > 0 && q[n - 1] == '/')
			n--;
		if (n > 0) {
			dir = xstrndup(q, n);
			if (!bucket_key_ok(dir)) {
				sb_addf(why, "the prefix '%s' has an empty, '.' or '..' component or a control character", dir);
				free(dir);
				goto fail;
			}
			sb_addf(&prefix, "%s/", dir);
			free(dir);
		}
	}
	t->prefix = prefix.buf ? sb_detach(&prefix) : xstrdup("");

	if (endpoint == NULL || *endpoint == '\0') {
		if (*account == NULL) {
			sb_adds(why, "no storage account: set AZURE_STORAGE_ACCOUNT, destination.account_name "
				"or AZURE_STORAGE_CONNECTION_STRING");
			goto fail;
		}
		if (!account_ok(*account)) {
			sb_addf(why, "'%s' is not a storage account name", *account);
			goto fail;
		}
		t->origin = xasprintf("https://%s.blob.core.windows.net", *account);
		t->base = xstrdup("");
		return 0;
	}
	if (strncasecmp(endpoint, "https://", 8) == 0)
		host = endpoint + 8;
	else if (strncasecmp(endpoint, "http://", 7) == 0)
		host = endpoint + 7;
	else {
		sb_addf(why, "the endpoint '%s' is not an http:// or https:// url", endpoint);
		goto fail;
	}
	path = host + strcspn(host, "/?#");
	if (*path == '?' || *path == '#') {
		sb_addf(why, "the endpoint '%s' has a query or fragment", endpoint);
		goto fail;
	}
	hlen = (size_t)(path - host);
	if (hlen == 0 || memchr(host, '@', hlen)) {
		sb_addf(why, "the endpoint '%s' names no host (or holds user information)", endpoint);
		goto fail;
	}
	plen = strlen(path);
	while (plen > 0 && path[plen - 1] == '/')
		plen--;
	t->origin = xasprintf("%.*s%.*s", (int)(host - endpoint), endpoint, (int)hlen, host);
	for (o = t->origin; *o != ':'; o++)
		*o = (char)tolower((unsigned char)*o);
	{
		/* the host part without the port */
		const char *colon = host[0] == '[' ? memchr(host, ']', hlen) : memchr(host, ':', hlen);
		size_t bare = colon ? (size_t)(colon - host) + (host[0] == '[') : hlen;

		if (ip_style(host, bare)) {
			if (plen > 1) {
				const char *seg = path + 1;
				size_t slen = strcspn(seg, "/");

				if (*account == NULL)
					*account = xstrndup(seg, slen);
				t->base = xstrndup(path, plen);
			} else if (*account) {
				t->base = xasprintf("/%s", *account);
			} else {
				sb_addf(why, "no storage account for the endpoint '%s': set "
					"AZURE_STORAGE_ACCOUNT or destination.account_name, or give the "
					"endpoint as http://host:port/ACCOUNT", endpoint);
				goto fail;
			}
		} else {
			t->base = xstrndup(path, plen);
			if (*account == NULL)
				*account = xstrndup(host, strcspn(host, "."));
		}
	}
	if (!account_ok(*account)) {
		sb_addf(why, "'%s' is not a storage account name", *account);
		goto fail;
	}
	return 0;
fail:
	sb_free(&prefix);
	az_target_free(t);
	return -1;
}

/* ---- XML ---- */

int az_xml_list(const char *xml, size_t len, char ***keys, size_t *nkeys, struct sb *next)
{
	return az_xml_list_versions(xml, len, keys, NULL, nkeys, next);
}

int az_xml_list_versions(const char *xml, size_t len, char ***keys, char ***versions,
			 size_t *nkeys, struct sb *next)
{
	struct sb name = SB_INIT, etag = SB_INIT;
	char **v = NULL, **ver = NULL;
	size_t n = 0, cap = 0, pos;

	*keys = NULL;
	if (versions)
		*versions = NULL;
	*nkeys = 0;
	sb_reset(next);
	if (xml == NULL || http_find(xml, len, 0, "<EnumerationResults") == len)
		return -1;
	pos = 0;
	for (;;) {
		size_t start = http_find(xml, len, pos, "<Blob>"), end, tag, p = 0;

		if (start == len)
			break;
		end = http_find(xml, len, start, "</Blob>");
		if (end == len)
			break;
		tag = http_find(xml, end, start, "<Name");
		if (tag < end) {
			size_t close = http_find(xml, end, tag, ">");
			int encoded = close < end &&
				      http_find(xml, close, tag, "Encoded=\"true\"") < close;

			if (!encoded && http_xml_next(xml + start, end - start, "Name", &p, &name)) {
				size_t e = 0;

				if (n + 1 >= cap) {
					cap = cap ? 2 * cap : 64;
					v = xrealloc(v, cap * sizeof(*v));
					if (versions)
						ver = xrealloc(ver, cap * sizeof(*ver));
				}
				if (versions)
					ver[n] = http_xml_next(xml + start, end - start, "Etag", &e, &etag)
						 ? xstrndup(etag.buf, etag.len) : xstrdup("");
				v[n++] = xstrndup(name.buf, name.len);
			}
		}
		pos = end + 7;
	}
	pos = 0;
	if (!http_xml_next(xml, len, "NextMarker", &pos, next))
		sb_reset(next);
	if (v == NULL)
		v = xmalloc(sizeof(*v));
	v[n] = NULL;
	*keys = v;
	if (versions) {
		if (ver == NULL)
			ver = xmalloc(sizeof(*ver));
		ver[n] = NULL;
		*versions = ver;
	}
	*nkeys = n;
	sb_free(&name);
	sb_free(&etag);
	return 0;
}

void az_xml_error(const char *xml, size_t len, struct sb *code, struct sb *msg)
{
	size_t pos = 0;

	sb_reset(code);
	sb_reset(msg);
	if (xml == NULL || len == 0)
		return;
	if (!http_xml_next(xml, len, "Code", &pos, code))
		sb_reset(code);
	pos = 0;
	if (http_xml_next(xml, len, "Message", &pos, msg) && msg->len) {
		/* "...\nRequestId:...\nTime:...": the first line is the message */
		size_t n = strcspn(msg->buf, "\r\n");

		msg->buf[n] = '\0';
		msg->len = n;
	} else {
		sb_reset(msg);
	}
}
