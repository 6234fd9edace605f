/* test_absent: the properties a record of an upsert stream leaves out (lib/absent.h). */
#include <stdlib.h>
#include <string.h>

#include "absent.h"
#include "taptest.h"
#include "util.h"

static char *mark(const char *rec, char *const *props)
{
	struct sb out = SB_INIT;

	if (!absent_mark(rec, strlen(rec), props, &out)) {
		sb_free(&out);
		return NULL;
	}
	return sb_detach(&out);
}

static char *fill(const char *rec, const char *prev)
{
	struct sb out = SB_INIT;

	if (absent_fill(rec, strlen(rec), prev, prev ? strlen(prev) : 0, &out) != 0) {
		sb_free(&out);
		return NULL;
	}
	return sb_detach(&out);
}

int main(void)
{
	const char *schema = "{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\"},\"big\":{},\"_sdc_deleted_at\":{},\"n\":{},\"t\\u00e9\":{}}}";
	char **props = absent_props(schema, strlen(schema));
	char *s;

	ok(props && props[0] && props[1] && props[2] && props[3] && !props[4], "four properties: _sdc_deleted_at is not one");
	is_str(props[3], "t\xc3\xa9", "a name decoded");
	ok(absent_props("{}", 2) == NULL, "no properties: NULL");

	s = mark("{\"id\":1,\"big\":\"x\",\"n\":null,\"t\\u00e9\":2}", props);
	ok(s == NULL, "a record with every property (one null) is not marked");
	free(s);
	s = mark("{\"id\":1,\"n\":null }", props);
	is_str(s, "{\"id\":1,\"n\":null,\"_dataspoc_absent\":[\"big\",\"t\xc3\xa9\"]}", "two left out: named, a null is not");
	free(s);
	s = mark("{}", props);
	is_str(s, "{\"_dataspoc_absent\":[\"id\",\"big\",\"n\",\"t\xc3\xa9\"]}", "an empty record");
	free(s);
	ok(absent_marked("{\"_dataspoc_absent\":[]}", 23), "marked");
	ok(!absent_marked("{\"id\":1}", 8), "not marked");

	s = fill("{\"id\":1,\"n\":null,\"_dataspoc_absent\":[\"big\"]}", "{\"id\":1,\"big\":\"old big\",\"n\":5}");
	is_str(s, "{\"id\":1,\"n\":null,\"big\":\"old big\"}", "the table's value kept, the null set");
	free(s);
	s = fill("{\"id\":1,\"_dataspoc_absent\":[\"big\"]}", "{\"id\":1,\"n\":5}");
	is_str(s, "{\"id\":1}", "no value before: a null, the member gone");
	free(s);
	s = fill("{\"id\":1,\"_dataspoc_absent\":[\"big\",\"n\"]}", "{\"id\":1,\"n\":4,\"_dataspoc_absent\":[\"big\"]}");
	is_str(s, "{\"id\":1,\"n\":4,\"_dataspoc_absent\":[\"big\"]}", "absent before too: still absent");
	free(s);
	s = fill("{\"id\":1,\"_dataspoc_absent\":[\"big\"]}", NULL);
	is_str(s, "{\"id\":1}", "no version before: the member dropped");
	free(s);
	s = fill("{\"id\":1}", "{\"id\":1,\"big\":2}");
	is_str(s, "{\"id\":1}", "a record without the member is itself");
	free(s);
	ok(fill("[1]", NULL) == NULL, "not an object: -1");
	util_strv_free(props);
	return tap_done();
}
