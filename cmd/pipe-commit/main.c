/*
 * pipe-commit: publish a run.  Reads pipe-sink's plan on stdin and, only when
 * it ends in success and the run still holds the pipeline's lock, publishes
 * the staged files, then saves the state, the manifest and the run log
 * (objects first, the reference last), releases the lock and prints the
 * summary.  With -a it cleans up after a failed run instead.
 */
#include <fcntl.h>
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
#include "err.h"
#include "lock.h"
#include "plan.h"
#include "util.h"

static const char usage_line[] = "pipe-commit [-ah] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] NAME | -c FILE.yaml";

static const char help_text[] =
	"usage: pipe-commit [-ah] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] NAME\n"
	"       pipe-commit [-ah] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] -c FILE.yaml\n"
	"\n"
	"Publish the run described by pipe-sink's plan on stdin: only when the plan\n"
	"ends in success and the run holds the pipeline's lock (taken here when\n"
	"free).  Saves the plan as .dataspoc/state/NAME/pending/RUN.json, moves the\n"
	"staged files to their final names, writes state.json, the manifest and the\n"
	"run log, removes the pending plan and releases the lock.  A commit cut short\n"
	"is finished by the next `pipe-state get`.  Prints the summary on stdout.\n"
	"\n"
	"Options:\n"
	"  -a           abort: delete the run's staged files, write a failure run\n"
	"               log, release the lock; the plan on stdin may be partial\n"
	"  -c FILE      the pipeline file, instead of NAME\n"
	"  -e MESSAGE   abort: the error to log when the plan carries none\n"
	"  -r RUN_ID    the run's id (default $DATASPOC_RUN_ID, else the plan's)\n"
	"  -t TAPLOG    abort: the tap's stderr; its last 20 lines, secrets masked,\n"
	"               go into the failure log as \"tap_stderr\"\n"
	"  -h, --help   this help\n"
	"\n"
	"Exit status: 0 published (or cleaned up), 1 failed, 2 bad usage or config.\n";

/* The last TAIL_LINES lines of the tap's log, secrets masked; NULL if none. */
enum { TAIL_LINES = 20 };

static char *tap_tail(const struct pipe_config *cfg, const char *path)
{
	struct sb text = SB_INIT, tail = SB_INIT;
	size_t start, end, n = 0;
	int fd;

	if (path == NULL || (fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (util_read_fd(fd, &text) != 0 || text.len == 0) {
		close(fd);
		sb_free(&text);
		return NULL;
	}
	close(fd);
	end = text.len;
	while (end > 0 && (text.buf[end - 1] == '\n' || text.buf[end - 1] == '\r'))
		end--;
	for (start = end; start > 0; start--) {
		if (text.buf[start - 1] == '\n' && ++n == TAIL_LINES)
			break;
	}
	sb_add(&tail, text.buf + start, end - start);
	sb_free(&text);
	if (tail.len == 0) {
		sb_free(&tail);
		return NULL;
	}
	sb_addc(&tail, '\0');
	tail.len--;
	check_mask_secrets(cfg, &tail);
	return sb_detach(&tail);
}

static int do_abort(struct bucket *b, const struct pipe_config *cfg, const char *run_id,
		    const struct plan *p, const char *message, const char *tap_stderr)
{
	struct runlock lock;
	int ret = CLI_OK, r, held, other;

	runlock_init(&lock, b, cfg->name, run_id);
	held = runlock_held(&lock);
	other = held == 0 ? bucket_exists(b, lock.key) : 0;

	r = held < 0 || other < 0 ? -1 : commit_pending(b, cfg->name, run_id);
	if (r < 0) {
		ret = CLI_FAILED;
	} else if (r == 1) {
		/* Its commit began: the next run finishes it, so keep its files. */
		err_msg("the commit of run %s is pending; the next run of '%s' finishes it", run_id, cfg->name);
	} else if (other == 1) {
		/* another run holds the lock: write nothing beside it */
		err_msg("pipeline '%s' is now locked by another run: the staged files of run %s are left to its recovery, and no log is written",
			cfg->name, run_id);
		ret = CLI_FAILED;
	} else if (commit_abort(b, cfg->name, run_id, p, p && p->error ? p->error : message, tap_stderr) != 0) {
		ret = CLI_FAILED;
	}
	if (runlock_release(&lock) != 0)
		ret = CLI_FAILED;
	runlock_free(&lock);
	return ret;
}

/*
 * Publish under the run's lock.  A plan whose run does not hold it (run
 * alone, without pipe-state get; or its lock was taken over) takes a free
 * lock, unless a later run has committed meanwhile.
 */
static int do_commit(struct bucket *b, const struct pipe_config *cfg, const struct plan *p)
{
	struct runlock lock;
	char *later = NULL;
	struct sb out = SB_INIT;
	int ret = CLI_FAILED, r;

	runlock_init(&lock, b, cfg->name, p->run_id);
	if (strcmp(p->pipeline, cfg->name) != 0) {
		err_msg("the plan is for pipeline '%s', not '%s'", p->pipeline, cfg->name);
		goto out;
	}
	r = runlock_held(&lock);
	if (r < 0)
		goto out;
	if (r == 0) {
		r = commit_later_run(b, cfg->name, p->run_id, &later);
		if (r < 0)
			goto out;
		if (r == 1) {
			err_msg("run %s, which started after run %s, has committed since: publishing this plan would set the state back; nothing published",
				later, p->run_id);
			goto out;
		}
		if (runlock_take(&lock) != 0)
			goto out;
	}
	if (runlock_renew(&lock) < 0)
		goto release;
	if (commit_publish(b, p) == 0)
		ret = CLI_OK;
	else if (commit_pending(b, cfg->name, p->run_id) == 1)
		err_msg("the commit of run %s did not finish; the next run of '%s' finishes it", p->run_id, cfg->name);
	else
		err_msg("the commit of run %s did not begin; nothing published", p->run_id);
release:
	if (runlock_release(&lock) != 0)
		ret = CLI_FAILED;
	if (ret == CLI_OK) {
		commit_summary(p, &out);
		fwrite(out.buf, 1, out.len, stdout);
	}
out:
	sb_free(&out);
	runlock_free(&lock);
	free(later);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "abort", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct pipe_config cfg;
	struct plan plan;
	struct sb in = SB_INIT;
	struct bucket *b = NULL;
	const char *file = NULL, *run_arg = NULL, *message = NULL, *taplog = NULL, *run_id;
	char *tail = NULL;
	int c, abort_run = 0, bad, parsed, ret = CLI_FAILED;

	err_init(argv[0]);
	cli_die_with_driver();
	memset(&cfg, 0, sizeof(cfg));
	memset(&plan, 0, sizeof(plan));
	while ((c = getopt_long(argc, argv, "ac:e:hr:t:", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			abort_run = 1;
			break;
		case 'c':
			file = optarg;
			break;
		case 'e':
			message = optarg;
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'r':
			run_arg = optarg;
			break;
		case 't':
			taplog = optarg;
			break;
		default:
			cli_usage(usage_line);
			return CLI_USAGE;
		}
	}
	if (argc - optind > 1) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	run_id = cli_run_id(run_arg, &bad);
	if (bad)
		return CLI_USAGE;
	if (cli_load_config(file, optind < argc ? argv[optind] : NULL, &cfg) != 0)
		return CLI_USAGE;
	if (util_read_fd(STDIN_FILENO, &in) != 0) {
		err_msg("cannot read the plan from stdin:");
		goto out;
	}
	parsed = plan_parse(in.buf ? in.buf : "", in.len, "<stdin>", &plan) == 0;
	/* Judge the plan before the bucket is opened (and, locally, made). */
	if (abort_run) {
		if (run_id == NULL)
			run_id = parsed ? plan.run_id : NULL;
		if (run_id == NULL) {
			err_msg("abort: no run id (give -r RUN_ID)");
			ret = CLI_USAGE;
			goto out;
		}
	} else {
		if (!parsed)
			goto out;
		if (!plan.ended) {
			err_msg("the plan ends without its end line: pipe-sink did not finish; nothing published");
			goto out;
		}
		if (!plan.success) {
			err_msg("the plan ends in failure (%s); nothing published", plan.error ? plan.error : "no reason given");
			goto out;
		}
		if (run_id && strcmp(run_id, plan.run_id) != 0) {
			err_msg("the plan is of run %s, not %s; nothing published", plan.run_id, run_id);
			goto out;
		}
	}
	b = bucket_open_account(cfg.bucket, cfg.endpoint_url, cfg.account_name);
	if (b == NULL)
		goto out;
	if (abort_run) {
		tail = tap_tail(&cfg, taplog);
		ret = do_abort(b, &cfg, run_id, parsed ? &plan : NULL, message, tail);
	}
	else
		ret = do_commit(b, &cfg, &plan);
out:
	free(tail);
	plan_free(&plan);
	sb_free(&in);
	bucket_free(b);
	config_free(&cfg);
	if (cli_close_stdout() != 0 && ret == CLI_OK)
		ret = CLI_FAILED;
	return ret;
}
