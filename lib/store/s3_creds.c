/*
 * s3_creds: credentials, region and endpoint, found where the AWS CLI
 * looks for them: the environment, the profile files, the container
 * credentials endpoint, EC2 instance metadata (IMDSv2).
 */
#include "s3.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jv.h>

#include "err.h"
#include "util.h"

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static char *home_file(const char *var, const char *rel)
{
	const char *v = env(var), *home;

	if (v)
		return xstrdup(v);
	home = env("HOME");
	return home ? xasprintf("%s/%s", home, rel) : NULL;
}

/* Trim blanks at both ends of s[0..*len); returns the new start. */
static const char *trim(const char *s, size_t *len)
{
	while (*len > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		(*len)--;
	}
	while (*len > 0 && (s[*len - 1] == ' ' || s[*len - 1] == '\t' || s[*len - 1] == '\r'))
		(*len)--;
	return s;
}

int s3_ini_get(const char *file, const char *section, const char *key, char **value)
{
	FILE *f;
	char *line = NULL;
	size_t cap = 0;
	ssize_t got;
	int in_section = 0, ret = 0;
	char nest[128] = "";

	*value = NULL;
	f = fopen(file, "r");
	if (f == NULL) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		err_msg("cannot read '%s':", file);
		return -1;
	}
	while ((got = getline(&line, &cap, f)) > 0) {
		size_t len = (size_t)got, klen, vlen;
		const char *s, *eq, *k, *v;
		int indented = line[0] == ' ' || line[0] == '\t';

		while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
			len--;
		s = trim(line, &len);
		if (len == 0 || s[0] == '#' || s[0] == ';')
			continue;
		if (s[0] == '[' && !indented) {
			const char *name;
			size_t nlen;

			nest[0] = '\0';
			if (s[len - 1] != ']') {
				in_section = 0;
				continue;
			}
			nlen = len - 2;
			name = trim(s + 1, &nlen);
			in_section = strlen(section) == nlen && strncmp(name, section, nlen) == 0;
			continue;
		}
		if (!in_section)
			continue;
		eq = memchr(s, '=', len);
		if (eq == NULL)
			continue;
		klen = (size_t)(eq - s);
		k = trim(s, &klen);
		vlen = len - (size_t)(eq + 1 - s);
		v = trim(eq + 1, &vlen);
		if (!indented) {
			nest[0] = '\0';
			if (vlen == 0 && klen < sizeof(nest)) {
				/* "s3 =" opens nested keys on the indented lines below */
				memcpy(nest, k, klen);
				nest[klen] = '\0';
				continue;
			}
			if (strlen(key) == klen && strncmp(k, key, klen) == 0) {
				free(*value);
				*value = xstrndup(v, vlen);
				ret = 1;
			}
		} else if (nest[0]) {
			size_t nlen = strlen(nest);

			if (strlen(key) == nlen + 1 + klen && strncmp(key, nest, nlen) == 0 &&
			    key[nlen] == '.' && strncmp(key + nlen + 1, k, klen) == 0) {
				free(*value);
				*value = xstrndup(v, vlen);
				ret = 1;
			}
		}
	}
	if (ferror(f)) {
		err_msg("cannot read '%s':", file);
		free(*value);
		*value = NULL;
		ret = -1;
	}
	free(line);
	fclose(f);
	return ret;
}

/* key of the profile in the config file ("[default]" or "[profile NAME]"). */
static int config_get(const char *file, const char *profile, const char *key, char **value)
{
	char *section;
	int r;

	if (file == NULL) {
		*value = NULL;
		return 0;
	}
	if (strcmp(profile, "default") == 0) {
		r = s3_ini_get(file, "default", key, value);
		if (r != 0)
			return r;
	}
	section = xasprintf("profile %s", profile);
	r = s3_ini_get(file, section, key, value);
	free(section);
	return r;
}

void s3_settings_free(struct s3_settings *st)
{
	if (st == NULL)
		return;
	free(st->profile);
	free(st->region);
	free(st->endpoint);
	free(st->addressing);
	memset(st, 0, sizeof(*st));
}

int s3_settings_load(struct s3_settings *st)
{
	char *config = home_file("AWS_CONFIG_FILE", ".aws/config");
	const char *v;
	int ret = -1;

	memset(st, 0, sizeof(*st));
	st->profile = xstrdup(env("AWS_PROFILE") ? env("AWS_PROFILE") :
			      env("AWS_DEFAULT_PROFILE") ? env("AWS_DEFAULT_PROFILE") : "default");
	if ((v = env("AWS_REGION")) || (v = env("AWS_DEFAULT_REGION")))
		st->region = xstrdup(v);
	else if (config_get(config, st->profile, "region", &st->region) < 0)
		goto out;
	if ((v = env("AWS_ENDPOINT_URL_S3")) || (v = env("AWS_ENDPOINT_URL")))
		st->endpoint = xstrdup(v);
	else if (env("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS") == NULL) {
		int r = config_get(config, st->profile, "s3.endpoint_url", &st->endpoint);

		if (r == 0)
			r = config_get(config, st->profile, "endpoint_url", &st->endpoint);
		if (r < 0)
			goto out;
	}
	if ((v = env("DATASPOC_PIPE_S3_ADDRESSING")))
		st->addressing = xstrdup(v);
	else if (config_get(config, st->profile, "s3.addressing_style", &st->addressing) < 0)
		goto out;
	ret = 0;
out:
	if (ret < 0)
		s3_settings_free(st);
	free(config);
	return ret;
}

void s3_creds_free(struct s3_creds *c)
{
	if (c == NULL)
		return;
	free(c->id);
	if (c->secret) {
		/* do not leave the secret in freed memory */
		volatile char *p = c->secret;

		while (*p)
			*p++ = '\0';
	}
	free(c->secret);
	free(c->token);
	memset(c, 0, sizeof(*c));
}

static char *json_str(jv obj, const char *name)
{
	jv v = jv_object_get(jv_copy(obj), jv_string(name));
	char *s = NULL;

	if (jv_get_kind(v) == JV_KIND_STRING && jv_string_length_bytes(jv_copy(v)) > 0)
		s = xstrdup(jv_string_value(v));
	jv_free(v);
	return s;
}

int s3_creds_from_json(struct s3_creds *c, const char *json, size_t len)
{
	jv obj;
	char *exp;

	if (len > (size_t)1 << 20)
		return -1;
	obj = jv_parse_sized(json, (int)len);
	if (jv_get_kind(obj) != JV_KIND_OBJECT) {
		jv_free(obj);
		return -1;
	}
	c->id = json_str(obj, "AccessKeyId");
	c->secret = json_str(obj, "SecretAccessKey");
	c->token = json_str(obj, "Token");
	if (c->token == NULL)
		c->token = json_str(obj, "SessionToken");
	exp = json_str(obj, "Expiration");
	jv_free(obj);
	c->expires = 0;
	if (exp) {
		/* "2026-01-01T00:00:00Z", sometimes with fractions of a second */
		char buf[32];
		size_t n = strcspn(exp, ".Z");

		if (n < 20) {
			snprintf(buf, sizeof(buf), "%.*sZ", (int)n, exp);
			c->expires = util_parse_iso_time(buf);
			if (c->expires == (time_t)-1)
				c->expires = 0;
		}
		free(exp);
	}
	if (c->id == NULL || c->secret == NULL) {
		s3_creds_free(c);
		return -1;
	}
	return 0;
}

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
	struct sb *sb = arg;

	if (sb->len + size * n > (size_t)1 << 20)
		return 0;
	sb_add(sb, data, size * n);
	return size * n;
}

/*
 * One small HTTP request for credentials: method GET or PUT (empty body),
 * headers, short timeouts.  The HTTP status, or -1 with curl's reason in why.
 */
static long fetch(const char *method, const char *url, struct curl_slist *headers,
		  long timeout_ms, struct sb *out, struct sb *why)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *h = curl_easy_init();
	CURLcode rc;
	long status = -1;

	sb_reset(out);
	if (h == NULL) {
		sb_adds(why, "cannot start curl");
		return -1;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROXY, "");
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 2 * timeout_ms);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
	if (strcmp(method, "PUT") == 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
	}
	rc = curl_easy_perform(h);
	if (rc != CURLE_OK) {
		sb_reset(why);
		sb_adds(why, errbuf[0] ? errbuf : curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	}
	curl_easy_cleanup(h);
	return status;
}

/* Loopback and the container agents' addresses may be plain http. */
static int container_host_ok(const char *url)
{
	static const char *const hosts[] = {
		"http://127.", "http://localhost:", "http://localhost/", "http://[::1]",
		"http://169.254.170.2:", "http://169.254.170.2/", "http://169.254.170.23",
		"http://[fd00:ec2::23]",
	};
	size_t i;

	if (strncasecmp(url, "https://", 8) == 0)
		return 1;
	for (i = 0; i < sizeof(hosts) / sizeof(hosts[0]); i++) {
		if (strncasecmp(url, hosts[i], strlen(hosts[i])) == 0)
			return 1;
	}
	return 0;
}

/* 0 found, 1 not configured, -1 configured but failed (reported). */
static int from_container(struct s3_creds *c)
{
	const char *rel = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	const char *tokfile = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *tok = env("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	struct curl_slist *h = NULL;
	struct sb body = SB_INIT, why = SB_INIT, token = SB_INIT;
	char *url;
	long status;
	int ret = -1;

	if (rel == NULL && full == NULL)
		return 1;
	url = rel ? xasprintf("http://169.254.170.2%s", rel) : xstrdup(full);
	if (!rel && !container_host_ok(url)) {
		err_msg("cannot use container credentials from '%s': plain http only to a "
			"loopback or container agent address", url);
		goto out;
	}
	if (tokfile) {
		FILE *f = fopen(tokfile, "r");
		char buf[4096];
		size_t n;

		if (f == NULL) {
			err_msg("cannot read '%s':", tokfile);
			goto out;
		}
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
			n--;
		sb_adds(&token, "Authorization: ");
		sb_add(&token, buf, n);
	} else if (tok) {
		sb_addf(&token, "Authorization: %s", tok);
	}
	if (token.len)
		h = curl_slist_append(h, token.buf);
	status = fetch("GET", url, h, 2000, &body, &why);
	if (status != 200) {
		if (status < 0)
			err_msg("cannot get container credentials from '%s': %s", url, why.buf);
		else
			err_msg("cannot get container credentials from '%s': HTTP %ld", url, status);
		goto out;
	}
	if (s3_creds_from_json(c, body.buf, body.len) < 0) {
		err_msg("cannot get container credentials from '%s': the answer has no "
			"AccessKeyId and SecretAccessKey", url);
		goto out;
	}
	c->source = "container";
	ret = 0;
out:
	curl_slist_free_all(h);
	if (token.buf)
		memset(token.buf, 0, token.len);
	sb_free(&token);
	sb_free(&body);
	sb_free(&why);
	free(url);
	return ret;
}

/* 0 found, 1 no instance metadata here, -1 failed (reported). */
static int from_imds(struct s3_creds *c)
{
	const char *d = env("AWS_EC2_METADATA_DISABLED");
	const char *base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	struct curl_slist *h = NULL;
	struct sb body = SB_INIT, why = SB_INIT, hdr = SB_INIT;
	char *url = NULL, *role = NULL;
	size_t blen;
	long status;
	int ret = 1;

	if (d && strcasecmp(d, "true") == 0)
		return 1;
	if (base == NULL)
		base = "http://169.254.169.254";
	blen = strlen(base);
	while (blen > 0 && base[blen - 1] == '/')
		blen--;
	url = xasprintf("%.*s/latest/api/token", (int)blen, base);
	h = curl_slist_append(h, "X-aws-ec2-metadata-token-ttl-seconds: 21600");
	status = fetch("PUT", url, h, 1000, &body, &why);
	curl_slist_free_all(h);
	h = NULL;
	if (status != 200 || body.len == 0)
		goto out;	/* not on EC2, or IMDS off: not an error */
	sb_addf(&hdr, "X-aws-ec2-metadata-token: %s", body.buf);
	h = curl_slist_append(h, hdr.buf);
	free(url);
	url = xasprintf("%.*s/latest/meta-data/iam/security-credentials/", (int)blen, base);
	status = fetch("GET", url, h, 1000, &body, &why);
	if (status == 404) {
		err_msg("no credentials in the instance metadata: the instance has no IAM role");
		ret = -1;
		goto out;
	}
	if (status != 200 || body.len == 0) {
		err_msg("cannot get credentials from the instance metadata: %s",
			status < 0 ? why.buf : "no role name");
		ret = -1;
		goto out;
	}
	role = xstrndup(body.buf, strcspn(body.buf, "\r\n"));
	free(url);
	url = xasprintf("%.*s/latest/meta-data/iam/security-credentials/%s", (int)blen, base, role);
	status = fetch("GET", url, h, 1000, &body, &why);
	if (status != 200 || s3_creds_from_json(c, body.buf, body.len) < 0) {
		if (status < 0)
			err_msg("cannot get the credentials of role '%s' from the instance metadata: %s", role, why.buf);
		else
			err_msg("cannot get the credentials of role '%s' from the instance metadata: HTTP %ld", role, status);
		ret = -1;
		goto out;
	}
	c->source = "instance metadata";
	ret = 0;
out:
	curl_slist_free_all(h);
	sb_free(&body);
	sb_free(&why);
	sb_free(&hdr);
	free(url);
	free(role);
	return ret;
}

/* 0 found, 1 not in this profile, -1 error (reported). */
static int from_profile(struct s3_creds *c, const struct s3_settings *st)
{
	char *cred = home_file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials");
	char *config = home_file("AWS_CONFIG_FILE", ".aws/config");
	char *other = NULL;
	int r, ret = -1;

	if (cred) {
		r = s3_ini_get(cred, st->profile, "aws_access_key_id", &c->id);
		if (r < 0)
			goto out;
		if (r == 1) {
			if (s3_ini_get(cred, st->profile, "aws_secret_access_key", &c->secret) < 0 ||
			    s3_ini_get(cred, st->profile, "aws_session_token", &c->token) < 0)
				goto out;
			if (c->secret == NULL) {
				err_msg("profile '%s' in '%s' has aws_access_key_id but no aws_secret_access_key",
					st->profile, cred);
				goto out;
			}
			ret = 0;
			goto out;
		}
	}
	if (config) {
		r = config_get(config, st->profile, "aws_access_key_id", &c->id);
		if (r < 0)
			goto out;
		if (r == 1) {
			if (config_get(config, st->profile, "aws_secret_access_key", &c->secret) < 0 ||
			    config_get(config, st->profile, "aws_session_token", &c->token) < 0)
				goto out;
			if (c->secret == NULL) {
				err_msg("profile '%s' in '%s' has aws_access_key_id but no aws_secret_access_key",
					st->profile, config);
				goto out;
			}
			ret = 0;
			goto out;
		}
		/* Say so rather than fall through to the instance's role. */
		if (config_get(config, st->profile, "role_arn", &other) == 1 ||
		    config_get(config, st->profile, "sso_session", &other) == 1 ||
		    config_get(config, st->profile, "sso_start_url", &other) == 1 ||
		    config_get(config, st->profile, "credential_process", &other) == 1) {
			err_msg("profile '%s' in '%s' gets its credentials through a role, SSO or a "
				"process, which dataspoc-pipe does not do itself: export them first, "
				"as with eval \"$(aws configure export-credentials --profile %s --format env)\"",
				st->profile, config, st->profile);
			goto out;
		}
	}
	ret = 1;
out:
	if (ret != 0) {
		free(c->id);
		free(c->secret);
		free(c->token);
		c->id = c->secret = c->token = NULL;
	}
	free(other);
	free(cred);
	free(config);
	return ret;
}

int s3_creds_load(struct s3_creds *c, const struct s3_settings *st, int gcs)
{
	const char *id, *secret;
	int r;

	memset(c, 0, sizeof(*c));
	if (gcs && (id = env("GOOGLE_HMAC_ACCESS_ID")) && (secret = env("GOOGLE_HMAC_SECRET"))) {
		c->id = xstrdup(id);
		c->secret = xstrdup(secret);
		c->source = "environment (GOOGLE_HMAC_ACCESS_ID)";
		return 0;
	}
	id = env("AWS_ACCESS_KEY_ID");
	secret = env("AWS_SECRET_ACCESS_KEY");
	if (id && secret) {
		c->id = xstrdup(id);
		c->secret = xstrdup(secret);
		if (env("AWS_SESSION_TOKEN"))
			c->token = xstrdup(env("AWS_SESSION_TOKEN"));
		c->source = "environment";
		return 0;
	}
	if (id || secret) {
		err_msg("%s is set but %s is not", id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
			id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
		return -1;
	}
	r = from_profile(c, st);
	if (r <= 0) {
		if (r == 0)
			c->source = "profile";
		return r;
	}
	r = from_container(c);
	if (r <= 0)
		return r;
	r = from_imds(c);
	if (r <= 0)
		return r;
	err_msg("no credentials for %s: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY%s, or "
		"a profile (AWS_PROFILE, now '%s') in ~/.aws/credentials",
		gcs ? "gs://" : "s3://", gcs ? " (or GOOGLE_HMAC_ACCESS_ID and GOOGLE_HMAC_SECRET)" : "",
		st->profile);
	return -1;
}
