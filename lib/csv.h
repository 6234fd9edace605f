/*
 * csv: CSV (RFC 4180) read one row at a time, from a file or from memory;
 * the reader of dataspoc-tap-csv (files) and
 * dataspoc-tap-google-sheets-public (a sheet's export, in memory).
 */
#ifndef PIPE_CSV_H
#define PIPE_CSV_H

#include <stddef.h>

#include "sb.h"

/*
 * The most a row may hold, its fields' bytes and their ends together: a
 * longer one (a file that never ends a row: /dev/zero, no newline) is an
 * error naming the file and the line it started on.
 */
#define CSV_ROW_MAX ((size_t)256 << 20)
#define CSV_ROW_MAX_TEXT "256 MiB"

/* A CSV file being read; a row's fields through csv_field(). */
struct csv {
	const char *path;	/* for messages */
	int fd;			/* -1: reading src */
	const char *src;	/* csv_open_mem(): the whole text */
	const char *data;	/* what pos and len index: buf or src */
	char delim;
	unsigned long line;	/* the physical line being read, 1-based */
	unsigned long row_line;	/* the line the last row started on */
	const char *err;	/* why csv_next() failed; NULL: see errno */
	unsigned long err_line;
	struct sb row;		/* the row's fields, back to back */
	size_t *end;		/* end[i]: where field i ends in row */
	size_t nfields, cap;
	size_t pos, len;
	int eof;
	char buf[1 << 16];
};

/* Open path, its byte order mark skipped; NULL with errno set. */
struct csv *csv_open(const char *path, char delim);
/* Read text[0..len) (not copied: it must outlive the reader), named path in messages. */
struct csv *csv_open_mem(const char *text, size_t len, const char *path, char delim);
void csv_close(struct csv *c);
/*
 * The next row.  1 with a row, 0 at the end of the file, -1 on error (c->err
 * says why, or errno when c->err is NULL).  Empty lines are skipped, as
 * Python's csv module does.
 */
int csv_next(struct csv *c);
/* Field i of the row: its bytes, *len of them. */
const char *csv_field(const struct csv *c, size_t i, size_t *len);
/* Report a csv_next() failure, after what was printed before it: returns 1 (EXIT_FAIL). */
int csv_fail(const struct csv *c);

#endif
