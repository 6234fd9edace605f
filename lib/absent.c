/* absent: the properties a record of an upsert stream leaves out (see absent.h). */
#include "absent.h"

#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "err.h"

char **absent_props(const char *schema, size_t len)
{
	struct json_span obj, props, k, v;
	size_t errpos, pos = 0, n = 0;
	const char *errmsg;
	char **out = NULL;

	if (schema == NULL || json_validate(schema, len, &obj, &errpos, &errmsg) != 0 || obj.type != JSON_OBJECT ||
	    json_object_get(&obj, "properties", &props) != 1 || props.type != JSON_OBJECT)
		return NULL;
	while (json_object_next(&props, &pos, &k, &v)) {
		struct sb name = SB_INIT;

		json_string_decode(&k, &name);
		/*
		 * (a NUL in it: never matched; the Singer metadata, _sdc_*, tells
		 * of the record, not of the row: a record without _sdc_deleted_at
		 * is no delete, whatever the row was)
		 */
		if (name.len != strlen(name.buf ? name.buf : "") || strcmp(name.buf, ABSENT_MEMBER) == 0 ||
		    strncmp(name.buf, "_sdc_", 5) == 0) {
			sb_free(&name);
			continue;
		}
		out = xrealloc(out, (n + 2) * sizeof(*out));
		out[n++] = sb_detach(&name);
		out[n] = NULL;
	}
	return out;
}

int absent_mark(const char *rec, size_t len, char *const *props, struct sb *out)
{
	struct json_span obj = { rec, len, JSON_OBJECT }, v;
	size_t i, end;
	int n = 0;

	for (i = 0; props && props[i]; i++) {
		if (json_object_get(&obj, props[i], &v) != 0)
			continue;
		if (n++ == 0) {
			/* rec without its closing brace (and the blanks before it) */
			for (end = len; end > 0 && rec[end - 1] != '}'; end--)
				;
			for (end--; end > 1 && strchr(" \t\r\n", rec[end - 1]); end--)
				;
			sb_reset(out);
			sb_add(out, rec, end);
			if (end > 1)
				sb_addc(out, ',');
			sb_adds(out, "\"" ABSENT_MEMBER "\":[");
		} else {
			sb_addc(out, ',');
		}
		json_quote(out, props[i], strlen(props[i]));
	}
	if (n)
		sb_adds(out, "]}");
	return n > 0;
}

int absent_marked(const char *rec, size_t len)
{
	return memmem(rec, len, "\"" ABSENT_MEMBER "\"", sizeof(ABSENT_MEMBER) + 1) != NULL;
}

/* Whether the array of names list holds the string name (a key span, quotes included). */
static int names_has(const struct json_span *list, const struct json_span *name)
{
	struct json_span v;
	size_t pos = 0;

	if (list == NULL || list->type != JSON_ARRAY)
		return 0;
	while (json_array_next(list, &pos, &v))
		if (v.type == JSON_STRING && v.len == name->len && memcmp(v.p, name->p, v.len) == 0)
			return 1;
	return 0;
}

/* Add the member k:v to the object out, with a ',' before it unless *first. */
static void add_member(struct sb *out, int *first, const struct json_span *k, const struct json_span *v)
{
	if (!*first)
		sb_addc(out, ',');
	*first = 0;
	sb_add(out, k->p, k->len);
	sb_addc(out, ':');
	sb_add(out, v->p, v->len);
}

int absent_fill(const char *rec, size_t len, const char *prev, size_t plen, struct sb *out)
{
	struct json_span obj = { rec, len, JSON_OBJECT }, pobj = { prev, plen, JSON_OBJECT };
	struct json_span k, v, names, pnames, pk, pv;
	struct sb still = SB_INIT;
	size_t pos = 0, ppos;
	int first = 1, have_pnames = 0;

	if (len == 0 || rec[0] != '{' || (prev && (plen == 0 || prev[0] != '{')))
		return -1;
	if (json_object_get(&obj, ABSENT_MEMBER, &names) != 1 || names.type != JSON_ARRAY)
		names.type = JSON_NULL;
	if (prev)
		have_pnames = json_object_get(&pobj, ABSENT_MEMBER, &pnames) == 1;
	sb_reset(out);
	sb_addc(out, '{');
	while (json_object_next(&obj, &pos, &k, &v)) {
		if (json_string_equal(&k, ABSENT_MEMBER, 0))
			continue;
		add_member(out, &first, &k, &v);
	}
	/* the names: JSON strings as the marker holds them (json_quote's), compared byte for byte */
	ppos = 0;
	while (names.type == JSON_ARRAY && json_array_next(&names, &ppos, &k)) {
		size_t qpos = 0;
		int found = 0;

		if (k.type != JSON_STRING)
			continue;
		while (prev && json_object_next(&pobj, &qpos, &pk, &pv)) {
			if (pk.len == k.len && memcmp(pk.p, k.p, k.len) == 0 && !json_string_equal(&pk, ABSENT_MEMBER, 0)) {
				add_member(out, &first, &pk, &pv);
				found = 1;
				break;
			}
		}
		if (!found && have_pnames && names_has(&pnames, &k)) {
			sb_addc(&still, still.len ? ',' : '[');
			sb_add(&still, k.p, k.len);
		}
	}
	if (still.len) {
		if (!first)
			sb_addc(out, ',');
		sb_adds(out, "\"" ABSENT_MEMBER "\":");
		sb_add(out, still.buf, still.len);
		sb_addc(out, ']');
	}
	sb_addc(out, '}');
	sb_free(&still);
	return 0;
}
