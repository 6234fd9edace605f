/*
 * json_diff.h: json_validate_inner() against json_validate_inner_slow(),
 * field by field, for tests/unit/test_json.c and tests/fuzz/fuzz_json.c.
 * The two must agree on everything: the result; on error the offset and
 * the message; on success every key's span, the top value's span, and the
 * number of members noted and each of them (spans, types, backslash flags).
 */
#ifndef PIPE_JSON_DIFF_H
#define PIPE_JSON_DIFF_H

#include <stdio.h>
#include <string.h>

#include "json.h"

/* Singer's keys (lib/singer.c), then two short ones random inputs meet. */
static const char *const json_diff_keys[] = {
	"type", "stream", "record", "value", "schema", "key_properties",
	"bookmark_properties", "version", "r", "a",
};
#define JSON_DIFF_NKEYS (sizeof(json_diff_keys) / sizeof(json_diff_keys[0]))
#define JSON_DIFF_ROOM 64

static int json_diff_span(const struct json_span *a, const struct json_span *b)
{
	return a->p == b->p && a->len == b->len && a->type == b->type;
}

/*
 * 1 when the two agree on in[0..len) with the first nkeys keys, the members
 * of keys[of] noted in room for cap (no room asked when use_mem is 0) and
 * the top value asked for when use_out is set; else 0, with a line on stdout.
 */
static int json_diff(const char *in, size_t len, size_t nkeys, size_t of,
		     size_t cap, int use_mem, int use_out)
{
	static struct json_member ra[JSON_DIFF_ROOM], rb[JSON_DIFF_ROOM];
	struct json_members ma = { of, ra, cap, 777 }, mb = { of, rb, cap, 777 };
	struct json_span va[JSON_DIFF_NKEYS], vb[JSON_DIFF_NKEYS], oa, ob;
	size_t pa = 991, pb = 991, i;
	const char *ea = NULL, *eb = NULL;
	int a, b;

	if (nkeys > JSON_DIFF_NKEYS)
		nkeys = JSON_DIFF_NKEYS;
	if (cap > JSON_DIFF_ROOM)
		cap = ma.cap = mb.cap = JSON_DIFF_ROOM;
	memset(ra, 0xa5, sizeof(ra));
	memset(rb, 0xa5, sizeof(rb));
	memset(&oa, 0x5a, sizeof(oa));
	memset(&ob, 0x5a, sizeof(ob));
	a = json_validate_inner(in, len, json_diff_keys, nkeys, va, use_mem ? &ma : NULL,
				use_out ? &oa : NULL, &pa, &ea);
	b = json_validate_inner_slow(in, len, json_diff_keys, nkeys, vb, use_mem ? &mb : NULL,
				     use_out ? &ob : NULL, &pb, &eb);
	if (a != b) {
		printf("#   json_diff: results %d and %d\n", a, b);
		return 0;
	}
	if (a != 0) {
		if (pa == pb && ea && eb && strcmp(ea, eb) == 0)
			return 1;
		printf("#   json_diff: errors at %zu '%s' and %zu '%s'\n", pa, ea ? ea : "(null)",
		       pb, eb ? eb : "(null)");
		return 0;
	}
	for (i = 0; i < nkeys; i++) {
		if (!json_diff_span(&va[i], &vb[i])) {
			printf("#   json_diff: key %zu\n", i);
			return 0;
		}
	}
	if (use_out && !json_diff_span(&oa, &ob)) {
		printf("#   json_diff: top value\n");
		return 0;
	}
	if (!use_mem)
		return 1;
	if (ma.n != mb.n) {
		printf("#   json_diff: %zu and %zu members\n", ma.n, mb.n);
		return 0;
	}
	/* nothing written past the room */
	for (i = cap; i < JSON_DIFF_ROOM; i++) {
		struct json_member untouched;

		memset(&untouched, 0xa5, sizeof(untouched));
		if (memcmp(&ra[i], &untouched, sizeof(untouched)) != 0 ||
		    memcmp(&rb[i], &untouched, sizeof(untouched)) != 0) {
			printf("#   json_diff: member %zu written, past the room for %zu\n", i, cap);
			return 0;
		}
	}
	/* (the offsets are from the same byte: vals[of] agree) */
	for (i = 0; i < ma.n && i < cap; i++) {
		if (ra[i].key != rb[i].key || ra[i].key_len != rb[i].key_len || ra[i].val != rb[i].val ||
		    ra[i].val_len != rb[i].val_len || ra[i].val_type != rb[i].val_type ||
		    ra[i].key_esc != rb[i].key_esc || ra[i].val_esc != rb[i].val_esc) {
			printf("#   json_diff: member %zu\n", i);
			return 0;
		}
	}
	return 1;
}

#endif
