/*
 * pipe-shard: one run of a pipeline split into N shards that run anywhere
 * and land in one commit (docs/SCALE.md, issue #31).  Shard I of N
 * extracts the streams of source.streams whose tap_stream_id hashes to I
 * (catalog_stream_shard()); each stages its files and its plan in the
 * bucket, under the run's staging; the join makes the run's one plan of
 * them, which pipe-commit publishes as any run's.
 *
 *	pipe-shard plan -n N NAME              lock, the run's plan; prints R
 *	DATASPOC_PIPE_SHARD=I/N ... pipe-shard get -s I/N -r R NAME |
 *	    pipe-tap NAME | pipe-sink NAME | pipe-shard put -s I/N -r R NAME
 *	pipe-shard join -r R NAME | [pipe-merge NAME |] pipe-commit -r R NAME
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bucket.h"
#include "catalog.h"
#include "cli.h"
#include "commit.h"
#include "config.h"
#include "err.h"
#include "json.h"
#include "layout.h"
#include "lock.h"
#include "plan.h"
#include "state.h"
#include "util.h"

static const char usage_line[] =
	"pipe-shard plan|get|put|join|source|held [-fh] [-n N] [-s I/N] [-r RUN_ID] [-S FILE] [-w SECONDS]\n"
	"           NAME | -c FILE.yaml";

static const char help_text[] =
	"usage: pipe-shard plan [-f] -n N [-r RUN_ID] NAME\n"
	"       pipe-shard get -s I/N -r RUN_ID [-S FILE] NAME\n"
	"       pipe-shard put -s I/N -r RUN_ID NAME < plan\n"
	"       pipe-shard join [-w SECONDS] -r RUN_ID NAME > plan\n"
	"       pipe-shard source -r RUN_ID NAME < object\n"
	"       pipe-shard held -r RUN_ID NAME\n"
	"       (-c FILE.yaml for NAME)\n"
	"\n"
	"A run split into N shards that land in one commit.  Shard I of N\n"
	"extracts the streams of source.streams whose tap_stream_id hashes to I\n"
	"(FNV-1a, 32 bits, modulo N).\n"
	"\n"
	"  plan   take the pipeline's run lock for the run (held by no process:\n"
	"         only its expiry frees it; the shards' pipe-sink renew it), finish\n"
	"         earlier commits as pipe-state get does, write the run's plan\n"
	"         (N and the saved state; -f: none) in the bucket, print the run id.\n"
	"         A store that ignores conditional creates is refused.\n"
	"  get    print the state shard I starts from, while the run holds the lock;\n"
	"         -S: the run's source object, when staged, in FILE\n"
	"  put    stage shard I's plan (pipe-sink's, ended in success), while the\n"
	"         run holds the lock; it replaces an earlier attempt's\n"
	"  join   print the run's one plan: every shard's files and streams (a\n"
	"         stream in several shards that all activated one table version is\n"
	"         one, split across them: its records added up), the\n"
	"         state merged (each stream's bookmark from the shard that owns it,\n"
	"         other members from the last shard that has them), for pipe-commit.\n"
	"         -w: first wait up to SECONDS for every shard to stage its part.\n"
	"         When a shard is missing it names them, ends the run (a failure\n"
	"         log, its staging removed, the lock released) and prints nothing.\n"
	"  source stage the run's source object (the snapshot a tap's holder exported\n"
	"         for a split table), while the run holds the lock\n"
	"  held   exit status 0 while the run holds the lock, else 1\n"
	"\n"
	"Exit status: 0 done, 1 failed, 2 bad usage or config, 75 (plan) the run\n"
	"lock is another run's.\n";

struct ctx {
	struct pipe_config cfg;
	struct bucket *b;
	struct runlock lock;
	const char *run_id;
	unsigned long shard, nshards;	/* -s I/N; plan: -n N */
	long wait;			/* join -w SECONDS */
	const char *source_file;	/* get -S FILE */
	int full;
};

/* The run's plan object: 0 read (*n, the state's text or ""), 1 absent, -1 error. */
static int read_run_plan(struct ctx *c, unsigned long *n, struct sb *state)
{
	char *key = layout_shard_key(c->cfg.name, c->run_id, -1);
	struct sb text = SB_INIT;
	struct json_span v, m;
	size_t errpos;
	const char *errmsg;
	int r = bucket_get(c->b, key, &text);

	if (r == 0) {
		if (json_validate(text.buf, text.len, &v, &errpos, &errmsg) != 0 ||
		    v.type != JSON_OBJECT || json_object_get(&v, "shards", &m) != 1 ||
		    m.type != JSON_NUMBER) {
			err_msg("'%s/%s' is not a sharded run's plan", bucket_url(c->b), key);
			r = -1;
		} else {
			*n = strtoul(m.p, NULL, 10);
			if (json_object_get(&v, "state", &m) == 1 && m.type == JSON_OBJECT)
				json_compact(&m, state);
		}
	} else if (r == 1) {
		err_msg("pipeline '%s' has no sharded run %s (its plan is gone: the run ended or was swept)",
			c->cfg.name, c->run_id);
	}
	sb_free(&text);
	free(key);
	return r;
}

/* 0 when the run still holds its lock, else -1 said (why: what is not done). */
static int fenced(struct ctx *c, const char *why)
{
	int r = runlock_held(&c->lock);

	if (r == 1)
		return 0;
	if (r == 0)
		err_msg("run %s no longer holds the lock of pipeline '%s': %s", c->run_id, c->cfg.name, why);
	return -1;
}

static int cmd_plan(struct ctx *c)
{
	char *probe = xasprintf(LAYOUT_PROBE_PREFIX "%s-shards-%ld", c->run_id, (long)getpid());
	char *key = NULL;
	struct sb state = SB_INIT, doc = SB_INIT;
	int r, ret = CLI_FAILED, locked = 0;

	if (c->cfg.streams == NULL) {
		err_msg("a sharded run splits source.streams: pipeline '%s' selects none", c->cfg.name);
		ret = CLI_USAGE;
		goto out;
	}
	if (config_checkpoints(&c->cfg)) {
		err_msg("pipeline '%s' sets incremental.checkpoint_every: a sharded run cannot checkpoint",
			c->cfg.name);
		ret = CLI_USAGE;
		goto out;
	}
	/* a shard's lock is its run's: only a store that refuses a second create keeps it one */
	if (bucket_put(c->b, probe, "probe\n", 6) != 0)
		goto out;
	r = bucket_probe_conditional(c->b, probe);
	bucket_delete(c->b, probe);
	if (r < 0)
		goto out;
	if (r == 0) {
		err_msg("the store '%s' ignores conditional creates: sharded runs need them (see 'pipe-state probe')",
			bucket_url(c->b));
		ret = CLI_USAGE;
		goto out;
	}
	r = runlock_take_detached(&c->lock);
	if (r == 1)
		ret = CLI_LOCKED;
	if (r != 0)
		goto out;
	locked = 1;
	if (commit_recover(c->b, c->cfg.name, c->run_id) != 0)
		goto out;
	r = 1;
	if (c->cfg.incremental && !c->full && (r = state_load(c->b, c->cfg.name, &state)) < 0)
		goto out;
	sb_addf(&doc, "{\"type\":\"shards\",\"pipeline\":");
	json_quote(&doc, c->cfg.name, strlen(c->cfg.name));
	sb_addf(&doc, ",\"run_id\":\"%s\",\"shards\":%lu,\"full\":%s,\"state\":%s}\n", c->run_id,
		c->nshards, c->full ? "true" : "false", r == 0 ? state.buf : "null");
	key = layout_shard_key(c->cfg.name, c->run_id, -1);
	if (bucket_put(c->b, key, doc.buf, doc.len) != 0)
		goto out;
	printf("%s\n", c->run_id);
	if (fflush(stdout) != 0)
		goto out;
	ret = CLI_OK;
	locked = 0;
out:
	if (locked)
		runlock_release(&c->lock);
	sb_free(&state);
	sb_free(&doc);
	free(key);
	free(probe);
	return ret;
}

/* The run's plan says N shards: this shard is one of them. */
static int same_count(struct ctx *c, unsigned long n)
{
	if (n == c->nshards)
		return 0;
	err_msg("run %s of pipeline '%s' has %lu shards, not %lu", c->run_id, c->cfg.name, n, c->nshards);
	return -1;
}

/* The run's source object: what the tap's snapshot holder staged (split.c). */
static char *source_key(struct ctx *c)
{
	char *prefix = layout_staging_prefix(c->cfg.name, c->run_id);
	char *key = xasprintf("%sshards/source.json", prefix);

	free(prefix);
	return key;
}

/* get -S FILE: the run's source object, when there is one, in FILE.  0, or -1 said. */
static int get_source(struct ctx *c)
{
	struct sb text = SB_INIT;
	char *key = source_key(c);
	int r = bucket_get(c->b, key, &text), ret = r < 0 ? -1 : 0;

	if (r == 0 && util_replace_file(c->source_file, text.buf, text.len) != 0) {
		err_msg("cannot write the run's source object to '%s':", c->source_file);
		ret = -1;
	}
	free(key);
	sb_free(&text);
	return ret;
}

/* source: stage the run's source object (a snapshot's holder's), while the run holds the lock. */
static int cmd_source(struct ctx *c)
{
	struct sb in = SB_INIT, state = SB_INIT;
	struct json_span v;
	unsigned long n = 0;
	size_t errpos;
	const char *errmsg;
	char *key = source_key(c);
	int ret = CLI_FAILED;

	if (util_read_fd(STDIN_FILENO, &in) != 0) {
		err_msg("cannot read the source object:");
		goto out;
	}
	if (json_validate(in.buf ? in.buf : "", in.len, &v, &errpos, &errmsg) != 0 || v.type != JSON_OBJECT) {
		err_msg("<stdin>: not a JSON object: nothing staged");
		goto out;
	}
	if (fenced(c, "its source object is not staged") != 0 || read_run_plan(c, &n, &state) != 0)
		goto out;
	if (bucket_put(c->b, key, in.buf, in.len) == 0)
		ret = CLI_OK;
out:
	sb_free(&in);
	sb_free(&state);
	free(key);
	return ret;
}

static int cmd_get(struct ctx *c)
{
	struct sb state = SB_INIT;
	unsigned long n = 0;
	int ret = CLI_FAILED;

	if (fenced(c, "this shard stages nothing") != 0 || read_run_plan(c, &n, &state) != 0)
		goto out;
	if (same_count(c, n) != 0) {
		ret = CLI_USAGE;
		goto out;
	}
	if (c->source_file && get_source(c) != 0)
		goto out;
	printf("%s\n", state.len ? state.buf : "{}");
	ret = fflush(stdout) == 0 ? CLI_OK : CLI_FAILED;
out:
	sb_free(&state);
	return ret;
}

static int cmd_put(struct ctx *c)
{
	struct sb in = SB_INIT, out = SB_INIT, state = SB_INIT;
	struct plan p;
	unsigned long n = 0;
	char *key = NULL;
	int ret = CLI_FAILED;

	memset(&p, 0, sizeof(p));
	if (util_read_fd(STDIN_FILENO, &in) != 0) {
		err_msg("cannot read the plan:");
		goto out;
	}
	if (plan_parse(in.buf ? in.buf : "", in.len, "<stdin>", &p) != 0)
		goto out;
	if (!p.ended || !p.success || p.nunits || p.pipeline == NULL || p.run_id == NULL ||
	    strcmp(p.pipeline, c->cfg.name) != 0 || strcmp(p.run_id, c->run_id) != 0) {
		err_msg("shard %lu/%lu: the plan is not run %s's of pipeline '%s' ended in success; nothing staged",
			c->shard, c->nshards, c->run_id, c->cfg.name);
		goto out;
	}
	if (fenced(c, "the shard's plan is not staged") != 0 || read_run_plan(c, &n, &state) != 0 ||
	    same_count(c, n) != 0)
		goto out;
	plan_format(&p, &out);
	key = layout_shard_key(c->cfg.name, c->run_id, (long)c->shard);
	if (bucket_put(c->b, key, out.buf, out.len) != 0)
		goto out;
	ret = CLI_OK;
out:
	plan_free(&p);
	sb_free(&in);
	sb_free(&out);
	sb_free(&state);
	free(key);
	return ret;
}

/* A member's value in obj (a JSON object span, or type JSON_NONE), compact, or -1 absent. */
static int member(const struct json_span *obj, const char *name, struct sb *out)
{
	struct json_span v;

	if (obj->type != JSON_OBJECT || json_object_get(obj, name, &v) != 1)
		return -1;
	sb_reset(out);
	json_compact(&v, out);
	return 0;
}

/* The decoded keys of obj appended to keys (each once). */
static void add_keys(const struct json_span *obj, char ***keys, size_t *n)
{
	struct json_span k, v;
	size_t pos = 0, i;

	if (obj->type != JSON_OBJECT)
		return;
	while (json_object_next(obj, &pos, &k, &v)) {
		struct sb name = SB_INIT;

		json_string_decode(&k, &name);
		for (i = 0; i < *n && strcmp((*keys)[i], name.buf) != 0; i++)
			;
		if (i < *n || strlen(name.buf) != name.len) {
			sb_free(&name);
			continue;
		}
		*keys = xrealloc(*keys, (*n + 2) * sizeof(**keys));
		(*keys)[(*n)++] = sb_detach(&name);
		(*keys)[*n] = NULL;
	}
}

/*
 * The run's state: base (the state the shards started from) with each
 * stream's bookmark from the shard its id hashes to (else from a shard
 * that changed it; else, when that shard saved a state without it, none:
 * its tap deleted it), and every other member from the last shard that has
 * it.  st[i]: shard i's state (type JSON_NONE: none).  Appends to out; 1
 * when no shard and no base has a state (out untouched).
 */
static int merge_states(const struct json_span *base, const struct json_span *st, unsigned long n,
			struct sb *out)
{
	struct json_span bm[CATALOG_SHARDS_MAX], basebm = { NULL, 0, JSON_NONE };
	struct sb val = SB_INIT, other = SB_INIT;
	char **keys = NULL, **streams = NULL;
	size_t nkeys = 0, nstreams = 0, i, j;
	unsigned long s;
	int any = base->type == JSON_OBJECT, first = 1;

	add_keys(base, &keys, &nkeys);
	for (s = 0; s < n; s++) {
		add_keys(&st[s], &keys, &nkeys);
		any |= st[s].type == JSON_OBJECT;
	}
	if (!any)
		return 1;
	if (base->type == JSON_OBJECT)
		json_object_get(base, "bookmarks", &basebm);
	add_keys(&basebm, &streams, &nstreams);
	for (s = 0; s < n; s++) {
		bm[s].type = JSON_NONE;
		if (st[s].type == JSON_OBJECT)
			json_object_get(&st[s], "bookmarks", &bm[s]);
		add_keys(&bm[s], &streams, &nstreams);
	}
	sb_addc(out, '{');
	for (i = 0; i < nkeys; i++) {
		int found = -1;

		if (!first)
			sb_addc(out, ',');
		first = 0;
		json_quote(out, keys[i], strlen(keys[i]));
		sb_addc(out, ':');
		if (strcmp(keys[i], "bookmarks") == 0 && (basebm.type == JSON_OBJECT || nstreams)) {
			sb_addc(out, '{');
			for (j = 0; j < nstreams; j++) {
				unsigned long owner = catalog_stream_shard(streams[j], strlen(streams[j]), n);
				int has_base = member(&basebm, streams[j], &other) == 0;

				found = member(&bm[owner], streams[j], &val);
				for (s = 0; found != 0 && s < n; s++) {
					if (s != owner && member(&bm[s], streams[j], &val) == 0 &&
					    (!has_base || strcmp(val.buf, other.buf) != 0))
						found = 0;
				}
				/* the owner's state without it: its tap deleted it, as an
				 * unsharded run's state would not have it either */
				if (found != 0 && has_base && st[owner].type != JSON_OBJECT) {
					sb_reset(&val);
					sb_add(&val, other.buf, other.len);
					found = 0;
				}
				if (found != 0)
					continue;
				sb_adds(out, out->buf[out->len - 1] == '{' ? "" : ",");
				json_quote(out, streams[j], strlen(streams[j]));
				sb_addc(out, ':');
				sb_add(out, val.buf, val.len);
			}
			sb_addc(out, '}');
			continue;
		}
		for (s = n; found != 0 && s-- > 0;)
			found = member(&st[s], keys[i], &val);
		if (found != 0)
			found = member(base, keys[i], &val);
		sb_add(out, val.buf, val.len);
	}
	sb_addc(out, '}');
	util_strv_free(keys);
	util_strv_free(streams);
	sb_free(&val);
	sb_free(&other);
	return 0;
}

/* End the run that cannot be joined: its failure log, its staging gone, the lock let go. */
static void end_run(struct ctx *c, const char *why)
{
	err_msg("%s", why);
	commit_abort(c->b, c->cfg.name, c->run_id, NULL, why, NULL, NULL);
	runlock_release(&c->lock);
}

/*
 * join -w: until every one of the n shards has staged its plan, or c->wait
 * seconds have passed, looking every few seconds (and the run still holds
 * the lock).  0 to go on (the join says what is missing), -1 error said.
 */
static int wait_for_shards(struct ctx *c, unsigned long n)
{
	time_t end = time(NULL) + c->wait;
	unsigned long i = 0;

	while (c->wait > 0) {
		for (; i < n; i++) {
			char *key = layout_shard_key(c->cfg.name, c->run_id, (long)i);
			int r = bucket_exists(c->b, key);

			free(key);
			if (r < 0)
				return -1;
			if (r == 0)
				break;
		}
		if (i == n || time(NULL) >= end)
			return 0;
		sleep(end - time(NULL) < 5 ? 1 : 5);
		if (fenced(c, "nothing published") != 0)
			return -1;
	}
	return 0;
}

static int cmd_join(struct ctx *c)
{
	struct plan *p = NULL, all;
	struct sb text = SB_INIT, base = SB_INIT, missing = SB_INIT, state = SB_INIT, out = SB_INIT;
	struct json_span basev = { NULL, 0, JSON_NONE }, *st = NULL;
	unsigned long n = 0, i, nmissing = 0;
	size_t errpos, k, m;
	const char *errmsg;
	int ret = CLI_FAILED, r;

	memset(&all, 0, sizeof(all));
	if (fenced(c, "nothing published") != 0 || read_run_plan(c, &n, &base) != 0)
		goto out;
	if (wait_for_shards(c, n) != 0)
		goto out;
	p = xcalloc(n, sizeof(*p));
	st = xcalloc(n, sizeof(*st));
	for (i = 0; i < n; i++) {
		char *key = layout_shard_key(c->cfg.name, c->run_id, (long)i);
		struct sb origin = SB_INIT;

		sb_reset(&text);
		r = bucket_get(c->b, key, &text);
		sb_addf(&origin, "%s/%s", bucket_url(c->b), key);
		free(key);
		if (r == 0 && plan_parse(text.buf, text.len, origin.buf, &p[i]) != 0)
			r = -1;
		sb_free(&origin);
		if (r < 0)
			goto out;
		if (r == 1) {
			sb_addf(&missing, "%s%lu", nmissing++ ? ", " : "", i);
			continue;
		}
	}
	if (nmissing) {
		sb_reset(&text);
		sb_addf(&text, "run %s of pipeline '%s': shard%s %s of %lu did not stage %s part: nothing published",
			c->run_id, c->cfg.name, nmissing > 1 ? "s" : "", missing.buf, n,
			nmissing > 1 ? "their" : "its");
		end_run(c, text.buf);
		goto out;
	}
	/* one plan of them all: the first shard's run line, every shard's lines */
	all = p[0];
	all.files = NULL, all.streams = NULL, all.replaced = NULL;
	all.nfiles = all.nstreams = all.nreplaced = 0;
	all.records = 0;
	all.state = NULL;
	all.ustates = NULL;
	all.error = NULL;
	for (i = 0; i < n; i++) {
		all.files = xrealloc(all.files, (all.nfiles + p[i].nfiles + 1) * sizeof(*all.files));
		/* (memcpy's source may not be NULL, even for no bytes: a shard of no files) */
		if (p[i].nfiles)
			memcpy(all.files + all.nfiles, p[i].files, p[i].nfiles * sizeof(*all.files));
		all.nfiles += p[i].nfiles;
		all.replaced = xrealloc(all.replaced, (all.nreplaced + p[i].nreplaced + 1) * sizeof(*all.replaced));
		if (p[i].nreplaced)
			memcpy(all.replaced + all.nreplaced, p[i].replaced,
			       p[i].nreplaced * sizeof(*all.replaced));
		all.nreplaced += p[i].nreplaced;
		for (k = 0; k < p[i].nstreams; k++) {
			for (m = 0; m < all.nstreams; m++) {
				if (strcmp(all.streams[m].name, p[i].streams[k].name) != 0)
					continue;
				/* a stream split across the shards (shard-split): each
				 * read its part of one table version, which they all
				 * activated */
				if (all.streams[m].activated && p[i].streams[k].activated &&
				    strcmp(all.streams[m].activated, p[i].streams[k].activated) == 0) {
					all.streams[m].records += p[i].streams[k].records;
					break;
				}
				sb_reset(&text);
				sb_addf(&text, "run %s of pipeline '%s': stream '%s' was extracted by two shards: nothing published",
					c->run_id, c->cfg.name, all.streams[m].name);
				end_run(c, text.buf);
				goto out;
			}
			if (m < all.nstreams)
				continue;
			all.streams = xrealloc(all.streams, (all.nstreams + 1) * sizeof(*all.streams));
			all.streams[all.nstreams++] = p[i].streams[k];
		}
		all.records += p[i].records;
		if (p[i].state && json_validate(p[i].state, strlen(p[i].state), &st[i], &errpos, &errmsg) != 0)
			st[i].type = JSON_NONE;
	}
	if (base.len && json_validate(base.buf, base.len, &basev, &errpos, &errmsg) != 0)
		basev.type = JSON_NONE;
	if (merge_states(&basev, st, n, &state) == 0)
		all.state = state.buf;
	plan_format(&all, &out);
	if (fwrite(out.buf, 1, out.len, stdout) != out.len || fflush(stdout) != 0)
		goto out;
	ret = CLI_OK;
out:
	free(all.files);
	free(all.streams);
	free(all.replaced);
	for (i = 0; p && i < n; i++)
		plan_free(&p[i]);
	free(p);
	free(st);
	sb_free(&text);
	sb_free(&base);
	sb_free(&missing);
	sb_free(&state);
	sb_free(&out);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "full", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct ctx c;
	const char *cmd, *file = NULL, *run_arg = NULL, *shard_arg = NULL, *count_arg = NULL;
	const char *wait_arg = NULL;
	char *new_id = NULL, *end;
	int opt, bad, ret = CLI_USAGE;

	err_init_stage(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	if (cli_lock_run() != 0)
		return CLI_FAILED;
	cli_die_with_driver();
	memset(&c, 0, sizeof(c));
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs(help_text, stdout);
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	}
	if (argc < 2 || argv[1][0] == '-') {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	cmd = argv[1];
	argv[1] = argv[0];
	argv++;
	argc--;
	while ((opt = getopt_long(argc, argv, "c:fhn:r:s:S:w:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			file = optarg;
			break;
		case 'f':
			c.full = 1;
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'n':
			count_arg = optarg;
			break;
		case 'r':
			run_arg = optarg;
			break;
		case 's':
			shard_arg = optarg;
			break;
		case 'w':
			wait_arg = optarg;
			break;
		case 'S':
			c.source_file = optarg;
			break;
		default:
			cli_usage(usage_line);
			return CLI_USAGE;
		}
	}
	if (argc - optind > 1 ||
	    (strcmp(cmd, "plan") != 0 && strcmp(cmd, "get") != 0 && strcmp(cmd, "put") != 0 &&
	     strcmp(cmd, "join") != 0 && strcmp(cmd, "source") != 0 && strcmp(cmd, "held") != 0) ||
	    (c.source_file && strcmp(cmd, "get") != 0) ||
	    (strcmp(cmd, "plan") == 0) != (count_arg != NULL) ||
	    (strcmp(cmd, "get") == 0 || strcmp(cmd, "put") == 0) != (shard_arg != NULL) ||
	    (c.full && strcmp(cmd, "plan") != 0) || (wait_arg && strcmp(cmd, "join") != 0)) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (count_arg) {
		errno = 0;
		c.nshards = strtoul(count_arg, &end, 10);
		if (*count_arg < '0' || *count_arg > '9' || *end || errno || c.nshards < 1 ||
		    c.nshards > CATALOG_SHARDS_MAX) {
			err_msg("-n wants a number of shards (1 to %d), not '%s'", CATALOG_SHARDS_MAX, count_arg);
			return CLI_USAGE;
		}
	}
	if (wait_arg) {
		errno = 0;
		c.wait = strtol(wait_arg, &end, 10);
		if (*wait_arg < '0' || *wait_arg > '9' || *end || errno || c.wait > 366L * 86400) {
			err_msg("-w wants a number of seconds (0 to 31622400), not '%s'", wait_arg);
			return CLI_USAGE;
		}
	}
	if (shard_arg && catalog_parse_shard(shard_arg, &c.shard, &c.nshards) != 0) {
		err_msg("-s wants a shard I/N (0 <= I < N <= %d), not '%s'", CATALOG_SHARDS_MAX, shard_arg);
		return CLI_USAGE;
	}
	c.run_id = cli_run_id(run_arg, &bad);
	if (bad)
		return CLI_USAGE;
	if (c.run_id == NULL) {
		if (strcmp(cmd, "plan") != 0) {
			err_msg("%s needs the run's id (-r RUN_ID)", cmd);
			return CLI_USAGE;
		}
		c.run_id = new_id = util_new_run_id();
	}
	if (cli_load_config(file, optind < argc ? argv[optind] : NULL, &c.cfg) != 0) {
		free(new_id);
		return CLI_USAGE;
	}
	c.b = bucket_open_account(c.cfg.bucket, c.cfg.endpoint_url, c.cfg.account_name);
	if (c.b == NULL) {
		ret = CLI_FAILED;
		goto out;
	}
	runlock_init(&c.lock, c.b, c.cfg.name, c.run_id);
	if (strcmp(cmd, "plan") == 0)
		ret = cmd_plan(&c);
	else if (strcmp(cmd, "get") == 0)
		ret = cmd_get(&c);
	else if (strcmp(cmd, "put") == 0)
		ret = cmd_put(&c);
	else if (strcmp(cmd, "source") == 0)
		ret = cmd_source(&c);
	else if (strcmp(cmd, "held") == 0)
		ret = runlock_held(&c.lock) == 1 ? CLI_OK : CLI_FAILED;
	else
		ret = cmd_join(&c);
	runlock_free(&c.lock);
out:
	bucket_free(c.b);
	config_free(&c.cfg);
	free(new_id);
	if (cli_close_stdout() != 0 && ret == CLI_OK)
		ret = CLI_FAILED;
	return ret;
}
