/*
 * procwatch: how many files and how much memory the processes named COMM
 * that carry the environment entry ENV hold, sampled every INTERVAL ms
 * from /proc until process PID is gone.
 *
 *   procwatch -c COMM -e NAME=VALUE -p PID [-f PREFIX] [-i INTERVAL_MS] OUT
 *
 * OUT gets one line once PID is gone:
 *   procs N samples S max_fds F max_files G max_hwm_kib H
 * N: processes seen, S: samples in which at least one was seen, F: the most
 * open file descriptors one of them had in a sample (entries of
 * /proc/P/fd, inherited ones included), G: the most of them that were files
 * under PREFIX (the data files it writes), H: the largest VmHWM (peak
 * resident set) read.  A process is
 * matched on its comm each sample (it may exec into COMM late) and on its
 * environment once.
 *
 * Built by tests/helpers/load.bash with cc; not part of the product.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEEN 4096

static long seen[MAX_SEEN];
static size_t nseen;

static int read_file(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;
	size_t got = 0;

	if (fd < 0)
		return -1;
	while (got + 1 < size && (n = read(fd, buf + got, size - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = '\0';
	return (int)got;
}

/* Does /proc/pid/environ hold the entry env exactly? */
static int has_env(long pid, const char *env)
{
	static char buf[1 << 17];
	char path[64];
	int n, i = 0;

	snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
	n = read_file(path, buf, sizeof(buf));
	while (i < n) {
		if (strcmp(buf + i, env) == 0)
			return 1;
		i += (int)strlen(buf + i) + 1;
	}
	return 0;
}

/* Open descriptors of pid; *files: how many are files under prefix/. */
static int count_fds(long pid, const char *prefix, int *files)
{
	char path[64], target[4096];
	DIR *d;
	struct dirent *e;
	size_t plen = prefix ? strlen(prefix) : 0;
	int n = 0;

	*files = 0;
	snprintf(path, sizeof(path), "/proc/%ld/fd", pid);
	d = opendir(path);
	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char link[64 + 256];
		ssize_t len;

		if (e->d_name[0] == '.')
			continue;
		n++;
		if (prefix == NULL)
			continue;
		snprintf(link, sizeof(link), "%s/%s", path, e->d_name);
		len = readlink(link, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = '\0';
		if ((size_t)len > plen && strncmp(target, prefix, plen) == 0 && target[plen] == '/')
			(*files)++;
	}
	closedir(d);
	return n;
}

static long hwm_kib(long pid)
{
	char path[64], buf[4096];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if (read_file(path, buf, sizeof(buf)) < 0 || (p = strstr(buf, "VmHWM:")) == NULL)
		return -1;
	return strtol(p + 6, NULL, 10);
}

int main(int argc, char **argv)
{
	const char *comm = NULL, *env = NULL, *prefix = NULL;
	long watched = 0, interval = 20, max_hwm = 0;
	unsigned long samples = 0;
	int max_fds = 0, max_files = 0, c;
	FILE *out;

	while ((c = getopt(argc, argv, "c:e:f:i:p:")) != -1) {
		switch (c) {
		case 'c': comm = optarg; break;
		case 'e': env = optarg; break;
		case 'f': prefix = optarg; break;
		case 'i': interval = strtol(optarg, NULL, 10); break;
		case 'p': watched = strtol(optarg, NULL, 10); break;
		default: goto usage;
		}
	}
	if (comm == NULL || env == NULL || watched <= 0 || interval <= 0 || optind != argc - 1)
		goto usage;

	while (kill((pid_t)watched, 0) == 0 || errno == EPERM) {
		DIR *d = opendir("/proc");
		struct dirent *e;
		struct timespec ts = { interval / 1000, (interval % 1000) * 1000000L };
		int any = 0;

		if (d == NULL) {
			perror("procwatch: /proc");
			return 1;
		}
		while ((e = readdir(d)) != NULL) {
			char path[64], name[64];
			long pid = strtol(e->d_name, NULL, 10), hwm;
			int fds, files, n;
			size_t i;

			if (pid <= 0)
				continue;
			snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
			n = read_file(path, name, sizeof(name));
			if (n <= 0)
				continue;
			if (name[n - 1] == '\n')
				name[n - 1] = '\0';
			if (strcmp(name, comm) != 0)
				continue;
			for (i = 0; i < nseen && seen[i] != pid; i++)
				;
			if (i == nseen) {
				if (!has_env(pid, env))
					continue;
				if (nseen < MAX_SEEN)
					seen[nseen++] = pid;
			}
			fds = count_fds(pid, prefix, &files);
			hwm = hwm_kib(pid);
			if (fds > max_fds)
				max_fds = fds;
			if (files > max_files)
				max_files = files;
			if (hwm > max_hwm)
				max_hwm = hwm;
			any = 1;
		}
		closedir(d);
		samples += (unsigned long)any;
		nanosleep(&ts, NULL);
	}
	out = fopen(argv[optind], "w");
	if (out == NULL) {
		perror(argv[optind]);
		return 1;
	}
	fprintf(out, "procs %zu samples %lu max_fds %d max_files %d max_hwm_kib %ld\n",
		nseen, samples, max_fds, max_files, max_hwm);
	return fclose(out) == 0 ? 0 : 1;
usage:
	fprintf(stderr, "usage: procwatch -c COMM -e NAME=VALUE -p PID [-f PREFIX] [-i INTERVAL_MS] OUT\n");
	return 2;
}
