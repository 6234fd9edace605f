/*
 * dataspoc-tap-postgres: JSON as singer-python prints it (simplejson with its
 * defaults: ", " between members, ": " after keys, ensure_ascii), and the
 * state kept in the order Python's dicts keep it.
 */
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "sb.h"
#include "tap_pg.h"

/* 1: the byte is printed as is inside a string. */
static unsigned char plain[256];

static void plain_init(void)
{
	int c;

	for (c = 0x20; c < 0x7f; c++)
		plain[c] = 1;
	plain['"'] = 0;
	plain['\\'] = 0;
}

/* The code point of the UTF-8 sequence at s (n bytes left); *used its length; -1 when invalid. */
static long utf8_cp(const unsigned char *s, size_t n, size_t *used)
{
	unsigned c = s[0];
	size_t len, i;
	long cp;

	if (c < 0xc2)
		return -1;
	if (c < 0xe0) {
		len = 2;
		cp = c & 0x1f;
	} else if (c < 0xf0) {
		len = 3;
		cp = c & 0x0f;
	} else if (c < 0xf5) {
		len = 4;
		cp = c & 0x07;
	} else {
		return -1;
	}
	if (n < len)
		return -1;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*used = len;
	return cp;
}

/* Write \uXXXX at d; the byte after it. */
static char *put_u(char *d, unsigned cp)
{
	static const char hex[] = "0123456789abcdef";

	d[0] = '\\';
	d[1] = 'u';
	d[2] = hex[(cp >> 12) & 15];
	d[3] = hex[(cp >> 8) & 15];
	d[4] = hex[(cp >> 4) & 15];
	d[5] = hex[cp & 15];
	return d + 6;
}

/*
 * Each run of plain bytes is copied at once, with room for the escape after
 * it (at most 12 bytes: a surrogate pair) and the closing quote: the string
 * grows once a run, not once a piece.
 */
void py_quote_body(struct sb *out, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, start, used;
	char *d;
	long cp;

	if (!plain[' '])
		plain_init();
	sb_grow(out, len + 1);
	for (;;) {
		start = i;
		while (i < len && plain[s[i]])
			i++;
		if (out->len + (i - start) + 14 > out->cap)
			sb_grow(out, (i - start) + 13);
		d = out->buf + out->len;
		memcpy(d, s + start, i - start);
		d += i - start;
		if (i == len)
			break;
		switch (s[i]) {
		case '"': *d++ = '\\'; *d++ = '"'; i++; break;
		case '\\': *d++ = '\\'; *d++ = '\\'; i++; break;
		case '\n': *d++ = '\\'; *d++ = 'n'; i++; break;
		case '\r': *d++ = '\\'; *d++ = 'r'; i++; break;
		case '\t': *d++ = '\\'; *d++ = 't'; i++; break;
		case '\b': *d++ = '\\'; *d++ = 'b'; i++; break;
		case '\f': *d++ = '\\'; *d++ = 'f'; i++; break;
		default:
			if (s[i] < 0x80) {
				d = put_u(d, s[i]);
				i++;
				break;
			}
			cp = utf8_cp(s + i, len - i, &used);
			if (cp < 0) {
				/* not UTF-8 (a SQL_ASCII database): the replacement character */
				d = put_u(d, 0xfffd);
				i++;
				break;
			}
			i += used;
			if (cp >= 0x10000) {
				cp -= 0x10000;
				d = put_u(d, 0xd800 | (unsigned)(cp >> 10));
				d = put_u(d, 0xdc00 | (unsigned)(cp & 0x3ff));
			} else {
				d = put_u(d, (unsigned)cp);
			}
		}
		out->len = (size_t)(d - out->buf);
	}
	*d = '\0';
	out->len = (size_t)(d - out->buf);
}

void py_quote(struct sb *out, const char *str, size_t len)
{
	sb_grow(out, len + 2);
	out->buf[out->len++] = '"';
	py_quote_body(out, str, len);
	out->buf[out->len++] = '"';
	out->buf[out->len] = '\0';
}

size_t utf8_cut(const char *str, size_t len, size_t want)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t cut = want, back = 0;

	if (want >= len)
		return len;
	/* not inside a sequence: back to its lead byte (at most 3 back) */
	while (cut > 0 && back < 3 && (s[cut] & 0xc0) == 0x80)
		cut--, back++;
	return cut ? cut : want;
}

/* A validated string span, re-quoted (its escapes decoded first). */
static void requote(struct sb *out, const struct json_span *v)
{
	struct sb d = SB_INIT;

	json_string_decode(v, &d);
	py_quote(out, d.buf ? d.buf : "", d.len);
	sb_free(&d);
}

static void indent(struct sb *out, int depth)
{
	sb_addc(out, '\n');
	for (int i = 0; i < depth; i++)
		sb_add(out, "  ", 2);
}

/* depth < 0: one line; else json.dump(indent=2) at that depth. */
static void dump(struct sb *out, const struct json_span *v, int depth)
{
	struct json_span k, e;
	size_t pos = 0;
	int n = 0;

	switch (v->type) {
	case JSON_OBJECT:
		sb_addc(out, '{');
		while (json_object_next(v, &pos, &k, &e)) {
			if (n++)
				sb_adds(out, depth < 0 ? ", " : ",");
			if (depth >= 0)
				indent(out, depth + 1);
			requote(out, &k);
			sb_add(out, ": ", 2);
			dump(out, &e, depth < 0 ? depth : depth + 1);
		}
		if (n && depth >= 0)
			indent(out, depth);
		sb_addc(out, '}');
		break;
	case JSON_ARRAY:
		sb_addc(out, '[');
		while (json_array_next(v, &pos, &e)) {
			if (n++)
				sb_adds(out, depth < 0 ? ", " : ",");
			if (depth >= 0)
				indent(out, depth + 1);
			dump(out, &e, depth < 0 ? depth : depth + 1);
		}
		if (n && depth >= 0)
			indent(out, depth);
		sb_addc(out, ']');
		break;
	case JSON_STRING:
		requote(out, v);
		break;
	default:
		sb_add(out, v->p, v->len);
		break;
	}
}

void py_dump(struct sb *out, const struct json_span *v)
{
	dump(out, v, -1);
}

void py_dump_indent(struct sb *out, const struct json_span *v)
{
	dump(out, v, 0);
}

/* ---- objects kept in order ---- */

struct kv *kv_get(struct kvlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0)
			return &l->v[i];
	return NULL;
}

void kv_set(struct kvlist *l, const char *key, const char *val, size_t len)
{
	struct kv *kv = kv_get(l, key);

	if (kv == NULL) {
		if (l->n == l->cap) {
			l->cap = l->cap ? 2 * l->cap : 8;
			l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
		}
		kv = &l->v[l->n++];
		kv->key = xstrdup(key);
		kv->val = (struct sb)SB_INIT;
	}
	sb_reset(&kv->val);
	sb_add(&kv->val, val, len);
}

void kv_free(struct kvlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		sb_free(&l->v[i].val);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* ---- the state ---- */

static void need_bookmarks(struct state *s)
{
	if (s->has_bookmarks)
		return;
	kv_set(&s->top, "bookmarks", "{}", 2);
	s->bookmarks_at = s->top.n - 1;
	s->has_bookmarks = 1;
}

struct bookmark *state_bookmark(struct state *s, const char *id, int create)
{
	for (size_t i = 0; i < s->nbms; i++)
		if (strcmp(s->bms[i].id, id) == 0)
			return &s->bms[i];
	if (!create)
		return NULL;
	need_bookmarks(s);
	s->bms = xrealloc(s->bms, (s->nbms + 1) * sizeof(*s->bms));
	memset(&s->bms[s->nbms], 0, sizeof(*s->bms));
	s->bms[s->nbms].id = xstrdup(id);
	return &s->bms[s->nbms++];
}

void state_write(struct state *s, const char *id, const char *key, const char *val, size_t len)
{
	kv_set(&state_bookmark(s, id, 1)->kv, key, val, len);
}

void state_reset(struct state *s, const char *id)
{
	struct bookmark *b = state_bookmark(s, id, 0);

	if (b)
		kv_free(&b->kv);
}

void state_currently(struct state *s, const char *id)
{
	struct sb v = SB_INIT;

	if (id)
		py_quotes(&v, id);
	else
		sb_adds(&v, "null");
	kv_set(&s->top, "currently_syncing", v.buf, v.len);
	sb_free(&v);
}

static void kv_print(const struct kvlist *l, struct sb *out)
{
	sb_addc(out, '{');
	for (size_t i = 0; i < l->n; i++) {
		if (i)
			sb_add(out, ", ", 2);
		py_quotes(out, l->v[i].key);
		sb_add(out, ": ", 2);
		sb_add(out, l->v[i].val.buf, l->v[i].val.len);
	}
	sb_addc(out, '}');
}

void state_message(const struct state *s, struct sb *out)
{
	sb_adds(out, "{\"type\": \"STATE\", \"value\": {");
	for (size_t i = 0; i < s->top.n; i++) {
		if (i)
			sb_add(out, ", ", 2);
		py_quotes(out, s->top.v[i].key);
		sb_add(out, ": ", 2);
		if (s->has_bookmarks && i == s->bookmarks_at) {
			sb_addc(out, '{');
			for (size_t j = 0; j < s->nbms; j++) {
				if (j)
					sb_add(out, ", ", 2);
				py_quotes(out, s->bms[j].id);
				sb_add(out, ": ", 2);
				kv_print(&s->bms[j].kv, out);
			}
			sb_addc(out, '}');
		} else {
			sb_add(out, s->top.v[i].val.buf, s->top.v[i].val.len);
		}
	}
	sb_adds(out, "}}\n");
}

void state_free(struct state *s)
{
	kv_free(&s->top);
	for (size_t i = 0; i < s->nbms; i++) {
		free(s->bms[i].id);
		kv_free(&s->bms[i].kv);
	}
	free(s->bms);
	memset(s, 0, sizeof(*s));
}
