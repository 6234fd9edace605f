/*
 * azure_impl: what the files of the Azure Blob Storage store share; only
 * they and the unit tests include this header.  The store is cut along
 * its seams:
 *
 *	azure.c		opening a bucket, the object operations, bucket_ops,
 *			the streaming writer (Put Block, Put Block List)
 *	azure_call.c	one request: built, signed (SharedKey) or carrying
 *			the SAS, sent, retried, reported (the transport rules
			it shares with the S3 store, and the request and
			answer, struct http_call: http.h)
 *	azure_auth.c	credentials, connection strings, endpoints, the
 *			SharedKey string-to-sign, List Blobs pages (the
 *			encodings and XML it shares with the S3 store:
 *			http_text.h)
 */
#ifndef PIPE_AZURE_IMPL_H
#define PIPE_AZURE_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <curl/curl.h>

#include "bucket.h"
#include "bucket_impl.h"
#include "http.h"
#include "http_text.h"
#include "sb.h"

#define AZ_VERSION "2021-12-02"	/* x-ms-version sent with every request */

enum {
	AZ_DEFAULT_BLOCK = 8 << 20,
	AZ_MIN_BLOCK = 64 << 10,
	AZ_MAX_BLOCKS = 50000,
	AZ_DEFAULT_RETRIES = 5,
	AZ_DEFAULT_PAGE = 5000	/* List Blobs' own maximum */
};
#define AZ_MAX_BLOCK ((uint64_t)4000 << 20)

/* Credentials and where the account lives, before the url is known. */
struct az_creds {
	char *account;		/* storage account name, or NULL */
	unsigned char *key;	/* decoded account key, or NULL (SAS) */
	size_t key_len;
	char *sas;		/* SAS query, without '?', or NULL */
	char *endpoint;		/* blob endpoint (connection string), or NULL */
	const char *source;	/* for messages: "AZURE_STORAGE_CONNECTION_STRING", ... */
};

/* Where a container lives and how requests reach it. */
struct az_target {
	char *container;
	char *prefix;		/* "" or "some/prefix/" */
	char *origin;		/* "https://acct.blob.core.windows.net", "http://127.0.0.1:10000" */
	char *base;		/* "" or "/devstoreaccount1": the path before the container */
};

struct az_bucket {
	struct bucket base;
	struct az_creds cr;
	struct az_target t;
	CURL *h;
	int retries;
	long timeout;		/* seconds without a byte moved: the attempt failed */
	size_t block_size;
	long page_size;		/* List Blobs' maxresults */
	long copy_wait_ms;	/* a pending Copy Blob is waited for this long at most */
	char errbuf[CURL_ERROR_SIZE];
};

static inline struct az_bucket *azb(struct bucket *b)
{
	return (struct az_bucket *)b;
}

static inline int az_ok(const struct http_call *c)
{
	return c->status >= 200 && c->status < 300;
}

/* A 404 that means "no such blob", not "no such container". */
static inline int az_no_blob(const struct http_call *c)
{
	return c->status == 404 && !http_code_is(c, "ContainerNotFound") &&
	       !http_code_is(c, "ResourceNotFound");
}

/* ---- azure_call.c ---- */

/* Add a query parameter (name and value must outlive the call). */
void az_call_param(struct http_call *c, const char *name, const char *value);
/*
 * Run c, retrying what may pass (5xx but 501, 408, 429, ServerBusy,
 * OperationTimedOut, timeouts, resets) with exponential backoff and
 * jitter.  Returns c->status (or -1: no answer, c->why says why).
 */
long az_perform(struct az_bucket *z, struct http_call *c);
/* One line: what failed, on which blob (key, or NULL: c's), and the store's words. */
void az_report(const struct az_bucket *z, const struct http_call *c, const char *key);
/* "az://container/prefix/key" for messages, newly allocated. */
char *az_subject(const struct az_bucket *z, const char *key);
/* The url of key (NULL: the container), with the SAS when with_sas.  Newly allocated. */
char *az_url(const struct az_bucket *z, const char *key, const struct http_call *c, int with_sas);

/* ---- azure_auth.c ---- */

/*
 * The SharedKey string-to-sign of a request (Blob service, version
 * 2009-09-19 and later): the verb, the values of the eleven standard
 * headers found in hdr ("Name: value", any case; Content-Length "0" is
 * empty), the x-ms-* headers lower-cased, trimmed and sorted, then the
 * canonicalized resource: "/" account path (as sent, encoded), and each
 * query parameter "\nname:value", names lower-cased and sorted, the values
 * of one name sorted and joined by ','.  Appended to out.
 */
void az_string_to_sign(struct sb *out, const char *method, const char *const *hdr, size_t nhdr,
		       const char *account, const char *path, const struct http_param *q, size_t nq);
/* Base64 of HMAC-SHA256(key, msg) into out (appended). */
void az_sign(struct sb *out, const unsigned char *key, size_t key_len, const char *msg, size_t len);
/*
 * Decode base64 s into a new buffer (*out, *len).  0, or -1 when s is
 * not base64.
 */
int az_base64_decode(const char *s, unsigned char **out, size_t *len);

/*
 * Credentials in the order of Azure's own tools:
 * AZURE_STORAGE_CONNECTION_STRING (AccountName, AccountKey, BlobEndpoint,
 * DefaultEndpointsProtocol, EndpointSuffix, SharedAccessSignature), then
 * AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY, then
 * AZURE_STORAGE_SAS_TOKEN (with AZURE_STORAGE_ACCOUNT, or the account the
 * endpoint names).  account (destination.account_name, or NULL) names the
 * account when the environment does not.  0, or -1 after reporting why
 * (never a secret).
 */
int az_creds_load(struct az_creds *cr, const char *account, const char *url);
/* Parse one connection string into cr (used by az_creds_load).  0, or -1 with why. */
int az_conn_parse(struct az_creds *cr, const char *conn, struct sb *why);
void az_creds_free(struct az_creds *cr);

/*
 * The target of url "az://container[/prefix]", reached at endpoint (the
 * account's blob endpoint: "https://acct.blob.core.windows.net",
 * "http://127.0.0.1:10000/devstoreaccount1"; an IP address or localhost
 * without a path gets "/ACCOUNT" as its path, as Azurite wants) or, when
 * NULL, at https://ACCOUNT.blob.core.windows.net.  *account, when NULL,
 * is taken from the endpoint (first path segment of an IP-style one, else
 * the first label of the host).  0, or -1 with why.
 */
int az_target_init(struct az_target *t, const char *url, const char *endpoint, char **account,
		   struct sb *why);
void az_target_free(struct az_target *t);

/*
 * A List Blobs page: every <Blob><Name> into keys (names the service had
 * to encode, Encoded="true", are passed over: no caller can name them),
 * and the <NextMarker> into next (reset; empty on the last page).  -1
 * when the page is not an EnumerationResults, else 0.  keys is
 * NULL-terminated, freed with util_strv_free().
 */
int az_xml_list(const char *xml, size_t len, char ***keys, size_t *nkeys, struct sb *next);

/*
 * az_xml_list() with each blob's <Properties><Etag> ("" when it has none) at
 * the same index of *versions (NULL-terminated, freed with util_strv_free());
 * versions NULL: none.
 */
int az_xml_list_versions(const char *xml, size_t len, char ***keys, char ***versions,
			 size_t *nkeys, struct sb *next);

/* An error body's <Code> and <Message> (its first line) into code and msg (reset). */
void az_xml_error(const char *xml, size_t len, struct sb *code, struct sb *msg);

#endif
