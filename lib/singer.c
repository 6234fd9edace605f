/* singer: buffered line reader and one-pass Singer message classifier. */
#include "singer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"

enum { K_TYPE, K_STREAM, K_RECORD, K_VALUE, K_SCHEMA, K_KEYPROPS,
       K_BOOKPROPS, K_VERSION, K_N };

static const char *const singer_keys[K_N] = {
	[K_TYPE] = "type",
	[K_STREAM] = "stream",
	[K_RECORD] = "record",
	[K_VALUE] = "value",
	[K_SCHEMA] = "schema",
	[K_KEYPROPS] = "key_properties",
	[K_BOOKPROPS] = "bookmark_properties",
	[K_VERSION] = "version",
};

static enum singer_type classify(const struct json_span *t)
{
	/* Most lines are records, spelled so: try that first, then any case. */
	if (t->len == 8 && memcmp(t->p, "\"RECORD\"", 8) == 0)
		return SINGER_RECORD;
	if (json_string_equal(t, "RECORD", 1))
		return SINGER_RECORD;
	if (json_string_equal(t, "STATE", 1))
		return SINGER_STATE;
	if (json_string_equal(t, "SCHEMA", 1))
		return SINGER_SCHEMA;
	if (json_string_equal(t, "ACTIVATE_VERSION", 1))
		return SINGER_ACTIVATE_VERSION;
	return SINGER_OTHER;
}

static const struct json_span none = { NULL, 0, JSON_NONE };

static int parse(const char *line, size_t len, struct singer_msg *m,
		 struct json_members *mem, size_t *errcol, const char **errmsg)
{
	struct json_span v[K_N], top;
	const struct json_span *bad = NULL;
	const char *msg = NULL;
	size_t pos;

	if (json_validate_inner(line, len, singer_keys, K_N, v, mem, &top,
				&pos, errmsg) < 0) {
		*errcol = pos + 1;
		return -1;
	}
	if (top.type != JSON_OBJECT) {
		bad = &top;
		msg = "not a JSON object";
		goto fail;
	}
	if (v[K_TYPE].type == JSON_NONE) {
		msg = "message without \"type\"";
		goto fail;
	}
	if (v[K_TYPE].type != JSON_STRING) {
		bad = &v[K_TYPE];
		msg = "\"type\" is not a string";
		goto fail;
	}
	m->type = classify(&v[K_TYPE]);
	m->type_value = v[K_TYPE];
	m->stream = v[K_STREAM].type == JSON_STRING ? v[K_STREAM] : none;
	m->record = v[K_RECORD];
	m->value = v[K_VALUE];
	m->schema = v[K_SCHEMA];
	m->key_properties = v[K_KEYPROPS].type == JSON_NULL ? none : v[K_KEYPROPS];
	m->bookmark_properties =
		v[K_BOOKPROPS].type == JSON_NULL ? none : v[K_BOOKPROPS];
	m->version = v[K_VERSION];
	m->members = NULL;
	m->nmembers = 0;
	if (mem && m->type == SINGER_RECORD && v[K_RECORD].type == JSON_OBJECT &&
	    mem->n <= mem->cap) {
		m->members = mem->m;
		m->nmembers = mem->n;
	}

	switch (m->type) {
	case SINGER_RECORD:
		if (v[K_STREAM].type == JSON_NONE) {
			msg = "RECORD without \"stream\"";
		} else if (v[K_STREAM].type != JSON_STRING) {
			bad = &v[K_STREAM];
			msg = "RECORD \"stream\" is not a string";
		} else if (v[K_RECORD].type == JSON_NONE) {
			msg = "RECORD without \"record\"";
		} else if (v[K_RECORD].type != JSON_OBJECT) {
			bad = &v[K_RECORD];
			msg = "RECORD \"record\" is not an object";
		}
		break;
	case SINGER_SCHEMA:
		if (v[K_STREAM].type == JSON_NONE) {
			msg = "SCHEMA without \"stream\"";
		} else if (v[K_STREAM].type != JSON_STRING) {
			bad = &v[K_STREAM];
			msg = "SCHEMA \"stream\" is not a string";
		} else if (v[K_SCHEMA].type == JSON_NONE) {
			msg = "SCHEMA without \"schema\"";
		} else if (v[K_SCHEMA].type != JSON_OBJECT) {
			bad = &v[K_SCHEMA];
			msg = "SCHEMA \"schema\" is not an object";
		} else if (m->key_properties.type != JSON_NONE &&
			   m->key_properties.type != JSON_ARRAY) {
			bad = &v[K_KEYPROPS];
			msg = "SCHEMA \"key_properties\" is not an array";
		} else if (m->bookmark_properties.type != JSON_NONE &&
			   m->bookmark_properties.type != JSON_ARRAY) {
			bad = &v[K_BOOKPROPS];
			msg = "SCHEMA \"bookmark_properties\" is not an array";
		}
		break;
	case SINGER_STATE:
		if (v[K_VALUE].type == JSON_NONE)
			msg = "STATE without \"value\"";
		break;
	case SINGER_ACTIVATE_VERSION:
	case SINGER_OTHER:
		break;
	}
	if (msg == NULL)
		return 0;
fail:
	/* A missing member is reported at the object's opening brace. */
	if (bad == NULL)
		bad = &top;
	*errcol = (size_t)(bad->p - line) + 1;
	*errmsg = msg;
	return -1;
}

int singer_parse(const char *line, size_t len, struct singer_msg *m,
		 size_t *errcol, const char **errmsg)
{
	return parse(line, len, m, NULL, errcol, errmsg);
}

int singer_parse_members(const char *line, size_t len, struct singer_msg *m,
			 struct json_member room[], size_t cap,
			 size_t *errcol, const char **errmsg)
{
	struct json_members mem = { K_RECORD, room, cap, 0 };

	return parse(line, len, m, &mem, errcol, errmsg);
}

#define READ_SIZE (1u << 20)

struct singer_reader {
	int fd;
	char *buf;
	size_t cap;
	size_t start;	/* first byte of the next line */
	size_t scan;	/* bytes before this hold no newline of the next line */
	size_t end;	/* bytes read */
	int eof;
	int unterminated;
	unsigned long long lineno;
	unsigned long long reads;	/* reads that brought input */
};

struct singer_reader *singer_reader_new(int fd)
{
	struct singer_reader *r = xcalloc(1, sizeof(*r));

	r->fd = fd;
	r->cap = READ_SIZE;
	r->buf = xmalloc(r->cap);
	return r;
}

void singer_reader_free(struct singer_reader *r)
{
	if (r == NULL)
		return;
	free(r->buf);
	free(r);
}

int singer_reader_next(struct singer_reader *r, const char **line, size_t *len)
{
	char *nl;
	ssize_t n;

	for (;;) {
		nl = memchr(r->buf + r->scan, '\n', r->end - r->scan);
		if (nl) {
			*line = r->buf + r->start;
			*len = (size_t)(nl - *line);
			r->start = r->scan = (size_t)(nl - r->buf) + 1;
			r->lineno++;
			return 1;
		}
		r->scan = r->end;
		if (r->eof) {
			if (r->start == r->end)
				return 0;
			*line = r->buf + r->start;
			*len = r->end - r->start;
			r->start = r->scan = r->end;
			r->unterminated = 1;
			r->lineno++;
			return 1;
		}
		/*
		 * Only the unfinished line moves, once per buffer; the buffer
		 * doubles only when that line fills it.
		 */
		if (r->start > 0) {
			memmove(r->buf, r->buf + r->start, r->end - r->start);
			r->end -= r->start;
			r->scan -= r->start;
			r->start = 0;
		}
		if (r->cap - r->end < READ_SIZE / 2) {
			r->cap *= 2;
			r->buf = xrealloc(r->buf, r->cap);
		}
		do
			n = read(r->fd, r->buf + r->end, r->cap - r->end);
		while (n < 0 && errno == EINTR);
		if (n < 0)
			return -1;
		if (n == 0)
			r->eof = 1;
		else
			r->reads++;
		r->end += (size_t)n;
	}
}

int singer_reader_last_unterminated(const struct singer_reader *r)
{
	return r->unterminated;
}

unsigned long long singer_reader_lineno(const struct singer_reader *r)
{
	return r->lineno;
}

unsigned long long singer_reader_reads(const struct singer_reader *r)
{
	return r->reads;
}
