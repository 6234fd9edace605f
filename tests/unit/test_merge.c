/* Unit tests of the upsert layout: the order of keys, the names of a table's files. */
#include "layout.h"
#include "merge.h"
#include "sb.h"
#include "taptest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The order key of a key of parts given as JSON texts (NULL-terminated). */
static void order(struct sb *out, const char *const *parts)
{
	struct sb key = SB_INIT;
	size_t i;

	for (i = 0; parts[i]; i++) {
		uint32_t n = (uint32_t)strlen(parts[i]);

		sb_add(&key, &n, sizeof(n));
		sb_add(&key, parts[i], n);
	}
	merge_order_key(key.buf, key.len, out);
	sb_free(&key);
}

static int below(const char *const *a, const char *const *b)
{
	struct sb x = SB_INIT, y = SB_INIT;
	size_t n;
	int c;

	order(&x, a);
	order(&y, b);
	n = x.len < y.len ? x.len : y.len;
	c = memcmp(x.buf, y.buf, n);
	c = c < 0 || (c == 0 && x.len < y.len);
	sb_free(&x);
	sb_free(&y);
	return c;
}

static void test_order(void)
{
	static const char *const seq[][3] = {
		{ "-100", NULL }, { "-99", NULL }, { "-1", NULL }, { "0", NULL }, { "9", NULL },
		{ "10", NULL }, { "1000000", NULL }, { "1.5", NULL }, { "\"\"", NULL }, { "\"a\"", NULL },
		{ "\"ab\"", NULL }, { "\"b\"", NULL },
	};
	static const char *const c1[] = { "1", "\"b\"", NULL };
	static const char *const c2[] = { "1", "\"ba\"", NULL };
	static const char *const c3[] = { "2", "\"a\"", NULL };
	static const char *const c4[] = { "10", "\"a\"", NULL };
	size_t i;
	int good = 1;

	for (i = 0; i + 1 < sizeof(seq) / sizeof(seq[0]); i++)
		good &= below(seq[i], seq[i + 1]) && !below(seq[i + 1], seq[i]);
	ok(good, "order keys: integers by value (negative ones too), then other values, strings by their bytes");
	ok(below(c1, c2) && below(c2, c3) && below(c3, c4), "order keys: a composite key part by part");
	ok(!below(seq[3], seq[3]), "order keys: a key is not below itself");
}

static void test_names(void)
{
	struct sb min = SB_INIT, max = SB_INIT, x = SB_INIT, y = SB_INIT;
	static const char *const a[] = { "1", NULL };
	static const char *const b[] = { "\"zz\\u0000\"", NULL };
	unsigned long long rows = 0;
	char *key, *dir, *safe, *run;
	const char *format, *compression;

	order(&x, a);
	order(&y, b);
	key = layout_range_key("raw/s/t", "dt=2026-12-03", "t", "20261203T100000Z-000abc", x.buf, x.len, y.buf,
			       y.len, 42);
	ok(strncmp(key, "raw/s/t/dt=2026-12-03/t_20261203T100000Z-000abc_r", 49) == 0 &&
	   strcmp(key + strlen(key) - 11, "-42.parquet") == 0, "range key: %s", key);
	ok(layout_range_of(key, &min, &max, &rows) == 1 && rows == 42 && min.len == x.len &&
	   memcmp(min.buf, x.buf, x.len) == 0 && max.len == y.len && memcmp(max.buf, y.buf, y.len) == 0,
	   "range key: the bounds and rows read back");
	ok(layout_data_key_split(key, &dir, &safe, &run, &format, &compression) == 0 &&
	   strcmp(dir, "raw/s/t") == 0 && strcmp(safe, "t") == 0 && strcmp(run, "20261203T100000Z-000abc") == 0,
	   "range key: a data file of its run");
	free(dir);
	free(safe);
	free(run);
	ok(layout_range_of("raw/s/t/dt=2026-12-03/t_20261203T100000Z-000abc_h0003.parquet", &min, &max, &rows) == 0 &&
	   layout_node_of("raw/s/t/dt=2026-12-03/t_20261203T100000Z-000abc_h0003.parquet") == 3,
	   "a node file of the hash layout is no range file");
	ok(layout_range_of("raw/s/t/dt=2026-12-03/t_20261203T100000Z-000abc_0001.parquet", &min, &max, &rows) == 0,
	   "an append-only file is no range file");
	free(key);
	sb_free(&min);
	sb_free(&max);
	sb_free(&x);
	sb_free(&y);
}

int main(void)
{
	test_order();
	test_names();
	return tap_done();
}
