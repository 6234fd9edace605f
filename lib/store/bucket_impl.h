/*
 * bucket_impl: what a store implements so that bucket.h's callers reach it
 * unchanged.  Only bucket.c and the stores (bucket_local.c, s3.c, azure.c) include
 * this header.
 *
 * A store embeds struct bucket as the FIRST member of its own bucket struct
 * (and struct bucket_writer first in its writer struct) and fills in ops.
 * bucket.c does the common work before dispatching, so a store's functions
 * may assume:
 *   - every key passed in satisfies bucket_key_ok() (and from != to is not
 *     guaranteed: moving a key onto itself must leave it in place);
 *   - the list prefix is "" or any string (not necessarily ending in '/');
 *     the store returns keys that start with it, in any order: bucket.c
 *     sorts them bytewise and NULL-terminates the array;
 *   - b->url is set by bucket_open() after the store's open function
 *     returns, and freed by bucket_free() before ops->free is called.
 * Return values are those of bucket.h (0 / 1 / -1, pointer / NULL); each
 * store reports its own errors with err_msg(), naming the object (a path
 * locally, s3://bucket/key remotely) and the reason.
 */
#ifndef PIPE_BUCKET_IMPL_H
#define PIPE_BUCKET_IMPL_H

#include <stddef.h>

#include "bucket.h"
#include "sb.h"

/*
 * A growable array of keys filled by ops->list, and beside each the version
 * its listing gave (ver[i]; NULL: none).
 */
struct bucket_keys {
	char **v;
	char **ver;
	size_t n, cap;
	size_t skipped;		/* keys no caller can name (bucket_key_ok()), not "dir/" markers */
};

/* Count key (under the prefix listed, rest after it) in k->skipped unless it is a "dir/" marker. */
void bucket_keys_skip(struct bucket_keys *k, const char *rest);

/*
 * A listing page's keys[0..n) (the store's full names, versions[i] beside
 * each) into k: those under full (the store's prefix, then the prefix
 * listed), less the store's first plen bytes; one no caller can name is
 * counted (bucket_keys_skip()).
 */
void bucket_keys_take(struct bucket_keys *k, char *const *keys, char *const *versions, size_t n,
		      const char *full, size_t plen);

/* Append a copy of key[0..len) to k, with no version. */
void bucket_keys_add(struct bucket_keys *k, const char *key, size_t len);

/* Append a copy of key[0..len) to k, and of version (NULL or "": none). */
void bucket_keys_add_version(struct bucket_keys *k, const char *key, size_t len,
			     const char *version);

/*
 * A store's writer buffers one part (S3) or block (Azure) of at most part
 * bytes: copy as much of data[0..len) as fits into *buf (*len used, *cap
 * allocated, grown by doubling from 64 KiB up to part) and return how much
 * was taken; 0 only when the buffer holds part bytes (send it first).
 */
size_t bucket_part_fill(char **buf, size_t *cap, size_t *len, size_t part, const void *data,
			size_t n);

struct bucket_ops {
	const char *name;	/* "local", "s3", "az": for messages and tests */
	/* bucket_creates_whole() */
	int creates_whole;

	/* Free everything of the store's bucket, including b itself. */
	void (*free)(struct bucket *b);

	int (*get)(struct bucket *b, const char *key, struct sb *out);
	int (*put)(struct bucket *b, const char *key, const void *data, size_t len);
	int (*put_new)(struct bucket *b, const char *key, const void *data, size_t len);
	/* bucket_put_new_lock(); NULL: put_new */
	int (*put_new_lock)(struct bucket *b, const char *key, const void *data, size_t len);
	/* bucket_probe_conditional(); NULL: put_new is atomic by itself (1) */
	int (*probe_conditional)(struct bucket *b, const char *key);
	/* bucket_version(), bucket_put_if(); NULL: the store keeps no versions */
	int (*version)(struct bucket *b, const char *key, char *buf, size_t size);
	int (*put_if)(struct bucket *b, const char *key, const void *data, size_t len,
		      const char *version);
	int (*del)(struct bucket *b, const char *key);
	/* bucket_delete_lock(); NULL: del */
	int (*del_lock)(struct bucket *b, const char *key);
	int (*move)(struct bucket *b, const char *from, const char *to);
	int (*exists)(struct bucket *b, const char *key);
	/*
	 * Add every key starting with prefix to out, with its version when the
	 * listing gives one (bucket_list_versions()); on -1, bucket.c frees out.
	 */
	int (*list)(struct bucket *b, const char *prefix, struct bucket_keys *out);
	/* bucket_sweep(); NULL: the store leaves no temporary files (0) */
	int (*sweep)(struct bucket *b, const char *dir);

	/*
	 * Writer: open returns a store writer whose first member is struct
	 * bucket_writer (bucket.c sets its b and key fields after open).
	 * close and abort free the store's writer; bucket.c frees key after.
	 * A close that fails removes the partial object itself (its caller
	 * cannot abort any more).  After a failed write, close fails too.
	 */
	struct bucket_writer *(*writer_open)(struct bucket *b, const char *key);
	int (*writer_write)(struct bucket_writer *w, const void *data, size_t len);
	int (*writer_close)(struct bucket_writer *w);
	void (*writer_abort)(struct bucket_writer *w);
	/* bucket_closes_begin() and _end(); NULL: closes are whole already */
	void (*closes_begin)(struct bucket *b);
	int (*closes_end)(struct bucket *b);
};

struct bucket {
	const struct bucket_ops *ops;
	char *url;		/* as given to bucket_open() */
	size_t list_skipped;	/* bucket_list_skipped() */
};

struct bucket_writer {
	struct bucket *b;
	char *key;
};

/*
 * The stores' constructors, picked by bucket.c's table of schemes.  url
 * is the whole url as given.
 * local_bucket_open takes the directory (already stripped of "file://").
 * s3_bucket_open takes "s3://name[/prefix]" or "gs://name[/prefix]" and an
 * endpoint url (NULL: from the environment or the AWS profile, else AWS
 * or GCS itself).  az_bucket_open takes "az://container[/prefix]", the
 * account's blob endpoint (NULL: from AZURE_STORAGE_CONNECTION_STRING,
 * else https://ACCOUNT.blob.core.windows.net) and the account name (NULL:
 * from the environment or the endpoint); see docs/AZURE.md.  All report
 * their errors and return NULL.
 */
struct bucket *local_bucket_open(const char *dir);
struct bucket *s3_bucket_open(const char *url, const char *endpoint);
struct bucket *az_bucket_open(const char *url, const char *endpoint, const char *account);

#endif
