/* err: one-line messages, written in one write(2), and checked allocation. */
#include "err.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *err_prog = "dataspoc-pipe";
const char *err_context;

void err_init(const char *argv0)
{
	const char *slash;

	if (argv0 == NULL || *argv0 == '\0')
		return;
	slash = strrchr(argv0, '/');
	err_prog = slash ? slash + 1 : argv0;
}

/*
 * The last err_msg() lines without "prog: ", for err_last_cause() and
 * err_first_cause(): line k (counting from 1) in said[k % SAID_KEPT], with
 * where its cause starts in it (0: the whole line is its own cause).
 */
#define SAID_KEPT 8
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char line[1024];
	size_t cause_at;
} said[SAID_KEPT];
static unsigned long said_any;

static void remember(const char *line, size_t n, size_t cause_at)
{
	size_t k;

	if (n >= sizeof(said[0].line))
		n = sizeof(said[0].line) - 1;
	if (cause_at >= n)
		cause_at = 0;
	pthread_mutex_lock(&last_lock);
	k = (said_any + 1) % SAID_KEPT;
	memcpy(said[k].line, line, n);
	said[k].line[n] = '\0';
	said[k].cause_at = cause_at;
	said_any++;
	pthread_mutex_unlock(&last_lock);
}

/*
 * Of a line of the shape "cannot VERB 'SUBJECT': CAUSE", the length of the
 * format's part before CAUSE ("cannot %s '%s': "; with a format ending
 * "'%s':", strerror's cause, the whole format), else 0.  The shape is the
 * format's, not the printed line's: a subject (a path, a key, a stream's
 * name) may hold "': " itself.
 */
static size_t cause_fmt_len(const char *fmt)
{
	const char *q, *end;
	size_t flen = strlen(fmt);

	if (strncmp(fmt, "cannot ", 7) != 0 || (q = strchr(fmt, '\'')) == NULL)
		return 0;
	if ((end = strstr(q + 1, "': ")) != NULL && end[3] != '\0')
		return (size_t)(end + 3 - fmt);
	if (flen >= 2 && strcmp(fmt + flen - 2, "':") == 0 && fmt + flen - 2 > q)
		return flen;
	return 0;
}

/* Line k said (the last: said_any; 0: the first said after mark, or the oldest kept). */
static int said_line(char *buf, size_t size, int cause_only, unsigned long mark, int first)
{
	unsigned long k;
	int ret = -1;

	if (size == 0)
		return -1;
	buf[0] = '\0';
	pthread_mutex_lock(&last_lock);
	if (said_any > mark) {
		k = first ? mark + 1 : said_any;
		if (said_any - k >= SAID_KEPT)
			k = said_any - SAID_KEPT + 1;
		/* "cannot VERB 'SUBJECT': CAUSE", as vmsg() found it in its format */
		snprintf(buf, size, "%s", said[k % SAID_KEPT].line + (cause_only ? said[k % SAID_KEPT].cause_at : 0));
		ret = 0;
	}
	pthread_mutex_unlock(&last_lock);
	return ret;
}

static int last(char *buf, size_t size, int cause_only)
{
	return said_line(buf, size, cause_only, 0, 0);
}

int err_first_cause(unsigned long mark, char *buf, size_t size)
{
	return said_line(buf, size, 1, mark, 1);
}

unsigned long err_said(void)
{
	unsigned long n;

	pthread_mutex_lock(&last_lock);
	n = said_any;
	pthread_mutex_unlock(&last_lock);
	return n;
}

int err_last_cause(char *buf, size_t size)
{
	return last(buf, size, 1);
}

int err_last(char *buf, size_t size)
{
	return last(buf, size, 0);
}

const char *err_stage_name(const char *own)
{
	const char *v = getenv("DATASPOC_PIPE_PROG"), *p;

	if (v == NULL || *v == '\0' || strlen(v) > 64)
		return own;
	for (p = v; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
			return own;
	return v;
}

void err_init_stage(const char *argv0)
{
	err_init(argv0);
	err_prog = err_stage_name(err_prog);
}

static void vmsg(const char *prefix, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vmsg(const char *prefix, const char *fmt, va_list ap)
{
	char buf[4096];
	int saved = errno;
	size_t n, flen = strlen(fmt), prog_len, cause_at = 0, head = *prefix ? 0 : cause_fmt_len(fmt);
	int r;

	r = snprintf(buf, sizeof(buf), "%s: %s%s%s", err_prog, err_context ? err_context : "",
		     err_context ? ": " : "", prefix);
	n = r < 0 ? 0 : (size_t)r;
	prog_len = n < sizeof(buf) ? n : 0;
	if (head && head < 512) {
		/* how long the format's part before the cause prints, with the
		 * same arguments (those after it are not used) */
		char part[512];
		va_list aq;

		memcpy(part, fmt, head);
		part[head] = '\0';
		va_copy(aq, ap);
		r = vsnprintf(NULL, 0, part, aq);
		va_end(aq);
		/* (a format ending "':": strerror's cause comes after a blank) */
		cause_at = r < 0 ? 0 : (size_t)r + (head == flen ? 1 : 0);
	}
	if (n < sizeof(buf)) {
		r = vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n < sizeof(buf) && flen > 0 && fmt[flen - 1] == ':') {
		r = snprintf(buf + n, sizeof(buf) - n, " %s", strerror(saved));
		n += r < 0 ? 0 : (size_t)r;
	}
	if (n >= sizeof(buf) - 1)
		n = sizeof(buf) - 2;
	if (*prefix == '\0' && n > prog_len)
		remember(buf + prog_len, n - prog_len, cause_at);
	buf[n++] = '\n';
	if (write(STDERR_FILENO, buf, n) < 0) {
		/* nothing left to tell anyone */
	}
	errno = saved;
}

void err_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

void err_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("warning: ", fmt, ap);
	va_end(ap);
}

static void oom(void)
{
	static const char tail[] = ": out of memory\n";

	if (write(STDERR_FILENO, err_prog, strlen(err_prog)) < 0 ||
	    write(STDERR_FILENO, tail, sizeof(tail) - 1) < 0) {
		/* exiting anyway */
	}
	exit(1);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (p == NULL)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom();
	p = xmalloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}
