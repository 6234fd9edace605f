/*
 * err: messages to stderr and allocation that never fails quietly.
 *
 * How a failure's reason travels, the two ways (and no other):
 *
 *  1. Said where it is known: the function that knows the object and the
 *     cause prints one line with err_msg() (naming the object: a path, a
 *     URL, file:line:col) and returns -1 (or NULL); its callers only pass
 *     the -1 on.  This is the rule.
 *  2. Handed back to be placed: when only the caller can say where (the
 *     sink names the input line, the config loader file:line:col, the
 *     driver the run), the function appends the reason, in the user's
 *     words and without a program name, to a `struct sb *why` and prints
 *     nothing: config_split_words(), config_bucket_resolve(), cron_check(),
 *     layout_stream_folder(), s3_target_init(), transform_apply().
 *
 * What a Parquet value needs (struct pq_fail: a column to widen) is not an
 * error but a result, and is not a reason.
 *
 * A reason said the first way reaches stderr only.  A caller that records the
 * failure where stderr does not go (the sink's plan, hence the run log, issue
 * #29) takes the cause of the line said with err_last_cause(), or of the
 * first said since a mark with err_first_cause().
 */
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
 * The name a stage the driver runs (pipe-state, pipe-tap, ...) speaks
 * under: $DATASPOC_PIPE_PROG, which the driver sets to its own name, so
 * that a message is under the command the user ran ("dataspoc-pipe: no
 * pipeline 'x'", not "pipe-tap: ..."); own (the stage's name) when it is
 * not set, as when the stage is run by hand, or is not a plain word.
 */
const char *err_stage_name(const char *own);

/* err_init() for such a stage: err_prog is err_stage_name() of argv[0]'s. */
void err_init_stage(const char *argv0);

/*
 * Print "prog: <fmt...>" and a newline on stderr in one write(2).  When fmt
 * ends with ':', ": strerror(errno)" is appended, so
 * err_msg("cannot open '%s':", path) prints "prog: cannot open 'x': No such ...".
 * errno is preserved.
 */
void err_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Same as err_msg() with "warning: " after the program name. */
void err_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The cause of the last err_msg() line of this process (any thread): what
 * follows its quoted subject ("cannot write 'x': No space left on device"
 * gives "No space left on device"; lib/store's lines all read "cannot VERB
 * 'SUBJECT': CAUSE"), else the whole line, without the program's name.
 * Where the subject ends is found in err_msg()'s format, not in the printed
 * line, whose subject (a path, a key) may hold "': " itself.  Copied into buf (size bytes, cut short if need be); 0, or -1 (buf empty)
 * when no line was said.  Warnings do not count.
 */
int err_last_cause(char *buf, size_t size);

/*
 * The cause, as err_last_cause() takes it, of the first err_msg() line said
 * after mark (an err_said() count): the root one, when what failed then
 * said more (a failed write, then its failed cleanup); of the oldest line
 * kept when more than 8 were said since.  0, or -1 (buf empty) when none was.
 */
int err_first_cause(unsigned long mark, char *buf, size_t size);

/* The whole last err_msg() line, as err_last_cause() takes it: 0, or -1. */
int err_last(char *buf, size_t size);

/* How many err_msg() lines this process has said: has one been since? */
unsigned long err_said(void);

/* Allocation: on failure print "prog: out of memory" and exit 1. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/* printf into a new string. */
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
