/*
 * sink_impl: what the files of the sink (lib/sink.h) share.  Only they
 * include this header:
 *
 *	sink.c		the dispatch: the input read line by line, each message
 *			type, the commit plan
 *	sink_streams.c	the stream table, and the open files (at most max_open,
 *			the one idle the longest rolled to make room)
 *	sink_spill.c	the records of streams that wait for a file, in memory
 *			and a spill file
 *	sink_part.c	destination.partition_by: a stream's records in the
 *			Hive folders of their own values, a part stream each
 *	sink_progress.c	progress on stderr: a live line on a terminal, else a
 *			line per stream every 10 seconds
 *	recwriter_jsonl.c, recwriter_parquet.c  the two formats of
 *			the files (lib/sink/recwriter.h)
 *
 * One struct sink lives for one sink_run(), one struct stream for each
 * stream the input names.  Functions that fail say why with sink_fail()
 * (or the bucket on stderr, and sink_fail_said() sets s->reported) and
 * return -1.
 */
#ifndef PIPE_SINK_IMPL_H
#define PIPE_SINK_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "json.h"
#include "plan.h"
#include "recwriter.h"
#include "sb.h"
#include "sink.h"

struct singer_msg;

/* Stream names up to this long are compared in the stream itself, not through name. */
#define STREAM_NAME_IN 48

struct stream {
	char *name;		/* decoded, as the tap named it */
	size_t name_len;
	/* its first bytes again, beside name_len: what each lookup reads (sink_streams.c) */
	char name_in[STREAM_NAME_IN];
	char *dir;		/* <path>/<source>/<safe> */
	char *safe;
	void *file;		/* its open file (lib/sink/recwriter.h), or NULL */
	void *rwstate;		/* what its format keeps of it (recwriter's stream_new()), or NULL */
	char *staged;		/* its staged key */
	char *final;		/* its final key */
	unsigned long long file_records;
	unsigned file_index;
	/* its date folder's '_' before "dt=" (layout_date_unders()), chosen at its first file */
	unsigned date_unders;
	int date_chosen;
	unsigned long long records;
	unsigned long long shown;	/* count last shown as progress */
	uint64_t last_used;
	char *schema;
	char *key_properties;
	/*
	 * An upsert stream's (load_method upsert, known once upsert >= 0):
	 * the properties of the schema absent_of, whose absence from a record
	 * pipe-sink notes for pipe-merge (lib/absent.h).
	 */
	int upsert;		/* -1 not known yet, 0, 1 */
	char **absent;
	const char *absent_of;
	int dropped;		/* not selected: its records are dropped */
	unsigned long long failed_in;	/* records a transform dropped */
	char *version;		/* raw JSON "version" of its latest records, or NULL */
	char *activated;	/* raw JSON of the version last activated, or NULL */

	/*
	 * A cold stream: its records wait, in order, for a file of its own
	 * (lib/sink/sink_spill.c): spilled chunks first, then the tail in memory.
	 */
	struct sb cold;
	struct spill_chunk *chunks;
	size_t nchunks, chunks_cap;
	uint64_t waiting;	/* bytes waiting: chunks and tail */
	unsigned long long unit_base;	/* records in the commit units already written */

	/*
	 * destination.partition_by (sink_part.c).  A stream the tap names is
	 * a parent: its records land in its parts, streams of the table
	 * outside the name lookup, one per Hive folder (part), which share
	 * the parent's name, folder and file numbers.  A parent's records
	 * and unit_base count only what an activation dropped; its parts',
	 * added, are the stream's.
	 */
	size_t parent;		/* a part: its parent's index + 1; 0: not a part */
	char *part;		/* a part: its folder, "KEY=VALUE" */
	size_t parts;		/* a parent: its first part's index + 1 (0: none) */
	size_t next_part;	/* a part: the next part of its parent, index + 1 */
	size_t cur_part;	/* a parent: the part of its last record, index + 1 */
	size_t nparts;
	char *part_key;		/* a parent: the folders' KEY, once its first record set it */
	int part_gran;		/* ... and the granularity (enum config_granularity) */
};

struct spill_chunk {
	uint64_t off, len;
};

struct sink {
	struct bucket *b;
	const struct pipe_config *cfg;
	const struct sink_options *opt;
	struct plan *plan;
	char *source;
	char date[16];
	const struct recwriter *rw;	/* the files' format (destination.format) */
	const char *ext;	/* after the format's suffix: the compression's (".zst"; Parquet: "") */
	void *rwstate;		/* what the format keeps of the run (recwriter's start()) */

	struct stream *streams;
	size_t n, cap;
	uint64_t *slots;	/* open addressing (sink_streams.c): index + 1 and a hash tag, 0 empty */
	size_t nslots;
	struct stream *last;	/* the stream of the previous RECORD */
	size_t open;
	uint64_t tick;

	struct sb name;		/* scratch for decoded names */
	uint64_t *pslots;	/* the parts (sink_part.c): index + 1 and a hash tag, 0 empty */
	size_t npslots, nparts;
	struct sb folder;	/* scratch: a record's part folder */
	unsigned long long lineno;
	double next_progress;
	int tty;
	int live;		/* a live progress line is on the terminal */
	int reported;		/* the bucket already printed why it failed */
	unsigned long said_mark;	/* err_said() when the sink started */
	unsigned long long error_line;	/* the input line the plan's error is about */
	char **selected;	/* streams pipe-tap selected (ids and names), or NULL: all */
	size_t nselected;
	struct sb transformed;	/* scratch for a transform's output */
	struct sb marked;	/* scratch for a record of an upsert stream with absent properties */

	int spill_fd;		/* the spill file, unlinked; -1 until needed */
	uint64_t spill_end;	/* its size */
	uint64_t waiting;	/* bytes of records waiting, all streams */

	/* incremental.checkpoint_every: the commit units written (lib/plan.h) */
	unsigned units;
	double unit_started;	/* util_now() when the open unit began */
	uint64_t unit_bytes;	/* bytes of records routed in it */
};

/* 1 when the run writes its plan in commit units (checkpoint_every, a plan_fd). */
int sink_checkpoints(const struct sink *s);

/* The run's error, for the plan: the first one set stays.  printf-like. */
void sink_fail(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * sink_fail() for a failure the bucket has said on stderr (s->reported is
 * set): the cause it said first since the sink started (err_first_cause():
 * the root one, not a failed cleanup's said after it) ends the plan's
 * error, so that the run log keeps it ("...: No space left on device",
 * issue #29).
 */
void sink_fail_said(struct sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- sink_streams.c ---- */

/*
 * The stream a message names (its "stream" span, a validated string),
 * added to the table the first time.  NULL on error.
 */
struct stream *sink_lookup(struct sink *s, const struct json_span *span);

/*
 * A new file for st (its staged and final keys set, in the plan once
 * closed), first rolling the file of the stream idle the longest when
 * max_open are open.  0 or -1.
 */
int sink_open_file(struct sink *s, struct stream *st);

/* Close st's file, if it has one, into the plan's files.  0 or -1. */
int sink_close_file(struct sink *s, struct stream *st);

/* Free the stream table: every stream and what it holds. */
void sink_streams_free(struct sink *s);

/* ---- sink_spill.c ---- */

/*
 * count records of st (see lib/sink/recwriter.h, land) into its file, or, while
 * every slot is taken and st has none, to wait for one (its records that
 * wait land first when a slot is free).  Once the records waiting, all
 * streams, pass spill_max, the stream with the most takes a slot and lands
 * them.  0 or -1.
 */
int sink_spill_route(struct sink *s, struct stream *st, const char *bytes, size_t len,
		     unsigned long long count, const struct singer_msg *from);

/* sink_spill_route(), its common case inline: once per record. */
static inline int sink_route(struct sink *s, struct stream *st, const char *bytes, size_t len,
			     unsigned long long count, const struct singer_msg *from)
{
	if (st->waiting == 0 && (st->file || s->open < s->opt->max_open))
		return s->rw->land(s, st, bytes, len, count, from);
	return sink_spill_route(s, st, bytes, len, count, from);
}

/* A cold stream lands every record waiting, and is cold no more.  0 or -1. */
int sink_drain(struct sink *s, struct stream *st);

/* ---- sink_part.c ---- */

/*
 * The part of parent st that the record bytes[0..len) (from: its message
 * as parsed, or NULL) goes into, made the first time; NULL on error.  The
 * parent's records and unit_base with its parts' (sink_part_sum()).
 */
struct stream *sink_part(struct sink *s, struct stream *st, const char *bytes, size_t len,
			 const struct singer_msg *from);
/*
 * An upsert stream's record (as sink_part() takes it): its folders' KEY
 * resolved at the first, the record itself checked, no part chosen.  0 or -1.
 */
int sink_part_key(struct sink *s, struct stream *st, const char *bytes, size_t len, const struct singer_msg *from);
/* A parent's SCHEMA: its parts take it too.  0 or -1. */
int sink_part_schema(struct sink *s, struct stream *st, const char *schema);
/* Every part of parent st: their records and unit_base added to *records and *base. */
void sink_part_sum(const struct sink *s, const struct stream *st, unsigned long long *records,
		   unsigned long long *base);
void sink_parts_free(struct sink *s);

/* ---- sink_progress.c ---- */

/*
 * With opt->progress, the streams' record counts on stderr: on a terminal
 * (s->tty) the last stream's on one live line, else a line for each stream
 * that moved; final: the live line cleared, a line for every stream not
 * dropped.  Best effort.
 */
void sink_progress(struct sink *s, int final);

/* sink_progress() when its next moment (s->next_progress) has come. */
void sink_maybe_progress(struct sink *s);

#endif
