/*
 * sink_part: destination.partition_by (lib/sink/sink_impl.h): each record
 * of a stream in the Hive folder of its own value, KEY=VALUE:
 *
 *	KEY	FIELD_GRANULARITY (created_at_day, country_value): never the
 *		field's own name, so that a reader taking the folders as
 *		columns (DuckDB's hive_partitioning, Lens) does not hide the
 *		field; a stream whose SCHEMA (or first record) has a field
 *		named KEY fails the run rather than be hidden
 *	VALUE	a date-time's UTC day (2024-01-31), hour (2024-01-31T13),
 *		month (2024-01) or year (2024); a string, number or boolean
 *		itself, percent-encoded ([A-Za-z0-9_-] and a '.' not leading
 *		stay); a value that is null, missing, not of that shape, or
 *		(granularity value) empty or over 128 bytes:
 *		__HIVE_DEFAULT_PARTITION__, which Hive, Spark and DuckDB read
 *		as NULL
 *
 * A folder is a part: a struct stream of its own outside the name lookup
 * (its file, its rows' state, its records waiting in the spill), so that
 * everything the sink does for a stream it does for each part.
 */
#include "sink_impl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "err.h"
#include "json.h"
#include "layout.h"
#include "parquet.h"
#include "recwriter.h"
#include "singer.h"
#include "util.h"

enum { PART_MAX = LAYOUT_PART_MAX };

/* The property named name of schema (compact JSON text) into *prop: 1, or 0. */
static int property(const char *schema, const char *name, struct json_span *prop)
{
	struct json_span sch, props;
	size_t errpos;
	const char *errmsg;

	if (schema == NULL || json_validate(schema, strlen(schema), &sch, &errpos, &errmsg) != 0 ||
	    json_object_get(&sch, "properties", &props) != 1 || props.type != JSON_OBJECT)
		return 0;
	return json_object_get(&props, name, prop) == 1;
}

/* 1 when schema says field is a date-time or a date (format, or that of an anyOf). */
static int dated(const char *schema, const char *field)
{
	struct json_span prop, f, any, alt;
	size_t pos = 0;

	if (!property(schema, field, &prop) || prop.type != JSON_OBJECT)
		return 0;
	if (json_object_get(&prop, "format", &f) == 1 && f.type == JSON_STRING)
		return json_string_equal(&f, "date-time", 0) || json_string_equal(&f, "date", 0);
	if (json_object_get(&prop, "anyOf", &any) != 1 || any.type != JSON_ARRAY)
		return 0;
	while (json_array_next(&any, &pos, &alt)) {
		if (alt.type == JSON_OBJECT && json_object_get(&alt, "format", &f) == 1 && f.type == JSON_STRING &&
		    (json_string_equal(&f, "date-time", 0) || json_string_equal(&f, "date", 0)))
			return 1;
	}
	return 0;
}

/* A field of st named as its folders' KEY fails the run: readers would show KEY's value instead. */
static int check_key(struct sink *s, const struct stream *st, const char *schema, const struct json_span *rec)
{
	struct json_span v;

	if (schema ? !property(schema, st->part_key, &v) :
	    (rec == NULL || json_object_get(rec, st->part_key, &v) != 1))
		return 0;
	sink_fail(s, "<stdin>:%llu: stream '%s' has a field '%s', the name of the folders of partition_by "
		  "'%s' (%s=...): readers that take Hive folders as columns (DuckDB, Lens) would show the "
		  "folder's value instead of the field's; choose another granularity, or rename the field "
		  "with a transform", s->lineno, st->name, st->part_key, s->cfg->partition_by, st->part_key);
	return -1;
}

/* st's KEY and granularity, at its first record (rec): the schema then known decides. */
static int resolve_key(struct sink *s, struct stream *st, const struct json_span *rec)
{
	int g = (int)s->cfg->partition_granularity;

	if (g == CONFIG_GRAN_AUTO)
		g = dated(st->schema, s->cfg->partition_by) ? CONFIG_GRAN_DAY : CONFIG_GRAN_VALUE;
	st->part_gran = g;
	st->part_key = xasprintf("%s_%s", s->cfg->partition_by, config_granularity_name((enum config_granularity)g));
	return check_key(s, st, st->schema, rec);
}

/* The folder of record rec of parent st into s->folder, "KEY=VALUE". */
static void folder_of(struct sink *s, const struct stream *st, const struct json_span *rec,
		      const struct singer_msg *from)
{
	const char *field = s->cfg->partition_by;
	size_t flen = strlen(field), i, klen = strlen(st->part_key);
	struct json_span v;
	int found = 0;

	sb_reset(&s->folder);
	sb_add(&s->folder, st->part_key, klen);
	sb_addc(&s->folder, '=');
	if (from && from->members && rec->p == from->record.p) {
		for (i = 0; i < from->nmembers && !found; i++) {
			struct json_span k = json_member_key(rec->p, &from->members[i]);

			if (from->members[i].key_esc ? json_string_equal(&k, field, 0) :
			    k.len == flen + 2 && memcmp(k.p + 1, field, flen) == 0) {
				v = json_member_val(rec->p, &from->members[i]);
				found = 1;
			}
		}
	} else {
		found = json_object_get(rec, field, &v) == 1;
	}
	if (!found || !layout_part_value(st->part_gran, &v, &s->folder, &s->name))
		sb_adds(&s->folder, LAYOUT_PART_NULL);
}

static uint64_t part_hash(size_t parent, const char *folder, size_t n)
{
	return util_hash_bytes(folder, n) ^ ((uint64_t)(parent + 1) * 0x9e3779b97f4a7c15ULL);
}

static void pslot_put(uint64_t *slots, size_t nslots, uint64_t h, size_t i)
{
	size_t j = (size_t)h & (nslots - 1);

	while (slots[j])
		j = (j + 1) & (nslots - 1);
	slots[j] = (h & 0xffffffff00000000ULL) | (uint64_t)(i + 1);
}

static void grow_pslots(struct sink *s)
{
	size_t i, nslots = s->npslots ? s->npslots * 2 : 64;
	uint64_t *slots = xcalloc(nslots, sizeof(*slots));

	for (i = 0; i < s->n; i++) {
		const struct stream *p = &s->streams[i];

		if (p->parent)
			pslot_put(slots, nslots, part_hash(p->parent - 1, p->part, strlen(p->part)), i);
	}
	free(s->pslots);
	s->pslots = slots;
	s->npslots = nslots;
}

/* The part of parent pi whose folder is s->folder, or 0; index + 1. */
static size_t find_part(struct sink *s, size_t pi, uint64_t h)
{
	uint64_t tag = h & 0xffffffff00000000ULL, v;
	size_t j;

	if (s->npslots == 0)
		return 0;
	for (j = (size_t)h & (s->npslots - 1); (v = s->pslots[j]) != 0; j = (j + 1) & (s->npslots - 1)) {
		const struct stream *p;

		if ((v & 0xffffffff00000000ULL) != tag)
			continue;
		p = &s->streams[(uint32_t)v - 1];
		if (p->parent == pi + 1 && strlen(p->part) == s->folder.len &&
		    memcmp(p->part, s->folder.buf, s->folder.len) == 0)
			return (size_t)(uint32_t)v;
	}
	return 0;
}

/* A new part of parent pi for s->folder; its index + 1, or 0 on error. */
static size_t add_part(struct sink *s, size_t pi, uint64_t h)
{
	struct stream *st, *parent = &s->streams[pi];
	size_t i;

	if (parent->nparts >= PART_MAX) {
		sink_fail(s, "<stdin>:%llu: stream '%s' has more than %d values of partition_by '%s' (%s) in "
			  "one run: each would be a folder and a file of its own; choose a field with fewer "
			  "values or a coarser granularity", s->lineno, parent->name, PART_MAX,
			  s->cfg->partition_by, parent->part_key);
		return 0;
	}
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 16;
		s->streams = xrealloc(s->streams, s->cap * sizeof(*s->streams));
		s->last = NULL;
		parent = &s->streams[pi];
	}
	i = s->n++;
	st = &s->streams[i];
	memset(st, 0, sizeof(*st));
	st->name = xstrdup(parent->name);
	st->name_len = parent->name_len;
	memcpy(st->name_in, parent->name_in, sizeof(st->name_in));
	st->dir = xstrdup(parent->dir);
	st->safe = xstrdup(parent->safe);
	st->parent = pi + 1;
	st->part = xstrndup(s->folder.buf, s->folder.len);
	st->next_part = parent->parts;
	parent->parts = i + 1;
	parent->nparts++;
	s->nparts++;
	if (s->rw->stream_new)
		st->rwstate = s->rw->stream_new();
	if (parent->schema) {
		if (s->rw->schema(s, st, parent->schema) != 0)
			return 0;
		st->schema = xstrdup(parent->schema);
	}
	if (s->nparts * 2 > s->npslots)
		grow_pslots(s);
	else
		pslot_put(s->pslots, s->npslots, h, i);
	return i + 1;
}

/* Record bytes[0..len) into *rec, its folders' KEY resolved at the first: 0, or -1. */
static int record_of(struct sink *s, struct stream *st, const char *bytes, size_t len,
		     const struct singer_msg *from, struct json_span *rec)
{
	rec->p = bytes;
	rec->len = len;
	rec->type = JSON_OBJECT;
	if (from == NULL) {
		/* a transform's output: a JSON object? */
		size_t errpos;
		const char *errmsg;

		if (json_validate(bytes, len, rec, &errpos, &errmsg) != 0 || rec->type != JSON_OBJECT) {
			sink_fail(s, "<stdin>:%llu: the transform's output for a record of stream '%s' is not a "
				  "JSON object: partition_by needs its field", s->lineno, st->name);
			return -1;
		}
	}
	if (st->part_key == NULL && resolve_key(s, st, rec) != 0)
		return -1;
	return 0;
}

int sink_part_key(struct sink *s, struct stream *st, const char *bytes, size_t len, const struct singer_msg *from)
{
	struct json_span rec;

	return record_of(s, st, bytes, len, from, &rec);
}

struct stream *sink_part(struct sink *s, struct stream *st, const char *bytes, size_t len,
			 const struct singer_msg *from)
{
	struct json_span rec;
	size_t pi = (size_t)(st - s->streams), k;
	uint64_t h;

	if (record_of(s, st, bytes, len, from, &rec) != 0)
		return NULL;
	folder_of(s, st, &rec, from);
	if (st->cur_part) {
		const struct stream *c = &s->streams[st->cur_part - 1];

		if (strlen(c->part) == s->folder.len && memcmp(c->part, s->folder.buf, s->folder.len) == 0)
			return &s->streams[st->cur_part - 1];
	}
	h = part_hash(pi, s->folder.buf, s->folder.len);
	k = find_part(s, pi, h);
	if (k == 0 && (k = add_part(s, pi, h)) == 0)
		return NULL;
	s->streams[pi].cur_part = k;
	return &s->streams[k - 1];
}

int sink_part_schema(struct sink *s, struct stream *st, const char *schema)
{
	size_t k;

	if (st->part_key && check_key(s, st, schema, NULL) != 0)
		return -1;
	for (k = st->parts; k; k = s->streams[k - 1].next_part) {
		struct stream *p = &s->streams[k - 1];

		if (s->rw->schema(s, p, schema) != 0)
			return -1;
		free(p->schema);
		p->schema = xstrdup(schema);
	}
	return 0;
}

void sink_part_sum(const struct sink *s, const struct stream *st, unsigned long long *records,
		   unsigned long long *base)
{
	size_t k;

	for (k = st->parts; k; k = s->streams[k - 1].next_part) {
		*records += s->streams[k - 1].records;
		*base += s->streams[k - 1].unit_base;
	}
}

void sink_parts_free(struct sink *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->streams[i].part);
		free(s->streams[i].part_key);
	}
	free(s->pslots);
	s->pslots = NULL;
	sb_free(&s->folder);
}
