/* util: run ids, time, hosts and processes, whole-file reads. */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "err.h"

static void random_bytes(unsigned char *buf, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd >= 0) {
		while (got < n) {
			ssize_t r = read(fd, buf + got, n - got);

			if (r <= 0)
				break;
			got += (size_t)r;
		}
		close(fd);
	}
	if (got < n) {
		/* No urandom: time and pid still make two runs differ. */
		unsigned long seed = (unsigned long)time(NULL) ^ ((unsigned long)getpid() << 16);

		for (; got < n; got++) {
			seed = seed * 1103515245UL + 12345UL;
			buf[got] = (unsigned char)(seed >> 16);
		}
	}
}

char *util_new_run_id(void)
{
	unsigned char r[3];
	char stamp[32];
	struct timespec now;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	random_bytes(r, sizeof(r));
	/* The suffix starts with the milliseconds: runs within one second
	 * still sort in the order they started. */
	return xasprintf("%s-%03ld%02x%02x%02x", stamp, now.tv_nsec / 1000000L,
			 r[0], r[1], r[2]);
}

int util_run_id_ok(const char *s)
{
	static const char shape[] = "DDDDDDDDTDDDDDDZ-";
	size_t i;

	for (i = 0; shape[i]; i++) {
		if (shape[i] == 'D' ? (s[i] < '0' || s[i] > '9') : s[i] != shape[i])
			return 0;
	}
	if (s[i] == '\0')
		return 0;
	for (; s[i]; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z')) || i > 40)
			return 0;
	}
	return 1;
}

time_t util_run_id_time(const char *run_id)
{
	struct tm tm;
	const char *end;

	if (!util_run_id_ok(run_id))
		return -1;
	memset(&tm, 0, sizeof(tm));
	end = strptime(run_id, "%Y%m%dT%H%M%SZ", &tm);
	if (end == NULL)
		return -1;
	return timegm(&tm);
}

void util_iso_time(time_t t, char *buf, size_t size)
{
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

time_t util_parse_iso_time(const char *s)
{
	struct tm tm;
	const char *end;

	memset(&tm, 0, sizeof(tm));
	end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (end == NULL || *end != '\0')
		return -1;
	return timegm(&tm);
}

const char *util_hostname(void)
{
	static char name[256];

	if (name[0] == '\0') {
		if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0')
			strcpy(name, "localhost");
	}
	return name;
}

const char *util_host_id(void)
{
	static char id[128];
	static int done;

	if (!done) {
		char boot[64] = "";
		struct stat st;
		FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

		done = 1;
		if (f) {
			if (fgets(boot, sizeof(boot), f) == NULL)
				boot[0] = '\0';
			fclose(f);
		}
		boot[strcspn(boot, "\n")] = '\0';
		if (boot[0] && stat("/proc/self/ns/pid", &st) == 0)
			snprintf(id, sizeof(id), "%s:%llu", boot, (unsigned long long)st.st_ino);
	}
	return id;
}

long long util_pid_start(long pid)
{
	char path[64], buf[1024], *p;
	long long start = -1;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* after "pid (comm)", which may hold spaces: field 3 on; starttime is 22 */
	p = strrchr(buf, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		start = strtoll(p + 1, NULL, 10);
	return start;
}

int util_pid_lives(long pid, long long start)
{
	long long now;

	if (!util_pid_alive(pid))
		return 0;
	now = util_pid_start(pid);
	return start < 0 || now < 0 || now == start;
}

int util_pid_alive(long pid)
{
	if (pid <= 0)
		return 0;
	if (kill((pid_t)pid, 0) == 0)
		return 1;
	return errno == EPERM;
}

int util_read_fd(int fd, struct sb *out)
{
	for (;;) {
		ssize_t r;

		sb_grow(out, 65536);
		r = read(fd, out->buf + out->len, out->cap - out->len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (r == 0)
			break;
		out->len += (size_t)r;
		out->buf[out->len] = '\0';
	}
	return 0;
}

int util_read_file(const char *path, struct sb *out, struct stat *st)
{
	struct stat mine;
	int fd = open(path, O_RDONLY | O_CLOEXEC), saved;

	if (fd < 0)
		return -1;
	if (st == NULL)
		st = &mine;
	if (fstat(fd, st) != 0)
		goto fail;
	if (S_ISDIR(st->st_mode)) {
		errno = EISDIR;
		goto fail;
	}
	if (util_read_fd(fd, out) != 0)
		goto fail;
	close(fd);
	return 0;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

int util_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len > SSIZE_MAX ? SSIZE_MAX : len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0) {
			errno = ENOSPC;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int util_replace_file(const char *path, const void *data, size_t len)
{
	char *tmp = xasprintf("%s.tmp", path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666), ok, saved;

	if (fd < 0) {
		free(tmp);
		return -1;
	}
	ok = util_write_all(fd, data, len) == 0;
	saved = errno;
	if (close(fd) != 0 && ok) {
		ok = 0;
		saved = errno;
	}
	if (ok && rename(tmp, path) != 0) {
		ok = 0;
		saved = errno;
	}
	if (!ok) {
		unlink(tmp);
		errno = saved;
	}
	free(tmp);
	return ok ? 0 : -1;
}

void util_strv_free(char **v)
{
	char **p;

	if (v == NULL)
		return;
	for (p = v; *p; p++)
		free(*p);
	free(v);
}

static char *const *dup_base;

/* By string, then by index: equal strings in the order they came. */
static int dup_cmp(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	int r = strcmp(dup_base[i], dup_base[j]);

	return r ? r : i < j ? -1 : i > j;
}

size_t util_strv_first_dup(char *const *v, size_t n)
{
	size_t *ix, i, first = n;

	if (n < 2)
		return n;
	ix = xmalloc(n * sizeof(*ix));
	for (i = 0; i < n; i++)
		ix[i] = i;
	dup_base = v;
	qsort(ix, n, sizeof(*ix), dup_cmp);
	dup_base = NULL;
	/* the second of each run of equal strings appears after the first */
	for (i = 1; i < n; i++)
		if (strcmp(v[ix[i]], v[ix[i - 1]]) == 0 && ix[i] < first)
			first = ix[i];
	free(ix);
	return first;
}

long util_parse_long(const char *s, long min, long max, long def)
{
	char *end;
	long v;

	if (s == NULL || *s == '\0')
		return def;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return def;
	return v;
}

long util_env_long(const char *name, long min, long max, long def)
{
	return util_parse_long(getenv(name), min, max, def);
}

void util_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int remove_errno;

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if ((type == FTW_DP || type == FTW_DNR ? rmdir(path) : unlink(path)) != 0 && errno != ENOENT && remove_errno == 0)
		remove_errno = errno;
	return 0;
}

int util_remove_tree(const char *dir)
{
	remove_errno = 0;
	if (nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0 && remove_errno == 0 &&
	    errno != ENOENT)
		remove_errno = errno ? errno : EIO;
	if (remove_errno == 0)
		return 0;
	errno = remove_errno;
	return -1;
}

double util_now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int util_utf8_valid(const void *data, size_t n)
{
	const unsigned char *s = data;
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k, need;
		unsigned char lo = 0x80, hi = 0xBF;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xC2 && c <= 0xDF)
			need = 1;
		else if (c >= 0xE0 && c <= 0xEF) {
			need = 2;
			if (c == 0xE0)
				lo = 0xA0;
			else if (c == 0xED)
				hi = 0x9F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3;
			if (c == 0xF0)
				lo = 0x90;
			else if (c == 0xF4)
				hi = 0x8F;
		} else
			return 0;
		if (n - i <= need)
			return 0;
		for (k = 1; k <= need; k++) {
			unsigned char d = s[i + k];

			if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF))
				return 0;
		}
		i += need + 1;
	}
	return 1;
}

size_t util_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j, d[33][33];

	if (la > 32 || lb > 32)
		return 99;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

size_t util_typo_distance(const char *name, const char *known)
{
	size_t d = strcasecmp(name, known) == 0 ? 1 : util_edit_distance(name, known);

	return d <= (strlen(known) <= 5 ? 1u : 2u) ? d : (size_t)-1;
}
