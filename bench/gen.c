/*
 * bench/gen: a deterministic Singer stream for the benchmark.
 *
 *   gen [-s SIZE_MB] [-n STREAMS] [-S SEED] [-m META_FILE] > stream.jsonl
 *
 * Writes SCHEMA messages (each stream's, before its first RECORD), RECORDs of
 * several interleaved streams with a realistic mix of JSON (integers beyond
 * 2^53, negative integers, floats with exponents, strings with escapes and
 * raw UTF-8, nested objects and arrays, nulls, booleans, ISO timestamps),
 * and a STATE every 10,000 records, until at least SIZE_MB * 10^6 bytes are
 * out.  Output depends only on the seed and the stream count: a smaller
 * size's output is a prefix of a larger one's.  The meta file gets
 * "key value" lines: bytes, lines, records, states, schemas, record_bytes
 * (the bytes of every RECORD's "record" value plus one newline each, i.e.
 * what lands in the bucket uncompressed).
 *
 * Built by bench/run with cc; not part of the project's library.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t rs[4];

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

/* xoshiro256** seeded with splitmix64. */
static void rseed(uint64_t seed)
{
	int i;

	for (i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		rs[i] = z ^ (z >> 31);
	}
}

static uint64_t rnd(void)
{
	uint64_t r = rotl(rs[1] * 5, 7) * 9, t = rs[1] << 17;

	rs[2] ^= rs[0];
	rs[3] ^= rs[1];
	rs[1] ^= rs[2];
	rs[0] ^= rs[3];
	rs[2] ^= t;
	rs[3] = rotl(rs[3], 45);
	return r;
}

static unsigned below(unsigned n)
{
	return (unsigned)(rnd() % n);
}

/* Percent chance. */
static int chance(unsigned pct)
{
	return below(100) < pct;
}

/* ---- output buffer: one line at a time ---- */

static char line[1 << 16];
static size_t ll;

static void put(const char *s)
{
	size_t n = strlen(s);

	memcpy(line + ll, s, n);
	ll += n;
}

static void putf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void putf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ll += (size_t)vsnprintf(line + ll, sizeof(line) - ll, fmt, ap);
	va_end(ap);
}

static void pick(const char *const *v, size_t n)
{
	put(v[below((unsigned)n)]);
}
#define PICK(a) pick(a, sizeof(a) / sizeof(a[0]))

/* ---- value pools: escapes, raw UTF-8, \u escapes, surrogate pairs ---- */

static const char *const first_names[] = {
	"Ana", "Jos\xc3\xa9", "M\xc3\xbcller", "Zo\xc3\xab", "Bj\xc3\xb6rn", "Fran\\u00e7ois",
	"Li", "Mar\\u00eda", "\xe6\x9d\x8e\xe9\x9b\xb7", "Ol\xc3\xa1", "Sven", "Priya",
	"Jo\\u00e3o", "Kate", "\xd0\x9e\xd0\xbb\xd1\x8c\xd0\xb3\xd0\xb0", "Tom",
};
static const char *const last_names[] = {
	"Silva", "O'Brien", "\xc3\x98" "deg\xc3\xa5rd", "Nguy\xe1\xbb\x85n", "Smith",
	"Garc\\u00eda", "Schmidt", "\xe7\x94\xb0\xe4\xb8\xad", "Kowalski", "Dubois",
	"Rossi", "van der Berg",
};
static const char *const cities[] = {
	"S\xc3\xa3o Paulo", "Z\xc3\xbcrich", "Reykjav\\u00edk", "Krak\xc3\xb3w", "Lisbon",
	"M\\u00fcnchen", "\xe6\x9d\xb1\xe4\xba\xac", "New York", "Montr\xc3\xa9" "al", "Berlin",
};
static const char *const streets[] = {
	"Rua Augusta", "Bahnhofstra\xc3\x9f" "e", "Main St", "Avenida da Liberdade",
	"Champs-\\u00c9lys\\u00e9es", "Ul. Floria\xc5\x84ska", "5th Ave", "Baker Street",
};
static const char *const notes[] = {
	"", "leave at the door", "He said \\\"ring twice\\\"", "path C:\\\\orders\\\\2024",
	"line one\\nline two", "caf\\u00e9 au lait", "na\xc3\xafve r\xc3\xa9sum\xc3\xa9",
	"gift \xf0\x9f\x8e\x81 wrap", "tab\\tseparated\\tvalues", "emoji \\ud83d\\ude00 ok",
	"\xe8\xaf\xb7\xe5\x9c\xa8\xe4\xb8\x8b\xe5\x8d\x88\xe9\x80\x81\xe8\xbe\xbe",
	"50% off \\/ promo", "<b>fragile</b> & \\\"heavy\\\"",
};
static const char *const statuses[] = { "pending", "paid", "shipped", "delivered", "cancelled", "refunded" };
static const char *const currencies[] = { "EUR", "USD", "BRL", "GBP", "JPY", "CHF" };
static const char *const methods[] = { "standard", "express", "pickup", "same-day" };
static const char *const kinds[] = { "page_view", "click", "add_to_cart", "checkout", "login", "search" };
static const char *const paths[] = {
	"/", "/products/42", "/search?q=caf\\u00e9&page=2", "/cart", "/account/orders",
	"/p/\xc3\xa0-la-carte", "/checkout?step=2&coupon=\\\"X\\\"",
};
static const char *const agents[] = {
	"Mozilla/5.0 (X11; Linux x86_64)", "Mozilla/5.0 (iPhone)",
	"curl/8.5.0", "python-requests/2.31.0",
};
static const char *const tags[] = { "vip", "b2b", "newsletter", "churn-risk", "\xc3\xa9lite", "beta", "wholesale" };
static const char *const titles[] = {
	"Espresso cup \\\"Classic\\\"", "Backslash \\\\ key cap", "T\xc3\xa9" "a pot 1\\u00bdl",
	"USB-C cable 2m", "Notebook A5\\n(dotted)", "\xe6\x8a\xb9\xe8\x8c\xb6 matcha 100g",
};

/* ---- scalar writers ---- */

static time_t base_time;

static void ts(uint64_t off)
{
	time_t t = base_time + (time_t)off;
	struct tm tm;
	char b[40];

	gmtime_r(&t, &tm);
	strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
	put("\"");
	put(b);
	if (chance(50))
		putf(".%06uZ\"", below(1000000));
	else
		put("+00:00\"");
}

/* An integer beyond 2^53 (and beyond INT64_MAX half the time). */
static void bigint(void)
{
	putf("%llu", (unsigned long long)(10000000000000000000ULL + rnd() % 8446744073709551615ULL));
}

static void money(void)
{
	unsigned c = below(10);

	if (c == 0)
		putf("%.4e", (double)below(10000000) / 100.0);	/* 1.2345e+03 */
	else if (c == 1)
		putf("%uE-2", below(1000000));
	else
		putf("%u.%02u", below(5000), below(100));
}

/* ---- streams ---- */

struct stream {
	char name[64];
	int kind;
	uint64_t seq;
	uint64_t bookmark;
	int schema_sent;
};

static const char *const kind_names[] = { "public-orders", "public-events", "public-customers", "public-products" };
/* Of 100 records: orders 20, events 35, customers 25, products 20. */
static const unsigned kind_weight[] = { 20, 35, 25, 20 };

static void schema(const struct stream *s)
{
	put("{\"type\":\"SCHEMA\",\"stream\":\"");
	put(s->name);
	put("\",\"schema\":{\"type\":\"object\",\"properties\":{");
	switch (s->kind) {
	case 0:
		put("\"id\":{\"type\":\"integer\"},\"customer_id\":{\"type\":[\"null\",\"integer\"]},"
		    "\"status\":{\"type\":\"string\",\"enum\":[\"pending\",\"paid\",\"shipped\",\"delivered\",\"cancelled\",\"refunded\"]},"
		    "\"amount\":{\"type\":\"number\"},\"currency\":{\"type\":\"string\",\"maxLength\":3},"
		    "\"discount\":{\"type\":[\"null\",\"number\"]},"
		    "\"note\":{\"type\":[\"null\",\"string\"]},\"paid\":{\"type\":\"boolean\"},"
		    "\"items\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"sku\":{\"type\":\"string\"},\"qty\":{\"type\":\"integer\"},\"price\":{\"type\":\"number\"}}}},"
		    "\"shipping\":{\"type\":\"object\",\"properties\":{\"method\":{\"type\":\"string\"},\"street\":{\"type\":[\"null\",\"string\"]},\"city\":{\"type\":\"string\"}}},"
		    "\"updated_at\":{\"type\":\"string\",\"format\":\"date-time\"}");
		break;
	case 1:
		put("\"event_id\":{\"type\":\"string\",\"format\":\"uuid\"},\"user_id\":{\"type\":\"integer\"},"
		    "\"kind\":{\"type\":\"string\"},\"payload\":{\"type\":\"object\"},\"ts\":{\"type\":\"string\",\"format\":\"date-time\"}");
		break;
	case 2:
		put("\"id\":{\"type\":\"integer\"},\"name\":{\"type\":\"string\"},\"email\":{\"type\":[\"null\",\"string\"]},"
		    "\"balance\":{\"type\":\"integer\"},\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
		    "\"prefs\":{\"type\":\"object\"},\"city\":{\"type\":\"string\"},\"updated_at\":{\"type\":\"string\",\"format\":\"date-time\"}");
		break;
	default:
		put("\"id\":{\"type\":\"integer\"},\"sku\":{\"type\":\"string\"},\"title\":{\"type\":\"string\"},"
		    "\"price\":{\"type\":\"number\"},\"dims\":{\"type\":\"array\",\"items\":{\"type\":\"number\"}},"
		    "\"weight\":{\"type\":[\"null\",\"number\"]},\"active\":{\"type\":\"boolean\"},\"meta\":{\"type\":[\"null\",\"object\"]},"
		    "\"updated_at\":{\"type\":\"string\",\"format\":\"date-time\"}");
		break;
	}
	put("}},\"key_properties\":[\"");
	put(s->kind == 1 ? "event_id" : "id");
	put("\"],\"bookmark_properties\":[\"");
	put(s->kind == 1 ? "ts" : "updated_at");
	put("\"]}\n");
}

static void rec_orders(struct stream *s)
{
	unsigned i, n = 1 + (chance(20) ? 1 : 0);

	put("{\"id\":");
	bigint();
	if (chance(5))
		put(",\"customer_id\":null");
	else
		putf(",\"customer_id\":%d", (int)below(2000000) - 1000);
	put(",\"status\":\"");
	PICK(statuses);
	put("\",\"amount\":");
	money();
	put(",\"currency\":\"");
	PICK(currencies);
	put("\",\"discount\":");
	if (chance(60))
		put("null");
	else
		putf("-%u.%u", below(50), below(100));
	put(",\"note\":");
	if (chance(70)) {
		put("null");
	} else {
		put("\"");
		PICK(notes);
		put("\"");
	}
	put(chance(70) ? ",\"paid\":true,\"items\":[" : ",\"paid\":false,\"items\":[");
	for (i = 0; i < n; i++) {
		putf("%s{\"sku\":\"SKU-%05u\",\"qty\":%u,\"price\":", i ? "," : "", below(100000), 1 + below(5));
		money();
		put("}");
	}
	put("],\"shipping\":{\"method\":\"");
	PICK(methods);
	put("\",\"street\":");
	if (chance(50)) {
		put("null");
	} else {
		put("\"");
		PICK(streets);
		putf(" %u\"", 1 + below(30));
	}
	put(",\"city\":\"");
	PICK(cities);
	put("\"}");
	put(",\"updated_at\":");
	ts(s->bookmark + below(3600));
	put("}");
}

static void rec_events(struct stream *s)
{
	put("{\"event_id\":\"");
	putf("%08x-%04x-4%03x-%04x-%012llx", (unsigned)rnd(), below(65536), below(4096),
	     0x8000 | below(0x4000), (unsigned long long)(rnd() & 0xffffffffffffULL));
	put("\",\"user_id\":");
	bigint();
	put(",\"kind\":\"");
	PICK(kinds);
	put("\",\"payload\":{\"path\":\"");
	PICK(paths);
	if (chance(30)) {
		put("\",\"ua\":\"");
		PICK(agents);
	}
	putf("\",\"ms\":%u.%03ue-3,\"ok\":%s}", below(9), below(1000),
	     chance(90) ? "true" : "false");
	put(",\"ts\":");
	ts(s->bookmark);
	put("}");
}

static void rec_customers(struct stream *s)
{
	unsigned i, n = below(4);

	putf("{\"id\":%llu,\"name\":\"", (unsigned long long)s->seq + 1);
	PICK(first_names);
	put(" ");
	PICK(last_names);
	put("\",\"email\":");
	if (chance(10))
		put("null");
	else
		putf("\"user%u@example.org\"", below(1000000));
	putf(",\"balance\":%d,\"tags\":[", (int)below(2000000) - 1000000);
	for (i = 0; i < n; i++) {
		put(i ? ",\"" : "\"");
		PICK(tags);
		put("\"");
	}
	putf("],\"prefs\":{\"news\":%s,\"lang\":%s,\"ratio\":%u.%ue%d},\"city\":\"",
	     chance(50) ? "true" : "false", chance(30) ? "null" : "\"pt-BR\"",
	     below(10), below(100), (int)below(10) - 5);
	PICK(cities);
	put("\",\"updated_at\":");
	ts(s->bookmark);
	put("}");
}

static void rec_products(struct stream *s)
{
	putf("{\"id\":%llu,\"sku\":\"SKU-%05u\",\"title\":\"", (unsigned long long)s->seq + 1, below(100000));
	PICK(titles);
	put("\",\"price\":");
	money();
	putf(",\"dims\":[%u.%u,%u.%u,%u],\"weight\":", below(100), below(10), below(100), below(10), below(50));
	if (chance(20))
		put("null");
	else
		putf("%u.%uE2", below(10), below(100));
	put(chance(80) ? ",\"active\":true" : ",\"active\":false");
	put(",\"meta\":");
	if (chance(50))
		put("null");
	else
		putf("{\"batch\":[%u,null],\"fragile\":%s}", below(1000),
		     chance(50) ? "true" : "false");
	put(",\"updated_at\":");
	ts(s->bookmark);
	put("}");
}

int main(int argc, char **argv)
{
	double size_mb = 256;
	unsigned nstreams = 4, i;
	uint64_t seed = 20240601, target, bytes = 0, lines = 0, records = 0, states = 0,
		schemas = 0, record_bytes = 0, clock_off = 0;
	const char *meta = NULL;
	struct stream *st;
	unsigned total_weight = 0;
	int c;
	static char obuf[1 << 20];

	while ((c = getopt(argc, argv, "s:n:S:m:")) != -1) {
		switch (c) {
		case 's':
			size_mb = strtod(optarg, NULL);
			break;
		case 'n':
			nstreams = (unsigned)strtoul(optarg, NULL, 10);
			break;
		case 'S':
			seed = strtoull(optarg, NULL, 10);
			break;
		case 'm':
			meta = optarg;
			break;
		default:
			fprintf(stderr, "usage: gen [-s SIZE_MB] [-n STREAMS] [-S SEED] [-m META] > out\n");
			return 2;
		}
	}
	if (nstreams < 1 || nstreams > 1000 || size_mb <= 0) {
		fprintf(stderr, "gen: bad size or stream count\n");
		return 2;
	}
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	target = (uint64_t)(size_mb * 1e6);
	rseed(seed);
	base_time = 1704067200;	/* 2024-01-01T00:00:00Z */
	st = calloc(nstreams, sizeof(*st));
	for (i = 0; i < nstreams; i++) {
		st[i].kind = (int)(i % 4);
		if (i < 4)
			snprintf(st[i].name, sizeof(st[i].name), "%s", kind_names[i]);
		else
			snprintf(st[i].name, sizeof(st[i].name), "%s-%u", kind_names[i % 4], i / 4 + 1);
		total_weight += kind_weight[i % 4];
	}

	while (bytes < target) {
		unsigned w = below(total_weight);
		struct stream *s = st;
		size_t rstart, rend;

		for (i = 0; i < nstreams; i++) {
			if (w < kind_weight[st[i].kind]) {
				s = &st[i];
				break;
			}
			w -= kind_weight[st[i].kind];
		}
		if (!s->schema_sent) {
			ll = 0;
			schema(s);
			fwrite(line, 1, ll, stdout);
			bytes += ll;
			lines++;
			schemas++;
			s->schema_sent = 1;
		}
		clock_off += below(4);
		s->bookmark = clock_off;
		ll = 0;
		put("{\"type\":\"RECORD\",\"stream\":\"");
		put(s->name);
		put("\",\"record\":");
		rstart = ll;
		switch (s->kind) {
		case 0:
			rec_orders(s);
			break;
		case 1:
			rec_events(s);
			break;
		case 2:
			rec_customers(s);
			break;
		default:
			rec_products(s);
			break;
		}
		rend = ll;
		/* As some taps do: time_extracted on one of the four kinds. */
		if (s->kind == 0) {
			put(",\"time_extracted\":");
			ts(clock_off + 5);
		}
		put("}\n");
		fwrite(line, 1, ll, stdout);
		s->seq++;
		bytes += ll;
		lines++;
		records++;
		record_bytes += rend - rstart + 1;

		if (records % 10000 == 0) {
			ll = 0;
			put("{\"type\":\"STATE\",\"value\":{\"currently_syncing\":null,\"bookmarks\":{");
			for (i = 0; i < nstreams; i++) {
				putf("%s\"%s\":{\"replication_key\":\"%s\",\"replication_key_value\":", i ? "," : "",
				     st[i].name, st[i].kind == 1 ? "ts" : "updated_at");
				ts(st[i].bookmark);
				put("}");
			}
			put("}}}\n");
			fwrite(line, 1, ll, stdout);
			bytes += ll;
			lines++;
			states++;
		}
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("gen: write");
		return 1;
	}
	if (meta) {
		FILE *f = fopen(meta, "w");

		if (f == NULL) {
			perror(meta);
			return 1;
		}
		fprintf(f, "bytes %llu\nlines %llu\nrecords %llu\nstates %llu\nschemas %llu\nrecord_bytes %llu\nstreams %u\nseed %llu\n",
			(unsigned long long)bytes, (unsigned long long)lines, (unsigned long long)records,
			(unsigned long long)states, (unsigned long long)schemas,
			(unsigned long long)record_bytes, nstreams, (unsigned long long)seed);
		if (fclose(f) != 0) {
			perror(meta);
			return 1;
		}
	}
	free(st);
	return 0;
}
