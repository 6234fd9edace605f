/*
 * pipe-merge: merge a run's upsert streams by key.  Reads pipe-sink's plan
 * on stdin and prints the plan pipe-commit publishes: for each stream whose
 * destination.load_method is upsert, the run's staged files are merged
 * with the table's current files (lib/merge.h) into new staged files, and
 * the plan names them and the files they replace.  Nothing becomes
 * visible: pipe-commit publishes the merged files, then removes the
 * replaced ones, before it moves the state.
 *
 *	pipe-tap NAME | pipe-sink NAME | pipe-merge NAME | pipe-commit NAME
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bucket.h"
#include "cli.h"
#include "config.h"
#include "err.h"
#include "merge.h"
#include "plan.h"
#include "util.h"

static const char usage_line[] = "pipe-merge [-Ch] [-o FILE] [-r RUN_ID] [-s STREAM] NAME | -c FILE.yaml";

static const char help_text[] =
	"usage: pipe-merge [-Ch] [-o FILE] [-r RUN_ID] [-s STREAM] NAME\n"
	"       pipe-merge [-Ch] [-o FILE] [-r RUN_ID] [-s STREAM] -c FILE.yaml\n"
	"\n"
	"Read pipe-sink's plan on stdin and print the plan for pipe-commit on\n"
	"stdout.  For each stream whose destination.load_method is upsert, the\n"
	"run's staged files are merged by key with the table's current files:\n"
	"the table keeps one row per key, the last version the tap sent (a\n"
	"record whose _sdc_deleted_at is set removes its key, unless hard_delete\n"
	"is false; a property a record leaves out keeps the key's value before,\n"
	"one sent as null sets null).  Only the files of the keys the run\n"
	"touches are rewritten (staged, published by pipe-commit, which then\n"
	"removes the files they replace).  Other streams pass through; a plan that did not end in\n"
	"success passes through unchanged, and so does a plan of checkpoints\n"
	"(pipe-commit merges each of its units as it publishes it).\n"
	"\n"
	"Options:\n"
	"  -C           compact: read no plan; print the plan of a run (-r RUN_ID,\n"
	"               or $DATASPOC_RUN_ID) that rewrites the pipeline's tables\n"
	"               from their own files, for pipe-commit (dataspoc-pipe\n"
	"               compact): an upsert stream's table not merged by key yet\n"
	"               into one row per key (the last version of each, oldest\n"
	"               files first); an append-only table's small files merged\n"
	"               into files of max_file_size, row for row; no state\n"
	"  -c FILE      the pipeline file, instead of NAME\n"
	"  -h, --help   this help\n"
	"  --version    its version\n"
	"  -o FILE      write the plan to FILE (replaced once whole) instead of\n"
	"               stdout; left as it was when the merge fails\n"
	"  -r RUN_ID    -C: the run's id (default $DATASPOC_RUN_ID)\n"
	"  -s STREAM    -C: only that stream's table\n"
	"\n"
	"Environment: DATASPOC_PIPE_MERGE_ROWS, the rows of a file of an upsert table,\n"
	"at most (default 1000000); DATASPOC_PIPE_MERGE_KEYS, the records of a run\n"
	"sorted in memory at once (default 1000000), more sorted in chunks in $TMPDIR.\n"
	"\n"
	"Exit status: 0 merged, 1 failed (a record without its key, a changed\n"
	"key, a store error), 2 bad usage or config.\n";

static int write_out(const char *path, const struct sb *text)
{
	char *tmp;
	FILE *f;
	int ret = -1;

	if (path == NULL) {
		if (fwrite(text->buf ? text->buf : "", 1, text->len, stdout) != text->len) {
			err_msg("write error:");
			return -1;
		}
		return 0;
	}
	tmp = xasprintf("%s.merge", path);
	if ((f = fopen(tmp, "w")) == NULL) {
		err_msg("cannot write '%s':", tmp);
		free(tmp);
		return -1;
	}
	if (fwrite(text->buf ? text->buf : "", 1, text->len, f) != text->len || fclose(f) != 0)
		err_msg("cannot write '%s':", tmp);
	else if (rename(tmp, path) != 0)
		err_msg("cannot rename '%s' to '%s':", tmp, path);
	else
		ret = 0;
	if (ret != 0)
		unlink(tmp);
	free(tmp);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct pipe_config cfg;
	struct plan plan;
	struct sb in = SB_INIT, out = SB_INIT;
	struct bucket *b = NULL;
	const char *file = NULL, *outfile = NULL, *run_arg = NULL, *stream = NULL, *run_id;
	int c, compact = 0, bad, ret = CLI_FAILED;

	err_init_stage(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	if (cli_lock_run() != 0)
		return CLI_FAILED;
	cli_die_with_driver();
	memset(&cfg, 0, sizeof(cfg));
	memset(&plan, 0, sizeof(plan));
	while ((c = getopt_long(argc, argv, "Cc:ho:r:s:", longopts, NULL)) != -1) {
		switch (c) {
		case 'C':
			compact = 1;
			break;
		case 'r':
			run_arg = optarg;
			break;
		case 's':
			stream = optarg;
			break;
		case 'c':
			file = optarg;
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'o':
			outfile = optarg;
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
	if ((stream || run_arg) && !compact) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (cli_load_config(file, optind < argc ? argv[optind] : NULL, &cfg) != 0)
		return CLI_USAGE;
	if (compact) {
		if (run_id == NULL) {
			err_msg("-C: no run id (give -r RUN_ID, or take one with pipe-state get -i FILE)");
			ret = CLI_USAGE;
			goto out;
		}
		b = bucket_open_account(cfg.bucket, cfg.endpoint_url, cfg.account_name);
		if (b == NULL || merge_compact(b, &cfg, run_id, stream, &plan) != 0)
			goto out;
		plan_format(&plan, &out);
		ret = write_out(outfile, &out) == 0 ? CLI_OK : CLI_FAILED;
		goto out;
	}
	if (util_read_fd(STDIN_FILENO, &in) != 0) {
		err_msg("cannot read the plan from stdin:");
		goto out;
	}
	if (plan_parse(in.buf ? in.buf : "", in.len, "<stdin>", &plan) != 0)
		goto out;
	/*
	 * A plan of checkpoints (incremental.checkpoint_every) is pipe-commit's
	 * to merge, unit by unit, as each is published (commit_merge()).
	 */
	if (!plan.ended || !plan.success || plan.run_id == NULL || plan.nunits > 0) {
		/* not ours to judge: pipe-commit refuses it, pipe-commit -a cleans up */
		ret = write_out(outfile, &in) == 0 ? CLI_OK : CLI_FAILED;
		goto out;
	}
	if (plan.pipeline && strcmp(plan.pipeline, cfg.name) != 0) {
		err_msg("the plan is of pipeline '%s', not '%s'", plan.pipeline, cfg.name);
		goto out;
	}
	b = bucket_open_account(cfg.bucket, cfg.endpoint_url, cfg.account_name);
	if (b == NULL)
		goto out;
	if (merge_plan(b, &cfg, &plan) != 0)
		goto out;
	plan_format(&plan, &out);
	ret = write_out(outfile, &out) == 0 ? CLI_OK : CLI_FAILED;
out:
	plan_free(&plan);
	sb_free(&in);
	sb_free(&out);
	bucket_free(b);
	config_free(&cfg);
	if (cli_close_stdout() != 0 && ret == CLI_OK)
		ret = CLI_FAILED;
	return ret;
}
