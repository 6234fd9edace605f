/* tapline: pipe-tap's in-band lines, written and read. */
#include "tapline.h"

#include <stdlib.h>
#include <string.h>

#include "err.h"

void tapline_selected(struct sb *out, const char *streams_json)
{
	sb_addf(out, "{\"type\":\"%s\",\"streams\":%s}\n", TAPLINE_SELECTED_TYPE, streams_json);
}

void tapline_end(struct sb *out, int exit_status, const char *error)
{
	sb_addf(out, "{\"type\":\"%s\",\"status\":\"%s\",\"exit_status\":%d", TAPLINE_END_TYPE,
		error ? "failure" : "success", exit_status);
	if (error) {
		sb_adds(out, ",\"error\":");
		json_quote(out, error, strlen(error));
	}
	sb_adds(out, "}\n");
}

int tapline_is_selected(const struct json_span *type)
{
	return json_string_equal(type, TAPLINE_SELECTED_TYPE, 0);
}

int tapline_is_end(const struct json_span *type)
{
	static const char want[] = "\"" TAPLINE_END_TYPE "\"";

	return type->len == sizeof(want) - 1 && memcmp(type->p, want, sizeof(want) - 1) == 0;
}

int tapline_parse_selected(const char *line, size_t len, char ***names, size_t *n)
{
	struct json_span obj, list, el;
	size_t errpos, pos = 0;
	const char *errmsg;
	char **v = NULL;
	size_t k = 0;

	if (json_validate(line, len, &obj, &errpos, &errmsg) != 0 ||
	    json_object_get(&obj, "streams", &list) != 1 || list.type != JSON_ARRAY)
		return -1;
	while (json_array_next(&list, &pos, &el)) {
		struct sb name = SB_INIT;

		if (el.type != JSON_STRING)
			continue;
		json_string_decode(&el, &name);
		v = xrealloc(v, (k + 1) * sizeof(*v));
		v[k++] = sb_detach(&name);
	}
	if (v == NULL)
		v = xcalloc(1, sizeof(*v));
	*names = v;
	*n = k;
	return 0;
}

int tapline_parse_end(const char *line, size_t len, char **error)
{
	struct json_span obj, v;
	size_t errpos;
	const char *errmsg;
	struct sb text = SB_INIT;

	*error = NULL;
	json_validate(line, len, &obj, &errpos, &errmsg);
	if (json_object_get(&obj, "status", &v) == 1 && v.type == JSON_STRING &&
	    v.len == 9 && memcmp(v.p, "\"success\"", 9) == 0)
		return 0;
	if (json_object_get(&obj, "error", &v) == 1 && v.type == JSON_STRING)
		json_string_decode(&v, &text);
	if (text.len)
		*error = sb_detach(&text);
	sb_free(&text);
	return -1;
}
