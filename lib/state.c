/* state: loading and checking saved Singer states. */
#include "state.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "json.h"
#include "layout.h"
#include "util.h"

/* 1-based line and column of offset pos in text. */
static void line_col(const char *text, size_t pos, size_t *line, size_t *col)
{
	size_t i;

	*line = 1;
	*col = 1;
	for (i = 0; i < pos; i++) {
		if (text[i] == '\n') {
			(*line)++;
			*col = 1;
		} else {
			(*col)++;
		}
	}
}

static int parse_object(const char *text, size_t len, const char *origin, struct json_span *v)
{
	size_t errpos, line, col;
	const char *errmsg;

	if (json_validate(text, len, v, &errpos, &errmsg) != 0) {
		line_col(text, errpos, &line, &col);
		err_msg("%s:%zu:%zu: not valid JSON: %s", origin, line, col, errmsg);
		return -1;
	}
	if (v->type != JSON_OBJECT) {
		err_msg("%s: a Singer state must be a JSON object", origin);
		return -1;
	}
	return 0;
}

int state_load(struct bucket *b, const char *pipeline, struct sb *out)
{
	struct sb text = SB_INIT;
	struct json_span v;
	char *key = layout_state_key(pipeline);
	char *origin = NULL;
	int r = bucket_get(b, key, &text);

	if (r == 0) {
		origin = xasprintf("%s/%s", bucket_url(b), key);
		if (parse_object(text.buf, text.len, origin, &v) != 0)
			r = -1;
		else
			json_compact(&v, out);
	}
	free(origin);
	free(key);
	sb_free(&text);
	return r;
}

int state_check(const char *text, size_t len, const char *origin, struct sb *out)
{
	struct json_span v, type, value;
	struct sb t = SB_INIT;

	if (parse_object(text, len, origin, &v) != 0)
		return -1;
	if (json_object_get(&v, "type", &type) == 1 && type.type == JSON_STRING) {
		json_string_decode(&type, &t);
		if (strcmp(t.buf, "STATE") != 0 && strcmp(t.buf, "state") != 0) {
			err_msg("%s: a %s message is not a state", origin, t.buf);
			sb_free(&t);
			return -1;
		}
		sb_free(&t);
		if (json_object_get(&v, "value", &value) != 1 || value.type != JSON_OBJECT) {
			err_msg("%s: STATE message without an object \"value\"", origin);
			return -1;
		}
		v = value;
	}
	json_pretty(&v, out);
	return 0;
}
