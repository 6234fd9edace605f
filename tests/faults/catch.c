/*
 * catch: signal a process of a fault trial as soon as it exists (for
 * tests/faults/run, which builds it).  pipe-state and pipe-commit live for
 * milliseconds: a shell looking through /proc misses most of them.
 *
 *   catch NAME TOKEN DELAY_US SIGNAL WATCH_PID
 *
 * Looks through /proc, without pause, for a process named NAME whose
 * environment holds FAULT_TOKEN=TOKEN and whose arguments hold no "-n" (the
 * driver's checks); once found, waits DELAY_US microseconds and sends it
 * SIGNAL (a number).  Prints its pid.  Exit status 0 when the signal was
 * sent, 1 when WATCH_PID (the driver) ended first or the process did
 * before the signal, 2 on bad usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* Read a /proc file whole (NUL-separated lists stay so): its length, or -1. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while ((size_t)got < size - 1 && (n = read(fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	return got;
}

/* 1 when the NUL-separated list buf[0..len) holds the string s. */
static int holds(const char *buf, ssize_t len, const char *s)
{
	const char *p = buf, *end = buf + len;

	for (; p < end; p += strlen(p) + 1) {
		if (strcmp(p, s) == 0)
			return 1;
	}
	return 0;
}

static pid_t find(const char *name, const char *token)
{
	static char buf[1 << 16];
	char path[64];
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t found = 0;
	ssize_t n;

	if (d == NULL)
		return 0;
	while (found == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", e->d_name);
		if (slurp(path, buf, sizeof(buf)) <= 0)
			continue;
		buf[strcspn(buf, "\n")] = '\0';
		if (strncmp(buf, name, 15) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", e->d_name);
		n = slurp(path, buf, sizeof(buf));
		if (n <= 0 || !holds(buf, n, token))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", e->d_name);
		n = slurp(path, buf, sizeof(buf));
		if (n <= 0 || holds(buf, n, "-n"))
			continue;
		found = (pid_t)atol(e->d_name);
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	char token[4200];
	pid_t pid = 0, watch;
	long delay;
	int sig;

	if (argc != 6) {
		fprintf(stderr, "usage: catch NAME TOKEN DELAY_US SIGNAL WATCH_PID\n");
		return 2;
	}
	snprintf(token, sizeof(token), "FAULT_TOKEN=%s", argv[2]);
	delay = atol(argv[3]);
	sig = atoi(argv[4]);
	watch = (pid_t)atol(argv[5]);
	while ((pid = find(argv[1], token)) == 0) {
		if (kill(watch, 0) != 0)
			return 1;
	}
	if (delay > 0)
		usleep((useconds_t)delay);
	if (kill(pid, sig) != 0)
		return 1;
	printf("%ld\n", (long)pid);
	return 0;
}
