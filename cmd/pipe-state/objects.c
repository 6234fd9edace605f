/*
 * objects, fetch: the bucket's objects as a reader of the lake needs them
 * (scripts/lake reads s3://, gs:// and az:// lakes through these, into its
 * cache): every key under a prefix with its version, and one object's
 * bytes on standard output.  Through lib/store, so with the credentials
 * and endpoint rules of a pipeline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bucket.h"
#include "cli.h"
#include "err.h"
#include "pipe_state.h"
#include "util.h"

/*
 * The version of key into buf when its listing gave none: the store's (a
 * HEAD: an ETag), a local object's size and change time
 * ("SIZE.SECONDS.NANOSECONDS"), else "-".  1, 0 when key is gone, -1 after
 * an error was said.
 */
static int object_version(struct bucket *b, const char *key, char *buf, size_t size)
{
	int r = bucket_version(b, key, buf, size);

	if (r == 2 && bucket_is_local(b)) {
		char *loc = bucket_location(b, key);
		struct stat st;

		/* (a local bucket's location is file:// and the path) */
		r = stat(loc + 7, &st) == 0;
		if (r)
			snprintf(buf, size, "%lld.%lld.%09ld", (long long)st.st_size,
				 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
		free(loc);
	}
	if (r == 2 || (r == 1 && buf[0] == '\0')) {
		snprintf(buf, size, "-");
		r = 1;
	}
	return r;
}

/* "VERSION<TAB>KEY": a version's control bytes (none expected) as '_', so it stays one field. */
static void print_object(const char *version, const char *key)
{
	const char *p;

	for (p = version; *p; p++)
		putchar((unsigned char)*p < 0x20 || *p == 0x7f ? '_' : *p);
	printf("\t%s\n", key);
}

int objects_list(struct bucket *b, const char *prefix)
{
	char **keys = NULL, **versions = NULL, version[512];
	size_t n = 0, i;
	int r, ret = CLI_FAILED;

	if (bucket_list_versions(b, prefix ? prefix : "", &keys, &versions, &n) != 0)
		return CLI_FAILED;
	/* (what a reader of the table would miss, not in silence) */
	if (bucket_list_skipped(b))
		err_warn("%zu object%s under '%s' in %s left out: a key with a control character, "
			 "or an empty, '.' or '..' part, is none a reader can name", bucket_list_skipped(b),
			 bucket_list_skipped(b) == 1 ? "" : "s", prefix ? prefix : "", bucket_url(b));
	for (i = 0; i < n; i++) {
		if (versions[i]) {
			print_object(versions[i], keys[i]);
			continue;
		}
		r = object_version(b, keys[i], version, sizeof(version));
		if (r < 0)
			goto out;
		/* (a key gone since the listing is left out) */
		if (r == 1)
			print_object(version, keys[i]);
	}
	ret = CLI_OK;
out:
	util_strv_free(keys);
	for (i = 0; i < n; i++)
		free(versions[i]);
	free(versions);
	return ret;
}

int objects_fetch(struct bucket *b, const char *key)
{
	struct sb data = SB_INIT;
	int r, ret = CLI_FAILED;

	r = bucket_get(b, key, &data);
	if (r < 0)
		goto out;
	if (r == 1) {
		err_msg("no object '%s' in %s", key, bucket_url(b));
		goto out;
	}
	if (util_write_all(STDOUT_FILENO, data.buf, data.len) != 0) {
		err_msg("cannot write '%s' to standard output:", key);
		goto out;
	}
	ret = CLI_OK;
out:
	sb_free(&data);
	return ret;
}
