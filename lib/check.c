/* check: probing a bucket, looking at the tap's config. */
#include "check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "layout.h"
#include "util.h"

static int probe_steps(struct bucket *b, const char *key, const char *key2,
		       const char *body, int *conditional)
{
	struct sb got = SB_INIT;
	char **keys = NULL;
	size_t n = 0, i, len = strlen(body);
	int r, found = 0, ret = -1;

	if (bucket_put(b, key, body, len) != 0) {
		err_msg("bucket probe: cannot write '%s/%s'", bucket_url(b), key);
		goto out;
	}
	r = bucket_get(b, key, &got);
	if (r != 0 || got.len != len || memcmp(got.buf, body, len) != 0) {
		if (r >= 0)
			err_msg("bucket probe: read back '%s/%s': %s", bucket_url(b), key,
				r == 1 ? "not found right after it was written" : "differs from what was written");
		else
			err_msg("bucket probe: cannot read back '%s/%s'", bucket_url(b), key);
		goto out;
	}
	if (bucket_list(b, LAYOUT_PROBE_PREFIX, &keys, &n) != 0) {
		err_msg("bucket probe: cannot list '%s/%s'", bucket_url(b), LAYOUT_PROBE_PREFIX);
		goto out;
	}
	for (i = 0; i < n; i++)
		found |= strcmp(keys[i], key) == 0;
	if (!found) {
		err_msg("bucket probe: listing '%s/%s' does not show '%s'", bucket_url(b), LAYOUT_PROBE_PREFIX, key);
		goto out;
	}
	if (bucket_delete(b, key) != 0) {
		err_msg("bucket probe: cannot delete '%s/%s'", bucket_url(b), key);
		goto out;
	}
	r = bucket_exists(b, key);
	if (r != 0) {
		if (r > 0)
			err_msg("bucket probe: '%s/%s' is still there after it was deleted", bucket_url(b), key);
		goto out;
	}
	r = bucket_put_new(b, key2, body, len);
	if (r != 0) {
		if (r > 0)
			err_msg("bucket probe: conditional create of '%s/%s' found an object that was not there",
				bucket_url(b), key2);
		else
			err_msg("bucket probe: cannot create '%s/%s'", bucket_url(b), key2);
		goto out;
	}
	r = bucket_put_new(b, key2, body, len);
	if (r != 1) {
		if (r == 0)
			err_msg("bucket probe: a second create of '%s/%s' was not refused: run locks cannot work",
				bucket_url(b), key2);
		else
			err_msg("bucket probe: cannot try a second create of '%s/%s'", bucket_url(b), key2);
		goto out;
	}
	/* bucket_put_new() may emulate it; ask whether the store itself refuses */
	r = bucket_probe_conditional(b, key2);
	if (r < 0) {
		err_msg("bucket probe: cannot ask '%s' about conditional creates", bucket_url(b));
		goto out;
	}
	*conditional = r == 1;
	ret = 0;
out:
	util_strv_free(keys);
	sb_free(&got);
	return ret;
}

int check_probe(struct bucket *b, int *conditional)
{
	char *run_id = util_new_run_id();
	char *key = xasprintf(LAYOUT_PROBE_PREFIX "%s-%ld", run_id, (long)getpid());
	char *key2 = xasprintf("%s.new", key);
	char *body = xasprintf("dataspoc-pipe bucket probe %s from %s\n", run_id, util_hostname());
	int ret;

	*conditional = 0;
	ret = probe_steps(b, key, key2, body, conditional);
	/* the probe leaves nothing behind, whatever failed */
	if (bucket_delete(b, key) != 0 || bucket_delete(b, key2) != 0)
		ret = -1;
	free(run_id);
	free(key);
	free(key2);
	free(body);
	return ret;
}

/* ---- secrets ---- */

int check_secret_name(const char *name)
{
	static const char *const parts[] = {
		"password", "passwd", "secret", "token", "credential", "private_key",
		"api_key", "apikey", "access_key", "client_key", "auth_key", "passphrase", NULL
	};
	static const char *const whole[] = { "key", "pass", "pwd", NULL };
	char *low = xstrdup(name), *p;
	int hit = 0, i;

	for (p = low; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		else if (*p == '-')
			*p = '_';
	}
	for (i = 0; parts[i] && !hit; i++)
		hit = strstr(low, parts[i]) != NULL;
	for (i = 0; whole[i] && !hit; i++)
		hit = strcmp(low, whole[i]) == 0;
	free(low);
	return hit;
}

/*
 * The secret-looking members of v (at any depth, non-empty strings): their
 * names into names (", "-separated) and their decoded values into vals
 * (NUL-separated); either may be NULL.
 */
static void find_secrets(const struct json_span *v, struct sb *names, struct sb *vals, int depth)
{
	struct json_span key, val;
	size_t pos = 0;

	if (depth > 64)
		return;
	if (v->type == JSON_ARRAY) {
		while (json_array_next(v, &pos, &val))
			find_secrets(&val, names, vals, depth + 1);
		return;
	}
	if (v->type != JSON_OBJECT)
		return;
	while (json_object_next(v, &pos, &key, &val)) {
		struct sb name = SB_INIT, value = SB_INIT;

		json_string_decode(&key, &name);
		if (val.type == JSON_STRING && val.len > 2 && name.buf && strlen(name.buf) == name.len &&
		    check_secret_name(name.buf)) {
			if (names) {
				if (names->len)
					sb_adds(names, ", ");
				sb_adds(names, name.buf);
			}
			json_string_decode(&val, &value);
			if (vals && value.len && strlen(value.buf) == value.len)
				sb_add(vals, value.buf, value.len + 1);
		}
		sb_free(&name);
		sb_free(&value);
		find_secrets(&val, names, vals, depth + 1);
	}
}

/* Replace every occurrence of needle in text by "***". */
static void mask_value(struct sb *text, const char *needle)
{
	size_t n = strlen(needle);
	struct sb out = SB_INIT;
	const char *p, *hit;

	if (n == 0 || text->len == 0 || !memmem(text->buf, text->len, needle, n))
		return;
	for (p = text->buf; (hit = memmem(p, text->len - (size_t)(p - text->buf), needle, n)); p = hit + n) {
		sb_add(&out, p, (size_t)(hit - p));
		sb_adds(&out, "***");
	}
	sb_add(&out, p, text->len - (size_t)(p - text->buf));
	sb_free(text);
	*text = out;
}

static int word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/*
 * "NAME=value", "NAME: value", "\"NAME\": \"value\"" with a secret-looking
 * NAME, and the password of "scheme://user:password@host": value masked.
 */
static void mask_patterns(struct sb *text)
{
	struct sb out = SB_INIT;
	size_t i = 0, len = text->len;
	const char *s = text->buf;

	while (i < len) {
		size_t w = i, e, v, ve;
		unsigned char q = 0;

		if (!word_byte((unsigned char)s[i])) {
			if (s[i] == ':' && i + 2 < len && s[i + 1] == '/' && s[i + 2] == '/') {
				/* scheme://user:password@ */
				size_t u = i + 3, c = 0, at;

				for (at = u; at < len && s[at] != '@' && s[at] != '/' && s[at] != ' ' &&
				     s[at] != '\n'; at++)
					if (s[at] == ':' && !c)
						c = at;
				if (at < len && s[at] == '@' && c && c + 1 < at) {
					sb_add(&out, s + i, c + 1 - i);
					sb_adds(&out, "***");
					i = at;
					continue;
				}
			}
			sb_addc(&out, s[i++]);
			continue;
		}
		while (i < len && word_byte((unsigned char)s[i]))
			i++;
		e = i;
		v = i;
		if (v < len && s[v] == '"')
			v++;
		while (v < len && s[v] == ' ')
			v++;
		if (v < len && (s[v] == '=' || s[v] == ':') && !(s[v] == ':' && v + 1 < len && s[v + 1] == '/')) {
			char *name = xstrndup(s + w, e - w);
			int secret = check_secret_name(name);

			free(name);
			v++;
			while (v < len && s[v] == ' ')
				v++;
			if (v < len && (s[v] == '"' || s[v] == '\'')) {
				q = (unsigned char)s[v];
				v++;
			}
			for (ve = v; ve < len && s[ve] != '\n' &&
			     (q ? (unsigned char)s[ve] != q : (s[ve] != ' ' && s[ve] != ',' && s[ve] != '&' &&
							       s[ve] != ';' && s[ve] != '}')); ve++)
				;
			if (secret && ve > v) {
				sb_add(&out, s + w, v - w);
				sb_adds(&out, "***");
				i = ve;
				continue;
			}
		}
		sb_add(&out, s + w, e - w);
	}
	sb_free(text);
	*text = out;
}

int check_tap_config(const struct pipe_config *cfg, struct sb *warning)
{
	struct sb text = SB_INIT, found = SB_INIT;
	struct json_span v;
	struct stat st;
	const char *holder, *errmsg;
	size_t errpos;
	int ret = -1;

	if (cfg->tap_config_file) {
		holder = cfg->tap_config_file;
		if (util_read_file(holder, &text, &st) != 0) {
			err_msg("cannot read the tap's config '%s':", holder);
			goto out;
		}
		if (json_validate(text.buf ? text.buf : "", text.len, &v, &errpos, &errmsg) != 0) {
			err_msg("the tap's config '%s' is not JSON: byte %zu: %s", holder, errpos + 1, errmsg);
			goto out;
		}
		if (v.type != JSON_OBJECT) {
			err_msg("the tap's config '%s' is not a JSON object", holder);
			goto out;
		}
	} else if (cfg->tap_config_json) {
		holder = cfg->file;
		if (holder == NULL || stat(holder, &st) != 0 ||
		    json_validate(cfg->tap_config_json, strlen(cfg->tap_config_json), &v, &errpos, &errmsg) != 0) {
			ret = 0;
			goto out;
		}
	} else {
		ret = 0;
		goto out;
	}
	find_secrets(&v, &found, NULL, 0);
	ret = 0;
	if (found.len && (st.st_mode & 044)) {
		char *real = realpath(holder, NULL);
		const char *shown = real ? real : holder;

		sb_addf(warning, "'%s' holds secrets (%s) and is readable by other users (mode %04o): chmod 600 '%s'",
			shown, found.buf, (unsigned)(st.st_mode & 07777), shown);
		free(real);
		ret = 1;
	}
out:
	sb_free(&text);
	sb_free(&found);
	return ret;
}

int check_config(const struct pipe_config *cfg, struct sb *secrets, struct sb *placeholders)
{
	struct sb members = SB_INIT;
	int ret = -1;

	if (config_check_source(cfg, &members) != 0)
		goto out;
	if (check_tap_config(cfg, secrets) < 0)
		goto out;
	if (members.len)
		sb_addf(placeholders, "the tap's config %s '%s' still holds placeholders of add's template (%s): "
			"fill them in", cfg->tap_config_file ? "file" : "in",
			cfg->tap_config_file ? cfg->tap_config_file : cfg->file, members.buf);
	ret = 0;
out:
	sb_free(&members);
	return ret;
}

void check_mask_secrets(const struct pipe_config *cfg, struct sb *text)
{
	struct sb file = SB_INIT, vals = SB_INIT;
	struct json_span v;
	struct stat st;
	const char *json = NULL, *errmsg;
	char *p;
	size_t jlen = 0, errpos;

	if (cfg && cfg->tap_config_file && util_read_file(cfg->tap_config_file, &file, &st) == 0) {
		json = file.buf ? file.buf : "";
		jlen = file.len;
	} else if (cfg && cfg->tap_config_json) {
		json = cfg->tap_config_json;
		jlen = strlen(json);
	}
	if (json && json_validate(json, jlen, &v, &errpos, &errmsg) == 0)
		find_secrets(&v, NULL, &vals, 0);
	/* the longest first, so that a value holding another is masked whole */
	for (;;) {
		char *longest = NULL;
		size_t best = 0;

		for (p = vals.buf; p && p < vals.buf + vals.len; p += strlen(p) + 1) {
			if (strlen(p) > best) {
				best = strlen(p);
				longest = p;
			}
		}
		if (longest == NULL)
			break;
		mask_value(text, longest);
		memset(longest, 0, best);	/* done: now an empty entry */
	}
	mask_patterns(text);
	sb_free(&file);
	sb_free(&vals);
}
