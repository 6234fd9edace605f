/*
 * fuzz_singer: libFuzzer target for the Singer hot path.  The input is a
 * Singer stream: every line goes through singer_parse(), and the spans it
 * returns are used as pipe-sink uses them (stream names decoded and made
 * safe, schemas compacted, states pretty-printed); what those produce must
 * be valid JSON again.  The first input of a process and every 64th after
 * it are also read back through singer_reader from a memfd, which must give
 * the same lines (the reader's 1 MiB buffer costs ASan more than the rest
 * of a run: reading every input made the target 60 times slower).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json.h"
#include "layout.h"
#include "sb.h"
#include "singer.h"
#include "sink.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(int ok)
{
	if (!ok)
		abort();
}

/* out must hold exactly one valid JSON value. */
static void valid(const struct sb *out)
{
	struct json_span v;
	size_t errpos;
	const char *errmsg;

	must(json_validate(out->buf ? out->buf : "", out->len, &v, &errpos, &errmsg) == 0);
}

static void use(const struct singer_msg *m)
{
	struct sb name = SB_INIT, out = SB_INIT, q = SB_INIT;
	struct sb why = SB_INIT;
	char *safe;

	must(m->type_value.type == JSON_STRING);
	if (m->stream.type == JSON_STRING) {
		json_string_decode(&m->stream, &name);
		safe = layout_stream_folder(name.buf ? name.buf : "", name.len, &why);
		if (safe) {
			/* a safe name never leaves its folder */
			must(strchr(safe, '/') == NULL && safe[0] != '.');
			must(strlen(safe) == name.len);
			free(safe);
		} else {
			must(why.len > 0);
		}
		sb_free(&why);
		json_quote(&q, name.buf ? name.buf : "", name.len);
		valid(&q);
	}
	if (m->type == SINGER_RECORD)
		must(m->record.type == JSON_OBJECT);
	if (m->type == SINGER_SCHEMA) {
		must(m->schema.type == JSON_OBJECT);
		json_compact(&m->schema, &out);
		valid(&out);
	}
	if (m->type == SINGER_STATE && m->value.type != JSON_NONE) {
		sb_reset(&out);
		json_pretty(&m->value, &out);
		valid(&out);
	}
	sb_free(&name);
	sb_free(&out);
	sb_free(&q);
}

static void parse_line(const char *line, size_t len)
{
	struct singer_msg m;
	size_t errcol;
	const char *errmsg = NULL;

	memset(&m, 0, sizeof(m));
	if (singer_parse(line, len, &m, &errcol, &errmsg) == 0) {
		use(&m);
	} else {
		must(errmsg != NULL && *errmsg != '\0');
		must(errcol >= 1 && errcol <= len + 1);
	}
}

/* The reader gives back the input's lines, and says when the last has no newline. */
static void read_back(const uint8_t *data, size_t size)
{
	struct singer_reader *r;
	const char *line;
	size_t len, seen = 0;
	int fd, got;

	fd = memfd_create("fuzz_singer", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (size && write(fd, data, size) != (ssize_t)size)
		abort();
	lseek(fd, 0, SEEK_SET);
	r = singer_reader_new(fd);
	while ((got = singer_reader_next(r, &line, &len)) == 1) {
		must(seen + len <= size && memcmp(line, data + seen, len) == 0);
		seen += len + 1;
		must(singer_reader_lineno(r) > 0);
	}
	must(got == 0);
	must(seen == size || seen == size + 1);
	must((seen == size + 1) == (size > 0 && data[size - 1] != '\n'));
	must(singer_reader_last_unterminated(r) == (seen == size + 1));
	singer_reader_free(r);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned long runs;
	const char *p = (const char *)data, *end = p + size, *nl;

	if (runs++ % 64 == 0)
		read_back(data, size);
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		parse_line(p, (size_t)(nl - p));
		p = nl + 1;
	}
	return 0;
}
