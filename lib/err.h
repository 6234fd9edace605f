/* err: messages to stderr and allocation that never fails quietly. */
#ifndef PIPE_ERR_H
#define PIPE_ERR_H

#include <stddef.h>

/* Name printed before every message; set once by main() through err_init(). */
extern const char *err_prog;

/*
 * What the program is working on, printed after its name when not NULL
 * ("pipe-state: pipeline 'x': cannot ..."): set around work done for one of
 * several subjects, so that a message from lib/ names it.
 */
extern const char *err_context;

/* Take the program's name from argv[0] (its last path component). */
void err_init(const char *argv0);

/*
 * Print "prog: <fmt...>" and a newline on stderr in one write(2).  When fmt
 * ends with ':', ": strerror(errno)" is appended, so
 * err_msg("cannot open '%s':", path) prints "prog: cannot open 'x': No such ...".
 * errno is preserved.
 */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Same as err_msg() with "warning: " after the program name. */
void err_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Allocation: on failure print "prog: out of memory" and exit 1. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
