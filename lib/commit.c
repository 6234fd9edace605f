/* commit: publishing a run, aborting one, recovering from a dead one. */
#include "commit.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jv.h>

#include "err.h"
#include "json.h"
#include "jvx.h"
#include "layout.h"
#include "lock.h"
#include "manifest.h"
#include "report.h"
#include "util.h"

static int delete_prefix(struct bucket *b, const char *prefix)
{
	char **keys = NULL;
	size_t n = 0, i;
	int ret = 0;

	if (bucket_list(b, prefix, &keys, &n) != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (bucket_delete(b, keys[i]) != 0)
			ret = -1;
	}
	util_strv_free(keys);
	return ret;
}

/*
 * Checkpoints (DESIGN.md, "Checkpoints"): a run that committed some keeps
 * their record until its end is logged, .dataspoc/state/P/checkpoints/R.json:
 *
 *   {"run_id","unit","records","checkpoints":[{"unit","at","records"},...],
 *    "streams":{NAME:{"records"[,"widened"]}},"files":[{"final","version"},...]}
 *
 * unit is the last unit committed; files the data files they published,
 * with their table version's raw JSON as a string (or null).
 */
static int marker_get(struct bucket *b, const char *pipeline, const char *run_id, jv *out)
{
	char *key = layout_checkpoint_key(pipeline, run_id);
	struct sb text = SB_INIT;
	int r = bucket_get(b, key, &text);

	*out = jv_invalid();
	if (r == 0) {
		jv m = jv_parse_sized(text.buf, (int)text.len);

		if (jv_get_kind(m) != JV_KIND_OBJECT) {
			err_msg("'%s' in %s is not a record of checkpoints; inspect and remove it by hand",
				key, bucket_url(b));
			jv_free(m);
			r = -1;
		} else {
			*out = m;
		}
	}
	free(key);
	sb_free(&text);
	return r;
}

unsigned commit_checkpoints(struct bucket *b, const char *pipeline, const char *run_id, int *err)
{
	jv m;
	int r = marker_get(b, pipeline, run_id, &m);
	unsigned u = r == 0 ? (unsigned)jvx_number(m, "unit", 0) : 0;

	*err = r < 0;
	jv_free(m);
	return u;
}

static jv raw_or_null(const char *raw)
{
	return raw ? jv_string(raw) : jv_null();
}

/* The checkpoint p (a slice, lib/plan.h) into its run's record, once. */
static int marker_add(struct bucket *b, const struct plan *p)
{
	jv m, cps, streams, files;
	char now[32], *key;
	size_t i;
	int r = marker_get(b, p->pipeline, p->run_id, &m);

	if (r < 0)
		return -1;
	if (r == 1)
		m = JV_OBJECT(jv_string("run_id"), jv_string(p->run_id), jv_string("unit"), jv_number(0),
			      jv_string("records"), jv_number(0), jv_string("checkpoints"), jv_array(),
			      jv_string("streams"), jv_object(), jv_string("files"), jv_array());
	if (jvx_number(m, "unit", 0) >= p->unit) {
		/* a recovery repeating the step */
		jv_free(m);
		return 0;
	}
	util_iso_time(time(NULL), now, sizeof(now));
	cps = jv_array_append(jv_object_get(jv_copy(m), jv_string("checkpoints")),
			      JV_OBJECT(jv_string("unit"), jv_number(p->unit), jv_string("at"), jv_string(now),
					jv_string("records"), jv_number((double)p->records)));
	streams = jv_object_get(jv_copy(m), jv_string("streams"));
	for (i = 0; i < p->nstreams; i++) {
		const struct plan_stream *ps = &p->streams[i];
		jv one = jv_object_get(jv_copy(streams), jv_string(ps->name));

		if (jv_get_kind(one) != JV_KIND_OBJECT) {
			jv_free(one);
			one = JV_OBJECT(jv_string("records"), jv_number(0));
		}
		one = jv_object_set(one, jv_string("records"), jv_number(jvx_number(one, "records", 0) + (double)ps->records));
		if (ps->widened) {
			jv w = jv_object_get(jv_copy(one), jv_string("widened"));

			if (jv_get_kind(w) != JV_KIND_ARRAY) {
				jv_free(w);
				w = jv_array();
			}
			one = jv_object_set(one, jv_string("widened"), jv_array_concat(w, jv_parse(ps->widened)));
		}
		streams = jv_object_set(streams, jv_string(ps->name), one);
	}
	files = jv_object_get(jv_copy(m), jv_string("files"));
	for (i = 0; i < p->nfiles; i++)
		files = jv_array_append(files, JV_OBJECT(jv_string("final"), jv_string(p->files[i].final),
							 jv_string("version"), raw_or_null(p->files[i].version)));
	m = jv_object_set(m, jv_string("checkpoints"), cps);
	m = jv_object_set(m, jv_string("streams"), streams);
	m = jv_object_set(m, jv_string("files"), files);
	m = jv_object_set(m, jv_string("records"), jv_number(jvx_number(m, "records", 0) + (double)p->records));
	m = jv_object_set(m, jv_string("unit"), jv_number(p->unit));
	{
		jv d = jv_dump_string(m, 0);
		struct sb text = SB_INIT;

		sb_adds(&text, jv_string_value(d));
		sb_addc(&text, '\n');
		jv_free(d);
		key = layout_checkpoint_key(p->pipeline, p->run_id);
		r = bucket_put(b, key, text.buf, text.len);
		free(key);
		sb_free(&text);
	}
	return r;
}

static int marker_delete(struct bucket *b, const char *pipeline, const char *run_id)
{
	char *key = layout_checkpoint_key(pipeline, run_id);
	int r = bucket_delete(b, key);

	free(key);
	return r;
}

/*
 * A file this run published at a checkpoint, kept by the run's end: one of
 * no table version, or of the version it activates (activated NULL: any).
 */
static int checkpointed(jv marker, const char *key, const char *activated)
{
	jv files = jv_is_valid(marker) ? jv_object_get(jv_copy(marker), jv_string("files")) : jv_array();
	int r = 0;

	if (jv_get_kind(files) == JV_KIND_ARRAY) {
		jv_array_foreach(files, i, f) {
			jv fin = jv_object_get(jv_copy(f), jv_string("final"));
			jv ver = jv_object_get(jv_copy(f), jv_string("version"));

			if (r == 0 && jv_get_kind(fin) == JV_KIND_STRING && strcmp(jv_string_value(fin), key) == 0)
				r = activated == NULL || jv_get_kind(ver) != JV_KIND_STRING ||
				    strcmp(jv_string_value(ver), activated) == 0 ? 1 : -1;
			jv_free(fin);
			jv_free(ver);
			jv_free(f);
		}
	}
	jv_free(files);
	return r == 1;
}

static int in_plan(const struct plan *p, const char *key)
{
	size_t i;

	for (i = 0; i < p->nfiles; i++) {
		if (strcmp(p->files[i].final, key) == 0)
			return 1;
	}
	return 0;
}

/* 0 published, 2 never can be (a staged copy is gone), -1 error. */
static int publish_files(struct bucket *b, const struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nfiles; i++) {
		const struct plan_file *f = &p->files[i];
		int r = bucket_move(b, f->staged, f->final);

		if (r < 0)
			return -1;
		if (r == 1) {
			/* moved by an earlier attempt of this same commit */
			r = bucket_exists(b, f->final);
			if (r < 0)
				return -1;
			if (r == 0) {
				err_msg("cannot publish '%s': its staged copy '%s' is gone", f->final, f->staged);
				return 2;
			}
		}
	}
	return 0;
}

/*
 * The run id in a data file's key, <dir>/dt=D/<stream>_<run-id>_<NNNN><ext>,
 * into id (size bytes); 0, or -1 when the name is not of that shape.
 */
static int file_run_id(const char *key, char *id, size_t size)
{
	const char *base = strrchr(key, '/'), *last, *p;
	size_t n;

	base = base ? base + 1 : key;
	last = strrchr(base, '_');
	if (last == NULL || last == base)
		return -1;
	for (p = last - 1; p > base && *p != '_'; p--)
		;
	if (*p != '_' || (n = (size_t)(last - p - 1)) == 0 || n >= size)
		return -1;
	memcpy(id, p + 1, n);
	id[n] = '\0';
	return util_run_id_ok(id) ? 0 : -1;
}

/*
 * Which runs are the pipeline's: those it wrote a run log for
 * (.dataspoc/logs/<pipeline>/<run-id>.json), asked once per run id.
 */
struct owner_cache {
	char **ids;
	int *mine;
	size_t n;
};

static int owned(struct bucket *b, const struct plan *p, struct owner_cache *c, const char *key)
{
	char id[64], *log;
	size_t i;
	int r;

	if (file_run_id(key, id, sizeof(id)) != 0)
		return 0;
	if (strcmp(id, p->run_id) == 0)
		return 1;
	for (i = 0; i < c->n; i++) {
		if (strcmp(c->ids[i], id) == 0)
			return c->mine[i];
	}
	log = layout_log_key(p->pipeline, id);
	r = bucket_exists(b, log);
	free(log);
	if (r == 0) {
		/* a run that committed checkpoints and has not ended yet */
		log = layout_checkpoint_key(p->pipeline, id);
		r = bucket_exists(b, log);
		free(log);
	}
	if (r < 0)
		return -1;
	c->ids = xrealloc(c->ids, (c->n + 1) * sizeof(*c->ids));
	c->mine = xrealloc(c->mine, (c->n + 1) * sizeof(*c->mine));
	c->ids[c->n] = xstrdup(id);
	c->mine[c->n++] = r;
	return r;
}

/*
 * Whether key is a file the Python DataSpoc Pipe landed for stream name in
 * the table folder dir: <dir>/<name>_NNNN.parquet (its snapshot runs, each
 * overwriting the last) or <dir>/dt=D/<name>_NNNN.parquet (its incremental
 * ones): engine.py's _flush_buffer().
 */
static int python_file(const char *key, const char *dir, const char *name)
{
	size_t d = strlen(dir), n = strlen(name), i;
	const char *base;

	if (strncmp(key, dir, d) != 0 || key[d] != '/')
		return 0;
	base = key + d + 1;
	if (layout_date_folder(base) == 3 && (base = strchr(base, '/')) != NULL)
		base++;
	if (base == NULL || strchr(base, '/') != NULL || strncmp(base, name, n) != 0 || base[n] != '_')
		return 0;
	for (i = n + 1; base[i] >= '0' && base[i] <= '9'; i++)
		;
	return i >= n + 5 && strcmp(base + i, ".parquet") == 0;
}

/*
 * Whether the Python DataSpoc Pipe ran pipeline p with stream name: one of
 * its run logs (.dataspoc/logs/<pipeline>/<YYYY-MM-DDTHH-MM-SS>.json, no
 * run id of ours) names the stream.  1, 0, or -1 when the bucket failed.
 */
static int python_ran(struct bucket *b, const struct plan *p, const char *name)
{
	char *prefix = layout_log_key(p->pipeline, NULL), **keys = NULL;
	size_t n = 0, i;
	int ret;

	ret = bucket_list(b, prefix, &keys, &n);
	for (i = 0; i < n && ret == 0; i++) {
		struct sb text = SB_INIT;
		struct json_span log, streams, st;
		size_t errpos, len = strlen(keys[i]);
		const char *errmsg;
		char *run = layout_log_run(keys[i]);

		free(run);
		if (run != NULL || len < 5 || strcmp(keys[i] + len - 5, ".json") != 0)
			continue;
		if (bucket_get(b, keys[i], &text) < 0)
			ret = -1;
		else if (json_validate(text.buf, text.len, &log, &errpos, &errmsg) == 0 &&
			 json_object_get(&log, "streams", &streams) == 1 &&
			 json_object_get(&streams, name, &st) == 1)
			ret = 1;
		sb_free(&text);
	}
	util_strv_free(keys);
	free(prefix);
	return ret;
}

/*
 * Whether the run replaces stream i's earlier files: always in a snapshot
 * pipeline; in an incremental one when the run activated a table version
 * other than the one the manifest records for the folder (taps re-activate
 * the version they append to on every run).  A folder with no recorded
 * version keeps its files: they may be of the version activated now.
 */
static int replaces(const struct plan *p, size_t i, const struct manifest_rec *rec)
{
	const struct plan_stream *s = &p->streams[i];

	/* pipe-merge names what an upsert replaces (replace lines), an overwrite replaces all */
	if (s->load_method && strcmp(s->load_method, "upsert") == 0)
		return 0;
	if (s->load_method && strcmp(s->load_method, "overwrite") == 0)
		return 1;
	if (p->replace && !(s->load_method && strcmp(s->load_method, "append-only") == 0))
		return 1;
	/* --full lands the whole table anew: in its new folders, the old ones go */
	if (p->full && plan_refolded(p, s, rec[i].column))
		return 1;
	if (s->activated == NULL)
		return 0;
	if (rec[i].version == NULL)
		return 2;
	return strcmp(rec[i].version, s->activated) != 0;
}

/*
 * The key of the Hive folders of the table of each stream of p that lands
 * files, when the manifest could not be read, from the bucket: the first
 * of its files (p's own aside) in a folder of another key than the
 * stream's, else the stream's key when it has files; NULL when it has
 * none.  (A table a readable manifest does not record, one the Python
 * tool left say, is not read: MIGRATING.md.)  0, or -1.
 */
static int bucket_columns(struct bucket *b, const struct plan *p, struct manifest_rec *rec)
{
	size_t i, j;
	int ret = 0;

	for (i = 0; i < p->nstreams && ret == 0; i++) {
		const struct plan_stream *s = &p->streams[i];
		char *prefix, *key;
		char **keys = NULL;
		size_t n = 0, dlen = strlen(s->dir);

		if (!rec[i].unknown || rec[i].column || p->compact || !plan_lands(p, s->name))
			continue;
		prefix = xasprintf("%s/", s->dir);
		ret = bucket_list(b, prefix, &keys, &n);
		free(prefix);
		key = plan_folder_key(s);
		for (j = 0; j < n && ret == 0; j++) {
			/* DIR/KEY=VALUE/FILE: a file of a Hive folder */
			const char *f = keys[j] + dlen + 1, *eq = strchr(f, '='), *sl = strchr(f, '/');

			if (in_plan(p, keys[j]) || eq == NULL || sl == NULL || sl < eq || strchr(sl + 1, '/'))
				continue;
			if (rec[i].column == NULL || strcmp(rec[i].column, key) == 0) {
				free(rec[i].column);
				rec[i].column = xstrndup(f, (size_t)(eq - f));
			}
		}
		free(key);
		util_strv_free(keys);
	}
	return ret;
}

/* 1 when column is the key of the run's date folders: dt, or _dt, __dt, ... (no partition_by). */
static int date_key(const char *column)
{
	return strcmp(column + strspn(column, "_"), "dt") == 0;
}

int commit_refolds(struct bucket *b, const struct plan *p, struct manifest_rec *known)
{
	struct manifest_rec *rec = known ? known : xcalloc(p->nstreams + 1, sizeof(*rec));
	size_t i;
	int ret = 0;

	/*
	 * The manifest is a catalog: a commit goes on without it (finish());
	 * when it cannot be read, the tables' folders are.
	 */
	if (known == NULL)
		(void)manifest_recorded(b, p, rec, 0);
	if (bucket_columns(b, p, rec) != 0) {
		err_warn("neither the manifest nor the tables' folders could be read: whether a stream's "
			 "partition_by changed is not checked");
		for (i = 0; i < p->nstreams; i++) {
			free(rec[i].column);
			rec[i].column = NULL;
		}
	}
	for (i = 0; i < p->nstreams && ret >= 0; i++) {
		const struct plan_stream *s = &p->streams[i];
		char *key;

		if (!plan_refolded(p, s, rec[i].column))
			continue;
		/* an upsert table's --full is rebuilt whole by pipe-merge */
		if (p->full || replaces(p, i, rec) == 1) {
			ret = 1;
			continue;
		}
		key = plan_folder_key(s);
		if (date_key(key) && date_key(rec[i].column))
			/* no partition_by: a field dt came or went, and the date folder with it */
			err_msg("stream '%s': its records %s a field '%s', so its files go in date folders "
				"'%s=', but the table in '%s' has its files in folders '%s=', and DuckDB cannot "
				"read a table of both (\"Hive partition mismatch\"): run once with --full to land "
				"the whole table anew in the new folders (its old files go), or %s with a transform",
				s->name, strlen(key) > strlen(rec[i].column) ? "now have" : "no longer have",
				strlen(key) > strlen(rec[i].column) ? key + 1 : rec[i].column + 1, key, s->dir,
				rec[i].column, strlen(key) > strlen(rec[i].column) ? "rename that field" :
				"keep the field");
		else
			err_msg("stream '%s': partition_by puts its files in folders '%s=', but the table in '%s' has "
				"its files in folders '%s=', and DuckDB cannot read a table of both (\"Hive partition "
				"mismatch\"): run once with --full to land the whole table anew in the new folders (its "
				"old files go), or set partition_by back",
				s->name, key, s->dir, rec[i].column);
		free(key);
		ret = -1;
	}
	if (known == NULL)
		manifest_recs_free(rec, p->nstreams);
	return ret;
}

/* The files pipe-merge's replace lines name, once the merged ones are published. */
static int delete_replaced(struct bucket *b, const struct plan *p)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < p->nreplaced && ret == 0; i++) {
		if (!in_plan(p, p->replaced[i].key))
			ret = bucket_delete(b, p->replaced[i].key);
	}
	return ret;
}

/*
 * A snapshot pipeline's run replaces what each stream had before, and a
 * newly activated table version replaces its stream's earlier ones: the
 * files of earlier runs of this pipeline go.  Files another pipeline
 * landed, or that no run of ours did, stay (a warning counts them); but a
 * snapshot replaces the files the Python DataSpoc Pipe left for the same
 * pipeline and stream too, in the same step: a table of two layouts is
 * one DuckDB's hive_partitioning refuses.
 */
static int replace_old_files(struct bucket *b, const struct plan *p, jv marker)
{
	struct owner_cache c = { NULL, NULL, 0 };
	struct manifest_rec *rec = xcalloc(p->nstreams + 1, sizeof(*rec));
	size_t i, j;
	int ret = 0, activated = 0, methods = 0, versions;

	for (i = 0; i < p->nstreams; i++) {
		activated |= p->streams[i].activated != NULL;
		methods |= p->streams[i].load_method != NULL;
	}
	/* the replaced files pipe-merge named go first: the merged ones are published */
	ret = delete_replaced(b, p);
	versions = (!p->replace || methods) && activated;
	if (ret == 0 && (versions || p->full) && manifest_recorded(b, p, rec, versions) != 0)
		ret = -1;
	/* (--full of a table the manifest does not record: its folders read, a change of partition_by seen) */
	if (ret == 0 && p->full && bucket_columns(b, p, rec) != 0)
		ret = -1;
	for (i = 0; i < p->nstreams && ret == 0; i++) {
		const struct plan_stream *s = &p->streams[i];
		char *prefix;
		char **keys = NULL;
		size_t n = 0, foreign = 0, kept = 0;
		int how = replaces(p, i, rec), py = -2;

		if (how == 0)
			continue;
		prefix = xasprintf("%s/", s->dir);
		ret = bucket_list(b, prefix, &keys, &n);
		free(prefix);
		for (j = 0; j < n && ret == 0; j++) {
			int r;

			if (in_plan(p, keys[j]) || checkpointed(marker, keys[j], s->activated))
				continue;
			r = owned(b, p, &c, keys[j]);
			if (r == 0 && p->replace && python_file(keys[j], s->dir, s->name)) {
				if (py == -2)
					py = python_ran(b, p, s->name);
				r = py;
			}
			if (r < 0)
				ret = -1;
			else if (r == 0)
				foreign++;
			else if (how == 2)
				kept++;
			else
				ret = bucket_delete(b, keys[j]);
		}
		util_strv_free(keys);
		if (ret == 0 && foreign > 0)
			err_warn("kept %zu file(s) in '%s' that pipeline '%s' did not land (another pipeline's, "
				 "or put there by hand): only its own files are replaced", foreign, s->dir,
				 p->pipeline);
		if (ret == 0 && kept > 0)
			err_warn("kept %zu earlier file(s) of stream '%s' in '%s': they were landed before the "
				 "tap activated a table version there; the next new version it activates "
				 "replaces them", kept, s->name, s->dir);
	}
	for (i = 0; i < c.n; i++)
		free(c.ids[i]);
	manifest_recs_free(rec, p->nstreams);
	free(c.ids);
	free(c.mine);
	return ret;
}

/*
 * The plan's state into state.json.  The object's version is read before
 * the lock is checked, and the write is conditional on it (on stores that
 * can), so a commit that lost its lock after the check, and wakes up late,
 * cannot write over the state of the run that took it over.
 */
static int save_state(struct bucket *b, const struct plan *p, const struct runlock *f)
{
	struct sb pretty = SB_INIT, now = SB_INIT;
	struct json_span v;
	size_t errpos;
	const char *errmsg;
	char *key, version[256];
	int ret = -1, r;

	if (p->state == NULL)
		return runlock_check(f, "saving the state");
	if (json_validate(p->state, strlen(p->state), &v, &errpos, &errmsg) != 0) {
		err_msg("the plan's state is not JSON: %s", errmsg);
		return -1;
	}
	json_pretty(&v, &pretty);
	key = layout_state_key(p->pipeline);
	r = bucket_version(b, key, version, sizeof(version));
	if (r < 0 || runlock_check(f, "saving the state") != 0)
		goto out;
	r = bucket_put_if(b, key, pretty.buf, pretty.len, r == 2 ? NULL : version);
	if (r == 1) {
		/* changed meanwhile: by an earlier try of this same write, or by another run */
		r = bucket_get(b, key, &now);
		if (r == 0 && now.len == pretty.len && memcmp(now.buf, pretty.buf, now.len) == 0)
			ret = 0;
		else if (r >= 0)
			err_msg("%s: '%s' changed while run %s was saving its own: another run has committed; this run's state is not saved",
				f->what, key, p->run_id);
		goto out;
	}
	ret = r;
out:
	free(key);
	sb_free(&pretty);
	sb_free(&now);
	return ret;
}

static void iso_of_run(const char *run_id, char *buf, size_t size)
{
	time_t t = util_run_id_time(run_id);

	util_iso_time(t == -1 ? time(NULL) : t, buf, size);
}

/* No "records_read": a success's records are what it read. */
#define NOT_FAILED ULLONG_MAX

/*
 * One stream's line of the run log: its records (landed), widenings and
 * schema; with what its run's checkpoints landed of it (cp: its member of
 * the checkpoint record's "streams", or invalid) added.  A failed run's
 * stream also says what was read of it (read, not NOT_FAILED: what the
 * run read after its last checkpoint; the landed ones added), into *all.
 */
static void log_stream(struct sb *log, const char *name, unsigned long long records,
		       unsigned long long read, const char *widened, int inferred, jv cp,
		       unsigned long long *total, unsigned long long *all)
{
	jv w = jv_is_valid(cp) ? jv_object_get(jv_copy(cp), jv_string("widened")) : jv_invalid();

	records += jv_is_valid(cp) ? (unsigned long long)jvx_number(cp, "records", 0) : 0;
	json_quote(log, name, strlen(name));
	sb_addf(log, ": {\"records\": %llu", records);
	if (read != NOT_FAILED) {
		sb_addf(log, ", \"records_read\": %llu", records + read);
		*all += records + read;
	}
	if (jv_get_kind(w) == JV_KIND_ARRAY && widened) {
		w = jv_array_concat(w, jv_parse(widened));
		widened = NULL;
	}
	if (jv_get_kind(w) == JV_KIND_ARRAY) {
		jv d = jv_dump_string(w, 0);

		sb_addf(log, ", \"widened\": %s", jv_string_value(d));
		jv_free(d);
	} else {
		jv_free(w);
		if (widened)
			sb_addf(log, ", \"widened\": %s", widened);
	}
	if (inferred)
		sb_adds(log, ", \"schema\": \"inferred\"");
	sb_adds(log, "}");
	*total += records;
	jv_free(cp);
}

/*
 * The run log, once (the first wins).  A run that committed checkpoints
 * logs them (marker: the run's record of them, consumed; invalid: none),
 * and its streams' records include theirs.  tap_stderr: lines to log as
 * the "tap_stderr" list, or NULL for none.
 */
static int log_run(struct bucket *b, const char *pipeline, const char *run_id,
		   const struct plan *p, const char *error, const char *tap_stderr, jv marker,
		   struct sb *summary)
{
	struct sb log = SB_INIT;
	char started[32], finished[32];
	char *key = layout_log_key(pipeline, run_id);
	time_t t0 = util_run_id_time(run_id), t1 = time(NULL);
	unsigned long long total = 0, lost = 0, all = 0;
	size_t i, n = 0;
	jv cps = jv_invalid();
	int ret = bucket_exists(b, key);

	if (ret != 0) {
		/* a recovery finishing a commit keeps the first log */
		jv_free(marker);
		free(key);
		return ret < 0 ? -1 : 0;
	}
	if (jv_is_valid(marker)) {
		cps = jv_object_get(jv_copy(marker), jv_string("streams"));
		if (jv_get_kind(cps) != JV_KIND_OBJECT) {
			jv_free(cps);
			cps = jv_object();
		}
	}
	iso_of_run(run_id, started, sizeof(started));
	util_iso_time(t1, finished, sizeof(finished));
	sb_adds(&log, "{\n  \"pipeline\": ");
	json_quote(&log, pipeline, strlen(pipeline));
	sb_addf(&log, ",\n  \"run_id\": \"%s\",\n  \"started_at\": \"%s\",\n  \"finished_at\": \"%s\",\n",
		run_id, started, finished);
	sb_addf(&log, "  \"duration_seconds\": %lld,\n  \"status\": \"%s\",\n",
		(long long)(t0 == -1 ? 0 : t1 - t0), error ? "failure" : "success");
	if (p && p->compact)
		sb_adds(&log, "  \"command\": \"compact\",\n");
	sb_adds(&log, "  \"streams\": {");
	for (i = 0; p && i < p->nstreams; i++) {
		const struct plan_stream *ps = &p->streams[i];
		jv cp = jv_invalid();

		if (jv_is_valid(cps)) {
			cp = jv_object_get(jv_copy(cps), jv_string(ps->name));
			cps = jv_object_delete(cps, jv_string(ps->name));
			if (jv_get_kind(cp) != JV_KIND_OBJECT) {
				jv_free(cp);
				cp = jv_invalid();
			}
		}
		sb_adds(&log, n++ ? ",\n    " : "\n    ");
		/*
		 * A failed run counts what landed (what its checkpoints did, if
		 * any) and, apart, what it read: the rest is not in the lake.
		 */
		if (error) {
			lost += ps->records;
			log_stream(&log, ps->name, 0, ps->records, NULL, ps->inferred, cp, &total, &all);
		} else {
			log_stream(&log, ps->name, ps->records, NOT_FAILED, ps->widened, ps->inferred, cp,
				   &total, &all);
		}
	}
	if (jv_is_valid(cps)) {
		/* streams only the checkpoints landed */
		jv_object_foreach(cps, k, v) {
			sb_adds(&log, n++ ? ",\n    " : "\n    ");
			log_stream(&log, jv_string_value(k), 0, error && p ? 0 : NOT_FAILED, NULL, 0,
				   jv_get_kind(v) == JV_KIND_OBJECT ? v : (jv_free(v), jv_invalid()), &total,
				   &all);
			jv_free(k);
		}
	}
	sb_adds(&log, n ? "\n  },\n" : "},\n");
	sb_addf(&log, "  \"total_records\": %llu,\n", total);
	/* (a run killed outright, logged by the next: what it read is not known) */
	if (error && p)
		sb_addf(&log, "  \"records_read\": %llu,\n", all);
	if (jv_is_valid(marker)) {
		jv list = jv_object_get(jv_copy(marker), jv_string("checkpoints"));

		sb_adds(&log, "  \"checkpoints\": [");
		if (jv_get_kind(list) == JV_KIND_ARRAY) {
			jv_array_foreach(list, j, c) {
				jv at = jv_object_get(jv_copy(c), jv_string("at"));

				sb_addf(&log, "%s{\"unit\": %u, \"at\": ", j ? ",\n    " : "\n    ",
					(unsigned)jvx_number(c, "unit", 0));
				if (jv_get_kind(at) == JV_KIND_STRING)
					json_quote(&log, jv_string_value(at), strlen(jv_string_value(at)));
				else
					sb_adds(&log, "null");
				sb_addf(&log, ", \"records\": %llu}", (unsigned long long)jvx_number(c, "records", 0));
				jv_free(at);
				jv_free(c);
			}
			if (jv_array_length(jv_copy(list)) > 0)
				sb_adds(&log, "\n  ");
		}
		jv_free(list);
		sb_addf(&log, "],\n  \"checkpointed_records\": %llu,\n", (unsigned long long)jvx_number(marker, "records", 0));
		if (error)
			sb_addf(&log, "  \"uncommitted_records\": %llu,\n", lost);
	}
	sb_adds(&log, "  \"error\": ");
	if (error)
		json_quote(&log, error, strlen(error));
	else
		sb_adds(&log, "null");
	if (tap_stderr) {
		const char *line = tap_stderr, *nl;
		int first = 1;

		sb_adds(&log, ",\n  \"tap_stderr\": [");
		for (; *line; line = *nl ? nl + 1 : nl, first = 0) {
			nl = strchr(line, '\n');
			if (nl == NULL)
				nl = line + strlen(line);
			sb_adds(&log, first ? "\n    " : ",\n    ");
			json_quote(&log, line, (size_t)(nl - line));
		}
		sb_adds(&log, first ? "]" : "\n  ]");
	}
	sb_adds(&log, "\n}\n");
	ret = bucket_put(b, key, log.buf, log.len);
	/* (nothing read, nothing to say: the failure's words are enough) */
	if (ret == 0 && summary && error && p && all > 0) {
		sb_adds(summary, "Records: ");
		report_failed_count(summary, total, all);
		sb_addc(summary, '\n');
	}
	jv_free(marker);
	jv_free(cps);
	free(key);
	sb_free(&log);
	return ret;
}

/* log_run() with the run's record of checkpoints read from the bucket. */
static int write_log(struct bucket *b, const char *pipeline, const char *run_id,
		     const struct plan *p, const char *error, const char *tap_stderr,
		     struct sb *summary)
{
	jv marker;

	if (marker_get(b, pipeline, run_id, &marker) < 0)
		return -1;
	return log_run(b, pipeline, run_id, p, error, tap_stderr, marker, summary);
}

/*
 * A pending commit that can never be finished (a staged copy is gone, so
 * no earlier attempt got past publishing: the state never moved): undo
 * what it published, log the run as failed, drop the pending plan.
 */
static int give_up(struct bucket *b, const struct plan *p, const char *pending, const struct runlock *f)
{
	char *staging = layout_staging_prefix(p->pipeline, p->run_id);
	char *why = xasprintf("its commit could not be finished: the staged copy of one of its files is gone, so none of them was published");
	size_t i;
	int ret = runlock_check(f, "undoing a commit that cannot be finished");

	for (i = 0; ret == 0 && i < p->nfiles; i++)
		ret = bucket_delete(b, p->files[i].final);
	if (ret == 0)
		ret = delete_prefix(b, staging);
	if (ret == 0)
		ret = write_log(b, p->pipeline, p->run_id, p, why, NULL, NULL);
	if (ret == 0)
		ret = marker_delete(b, p->pipeline, p->run_id);
	if (ret == 0)
		ret = bucket_delete(b, pending);
	if (ret == 0)
		err_warn("the commit of run %s could not be finished (a staged file is gone); its files were withdrawn and the run is logged as failed",
			 p->run_id);
	free(staging);
	free(why);
	return ret;
}

/*
 * Carry out the plan saved at pending; 0, 2 it never can be, -1 error.
 * Each step first checks that the run doing it (f: the plan's, or the
 * recovering run's) still holds the pipeline's lock, so that a commit
 * whose run lost the lock stops before it writes anything more.
 */
static int finish(struct bucket *b, const struct plan *p, const char *pending, const struct runlock *f)
{
	char *staging = layout_staging_prefix(p->pipeline, p->run_id);
	jv marker = jv_invalid();
	int ret = -1, r, manifest_behind = 0;

	if (runlock_check(f, "publishing the files") != 0)
		goto out;
	r = publish_files(b, p);
	if (r != 0) {
		ret = r;
		goto out;
	}
	/*
	 * A checkpoint replaces nothing but the files its units' merge
	 * rewrote (an upsert table, merged unit by unit): a version is
	 * activated by the run's end.
	 */
	if (!p->checkpoint) {
		if (p->unit && marker_get(b, p->pipeline, p->run_id, &marker) < 0)
			goto out;
		if (runlock_check(f, "replacing the old files") != 0 || replace_old_files(b, p, marker) != 0)
			goto out;
	} else if (p->nreplaced > 0 &&
		   (runlock_check(f, "replacing the merged files") != 0 || delete_replaced(b, p) != 0)) {
		goto out;
	}
	if (save_state(b, p, f) != 0)
		goto out;
	if (runlock_check(f, "updating the manifest") != 0)
		goto out;
	if (manifest_update(b, p) != 0) {
		if (p->checkpoint)
			goto out;
		/*
		 * The data and the state are published: the run succeeded,
		 * whatever the manifest (a catalog of the bucket) says.  Its
		 * pending plan stays, so that the next commit of the pipeline
		 * brings the manifest up to date (recover_one()).
		 */
		err_warn("run %s is committed (its data and state are published), but the manifest was not updated; the next run of '%s' brings it up to date",
			 p->run_id, p->pipeline);
		manifest_behind = 1;
	}
	if (p->checkpoint) {
		if (runlock_check(f, "recording the checkpoint") != 0 || marker_add(b, p) != 0)
			goto out;
	} else if (runlock_check(f, "writing the run log") != 0 ||
		   log_run(b, p->pipeline, p->run_id, p, NULL, NULL, jv_copy(marker), NULL) != 0) {
		goto out;
	}
	if (!manifest_behind &&
	    (runlock_check(f, "removing the pending commit") != 0 || bucket_delete(b, pending) != 0))
		goto out;
	/* A checkpoint's run goes on writing into its staging. */
	if (p->checkpoint)
		ret = 0;
	else if (delete_prefix(b, staging) == 0)
		ret = p->unit ? marker_delete(b, p->pipeline, p->run_id) : 0;
out:
	jv_free(marker);
	free(staging);
	return ret;
}

int commit_publish(struct bucket *b, const struct plan *p)
{
	struct sb text = SB_INIT;
	struct runlock f;
	char *pending = layout_pending_key(p->pipeline, p->run_id);
	int ret = -1;

	runlock_init(&f, b, p->pipeline, p->run_id);
	plan_format(p, &text);
	/* (a checkpoint's units wait for the run's end when it refolds a table: must_wait()) */
	if ((p->checkpoint || commit_refolds(b, p, NULL) >= 0) &&
	    runlock_check(&f, "saving the pending commit") == 0 &&
	    bucket_put(b, pending, text.buf, text.len) == 0)
		ret = finish(b, p, pending, &f) == 0 ? 0 : -1;
	runlock_free(&f);
	free(pending);
	sb_free(&text);
	return ret;
}

int commit_pending(struct bucket *b, const char *pipeline, const char *run_id)
{
	char *key = layout_pending_key(pipeline, run_id);
	char *legacy = layout_pending_legacy_key(pipeline);
	struct sb text = SB_INIT;
	int r = bucket_exists(b, key);

	if (r == 0) {
		r = bucket_get(b, legacy, &text);
		r = r == 0 ? strstr(text.buf, run_id) != NULL : r == 1 ? 0 : -1;
	}
	sb_free(&text);
	free(key);
	free(legacy);
	return r;
}

int commit_log_lost(struct bucket *b, const char *pipeline, const struct runlock *l)
{
	char *key, *why;
	int r;

	if (l->taken_over == NULL)
		return 0;
	/* a commit that began is the next recovery's to finish, and log */
	r = commit_pending(b, pipeline, l->taken_over);
	if (r != 0)
		return r < 0 ? -1 : 0;
	key = layout_log_key(pipeline, l->taken_over);
	r = bucket_exists(b, key);
	free(key);
	if (r != 0)
		return r < 0 ? -1 : 0;
	why = l->run_id ? xasprintf("%s when run %s took its lock over; nothing of it was published",
				    l->taken_why, l->run_id) :
			  xasprintf("%s; nothing of it was published", l->taken_why);
	r = write_log(b, pipeline, l->taken_over, NULL, why, NULL, NULL);
	if (r == 0)
		err_warn("run %s ended without its log (%s): logged as failed", l->taken_over, l->taken_why);
	free(why);
	return r;
}

int commit_abort(struct bucket *b, const char *pipeline, const char *run_id,
		 const struct plan *p, const char *error, const char *tap_stderr, struct sb *summary)
{
	char *staging = layout_staging_prefix(pipeline, run_id);
	int ret = delete_prefix(b, staging);

	free(staging);
	if (write_log(b, pipeline, run_id, p, error ? error : "the run failed", tap_stderr, summary) != 0 ||
	    marker_delete(b, pipeline, run_id) != 0)
		ret = -1;
	return ret;
}

/* The run id of a key ".../<run-id>.json" into id, or -1. */
static int key_run_id(const char *key, char *id, size_t size)
{
	const char *base = strrchr(key, '/');
	size_t n;

	base = base ? base + 1 : key;
	n = strlen(base);
	if (n <= 5 || strcmp(base + n - 5, ".json") != 0 || n - 5 >= size)
		return -1;
	memcpy(id, base, n - 5);
	id[n - 5] = '\0';
	return util_run_id_ok(id) ? 0 : -1;
}

/* A run log at key says success: 1, 0 not, -1 error. */
static int log_success(struct bucket *b, const char *key)
{
	struct sb text = SB_INIT;
	int r = bucket_get(b, key, &text);

	if (r == 0)
		r = strstr(text.buf, "\"status\": \"success\"") != NULL;
	else if (r == 1)
		r = 0;
	sb_free(&text);
	return r;
}

int commit_later_run(struct bucket *b, const char *pipeline, const char *run_id, char **later)
{
	char *dirs[2] = { layout_log_key(pipeline, NULL), layout_pending_key(pipeline, NULL) };
	char id[64];
	size_t d, i, n;
	int ret = 0;

	*later = NULL;
	for (d = 0; d < 2 && ret == 0; d++) {
		char **keys = NULL;

		n = 0;
		if (bucket_list(b, dirs[d], &keys, &n) != 0)
			ret = -1;
		/* sorted: the latest runs last */
		for (i = n; ret == 0 && i-- > 0;) {
			if (key_run_id(keys[i], id, sizeof(id)) != 0)
				continue;
			if (strcmp(id, run_id) <= 0)
				break;
			ret = d == 1 ? 1 : log_success(b, keys[i]);
			if (ret == 1)
				*later = xstrdup(id);
		}
		util_strv_free(keys);
	}
	free(dirs[0]);
	free(dirs[1]);
	return ret;
}

/*
 * Finish the commit saved at key (a run's pending plan) under the lock of
 * run_id: 0 finished or given up, -1 not.
 */
static int recover_one(struct bucket *b, const char *pipeline, const char *run_id, const char *key)
{
	struct sb text = SB_INIT;
	struct plan p;
	struct runlock f;
	char *origin, *logkey;
	int r;

	r = bucket_get(b, key, &text);
	if (r != 0) {
		sb_free(&text);
		return r < 0 ? -1 : 0;
	}
	origin = xasprintf("%s/%s", bucket_url(b), key);
	r = plan_parse(text.buf, text.len, origin, &p);
	free(origin);
	sb_free(&text);
	if (r != 0)
		return -1;
	if (!p.ended || !p.success || p.pipeline == NULL || strcmp(p.pipeline, pipeline) != 0) {
		err_msg("%s: pending commit is not a successful plan of pipeline '%s'; inspect and remove it by hand",
			key, pipeline);
		plan_free(&p);
		return -1;
	}
	logkey = layout_log_key(pipeline, p.run_id);
	if (log_success(b, logkey) == 1)
		err_warn("bringing the manifest up to date with run %s, whose commit could not update it", p.run_id);
	else
		err_warn("finishing the commit of run %s, which was interrupted", p.run_id);
	free(logkey);
	runlock_init(&f, b, pipeline, run_id);
	r = finish(b, &p, key, &f);
	if (r == 2)
		r = give_up(b, &p, key, &f);
	runlock_free(&f);
	plan_free(&p);
	return r == 0 ? 0 : -1;
}

/*
 * Runs that committed checkpoints and died before their end (killed; or a
 * failure whose log could not be written): each is logged as failed, with
 * its checkpoints, and its record goes.  Their pending commits are done.
 */
static int end_checkpointed_runs(struct bucket *b, const char *pipeline, const char *run_id)
{
	char *dir = layout_checkpoint_key(pipeline, NULL);
	char **keys = NULL;
	char id[64];
	size_t n = 0, i;
	int ret = bucket_list(b, dir, &keys, &n);

	for (i = 0; ret == 0 && i < n; i++) {
		unsigned units;
		jv marker;
		char *why;

		if (key_run_id(keys[i], id, sizeof(id)) != 0 || strcmp(id, run_id) == 0)
			continue;
		if (marker_get(b, pipeline, id, &marker) < 0) {
			ret = -1;
			break;
		}
		units = jv_is_valid(marker) ? (unsigned)jvx_number(marker, "unit", 0) : 0;
		why = xasprintf("the run stopped after checkpoint %u without its last commit (killed, or its failure could not be logged); what its checkpoints committed stays",
				units);
		ret = log_run(b, pipeline, id, NULL, why, NULL, marker, NULL);
		if (ret == 0)
			ret = bucket_delete(b, keys[i]);
		if (ret == 0)
			err_warn("run %s ended after checkpoint %u without its last commit: logged as failed; its checkpoints stay",
				 id, units);
		free(why);
	}
	util_strv_free(keys);
	free(dir);
	return ret;
}

int commit_recover(struct bucket *b, const char *pipeline, const char *run_id)
{
	char *legacy = layout_pending_legacy_key(pipeline);
	char *pendings = layout_pending_key(pipeline, NULL);
	char *staging = layout_staging_prefix(pipeline, NULL);
	char *mine = layout_staging_prefix(pipeline, run_id);
	char **keys = NULL;
	size_t n = 0, i;
	int ret = -1;

	/* an older version's one pending commit, then each run's, oldest first */
	if (recover_one(b, pipeline, run_id, legacy) != 0)
		goto out;
	if (bucket_list(b, pendings, &keys, &n) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (recover_one(b, pipeline, run_id, keys[i]) != 0)
			goto out;
	}
	util_strv_free(keys);
	keys = NULL;
	if (end_checkpointed_runs(b, pipeline, run_id) != 0)
		goto out;
	if (bucket_list(b, staging, &keys, &n) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		if (strncmp(keys[i], mine, strlen(mine)) == 0)
			continue;
		if (bucket_delete(b, keys[i]) != 0)
			goto out;
	}
	/* What dead writers left beside the state, the logs and the manifest. */
	{
		char *state_dir = layout_state_dir(pipeline);
		char *log_dir = layout_log_key(pipeline, NULL);

		bucket_sweep(b, state_dir);
		bucket_sweep(b, pendings);
		bucket_sweep(b, log_dir);
		bucket_sweep(b, LAYOUT_META);
		free(state_dir);
		free(log_dir);
	}
	ret = 0;
out:
	util_strv_free(keys);
	free(legacy);
	free(pendings);
	free(staging);
	free(mine);
	return ret;
}

void commit_summary(const struct plan *p, struct sb *out)
{
	size_t i;

	sb_adds(out, "Done! ");
	sb_add_thousands(out, p->records);
	/* "1 record", as the progress line says */
	sb_addf(out, " record%s in %zu stream(s)\n", p->records == 1 ? "" : "s", p->nstreams);
	for (i = 0; i < p->nstreams; i++) {
		sb_addf(out, "  %s: ", p->streams[i].name);
		sb_add_thousands(out, p->streams[i].records);
		sb_addc(out, '\n');
	}
}
