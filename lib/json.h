/*
 * json: JSON on raw bytes, without building a tree.
 *
 * Records, states and plans pass through these functions byte for byte:
 * numbers and strings are never re-encoded (jq 1.6's jv would print
 * 12345678901234567891 as 12345678901234567000).  libjq's jv is used only
 * where a tree is worth it (schemas, the manifest).
 */
#ifndef PIPE_JSON_H
#define PIPE_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "sb.h"

enum json_type {
	JSON_NONE = 0,	/* absent */
	JSON_OBJECT,
	JSON_ARRAY,
	JSON_STRING,
	JSON_NUMBER,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL
};

/* The type of the valid JSON value whose first byte is c. */
static inline enum json_type json_type_at(unsigned char c)
{
	switch (c) {
	case '{': return JSON_OBJECT;
	case '[': return JSON_ARRAY;
	case '"': return JSON_STRING;
	case 't': return JSON_TRUE;
	case 'f': return JSON_FALSE;
	case 'n': return JSON_NULL;
	default: return JSON_NUMBER;
	}
}

/* A value inside a buffer: p points at its first byte ('{', '"', '1', ...). */
struct json_span {
	const char *p;
	size_t len;
	enum json_type type;
};

/*
 * Validate that buf[0..len) holds exactly one JSON value (RFC 8259), with
 * optional whitespace around it.  Strings must be valid UTF-8 with valid
 * escapes; nesting is limited to JSON_MAX_DEPTH.  Returns 0 when valid;
 * otherwise -1, with *errpos set to the 0-based offset of the offending byte
 * and *errmsg to a static description ("unexpected character", ...).
 * The value found is stored in *out when out is not NULL.
 */
#define JSON_MAX_DEPTH 512
int json_validate(const char *buf, size_t len, struct json_span *out,
		  size_t *errpos, const char **errmsg);

/*
 * json_validate() that also notes top-level members, in the same pass: when
 * the value is an object, vals[i] is set to the value of the first member
 * whose key, decoded, equals keys[i] (later duplicates are ignored), and to
 * { NULL, 0, JSON_NONE } when there is none.  keys[] are C strings.  On error
 * *errmsg begins with "invalid JSON: " ("invalid JSON: unexpected character")
 * and vals[] are unspecified.  No allocation.
 */
int json_validate_members(const char *buf, size_t len,
			  const char *const keys[], size_t nkeys,
			  struct json_span vals[], struct json_span *out,
			  size_t *errpos, const char **errmsg);

/*
 * A member of an object, as json_validate_inner() met it: where its key
 * and value are, as offsets from the object's first byte (its '{'), so
 * that members copied with the object need no change, and in 32 bits,
 * half the bytes of two spans (Parquet batches copy every one).
 */
struct json_member {
	uint32_t key, key_len;	/* the key, a JSON string, quotes included */
	uint32_t val, val_len;
	unsigned char val_type;	/* enum json_type */
	unsigned char key_esc;	/* the key holds a backslash */
	unsigned char val_esc;	/* the value is a string that holds a backslash */
};

/* The key and the value of member m of the object whose first byte is at obj. */
static inline struct json_span json_member_key(const char *obj, const struct json_member *m)
{
	struct json_span s = { obj + m->key, m->key_len, JSON_STRING };

	return s;
}

static inline struct json_span json_member_val(const char *obj, const struct json_member *m)
{
	struct json_span s = { obj + m->val, m->val_len, (enum json_type)m->val_type };

	return s;
}

/* Where json_validate_inner() notes the members of one object. */
struct json_members {
	size_t of;		/* in: the object is the value of keys[of] */
	struct json_member *m;	/* in: room for cap members */
	size_t cap;
	size_t n;		/* out: the members it has (when above cap, only the first cap are in m) */
};

/*
 * json_validate_members() that also notes, in the same pass, the members of
 * vals[mem->of] when that value is an object: each in order, repeats
 * included, with its key and value spans as json_object_next() gives them,
 * as offsets from vals[mem->of].p.  mem->n is 0 when the value is absent or
 * not an object, and unspecified on error.  A buffer of 4 GiB or more notes
 * none: mem->n is then SIZE_MAX.  Only json_validate_members()'s cost when
 * mem is NULL.
 */
int json_validate_inner(const char *buf, size_t len,
			const char *const keys[], size_t nkeys,
			struct json_span vals[], struct json_members *mem,
			struct json_span *out, size_t *errpos,
			const char **errmsg);

/*
 * json_validate_inner() without its fast path (the one for lines of at most
 * 16 KiB that are objects): every input goes through the one scanner that
 * json_validate() and json_validate_members() use.  The same results,
 * messages and offsets, only slower; the tests compare the two.
 */
int json_validate_inner_slow(const char *buf, size_t len,
			     const char *const keys[], size_t nkeys,
			     struct json_span vals[], struct json_members *mem,
			     struct json_span *out, size_t *errpos,
			     const char **errmsg);

/*
 * Find member key in the object span obj (already validated).  Returns 1 and
 * fills *out when found (the first occurrence), 0 when absent, -1 when obj is
 * not an object.  Keys written with escapes are compared after decoding.
 */
int json_object_get(const struct json_span *obj, const char *key,
		    struct json_span *out);

/*
 * Iterate the members of a validated object: start with *pos = 0; each call
 * returns 1 with the member's key span (a JSON_STRING, quotes included) and
 * value span, or 0 at the end.
 */
int json_object_next(const struct json_span *obj, size_t *pos,
		     struct json_span *key, struct json_span *val);

/* Iterate the elements of a validated array the same way. */
int json_array_next(const struct json_span *arr, size_t *pos,
		    struct json_span *val);

/*
 * Append the decoded (UTF-8) contents of a validated JSON_STRING span to out.
 * \u0000 decodes to a NUL byte: callers that need C strings must check.
 */
void json_string_decode(const struct json_span *s, struct sb *out);

/*
 * json_string_decode() in place: the validated JSON string literal
 * lit[0..len) (its quotes included) replaced by its decoded contents, from
 * lit[0], NUL-terminated (decoded, a literal is at least 2 bytes shorter).
 * The decoded length.  For a huge value, which is then not copied.
 */
size_t json_string_decode_in_place(char *lit, size_t len);

/*
 * 1 when the decoded contents of the validated JSON_STRING span s equal the
 * C string str (ignoring ASCII case when icase is set), else 0.  No allocation.
 */
int json_string_equal(const struct json_span *s, const char *str, int icase);

/*
 * Append s[0..len) to out as a JSON string literal, quotes included, escaped
 * as jq escapes ('"', '\\', control characters, DEL).  Bytes that are not
 * valid UTF-8 become U+FFFD, so the result is always valid JSON.
 */
void json_quote(struct sb *out, const char *s, size_t len);

/* Append the n C strings of list to out as a JSON array of strings. */
void json_quote_list(struct sb *out, char *const *list, size_t n);

/* Append a validated value with all insignificant whitespace removed. */
void json_compact(const struct json_span *v, struct sb *out);

/*
 * Append a validated value pretty-printed: two-space indentation, "key": value,
 * empty containers as {} and [], a newline after the last line.  Numbers and
 * strings are copied byte for byte.
 */
void json_pretty(const struct json_span *v, struct sb *out);

#endif
