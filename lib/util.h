/* util: run ids, time, hosts and processes, whole-file reads. */
#ifndef PIPE_UTIL_H
#define PIPE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sb.h"

/*
 * A new run id: sortable UTC time plus a suffix of the milliseconds and
 * random hex, "20261130T004809Z-4173fa9c1".  Newly allocated.
 */
char *util_new_run_id(void);

/* 1 when s has the shape of a run id (so it is safe in keys and names). */
int util_run_id_ok(const char *s);

/* The time a run id was made, or -1 when it is not a run id. */
time_t util_run_id_time(const char *run_id);

/* ISO 8601 UTC with seconds: "2026-11-30T00:48:09Z" into buf (>= 21 bytes). */
void util_iso_time(time_t t, char *buf, size_t size);

/* Parse what util_iso_time() prints.  Returns -1 when malformed. */
time_t util_parse_iso_time(const char *s);

/* This host's name (static storage). */
const char *util_hostname(void);

/* 1 when a process with this pid exists on this host, 0 when it does not. */
int util_pid_alive(long pid);

/* This machine and PID namespace: "<boot id>:<pid namespace inode>", or "". */
const char *util_host_id(void);

/* When process pid started, in clock ticks since boot; -1 unknown. */
long long util_pid_start(long pid);

/*
 * 1 when a process of pid lives and is the one that started at start
 * (util_pid_start(); when either start is unknown, any process of pid),
 * else 0.
 */
int util_pid_lives(long pid, long long start);

/* Read all of fd into out (appended).  0, or -1 with errno set. */
int util_read_fd(int fd, struct sb *out);

/*
 * Read the whole file at path into out (appended); st, when not NULL, gets
 * its fstat(2).  0, or -1 with errno set (EISDIR for a directory).
 */
int util_read_file(const char *path, struct sb *out, struct stat *st);

/* Write all of data to fd, through EINTR and short writes.  0, or -1 with errno set. */
int util_write_all(int fd, const void *data, size_t len);

/*
 * Replace the file at path with data: written to path.tmp, then renamed
 * over it (a reader sees the old file or the new one).  0, or -1 with errno
 * set (path.tmp removed).
 */
int util_replace_file(const char *path, const void *data, size_t len);

/* Free a NULL-terminated vector of strings and the vector (NULL: nothing). */
void util_strv_free(char **v);

/*
 * The first of v[0..n) equal to one before it (the smallest such index), or
 * n when they all differ; O(n log n), for headers of many columns.
 */
size_t util_strv_first_dup(char *const *v, size_t n);

/*
 * A fast hash of bytes, 8 at a time, for the tables of streams and of
 * dictionary values: only its spread matters, never its value.
 */
static inline uint64_t util_hash_bytes(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ULL ^ n, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h ^= h >> 29;
	}
	if (n > 0) {
		/*
		 * The tail in two loads, overlapping when under 8 bytes (n is in
		 * h already): a copy into a zeroed word stalls the load of it.
		 */
		uint32_t a, b;

		if (n >= 4) {
			memcpy(&a, p, 4);
			memcpy(&b, p + n - 4, 4);
		} else {
			a = (unsigned char)p[0] | (uint32_t)(unsigned char)p[n / 2] << 8;
			b = (unsigned char)p[n - 1];
		}
		w = a | (uint64_t)b << 32;
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
	}
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ULL;
	return h ^ (h >> 32);
}

/*
 * The integer in environment variable name when it is set and within
 * [min, max], else def.
 */
long util_env_long(const char *name, long min, long max, long def);

/* The integer s holds (all of it) when it is within [min, max], else def (s NULL too). */
long util_parse_long(const char *s, long min, long max, long def);

/* Sleep for ms milliseconds. */
void util_sleep_ms(long ms);

/*
 * Remove dir and everything under it (symbolic links as links, never
 * followed; nothing on another file system).  0, or -1 with errno set by
 * the first removal that failed (the rest is still tried).
 */
int util_remove_tree(const char *dir);

/* Seconds since the epoch, as a double (for durations). */
double util_now(void);

/* The edit distance of a and b (insert, delete, replace, swap two); 99 past 32 bytes. */
size_t util_edit_distance(const char *a, const char *b);

/*
 * How far name, a typo of known, is from it: within one edit of a name of
 * up to 5 letters, two of a longer one, case aside (a difference of case
 * alone counts 1); (size_t)-1 when it is no typo of it.  What "did you
 * mean" is said of (config keys, columns).
 */
size_t util_typo_distance(const char *name, const char *known);

/* 1 when data[0..n) is well-formed UTF-8 (no overlongs, surrogates or past U+10FFFF). */
int util_utf8_valid(const void *data, size_t n);

#endif
