/*
 * recwriter_jsonl: the sink's JSON-lines files (lib/recwriter.h): each
 * record's bytes as the tap printed them, and a newline, through a zwriter.
 */
#include "recwriter.h"

#include "sink_impl.h"
#include "zwriter.h"

/* JSON lines: a record's bytes (count records, one per line) into the stream's file. */
static int jsonl_land(struct sink *s, struct stream *st, const char *bytes, size_t len,
		      unsigned long long count, const struct singer_msg *from)
{
	uint64_t size;

	(void)from;
	if (st->file == NULL && sink_open_file(s, st) != 0)
		return -1;
	/* The record's bytes and its newline, as the tap printed them. */
	if (zwriter_write(st->file, bytes, len) != 0 ||
	    zwriter_write(st->file, "\n", 1) != 0) {
		sink_fail(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		s->reported = 1;
		return -1;
	}
	st->records += count;
	st->file_records += count;
	/* Uncompressed, the writer's buffer is part of the file: without it a
	 * file would overshoot its size by a whole buffer. */
	size = s->cfg->compression == COMPRESSION_NONE ? zwriter_in_bytes(st->file) :
	       zwriter_out_bytes(st->file);
	if (size >= s->cfg->max_file_size && sink_close_file(s, st) != 0)
		return -1;
	return 0;
}

static int jsonl_start(struct sink *s)
{
	s->ext = config_compression_ext(s->cfg->compression);
	return 0;
}

static void jsonl_finish(struct sink *s)
{
	(void)s;
}

static void *jsonl_open(struct sink *s, struct stream *st, struct bucket_writer *w)
{
	(void)st;
	return zwriter_open(w, s->cfg->compression, s->cfg->compression_level, s->opt->threads);
}

/* A line is a line, whatever the schema. */
static int jsonl_schema(struct sink *s, struct stream *st, const char *schema)
{
	(void)s, (void)st, (void)schema;
	return 0;
}

static int jsonl_close(void *file, uint64_t *bytes)
{
	return zwriter_close_size(file, bytes);
}

static void jsonl_abort(void *file)
{
	zwriter_abort(file);
}

const struct recwriter recwriter_jsonl = {
	.format = "jsonl",
	.suffix = ".jsonl",
	.members = 0,
	.start = jsonl_start,
	.finish = jsonl_finish,
	.open = jsonl_open,
	.land = jsonl_land,
	.schema = jsonl_schema,
	.close = jsonl_close,
	.abort = jsonl_abort,
};
