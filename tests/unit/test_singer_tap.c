/* Unit tests of what the built-in taps share: the catalog's selection, config strings, jvx. */
#include "err.h"
#include "jvx.h"
#include "singer_tap.h"
#include "taptest.h"

#include <stdlib.h>
#include <string.h>

static void test_selection(void)
{
	jv s = jv_parse("{\"tap_stream_id\":\"db-public-t\",\"stream\":\"t\","
		     "\"schema\":{\"type\":\"object\"},\"metadata\":["
		     "{\"breadcrumb\":[],\"metadata\":{\"selected\":true}},"
		     "{\"breadcrumb\":[\"properties\",\"ssn\"],\"metadata\":{\"selected\":false}},"
		     "{\"breadcrumb\":[\"properties\",\"id\"],\"metadata\":{\"selected\":true}},"
		     "{\"breadcrumb\":[\"other\",\"x\"],\"metadata\":{\"selected\":false}},"
		     "{\"breadcrumb\":[\"properties\",\"pw\"],\"metadata\":{\"selected\":false}}]}");
	jv id = singer_tap_stream_id(s);
	char **drop = NULL;
	size_t ndrop = 0;
	int sel = 1;

	is_str(jv_is_valid(id) ? jv_string_value(id) : NULL, "db-public-t", "the id is tap_stream_id");
	jv_free(id);
	is_int(singer_tap_stream_selection("catalog", "c.json", "t", s, &sel, &drop, &ndrop), 0,
	       "a well-formed stream reads");
	is_int(sel, 1, "selected stays");
	is_int(ndrop, 2, "two deselected properties (not the breadcrumb of another kind)");
	if (ndrop == 2) {
		is_str(drop[0], "ssn", "the first in order");
		is_str(drop[1], "pw", "the second");
	}
	singer_tap_free_list(drop, ndrop);
	jv_free(s);

	s = jv_parse("{\"stream\":\"t\",\"metadata\":[{\"breadcrumb\":[],\"metadata\":{\"selected\":false}}]}");
	id = singer_tap_stream_id(s);
	is_str(jv_is_valid(id) ? jv_string_value(id) : NULL, "t", "no tap_stream_id: the stream's name");
	jv_free(id);
	sel = 1, drop = NULL, ndrop = 0;
	is_int(singer_tap_stream_selection("catalog", "c.json", "t", s, &sel, &drop, &ndrop), 0,
	       "breadcrumb [] reads");
	is_int(sel, 0, "breadcrumb [] with selected false deselects the stream");
	jv_free(s);

	s = jv_parse("{\"stream\":\"t\",\"schema\":{\"selected\":false}}");
	sel = 1;
	is_int(singer_tap_stream_selection("catalog", "c.json", "t", s, &sel, &drop, &ndrop), 0,
	       "no metadata reads");
	is_int(sel, 0, "the legacy schema.selected false deselects");
	jv_free(s);

	s = jv_parse("{\"stream\":7}");
	id = singer_tap_stream_id(s);
	ok(!jv_is_valid(id), "an id that is not a string is no id");
	jv_free(id);
	jv_free(s);

	s = jv_parse("{\"stream\":\"t\",\"metadata\":[{\"breadcrumb\":[]},3]}");
	sel = 1;
	is_int(singer_tap_stream_selection("catalog", "c.json", "t", s, &sel, &drop, &ndrop), 2,
	       "metadata that is not an object is a config error");
	jv_free(s);
	s = jv_parse("{\"stream\":\"t\",\"metadata\":[{\"metadata\":{}}]}");
	is_int(singer_tap_stream_selection("catalog", "c.json", "t", s, &sel, &drop, &ndrop), 2,
	       "metadata without a breadcrumb is a config error");
	jv_free(s);
	s = jv_parse("{\"stream\":\"t\",\"metadata\":{}}");
	is_int(singer_tap_stream_selection("catalog", "c.json", "t", s, &sel, &drop, &ndrop), 2,
	       "metadata that is not an array is a config error");
	jv_free(s);
}

static void test_config_string(void)
{
	jv c = jv_parse("{\"a\":\"x\",\"e\":\"\",\"n\":12,\"f\":1.5,\"z\":null,\"nul\":\"a\\u0000b\"}");
	char *s;

	is_int(singer_tap_config_string(c, "a", 0, &s), 0, "a string");
	is_str(s, "x", "its text");
	free(s);
	is_int(singer_tap_config_string(c, "missing", 0, &s), 0, "absent");
	ok(s == NULL, "absent is NULL");
	is_int(singer_tap_config_string(c, "z", 0, &s), 0, "null is absent");
	ok(s == NULL, "null is NULL");
	is_int(singer_tap_config_string(c, "e", 0, &s), -1, "an empty string is refused");
	is_int(singer_tap_config_string(c, "nul", 0, &s), -1, "a string holding a NUL is refused");
	is_int(singer_tap_config_string(c, "n", 0, &s), -1, "a number where a string is wanted");
	is_int(singer_tap_config_string(c, "n", 1, &s), 0, "a whole number where one may be");
	is_str(s, "12", "printed in decimal");
	free(s);
	is_int(singer_tap_config_string(c, "f", 1, &s), -1, "a fraction is refused");
	jv_free(c);
}

static void test_jvx(void)
{
	jv o = jv_parse("{\"n\":3,\"s\":\"v\",\"z\":null}"), a = jv_parse("[1]"), v;
	char *s;

	is_int((long long)jvx_number(o, "n", -1), 3, "a number member");
	is_int((long long)jvx_number(o, "s", -1), -1, "a string is not a number: the default");
	is_int((long long)jvx_number(a, "n", -1), -1, "an array has no members: the default");
	s = jvx_string(o, "s");
	is_str(s, "v", "a string member");
	free(s);
	ok(jvx_string(o, "n") == NULL, "a number is no string");
	v = jvx_get(o, "z");
	ok(jvx_absent(v), "null counts as absent");
	jv_free(v);
	v = jvx_get(a, "n");
	ok(!jv_is_valid(v), "a member of a non-object is invalid, not an assertion");
	jv_free(v);
	jv_free(o);
	jv_free(a);
}

int main(void)
{
	err_init("test_singer_tap");
	test_selection();
	test_config_string();
	test_jvx();
	return tap_done();
}
