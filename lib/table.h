/* table: text tables for people (status, manifest), columns aligned. */
#ifndef PIPE_TABLE_H
#define PIPE_TABLE_H

#include <stddef.h>

#include "sb.h"

struct table {
	size_t ncols;
	const char *align;	/* one 'l' or 'r' per column */
	char **cells;		/* nrows * ncols, row 0 the heading */
	size_t nrows, cap;
};

/*
 * Start a table whose first row is heads (ncols strings, copied); align
 * holds 'l' (left) or 'r' (right) for each column and must outlive t.
 */
void table_init(struct table *t, size_t ncols, const char *const *heads, const char *align);

/* Add a row of t->ncols strings (copied; NULL prints as "-"). */
void table_add(struct table *t, const char *const *cells);

/*
 * Append the table to out: columns two spaces apart, each as wide as its
 * widest cell (counted in UTF-8 characters), no trailing blanks.
 */
void table_format(const struct table *t, struct sb *out);

void table_free(struct table *t);

#endif
