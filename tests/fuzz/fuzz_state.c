/*
 * fuzz_state: libFuzzer target for saved states.  The input goes through
 * state_check() (what `pipe-state set` does with stdin) and json_validate();
 * what they accept must survive the round trips the commit protocol makes:
 * the state is saved pretty-printed (json_pretty), read back and handed to
 * the tap compact (json_compact), then pretty-printed again — and every
 * step must give valid JSON with the same meaning, byte for byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "sb.h"
#include "state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void must(int ok)
{
	if (!ok)
		abort();
}

static struct json_span parse(const struct sb *s)
{
	struct json_span v;
	size_t errpos;
	const char *errmsg;

	must(json_validate(s->buf ? s->buf : "", s->len, &v, &errpos, &errmsg) == 0);
	return v;
}

/* pretty -> compact -> pretty is stable, and compact is a fixed point. */
static void round_trip(const struct json_span *v)
{
	struct sb pretty = SB_INIT, compact = SB_INIT, pretty2 = SB_INIT, compact2 = SB_INIT;
	struct json_span p, c;

	json_pretty(v, &pretty);
	must(pretty.len > 0 && pretty.buf[pretty.len - 1] == '\n');
	p = parse(&pretty);
	must(p.type == v->type);
	json_compact(&p, &compact);
	c = parse(&compact);
	must(memchr(compact.buf, '\n', compact.len) == NULL);
	json_compact(v, &compact2);
	must(compact.len == compact2.len && memcmp(compact.buf, compact2.buf, compact.len) == 0);
	json_pretty(&c, &pretty2);
	must(pretty.len == pretty2.len && memcmp(pretty.buf, pretty2.buf, pretty.len) == 0);
	sb_free(&pretty);
	sb_free(&compact);
	sb_free(&pretty2);
	sb_free(&compact2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct sb out = SB_INIT, q = SB_INIT;
	struct json_span v;
	size_t errpos;
	const char *errmsg;

	if (json_validate(text, size, &v, &errpos, &errmsg) == 0) {
		must(v.type != JSON_NONE);
		round_trip(&v);
	} else {
		must(errpos <= size && errmsg != NULL);
	}
	if (state_check(text, size, "<fuzz>", &out) == 0) {
		v = parse(&out);
		must(v.type == JSON_OBJECT);
		round_trip(&v);
	}
	/* any bytes quote to a valid JSON string */
	json_quote(&q, text, size);
	v = parse(&q);
	must(v.type == JSON_STRING);
	sb_free(&out);
	sb_free(&q);
	return 0;
}
