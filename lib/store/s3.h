/*
 * s3: the S3 store's parts that are worth testing on their own.  Only the
 * store (s3.c, s3_call.c, s3_multipart.c, s3_text.c, s3_creds.c; what the
 * first three share is in s3_impl.h; the encodings and XML it shares with
 * the Azure store are http_text.h's) and the unit tests include this
 * header; everyone else reaches S3 through bucket.h.
 */
#ifndef PIPE_S3_H
#define PIPE_S3_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "http_text.h"
#include "sb.h"

/*
 * The canonical query string: every name and value encoded with
 * http_uri_encode(keep_slash 0), "name=value" joined by '&', sorted bytewise
 * by encoded name then encoded value.  An empty value still gets its '='
 * ("uploads="), because curl signs the query exactly as sent.  Appended to
 * out (nothing when n is 0).
 */
void s3_query(struct sb *out, const struct http_param *params, size_t n);

/*
 * An S3 error body ("<Error><Code>NoSuchKey</Code><Message>...</Message>"):
 * its Code and Message into code and msg (reset first; empty when absent).
 * 1 when the body is an <Error> document, else 0.
 */
int s3_xml_error(const char *xml, size_t len, struct sb *code, struct sb *msg);

/*
 * A ListObjectsV2 page: every <Contents><Key> into keys (the keys as
 * stored: decoded from encoding-type=url when the page says
 * <EncodingType>url</EncodingType>), *truncated from <IsTruncated>, and
 * next (reset) from <NextContinuationToken>.  -1 when a key cannot be
 * decoded or the page is not a ListBucketResult, else 0.  keys is a
 * NULL-terminated array, freed by the caller with util_strv_free().
 */
int s3_xml_list(const char *xml, size_t len, char ***keys, size_t *nkeys,
		int *truncated, struct sb *next);

/*
 * s3_xml_list() with each key's <ETag> (unescaped, quotes and all; "" when
 * the page has none) at the same index of *versions (NULL-terminated,
 * freed with util_strv_free()); versions NULL: none.
 */
int s3_xml_list_versions(const char *xml, size_t len, char ***keys, char ***versions,
			 size_t *nkeys, int *truncated, struct sb *next);

/* The hex SHA-256 of data (64 characters and a NUL). */
void s3_sha256_hex(const void *data, size_t len, char hex[65]);

/* Where an s3:// or gs:// bucket lives and how requests reach it. */
struct s3_target {
	char *scheme;		/* "s3" or "gs", as in the url */
	char *bucket;
	char *prefix;		/* "" or "some/prefix/" (always ends in '/') */
	char *origin;		/* "https://b.s3.us-east-1.amazonaws.com", "http://127.0.0.1:9000" */
	char *base;		/* path before the key: "" (virtual-hosted) or "/b" (path-style), after any path of the endpoint */
	char *region;
	int path_style;
	int gcs;
};

/*
 * Work out s3_target from a bucket url "s3://bucket[/prefix]" or
 * "gs://bucket[/prefix]", an endpoint ("http[s]://host[:port][/path]", or
 * NULL for AWS or GCS itself), a region (NULL: "us-east-1", "auto" for gs)
 * and an addressing style ("path", "virtual", or NULL/"auto": path-style
 * for a custom endpoint, GCS and bucket names holding '.', else
 * virtual-hosted).  On error, returns -1 with the reason appended to why
 * and t zeroed.
 */
int s3_target_init(struct s3_target *t, const char *url, const char *endpoint,
		   const char *region, const char *addressing, struct sb *why);
void s3_target_free(struct s3_target *t);

/*
 * The url of key (NULL or "" for the bucket itself) with the target's
 * prefix in front, percent-encoded, and query (already canonical, or NULL).
 * Newly allocated.
 */
char *s3_target_url(const struct s3_target *t, const char *key, const char *query);

/* Credentials, and where they came from (for messages). */
struct s3_creds {
	char *id;
	char *secret;
	char *token;		/* session token, or NULL */
	time_t expires;		/* 0: never */
	const char *source;	/* "environment", "profile 'x'", "container", "instance metadata" */
};

/*
 * Settings taken from the environment and the AWS profile files:
 * AWS_PROFILE (default "default") looked up in AWS_SHARED_CREDENTIALS_FILE
 * (default ~/.aws/credentials) and AWS_CONFIG_FILE (default ~/.aws/config).
 */
struct s3_settings {
	char *profile;
	char *region;		/* AWS_REGION, AWS_DEFAULT_REGION, profile "region"; NULL when none */
	char *endpoint;		/* AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, profile s3.endpoint_url / endpoint_url; NULL when none */
	char *addressing;	/* DATASPOC_PIPE_S3_ADDRESSING, profile s3.addressing_style; NULL when none */
};

/* Fill st.  -1 after reporting an unreadable profile file. */
int s3_settings_load(struct s3_settings *st);
void s3_settings_free(struct s3_settings *st);

/*
 * One value from an AWS-style INI file: key in section (for the config
 * file, "profile NAME", or "default").  A nested key is "s3.endpoint_url"
 * for
 *     s3 =
 *       endpoint_url = ...
 * 1 found (*value newly allocated), 0 not found (or no such file), -1
 * the file cannot be read (reported).
 */
int s3_ini_get(const char *file, const char *section, const char *key, char **value);

/*
 * Find credentials in the order of the AWS CLI: AWS_ACCESS_KEY_ID /
 * AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN (for gcs first
 * GOOGLE_HMAC_ACCESS_ID / GOOGLE_HMAC_SECRET), the profile in the
 * credentials file then the config file, container credentials
 * (AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI), then EC2 instance
 * metadata (IMDSv2; AWS_EC2_METADATA_DISABLED=true skips it).  0 found;
 * -1 after reporting why none could be had.
 */
int s3_creds_load(struct s3_creds *c, const struct s3_settings *st, int gcs);
void s3_creds_free(struct s3_creds *c);

/*
 * Credentials from a JSON document as the container endpoint and instance
 * metadata serve them ({"AccessKeyId", "SecretAccessKey", "Token",
 * "Expiration"}).  0 or -1 (nothing set).
 */
int s3_creds_from_json(struct s3_creds *c, const char *json, size_t len);

#endif
