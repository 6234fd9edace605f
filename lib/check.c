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
#include "mask.h"
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
	mask_secret_members(&v, &found, NULL);
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
