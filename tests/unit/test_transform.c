/* Unit tests for the jq transform module. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sb.h"
#include "transform.h"
#include "taptest.h"

static char dir[] = "/tmp/test_transform.XXXXXX";

static char *write_prog(const char *name, const char *text)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);
	FILE *f;

	sprintf(path, "%s/%s", dir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

static int run(struct transform *t, const char *stream, const char *rec, struct sb *out,
	       unsigned long long *n, struct sb *err)
{
	sb_reset(out);
	sb_reset(err);
	return transform_apply(t, stream, rec, strlen(rec), out, n, err);
}

int main(void)
{
	struct transform *t = NULL;
	struct sb out = SB_INIT, err = SB_INIT;
	unsigned long long n;
	char *p;
	int r, saved, devnull;

	if (mkdtemp(dir) == NULL)
		return 1;
	p = write_prog("missing.jq", "");
	unlink(p);
	is_int(transform_load(p, &t), 1, "a missing transform is not an error");
	ok(t == NULL, "and gives no transform");
	free(p);

	p = write_prog("bad.jq", ".a | ");
	saved = dup(2);
	devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 2);
	r = transform_load(p, &t);
	dup2(saved, 2);
	close(saved);
	close(devnull);
	is_int(r, -1, "a compile error is reported at load");
	free(p);

	p = write_prog("t.jq", "if .drop then empty elif .twice then ., . else {id, s: $stream} end\n");
	is_int(transform_load(p, &t), 0, "a good program loads");
	free(p);
	r = run(t, "orders", "{\"id\": 1, \"x\": \"secret\"}", &out, &n, &err);
	is_int(r, 0, "reshape");
	is_str(out.buf, "{\"id\":1,\"s\":\"orders\"}\n", "$stream bound, field dropped");
	is_int(n, 1, "one output");
	r = run(t, "customers", "{\"id\": 2}", &out, &n, &err);
	is_str(out.buf, "{\"id\":2,\"s\":\"customers\"}\n", "$stream differs per stream");
	r = run(t, "orders", "{\"drop\": true}", &out, &n, &err);
	is_int(r, 0, "empty is fine");
	is_int(n, 0, "empty drops the record");
	ok(out.len == 0, "nothing written");
	r = run(t, "orders", "{\"twice\": 1}", &out, &n, &err);
	is_int(n, 2, "two outputs");
	is_str(out.buf, "{\"twice\":1}\n{\"twice\":1}\n", "both written");
	transform_free(t);

	p = write_prog("err.jq", ".a + 1\n");
	is_int(transform_load(p, &t), 0, "loads");
	free(p);
	r = run(t, "s", "{\"a\": \"text\"}", &out, &n, &err);
	is_int(r, -1, "a runtime error fails");
	ok(strstr(err.buf, "cannot be added") != NULL, "jq's message: %s", err.buf);
	transform_free(t);

	p = write_prog("halt.jq", "if .bad then \"no\" | halt_error(5) else . end\n");
	is_int(transform_load(p, &t), 0, "loads");
	free(p);
	r = run(t, "s", "{\"bad\": true}", &out, &n, &err);
	is_int(r, -1, "halt_error fails the record");
	r = run(t, "s", "{\"bad\": false}", &out, &n, &err);
	is_int(r, 0, "and a good record passes after it");
	is_str(out.buf, "{\"bad\":false}\n", "unchanged");
	transform_free(t);

	sb_free(&out);
	sb_free(&err);
	p = malloc(strlen(dir) + 16);
	sprintf(p, "rm -rf '%s'", dir);
	if (system(p) != 0)
		return 1;
	free(p);
	return tap_done();
}
