/* table: text tables for people. */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

void table_init(struct table *t, size_t ncols, const char *const *heads, const char *align)
{
	t->ncols = ncols;
	t->align = align;
	t->cells = NULL;
	t->nrows = t->cap = 0;
	table_add(t, heads);
}

void table_add(struct table *t, const char *const *cells)
{
	size_t i;

	if (t->nrows == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 8;
		t->cells = xrealloc(t->cells, t->cap * t->ncols * sizeof(*t->cells));
	}
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * t->ncols + i] = xstrdup(cells[i] ? cells[i] : "-");
	t->nrows++;
}

/* Characters, not bytes: UTF-8 continuation bytes do not count. */
static size_t width(const char *s)
{
	size_t n = 0;

	for (; *s; s++) {
		if (((unsigned char)*s & 0xc0) != 0x80)
			n++;
	}
	return n;
}

static void pad(struct sb *out, size_t n)
{
	while (n-- > 0)
		sb_addc(out, ' ');
}

void table_format(const struct table *t, struct sb *out)
{
	size_t *w = xcalloc(t->ncols ? t->ncols : 1, sizeof(*w));
	size_t r, c;

	for (r = 0; r < t->nrows; r++) {
		for (c = 0; c < t->ncols; c++) {
			size_t n = width(t->cells[r * t->ncols + c]);

			if (n > w[c])
				w[c] = n;
		}
	}
	for (r = 0; r < t->nrows; r++) {
		size_t start = out->len;

		for (c = 0; c < t->ncols; c++) {
			const char *cell = t->cells[r * t->ncols + c];
			size_t n = width(cell);

			if (c > 0)
				pad(out, 2);
			if (t->align[c] == 'r')
				pad(out, w[c] - n);
			sb_adds(out, cell);
			if (t->align[c] != 'r')
				pad(out, w[c] - n);
		}
		while (out->len > start && out->buf[out->len - 1] == ' ')
			out->len--;
		sb_addc(out, '\n');
	}
	free(w);
}

void table_free(struct table *t)
{
	size_t i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->cap = 0;
}
