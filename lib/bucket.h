/*
 * bucket: where data lands.  One interface, several stores (lib/store/):
 * a local directory (file:///abs/dir, or a plain path), s3:// and gs://,
 * az://.
 *
 * Keys are '/'-separated relative paths ("raw/pg/orders/dt=2026-01-01/x.jsonl.zst").
 * Every function reports its own errors on stderr (err_msg), naming the key
 * and the reason, and returns -1; "not found" is never an error.
 */
#ifndef PIPE_BUCKET_H
#define PIPE_BUCKET_H

#include <stddef.h>

#include "sb.h"

struct bucket;
struct bucket_writer;

/*
 * Open the bucket named by url: "file:///abs/dir", "/abs/dir", "rel/dir"
 * (relative to the working directory), "s3://name[/prefix]", "gs://..."
 * or "az://container[/prefix]" (the scheme in any case).  A local
 * bucket's missing directory is created by the first write, never by a
 * read: reading a bucket that does not exist finds nothing.  Returns NULL
 * on error.
 */
struct bucket *bucket_open(const char *url);

/*
 * bucket_open() with the endpoint of an S3-compatible store
 * (destination.endpoint_url: "http[s]://host[:port]"), used by s3:// and
 * gs:// urls and ignored by local ones; NULL or "" is bucket_open().
 */
struct bucket *bucket_open_opts(const char *url, const char *endpoint);

/*
 * bucket_open_opts() with the storage account of an az:// bucket
 * (destination.account_name; NULL: from the environment or the
 * endpoint), ignored by other stores.
 */
struct bucket *bucket_open_account(const char *url, const char *endpoint, const char *account);
void bucket_free(struct bucket *b);

/* The url as given, for messages. */
const char *bucket_url(const struct bucket *b);

/*
 * The full URI of key (NULL or "": of the bucket), as readers take it:
 * s3://b/prefix/key, gs://..., file:///abs/dir/key (a plain path made
 * absolute against the working directory).  Newly allocated.
 */
char *bucket_location(const struct bucket *b, const char *key);

/* 1 for a local directory, 0 for a store reached over the network. */
int bucket_is_local(const struct bucket *b);

/*
 * 1 when key is acceptable: non-empty, relative, no empty, "." or ".."
 * component, no control bytes.  Every function below refuses other keys.
 */
int bucket_key_ok(const char *key);

/* Read a whole object into out (appended).  0 ok, 1 not found, -1 error. */
int bucket_get(struct bucket *b, const char *key, struct sb *out);

/*
 * Store an object atomically: readers see the old content or the new one,
 * never a part (locally: temp file, fsync, rename, fsync of the directory).
 * 0 or -1.
 */
int bucket_put(struct bucket *b, const char *key, const void *data, size_t len);

/*
 * Create an object only if none exists, atomically with its content
 * (locally: temp file + link(2)).  0 created, 1 already exists, -1 error.
 * Locally the content is durable, the name need not outlive a crash
 * (after one the object is whole or absent): validate's probe.
 */
int bucket_put_new(struct bucket *b, const char *key, const void *data, size_t len);

/*
 * bucket_put_new() for a lock (lock.h: the run lock, the manifest lock,
 * pipe-state set's): locally not even its content is synced, so after a
 * crash it is whole, absent or empty (lock_take_run() and lock_take() take
 * an empty one over: see bucket_creates_whole()).
 */
int bucket_put_new_lock(struct bucket *b, const char *key, const void *data, size_t len);

/*
 * 1 when no reader ever sees a bucket_put_new() or bucket_put_new_lock()
 * in progress (a local bucket links a file already written), so that an
 * object such a create left empty is what a crash left, not a write going
 * on; 0 when a reader may see one half-written (some S3-compatible
 * servers, some FUSE mounts).
 */
int bucket_creates_whole(const struct bucket *b);

/*
 * Does the store itself refuse to create an object that exists?  Stores
 * that do make bucket_put_new() atomic against a rival creator; on those
 * that do not (some S3-compatible servers), bucket_put_new() looks before
 * it writes and reads back after, which leaves a short window to two
 * rivals.  key must name an existing object the probe may overwrite.
 * 1 the store refuses, 0 it does not, -1 error.
 */
int bucket_probe_conditional(struct bucket *b, const char *key);

/*
 * The version of key's content, for bucket_put_if(), into buf (size
 * bytes): 1 it exists (S3: its ETag), 0 missing (buf ""), 2 the store
 * keeps no versions (buf ""; locally), -1 error.
 */
int bucket_version(struct bucket *b, const char *key, char *buf, size_t size);

/*
 * Write key only if it still is at version, as bucket_version() gave it
 * ("": only if it is still missing; NULL: whatever it holds).  0 written,
 * 1 it changed meanwhile (nothing written), -1 error.  A store that cannot
 * make a write conditional writes it as bucket_put() does.
 */
int bucket_put_if(struct bucket *b, const char *key, const void *data, size_t len,
		  const char *version);

/*
 * Delete an object; a missing one is fine.  Locally, directories left empty
 * up to the bucket's root are removed too.  0 or -1.
 */
int bucket_delete(struct bucket *b, const char *key);

/*
 * Delete a lock that is held only for moments (the manifest's): as
 * bucket_delete(), but locally the removal is not synced.  Such a lock back
 * after a crash names a holder that the crash killed, and is waited out as
 * its TTL allows, which its creation already risks (bucket_put_new()).
 */
int bucket_delete_lock(struct bucket *b, const char *key);

/*
 * Remove the temporary files that writers killed between writing and
 * renaming left in the folder dir ("a/b/"), which no reader sees: those of
 * a process no longer running on this host, or older than an hour.
 * Returns how many, or -1.
 */
int bucket_sweep(struct bucket *b, const char *dir);

/*
 * Move an object to a new key, replacing any object there (locally:
 * rename(2), creating parent directories).  0 moved, 1 source missing, -1 error.
 */
int bucket_move(struct bucket *b, const char *from, const char *to);

/* 1 exists, 0 missing, -1 error. */
int bucket_exists(struct bucket *b, const char *key);

/*
 * Every object key under prefix (a prefix ending in '/', or "" for all),
 * recursively, sorted bytewise.  Local temp files of bucket_put() in flight
 * are not listed.  *keys is a NULL-terminated array freed with
 * util_strv_free().  0 or -1.
 */
int bucket_list(struct bucket *b, const char *prefix, char ***keys, size_t *n);

/*
 * bucket_list(), and in *versions, at each key's index, the version the
 * listing gave for it (S3, GCS: its ETag; Azure: its Etag; quotes and all),
 * or NULL where it gave none (a local bucket, a store that sends none):
 * what a cache of the objects keys its copies by.  *versions is freed with
 * free() for each and for the array (its NULLs are holes, not its end: n
 * says how many).
 */
int bucket_list_versions(struct bucket *b, const char *prefix, char ***keys, char ***versions,
			 size_t *n);

/*
 * How many keys the last bucket_list_versions() (bucket_list()) of b left
 * out because no caller can name them (bucket_key_ok(): control
 * characters, an empty, '.' or '..' part; not a "dir/" marker).
 */
size_t bucket_list_skipped(const struct bucket *b);

/*
 * Stream a new object: open, write any number of times, then close to make
 * it complete, or abort to remove what was written.  A writer that is
 * neither closed nor aborted leaves at most a partial object under its key
 * (callers write only under staging/).  close and abort free the writer.
 */
struct bucket_writer *bucket_writer_open(struct bucket *b, const char *key);
int bucket_writer_write(struct bucket_writer *w, const void *data, size_t len);
int bucket_writer_close(struct bucket_writer *w);
void bucket_writer_abort(struct bucket_writer *w);

/*
 * Many writers closed together: from bucket_closes_begin() a close only
 * starts writing its object out, and bucket_closes_end() waits for all of
 * them, so that they are written out at once, not one after another (a
 * local bucket: an fsync at each close waited for each file in turn).  The
 * objects closed between the two are durable only once bucket_closes_end()
 * returned 0; -1 when one could not be written (said on stderr, and that
 * object removed, as a close that fails removes it).  Stores that write an
 * object whole at its close ignore both.
 */
void bucket_closes_begin(struct bucket *b);
int bucket_closes_end(struct bucket *b);

/* The bucket and the key a writer writes, for messages (until it is closed). */
const struct bucket *bucket_writer_bucket(const struct bucket_writer *w);
const char *bucket_writer_key(const struct bucket_writer *w);

#endif
