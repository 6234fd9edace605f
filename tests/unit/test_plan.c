/* Unit tests of the commit plan: its units (checkpoints) and their slices. */
#include "plan.h"
#include "sb.h"
#include "taptest.h"

#include <stdlib.h>
#include <string.h>

#define RUN "{\"type\":\"run\",\"pipeline\":\"p\",\"run_id\":\"20261201T000000Z-000abcdef\"," \
	"\"started_at\":\"2026-12-01T00:00:00Z\",\"source\":\"s\",\"format\":\"jsonl\"," \
	"\"compression\":\"zstd\",\"incremental\":true,\"replace\":false,\"full\":false}\n"
#define FILE_(n, u) "{\"type\":\"file\",\"stream\":\"a\",\"staged\":\"st/" #n "\",\"final\":\"f/" #n \
	"\",\"records\":" #u ",\"bytes\":10}\n"

/* Three units: two checkpoints, then the run's end. */
static const char three[] =
	RUN
	FILE_(1, 2)
	"{\"type\":\"stream\",\"stream\":\"a\",\"dir\":\"raw/s/a\",\"records\":2,\"schema\":{\"x\":1},"
	"\"key_properties\":null,\"widened\":[{\"column\":\"c\"}]}\n"
	"{\"type\":\"state\",\"value\":{\"n\":2}}\n"
	"{\"type\":\"checkpoint\",\"unit\":1,\"records\":2}\n"
	FILE_(2, 3)
	"{\"type\":\"stream\",\"stream\":\"a\",\"dir\":\"raw/s/a\",\"records\":3,\"schema\":{\"x\":2},"
	"\"key_properties\":null,\"widened\":[{\"column\":\"d\"}]}\n"
	"{\"type\":\"stream\",\"stream\":\"b\",\"dir\":\"raw/s/b\",\"records\":1,\"schema\":null,"
	"\"key_properties\":null}\n"
	"{\"type\":\"state\",\"value\":{\"n\":5}}\n"
	"{\"type\":\"checkpoint\",\"unit\":2,\"records\":4}\n"
	FILE_(3, 1)
	"{\"type\":\"stream\",\"stream\":\"a\",\"dir\":\"raw/s/a\",\"records\":1,\"schema\":null,"
	"\"key_properties\":null,\"activated\":7}\n"
	"{\"type\":\"end\",\"status\":\"success\",\"records\":7}\n";

static void test_units(void)
{
	struct plan all, s;
	struct sb out = SB_INIT;

	ok(plan_parse(three, strlen(three), "t", &all) == 0, "a plan of three units parses");
	is_int(all.nunits, 2, "two checkpoint lines");
	is_int(all.files[0].unit, 1, "file 1 in unit 1");
	is_int(all.files[2].unit, 3, "file 3 in unit 3");
	is_str(all.ustates[1], "{\"n\":5}", "unit 2's state");
	ok(all.ustates[2] == NULL, "unit 3 has none");

	plan_slice(&all, 0, 2, &s);
	is_int(s.nfiles, 2, "units 1-2: two files");
	is_int(s.nstreams, 2, "two streams");
	is_int(s.streams[0].records, 5, "a's records added");
	is_str(s.streams[0].schema, "{\"x\":2}", "the latest schema");
	is_str(s.streams[0].widened, "[{\"column\":\"c\"},{\"column\":\"d\"}]", "widenings joined");
	is_str(s.state, "{\"n\":5}", "the last state");
	ok(s.checkpoint && s.unit == 2 && s.records == 6, "a checkpoint, unit 2, 6 records");
	plan_format(&s, &out);
	ok(strstr(out.buf, "{\"type\":\"end\",\"status\":\"checkpoint\",\"records\":6,\"unit\":2}\n") != NULL,
	   "its end line says so");
	plan_free(&s);
	{
		/* a pending checkpoint reads back as one */
		struct plan back;

		ok(plan_parse(out.buf, out.len, "t", &back) == 0, "the slice parses");
		ok(back.ended && back.success && back.checkpoint && back.unit == 2, "as a checkpoint of unit 2");
		is_int(back.nunits, 0, "of no units of its own");
		plan_free(&back);
	}

	plan_slice(&all, 2, 3, &s);
	is_int(s.nfiles, 1, "the last unit: its file");
	is_str(s.files[0].final, "f/3", "file 3");
	ok(!s.checkpoint && s.unit == 3, "the run's end, unit 3");
	ok(s.state == NULL, "no state after the last checkpoint: the saved one stays");
	is_str(s.streams[0].activated, "7", "the activation is the end's");
	plan_free(&s);

	plan_slice(&all, 0, 3, &s);
	is_int(s.records, 7, "the whole run: 7 records");
	is_str(s.state, "{\"n\":5}", "its last state");
	ok(s.streams[0].schema && strcmp(s.streams[0].schema, "{\"x\":2}") == 0,
	   "a unit without a schema keeps the one before");
	plan_free(&s);
	plan_free(&all);
	sb_free(&out);
}

static void test_plain(void)
{
	static const char plain[] = RUN FILE_(1, 2) "{\"type\":\"state\",\"value\":{\"n\":2}}\n"
		"{\"type\":\"end\",\"status\":\"success\",\"records\":2}\n";
	struct plan p, s;
	struct sb out = SB_INIT;

	ok(plan_parse(plain, strlen(plain), "t", &p) == 0, "a plan without checkpoints");
	is_int(p.nunits, 0, "no units");
	plan_slice(&p, 0, 1, &s);
	ok(s.unit == 0 && !s.checkpoint, "its slice is the whole run, unit 0");
	plan_format(&s, &out);
	ok(strstr(out.buf, "\"unit\"") == NULL, "and its lines name no unit");
	is_str(s.state, "{\"n\":2}", "its state");
	plan_free(&s);
	plan_free(&p);
	sb_free(&out);
}

/* pipe-merge's lines: a stream's load_method and table_rows, replace lines (issue #27). */
static void test_merge_lines(void)
{
	static const char merged[] = RUN FILE_(1, 2)
		"{\"type\":\"stream\",\"stream\":\"a\",\"dir\":\"raw/s/a\",\"records\":2,\"schema\":null,"
		"\"key_properties\":[\"id\"],\"load_method\":\"upsert\",\"table_rows\":0}\n"
		"{\"type\":\"stream\",\"stream\":\"b\",\"dir\":\"raw/s/b\",\"records\":1,\"schema\":null,"
		"\"key_properties\":null,\"load_method\":\"append-only\"}\n"
		"{\"type\":\"replace\",\"stream\":\"a\",\"key\":\"raw/s/a/dt=2026-12-01/a_R_h0001.parquet\",\"rows\":5}\n"
		"{\"type\":\"end\",\"status\":\"success\",\"records\":3}\n";
	struct plan p, s;
	struct sb out = SB_INIT;

	ok(plan_parse(merged, strlen(merged), "t", &p) == 0, "a merged plan parses");
	ok(p.nreplaced == 1 && strcmp(p.replaced[0].key, "raw/s/a/dt=2026-12-01/a_R_h0001.parquet") == 0 &&
	   p.replaced[0].rows == 5, "its replace line");
	ok(p.streams[0].has_table_rows && p.streams[0].table_rows == 0 && !p.streams[1].has_table_rows,
	   "table_rows 0 is a count; absent is none");
	is_str(p.streams[1].load_method, "append-only", "a stream's load_method");
	plan_format(&p, &out);
	is_str(out.buf, merged, "formatted as it came");
	plan_slice(&p, 0, 1, &s);
	ok(s.nreplaced == 1 && s.streams[0].has_table_rows && strcmp(s.streams[0].load_method, "upsert") == 0,
	   "a slice keeps them");
	plan_free(&s);
	plan_free(&p);
	sb_free(&out);
	{
		static const char nokey[] = RUN "{\"type\":\"replace\",\"stream\":\"a\"}\n";

		ok(plan_parse(nokey, strlen(nokey), "t", &p) != 0, "a replace line without its key is refused");
	}
}

static void test_tail(void)
{
	/* what pipe-commit -k keeps: the run line and the units after those published */
	static const char tail[] = RUN FILE_(5, 2) "{\"type\":\"state\",\"value\":{\"n\":9}}\n"
		"{\"type\":\"checkpoint\",\"unit\":4,\"records\":2}\n"
		FILE_(6, 1) "{\"type\":\"checkpoint\",\"unit\":5,\"records\":1}\n";
	struct plan p, s;

	ok(plan_parse(tail, strlen(tail), "t", &p) == 0, "a plan's tail parses");
	ok(p.unit_base == 3 && p.nunits == 2, "units 4 and 5, after 3");
	plan_slice(&p, 0, p.nunits, &s);
	ok(s.unit == 5 && s.checkpoint && s.nfiles == 2, "its slice is unit 5, a checkpoint, of both files");
	is_str(s.state, "{\"n\":9}", "the state of unit 4");
	plan_free(&s);
	plan_free(&p);
}

static void test_bad(void)
{
	static const char skip[] = RUN "{\"type\":\"checkpoint\",\"unit\":1,\"records\":0}\n"
		"{\"type\":\"checkpoint\",\"unit\":3,\"records\":0}\n";
	static const char norun[] = "{\"type\":\"checkpoint\",\"unit\":1,\"records\":0}\n";
	static const char zero[] = RUN "{\"type\":\"checkpoint\",\"unit\":0,\"records\":0}\n";
	struct plan p;

	ok(plan_parse(skip, strlen(skip), "t", &p) != 0, "a checkpoint out of order is refused");
	ok(plan_parse(norun, strlen(norun), "t", &p) != 0, "a checkpoint before the run line is refused");
	ok(plan_parse(zero, strlen(zero), "t", &p) != 0, "a unit 0 is refused");
}

int main(void)
{
	test_units();
	test_plain();
	test_merge_lines();
	test_tail();
	test_bad();
	return tap_done();
}
