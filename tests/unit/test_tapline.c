/* Unit tests of pipe-tap's in-band lines: written, then read back. */
#include "json.h"
#include "sb.h"
#include "tapline.h"
#include "taptest.h"

#include <stdlib.h>
#include <string.h>

/* The "type" string span of a line. */
static struct json_span type_of(const char *line)
{
	struct json_span obj, type = { NULL, 0, JSON_NONE };
	size_t errpos;
	const char *errmsg;

	if (json_validate(line, strlen(line), &obj, &errpos, &errmsg) == 0)
		json_object_get(&obj, "type", &type);
	return type;
}

static void test_end(void)
{
	struct sb line = SB_INIT;
	struct json_span type;
	char *error = NULL;

	tapline_end(&line, 0, NULL);
	is_str(line.buf, "{\"type\":\"DATASPOC_TAP_END\",\"status\":\"success\",\"exit_status\":0}\n",
	       "end line of a success");
	type = type_of(line.buf);
	ok(tapline_is_end(&type), "it is an end line");
	ok(!tapline_is_selected(&type), "not a selected line");
	is_int(tapline_parse_end(line.buf, line.len, &error), 0, "it says success");
	ok(error == NULL, "no error");

	sb_reset(&line);
	tapline_end(&line, 143, "tap-x was killed by signal 15 (\"Terminated\")");
	is_str(line.buf, "{\"type\":\"DATASPOC_TAP_END\",\"status\":\"failure\",\"exit_status\":143,"
	       "\"error\":\"tap-x was killed by signal 15 (\\\"Terminated\\\")\"}\n", "end line of a failure");
	is_int(tapline_parse_end(line.buf, line.len, &error), -1, "it says failure");
	is_str(error, "tap-x was killed by signal 15 (\"Terminated\")", "its error, decoded");
	free(error);
	error = NULL;

	sb_reset(&line);
	sb_adds(&line, "{\"type\":\"DATASPOC_TAP_END\",\"status\":\"failure\",\"error\":\"\"}");
	is_int(tapline_parse_end(line.buf, line.len, &error), -1, "a failure with an empty error");
	ok(error == NULL, "has no error text");

	type = type_of("{\"type\":\"\\u0044ATASPOC_TAP_END\"}");
	ok(!tapline_is_end(&type), "the end line's type is matched byte for byte");
	type = type_of("{\"type\":\"dataspoc_tap_end\"}");
	ok(!tapline_is_end(&type), "and with its case");
	sb_free(&line);
}

static void test_selected(void)
{
	struct sb line = SB_INIT;
	struct json_span type;
	char **names = NULL;
	size_t n = 9, i;

	tapline_selected(&line, "[\"customers\",\"appdb-public-customers\"]");
	is_str(line.buf, "{\"type\":\"DATASPOC_TAP_SELECTED\",\"streams\":[\"customers\",\"appdb-public-customers\"]}\n",
	       "selected line");
	type = type_of(line.buf);
	ok(tapline_is_selected(&type), "it is a selected line");
	ok(!tapline_is_end(&type), "not an end line");
	is_int(tapline_parse_selected(line.buf, line.len, &names, &n), 0, "read back");
	is_int(n, 2, "two names");
	if (n == 2) {
		is_str(names[0], "customers", "the first");
		is_str(names[1], "appdb-public-customers", "the second");
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);

	names = NULL;
	sb_reset(&line);
	sb_adds(&line, "{\"type\":\"DATASPOC_TAP_SELECTED\",\"streams\":[]}");
	is_int(tapline_parse_selected(line.buf, line.len, &names, &n), 0, "an empty list");
	is_int(n, 0, "no names");
	ok(names != NULL, "but a list");
	free(names);

	names = NULL;
	sb_reset(&line);
	sb_adds(&line, "{\"type\":\"DATASPOC_TAP_SELECTED\",\"streams\":[1,\"a\",null]}");
	is_int(tapline_parse_selected(line.buf, line.len, &names, &n), 0, "names among other values");
	is_int(n, 1, "only the strings");
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);

	names = NULL;
	sb_reset(&line);
	sb_adds(&line, "{\"type\":\"DATASPOC_TAP_SELECTED\"}");
	is_int(tapline_parse_selected(line.buf, line.len, &names, &n), -1, "no streams array");
	ok(names == NULL, "nothing made");

	type = type_of("{\"type\":\"\\u0044ATASPOC_TAP_SELECTED\"}");
	ok(tapline_is_selected(&type), "the selected line's type is matched decoded");
	type = type_of("{\"type\":\"dataspoc_tap_selected\"}");
	ok(!tapline_is_selected(&type), "with its case");
	sb_free(&line);
}

int main(void)
{
	test_end();
	test_selected();
	return tap_done();
}
