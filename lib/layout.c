/* layout: the bucket's key layout (see layout.h). */
#include "layout.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "err.h"
#include "json.h"
#include "parquet.h"
#include "util.h"

char *layout_state_key(const char *pipeline)
{
	return xasprintf(".dataspoc/state/%s/state.json", pipeline);
}

char *layout_lock_key(const char *pipeline)
{
	return xasprintf(".dataspoc/state/%s/lock", pipeline);
}

char *layout_pending_key(const char *pipeline, const char *run_id)
{
	if (run_id == NULL)
		return xasprintf(".dataspoc/state/%s/pending/", pipeline);
	return xasprintf(".dataspoc/state/%s/pending/%s.json", pipeline, run_id);
}

char *layout_checkpoint_key(const char *pipeline, const char *run_id)
{
	if (run_id == NULL)
		return xasprintf(".dataspoc/state/%s/checkpoints/", pipeline);
	return xasprintf(".dataspoc/state/%s/checkpoints/%s.json", pipeline, run_id);
}

char *layout_pending_legacy_key(const char *pipeline)
{
	return xasprintf(".dataspoc/state/%s/pending.json", pipeline);
}

char *layout_stream_folder(const char *name, size_t len, struct sb *why)
{
	char *safe;
	size_t i;

	if (len == 0) {
		sb_adds(why, "the name is empty");
		return NULL;
	}
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c < 0x20 || c == 0x7f) {
			sb_adds(why, "the name holds control characters");
			return NULL;
		}
	}
	safe = xstrndup(name, len);
	for (i = 0; i < len; i++) {
		if (safe[i] == '/' || safe[i] == '\\' || (i == 0 && safe[i] == '.'))
			safe[i] = '_';
	}
	return safe;
}

char *layout_staging_prefix(const char *pipeline, const char *run_id)
{
	if (run_id == NULL)
		return xasprintf(".dataspoc/staging/%s/", pipeline);
	return xasprintf(".dataspoc/staging/%s/%s/", pipeline, run_id);
}

char *layout_shard_key(const char *pipeline, const char *run_id, long shard)
{
	if (shard < 0)
		return xasprintf(".dataspoc/staging/%s/%s/shards/plan.json", pipeline, run_id);
	return xasprintf(".dataspoc/staging/%s/%s/shards/%ld.json", pipeline, run_id, shard);
}

char *layout_shard_staging(const char *pipeline, const char *run_id, unsigned long shard,
			   const char *attempt)
{
	return xasprintf(".dataspoc/staging/%s/%s/shards/%lu-%s/", pipeline, run_id, shard, attempt);
}

char *layout_log_key(const char *pipeline, const char *run_id)
{
	if (run_id == NULL)
		return xasprintf(".dataspoc/logs/%s/", pipeline);
	return xasprintf(".dataspoc/logs/%s/%s.json", pipeline, run_id);
}

char *layout_state_dir(const char *pipeline)
{
	return xasprintf(".dataspoc/state/%s/", pipeline);
}

unsigned layout_date_unders(int (*has)(const char *column, void *arg), void *arg)
{
	static const char key[] = "________dt";
	unsigned n;

	for (n = 0; n < LAYOUT_DATE_UNDERS_MAX; n++) {
		if (!has(key + sizeof(key) - 3 - n, arg))
			break;
	}
	return n;
}

size_t layout_date_folder(const char *seg)
{
	size_t n = 0;

	while (seg[n] == '_' && n < LAYOUT_DATE_UNDERS_MAX)
		n++;
	return strncmp(seg + n, "dt=", 3) == 0 ? n + 3 : 0;
}

char *layout_data_key(const char *dir, unsigned unders, const char *date, const char *safe,
		      const char *run_id, unsigned index, const char *suffix, const char *ext)
{
	return xasprintf("%s/%.*sdt=%s/%s_%s_%04u%s%s", dir, (int)unders, "________", date, safe,
			 run_id, index, suffix, ext);
}

char *layout_part_key(const char *dir, const char *folder, const char *safe, const char *run_id,
		      unsigned index, const char *suffix, const char *ext)
{
	return xasprintf("%s/%s/%s_%s_%04u%s%s", dir, folder, safe, run_id, index, suffix, ext);
}

int layout_hive_folder(const char *p, size_t n)
{
	const char *eq = memchr(p, '=', n);

	return n > 0 && eq != NULL && eq > p && p[0] != '.';
}

static const char b32[] = "0123456789abcdefghijklmnopqrstuv";

/* The start of _rMIN-MAX-ROWS (its 'r') at the end of [base, end), else NULL. */
static const char *range_part(const char *base, const char *end)
{
	const char *p = end;
	int dashes = 0;

	while (p > base && p[-1] != '_') {
		p--;
		if (*p == '-')
			dashes++;
		else if (strchr(b32, *p) == NULL || *p == '\0')
			break;
	}
	if (p - 1 <= base || p[-1] != '_' || *p != 'r' || dashes != 2 || end - p < 6)
		return NULL;
	return p;
}

int layout_data_key_split(const char *key, char **dir, char **safe, char **run,
			  const char **format, const char **compression)
{
	static const struct {
		const char *ext, *format, *compression;
	} exts[] = {
		{ ".parquet", "parquet", NULL },
		{ ".jsonl.zst", "jsonl", "zstd" },
		{ ".jsonl.gz", "jsonl", "gzip" },
		{ ".jsonl", "jsonl", "none" },
	};
	const char *base = strrchr(key, '/'), *end, *p, *seq, *id;
	size_t i, n;

	if (base == NULL || base == key || strncmp(key, LAYOUT_META, sizeof(LAYOUT_META) - 1) == 0)
		return -1;
	/* the parent is dt=D (or partition_by's K=V), and a folder is above it */
	for (p = base - 1; p > key && *p != '/'; p--)
		;
	if (p == key || !layout_hive_folder(p + 1, (size_t)(base - p - 1)))
		return -1;
	base++;
	n = strlen(base);
	for (i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
		size_t e = strlen(exts[i].ext);

		if (n > e && strcmp(base + n - e, exts[i].ext) == 0)
			break;
	}
	if (i == sizeof(exts) / sizeof(exts[0]))
		return -1;
	end = base + n - strlen(exts[i].ext);
	for (seq = end; seq > base && seq[-1] >= '0' && seq[-1] <= '9'; seq--)
		;
	/* an upsert table's node file: _hNNNN */
	if (end - seq >= 4 && seq - 1 > base && seq[-1] == 'h' && strcmp(exts[i].format, "parquet") == 0)
		seq--;
	/* ... or its key range file: _rMIN-MAX-ROWS */
	if (strcmp(exts[i].format, "parquet") == 0 && range_part(base, end) != NULL)
		seq = range_part(base, end);
	if (end - seq < 4 || seq - 1 <= base || seq[-1] != '_')
		return -1;
	for (id = seq - 1; id > base && id[-1] != '_'; id--)
		;
	if (id - 1 <= base)
		return -1;
	*run = xstrndup(id, (size_t)(seq - 1 - id));
	if (!util_run_id_ok(*run)) {
		free(*run);
		return -1;
	}
	*dir = xstrndup(key, (size_t)(p - key));
	*safe = xstrndup(base, (size_t)(id - 1 - base));
	*format = exts[i].format;
	*compression = exts[i].compression;
	return 0;
}

unsigned long layout_node_of(const char *key)
{
	char *dir, *safe, *run;
	const char *format, *compression, *h = strrchr(key, '_'), *p;
	unsigned long n = 0;

	if (h == NULL || h[1] != 'h' || layout_data_key_split(key, &dir, &safe, &run, &format, &compression) != 0)
		return 0;
	free(dir);
	free(safe);
	free(run);
	for (p = h + 2; *p >= '0' && *p <= '9'; p++) {
		if (n > 1UL << 40)
			return 0;
		n = n * 10 + (unsigned long)(*p - '0');
	}
	return strcmp(p, ".parquet") == 0 ? n : 0;
}

char *layout_log_run(const char *key)
{
	static const char logs[] = ".dataspoc/logs/";
	const char *base = strrchr(key, '/');
	size_t n;
	char *id;

	if (strncmp(key, logs, sizeof(logs) - 1) != 0 || base == NULL || base < key + sizeof(logs))
		return NULL;
	n = strlen(++base);
	if (n <= 5 || strcmp(base + n - 5, ".json") != 0)
		return NULL;
	id = xstrndup(base, n - 5);
	if (!util_run_id_ok(id)) {
		free(id);
		return NULL;
	}
	return id;
}

size_t layout_state_pipeline(const char *key)
{
	static const char tail[] = "/state.json";
	size_t len = strlen(key), pre = sizeof(LAYOUT_STATE_PREFIX) - 1, post = sizeof(tail) - 1;

	if (len <= pre + post || strncmp(key, LAYOUT_STATE_PREFIX, pre) != 0 ||
	    strcmp(key + len - post, tail) != 0 || memchr(key + pre, '/', len - pre - post) != NULL)
		return 0;
	return len - pre - post;
}

static void b32_add(struct sb *out, const unsigned char *p, size_t n)
{
	unsigned long long acc = 0;
	unsigned bits = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		acc = acc << 8 | p[i];
		bits += 8;
		while (bits >= 5) {
			bits -= 5;
			sb_addc(out, b32[acc >> bits & 31]);
		}
	}
	if (bits)
		sb_addc(out, b32[acc << (5 - bits) & 31]);
}

/* Decode the base32 digits [p, end) into out: -1 when one is not a digit. */
static int b32_get(const char *p, const char *end, struct sb *out)
{
	unsigned long long acc = 0;
	unsigned bits = 0;

	for (; p < end; p++) {
		const char *d = *p ? strchr(b32, *p) : NULL;

		if (d == NULL)
			return -1;
		acc = acc << 5 | (unsigned long long)(d - b32);
		bits += 5;
		if (bits >= 8) {
			bits -= 8;
			sb_addc(out, (char)(acc >> bits & 0xff));
		}
	}
	return 0;
}

char *layout_range_key(const char *dir, const char *folder, const char *safe, const char *run_id,
		       const void *min, size_t nmin, const void *max, size_t nmax, unsigned long long rows)
{
	struct sb s = SB_INIT;

	sb_addf(&s, "%s/%s/%s_%s_r", dir, folder, safe, run_id);
	b32_add(&s, min, nmin);
	sb_addc(&s, '-');
	b32_add(&s, max, nmax);
	sb_addf(&s, "-%llu.parquet", rows);
	return sb_detach(&s);
}

int layout_range_of(const char *key, struct sb *min, struct sb *max, unsigned long long *rows)
{
	char *dir, *safe, *run;
	const char *format, *compression, *base = strrchr(key, '/'), *end, *r, *d1, *d2, *p;
	unsigned long long n = 0;

	if (base == NULL || layout_data_key_split(key, &dir, &safe, &run, &format, &compression) != 0)
		return 0;
	free(dir);
	free(safe);
	free(run);
	end = key + strlen(key) - strlen(".parquet");
	if (strcmp(format, "parquet") != 0 || (r = range_part(base + 1, end)) == NULL)
		return 0;
	d1 = strchr(r, '-');
	d2 = strchr(d1 + 1, '-');
	if (d2 + 1 == end || d1 == r + 1 || d2 == d1 + 1)
		return 0;
	for (p = d2 + 1; p < end; p++) {
		if (*p < '0' || *p > '9' || n > 1ULL << 50)
			return 0;
		n = n * 10 + (unsigned long long)(*p - '0');
	}
	sb_reset(min);
	sb_reset(max);
	if (b32_get(r + 1, d1, min) != 0 || b32_get(d1 + 1, d2, max) != 0)
		return 0;
	*rows = n;
	return 1;
}

/* Bytes of a value, percent-encoded for a folder name: [A-Za-z0-9_-] and a '.' not leading stay. */
static void encode(struct sb *out, const char *p, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '_' || c == '-' || (c == '.' && i > 0)) {
			sb_addc(out, (char)c);
		} else {
			sb_addc(out, '%');
			sb_addc(out, hex[c >> 4]);
			sb_addc(out, hex[c & 15]);
		}
	}
}

static int digit(char c)
{
	return c >= '0' && c <= '9';
}

/* The contents of the JSON string v: in place, or decoded into scratch. */
static void contents(const struct json_span *v, struct sb *scratch, const char **p, size_t *n)
{
	if (memchr(v->p + 1, '\\', v->len - 2) == NULL) {
		*p = v->p + 1;
		*n = v->len - 2;
		return;
	}
	sb_reset(scratch);
	json_string_decode(v, scratch);
	*p = scratch->buf ? scratch->buf : "";
	*n = scratch->len;
}

int layout_part_value(int gran, const struct json_span *v, struct sb *out, struct sb *scratch)
{
	const char *p;
	size_t n;
	int64_t us;
	int32_t days;
	time_t t;
	struct tm tm;
	int year;

	if (gran == CONFIG_GRAN_VALUE) {
		if (v->type == JSON_STRING) {
			contents(v, scratch, &p, &n);
		} else if (v->type == JSON_NUMBER || v->type == JSON_TRUE || v->type == JSON_FALSE) {
			p = v->p;
			n = v->len;
		} else {
			return 0;
		}
		if (n == 0 || n > LAYOUT_PART_VALUE_MAX)
			return 0;
		encode(out, p, n);
		return 1;
	}
	if (v->type != JSON_STRING)
		return 0;
	contents(v, scratch, &p, &n);
	if (pq_parse_timestamp(p, n, &us) == 0) {
		t = (time_t)(us / 1000000 - (us % 1000000 < 0));
	} else if (n >= 10 && pq_parse_date(p, 10, &days) == 0 &&
		   (n == 10 || ((p[10] == 'T' || p[10] == 't' || p[10] == ' ') && n >= 13 &&
				digit(p[11]) && digit(p[12]) && (p[11] - '0') * 10 + (p[12] - '0') < 24))) {
		/* a date, or a date-time without an offset: taken as UTC */
		t = (time_t)days * 86400 + (n == 10 ? 0 : ((p[11] - '0') * 10 + (p[12] - '0')) * 3600);
	} else {
		return 0;
	}
	if (gmtime_r(&t, &tm) == NULL)
		return 0;
	year = tm.tm_year + 1900;
	if (year < 1 || year > 9999)
		return 0;
	switch (gran) {
	case CONFIG_GRAN_HOUR:
		sb_addf(out, "%04d-%02d-%02dT%02d", year, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
		break;
	case CONFIG_GRAN_MONTH:
		sb_addf(out, "%04d-%02d", year, tm.tm_mon + 1);
		break;
	case CONFIG_GRAN_YEAR:
		sb_addf(out, "%04d", year);
		break;
	default:
		sb_addf(out, "%04d-%02d-%02d", year, tm.tm_mon + 1, tm.tm_mday);
		break;
	}
	return 1;
}
