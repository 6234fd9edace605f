/*
 * recwriter: how the sink's files take records, one interface over its two
 * formats.  A run writes one format (destination.format), so the sink holds
 * one struct recwriter for the run and calls it, never a format's writer:
 *
 *	JSON lines	each record's bytes as the tap printed them, and a
 *			newline, through a zwriter (lib/zwriter.h)
 *	Parquet		rows through a pq_writer (lib/parquet.h), the columns
 *			those of the stream's SCHEMA or its first record,
 *			widened as values need (a file rolled when it holds rows)
 *
 * A stream has at most one open file, a handle only the recwriter knows
 * (struct stream's file, NULL when none).  The sink opens, rolls and closes
 * files (sink_open_file(), sink_close_file(): the open-file slots, the plan);
 * the recwriter says how a file starts, takes records and ends.  Every
 * function that fails has put why into the sink's plan (sink_fail()) or on
 * stderr (the writer's own errors) and returns -1.
 */
#ifndef PIPE_RECWRITER_H
#define PIPE_RECWRITER_H

#include <stddef.h>
#include <stdint.h>

struct bucket_writer;
struct plan_stream;
struct singer_msg;
struct sink;
struct stream;

struct recwriter {
	const char *format;	/* the plan's "format": "jsonl", "parquet" */
	const char *suffix;	/* of its file names, before the compression's */
	/* RECORDs are parsed with their members noted (singer_parse_members()) */
	int members;

	/*
	 * The run's start: what its files share (the compression's file name
	 * extension, s->ext; the format's own, s->rwstate: the compressors'
	 * pool, Parquet's page compressor and its worker).  0 or -1.  finish()
	 * frees it, whether start() succeeded or not.
	 */
	int (*start)(struct sink *s);
	void (*finish)(struct sink *s);

	/*
	 * A new file of st on w (the file owns w from now on, and aborts it on
	 * failure).  NULL on error.
	 */
	void *(*open)(struct sink *s, struct stream *st, struct bucket_writer *w);

	/*
	 * count records of st (their bytes, one per line, the last newline
	 * left out) into its file, opened when it has none and closed once it
	 * reaches max_file_size.  from: the RECORD message the bytes are the
	 * record of, as parsed (with its members noted when members is set),
	 * or NULL (a transform's output, a record that waited).  0 or -1.
	 */
	int (*land)(struct sink *s, struct stream *st, const char *bytes, size_t len,
		    unsigned long long count, const struct singer_msg *from);

	/*
	 * st has a SCHEMA (its compact text), before st->schema takes it:
	 * the files that follow take its columns.  0 or -1.
	 */
	int (*schema)(struct sink *s, struct stream *st, const char *schema);

	/*
	 * Before st's file is closed (sink_close_file()): every record handed
	 * to it lands first (the file may roll meanwhile), and
	 * st->file_records counts its rows.  NULL: nothing to do.  0 or -1.
	 */
	int (*settle)(struct sink *s, struct stream *st);
	/*
	 * The input ended and every file is about to close: the work of
	 * closing them may start.  NULL: nothing to do.  0 or -1.
	 */
	int (*flush)(struct sink *s);
	/*
	 * The run failed: before its files are dropped, the work in flight
	 * ends, and an error it met on an earlier line than the plan's
	 * becomes the plan's.  NULL: nothing to do.
	 */
	void (*abandon)(struct sink *s);

	/* Finish a file: the object's size into *bytes; frees it.  0 or -1. */
	int (*close)(void *file, uint64_t *bytes);
	/* Drop a file (its partial object is removed); frees it. */
	void (*abort)(void *file);

	/*
	 * What the format keeps of a stream (st->rwstate), made when the
	 * input first names it and freed with the stream table.  NULL: nothing.
	 */
	void *(*stream_new)(void);
	void (*stream_free)(void *state);
	/*
	 * The plan's words on st beside its records (lib/plan.h; Parquet: its
	 * columns' types, whether they were inferred, the columns widened
	 * since the last commit unit) into ps, or, ps NULL, only whether it
	 * widened any since then (a checkpoint names such a stream even
	 * without records).  Returns that.  NULL: nothing to say.
	 */
	int (*describe)(const struct stream *st, struct plan_stream *ps);
	/* A commit unit of st was written: what it said starts again.  NULL: nothing to do. */
	void (*unit_done)(struct stream *st);
};

/* The two formats: lib/sink/recwriter_jsonl.c, lib/sink/recwriter_parquet.c. */
extern const struct recwriter recwriter_jsonl, recwriter_parquet;

#endif
