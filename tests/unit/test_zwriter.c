/*
 * Unit tests of the compressed writer: what it writes must read back byte
 * for byte through Debian's zstd and gzip.
 */
#include "bucket.h"
#include "err.h"
#include "sb.h"
#include "taptest.h"
#include "zwriter.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/test_zwriter.XXXXXX";

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* About size bytes of Singer-like JSON lines, each ending in '\n'. */
static void make_records(struct sb *sb, size_t size)
{
	static const char *names[] = { "alice", "bob", "carol", "dave", "eve", "mallory" };
	static const char *status[] = { "paid", "pending", "shipped", "refunded" };
	unsigned long long id = 1;

	while (sb->len < size) {
		uint64_t r = next_rand();

		sb_addf(sb, "{\"id\":%llu,\"customer\":\"%s-%llu\",\"status\":\"%s\","
			"\"amount\":%llu.%02llu,\"created_at\":\"2026-01-%02llu"
			"T%02llu:%02llu:%02lluZ\",\"note\":\"%016llx%08llx\","
			"\"tags\":[\"t%llu\",\"t%llu\"],\"nested\":{\"a\":%llu,\"b\":null,"
			"\"c\":true,\"unicode\":\"caf\xc3\xa9 \\u00e9\"}}\n",
			id++, names[r % 6], (unsigned long long)(r >> 40),
			status[(r >> 8) % 4], (unsigned long long)(r >> 20) % 100000,
			(unsigned long long)(r >> 12) % 100, 1 + (unsigned long long)(r >> 3) % 28,
			(unsigned long long)(r >> 5) % 24, (unsigned long long)(r >> 9) % 60,
			(unsigned long long)(r >> 15) % 60, (unsigned long long)next_rand(),
			(unsigned long long)(r & 0xffffffff), (unsigned long long)(r >> 50),
			(unsigned long long)(r >> 33) % 7, (unsigned long long)(r >> 23) % 1000);
	}
}

static int read_file(const char *path, struct sb *out)
{
	char buf[65536];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sb_add(out, buf, (size_t)n);
	close(fd);
	return n < 0 ? -1 : 0;
}

static int file_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* Write data in pieces of one line, then its '\n' on its own. */
static int write_lines(struct zwriter *z, const char *data, size_t len)
{
	const char *p = data, *end = data + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (zwriter_write(z, p, n) < 0)
			return -1;
		p += n;
		if (nl) {
			if (zwriter_write(z, "\n", 1) < 0)
				return -1;
			p++;
		}
	}
	return 0;
}

static const char *ext_of(enum compression c)
{
	return c == COMPRESSION_ZSTD ? ".zst" : c == COMPRESSION_GZIP ? ".gz" : "";
}

static const char *name_of(enum compression c)
{
	return c == COMPRESSION_ZSTD ? "zstd" : c == COMPRESSION_GZIP ? "gzip" : "none";
}

static const char *reader_of(enum compression c)
{
	return c == COMPRESSION_ZSTD ? "zstd -q -dc" : c == COMPRESSION_GZIP ? "gzip -dc" : "cat";
}

/*
 * Compress data into the bucket under key (big: in one write, else line by
 * line), read it back with the real tool, compare.
 */
static void round_trip(struct bucket *b, const char *name, enum compression c,
		       int level, int threads, const struct sb *data, int big)
{
	char *key = xasprintf("t/%s.jsonl%s", name, ext_of(c));
	char *path = xasprintf("%s/b/%s", tmpdir, key);
	char *outp = xasprintf("%s/%s.out", tmpdir, name);
	char *cmd = xasprintf("%s '%s' > '%s'", reader_of(c), path, outp);
	struct bucket_writer *w;
	struct zwriter *z;
	struct zpool *pool = threads ? zpool_new(threads) : NULL;
	struct sb back = SB_INIT;
	uint64_t out_bytes;
	int r;

	w = bucket_writer_open(b, key);
	z = zwriter_open(w, c, level, pool);
	ok(z != NULL, "%s: open", name);
	if (z == NULL)
		goto out;
	if (big)
		r = zwriter_write(z, data->buf, data->len);
	else
		r = write_lines(z, data->buf, data->len);
	is_int(r, 0, "%s: write %zu bytes", name, data->len);
	is_int(zwriter_in_bytes(z), data->len, "%s: in_bytes", name);
	out_bytes = zwriter_out_bytes(z);
	/*
	 * Compressed bytes reach the bucket as the buffers fill, not only at
	 * close.  (With workers, when depends on their pace.)
	 */
	if (data->len >= (1 << 20) && threads == 0)
		ok(out_bytes > 0, "%s: output flows before close (%llu)",
		   name, (unsigned long long)out_bytes);
	r = zwriter_close(z);
	is_int(r, 0, "%s: close", name);
	if (c != COMPRESSION_NONE && data->len > 1000)
		ok(file_size(path) < (long long)data->len / 2, "%s: compressed %zu -> %lld",
		   name, data->len, file_size(path));
	r = system(cmd);
	is_int(r, 0, "%s: %s reads it", name, reader_of(c));
	read_file(outp, &back);
	ok(back.len == data->len && (data->len == 0 || memcmp(back.buf, data->buf, data->len) == 0),
	   "%s: read back byte for byte (%zu of %zu)", name, back.len, data->len);
	if (c == COMPRESSION_ZSTD) {
		struct sb raw = SB_INIT;

		/* Frame header descriptor, bit 2: a content checksum follows the frame. */
		read_file(path, &raw);
		ok(raw.len > 5 && memcmp(raw.buf, "\x28\xb5\x2f\xfd", 4) == 0 &&
		   (raw.buf[4] & 0x04), "%s: zstd frame with a checksum", name);
		sb_free(&raw);
	}
	if (c == COMPRESSION_GZIP) {
		struct sb raw = SB_INIT;

		read_file(path, &raw);
		ok(raw.len > 18 && (unsigned char)raw.buf[0] == 0x1f &&
		   (unsigned char)raw.buf[1] == 0x8b, "%s: gzip magic", name);
		sb_free(&raw);
	}
	unlink(outp);
	bucket_delete(b, key);
out:
	zpool_free(pool);
	sb_free(&back);
	free(cmd);
	free(outp);
	free(path);
	free(key);
}

/* The stream's out_bytes equals the object's size once everything is flushed. */
static void test_out_bytes(struct bucket *b, const struct sb *data)
{
	static const enum compression cs[] = { COMPRESSION_ZSTD, COMPRESSION_GZIP, COMPRESSION_NONE };
	size_t i;

	for (i = 0; i < 3; i++) {
		char *key = xasprintf("ob/x%s", ext_of(cs[i]));
		char *path = xasprintf("%s/b/%s", tmpdir, key);
		struct zwriter *z = zwriter_open(bucket_writer_open(b, key), cs[i], 0, 0);
		uint64_t before;

		if (z == NULL) {
			ok(0, "out_bytes: open");
			continue;
		}
		write_lines(z, data->buf, data->len);
		before = zwriter_out_bytes(z);
		ok(before > 0, "%s: out_bytes grows before close", name_of(cs[i]));
		is_int(file_size(path), before, "%s: out_bytes counts exactly the bytes handed on",
		       name_of(cs[i]));
		zwriter_close(z);
		bucket_delete(b, key);
		free(path);
		free(key);
	}
}

static void test_abort(struct bucket *b, const struct sb *data)
{
	char *path = xasprintf("%s/b/ab/run/x.jsonl.zst", tmpdir);
	char *dir = xasprintf("%s/b/ab", tmpdir);
	struct zwriter *z;

	z = zwriter_open(bucket_writer_open(b, "ab/run/x.jsonl.zst"), COMPRESSION_ZSTD, 0, 0);
	ok(z != NULL, "abort: open");
	if (z) {
		write_lines(z, data->buf, data->len);
		ok(file_exists(path), "abort: the partial file exists");
		zwriter_abort(z);
	}
	ok(!file_exists(path), "abort removes the file");
	ok(!file_exists(dir), "... and the directories made for it");
	zwriter_abort(NULL);
	is_int(zwriter_close(NULL), -1, "close(NULL) is -1");
	free(dir);
	free(path);
}

/*
 * NW writers on one pool (threads 0, 1, 3), written in turns with pieces
 * of every size, more than the pool may hold waiting (so chunks end early),
 * one of them aborted halfway: every file reads back as what was written,
 * the same bytes whatever the threads, and the roll test says the same.
 */
enum { NW = 40 };

static void pool_run(struct bucket *b, int threads, const struct sb *data, struct sb files[NW],
		     unsigned *reached_at)
{
	struct zpool *pool = zpool_new(threads);
	struct zwriter *z[NW];
	size_t pos[NW], i, turn = 0;
	int live = NW, failed = 0;

	*reached_at = 0;
	for (i = 0; i < NW; i++) {
		char *key = xasprintf("pool/%d/w%02zu.zst", threads, i);

		z[i] = zwriter_open(bucket_writer_open(b, key), i % 5 == 4 ? COMPRESSION_GZIP :
				    COMPRESSION_ZSTD, i % 3 + 1, pool);
		pos[i] = i * 4099 % data->len;
		free(key);
	}
	while (live > 0) {
		for (i = 0; i < NW; i++) {
			size_t n = (next_rand() % 3 == 0) ? next_rand() % 70000 : next_rand() % 300;

			if (z[i] == NULL)
				continue;
			if (i == 7 && turn == 50) {
				zwriter_abort(z[i]);
				z[i] = NULL;
				live--;
				continue;
			}
			if (n > data->len - pos[i])
				n = data->len - pos[i];
			if (zwriter_write(z[i], data->buf + pos[i], n) != 0)
				failed++;
			sb_add(&files[i], data->buf + pos[i], n);
			pos[i] = (pos[i] + n) % data->len;
			/* the first turn writer 2 has 256 KiB of frames */
			if (i == 2 && *reached_at == 0 && zwriter_reached(z[i], 256 << 10))
				*reached_at = (unsigned)turn;
			if (files[i].len >= (size_t)(1 + i % 3) << 20) {
				if (zwriter_close(z[i]) != 0)
					failed++;
				z[i] = NULL;
				live--;
			}
		}
		turn++;
	}
	is_int(failed, 0, "pool, %d threads: every write and close succeeds", threads);
	zpool_free(pool);
}

static void test_pool(struct bucket *b)
{
	static const int threads[] = { 0, 1, 3 };
	struct sb data = SB_INIT, want[3][NW], got = SB_INIT, first = SB_INIT, raw = SB_INIT;
	unsigned reached[3];
	size_t t, i;
	int same = 1, back = 1, multi = 0;
	uint64_t seed;

	make_records(&data, 1 << 20);
	seed = rng;

	for (t = 0; t < 3; t++) {
		for (i = 0; i < NW; i++)
			want[t][i] = (struct sb)SB_INIT;
		rng = seed;
		pool_run(b, threads[t], &data, want[t], &reached[t]);
	}
	for (i = 0; i < NW; i++) {
		char *p0 = xasprintf("%s/b/pool/0/w%02zu.zst", tmpdir, i);

		if (i == 7) {
			ok(!file_exists(p0), "pool: the aborted file is gone");
			free(p0);
			continue;
		}
		sb_reset(&first);
		read_file(p0, &first);
		for (t = 1; t < 3; t++) {
			char *pt = xasprintf("%s/b/pool/%d/w%02zu.zst", tmpdir, threads[t], i);

			sb_reset(&raw);
			read_file(pt, &raw);
			if (raw.len != first.len || memcmp(raw.buf, first.buf, raw.len) != 0)
				same = 0;
			free(pt);
		}
		{
			char *cmd = xasprintf("%s '%s' > '%s/pool.out'", i % 5 == 4 ? "gzip -dc" : "zstd -q -dc",
					      p0, tmpdir);
			char *outp = xasprintf("%s/pool.out", tmpdir);

			sb_reset(&got);
			if (system(cmd) != 0 || read_file(outp, &got) != 0 || got.len != want[0][i].len ||
			    memcmp(got.buf, want[0][i].buf, got.len) != 0)
				back = 0;
			free(outp);
			free(cmd);
		}
		/* zstd's frame header: a content size, so several frames show as such */
		if (i == 2) {
			char *cmd = xasprintf("test \"$(zstd -l '%s' | awk 'NR == 2 { print $1 }')\" -ge 3", p0);

			multi = system(cmd) == 0;
			free(cmd);
		}
		free(p0);
	}
	ok(same, "pool: the files are byte for byte the same with 0, 1 and 3 threads");
	ok(back, "pool: every file reads back as written (zstd -d, gzip -d)");
	ok(multi, "pool: a file of 3 MB is 3 frames or more");
	ok(reached[0] > 0 && reached[0] == reached[1] && reached[0] == reached[2],
	   "pool: the 256 KiB mark is reached at the same write whatever the threads (%u %u %u)",
	   reached[0], reached[1], reached[2]);
	for (t = 0; t < 3; t++)
		for (i = 0; i < NW; i++)
			sb_free(&want[t][i]);
	sb_free(&data);
	sb_free(&got);
	sb_free(&first);
	sb_free(&raw);
}

/* stderr goes to a file between capture_begin() and capture_end(). */
static int saved_stderr = -1;

static void capture_begin(void)
{
	char *p = xasprintf("%s/stderr", tmpdir);
	int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	free(p);
	saved_stderr = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* What was written to stderr, less its final newline (static buffer). */
static const char *capture_end(void)
{
	static char buf[4096];
	char *p = xasprintf("%s/stderr", tmpdir);
	int fd;
	ssize_t n;

	dup2(saved_stderr, 2);
	close(saved_stderr);
	fd = open(p, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n < 0 ? 0 : n] = '\0';
	if (fd >= 0)
		close(fd);
	unlink(p);
	free(p);
	return buf;
}

static void test_bad_params(struct bucket *b)
{
	struct zwriter *z;
	const char *err;
	char *path = xasprintf("%s/b/bad/x.gz", tmpdir);

	capture_begin();
	z = zwriter_open(bucket_writer_open(b, "bad/x.gz"), COMPRESSION_GZIP, 12, 0);
	err = capture_end();
	ok(z == NULL, "gzip level 12 is refused");
	ok(strstr(err, "gzip level 12 is out of range") != NULL, "... saying so: %s", err);
	ok(!file_exists(path), "... and the writer was aborted");

	capture_begin();
	z = zwriter_open(bucket_writer_open(b, "bad/x.zst"), COMPRESSION_ZSTD, 99, 0);
	err = capture_end();
	ok(z == NULL, "zstd level 99 is refused");
	ok(strstr(err, "zstd level 99 is out of range") != NULL, "... saying so: %s", err);

	capture_begin();
	ok(zpool_new(-1) == NULL, "negative threads are refused");
	err = capture_end();
	ok(strstr(err, "negative number of threads") != NULL, "... saying so: %s", err);

	ok(zwriter_open(NULL, COMPRESSION_ZSTD, 0, 0) == NULL, "a NULL writer gives NULL");
	free(path);
	path = xasprintf("%s/b/bad", tmpdir);
	ok(!file_exists(path), "nothing left behind");
	free(path);
}

/* A write that fails below (EFBIG here, ENOSPC on a full disk) surfaces, and nothing is left. */
static void test_write_failure(struct bucket *b, enum compression c, const struct sb *data)
{
	struct rlimit old, lim;
	struct zwriter *z;
	char *key = xasprintf("fail/x.jsonl%s", ext_of(c));
	char *path = xasprintf("%s/b/%s", tmpdir, key);
	const char *err;
	int r1, r2;

	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 64 * 1024;
	if (setrlimit(RLIMIT_FSIZE, &lim) < 0) {
		printf("# skip: cannot set RLIMIT_FSIZE\n");
		goto out;
	}
	z = zwriter_open(bucket_writer_open(b, key), c, 0, 0);
	ok(z != NULL, "%s failure: open", name_of(c));
	if (z == NULL)
		goto restore;
	capture_begin();
	r1 = write_lines(z, data->buf, data->len);
	r2 = r1 < 0 ? -1 : 0;
	if (r1 < 0) {
		is_int(zwriter_write(z, "x", 1), -1, "%s failure: later writes fail too",
		       name_of(c));
		zwriter_abort(z);
	} else {
		r2 = zwriter_close(z);
	}
	err = capture_end();
	ok(r1 < 0 || r2 < 0, "%s failure: the error surfaces (write %d, close %d)",
	   name_of(c), r1, r2);
	ok(strstr(err, "cannot write") && strstr(err, strerror(EFBIG)),
	   "%s failure: reported: %s", name_of(c), err);
	ok(!file_exists(path), "%s failure: the partial file is removed", name_of(c));
restore:
	setrlimit(RLIMIT_FSIZE, &old);
out:
	free(path);
	free(key);
}

/* The same failure found only when close flushes the last buffer. */
static void test_close_failure(struct bucket *b)
{
	struct rlimit old, lim;
	struct zwriter *z;
	char *path = xasprintf("%s/b/fail2/x.jsonl", tmpdir);
	char buf[100 * 1024];
	int r1, r2;

	memset(buf, 'x', sizeof(buf));
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 64 * 1024;
	if (setrlimit(RLIMIT_FSIZE, &lim) < 0) {
		free(path);
		return;
	}
	z = zwriter_open(bucket_writer_open(b, "fail2/x.jsonl"), COMPRESSION_NONE, 0, 0);
	capture_begin();
	r1 = z ? zwriter_write(z, buf, sizeof(buf)) : -1;
	r2 = z ? zwriter_close(z) : 0;
	capture_end();
	is_int(r1, 0, "a buffered write succeeds");
	is_int(r2, -1, "close fails when the flush fails");
	ok(!file_exists(path), "... and removes the file");
	setrlimit(RLIMIT_FSIZE, &old);
	free(path);
}

int main(int argc, char **argv)
{
	struct bucket *b;
	struct sb data = SB_INIT, small = SB_INIT, empty = SB_INIT;
	char *dir;

	(void)argc;
	err_init(argv[0]);
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	dir = xasprintf("%s/b", tmpdir);
	b = bucket_open(dir);
	free(dir);
	if (b == NULL) {
		ok(0, "open the bucket");
		return tap_done();
	}
	make_records(&data, 10 << 20);
	make_records(&small, 1000);
	sb_adds(&empty, "");

	round_trip(b, "zstd", COMPRESSION_ZSTD, 0, 0, &data, 0);
	round_trip(b, "zstd-mt", COMPRESSION_ZSTD, 3, 2, &data, 0);
	round_trip(b, "zstd-19-one-write", COMPRESSION_ZSTD, 19, 0, &small, 1);
	round_trip(b, "zstd-big-write", COMPRESSION_ZSTD, 1, 0, &data, 1);
	round_trip(b, "zstd-empty", COMPRESSION_ZSTD, 0, 0, &empty, 0);
	round_trip(b, "gzip", COMPRESSION_GZIP, 0, 0, &data, 0);
	round_trip(b, "gzip-1-big-write", COMPRESSION_GZIP, 1, 0, &data, 1);
	round_trip(b, "gzip-empty", COMPRESSION_GZIP, 0, 0, &empty, 0);
	round_trip(b, "none", COMPRESSION_NONE, 0, 0, &data, 0);
	round_trip(b, "none-big-write", COMPRESSION_NONE, 0, 0, &data, 1);
	round_trip(b, "none-empty", COMPRESSION_NONE, 0, 0, &empty, 0);
	test_out_bytes(b, &data);
	test_abort(b, &data);
	test_pool(b);
	test_bad_params(b);
	test_write_failure(b, COMPRESSION_ZSTD, &data);
	test_write_failure(b, COMPRESSION_GZIP, &data);
	test_write_failure(b, COMPRESSION_NONE, &data);
	test_close_failure(b);

	bucket_free(b);
	sb_free(&data);
	sb_free(&small);
	sb_free(&empty);
	{
		char *cmd = xasprintf("rm -rf '%s'", tmpdir);

		if (system(cmd) != 0)
			printf("# cannot remove %s\n", tmpdir);
		free(cmd);
	}
	return tap_done();
}
