/*
 * dataspoc-tap-csv: the --state file in, STATE messages out; the state is
 * kept as bytes, so that other streams' bookmarks pass unchanged.
 */
#include <string.h>
#include <strings.h>

#include "err.h"
#include "json.h"
#include "sb.h"
#include "tap_csv.h"
#include "util.h"

static int state_fail(struct tap *t, size_t pos, const char *why)
{
	return singer_tap_bad_at("state", t->state_file, t->state_text.buf, t->state_text.len, pos,
				 why);
}

int load_state(struct tap *t)
{
	struct json_span top, v, bms, bm, s;
	struct sb str = SB_INIT;
	const char *why = NULL;
	size_t pos = 0, i;
	int rc = 0;

	if (util_read_file(t->state_file, &t->state_text, NULL) < 0) {
		err_msg("state '%s':", t->state_file);
		return EXIT_USAGE;
	}
	if (json_validate(t->state_text.buf ? t->state_text.buf : "",
			  t->state_text.len, &top, &pos, &why) < 0)
		return state_fail(t, pos, why);
	if (top.type != JSON_OBJECT)
		return singer_tap_bad("state", t->state_file, "not a JSON object");
	/* A whole STATE message is accepted too: its value is the state. */
	if (json_object_get(&top, "type", &v) == 1 && v.type == JSON_STRING) {
		json_string_decode(&v, &str);
		if (strcasecmp(str.buf, "STATE") == 0 &&
		    json_object_get(&top, "value", &v) == 1) {
			if (v.type != JSON_OBJECT) {
				sb_free(&str);
				return singer_tap_bad("state", t->state_file,
					   "\"value\" is not an object");
			}
			top = v;
		}
	}
	t->state = top;
	if (json_object_get(&top, "bookmarks", &bms) != 1)
		goto out;
	if (bms.type != JSON_OBJECT) {
		rc = singer_tap_bad("state", t->state_file, "\"bookmarks\" is not an object");
		goto out;
	}
	for (i = 0; i < t->nents; i++) {
		struct entity *e = &t->ents[i];

		if (e->rk == NULL || json_object_get(&bms, e->name, &bm) != 1)
			continue;
		if (bm.type != JSON_OBJECT) {
			rc = singer_tap_bad("state", t->state_file, "bookmark of '%s' is "
				 "not an object", e->name);
			goto out;
		}
		if (json_object_get(&bm, "replication_key", &s) == 1 &&
		    s.type == JSON_STRING) {
			sb_reset(&str);
			json_string_decode(&s, &str);
			if (!bytes_eq(str.buf, str.len, e->rk)) {
				err_warn("state '%s': %s was bookmarked on '%s', "
					 "not '%s': extracting every row",
					 t->state_file, e->name, str.buf, e->rk);
				continue;
			}
		}
		if (json_object_get(&bm, "replication_key_value", &s) != 1 ||
		    s.type == JSON_NULL)
			continue;
		if (s.type != JSON_STRING) {
			rc = singer_tap_bad("state", t->state_file, "replication_key_value "
				 "of '%s' is not a string", e->name);
			goto out;
		}
		json_string_decode(&s, &e->bm);
		e->has_bm = 1;
	}
out:
	sb_free(&str);
	return rc;
}

static void add_bookmark(struct sb *out, const struct entity *e)
{
	json_quote(out, e->name, strlen(e->name));
	sb_adds(out, ":{\"replication_key\":");
	json_quote(out, e->rk, strlen(e->rk));
	sb_adds(out, ",\"replication_key_value\":");
	json_quote(out, e->bm.buf, e->bm.len);
	sb_addc(out, '}');
}

static int changed(const struct entity *e)
{
	return e->rk != NULL && e->has_bm && e->bm_changed;
}

static void add_bookmarks(struct tap *t, const struct json_span *old,
			  struct sb *out)
{
	struct json_span k, v;
	struct sb key = SB_INIT;
	size_t pos = 0, i;
	int first = 1;

	for (i = 0; i < t->nents; i++)
		t->ents[i].mark = 0;
	sb_addc(out, '{');
	while (old != NULL && json_object_next(old, &pos, &k, &v)) {
		struct entity *e;

		sb_reset(&key);
		json_string_decode(&k, &key);
		e = find_entity(t, key.buf, key.len);
		if (e != NULL && changed(e)) {
			if (e->mark)
				continue;	/* a duplicate key: replaced once */
			e->mark = 1;
			if (!first)
				sb_addc(out, ',');
			add_bookmark(out, e);
		} else {
			if (!first)
				sb_addc(out, ',');
			json_compact(&k, out);
			sb_addc(out, ':');
			json_compact(&v, out);
		}
		first = 0;
	}
	for (i = 0; i < t->nents; i++) {
		if (!changed(&t->ents[i]) || t->ents[i].mark)
			continue;
		if (!first)
			sb_addc(out, ',');
		add_bookmark(out, &t->ents[i]);
		first = 0;
	}
	sb_addc(out, '}');
	sb_free(&key);
}

/*
 * The state: the --state value with the bookmarks of the streams extracted
 * so far replaced, every other member copied byte for byte.
 */
static void state_value(struct tap *t, struct sb *out)
{
	struct json_span k, v;
	struct sb key = SB_INIT;
	size_t pos = 0, i;
	int first = 1, done = 0, any = 0;

	for (i = 0; i < t->nents; i++)
		any |= changed(&t->ents[i]);
	sb_addc(out, '{');
	while (t->state.type == JSON_OBJECT &&
	       json_object_next(&t->state, &pos, &k, &v)) {
		sb_reset(&key);
		json_string_decode(&k, &key);
		if (bytes_eq(key.buf, key.len, "bookmarks") && any) {
			if (done)
				continue;
			done = 1;
		}
		if (!first)
			sb_addc(out, ',');
		first = 0;
		json_compact(&k, out);
		sb_addc(out, ':');
		if (bytes_eq(key.buf, key.len, "bookmarks") && any)
			add_bookmarks(t, &v, out);
		else
			json_compact(&v, out);
	}
	if (any && !done) {
		if (!first)
			sb_addc(out, ',');
		sb_adds(out, "\"bookmarks\":");
		add_bookmarks(t, NULL, out);
	}
	sb_addc(out, '}');
	sb_free(&key);
}

int emit_state(struct tap *t)
{
	sb_adds(&t->msg, "{\"type\":\"STATE\",\"value\":");
	state_value(t, &t->msg);
	sb_adds(&t->msg, "}\n");
	return emit(t);
}
