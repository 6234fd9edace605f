/* csv: CSV (RFC 4180) read one row at a time (see csv.h). */
#include "csv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "sb.h"

#define CSV_EOF (-1)
#define CSV_ERR (-2)

struct csv *csv_open(const char *path, char delim)
{
	static const char bom[] = "\xEF\xBB\xBF";
	struct csv *c;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	c = xcalloc(1, sizeof(*c));
	c->path = path;
	c->fd = fd;
	c->data = c->buf;
	c->delim = delim;
	c->line = 1;
	/* Enough bytes to see a byte order mark, even from a slow pipe. */
	while (c->len < 3) {
		n = read(fd, c->buf + c->len, sizeof(c->buf) - c->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;

			close(fd);
			free(c);
			errno = saved;
			return NULL;
		}
		if (n == 0) {
			c->eof = 1;
			break;
		}
		c->len += (size_t)n;
	}
	if (c->len >= 3 && memcmp(c->buf, bom, 3) == 0)
		c->pos = 3;
	return c;
}

struct csv *csv_open_mem(const char *text, size_t len, const char *path, char delim)
{
	struct csv *c = xcalloc(1, sizeof(*c));

	c->path = path;
	c->fd = -1;
	c->src = c->data = text;
	c->len = len;
	c->eof = 1;
	c->delim = delim;
	c->line = 1;
	if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
		c->pos = 3;
	return c;
}

void csv_close(struct csv *c)
{
	if (c == NULL)
		return;
	if (c->fd >= 0)
		close(c->fd);
	sb_free(&c->row);
	free(c->end);
	free(c);
}

static int csv_peek(struct csv *c)
{
	ssize_t n;

	while (c->pos == c->len) {
		if (c->eof)
			return CSV_EOF;
		n = read(c->fd, c->buf, sizeof(c->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return CSV_ERR;
		if (n == 0)
			c->eof = 1;
		c->pos = 0;
		c->len = (size_t)n;
	}
	return (unsigned char)c->data[c->pos];
}

static int csv_getc(struct csv *c)
{
	int ch = csv_peek(c);

	if (ch >= 0)
		c->pos++;
	return ch;
}

/* After '\n', '\r' or "\r\n" outside quotes. */
static void csv_eol(struct csv *c, int ch)
{
	if (ch == '\r' && csv_peek(c) == '\n')
		c->pos++;
	c->line++;
}

static void csv_field_end(struct csv *c)
{
	if (c->nfields == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		c->end = xrealloc(c->end, c->cap * sizeof(*c->end));
	}
	c->end[c->nfields++] = c->row.len;
}

const char *csv_field(const struct csv *c, size_t i, size_t *len)
{
	size_t start = i ? c->end[i - 1] : 0;

	*len = c->end[i] - start;
	return c->row.buf ? c->row.buf + start : "";
}

int csv_next(struct csv *c)
{
	enum { START, PLAIN, QUOTED, CLOSED } st = START;
	int ch;

	sb_reset(&c->row);
	c->nfields = 0;
	c->row_line = c->line;
	for (;;) {
		/* a file that never ends a row (/dev/zero) must not take all the memory */
		if (c->row.len + c->nfields * sizeof(*c->end) > CSV_ROW_MAX) {
			c->err = "a row over " CSV_ROW_MAX_TEXT " (the most a row may hold)";
			c->err_line = c->row_line;
			return -1;
		}
		ch = csv_getc(c);
		if (ch == CSV_ERR) {
			c->err = NULL;
			return -1;
		}
		switch (st) {
		case START:
			if (ch == '"') {
				st = QUOTED;
				break;
			}
			if (ch == CSV_EOF || ch == '\n' || ch == '\r') {
				if (c->nfields == 0) {
					if (ch == CSV_EOF)
						return 0;
					csv_eol(c, ch);
					c->row_line = c->line;
					break;
				}
				csv_field_end(c);
				if (ch != CSV_EOF)
					csv_eol(c, ch);
				return 1;
			}
			if (ch == c->delim) {
				csv_field_end(c);
				break;
			}
			sb_addc(&c->row, (char)ch);
			st = PLAIN;
			break;
		case PLAIN:
			if (ch == c->delim) {
				csv_field_end(c);
				st = START;
			} else if (ch == CSV_EOF || ch == '\n' || ch == '\r') {
				csv_field_end(c);
				if (ch != CSV_EOF)
					csv_eol(c, ch);
				return 1;
			} else
				sb_addc(&c->row, (char)ch);	/* a bare '"' too */
			break;
		case QUOTED:
			if (ch == CSV_EOF) {
				c->err = "unterminated quoted field";
				c->err_line = c->row_line;
				return -1;
			}
			if (ch == '"') {
				st = CLOSED;
				break;
			}
			if (ch == '\n' || (ch == '\r' && csv_peek(c) != '\n'))
				c->line++;
			sb_addc(&c->row, (char)ch);
			break;
		case CLOSED:
			if (ch == '"') {
				sb_addc(&c->row, '"');
				st = QUOTED;
			} else if (ch == c->delim) {
				csv_field_end(c);
				st = START;
			} else if (ch == CSV_EOF || ch == '\n' || ch == '\r') {
				csv_field_end(c);
				if (ch != CSV_EOF)
					csv_eol(c, ch);
				return 1;
			} else {
				c->err = "unexpected character after a closing quote";
				c->err_line = c->line;
				return -1;
			}
			break;
		}
	}
}

int csv_fail(const struct csv *c)
{
	fflush(stdout);
	if (c->err == NULL)
		err_msg("cannot read '%s':", c->path);
	else
		err_msg("%s:%lu: %s", c->path, c->err_line, c->err);
	return 1;
}
