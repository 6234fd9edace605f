/* sink_streams: the sink's table of streams, and their open files. */
#include "sink_impl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "err.h"
#include "recwriter.h"
#include "util.h"

static void grow_slots(struct sink *s)
{
	size_t i, nslots = s->nslots ? s->nslots * 2 : 64;
	size_t *slots = xcalloc(nslots, sizeof(*slots));

	for (i = 0; i < s->n; i++) {
		size_t j = util_hash_bytes(s->streams[i].name, s->streams[i].name_len) & (nslots - 1);

		while (slots[j])
			j = (j + 1) & (nslots - 1);
		slots[j] = i + 1;
	}
	free(s->slots);
	s->slots = slots;
	s->nslots = nslots;
}

static struct stream *find(struct sink *s, const char *name, size_t len)
{
	size_t j;

	if (s->nslots == 0)
		return NULL;
	j = util_hash_bytes(name, len) & (s->nslots - 1);
	while (s->slots[j]) {
		struct stream *st = &s->streams[s->slots[j] - 1];

		if (st->name_len == len && memcmp(st->name, name, len) == 0)
			return st;
		j = (j + 1) & (s->nslots - 1);
	}
	return NULL;
}

static struct stream *add_stream(struct sink *s, const char *name, size_t len)
{
	struct stream *st;
	struct sb why = SB_INIT;
	char *safe = util_stream_folder(name, len, &why);
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
	st->name = xstrndup(name, len);
	st->name_len = len;
	st->safe = safe;
	st->dropped = dropped;
	if (dropped)
		st->dir = NULL;
	else if (s->cfg->path && *s->cfg->path)
		st->dir = xasprintf("%s/%s/%s", s->cfg->path, s->source, safe);
	else
		st->dir = xasprintf("%s/%s", s->source, safe);
	if (s->n * 2 > s->nslots)
		grow_slots(s);
	else {
		size_t j = util_hash_bytes(name, len) & (s->nslots - 1);

		while (s->slots[j])
			j = (j + 1) & (s->nslots - 1);
		s->slots[j] = s->n;
	}
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
	if (s->last && s->last->name_len == len && memcmp(s->last->name, p, len) == 0)
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
		sink_fail(s, "cannot write '%s' in %s", st->staged, bucket_url(s->b));
		s->reported = 1;
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

int sink_open_file(struct sink *s, struct stream *st)
{
	struct bucket_writer *w;
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
	staging = util_staging_prefix(s->cfg->name, s->opt->run_id);
	st->final = xasprintf("%s/dt=%s/%s_%s_%04u%s%s", st->dir, s->date, st->safe,
			      s->opt->run_id, st->file_index++, s->rw->suffix, s->ext);
	/*
	 * With checkpoints each commit unit stages under a folder of its own,
	 * so the moves of one being published never empty a folder the next
	 * is writing in (s3rver, like a file system, then removes it).
	 */
	if (sink_checkpoints(s))
		st->staged = xasprintf("%su%u/%s", staging, s->units + 1, st->final);
	else
		st->staged = xasprintf("%s%s", staging, st->final);
	free(staging);
	st->file_records = 0;
	w = bucket_writer_open(s->b, st->staged);
	if (w != NULL)
		st->file = s->rw->open(s, st, w);
	if (st->file == NULL) {
		sink_fail(s, "cannot create '%s' in %s", st->staged, bucket_url(s->b));
		s->reported = 1;
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
		pq_schema_free(st->pqs);
		sb_free(&st->cold);
		free(st->chunks);
		free(st->version);
		free(st->activated);
		sb_free(&st->widened);
		while (st->nwarned > 0)
			free(st->warned[--st->nwarned]);
		free(st->warned);
	}
	free(s->streams);
	free(s->slots);
}
