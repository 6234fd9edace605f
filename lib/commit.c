/* commit: publishing a run, aborting one, recovering from a dead one. */
#include "commit.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "lock.h"
#include "manifest.h"
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
	log = util_log_key(p->pipeline, id);
	r = bucket_exists(b, log);
	free(log);
	if (r < 0)
		return -1;
	c->ids = xrealloc(c->ids, (c->n + 1) * sizeof(*c->ids));
	c->mine = xrealloc(c->mine, (c->n + 1) * sizeof(*c->mine));
	c->ids[c->n] = xstrdup(id);
	c->mine[c->n++] = r;
	return r;
}

/*
 * Whether the run replaces stream i's earlier files: always in a snapshot
 * pipeline; in an incremental one when the run activated a table version
 * other than the one the manifest records for the folder (taps re-activate
 * the version they append to on every run).  A folder with no recorded
 * version keeps its files: they may be of the version activated now.
 */
static int replaces(const struct plan *p, size_t i, char *const *versions)
{
	const struct plan_stream *s = &p->streams[i];

	if (p->replace)
		return 1;
	if (s->activated == NULL)
		return 0;
	if (versions[i] == NULL)
		return 2;
	return strcmp(versions[i], s->activated) != 0;
}

/*
 * A snapshot pipeline's run replaces what each stream had before, and a
 * newly activated table version replaces its stream's earlier ones: the
 * files of earlier runs of this pipeline go.  Files another pipeline
 * landed, or that no run of ours did, stay (a warning counts them).
 */
static int replace_old_files(struct bucket *b, const struct plan *p)
{
	struct owner_cache c = { NULL, NULL, 0 };
	char **versions = xcalloc(p->nstreams + 1, sizeof(*versions));
	size_t i, j;
	int ret = 0, activated = 0;

	for (i = 0; i < p->nstreams; i++)
		activated |= p->streams[i].activated != NULL;
	if (!p->replace && activated && manifest_table_versions(b, p, versions) != 0)
		ret = -1;
	for (i = 0; i < p->nstreams && ret == 0; i++) {
		const struct plan_stream *s = &p->streams[i];
		char *prefix;
		char **keys = NULL;
		size_t n = 0, foreign = 0, kept = 0;
		int how = replaces(p, i, versions);

		if (how == 0)
			continue;
		prefix = xasprintf("%s/", s->dir);
		ret = bucket_list(b, prefix, &keys, &n);
		free(prefix);
		for (j = 0; j < n && ret == 0; j++) {
			int r;

			if (in_plan(p, keys[j]))
				continue;
			r = owned(b, p, &c, keys[j]);
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
	for (i = 0; i < p->nstreams; i++)
		free(versions[i]);
	free(versions);
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
	key = util_state_key(p->pipeline);
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

/* tap_stderr: lines to log as the "tap_stderr" list, or NULL for none. */
static int write_log(struct bucket *b, const char *pipeline, const char *run_id,
		     const struct plan *p, const char *error, const char *tap_stderr)
{
	struct sb log = SB_INIT;
	char started[32], finished[32];
	char *key = util_log_key(pipeline, run_id);
	time_t t0 = util_run_id_time(run_id), t1 = time(NULL);
	unsigned long long total = 0;
	size_t i;
	int ret = bucket_exists(b, key);

	if (ret != 0) {
		/* a recovery finishing a commit keeps the first log */
		free(key);
		return ret < 0 ? -1 : 0;
	}
	iso_of_run(run_id, started, sizeof(started));
	util_iso_time(t1, finished, sizeof(finished));
	sb_adds(&log, "{\n  \"pipeline\": ");
	json_quote(&log, pipeline, strlen(pipeline));
	sb_addf(&log, ",\n  \"run_id\": \"%s\",\n  \"started_at\": \"%s\",\n  \"finished_at\": \"%s\",\n",
		run_id, started, finished);
	sb_addf(&log, "  \"duration_seconds\": %lld,\n  \"status\": \"%s\",\n",
		(long long)(t0 == -1 ? 0 : t1 - t0), error ? "failure" : "success");
	sb_adds(&log, "  \"streams\": {");
	for (i = 0; p && i < p->nstreams; i++) {
		sb_adds(&log, i ? ",\n    " : "\n    ");
		json_quote(&log, p->streams[i].name, strlen(p->streams[i].name));
		sb_addf(&log, ": {\"records\": %llu", p->streams[i].records);
		if (p->streams[i].widened)
			sb_addf(&log, ", \"widened\": %s", p->streams[i].widened);
		if (p->streams[i].inferred)
			sb_adds(&log, ", \"schema\": \"inferred\"");
		sb_adds(&log, "}");
		total += p->streams[i].records;
	}
	sb_adds(&log, p && p->nstreams ? "\n  },\n" : "},\n");
	sb_addf(&log, "  \"total_records\": %llu,\n  \"error\": ", total);
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
	free(key);
	sb_free(&log);
	return ret;
}

/*
 * A pending commit that can never be finished (a staged copy is gone, so
 * no earlier attempt got past publishing: the state never moved): undo
 * what it published, log the run as failed, drop the pending plan.
 */
static int give_up(struct bucket *b, const struct plan *p, const char *pending, const struct runlock *f)
{
	char *staging = util_staging_prefix(p->pipeline, p->run_id);
	char *why = xasprintf("its commit could not be finished: the staged copy of one of its files is gone, so none of them was published");
	size_t i;
	int ret = runlock_check(f, "undoing a commit that cannot be finished");

	for (i = 0; ret == 0 && i < p->nfiles; i++)
		ret = bucket_delete(b, p->files[i].final);
	if (ret == 0)
		ret = delete_prefix(b, staging);
	if (ret == 0)
		ret = write_log(b, p->pipeline, p->run_id, p, why, NULL);
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
	char *staging = util_staging_prefix(p->pipeline, p->run_id);
	int ret = -1, r;

	if (runlock_check(f, "publishing the files") != 0)
		goto out;
	r = publish_files(b, p);
	if (r != 0) {
		ret = r;
		goto out;
	}
	if (runlock_check(f, "replacing the old files") != 0 || replace_old_files(b, p) != 0)
		goto out;
	if (save_state(b, p, f) != 0)
		goto out;
	if (runlock_check(f, "updating the manifest") != 0 || manifest_update(b, p) != 0)
		goto out;
	if (runlock_check(f, "writing the run log") != 0 ||
	    write_log(b, p->pipeline, p->run_id, p, NULL, NULL) != 0)
		goto out;
	if (runlock_check(f, "removing the pending commit") != 0 || bucket_delete(b, pending) != 0)
		goto out;
	ret = delete_prefix(b, staging);
out:
	free(staging);
	return ret;
}

int commit_publish(struct bucket *b, const struct plan *p)
{
	struct sb text = SB_INIT;
	struct runlock f;
	char *pending = util_pending_key(p->pipeline, p->run_id);
	int ret = -1;

	runlock_init(&f, b, p->pipeline, p->run_id);
	plan_format(p, &text);
	if (runlock_check(&f, "saving the pending commit") == 0 &&
	    bucket_put(b, pending, text.buf, text.len) == 0)
		ret = finish(b, p, pending, &f) == 0 ? 0 : -1;
	runlock_free(&f);
	free(pending);
	sb_free(&text);
	return ret;
}

int commit_pending(struct bucket *b, const char *pipeline, const char *run_id)
{
	char *key = util_pending_key(pipeline, run_id);
	char *legacy = util_pending_legacy_key(pipeline);
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

int commit_abort(struct bucket *b, const char *pipeline, const char *run_id,
		 const struct plan *p, const char *error, const char *tap_stderr)
{
	char *staging = util_staging_prefix(pipeline, run_id);
	int ret = delete_prefix(b, staging);

	free(staging);
	if (write_log(b, pipeline, run_id, p, error ? error : "the run failed", tap_stderr) != 0)
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
	char *dirs[2] = { util_log_key(pipeline, NULL), util_pending_key(pipeline, NULL) };
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
	char *origin;
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
	err_warn("finishing the commit of run %s, which was interrupted", p.run_id);
	runlock_init(&f, b, pipeline, run_id);
	r = finish(b, &p, key, &f);
	if (r == 2)
		r = give_up(b, &p, key, &f);
	runlock_free(&f);
	plan_free(&p);
	return r == 0 ? 0 : -1;
}

int commit_recover(struct bucket *b, const char *pipeline, const char *run_id)
{
	char *legacy = util_pending_legacy_key(pipeline);
	char *pendings = util_pending_key(pipeline, NULL);
	char *staging = util_staging_prefix(pipeline, NULL);
	char *mine = util_staging_prefix(pipeline, run_id);
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
		char *state_dir = util_state_dir(pipeline);
		char *log_dir = util_log_key(pipeline, NULL);

		bucket_sweep(b, state_dir);
		bucket_sweep(b, pendings);
		bucket_sweep(b, log_dir);
		bucket_sweep(b, ".dataspoc/");
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
