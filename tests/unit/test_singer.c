/* Unit tests of the Singer line reader and message classifier. */
#include "singer.h"
#include "err.h"
#include "sb.h"
#include "taptest.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define FIXTURES "tests/fixtures/tap-postgres/"

static int span_is(const struct json_span *s, const char *want)
{
	return s->p && s->len == strlen(want) && memcmp(s->p, want, s->len) == 0;
}

struct good {
	const char *line;
	enum singer_type type;
};

static const struct good good[] = {
	{ "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{}}", SINGER_RECORD },
	{ "{\"type\": \"record\", \"stream\": \"s\", \"record\": {\"a\": 1}}", SINGER_RECORD },
	{ "{\"type\":\"Record\",\"stream\":\"s\",\"record\":{}}", SINGER_RECORD },
	{ "{\"type\":\"rEcOrD\",\"stream\":\"s\",\"record\":{}}", SINGER_RECORD },
	{ "{\"record\":{\"a\":[1]},\"stream\":\"s\",\"type\":\"RECORD\"}", SINGER_RECORD },
	{ "{\"type\":\"\\u0052ECORD\",\"stream\":\"s\",\"record\":{}}", SINGER_RECORD },
	{ "{\"\\u0074ype\":\"RECORD\",\"str\\u0065am\":\"s\",\"record\":{}}", SINGER_RECORD },
	{ "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{},\"version\":1,\"time_extracted\":\"t\"}", SINGER_RECORD },
	{ "  {\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{}}  \r", SINGER_RECORD },
	{ "{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":{},\"key_properties\":[\"id\"],\"bookmark_properties\":[\"u\"]}", SINGER_SCHEMA },
	{ "{\"type\":\"schema\",\"stream\":\"s\",\"schema\":{\"type\":\"object\"}}", SINGER_SCHEMA },
	{ "{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":{},\"key_properties\":null,\"bookmark_properties\":null}", SINGER_SCHEMA },
	{ "{\"type\":\"STATE\",\"value\":{\"a\":1}}", SINGER_STATE },
	{ "{\"type\":\"state\",\"value\":null}", SINGER_STATE },
	{ "{\"type\":\"STATE\",\"value\":{}}", SINGER_STATE },
	{ "{\"type\":\"ACTIVATE_VERSION\",\"stream\":\"s\",\"version\":1}", SINGER_ACTIVATE_VERSION },
	{ "{\"type\":\"activate_version\"}", SINGER_ACTIVATE_VERSION },
	{ "{\"type\":\"BATCH\",\"stream\":\"s\"}", SINGER_OTHER },
	{ "{\"type\":\"\"}", SINGER_OTHER },
	{ "{\"type\":\"RECORDS\",\"stream\":\"s\",\"record\":{}}", SINGER_OTHER },
	{ "{\"type\":\"RECOR\",\"stream\":\"s\",\"record\":{}}", SINGER_OTHER },
	{ "{\"type\":\"RECORD\\u0000\"}", SINGER_OTHER },
	{ "{\"type\":\"STATE\",\"type\":\"RECORD\",\"value\":1}", SINGER_STATE },
};

static void test_classify(void)
{
	struct singer_msg m;
	size_t i, col;
	const char *msg;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		col = 0;
		msg = NULL;
		memset(&m, 0xa5, sizeof(m));
		if (!ok(singer_parse(good[i].line, strlen(good[i].line), &m, &col,
				     &msg) == 0, "parse %zu: %s", i, good[i].line))
			printf("#   column %zu: %s\n", col, msg ? msg : "(null)");
		else
			is_int(m.type, good[i].type, "parse %zu: type", i);
	}
}

struct bad {
	const char *line;
	size_t col;
	const char *msg;
};

static const struct bad bad[] = {
	{ "[]", 1, "not a JSON object" },
	{ "  \"RECORD\"", 3, "not a JSON object" },
	{ "1", 1, "not a JSON object" },
	{ "null", 1, "not a JSON object" },
	{ "{}", 1, "message without \"type\"" },
	{ " {\"value\":{\"type\":\"RECORD\"}}", 2, "message without \"type\"" },
	{ "{\"Type\":\"RECORD\"}", 1, "message without \"type\"" },
	{ "{\"type\":1}", 9, "\"type\" is not a string" },
	{ "{\"type\":null}", 9, "\"type\" is not a string" },
	{ "{\"type\":[\"RECORD\"]}", 9, "\"type\" is not a string" },
	{ "{\"type\":\"RECORD\",\"record\":{}}", 1, "RECORD without \"stream\"" },
	{ "{\"type\":\"RECORD\",\"stream\":null,\"record\":{}}", 27, "RECORD \"stream\" is not a string" },
	{ "{\"type\":\"RECORD\",\"stream\":{\"s\":1},\"record\":{}}", 27, "RECORD \"stream\" is not a string" },
	{ "{\"type\":\"RECORD\",\"stream\":\"s\"}", 1, "RECORD without \"record\"" },
	{ "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":[1]}", 40, "RECORD \"record\" is not an object" },
	{ "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":null}", 40, "RECORD \"record\" is not an object" },
	{ "{\"type\":\"SCHEMA\",\"schema\":{}}", 1, "SCHEMA without \"stream\"" },
	{ "{\"type\":\"SCHEMA\",\"stream\":1,\"schema\":{}}", 27, "SCHEMA \"stream\" is not a string" },
	{ "{\"type\":\"SCHEMA\",\"stream\":\"s\"}", 1, "SCHEMA without \"schema\"" },
	{ "{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":true}", 40, "SCHEMA \"schema\" is not an object" },
	{ "{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":{},\"key_properties\":\"id\"}", 60, "SCHEMA \"key_properties\" is not an array" },
	{ "{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":{},\"bookmark_properties\":{}}", 65, "SCHEMA \"bookmark_properties\" is not an array" },
	{ "{\"type\":\"STATE\"}", 1, "STATE without \"value\"" },
	{ "{\"type\":\"state\",\"stream\":\"s\"}", 1, "STATE without \"value\"" },
	/* JSON errors come first, with their column */
	{ "", 1, "invalid JSON: unexpected end of input" },
	{ "\r", 2, "invalid JSON: unexpected end of input" },
	{ "{\"type\":\"RECORD\"", 17, "invalid JSON: unexpected end of input" },
	{ "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"a\":01}}", 46, "invalid JSON: invalid number" },
	{ "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"a\":\"\xc3\"}}", 46, "invalid JSON: invalid UTF-8" },
	{ "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"a\":1,}}", 47, "invalid JSON: unexpected character" },
	{ "[1,", 4, "invalid JSON: unexpected end of input" },
	{ "hello world", 1, "invalid JSON: unexpected character" },
	{ "{\"type\":\"STATE\",\"value\":1} {}", 28, "invalid JSON: unexpected character" },
};

static void test_errors(void)
{
	struct singer_msg m;
	size_t i, col;
	const char *msg;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		col = 0;
		msg = "(none)";
		is_int(singer_parse(bad[i].line, strlen(bad[i].line), &m, &col, &msg),
		       -1, "error %zu: %s", i, bad[i].line);
		is_int(col, bad[i].col, "error %zu: column", i);
		is_str(msg, bad[i].msg, "error %zu: message", i);
	}
}

/* singer_parse_members(): singer_parse()'s result and errors, a record's members. */
static void test_members(void)
{
	struct json_member room[4];
	struct singer_msg m, m2;
	size_t i, col, col2;
	const char *msg, *msg2;
	int same = 1;

	for (i = 0; i < sizeof(good) / sizeof(good[0]) + sizeof(bad) / sizeof(bad[0]); i++) {
		const char *line = i < sizeof(good) / sizeof(good[0]) ? good[i].line :
				   bad[i - sizeof(good) / sizeof(good[0])].line;
		int r, r2;

		col = col2 = 0;
		msg = msg2 = NULL;
		r = singer_parse(line, strlen(line), &m, &col, &msg);
		r2 = singer_parse_members(line, strlen(line), &m2, room, 4, &col2, &msg2);
		if (r != r2 || (r != 0 && (col != col2 || strcmp(msg, msg2) != 0)) ||
		    (r == 0 && (m.type != m2.type || m.record.p != m2.record.p || m.stream.p != m2.stream.p ||
				m.members != NULL ||
				(m2.members != NULL) != (m2.type == SINGER_RECORD)))) {
			printf("#   differs: %s\n", line);
			same = 0;
		}
	}
	ok(same, "members: every line of the tables parses as with singer_parse()");
	{
		static const char rec[] = "{\"record\":{\"b\\u0041\": \"x\\\"\" , \"c\":[1]},\"record\":{\"d\":1},"
					  "\"type\":\"RECORD\",\"stream\":\"s\"}";
		static const char wide[] = "{\"type\":\"RECORD\",\"stream\":\"s\",\"record\":{\"a\":1,\"b\":2,\"c\":3,"
					   "\"d\":4,\"e\":5}}";
		static const char st[] = "{\"type\":\"STATE\",\"value\":{},\"record\":{\"a\":1}}";

		struct json_span k0, v0, k1, v1;
		int got = singer_parse_members(rec, strlen(rec), &m, room, 4, &col, &msg) == 0 &&
			  m.members == room && m.nmembers == 2;

		if (got) {
			k0 = json_member_key(m.record.p, &room[0]);
			v0 = json_member_val(m.record.p, &room[0]);
			k1 = json_member_key(m.record.p, &room[1]);
			v1 = json_member_val(m.record.p, &room[1]);
		}
		ok(got && span_is(&k0, "\"b\\u0041\"") && room[0].key_esc &&
		   span_is(&v0, "\"x\\\"\"") && room[0].val_esc && v0.type == JSON_STRING &&
		   span_is(&k1, "\"c\"") && !room[1].key_esc && span_is(&v1, "[1]") &&
		   v1.type == JSON_ARRAY && !room[1].val_esc,
		   "members: the first \"record\"'s, spans and backslashes noted");
		ok(singer_parse_members(wide, strlen(wide), &m, room, 4, &col, &msg) == 0 && m.members == NULL &&
		   m.type == SINGER_RECORD && span_is(&m.record, "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5}"),
		   "members: more than the room: none, the record as ever");
		ok(singer_parse_members(st, strlen(st), &m, room, 4, &col, &msg) == 0 && m.members == NULL &&
		   m.type == SINGER_STATE, "members: none for a STATE");
	}
}

static void test_spans(void)
{
	static const char rec[] =
		"{\"time_extracted\": \"2026-01-01T00:00:00Z\", \"version\": 17,"
		" \"record\": {\"id\": 12345678901234567891, \"type\": \"x\","
		" \"stream\": \"y\"}, \"stream\": \"orders\", \"type\": \"RECORD\","
		" \"stream\": \"other\", \"record\": {}}";
	static const char sch[] =
		"{\"type\":\"SCHEMA\",\"stream\":\"s\\\"q\",\"schema\":{\"properties\":{}},"
		"\"key_properties\":[\"id\"],\"bookmark_properties\":[]}";
	static const char nul[] =
		"{\"type\":\"SCHEMA\",\"stream\":\"s\",\"schema\":{},"
		"\"key_properties\":null}";
	static const char av[] = "{\"type\":\"ACTIVATE_VERSION\",\"stream\":5,\"version\":9}";
	struct singer_msg m;
	size_t col;
	const char *msg;
	struct sb s = SB_INIT;

	ok(singer_parse(rec, strlen(rec), &m, &col, &msg) == 0, "spans: record parses");
	is_int(m.type, SINGER_RECORD, "spans: RECORD");
	ok(span_is(&m.type_value, "\"RECORD\""), "spans: type_value");
	ok(span_is(&m.stream, "\"orders\"") && m.stream.type == JSON_STRING,
	   "spans: first \"stream\" wins, nested keys ignored");
	ok(span_is(&m.record, "{\"id\": 12345678901234567891, \"type\": \"x\", \"stream\": \"y\"}"),
	   "spans: record byte for byte");
	ok(span_is(&m.version, "17") && m.version.type == JSON_NUMBER, "spans: version");
	is_int(m.value.type, JSON_NONE, "spans: no value");
	is_int(m.schema.type, JSON_NONE, "spans: no schema");

	ok(singer_parse(sch, strlen(sch), &m, &col, &msg) == 0, "spans: schema parses");
	is_int(m.type, SINGER_SCHEMA, "spans: SCHEMA");
	json_string_decode(&m.stream, &s);
	is_str(s.buf, "s\"q", "spans: stream decodes");
	ok(span_is(&m.schema, "{\"properties\":{}}"), "spans: schema");
	ok(span_is(&m.key_properties, "[\"id\"]") &&
	   m.key_properties.type == JSON_ARRAY, "spans: key_properties");
	ok(span_is(&m.bookmark_properties, "[]"), "spans: bookmark_properties");
	is_int(m.record.type, JSON_NONE, "spans: no record");

	ok(singer_parse(nul, strlen(nul), &m, &col, &msg) == 0,
	   "spans: null key_properties accepted");
	is_int(m.key_properties.type, JSON_NONE, "spans: null key_properties is absent");
	is_int(m.bookmark_properties.type, JSON_NONE, "spans: absent bookmark_properties");

	ok(singer_parse(av, strlen(av), &m, &col, &msg) == 0, "spans: activate_version");
	is_int(m.stream.type, JSON_NONE, "spans: non-string stream is absent outside RECORD/SCHEMA");
	ok(span_is(&m.version, "9"), "spans: activate_version version");
	sb_free(&s);
}

static char tmpdir[] = "/tmp/test_singer.XXXXXX";

static int open_data(const char *data, size_t len)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "%s/data", tmpdir);
	fd = open(path, O_CREAT | O_TRUNC | O_RDWR, 0600);
	if (fd < 0 || write(fd, data, len) != (ssize_t)len ||
	    lseek(fd, 0, SEEK_SET) != 0) {
		perror(path);
		exit(2);
	}
	unlink(path);
	return fd;
}

/*
 * Read every line of data[0..len) from a file; out gets the lines joined by
 * '|', with '$' after an unterminated one.
 */
static unsigned long long read_all(const char *data, size_t len, struct sb *out)
{
	struct singer_reader *r;
	const char *line;
	size_t n;
	int fd = open_data(data, len), rc;
	unsigned long long lines;

	sb_reset(out);
	sb_adds(out, "");
	r = singer_reader_new(fd);
	while ((rc = singer_reader_next(r, &line, &n)) == 1) {
		sb_add(out, line, n);
		sb_addc(out, singer_reader_last_unterminated(r) ? '$' : '|');
	}
	if (rc < 0)
		sb_adds(out, "ERROR");
	lines = singer_reader_lineno(r);
	singer_reader_free(r);
	close(fd);
	return lines;
}

#define S(lit) lit, sizeof(lit) - 1

static void check_read(const char *data, size_t len, const char *want,
		       size_t wantlen, unsigned long long wantlines,
		       const char *name)
{
	struct sb out = SB_INIT;
	unsigned long long lines = read_all(data, len, &out);

	if (!ok(out.len == wantlen && memcmp(out.buf, want, wantlen) == 0,
		"reader: %s", name))
		printf("#   got '%s'\n", out.buf);
	is_int(lines, wantlines, "reader: %s: line count", name);
	sb_free(&out);
}

static void test_reader_small(void)
{
	check_read(S("a\nbb\n\nccc\n"), S("a|bb||ccc|"), 4, "lines, an empty one kept");
	check_read(S("a\nlast"), S("a|last$"), 2, "last line without newline");
	check_read(S(""), S(""), 0, "empty input");
	check_read(S("\n"), S("|"), 1, "one empty line");
	check_read(S("\n\n\n"), S("|||"), 3, "empty lines");
	check_read(S("x\r\ny\r\n"), S("x\r|y\r|"), 2, "CRLF keeps the \\r");
	check_read(S("a\0b\n\0"), S("a\0b|\0$"), 2, "NUL bytes stay in the line");
	check_read(S("only"), S("only$"), 1, "one unterminated line");
}

static void test_reader_terminated_flag(void)
{
	struct singer_reader *r;
	const char *line;
	size_t n;
	int fd = open_data(S("a\nb\n"));

	r = singer_reader_new(fd);
	is_int(singer_reader_next(r, &line, &n), 1, "flag: first line");
	is_int(singer_reader_last_unterminated(r), 0, "flag: terminated");
	is_int(singer_reader_next(r, &line, &n), 1, "flag: second line");
	is_int(singer_reader_last_unterminated(r), 0, "flag: still terminated");
	is_int(singer_reader_next(r, &line, &n), 0, "flag: end");
	is_int(singer_reader_next(r, &line, &n), 0, "flag: end again");
	is_int(singer_reader_lineno(r), 2, "flag: two lines");
	singer_reader_free(r);
	singer_reader_free(NULL);
	close(fd);
}

/* Line i of the generated stream: its length and its bytes. */
static size_t gen_len(unsigned long i)
{
	unsigned long x = i * 2654435761u;

	return i % 97 == 0 ? 70000 + i % 5000 : (x >> 7) % 3000;
}

static char gen_byte(unsigned long i, size_t j)
{
	return (char)('!' + (i * 31 + j) % 90);
}

static char *gen(unsigned long nlines, size_t *len)
{
	struct sb s = SB_INIT;
	unsigned long i;
	size_t j, n;

	for (i = 0; i < nlines; i++) {
		n = gen_len(i);
		sb_grow(&s, n + 1);
		for (j = 0; j < n; j++)
			s.buf[s.len++] = gen_byte(i, j);
		s.buf[s.len++] = '\n';
	}
	*len = s.len;
	return sb_detach(&s);
}

/* Check every line read from fd against gen(); returns lines read or -1. */
static long check_gen(int fd, unsigned long nlines)
{
	struct singer_reader *r = singer_reader_new(fd);
	const char *line;
	size_t n, j;
	unsigned long i = 0;
	long res = -1;
	int rc;

	while ((rc = singer_reader_next(r, &line, &n)) == 1) {
		if (i >= nlines || n != gen_len(i)) {
			printf("#   line %lu: length %zu\n", i + 1, n);
			goto out;
		}
		for (j = 0; j < n; j++)
			if (line[j] != gen_byte(i, j)) {
				printf("#   line %lu: byte %zu\n", i + 1, j);
				goto out;
			}
		if (singer_reader_lineno(r) != i + 1 ||
		    singer_reader_last_unterminated(r))
			goto out;
		i++;
	}
	if (rc == 0)
		res = (long)i;
out:
	singer_reader_free(r);
	return res;
}

static void test_reader_boundaries(void)
{
	unsigned long nlines = 4000;
	size_t len;
	char *data = gen(nlines, &len);
	int fd = open_data(data, len);

	ok(len > 4 * 1024 * 1024, "boundaries: %zu bytes, several buffers", len);
	is_int(check_gen(fd, nlines), nlines, "boundaries: every line intact from a file");
	close(fd);
	free(data);
}

/* A writer that trickles the stream through a pipe in odd-sized pieces. */
static void test_reader_pipe(void)
{
	unsigned long nlines = 1500;
	size_t len, off, n;
	char *data = gen(nlines, &len);
	int p[2], status;
	pid_t pid;

	if (pipe(p) < 0) {
		perror("pipe");
		exit(2);
	}
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		for (off = 0; off < len; off += n) {
			n = 1 + (off * 7 + 13) % 9000;
			if (n > len - off)
				n = len - off;
			if (write(p[1], data + off, n) != (ssize_t)n)
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	is_int(check_gen(p[0], nlines), nlines, "pipe: every line intact from short reads");
	close(p[0]);
	is_int(waitpid(pid, &status, 0), pid, "pipe: writer reaped");
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "pipe: writer succeeded");
	free(data);
}

static void test_reader_huge_line(void)
{
	static const char head[] = "{\"type\":\"RECORD\",\"stream\":\"big\",\"record\":{\"blob\":\"";
	static const char tail[] = "\"}}\n{\"type\":\"STATE\",\"value\":1}";
	size_t blob = 50u * 1024 * 1024, len = sizeof(head) - 1 + blob + sizeof(tail) - 1;
	size_t n, col, i;
	char *data = xmalloc(len);
	const char *line, *msg;
	struct singer_reader *r;
	struct singer_msg m;
	int fd, same = 1;

	memcpy(data, head, sizeof(head) - 1);
	for (i = 0; i < blob; i++)
		data[sizeof(head) - 1 + i] = (char)('a' + i % 26);
	memcpy(data + sizeof(head) - 1 + blob, tail, sizeof(tail) - 1);
	fd = open_data(data, len);
	r = singer_reader_new(fd);
	is_int(singer_reader_next(r, &line, &n), 1, "huge: first line");
	is_int(n, sizeof(head) - 1 + blob + 3, "huge: 50 MB line in one piece");
	for (i = 0; i < n && same; i++)
		same = line[i] == data[i];
	ok(same, "huge: bytes intact");
	ok(singer_parse(line, n, &m, &col, &msg) == 0, "huge: parses");
	is_int(m.type, SINGER_RECORD, "huge: a RECORD");
	is_int(m.record.len, blob + 11, "huge: record span");
	is_int(singer_reader_next(r, &line, &n), 1, "huge: next line");
	ok(n == 26 && memcmp(line, "{\"type\":\"STATE\",\"value\":1}", 26) == 0,
	   "huge: the line after it");
	is_int(singer_reader_last_unterminated(r), 1, "huge: last line unterminated");
	is_int(singer_reader_next(r, &line, &n), 0, "huge: end");
	is_int(singer_reader_lineno(r), 2, "huge: two lines");
	singer_reader_free(r);
	close(fd);
	free(data);
}

static void test_reader_error(void)
{
	struct singer_reader *r = singer_reader_new(-1);
	const char *line;
	size_t n;

	errno = 0;
	is_int(singer_reader_next(r, &line, &n), -1, "error: read fails");
	is_int(errno, EBADF, "error: errno kept");
	singer_reader_free(r);
}

static char *slurp(const char *path, size_t *len)
{
	struct sb s = SB_INIT;
	char buf[4096];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0) {
		perror(path);
		exit(2);
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sb_add(&s, buf, (size_t)n);
	close(fd);
	*len = s.len;
	return sb_detach(&s);
}

static void test_fixture(void)
{
	int fd = open(FIXTURES "run1.jsonl", O_RDONLY), rc;
	struct singer_reader *r;
	struct singer_msg m;
	const char *line, *msg;
	size_t n, col, want_len;
	char types[64] = "";
	int records = 0, streams_ok = 1, i = 0;
	struct sb s = SB_INIT, last_state = SB_INIT;
	char *want;

	if (!ok(fd >= 0, "fixture: %s opens", FIXTURES "run1.jsonl"))
		return;
	r = singer_reader_new(fd);
	while ((rc = singer_reader_next(r, &line, &n)) == 1 && i < 63) {
		if (singer_parse(line, n, &m, &col, &msg) != 0) {
			printf("#   line %llu:%zu: %s\n", singer_reader_lineno(r), col, msg);
			break;
		}
		/* R(ECORD) S(CHEMA) (S)T(ATE) A(CTIVATE_VERSION) O(THER) */
		types[i++] = "RSTAO"[m.type];
		if (m.type == SINGER_RECORD) {
			records++;
			sb_reset(&s);
			json_string_decode(&m.stream, &s);
			streams_ok &= strcmp(s.buf, "customers") == 0;
			if (records == 1)
				ok(span_is(&m.record, "{\"id\": 1, \"name\": \"customer-1\", "
					   "\"updated_at\": \"2024-01-01T00:01:00+00:00\"}"),
				   "fixture: first record byte for byte");
		}
		if (m.type == SINGER_SCHEMA) {
			ok(span_is(&m.key_properties, "[\"id\"]"), "fixture: key_properties");
			ok(span_is(&m.bookmark_properties, "[\"updated_at\"]"),
			   "fixture: bookmark_properties");
			ok(span_is(&m.stream, "\"customers\""), "fixture: schema stream");
		}
		if (m.type == SINGER_STATE) {
			sb_reset(&last_state);
			json_pretty(&m.value, &last_state);
		}
	}
	types[i] = '\0';
	is_int(rc, 0, "fixture: read to the end");
	is_str(types, "STARRRRRRRRRRRRRRRRRRRRT", "fixture: message types in order");
	is_int(records, 20, "fixture: 20 records");
	ok(streams_ok, "fixture: every record of stream customers");
	is_int(singer_reader_lineno(r), 24, "fixture: 24 lines");
	is_int(singer_reader_last_unterminated(r), 0, "fixture: newline at the end");
	want = slurp(FIXTURES "state-after-run1.json", &want_len);
	is_str(last_state.buf, want, "fixture: last STATE value pretty-printed as saved");
	free(want);
	singer_reader_free(r);
	close(fd);
	sb_free(&s);
	sb_free(&last_state);
}

static void test_fixture_run2(void)
{
	int fd = open(FIXTURES "run2.jsonl", O_RDONLY), rc;
	struct singer_reader *r;
	struct singer_msg m;
	const char *line, *msg;
	size_t n, col;
	int counts[5] = { 0 }, nbad = 0;

	if (!ok(fd >= 0, "run2: opens"))
		return;
	r = singer_reader_new(fd);
	while ((rc = singer_reader_next(r, &line, &n)) == 1) {
		if (singer_parse(line, n, &m, &col, &msg) != 0)
			nbad++;
		else
			counts[m.type]++;
	}
	is_int(rc, 0, "run2: read to the end");
	is_int(nbad, 0, "run2: every line parses");
	is_int(counts[SINGER_RECORD], 7, "run2: 7 records");
	is_int(counts[SINGER_SCHEMA], 1, "run2: 1 schema");
	is_int(counts[SINGER_STATE], 2, "run2: 2 states");
	is_int(counts[SINGER_ACTIVATE_VERSION], 1, "run2: 1 activate_version");
	singer_reader_free(r);
	close(fd);
}

int main(void)
{
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	test_classify();
	test_errors();
	test_members();
	test_spans();
	test_reader_small();
	test_reader_terminated_flag();
	test_reader_boundaries();
	test_reader_pipe();
	test_reader_huge_line();
	test_reader_error();
	test_fixture();
	test_fixture_run2();
	rmdir(tmpdir);
	return tap_done();
}
