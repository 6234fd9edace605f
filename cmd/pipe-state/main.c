/*
 * pipe-state: the saved Singer state of a pipeline, kept in its bucket.
 * `get` prints it as one JSON line for pipe-tap (and, given a run id, takes
 * the pipeline's run lock and recovers what a dead run left); the other
 * commands are for people: show, set, clear, list, unlock.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bucket.h"
#include "cli.h"
#include "commit.h"
#include "config.h"
#include "err.h"
#include "lock.h"
#include "state.h"
#include "util.h"

static const char usage_line[] =
	"pipe-state get [-f] [-r RUN_ID] NAME | show NAME | set NAME < STATE | clear --force NAME |\n"
	"       list NAME | unlock NAME      (-c FILE.yaml may replace NAME)";

static const char help_text[] =
	"usage: pipe-state COMMAND [options] NAME\n"
	"       pipe-state COMMAND [options] -c FILE.yaml\n"
	"\n"
	"The saved Singer state of a pipeline, kept in its bucket at\n"
	".dataspoc/state/NAME/state.json.\n"
	"\n"
	"Commands:\n"
	"  get      print the state as one JSON line ({} when none, when the pipeline\n"
	"           is not incremental, or with -f); with a run id, first take the\n"
	"           pipeline's run lock and finish or clean up what a dead run left\n"
	"  show     print the state pretty-printed, and who holds the lock\n"
	"  set      replace the state with a Singer STATE value read from stdin\n"
	"  clear    delete the state (needs --force)\n"
	"  list     list the pipelines with a saved state in the pipeline's bucket\n"
	"  unlock   remove the pipeline's run lock, whoever holds it\n"
	"\n"
	"Options:\n"
	"  -c FILE      the pipeline file, instead of NAME\n"
	"  -f, --full   get: print {} (the run ignores the saved state)\n"
	"  -r RUN_ID    get: the run's id (default $DATASPOC_RUN_ID)\n"
	"      --force  clear: really delete\n"
	"  -h, --help   this help\n"
	"\n"
	"Exit status: 0 success, 1 failure (a bucket error, the lock is held),\n"
	"2 bad usage or config.\n";

static int cmd_get(struct bucket *b, const struct pipe_config *cfg, const char *run_id, int full)
{
	struct sb out = SB_INIT;
	char *lock = util_lock_key(cfg->name);
	char *what = xasprintf("pipeline '%s'", cfg->name);
	int ret = CLI_FAILED, r = 1, locked = 0;

	if (run_id) {
		r = lock_take(b, lock, what, run_id, cli_lock_pid(), lock_default_ttl(), 0);
		if (r != 0)
			goto out;
		locked = 1;
		if (commit_recover(b, cfg->name, run_id) != 0)
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
	ret = CLI_OK;
	locked = 0;
out:
	if (locked)
		lock_release(b, lock, run_id);
	sb_free(&out);
	free(lock);
	free(what);
	return ret;
}

static int cmd_show(struct bucket *b, const struct pipe_config *cfg)
{
	struct sb text = SB_INIT;
	char *key = util_state_key(cfg->name);
	char *lock = util_lock_key(cfg->name);
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
	char *lock = util_lock_key(cfg->name);
	char *key = util_state_key(cfg->name);
	char *what = xasprintf("pipeline '%s'", cfg->name);
	char *run_id = util_new_run_id();
	int ret = CLI_FAILED;

	if (lock_take(b, lock, what, run_id, (long)getpid(), 600, 0) != 0)
		goto out;
	if ((pretty ? bucket_put(b, key, pretty->buf, pretty->len) : bucket_delete(b, key)) == 0)
		ret = CLI_OK;
	if (lock_release(b, lock, run_id) != 0)
		ret = CLI_FAILED;
out:
	free(lock);
	free(key);
	free(what);
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
	static const char prefix[] = ".dataspoc/state/", tail[] = "/state.json";

	if (bucket_list(b, prefix, &keys, &n) != 0)
		return CLI_FAILED;
	for (i = 0; i < n; i++) {
		size_t len = strlen(keys[i]);
		const char *name = keys[i] + sizeof(prefix) - 1;

		if (len > sizeof(prefix) - 1 + sizeof(tail) - 1 &&
		    strcmp(keys[i] + len - (sizeof(tail) - 1), tail) == 0 &&
		    memchr(name, '/', len - (sizeof(prefix) - 1) - (sizeof(tail) - 1)) == NULL)
			printf("%.*s\n", (int)(len - (sizeof(prefix) - 1) - (sizeof(tail) - 1)), name);
	}
	bucket_list_free(keys);
	return CLI_OK;
}

static int cmd_unlock(struct bucket *b, const struct pipe_config *cfg)
{
	struct sb text = SB_INIT;
	char *lock = util_lock_key(cfg->name);
	int r = bucket_get(b, lock, &text), ret = CLI_FAILED;

	if (r < 0)
		goto out;
	if (r == 1) {
		fprintf(stderr, "pipeline '%s' is not locked\n", cfg->name);
	} else {
		if (bucket_delete(b, lock) != 0)
			goto out;
		fprintf(stderr, "removed the lock of pipeline '%s': %s", cfg->name, text.buf);
	}
	ret = CLI_OK;
out:
	sb_free(&text);
	free(lock);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "full", no_argument, NULL, 'f' },
		{ "force", no_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct pipe_config cfg;
	struct bucket *b = NULL;
	const char *file = NULL, *run_arg = NULL, *run_id, *cmd;
	int c, full = 0, force = 0, bad, ret = CLI_USAGE;

	err_init(argv[0]);
	memset(&cfg, 0, sizeof(cfg));
	if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
		fputs(help_text, stdout);
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	}
	if (argc < 2 || argv[1][0] == '-') {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	cmd = argv[1];
	argv++;
	argc--;
	while ((c = getopt_long(argc, argv, "c:fhr:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			file = optarg;
			break;
		case 'f':
			full = 1;
			break;
		case 'F':
			force = 1;
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'r':
			run_arg = optarg;
			break;
		default:
			cli_usage(usage_line);
			return CLI_USAGE;
		}
	}
	if (argc - optind > 1 || (strcmp(cmd, "clear") == 0 && !force)) {
		if (strcmp(cmd, "clear") == 0 && !force)
			err_msg("clear deletes the saved state: add --force to do it");
		else
			cli_usage(usage_line);
		return CLI_USAGE;
	}
	run_id = cli_run_id(run_arg, &bad);
	if (bad)
		return CLI_USAGE;
	if (strcmp(cmd, "get") && strcmp(cmd, "show") && strcmp(cmd, "set") &&
	    strcmp(cmd, "clear") && strcmp(cmd, "list") && strcmp(cmd, "unlock")) {
		err_msg("unknown command '%s'", cmd);
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (cli_load_config(file, optind < argc ? argv[optind] : NULL, &cfg) != 0)
		return CLI_USAGE;
	b = bucket_open(cfg.bucket);
	if (b == NULL) {
		ret = CLI_FAILED;
		goto out;
	}
	if (strcmp(cmd, "get") == 0)
		ret = cmd_get(b, &cfg, run_id, full);
	else if (strcmp(cmd, "show") == 0)
		ret = cmd_show(b, &cfg);
	else if (strcmp(cmd, "set") == 0)
		ret = cmd_set(b, &cfg);
	else if (strcmp(cmd, "clear") == 0)
		ret = locked_change(b, &cfg, NULL);
	else if (strcmp(cmd, "list") == 0)
		ret = cmd_list(b);
	else
		ret = cmd_unlock(b, &cfg);
out:
	bucket_free(b);
	config_free(&cfg);
	if (cli_close_stdout() != 0 && ret == CLI_OK)
		ret = CLI_FAILED;
	return ret;
}
