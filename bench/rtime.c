/*
 * bench/rtime: run a command, then append one line to FILE:
 *   ELAPSED_S MAXRSS_KIB USER_S SYS_S EXIT_STATUS
 * ELAPSED is wall-clock (CLOCK_MONOTONIC); MAXRSS is the kernel's ru_maxrss
 * for the child, which folds in every descendant it waited for: the peak
 * RSS of the largest single process of the tree (as GNU time's %M).
 * USER and SYS cover the whole tree.  Exit status is 128+n on signal n.
 *
 *   rtime [-a] FILE COMMAND [ARG...]
 *
 * -a: all descendants, those orphaned too (a pipe-tap janitor, a process
 * of its own session): rtime is their subreaper (PR_SET_CHILD_SUBREAPER),
 * waits for every one of them once COMMAND has ended, and adds their user
 * and system time; ELAPSED still ends with COMMAND.
 *
 * Built by bench/run with cc, so the benchmark needs no GNU time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct rusage ru;
	double t0, t1;
	pid_t pid;
	int status, code, all = 0;
	FILE *f;

	if (argc > 1 && strcmp(argv[1], "-a") == 0) {
		all = 1;
		argv++;
		argc--;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: rtime [-a] FILE COMMAND [ARG...]\n");
		return 2;
	}
	if (all && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
		perror("rtime: PR_SET_CHILD_SUBREAPER");
		return 2;
	}
	t0 = now();
	pid = fork();
	if (pid < 0) {
		perror("rtime: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "rtime: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			perror("rtime: wait4");
			return 2;
		}
	}
	t1 = now();
	code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	while (all) {
		struct rusage o;
		int st;

		if (wait4(-1, &st, 0, &o) < 0) {
			if (errno == EINTR)
				continue;
			break;	/* ECHILD: none left */
		}
		timeradd(&ru.ru_utime, &o.ru_utime, &ru.ru_utime);
		timeradd(&ru.ru_stime, &o.ru_stime, &ru.ru_stime);
		if (o.ru_maxrss > ru.ru_maxrss)
			ru.ru_maxrss = o.ru_maxrss;
	}
	f = fopen(argv[1], "a");
	if (f == NULL) {
		perror(argv[1]);
		return 2;
	}
	fprintf(f, "%.6f %ld %.6f %.6f %d\n", t1 - t0, ru.ru_maxrss,
		(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6,
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6, code);
	if (fclose(f) != 0) {
		perror(argv[1]);
		return 2;
	}
	return code;
}
