/*
 * pipe-state: the saved Singer state of a pipeline, kept in its bucket.
 * `get` prints it as one JSON line for pipe-tap (and, given a run id, takes
 * the pipeline's run lock and recovers what a dead run left); the other
 * commands are for people and for the dataspoc-pipe driver: show, set,
 * clear, list, unlock; logs, status, manifest; check, probe and validate
 * (validate.c); objects and fetch (objects.c); new-run-id, pipelines, file, check-name, check-cron and
 * check-format.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bucket.h"
#include "check.h"
#include "cli.h"
#include "commit.h"
#include "config.h"
#include "cron.h"
#include "err.h"
#include "json.h"
#include "layout.h"
#include "lock.h"
#include "manifest.h"
#include "pipe_state.h"
#include "report.h"
#include "state.h"
#include "util.h"

static const char usage_line[] =
	"pipe-state get [-f] [-r RUN_ID | -i FILE] NAME | show NAME | set NAME < STATE | clear --force NAME |\n"
	"       list NAME|-b BUCKET | unlock NAME|-b BUCKET | logs [-n K] [-o jsonl|json|text] NAME |\n"
	"       status [-o table|json] [NAME...] | manifest [-o json|table] NAME|-b BUCKET |\n"
	"       check [-p KEY] NAME|-b BUCKET | probe NAME|-b BUCKET | validate [-o text|json] [NAME...] |\n"
	"       objects [-p PREFIX] NAME|-b BUCKET | fetch -p KEY NAME|-b BUCKET |\n"
	"       new-run-id | pipelines | check-name NAME | file NAME | check-cron EXPR |\n"
	"       cron-as cron|systemd EXPR | check-format COMMAND FORMAT\n"
	"       (-c FILE.yaml may replace NAME)";

static const char help_text[] =
	"usage: pipe-state COMMAND [options] NAME\n"
	"       pipe-state COMMAND [options] -c FILE.yaml\n"
	"       pipe-state list|unlock|manifest|probe|objects|fetch [options] -b BUCKET\n"
	"       pipe-state status [-o table|json] [NAME... | -c FILE.yaml]\n"
	"       pipe-state validate [-o text|json] [NAME...]\n"
	"\n"
	"The saved Singer state of a pipeline, kept in its bucket at\n"
	".dataspoc/state/NAME/state.json, and what else the bucket knows about it.\n"
	"\n"
	"Commands:\n"
	"  get       print the state as one JSON line ({} when none, when the pipeline\n"
	"            is not incremental, or with -f); with a run id, first take the\n"
	"            pipeline's run lock and finish or clean up what a dead run left\n"
	"  show      print the state pretty-printed, and who holds the lock\n"
	"  set       replace the state with a Singer STATE value read from stdin\n"
	"  clear     delete the state (needs --force)\n"
	"  list      list the pipelines with a saved state in the bucket\n"
	"  unlock    remove the pipeline's run lock, whoever holds it; with -b, the\n"
	"            bucket's manifest lock (.dataspoc/manifest.lock)\n"
	"  logs      print the pipeline's last run logs, newest first\n"
	"  status    print the last run of each pipeline (default: every pipeline\n"
	"            in $DATASPOC_PIPE_HOME/pipelines)\n"
	"  manifest  print the bucket's catalog, .dataspoc/manifest.json\n"
	"  check     check the pipeline's config and its tap's config, without\n"
	"            touching the bucket or running the tap; warn when the tap's\n"
	"            config holds secrets and others may read it, or still holds\n"
	"            values of dataspoc-pipe add's template; with -b, check BUCKET\n"
	"            as a destination.bucket and print it resolved (a relative\n"
	"            directory against the current directory; -b '' prints\n"
	"            config.yaml's default bucket, and fails when there is none)\n"
	"  probe     write, read back, list and delete a probe object in the bucket,\n"
	"            and see whether it honours conditional creates\n"
	"  objects   print \"VERSION<TAB>KEY\" for each object under -p PREFIX (default:\n"
	"            all), sorted by key; VERSION is the store's (an ETag), or a\n"
	"            local object's size and change time, or - when there is none\n"
	"  fetch     write the object -p KEY to standard output\n"
	"  validate  check each pipeline (default: every pipeline) as dataspoc-pipe\n"
	"            validate does: config, tap (pipe-tap -n), transform (pipe-sink\n"
	"            -n, when there is one), bucket (the probe), secrets and\n"
	"            placeholders (check's warnings); one line a check, \"NAME: CHECK:\n"
	"            ok\", \"NAME: CHECK: FAIL: reason\" or \"NAME: CHECK: WARN: reason\",\n"
	"            or with -o json a list of {\"pipeline\", \"bucket_ok\", \"tap_ok\",\n"
	"            \"ok\", \"errors\", \"checks\"}, one a pipeline\n"
	"  new-run-id  print a new run id (UTC time, milliseconds, random hex)\n"
	"  pipelines   list the pipelines of $DATASPOC_PIPE_HOME/pipelines, sorted\n"
	"  check-name  exit 0 when NAME is a valid pipeline name, else say why and\n"
	"            exit 2\n"
	"  file      print pipelines/NAME.yaml (NAME.yml when only it exists); exit\n"
	"            1 when neither exists, 2 for an invalid NAME\n"
	"  check-cron, check-format COMMAND FORMAT  as check-name, for a\n"
	"            schedule.cron, for an output format of a command; cron-as\n"
	"            cron|systemd EXPR: for export\n"
	"\n";

/* (a string of its own: C11 compilers need take no string over 4095 bytes) */
static const char help_options[] =
	"Options:\n"
	"  -b BUCKET    list, manifest, probe, objects, fetch: this bucket, instead of\n"
	"               a pipeline's;\n"
	"               check: the bucket to check\n"
	"  -c FILE      the pipeline file, instead of NAME\n"
	"  -f, --full   get: print {} (the run ignores the saved state)\n"
	"      --force  clear: really delete\n"
	"  -i FILE      get: a new run id (as new-run-id makes), written to FILE\n"
	"               before anything else, and taken as with -r (one program\n"
	"               less to start than new-run-id)\n"
	"  -n K         logs: the last K run logs (default 1)\n"
	"  -o FORMAT, --output FORMAT\n"
	"               logs: jsonl (default: one compact JSON log a line), json (an\n"
	"               array; without -n, the newest log alone, an object or null)\n"
	"               or text; status: table (default) or json; manifest:\n"
	"               json (default, as stored) or table; validate: text (default)\n"
	"               or json\n"
	"  -p KEY       check: print one setting of the loaded config (bucket, path,\n"
	"               compression, incremental, cron, tap, name, file; shard-split:\n"
	"               true when source.metadata splits a stream across shards);\n"
	"               nothing when it is not set; objects: the prefix of the keys\n"
	"               (\"raw/pg/\"); fetch: the object's key\n"
	"  -r RUN_ID    get: the run's id (default $DATASPOC_RUN_ID)\n"
	"  -h, --help   this help\n"
	"  --version    its version\n";

/* (apart: one string may be at most 4095 bytes in C99) */
static const char help_exit[] =
	"\n"
	"Exit status: 0 success, 1 failure (a bucket error, the lock is held, a\n"
	"pipeline's status could not be read, the probe failed, a check of validate\n"
	"failed), 2 bad usage or config (an unknown pipeline too), 75 get: the\n"
	"lock is held by another run.\n";

static int cmd_get(struct bucket *b, const struct pipe_config *cfg, const char *run_id, int full)
{
	struct sb out = SB_INIT;
	struct runlock lock;
	int ret = CLI_FAILED, r = 1, locked = 0, write_errno = 0;

	runlock_init(&lock, b, cfg->name, run_id);
	if (run_id) {
		r = runlock_take(&lock);
		if (r == 1)
			ret = CLI_LOCKED;
		if (r != 0)
			goto out;
		locked = 1;
		if (commit_recover(b, cfg->name, run_id) != 0 ||
		    commit_log_lost(b, cfg->name, &lock) != 0)
			goto out;
	}
	if (cfg->incremental && !full) {
		r = state_load(b, cfg->name, &out);
		if (r < 0)
			goto out;
	} else {
		r = 1;
	}
	if (r == 1) {
		sb_reset(&out);
		sb_adds(&out, "{}");
	}
	sb_addc(&out, '\n');
	fwrite(out.buf, 1, out.len, stdout);
	/* Nobody got the state, so the run will not go on: keep no lock for
	 * it.  main reports the write error, with its errno. */
	if (fflush(stdout) != 0) {
		write_errno = errno;
		goto out;
	}
	ret = CLI_OK;
	locked = 0;
out:
	if (locked)
		runlock_release(&lock);
	sb_free(&out);
	runlock_free(&lock);
	if (write_errno)
		errno = write_errno;
	return ret;
}

static int cmd_show(struct bucket *b, const struct pipe_config *cfg)
{
	struct sb text = SB_INIT;
	char *key = layout_state_key(cfg->name);
	char *lock = layout_lock_key(cfg->name);
	int r = bucket_get(b, key, &text), ret = CLI_FAILED;

	if (r < 0)
		goto out;
	if (r == 1) {
		printf("no saved state for pipeline '%s' (%s/%s)\n", cfg->name, bucket_url(b), key);
	} else {
		fwrite(text.buf, 1, text.len, stdout);
		if (text.len && text.buf[text.len - 1] != '\n')
			putchar('\n');
	}
	sb_reset(&text);
	r = bucket_get(b, lock, &text);
	if (r < 0)
		goto out;
	if (r == 0)
		fprintf(stderr, "locked: %s", text.buf);
	ret = CLI_OK;
out:
	sb_free(&text);
	free(key);
	free(lock);
	return ret;
}

/* Change the state under the run lock, so no run commits meanwhile. */
static int locked_change(struct bucket *b, const struct pipe_config *cfg, const struct sb *pretty)
{
	char *key = layout_state_key(cfg->name);
	char *run_id = util_new_run_id();
	struct runlock lock;
	int ret = CLI_FAILED;

	runlock_init(&lock, b, cfg->name, run_id);
	if (runlock_take_here(&lock, 600) != 0)
		goto out;
	/* (a run it took the lock of is logged, then the state changes) */
	if (commit_log_lost(b, cfg->name, &lock) != 0) {
		runlock_release(&lock);
		goto out;
	}
	if ((pretty ? bucket_put(b, key, pretty->buf, pretty->len) : bucket_delete(b, key)) == 0)
		ret = CLI_OK;
	if (runlock_release(&lock) != 0)
		ret = CLI_FAILED;
out:
	runlock_free(&lock);
	free(key);
	free(run_id);
	return ret;
}

static int cmd_set(struct bucket *b, const struct pipe_config *cfg)
{
	struct sb in = SB_INIT, pretty = SB_INIT;
	int ret = CLI_FAILED;

	if (util_read_fd(STDIN_FILENO, &in) != 0) {
		err_msg("cannot read stdin:");
		goto out;
	}
	if (state_check(in.buf ? in.buf : "", in.len, "<stdin>", &pretty) != 0) {
		ret = CLI_USAGE;
		goto out;
	}
	ret = locked_change(b, cfg, &pretty);
out:
	sb_free(&in);
	sb_free(&pretty);
	return ret;
}

static int cmd_list(struct bucket *b)
{
	char **keys = NULL;
	size_t n = 0, i;

	if (bucket_list(b, LAYOUT_STATE_PREFIX, &keys, &n) != 0)
		return CLI_FAILED;
	for (i = 0; i < n; i++) {
		size_t len = layout_state_pipeline(keys[i]);

		if (len > 0)
			printf("%.*s\n", (int)len, keys[i] + sizeof(LAYOUT_STATE_PREFIX) - 1);
	}
	util_strv_free(keys);
	return CLI_OK;
}

/* unlock -b BUCKET: the bucket's manifest lock, whoever holds it. */
static int cmd_unlock_manifest(struct bucket *b)
{
	struct sb text = SB_INIT;
	int r, ret = CLI_FAILED;

	r = bucket_get(b, LAYOUT_MANIFEST_LOCK_KEY, &text);
	if (r < 0)
		goto out;
	if (r == 1) {
		fprintf(stderr, "the manifest of %s is not locked\n", bucket_url(b));
	} else {
		if (bucket_delete(b, LAYOUT_MANIFEST_LOCK_KEY) != 0)
			goto out;
		fprintf(stderr, "removed the manifest lock of %s: %s", bucket_url(b), text.buf ? text.buf : "\n");
	}
	ret = CLI_OK;
out:
	sb_free(&text);
	return ret;
}

static int cmd_unlock(struct bucket *b, const struct pipe_config *cfg)
{
	struct sb text = SB_INIT;
	struct runlock lock;
	int r, ret = CLI_FAILED;

	/* no run id: whoever holds it */
	runlock_init(&lock, b, cfg->name, NULL);
	r = bucket_get(b, lock.key, &text);
	if (r < 0)
		goto out;
	if (r == 1) {
		fprintf(stderr, "pipeline '%s' is not locked\n", cfg->name);
	} else {
		if (runlock_release(&lock) != 0)
			goto out;
		fprintf(stderr, "removed the lock of pipeline '%s': %s", cfg->name, text.buf);
		/* its run, gone (or stopped by this), logged unless it did so */
		lock.taken_over = lock_run_id(&text);
		if (lock.taken_over) {
			lock.taken_why = xstrdup("stopped: its lock was removed by hand (pipe-state unlock)");
			if (commit_log_lost(b, cfg->name, &lock) != 0)
				goto out;
		}
	}
	ret = CLI_OK;
out:
	sb_free(&text);
	runlock_free(&lock);
	return ret;
}

enum format { FMT_DEFAULT, FMT_JSONL, FMT_JSON, FMT_TEXT, FMT_TABLE };

/*
 * The last max run logs; with one (no -n), -o json prints the newest as an
 * object, as the Python tool does, or null when there is none.
 */
static int cmd_logs(struct bucket *b, const struct pipe_config *cfg, size_t max, int one,
		    enum format fmt)
{
	struct sb out = SB_INIT;
	char **logs = NULL;
	size_t n = 0, i;

	if (report_logs(b, cfg->name, max, &logs, &n) != 0)
		return CLI_FAILED;
	/* a failure the bucket could not be told of, as status shows it */
	report_logs_local(cfg->name, max, &logs, &n);
	if (fmt == FMT_JSON && one) {
		sb_adds(&out, n ? logs[0] : "null");
		sb_addc(&out, '\n');
		n = 0;
	} else if (fmt == FMT_JSON)
		sb_adds(&out, n ? "[\n" : "[]\n");
	for (i = 0; i < n; i++) {
		if (fmt == FMT_TEXT) {
			if (i)
				sb_addc(&out, '\n');
			report_log_text(logs[i], &out);
		} else {
			sb_adds(&out, fmt == FMT_JSON ? "  " : "");
			sb_adds(&out, logs[i]);
			sb_adds(&out, fmt == FMT_JSON && i + 1 < n ? ",\n" : "\n");
		}
	}
	if (fmt == FMT_JSON && n)
		sb_adds(&out, "]\n");
	if (logs[0] == NULL && fmt == FMT_TEXT)
		fprintf(stderr, "pipeline '%s' has no run logs in %s\n", cfg->name, bucket_url(b));
	if (out.len)
		fwrite(out.buf, 1, out.len, stdout);
	sb_free(&out);
	util_strv_free(logs);
	return CLI_OK;
}

/* status NAME... (none: every pipeline), or status -c FILE (file: one pipeline, by its file) */
static int cmd_status(char **names, size_t n, const char *file, enum format fmt)
{
	struct report_status *rows;
	char **all = NULL, ***logs, **why, **local, *file_name = NULL;
	struct sb out = SB_INIT;
	size_t i;
	int ret = CLI_OK, unknown = 0, missing;

	if (file) {
		n = 1;
	} else if (n == 0) {
		if (config_pipelines(&all, &n) != 0)
			return CLI_FAILED;
		names = all;
		if (n == 0 && fmt != FMT_JSON) {
			/* (a table's header alone said nothing) */
			err_msg("no pipelines in %s/pipelines (dataspoc-pipe add NAME makes one)",
				config_home());
			util_strv_free(all);
			return CLI_OK;
		}
	}
	rows = xcalloc(n ? n : 1, sizeof(*rows));
	logs = xcalloc(n ? n : 1, sizeof(*logs));
	why = xcalloc(n ? n : 1, sizeof(*why));
	local = xcalloc(n ? n : 1, sizeof(*local));
	for (i = 0; i < n; i++) {
		struct pipe_config cfg;
		struct bucket *b = NULL;
		char *context, said[1024];
		unsigned long mark = err_said();

		rows[i].name = file ? file : names[i];
		rows[i].error = 1;
		if (file) {
			if (config_load_file(file, &cfg) != 0) {
				unknown = 1;
				if (err_said() != mark && err_last(said, sizeof(said)) == 0)
					rows[i].why = why[i] = xstrdup(said);
				continue;
			}
			rows[i].name = file_name = xstrdup(cfg.name);
		} else if (config_load_name(names[i], &cfg) != 0) {
			free(config_pipeline_file(names[i], &missing));
			unknown |= missing;
			/* the reason, for JSON readers (MCP's pipeline_status) too */
			if (err_said() != mark && err_last(said, sizeof(said)) == 0)
				rows[i].why = why[i] = xstrdup(said);
			continue;
		}
		/* a bucket that cannot be read says whose it is */
		context = xasprintf("pipeline '%s'", cfg.name);
		err_context = context;
		b = bucket_open_account(cfg.bucket, cfg.endpoint_url, cfg.account_name);
		if (b && report_last_extraction(b, cfg.name, &logs[i], &rows[i].log, &rows[i].compact) == 0) {
			/* a later failure the bucket could not be told of */
			rows[i].log = report_newest(cfg.name, rows[i].log, &local[i]);
			rows[i].error = 0;
		} else if (err_said() != mark && err_last(said, sizeof(said)) == 0) {
			rows[i].why = why[i] = xstrdup(said);
		}
		err_context = NULL;
		free(context);
		bucket_free(b);
		config_free(&cfg);
	}
	for (i = 0; i < n; i++) {
		if (rows[i].error)
			ret = CLI_FAILED;
	}
	if (unknown)
		ret = CLI_USAGE;
	report_status(rows, n, fmt == FMT_JSON, &out);
	fwrite(out.buf, 1, out.len, stdout);
	for (i = 0; i < n; i++) {
		util_strv_free(logs[i]);
		free(why[i]);
		free(local[i]);
	}
	free(why);
	free(local);
	free(logs);
	free(rows);
	free(file_name);
	sb_free(&out);
	util_strv_free(all);
	return ret;
}

static int cmd_manifest(struct bucket *b, enum format fmt)
{
	struct sb text = SB_INIT, out = SB_INIT;
	char *origin = xasprintf("%s/%s", bucket_url(b), LAYOUT_MANIFEST_KEY);
	int r = bucket_get(b, LAYOUT_MANIFEST_KEY, &text), ret = CLI_FAILED;

	if (r == 1) {
		/* as the Python tool: an empty manifest, no error */
		fprintf(stderr, "no manifest in bucket '%s' (%s): no pipeline has landed data there "
			"yet\n", bucket_url(b), LAYOUT_MANIFEST_KEY);
		if (fmt != FMT_TABLE)
			puts(MANIFEST_EMPTY);
		ret = CLI_OK;
		goto out;
	}
	if (r != 0)
		goto out;
	if (report_manifest(text.buf ? text.buf : "", text.len, origin, fmt != FMT_TABLE, &out) != 0)
		goto out;
	fwrite(out.buf, 1, out.len, stdout);
	ret = CLI_OK;
out:
	sb_free(&text);
	sb_free(&out);
	free(origin);
	return ret;
}

static int cmd_probe(struct bucket *b)
{
	int conditional;

	if (check_probe(b, &conditional) != 0)
		return CLI_FAILED;
	printf("write, read back, list, delete: ok\nconditional create: %s\n",
	       conditional ? "honoured" : "not honoured");
	if (!conditional)
		err_warn("%s does not itself refuse to create an object that exists: run locks "
			 "look before they write, which leaves a short window to two runs of one "
			 "pipeline started at the same moment", bucket_url(b));
	return CLI_OK;
}


/* Whether source.metadata sets "shard-split": true for some streams (docs/SCALE.md). */
static int metadata_splits(const struct pipe_config *cfg)
{
	struct json_span v, pat, kv, m;
	size_t pos = 0, errpos;
	const char *errmsg;

	if (cfg->metadata_json == NULL ||
	    json_validate(cfg->metadata_json, strlen(cfg->metadata_json), &v, &errpos, &errmsg) != 0 ||
	    v.type != JSON_OBJECT)
		return 0;
	while (json_object_next(&v, &pos, &pat, &kv)) {
		if (kv.type == JSON_OBJECT && json_object_get(&kv, "shard-split", &m) == 1 &&
		    m.type == JSON_TRUE)
			return 1;
	}
	return 0;
}

static int cmd_check(const struct pipe_config *cfg, const char *key)
{
	struct sb secrets = SB_INIT, placeholders = SB_INIT;
	const char *v = NULL;
	int r;

	if (key) {
		if (strcmp(key, "bucket") == 0)
			v = cfg->bucket;
		else if (strcmp(key, "path") == 0)
			v = cfg->path;
		else if (strcmp(key, "compression") == 0)
			v = config_compression_name(cfg->compression);
		else if (strcmp(key, "incremental") == 0)
			v = cfg->incremental ? "true" : "false";
		else if (strcmp(key, "cron") == 0)
			v = cfg->cron;
		else if (strcmp(key, "tap") == 0)
			v = cfg->tap_argv ? cfg->tap_argv[0] : NULL;
		else if (strcmp(key, "name") == 0)
			v = cfg->name;
		else if (strcmp(key, "file") == 0)
			v = cfg->file;
		else if (strcmp(key, "shard-split") == 0)
			v = metadata_splits(cfg) ? "true" : NULL;
		else {
			err_msg("check -p: unknown key '%s' (bucket, path, compression, incremental, "
				"cron, tap, name, file, shard-split)", key);
			return CLI_USAGE;
		}
		if (v)
			printf("%s\n", v);
		return CLI_OK;
	}
	r = check_config(cfg, &secrets, &placeholders);
	if (r == 0 && placeholders.len)
		err_warn("%s", placeholders.buf);
	if (r == 0 && secrets.len)
		err_warn("%s", secrets.buf);
	sb_free(&placeholders);
	sb_free(&secrets);
	if (r != 0)
		return CLI_USAGE;
	printf("pipeline '%s': ok\n", cfg->name);
	return CLI_OK;
}

/* check -b: a bucket checked and resolved as a pipeline file here would have it. */
static int cmd_check_bucket(const char *bucket)
{
	struct sb why = SB_INIT;
	char *cwd = NULL, *out = NULL;
	int ret = CLI_USAGE;

	if (*bucket == '\0') {
		if (config_default_bucket(&out) != 0)
			return CLI_USAGE;
		if (out == NULL) {
			err_msg("no bucket: %s/config.yaml gives no destination.bucket", config_home());
			return CLI_USAGE;
		}
	} else if ((cwd = getcwd(NULL, 0)) == NULL) {
		err_msg("cannot find the current directory:");
		return CLI_FAILED;
	} else if ((out = config_bucket_resolve(bucket, cwd, NULL, &why)) == NULL) {
		err_msg("%s", why.buf);
		goto out;
	}
	printf("%s\n", out);
	ret = CLI_OK;
out:
	sb_free(&why);
	free(cwd);
	free(out);
	return ret;
}

/* The output formats of each command: text is every command's human format, table its other name. */
static const struct {
	const char *cmd, *name;
	enum format fmt;
} formats[] = {
	{ "logs", "jsonl", FMT_JSONL }, { "logs", "json", FMT_JSON }, { "logs", "text", FMT_TEXT },
	{ "logs", "table", FMT_TEXT },
	{ "status", "text", FMT_TABLE }, { "status", "table", FMT_TABLE }, { "status", "json", FMT_JSON },
	{ "manifest", "json", FMT_JSON }, { "manifest", "text", FMT_TABLE }, { "manifest", "table", FMT_TABLE },
	{ "validate", "text", FMT_TEXT }, { "validate", "table", FMT_TEXT }, { "validate", "json", FMT_JSON },
};

/* FORMAT of command cmd into *fmt, else said, with the formats to use, and -1. */
static int parse_format(const char *cmd, const char *arg, enum format *fmt)
{
	static const char *const order[] = { "text", "json", "jsonl" };
	struct sb use = SB_INIT;
	size_t i, j;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (strcmp(formats[i].cmd, cmd) == 0 && strcmp(formats[i].name, arg) == 0) {
			*fmt = formats[i].fmt;
			return 0;
		}
	}
	for (j = 0; j < sizeof(order) / sizeof(order[0]); j++) {
		for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
			if (strcmp(formats[i].cmd, cmd) == 0 && strcmp(formats[i].name, order[j]) == 0) {
				sb_addf(&use, "%s%s", use.len ? " " : "", order[j]);
				break;
			}
		}
	}
	if (use.len)
		err_msg("%s: unknown output format '%s' (use %s)", cmd, arg, use.buf);
	else
		err_msg("%s: no output formats", cmd);
	sb_free(&use);
	return -1;
}

/* What a command works on: its options and arguments, the loaded pipeline, the bucket. */
struct ctx {
	const char *cmd;
	struct pipe_config cfg;
	struct bucket *b;
	const char *bucket, *key, *run_id;
	char **names;		/* the NAMEs of status, validate, check-name */
	const char *file;	/* status -c FILE */
	size_t nnames;
	enum format fmt;
	unsigned long max;
	int one;		/* no -n: logs -o json prints one object */
	int full;
};

static int run_get(struct ctx *c) { return cmd_get(c->b, &c->cfg, c->run_id, c->full); }
static int run_show(struct ctx *c) { return cmd_show(c->b, &c->cfg); }
static int run_set(struct ctx *c) { return cmd_set(c->b, &c->cfg); }
static int run_clear(struct ctx *c) { return locked_change(c->b, &c->cfg, NULL); }
static int run_list(struct ctx *c) { return cmd_list(c->b); }
static int run_unlock(struct ctx *c)
{
	return c->bucket ? cmd_unlock_manifest(c->b) : cmd_unlock(c->b, &c->cfg);
}
static int run_manifest(struct ctx *c) { return cmd_manifest(c->b, c->fmt); }
static int run_probe(struct ctx *c) { return cmd_probe(c->b); }
static int run_objects(struct ctx *c) { return objects_list(c->b, c->key); }

static int run_fetch(struct ctx *c)
{
	if (c->key == NULL) {
		err_msg("fetch: give the object's key with -p KEY");
		return CLI_USAGE;
	}
	return objects_fetch(c->b, c->key);
}

static int run_logs(struct ctx *c)
{
	return cmd_logs(c->b, &c->cfg, c->max, c->one, c->fmt == FMT_DEFAULT ? FMT_JSONL : c->fmt);
}

static int run_status(struct ctx *c)
{
	return cmd_status(c->names, c->nnames, c->file, c->fmt);
}

static int run_validate(struct ctx *c)
{
	return validate_pipelines(c->names, c->nnames, c->fmt == FMT_JSON);
}

/* check: a check touches no bucket (opening a local one would create it) */
static int run_check(struct ctx *c)
{
	return c->bucket ? cmd_check_bucket(c->bucket) : cmd_check(&c->cfg, c->key);
}

/* A new run id, for the driver (util_new_run_id()). */
static int run_new_run_id(struct ctx *c)
{
	char *id = util_new_run_id();

	(void)c;
	printf("%s\n", id);
	free(id);
	return CLI_OK;
}

/* The pipelines of $DATASPOC_PIPE_HOME, one a line, sorted. */
static int run_pipelines(struct ctx *c)
{
	char **names = NULL;
	size_t n = 0, i;

	(void)c;
	if (config_pipelines(&names, &n) != 0)
		return CLI_FAILED;
	for (i = 0; i < n; i++)
		printf("%s\n", names[i]);
	util_strv_free(names);
	return CLI_OK;
}

/* The driver's check of a NAME it is given: config_valid_name(). */
static int run_check_name(struct ctx *c)
{
	if (c->nnames != 1) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	return config_name_ok(c->names[0]) ? CLI_OK : CLI_USAGE;
}

/* The driver's check of an output format: check-format COMMAND FORMAT. */
static int run_check_format(struct ctx *c)
{
	enum format fmt;

	if (c->nnames != 2) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	return parse_format(c->names[0], c->names[1], &fmt) == 0 ? CLI_OK : CLI_USAGE;
}

/* The driver's check of a schedule: check-cron EXPR, as a pipeline's schedule.cron. */
static int run_check_cron(struct ctx *c)
{
	struct sb why = SB_INIT;
	int ret = CLI_OK;

	if (c->nnames != 1) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (cron_explain(c->names[0], &why) != 0) {
		err_msg("%s", why.buf);
		ret = CLI_USAGE;
	}
	sb_free(&why);
	return ret;
}

/* A schedule for another scheduler (export): cron-as cron|systemd EXPR. */
static int run_cron_as(struct ctx *c)
{
	struct sb out = SB_INIT, why = SB_INIT;
	enum cron_form form;
	int ret = CLI_USAGE;

	if (c->nnames != 2) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (strcmp(c->names[0], "cron") == 0) {
		form = CRON_FORM_CRON;
	} else if (strcmp(c->names[0], "systemd") == 0) {
		form = CRON_FORM_SYSTEMD;
	} else {
		err_msg("cron-as: unknown form '%s' (cron, systemd)", c->names[0]);
		return CLI_USAGE;
	}
	if (cron_convert(c->names[1], form, &out, &why) != 0) {
		err_msg("%s", why.buf);
	} else {
		fwrite(out.buf, 1, out.len, stdout);
		ret = CLI_OK;
	}
	sb_free(&out);
	sb_free(&why);
	return ret;
}

/* The file of pipeline NAME (config_pipeline_file()): 0 when it exists, 1 when not. */
static int run_file(struct ctx *c)
{
	char *file;
	int missing;

	if (c->nnames != 1) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (!config_name_ok(c->names[0]))
		return CLI_USAGE;
	file = config_pipeline_file(c->names[0], &missing);
	printf("%s\n", file);
	free(file);
	return missing ? CLI_FAILED : CLI_OK;
}

/* What a command takes (besides -c FILE or NAME, which all but these take). */
#define TAKES_BUCKET	0x01	/* -b BUCKET instead of a pipeline */
#define TAKES_KEY	0x02	/* -p KEY */
#define TAKES_COUNT	0x04	/* -n K */
#define TAKES_NAMES	0x08	/* NAME... (none: every pipeline), no -c */
#define NO_PIPELINE	0x10	/* neither NAME nor -c */
#define NO_BUCKET	0x20	/* the pipeline's bucket is not opened */
#define NEEDS_FORCE	0x40	/* --force */
#define OR_FILE		0x80	/* with TAKES_NAMES: or -c FILE alone */
#define KEY_IN_BUCKET	0x100	/* -p KEY is a key of the bucket: with -b too */

static const struct command {
	const char *name;
	unsigned flags;
	int (*run)(struct ctx *c);
} commands[] = {
	{ "get", 0, run_get },
	{ "show", 0, run_show },
	{ "set", 0, run_set },
	{ "clear", NEEDS_FORCE, run_clear },
	{ "list", TAKES_BUCKET, run_list },
	{ "unlock", TAKES_BUCKET, run_unlock },
	{ "logs", TAKES_COUNT, run_logs },
	{ "status", TAKES_NAMES | OR_FILE | NO_BUCKET, run_status },
	{ "manifest", TAKES_BUCKET, run_manifest },
	{ "check", TAKES_BUCKET | TAKES_KEY | NO_BUCKET, run_check },
	{ "probe", TAKES_BUCKET, run_probe },
	{ "objects", TAKES_BUCKET | TAKES_KEY | KEY_IN_BUCKET, run_objects },
	{ "fetch", TAKES_BUCKET | TAKES_KEY | KEY_IN_BUCKET, run_fetch },
	{ "validate", TAKES_NAMES | NO_BUCKET, run_validate },
	{ "new-run-id", NO_PIPELINE | NO_BUCKET, run_new_run_id },
	{ "pipelines", NO_PIPELINE | NO_BUCKET, run_pipelines },
	{ "check-name", TAKES_NAMES | NO_BUCKET, run_check_name },
	{ "check-cron", TAKES_NAMES | NO_BUCKET, run_check_cron },
	{ "cron-as", TAKES_NAMES | NO_BUCKET, run_cron_as },
	{ "check-format", TAKES_NAMES | NO_BUCKET, run_check_format },
	{ "file", TAKES_NAMES | NO_BUCKET, run_file },
};

/*
 * After a failure with -b s3://... or gs://...: no pipeline's
 * destination.endpoint_url applies, so without AWS_ENDPOINT_URL the store
 * asked was the profile's endpoint or the provider's own; say how to name
 * another (a manifest "s3://lake" of s3rver's went to AWS, issue #29).
 */
static void endpoint_hint(const char *bucket)
{
	const char *e1 = getenv("AWS_ENDPOINT_URL_S3"), *e2 = getenv("AWS_ENDPOINT_URL");

	if (strncmp(bucket, "s3://", 5) != 0 && strncmp(bucket, "gs://", 5) != 0)
		return;
	if ((e1 && *e1) || (e2 && *e2))
		return;
	err_msg("hint: '%s' was asked at the AWS profile's endpoint_url, else %s's own, not at "
		"a pipeline's destination.endpoint_url: set AWS_ENDPOINT_URL, or give -c FILE.yaml",
		bucket, bucket[0] == 's' ? "AWS" : "Google");
}

static const struct command *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "full", no_argument, NULL, 'f' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 }
	};
	const struct command *cmd;
	struct ctx c;
	const char *file = NULL, *run_arg = NULL, *id_file = NULL;
	char *end, *new_id = NULL, *bucket_arg = NULL;
	unsigned flags;
	int opt, force = 0, have_n = 0, bad, ret = CLI_USAGE, nargs;

	err_init_stage(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	if (cli_lock_run() != 0)
		return CLI_FAILED;
	cli_die_with_driver();
	memset(&c, 0, sizeof(c));
	c.fmt = FMT_DEFAULT;
	c.max = 1;
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs(help_text, stdout);
		fputs(help_options, stdout);
		fputs(help_exit, stdout);
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	}
	if (argc < 2 || argv[1][0] == '-') {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	c.cmd = argv[1];
	argv[1] = argv[0];	/* getopt's messages name the program, not the command */
	argv++;
	argc--;
	cmd = find_command(c.cmd);
	if (cmd == NULL) {
		err_msg("unknown command '%s'", c.cmd);
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	flags = cmd->flags;
	while ((opt = getopt_long(argc, argv, "b:c:fhi:n:o:p:r:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			c.bucket = optarg;
			break;
		case 'c':
			file = optarg;
			break;
		case 'f':
			c.full = 1;
			break;
		case 'F':
			force = 1;
			break;
		case 'h':
			fputs(help_text, stdout);
			fputs(help_options, stdout);
			fputs(help_exit, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'i':
			id_file = optarg;
			break;
		case 'n':
			c.max = strtoul(optarg, &end, 10);
			if (*optarg < '0' || *optarg > '9' || *end != '\0' || c.max == 0) {
				err_msg("-n wants a number of run logs (1 or more), not '%s'", optarg);
				return CLI_USAGE;
			}
			have_n = 1;
			break;
		case 'o':
			if (parse_format(c.cmd, optarg, &c.fmt) != 0)
				return CLI_USAGE;
			break;
		case 'p':
			c.key = optarg;
			break;
		case 'r':
			run_arg = optarg;
			break;
		default:
			cli_usage(usage_line);
			return CLI_USAGE;
		}
	}
	nargs = argc - optind;
	c.one = !have_n;
	if ((c.bucket && !(flags & TAKES_BUCKET)) || (c.key && !(flags & TAKES_KEY)) ||
	    (c.bucket && c.key && !(flags & KEY_IN_BUCKET)) || (have_n && !(flags & TAKES_COUNT)) ||
	    (c.bucket && (file || nargs > 0)) ||
	    ((flags & TAKES_NAMES) ? file != NULL && (!(flags & OR_FILE) || nargs > 0) : nargs > 1) ||
	    ((flags & NO_PIPELINE) && (file || nargs > 0)) ||
	    (id_file && (run_arg || strcmp(c.cmd, "get") != 0))) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	/* get begins a run, validate checks: they say the keys they pass over */
	config_unknown_warn = strcmp(c.cmd, "get") == 0 || strcmp(c.cmd, "validate") == 0;
	if ((flags & NEEDS_FORCE) && !force) {
		err_msg("%s deletes the saved state: add --force to do it", c.cmd);
		return CLI_USAGE;
	}
	/* (-i makes the run id: $DATASPOC_RUN_ID does not count) */
	c.run_id = id_file ? NULL : cli_run_id(run_arg, &bad);
	if (!id_file && bad)
		return CLI_USAGE;
	if (id_file) {
		FILE *f = fopen(id_file, "w");
		int werr;

		c.run_id = new_id = util_new_run_id();
		werr = f == NULL || fprintf(f, "%s\n", new_id) < 0;
		if ((f != NULL && fclose(f) != 0) || werr) {
			err_msg("cannot write the run id to '%s':", id_file);
			free(new_id);
			return CLI_FAILED;
		}
	}
	if ((flags & TAKES_BUCKET) && c.bucket == NULL && file == NULL && nargs == 0) {
		/* (cli_load_config() would name NAME and -c FILE only) */
		err_msg("%s: no pipeline: give a NAME, -c FILE or -b BUCKET", c.cmd);
		return CLI_USAGE;
	}
	if (flags & TAKES_NAMES) {
		c.names = argv + optind;
		c.nnames = (size_t)nargs;
		c.file = file;
	} else if (!(flags & NO_PIPELINE) && c.bucket == NULL &&
		   cli_load_config(file, nargs > 0 ? argv[optind] : NULL, &c.cfg) != 0) {
		return CLI_USAGE;
	}
	if (c.bucket && !(flags & NO_BUCKET)) {
		/* the rule of a pipeline's destination.bucket, as if written here */
		struct sb why = SB_INIT;
		char *cwd = getcwd(NULL, 0);

		if (cwd == NULL) {
			err_msg("cannot find the current directory:");
			ret = CLI_FAILED;
			goto out;
		}
		c.bucket = bucket_arg = config_bucket_resolve(c.bucket, cwd, "bucket", &why);
		free(cwd);
		if (bucket_arg == NULL) {
			err_msg("%s", why.buf);
			sb_free(&why);
			goto out;
		}
	}
	if (!(flags & NO_BUCKET)) {
		c.b = bucket_open_account(c.bucket ? c.bucket : c.cfg.bucket, c.bucket ? NULL : c.cfg.endpoint_url,
					  c.bucket ? NULL : c.cfg.account_name);
		if (c.b == NULL) {
			ret = CLI_FAILED;
			goto out;
		}
	}
	ret = cmd->run(&c);
	if (ret == CLI_FAILED && bucket_arg)
		endpoint_hint(bucket_arg);
out:
	free(bucket_arg);
	bucket_free(c.b);
	config_free(&c.cfg);
	free(new_id);
	if (cli_close_stdout() != 0 && ret == CLI_OK)
		ret = CLI_FAILED;
	return ret;
}
