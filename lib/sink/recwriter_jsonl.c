/*
 * recwriter_jsonl: the sink's JSON-lines files (lib/sink/recwriter.h): each
 * record's bytes as the tap printed them, and a newline, through a zwriter.
 * The files share one pool of compressors (-j threads, lib/zwriter.h).
 */
#include "recwriter.h"

#include "sink_impl.h"
#include "zwriter.h"

/* JSON lines: a record's bytes (count records, one per line) into the stream's file. */
static int jsonl_land(struct sink *s, struct stream *st, const char *bytes, size_t len,
		      unsigned long long count, const struct singer_msg *from)
{
	int full;

	(void)from;
	if (st->file == NULL && sink_open_file(s, st) != 0)
		return -1;
	/* The record's bytes and its newline, as the tap printed them. */
	if (zwriter_write(st->file, bytes, len) != 0 ||
	    zwriter_write(st->file, "\n", 1) != 0) {
		sink_fail_said(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		return -1;
	}
	st->records += count;
	st->file_records += count;
	/* Uncompressed, the bytes buffered are part of the file: without them
	 * a file would overshoot its size by a whole chunk. */
	full = s->cfg->compression == COMPRESSION_NONE ?
	       zwriter_in_bytes(st->file) >= s->cfg->max_file_size :
	       zwriter_reached(st->file, s->cfg->max_file_size);
	if (full && sink_close_file(s, st) != 0)
		return -1;
	return 0;
}

static int jsonl_start(struct sink *s)
{
	s->ext = config_compression_ext(s->cfg->compression);
	s->rwstate = zpool_new(s->opt->threads);
	if (s->rwstate == NULL) {
		sink_fail(s, "cannot start the compressors");
		s->reported = 1;
		return -1;
	}
	return 0;
}

static void jsonl_finish(struct sink *s)
{
	zpool_free(s->rwstate);
	s->rwstate = NULL;
}

static void *jsonl_open(struct sink *s, struct stream *st, struct bucket_writer *w)
{
	(void)st;
	return zwriter_open(w, s->cfg->compression, s->cfg->compression_level, s->rwstate);
}

/* A line is a line, whatever the schema. */
static int jsonl_schema(struct sink *s, struct stream *st, const char *schema)
{
	(void)s, (void)st, (void)schema;
	return 0;
}

/* Every file's last chunk is compressed at once, before they close one by one. */
static int jsonl_flush(struct sink *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		struct stream *st = &s->streams[i];

		if (st->file && zwriter_flush(st->file) != 0) {
			sink_fail_said(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
			return -1;
		}
	}
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
	.flush = jsonl_flush,
	.close = jsonl_close,
	.abort = jsonl_abort,
};
