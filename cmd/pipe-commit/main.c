/*
 * pipe-commit: publish a run.  Reads pipe-sink's plan on stdin and, only when
 * it ends in success and the run still holds the pipeline's lock, publishes
 * the staged files, then saves the state, the manifest and the run log
 * (objects first, the reference last), releases the lock and prints the
 * summary.  With -a it cleans up after a failed run instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "bucket.h"
#include "mask.h"
#include "cli.h"
#include "commit.h"
#include "config.h"
#include "err.h"
#include "lock.h"
#include "manifest.h"
#include "merge.h"
#include "plan.h"
#include "report.h"
#include "util.h"

static const char usage_line[] = "pipe-commit [-ahk] [-d DIR] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] [-w FILE] NAME | -c FILE.yaml";

static const char help_text[] =
	"usage: pipe-commit [-ahk] [-d DIR] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] [-w FILE] NAME\n"
	"       pipe-commit [-ahk] [-d DIR] [-e MESSAGE] [-r RUN_ID] [-t TAPLOG] [-w FILE] -c FILE.yaml\n"
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
	"               log, release the lock; the plan on stdin may be partial;\n"
	"               prints 'Records: N landed, M read'\n"
	"  -c FILE      the pipeline file, instead of NAME\n"
	"  -d DIR       once the run is published, remove the folder DIR and what\n"
	"               it holds (the driver's private folder, the plan's); kept\n"
	"               on any failure, and with -a or -k\n"
	"  -e MESSAGE   abort: the error to log (the words the driver said), else\n"
	"               the plan's\n"
	"  -r RUN_ID    the run's id (default $DATASPOC_RUN_ID, else the plan's)\n"
	"  -t TAPLOG    abort: the tap's stderr; its last 20 lines, secrets masked,\n"
	"               go into the failure log as \"tap_stderr\"\n"
	"  -h, --help   this help\n"
	"  --version    its version\n"
	"  -w FILE      first see whether a process still holds FILE's lock\n"
	"               (flock(2): the driver's stages, DATASPOC_PIPE_STAGES_FD);\n"
	"               if one does, exit 3 at once, having read and done nothing\n"
	"  -k           checkpoints: copy the plan from stdin to stdout as it comes,\n"
	"               and publish each checkpoint unit of it (with its state) as\n"
	"               it closes; the run's last unit is left to pipe-commit NAME\n"
	"               < plan, once the run has succeeded\n"
	"\n"
	"A plan with checkpoints (incremental.checkpoint_every) publishes only the\n"
	"units its run's checkpoints did not.  With -k and at the run's end, the\n"
	"units' upsert streams are merged by key first, as pipe-merge merges a run.\n"
	"\n"
	"Exit status: 0 published (or cleaned up), 1 failed, 2 bad usage or config,\n"
	"3 (-w) the stages still run: nothing done.\n";

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
	mask_text(cfg, &tail);
	return sb_detach(&tail);
}

static int do_abort(struct bucket *b, const struct pipe_config *cfg, const char *run_id,
		    const struct plan *p, const char *message, const char *tap_stderr)
{
	struct runlock lock;
	struct sb summary = SB_INIT;
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
	} else if (commit_abort(b, cfg->name, run_id, p, message ? message : p ? p->error : NULL, tap_stderr,
				&summary) != 0) {
		ret = CLI_FAILED;
	}
	if (runlock_release(&lock) != 0)
		ret = CLI_FAILED;
	runlock_free(&lock);
	/* what the failure landed and read, as logs and status say it */
	if (summary.len)
		fwrite(summary.buf, 1, summary.len, stdout);
	sb_free(&summary);
	return ret;
}

/*
 * The units of a plan of checkpoints in slice, merged for its upsert
 * streams as pipe-merge merges a run without checkpoints (lib/merge.h,
 * which pipe-merge leaves such a plan to): each unit is merged and
 * published whole, the merge reading what the units before it published.
 * A --full run rebuilds each table with the first unit that lands it
 * (merge_plan() sees the run's files in it after).  0, or -1 after
 * reporting.
 */
static int merge_units(struct bucket *b, const struct pipe_config *cfg, struct plan *slice)
{
	return merge_plan(b, cfg, slice);
}

/*
 * A failure whose log the bucket did not take (no credentials under cron, a
 * bucket out of reach): kept on this machine for status (report.h).
 */
static void keep_locally(const struct pipe_config *cfg, const char *run_id, const struct plan *p,
			 const char *message)
{
	char said[1024];
	const char *why = message ? message : p ? p->error : NULL;

	if (why == NULL)
		why = err_last(said, sizeof(said)) == 0 ? said : "the run failed";
	if (report_local_failure(cfg->name, run_id, why) == 0)
		err_msg("the failure of run %s could not be logged in %s; kept in %s/logs/%s.failure.json for 'status'",
			run_id, cfg->bucket, config_home(), cfg->name);
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
		if (commit_log_lost(b, cfg->name, &lock) != 0)
			goto release;
	}
	if (runlock_renew(&lock) < 0)
		goto release;
	if (p->nunits > 0) {
		/* what the run's checkpoints did not publish */
		struct plan rest;
		int err;
		unsigned k = commit_checkpoints(b, cfg->name, p->run_id, &err);

		if (err)
			goto release;
		if (p->unit_base) {
			err_msg("the plan begins at unit %u, not at its run line's first: nothing published",
				p->unit_base + 1);
			goto release;
		}
		if (k > p->nunits) {
			err_msg("run %s committed checkpoint %u, but its plan has %u: nothing published",
				p->run_id, k, p->nunits);
			goto release;
		}
		plan_slice(p, k, p->nunits + 1, &rest);
		r = merge_units(b, cfg, &rest);
		if (r == 0)
			r = commit_publish(b, &rest);
		plan_free(&rest);
	} else {
		r = commit_publish(b, p);
	}
	if (r == 0)
		ret = CLI_OK;
	else if (commit_pending(b, cfg->name, p->run_id) == 1)
		err_msg("the commit of run %s did not finish; the next run of '%s' finishes it", p->run_id, cfg->name);
	else
		err_msg("the commit of run %s did not begin; nothing published", p->run_id);
release:
	if (runlock_release(&lock) != 0)
		ret = CLI_FAILED;
	if (ret == CLI_OK) {
		struct plan whole;

		plan_slice(p, 0, p->nunits + 1, &whole);
		commit_summary(&whole, &out);
		plan_free(&whole);
		fwrite(out.buf, 1, out.len, stdout);
	}
out:
	sb_free(&out);
	runlock_free(&lock);
	free(later);
	return ret;
}

/*
 * The files of slice (checkpoint units) that must wait for the run's end:
 * records of a table version other than the one the manifest records for
 * their folder, which only the run's last commit activates (publishing
 * them now would show two copies of the table), and those of a table the
 * run moves to the folders of a new partition_by (commit_refolds(), given
 * the manifest read here when there are versions to compare).  1 defer,
 * 0 not, -1 error or refused.
 */
static int must_wait(struct bucket *b, const struct plan *slice)
{
	struct manifest_rec *rec = NULL;
	size_t i, j;
	int r, versioned;

	/* (records without a table version never wait for one: no versions to read) */
	for (i = 0; i < slice->nfiles && slice->files[i].version == NULL; i++)
		;
	versioned = i < slice->nfiles;
	if (versioned) {
		rec = xcalloc(slice->nstreams + 1, sizeof(*rec));
		if (manifest_recorded(b, slice, rec, 1) != 0) {
			manifest_recs_free(rec, slice->nstreams);
			return -1;
		}
	}
	r = commit_refolds(b, slice, rec);
	if (r == 1)
		err_warn("checkpoint %u waits: a table moves to the folders of its new partition_by only "
			 "when the run ends", slice->unit);
	for (i = 0; r == 0 && versioned && i < slice->nfiles; i++) {
		const struct plan_file *f = &slice->files[i];

		for (j = 0; f->version && j < slice->nstreams; j++) {
			if (strcmp(slice->streams[j].name, f->stream) == 0 && rec[j].version &&
			    strcmp(rec[j].version, f->version) != 0) {
				err_warn("checkpoint %u waits: stream '%s' lands table version %s, which replaces version %s only when the run ends",
					 slice->unit, f->stream, f->version, rec[j].version);
				r = 1;
				break;
			}
		}
	}
	if (rec)
		manifest_recs_free(rec, slice->nstreams);
	return r;
}

/* 1 when line is a plan's checkpoint line. */
static int is_checkpoint(const char *line, size_t len)
{
	static const char tag[] = "{\"type\":\"checkpoint\"";

	return len >= sizeof(tag) - 1 && memcmp(line, tag, sizeof(tag) - 1) == 0;
}

/*
 * The units of text[0..len) (the run line, then the lines after the last
 * unit published; it ends in a checkpoint line), published now, under the
 * run's lock (taken when free, kept for the run's end).  0 published, 1
 * they wait, -1 error.
 */
static int checkpoint_at(struct bucket *b, const struct pipe_config *cfg, const char *run_id,
			 const char *text, size_t len, struct runlock *lock, int *locked, char **lock_run)
{
	struct plan all, slice;
	char *later = NULL;
	int ret = -1, r;

	if (plan_parse(text, len, "<stdin>", &all) != 0)
		return -1;
	memset(&slice, 0, sizeof(slice));
	if (strcmp(all.pipeline, cfg->name) != 0) {
		err_msg("the plan is for pipeline '%s', not '%s'", all.pipeline, cfg->name);
		goto out;
	}
	if (run_id && strcmp(run_id, all.run_id) != 0) {
		err_msg("the plan is of run %s, not %s; nothing published", all.run_id, run_id);
		goto out;
	}
	if (!*locked) {
		/* (the lock keeps its run id's pointer: a copy that outlives this plan) */
		*lock_run = xstrdup(all.run_id);
		runlock_init(lock, b, cfg->name, *lock_run);
		*locked = 1;
		r = runlock_held(lock);
		if (r < 0)
			goto out;
		if (r == 0) {
			r = commit_later_run(b, cfg->name, all.run_id, &later);
			if (r == 1)
				err_msg("run %s, which started after run %s, has committed since: nothing published",
					later, all.run_id);
			if (r != 0 || runlock_take(lock) != 0 || commit_log_lost(b, cfg->name, lock) != 0)
				goto out;
		}
	}
	/* text is the run line and what came after the last unit published */
	plan_slice(&all, 0, all.nunits, &slice);
	r = must_wait(b, &slice);
	if (r == 0 && cfg->nloads > 0) {
		/* (a pipeline that sets no load_method has nothing to merge) */
		if (merge_units(b, cfg, &slice) != 0) {
			err_msg("checkpoint %u of run %s: nothing published", slice.unit, all.run_id);
			goto out;
		}
	}
	if (r == 0 && (runlock_renew(lock) < 0 || commit_publish(b, &slice) != 0)) {
		err_msg("checkpoint %u of run %s did not finish; the next run of '%s' finishes it",
			slice.unit, all.run_id, cfg->name);
		r = -1;
	}
	ret = r < 0 ? -1 : r;
out:
	free(later);
	plan_free(&slice);
	plan_free(&all);
	return ret;
}

/*
 * -k: the plan goes through to stdout as it comes; each checkpoint line
 * publishes the units before it.  The run's end is not ours to judge:
 * whatever the input ends with, the final pipe-commit (or -a) decides.
 */
static int do_follow(struct bucket *b, const struct pipe_config *cfg, const char *run_id)
{
	struct sb text = SB_INIT;
	struct runlock lock;
	char buf[65536], *lock_run = NULL;
	size_t scanned = 0, head = 0;
	int locked = 0, ret = CLI_OK, r;
	sigset_t soft, old;

	sigemptyset(&soft);
	sigaddset(&soft, SIGINT);
	sigaddset(&soft, SIGTERM);
	sigaddset(&soft, SIGHUP);
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
		const char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_msg("cannot read the plan from stdin:");
			ret = CLI_FAILED;
			break;
		}
		if (n == 0)
			break;
		if (fwrite(buf, 1, (size_t)n, stdout) != (size_t)n || fflush(stdout) != 0) {
			err_msg("cannot write the plan to stdout:");
			ret = CLI_FAILED;
			break;
		}
		sb_add(&text, buf, (size_t)n);
		while (ret == CLI_OK && (nl = memchr(text.buf + scanned, '\n', text.len - scanned)) != NULL) {
			const char *line = text.buf + scanned;

			scanned = (size_t)(nl - text.buf) + 1;
			if (!is_checkpoint(line, (size_t)(nl - line)))
				continue;
			/*
			 * A checkpoint begun is finished: SIGINT, TERM and HUP (the
			 * driver forwards them to the stages) wait until it is, as
			 * the driver lets a run's final commit finish.
			 */
			sigprocmask(SIG_BLOCK, &soft, &old);
			r = checkpoint_at(b, cfg, run_id, text.buf, scanned, &lock, &locked, &lock_run);
			sigprocmask(SIG_SETMASK, &old, NULL);
			if (r < 0) {
				ret = CLI_FAILED;
			} else if (r == 0) {
				/* the units published are dropped: the run line stays */
				if (head == 0)
					head = (size_t)((const char *)memchr(text.buf, '\n', text.len) - text.buf) + 1;
				memmove(text.buf + head, text.buf + scanned, text.len - scanned);
				text.len = head + text.len - scanned;
				scanned = head;
			}
		}
		if (ret != CLI_OK)
			break;
	}
	if (locked)
		runlock_free(&lock);
	free(lock_run);
	sb_free(&text);
	return ret;
}

/* -w: exit status when a process of the stages is still there */
#define COMMIT_STAGES_RUNNING 3

/*
 * A process still holds the stages' lock on file (the driver's stages,
 * DESIGN.md): the driver's check before its commit, made here so that it
 * starts no flock(1) for it (issue #14).  A file that cannot be opened
 * holds nothing.
 */
static int stages_running(const char *file)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return 0;
	while ((r = flock(fd, LOCK_SH | LOCK_NB)) != 0 && errno == EINTR)
		;
	r = r != 0 && errno == EWOULDBLOCK;
	close(fd);
	return r;
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
	const char *done_dir = NULL, *stages = NULL;
	char *tail = NULL;
	int c, abort_run = 0, follow = 0, bad, parsed = 0, ret = CLI_FAILED;

	err_init_stage(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	if (cli_lock_run() != 0)
		return CLI_FAILED;
	cli_die_with_driver();
	memset(&cfg, 0, sizeof(cfg));
	memset(&plan, 0, sizeof(plan));
	while ((c = getopt_long(argc, argv, "ac:d:e:hkr:t:w:", longopts, NULL)) != -1) {
		switch (c) {
		case 'a':
			abort_run = 1;
			break;
		case 'c':
			file = optarg;
			break;
		case 'd':
			done_dir = optarg;
			break;
		case 'e':
			message = optarg;
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'k':
			follow = 1;
			break;
		case 'r':
			run_arg = optarg;
			break;
		case 't':
			taplog = optarg;
			break;
		case 'w':
			stages = optarg;
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
	if (stages && stages_running(stages))
		return COMMIT_STAGES_RUNNING;
	run_id = cli_run_id(run_arg, &bad);
	if (bad)
		return CLI_USAGE;
	if (cli_load_config(file, optind < argc ? argv[optind] : NULL, &cfg) != 0)
		return CLI_USAGE;
	if (follow && abort_run) {
		cli_usage(usage_line);
		ret = CLI_USAGE;
		goto out;
	}
	if (follow) {
		/* nothing is judged before the units come */
	} else if (util_read_fd(STDIN_FILENO, &in) != 0) {
		err_msg("cannot read the plan from stdin:");
		goto out;
	} else {
		parsed = plan_parse(in.buf ? in.buf : "", in.len, "<stdin>", &plan) == 0;
	}
	/* Judge the plan before the bucket is opened (and, locally, made). */
	if (follow) {
		/* judged unit by unit */
	} else if (abort_run) {
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
	if (b == NULL) {
		if (abort_run)
			keep_locally(&cfg, run_id, parsed ? &plan : NULL, message);
		goto out;
	}
	if (abort_run) {
		struct plan rest;
		int err = 0;

		tail = tap_tail(&cfg, taplog);
		/* after checkpoints, the units they did not commit (unknown: the log fails too) */
		if (parsed && plan.nunits > 0) {
			unsigned k = commit_checkpoints(b, cfg.name, run_id, &err);

			plan_slice(&plan, err || k > plan.nunits ? plan.nunits : k, plan.nunits + 1, &rest);
			rest.error = plan.error;
			plan.error = NULL;
			plan_free(&plan);
			plan = rest;
		}
		ret = do_abort(b, &cfg, run_id, parsed ? &plan : NULL, message, tail);
		if (ret != CLI_OK)
			keep_locally(&cfg, run_id, parsed ? &plan : NULL, message);
	} else if (follow) {
		ret = do_follow(b, &cfg, run_id);
	} else {
		ret = do_commit(b, &cfg, &plan);
	}
out:
	free(tail);
	plan_free(&plan);
	sb_free(&in);
	bucket_free(b);
	config_free(&cfg);
	if (cli_close_stdout() != 0 && ret == CLI_OK)
		ret = CLI_FAILED;
	/*
	 * The driver's last step after a commit: its folder goes here, not by
	 * one more program (rm) started after this one (issue #14).  A folder
	 * left (said) is the driver's to remove.
	 */
	if (done_dir && ret == CLI_OK && !abort_run && !follow && util_remove_tree(done_dir) != 0)
		err_msg("warning: cannot remove '%s':", done_dir);
	return ret;
}
