/* Unit tests for catalog_select(): selection and metadata, byte for byte. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>

#include "catalog.h"

#include "taptest.h"

static const char two_streams[] =
	"{\"streams\": [\n"
	" {\"tap_stream_id\": \"db-public-a\", \"stream\": \"a\",\n"
	"  \"schema\": {\"type\": \"object\", \"properties\": {\"id\": {\"type\": \"integer\", \"maximum\": 9223372036854775807}}},\n"
	"  \"metadata\": [{\"breadcrumb\": [], \"metadata\": {\"selected\": false, \"x\": 1}},\n"
	"               {\"breadcrumb\": [\"properties\", \"id\"], \"metadata\": {\"inclusion\": \"automatic\"}}]},\n"
	" {\"tap_stream_id\": \"db-public-b\", \"stream\": \"b\", \"schema\": {\"selected\": true}, \"metadata\": []}\n"
	"], \"extra\": 12345678901234567891}";

/* Silence err_msg() for the error cases, keeping stdout for TAP. */
static int quiet(void)
{
	int saved = dup(2), devnull = open("/dev/null", O_WRONLY);

	dup2(devnull, 2);
	close(devnull);
	return saved;
}

static void loud(int saved)
{
	dup2(saved, 2);
	close(saved);
}

int main(void)
{
	struct sb out = SB_INIT, sel = SB_INIT;
	char *pick_a[] = { (char *)(uintptr_t)"db-public-a", NULL };
	char *pick_b_by_name[] = { (char *)(uintptr_t)"b", NULL };
	char *pick_missing[] = { (char *)(uintptr_t)"nope", NULL };
	int r, fd;

	r = catalog_select(two_streams, strlen(two_streams), "t", pick_a, NULL, &out, &sel);
	is_int(r, 0, "select by tap_stream_id");
	is_str(out.buf,
	       "{\"streams\":[{\"tap_stream_id\":\"db-public-a\",\"stream\":\"a\","
	       "\"schema\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"integer\",\"maximum\":9223372036854775807}},\"selected\":true},"
	       "\"metadata\":[{\"breadcrumb\":[],\"metadata\":{\"x\":1,\"selected\":true}},"
	       "{\"breadcrumb\":[\"properties\",\"id\"],\"metadata\":{\"inclusion\":\"automatic\"}}]},"
	       "{\"tap_stream_id\":\"db-public-b\",\"stream\":\"b\",\"schema\":{\"selected\":false},"
	       "\"metadata\":[{\"breadcrumb\":[],\"metadata\":{\"selected\":false}}]}],"
	       "\"extra\":12345678901234567891}\n",
	       "chosen stream selected, the other deselected, numbers kept, missing entry added");
	is_str(sel.buf, "[\"db-public-a\",\"a\"]", "selected names and ids");

	sb_reset(&out);
	sb_reset(&sel);
	r = catalog_select(two_streams, strlen(two_streams), "t", pick_b_by_name,
			   "{\"db-public-*\": {\"replication-method\": \"INCREMENTAL\", \"x\": 2},"
			   " \"b\": {\"replication-method\": \"FULL_TABLE\"}}", &out, &sel);
	is_int(r, 0, "select by stream name, with metadata");
	ok(strstr(out.buf, "{\"breadcrumb\":[],\"metadata\":{\"selected\":false,\"replication-method\":\"INCREMENTAL\",\"x\":2}}") != NULL,
	   "glob metadata applied to a, replacing x");
	ok(strstr(out.buf, "\"metadata\":[{\"breadcrumb\":[],\"metadata\":{\"selected\":true,\"replication-method\":\"FULL_TABLE\",\"x\":2}}]") != NULL,
	   "a later exact pattern wins over the glob for b");
	is_str(sel.buf, "[\"db-public-b\",\"b\"]", "only b selected");

	sb_reset(&out);
	r = catalog_select(two_streams, strlen(two_streams), "t", NULL,
			   "{\"a\": {\"selected\": true}}", &out, NULL);
	is_int(r, 0, "metadata alone");
	ok(strstr(out.buf, "\"schema\":{\"selected\":true}") != NULL, "no streams: b's schema left as it was");
	ok(strstr(out.buf, "{\"breadcrumb\":[],\"metadata\":{\"x\":1,\"selected\":true}}") != NULL,
	   "metadata can select a stream");

	sb_reset(&out);
	fd = quiet();
	r = catalog_select(two_streams, strlen(two_streams), "t", pick_missing, NULL, &out, NULL);
	loud(fd);
	is_int(r, -1, "a stream the tap does not offer is an error");

	sb_reset(&out);
	fd = quiet();
	r = catalog_select("{\"streams\": 3}", 14, "t", NULL, NULL, &out, NULL);
	loud(fd);
	is_int(r, -1, "not a catalog");
	fd = quiet();
	r = catalog_select("{\"streams\": [}", 14, "t", NULL, NULL, &out, NULL);
	loud(fd);
	is_int(r, -1, "invalid JSON");

	sb_free(&out);
	sb_free(&sel);
	return tap_done();
}
