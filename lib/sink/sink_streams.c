/* sink_streams: the sink's table of streams, and their open files. */
#include "sink_impl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "layout.h"
#include "recwriter.h"
#include "util.h"

/*
 * The stream table: open addressing, a slot holding a stream's index + 1
 * in its low half and the top half of its name's hash above, so that a
 * probe reads no other stream than the one it finds, and that one's name
 * only when the hashes agree.  Every record looks its stream up; with many
 * streams, the stream structs and names read are cache misses.
 */
static inline uint64_t slot_of(uint64_t h, size_t i)
{
	return (h & 0xffffffff00000000ULL) | (uint64_t)(i + 1);
}

static void slot_put(uint64_t *slots, size_t nslots, uint64_t h, size_t i)
{
	size_t j = (size_t)h & (nslots - 1);

	while (slots[j])
		j = (j + 1) & (nslots - 1);
	slots[j] = slot_of(h, i);
}

static void grow_slots(struct sink *s)
{
	size_t i, nslots = s->nslots ? s->nslots * 2 : 64;
	uint64_t *slots = xcalloc(nslots, sizeof(*slots));

	for (i = 0; i < s->n; i++) {
		/* a stream's parts (sink_part.c) are not found by name */
		if (s->streams[i].parent == 0)
			slot_put(slots, nslots, util_hash_bytes(s->streams[i].name, s->streams[i].name_len), i);
	}
	free(s->slots);
	s->slots = slots;
	s->nslots = nslots;
}

/* The bytes of st's name, in the stream itself when they fit (no other line to miss). */
static inline const char *stream_name(const struct stream *st)
{
	return st->name_len <= STREAM_NAME_IN ? st->name_in : st->name;
}

/* a[0..n) and b[0..n) are the same bytes: stream names are short, compared without a call. */
static inline int same_name(const char *a, const char *b, size_t n)
{
	uint64_t x, y, d = 0;

	if (n < 8)
		return memcmp(a, b, n) == 0;
	for (; n > 8; a += 8, b += 8, n -= 8) {
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		d |= x ^ y;
	}
	memcpy(&x, a + n - 8, 8);
	memcpy(&y, b + n - 8, 8);
	return (d | (x ^ y)) == 0;
}

static struct stream *find(struct sink *s, const char *name, size_t len)
{
	uint64_t h, tag, v;
	size_t j;

	if (s->nslots == 0)
		return NULL;
	h = util_hash_bytes(name, len);
	tag = h & 0xffffffff00000000ULL;
	for (j = (size_t)h & (s->nslots - 1); (v = s->slots[j]) != 0; j = (j + 1) & (s->nslots - 1)) {
		struct stream *st;

		if ((v & 0xffffffff00000000ULL) != tag)
			continue;
		st = &s->streams[(uint32_t)v - 1];
		if (st->name_len == len && same_name(stream_name(st), name, len))
			return st;
	}
	return NULL;
}

static struct stream *add_stream(struct sink *s, const char *name, size_t len)
{
	struct stream *st;
	struct sb why = SB_INIT;
	char *safe = layout_stream_folder(name, len, &why);
	size_t i;

	int dropped = 0;

	if (s->selected) {
		dropped = 1;
		for (i = 0; i < s->nselected; i++) {
			if (strlen(s->selected[i]) == len && memcmp(s->selected[i], name, len) == 0)
				dropped = 0;
		}
	}
	if (safe == NULL && !dropped) {
		sink_fail(s, "<stdin>:%llu: stream name cannot be used: %s", s->lineno, why.buf);
		sb_free(&why);
		return NULL;
	}
	sb_free(&why);
	for (i = 0; i < s->n && !dropped; i++) {
		/* Orders/ and orders/ are one folder in a copy of the bucket on
		 * a Mac or Windows, and one table to case-blind catalogs. */
		if (!s->streams[i].dropped && strcasecmp(s->streams[i].safe, safe) == 0) {
			sink_fail(s, "<stdin>:%llu: streams '%s' and '%.*s' would share the folder '%s'%s",
				  s->lineno, s->streams[i].name, (int)len, name, safe,
				  strcmp(s->streams[i].safe, safe) ? " where case is ignored" : "");
			free(safe);
			return NULL;
		}
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->streams = xrealloc(s->streams, s->cap * sizeof(*s->streams));
		s->last = NULL;
	}
	st = &s->streams[s->n++];
	memset(st, 0, sizeof(*st));
	st->upsert = -1;
	st->name = xstrndup(name, len);
	st->name_len = len;
	if (len <= STREAM_NAME_IN)
		memcpy(st->name_in, name, len);
	st->safe = safe;
	st->dropped = dropped;
	st->file_index = s->opt->file_base;
	if (s->rw->stream_new)
		st->rwstate = s->rw->stream_new();
	if (dropped)
		st->dir = NULL;
	else if (s->cfg->path && *s->cfg->path)
		st->dir = xasprintf("%s/%s/%s", s->cfg->path, s->source, safe);
	else
		st->dir = xasprintf("%s/%s", s->source, safe);
	if ((s->n - s->nparts) * 2 > s->nslots)
		grow_slots(s);
	else
		slot_put(s->slots, s->nslots, util_hash_bytes(name, len), s->n - 1);
	return st;
}

/* The stream a message names; its "stream" span is a validated string. */
struct stream *sink_lookup(struct sink *s, const struct json_span *span)
{
	const char *p = span->p + 1;
	size_t len = span->len - 2;
	struct stream *st;

	if (memchr(p, '\\', len) != NULL) {
		sb_reset(&s->name);
		json_string_decode(span, &s->name);
		p = s->name.buf;
		len = s->name.len;
		if (memchr(p, '\0', len) != NULL) {
			sink_fail(s, "<stdin>:%llu: stream name cannot be used: the name holds control characters", s->lineno);
			return NULL;
		}
	}
	if (s->last && s->last->name_len == len && same_name(stream_name(s->last), p, len))
		return s->last;
	st = find(s, p, len);
	if (st == NULL)
		st = add_stream(s, p, len);
	return st;
}

int sink_close_file(struct sink *s, struct stream *st)
{
	struct plan_file f;
	uint64_t bytes;

	if (st->file && s->rw->settle && s->rw->settle(s, st) != 0)
		return -1;
	if (st->file == NULL)
		return 0;
	if (s->rw->close(st->file, &bytes) != 0) {
		st->file = NULL;
		sink_fail_said(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		return -1;
	}
	st->file = NULL;
	s->open--;
	f.stream = xstrdup(st->name);
	f.staged = st->staged;
	f.final = st->final;
	f.records = st->file_records;
	f.bytes = bytes;
	f.version = st->version ? xstrdup(st->version) : NULL;
	st->staged = st->final = NULL;
	s->plan->files = xrealloc(s->plan->files, (s->plan->nfiles + 1) * sizeof(*s->plan->files));
	s->plan->files[s->plan->nfiles++] = f;
	return 0;
}

/* Whether the stream's schema (its SCHEMA's, or one inferred) has a property named column. */
static int schema_has(const char *column, void *arg)
{
	const char *schema = arg;
	struct json_span v, props, col;
	size_t errpos;
	const char *errmsg;

	if (schema == NULL || json_validate(schema, strlen(schema), &v, &errpos, &errmsg) != 0)
		return 0;
	return json_object_get(&v, "properties", &props) == 1 &&
	       json_object_get(&props, column, &col) == 1;
}

int sink_open_file(struct sink *s, struct stream *st)
{
	struct bucket_writer *w;
	const char *base;
	char *staging;

	if (s->open >= s->opt->max_open) {
		/* Too many open: roll the file of the stream idle the longest. */
		struct stream *idle = NULL;
		size_t i;

		for (i = 0; i < s->n; i++) {
			if (s->streams[i].file &&
			    (idle == NULL || s->streams[i].last_used < idle->last_used))
				idle = &s->streams[i];
		}
		if (idle && sink_close_file(s, idle) != 0)
			return -1;
	}
	staging = s->opt->staging ? xstrdup(s->opt->staging) :
		  layout_staging_prefix(s->cfg->name, s->opt->run_id);
	/*
	 * One date folder key for the stream's whole run (a table whose files
	 * name two keys is one DuckDB refuses), from the columns it has when
	 * its first file opens.
	 */
	if (st->part) {
		/* a part of partition_by: its folder; files numbered with its parent's, so
		 * that their staged names stay unique */
		st->final = layout_part_key(st->dir, st->part, st->safe, s->opt->run_id,
					    s->streams[st->parent - 1].file_index++, s->rw->suffix, s->ext);
	} else {
		if (!st->date_chosen) {
			st->date_unders = layout_date_unders(schema_has, st->schema);
			st->date_chosen = 1;
		}
		st->final = layout_data_key(st->dir, st->date_unders, s->date, st->safe, s->opt->run_id,
					    st->file_index++, s->rw->suffix, s->ext);
	}
	/*
	 * Staged under its final name's last part alone (unique in a run: the
	 * stream's safe name, unique even where case is ignored, and its file
	 * number), not its whole path: no folders to make for it, and for the
	 * commit to remove, in each run (issue #14: 4 of a small run's 6; on
	 * this machine's ext4 a folder removed frees and discards its block,
	 * about 0.4 ms of wall).  With checkpoints each commit unit stages
	 * under a folder of its own, so the moves of one being published never
	 * empty a folder the next is writing in (s3rver, like a file system,
	 * then removes it).
	 */
	base = strrchr(st->final, '/');
	base = base ? base + 1 : st->final;
	if (sink_checkpoints(s))
		st->staged = xasprintf("%su%u/%s", staging, s->units + 1, base);
	else
		st->staged = xasprintf("%s%s", staging, base);
	free(staging);
	st->file_records = 0;
	w = bucket_writer_open(s->b, st->staged);
	if (w != NULL)
		st->file = s->rw->open(s, st, w);
	if (st->file == NULL) {
		sink_fail_said(s, "cannot create '%s' in %s", st->staged, bucket_url(s->b));
		free(st->staged);
		free(st->final);
		st->staged = st->final = NULL;
		return -1;
	}
	s->open++;
	return 0;
}

void sink_streams_free(struct sink *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		struct stream *st = &s->streams[i];

		free(st->name);
		free(st->dir);
		free(st->safe);
		free(st->staged);
		free(st->final);
		free(st->schema);
		free(st->key_properties);
		util_strv_free(st->absent);
		sb_free(&st->cold);
		free(st->chunks);
		free(st->version);
		free(st->activated);
		if (s->rw->stream_free)
			s->rw->stream_free(st->rwstate);
	}
	sink_parts_free(s);
	free(s->streams);
	free(s->slots);
}
