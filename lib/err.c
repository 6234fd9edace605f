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

/* The last err_msg() line without "prog: ", for err_last_cause(). */
static pthread_mutex_t last_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_said[1024];
static unsigned long said_any;

static void remember(const char *line, size_t n)
{
	if (n >= sizeof(last_said))
		n = sizeof(last_said) - 1;
	pthread_mutex_lock(&last_lock);
	memcpy(last_said, line, n);
	last_said[n] = '\0';
	said_any++;
	pthread_mutex_unlock(&last_lock);
}

static int last(char *buf, size_t size, int cause_only)
{
	const char *cause, *q;
	int ret = -1;

	if (size == 0)
		return -1;
	buf[0] = '\0';
	pthread_mutex_lock(&last_lock);
	if (said_any) {
		cause = last_said;
		/* "cannot VERB 'SUBJECT': CAUSE" */
		q = cause_only && strncmp(last_said, "cannot ", 7) == 0 ? strchr(last_said, '\'') : NULL;
		if (q && (q = strstr(q + 1, "': ")) != NULL && q[3] != '\0')
			cause = q + 3;
		snprintf(buf, size, "%s", cause);
		ret = 0;
	}
	pthread_mutex_unlock(&last_lock);
	return ret;
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
	size_t n, flen = strlen(fmt), prog_len;
	int r;

	r = snprintf(buf, sizeof(buf), "%s: %s%s%s", err_prog, err_context ? err_context : "",
		     err_context ? ": " : "", prefix);
	n = r < 0 ? 0 : (size_t)r;
	prog_len = n < sizeof(buf) ? n : 0;
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
		remember(buf + prog_len, n - prog_len);
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
