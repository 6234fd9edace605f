/*
 * singer: the record hot path.  A buffered line reader and a one-pass
 * classifier for Singer messages that validates each line as JSON and finds
 * the spans the sink needs, with no tree and no allocation per line.
 */
#ifndef PIPE_SINGER_H
#define PIPE_SINGER_H

#include <stddef.h>

#include "json.h"

enum singer_type {
	SINGER_RECORD,
	SINGER_SCHEMA,
	SINGER_STATE,
	SINGER_ACTIVATE_VERSION,
	SINGER_OTHER		/* any other "type": passed over, per the spec */
};

struct singer_msg {
	enum singer_type type;
	struct json_span type_value;	/* the "type" string span */
	struct json_span stream;	/* "stream" (JSON_STRING), or JSON_NONE */
	struct json_span record;	/* RECORD: "record" */
	struct json_span value;		/* STATE: "value" */
	struct json_span schema;	/* SCHEMA: "schema" */
	struct json_span key_properties;	/* SCHEMA: optional */
	struct json_span bookmark_properties;	/* SCHEMA: optional */
	struct json_span version;	/* RECORD/ACTIVATE_VERSION: optional */
	/*
	 * RECORD, from singer_parse_members(): the members of "record"
	 * (offsets from record.p), or NULL (singer_parse(), or more members
	 * than there was room for).
	 */
	const struct json_member *members;
	size_t nmembers;
};

/*
 * Classify one line (without its newline; a trailing '\r' is whitespace).
 * The line must be one JSON object with a string "type" (matched
 * case-insensitively).  RECORD needs a string "stream" and an object
 * "record"; SCHEMA a string "stream" and an object "schema" (key_properties
 * and bookmark_properties, when present, arrays); STATE a "value".
 * Returns 0, or -1 with *errcol (1-based byte column) and *errmsg set
 * ("invalid JSON: unexpected character", "RECORD without \"stream\"", ...).
 * Only top-level members count; of duplicate keys the first wins; keys and
 * "type" are compared after decoding escapes.  A null key_properties or
 * bookmark_properties counts as absent (JSON_NONE), and so does a "stream"
 * that is not a string in other messages than RECORD and SCHEMA.  A missing
 * member is reported at the column of the object's '{', a member of the
 * wrong type at its value.  The whole line is validated in the same pass
 * (json_validate_members()); nothing is allocated.
 */
int singer_parse(const char *line, size_t len, struct singer_msg *m,
		 size_t *errcol, const char **errmsg);

/*
 * singer_parse() that also notes a RECORD's members in room[0..cap), in the
 * same pass (json_validate_inner()): m->members is room and m->nmembers
 * their number, or m->members NULL when the record has more than cap
 * members, and for other messages.  The same result and errors as
 * singer_parse() otherwise.
 */
int singer_parse_members(const char *line, size_t len, struct singer_msg *m,
			 struct json_member room[], size_t cap,
			 size_t *errcol, const char **errmsg);

struct singer_reader;

/* Read lines from fd with large buffered reads. */
struct singer_reader *singer_reader_new(int fd);
void singer_reader_free(struct singer_reader *r);

/*
 * Next line, without its '\n', valid until the next call.  Returns 1 with a
 * line, 0 at end of input, -1 on a read error (errno set).  A last line
 * without a newline is still returned, and singer_reader_last_unterminated()
 * then says so.  Lines may be of any length; memory grows to the longest line
 * only.
 */
int singer_reader_next(struct singer_reader *r, const char **line, size_t *len);
int singer_reader_last_unterminated(const struct singer_reader *r);
/* 1-based number of the line last returned. */
unsigned long long singer_reader_lineno(const struct singer_reader *r);
/*
 * How many read(2) calls brought input so far: a caller that looks at the
 * clock only when this changes looks at it whenever new input came, and
 * not once per line.
 */
unsigned long long singer_reader_reads(const struct singer_reader *r);

#endif
