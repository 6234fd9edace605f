/*
 * pipe-sink: land a Singer stream in the pipeline's bucket.  Reads pipe-tap's
 * output on stdin, writes each stream's RECORDs, byte for byte, into
 * compressed files under the run's staging area, and prints the commit plan
 * for pipe-commit on stdout.  Nothing becomes visible until pipe-commit runs.
 */
#include <sys/resource.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bucket.h"
#include "catalog.h"
#include "cli.h"
#include "config.h"
#include "err.h"
#include "layout.h"
#include "lock.h"
#include "plan.h"
#include "sink.h"
#include "transform.h"
#include "util.h"

static const char usage_line[] = "pipe-sink [-fhnq] [-j THREADS] [-r RUN_ID] NAME | -c FILE.yaml";

static const char help_text[] =
	"usage: pipe-sink [-fhnq] [-j THREADS] [-r RUN_ID] NAME\n"
	"       pipe-sink [-fhnq] [-j THREADS] [-r RUN_ID] -c FILE.yaml\n"
	"\n"
	"Read a Singer stream ended by pipe-tap's end line on stdin, write each\n"
	"RECORD's \"record\" value, byte for byte, one per line, into the stream's\n"
	"compressed files under .dataspoc/staging/NAME/RUN_ID/ in the bucket, and\n"
	"print the commit plan (JSON lines) on stdout.  Progress goes to stderr.\n"
	"When $DATASPOC_PIPE_HOME/transforms/NAME.jq exists, it is applied to every\n"
	"record (jq, with $stream bound); counts are of records as landed.  Records\n"
	"of streams pipe-tap did not select are dropped, and counted on stderr.\n"
	"On bad input, a failed tap or a bucket error, the staged files are removed\n"
	"and the plan ends in failure.\n"
	"\n"
	"At most $DATASPOC_PIPE_MAX_OPEN files (default 256, on S3 and Azure 8; fewer\n"
	"when the limit of open descriptors, raised up to its hard limit, is lower)\n"
	"are open at once.  The records of further streams wait in a spill file in\n"
	"$TMPDIR; once more than $DATASPOC_PIPE_SPILL_MB megabytes (default 256)\n"
	"wait, the stream with the most takes the slot of the stream idle the\n"
	"longest, whose file is rolled.\n"
	"\n"
	"Options:\n"
	"  -c FILE      the pipeline file, instead of NAME\n"
	"  -f           record in the plan that the run ignored the saved state\n"
	"  -j THREADS   compression threads, shared by every JSON-lines file; 0\n"
	"               compresses in this thread (default 1, or\n"
	"               $DATASPOC_PIPE_THREADS); the files are the same either way,\n"
	"               runs of whole frames of up to 128 KiB of lines; Parquet:\n"
	"               two workers whenever THREADS is not 0 (the values and\n"
	"               pages, their compression)\n"
	"  -n           check the config and the transform; read nothing; print\n"
	"               \"checkpoints\" when the pipeline has checkpoint_every\n"
	"  -q           no progress on stderr\n"
	"  -r RUN_ID    the run's id (default $DATASPOC_RUN_ID, else a new one)\n"
	"  -h, --help   this help\n"
	"  --version    its version\n"
	"\n"
	"Exit status: 0 the plan ends in success, 1 it ends in failure, 2 bad\n"
	"usage or config.\n";

/*
 * Files open at once: asked (0: the default), within the descriptors the
 * process may have.  The soft limit is raised towards the hard one when the
 * files need it (a local file is a descriptor; an S3 or Azure one holds a
 * part buffer in memory, so fewer are open there).
 */
enum { MAX_OPEN_LOCAL = 256, MAX_OPEN_REMOTE = 8, FD_RESERVE = 32 };

static size_t open_files(size_t asked, int local)
{
	struct rlimit rl;
	size_t n = asked ? asked : local ? MAX_OPEN_LOCAL : MAX_OPEN_REMOTE;
	rlim_t want = (rlim_t)n + FD_RESERVE;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= want)
		return n;
	rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want ? rl.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return n;
	/* Still short: as many as fit (the others' records wait in the spill). */
	if (rl.rlim_cur < want)
		n = rl.rlim_cur > 2 * FD_RESERVE ? (size_t)rl.rlim_cur - FD_RESERVE : (size_t)rl.rlim_cur / 2;
	return n ? n : 1;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct pipe_config cfg;
	struct sink_options opt;
	struct plan plan;
	struct sb out = SB_INIT;
	struct bucket *b = NULL;
	const char *file = NULL, *run_arg = NULL;
	char *new_id = NULL, *end, *jq = NULL, *staging = NULL;
	int c, bad, check = 0, ret = CLI_FAILED;

	err_init_stage(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	if (cli_lock_run() != 0)
		return CLI_FAILED;
	memset(&cfg, 0, sizeof(cfg));
	memset(&opt, 0, sizeof(opt));
	memset(&plan, 0, sizeof(plan));
	opt.progress = 1;
	opt.plan_fd = STDOUT_FILENO;
	/* 0: set once the bucket is known */
	opt.max_open = (size_t)util_env_long("DATASPOC_PIPE_MAX_OPEN", 1, 4096, 0);
	opt.spill_max = (uint64_t)util_env_long("DATASPOC_PIPE_SPILL_MB", 1, 1L << 20, 256) << 20;
	/* one worker: see -j in the help */
	opt.threads = (int)util_env_long("DATASPOC_PIPE_THREADS", 0, 256, 1);
	while ((c = getopt_long(argc, argv, "c:fhj:nqr:", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			file = optarg;
			break;
		case 'f':
			opt.full = 1;
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'j':
			opt.threads = (int)strtol(optarg, &end, 10);
			if (*end != '\0' || opt.threads < 0 || opt.threads > 256) {
				err_msg("-j wants a number of threads from 0 to 256, not '%s'", optarg);
				return CLI_USAGE;
			}
			break;
		case 'n':
			check = 1;
			break;
		case 'q':
			opt.progress = 0;
			break;
		case 'r':
			run_arg = optarg;
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
	opt.run_id = cli_run_id(run_arg, &bad);
	if (bad)
		return CLI_USAGE;
	if (opt.run_id == NULL)
		opt.run_id = new_id = util_new_run_id();
	if (cli_load_config(file, optind < argc ? argv[optind] : NULL, &cfg) != 0) {
		free(new_id);
		return CLI_USAGE;
	}
	if (getenv("DATASPOC_PIPE_SHARD") && getenv("DATASPOC_PIPE_SHARD_ATTEMPT")) {
		/* a shard of a sharded run stages under its attempt's folder */
		unsigned long index, n;

		if (catalog_parse_shard(getenv("DATASPOC_PIPE_SHARD"), &index, &n) != 0 ||
		    !util_run_id_ok(getenv("DATASPOC_PIPE_SHARD_ATTEMPT"))) {
			err_msg("DATASPOC_PIPE_SHARD is not I/N, or DATASPOC_PIPE_SHARD_ATTEMPT not a run id");
			free(new_id);
			config_free(&cfg);
			return CLI_USAGE;
		}
		opt.staging = staging = layout_shard_staging(cfg.name, opt.run_id, index,
							     getenv("DATASPOC_PIPE_SHARD_ATTEMPT"));
		opt.file_base = (unsigned)index * SINK_SHARD_FILES;
	}
	jq = xasprintf("%s/transforms/%s.jq", config_home(), cfg.name);
	if (transform_load(jq, &opt.transform) < 0) {
		ret = CLI_USAGE;
		goto out;
	}
	if (check) {
		/* The driver runs pipe-commit -k beside a pipeline that checkpoints. */
		if (config_checkpoints(&cfg))
			puts("checkpoints");
		ret = CLI_OK;
		goto out;
	}
	b = bucket_open_account(cfg.bucket, cfg.endpoint_url, cfg.account_name);
	if (b != NULL)
		opt.max_open = open_files(opt.max_open, bucket_is_local(b));
	if (b == NULL) {
		/* Still end the plan, so a reader of it knows. */
		plan.ended = 1;
		plan.error = xasprintf("cannot open the bucket '%s'", cfg.bucket);
	} else {
		/* the run's lock (pipe-state get took it) is renewed while the tap runs */
		struct runlock lock;
		struct bucket *kb = bucket_open_account(cfg.bucket, cfg.endpoint_url, cfg.account_name);
		struct lock_keeper *keeper;

		runlock_init(&lock, b, cfg.name, opt.run_id);
		keeper = kb ? runlock_keep(&lock, kb) : NULL;
		if (sink_run(b, &cfg, &opt, STDIN_FILENO, &plan) == 0)
			ret = CLI_OK;
		if (lock_keeper_stop(keeper) && plan.success) {
			plan.success = 0;
			free(plan.error);
			plan.error = xasprintf("the run lock of pipeline '%s' was taken over by another run while this one ran",
					       cfg.name);
			ret = CLI_FAILED;
		}
		bucket_free(kb);
		runlock_free(&lock);
	}
	/* After checkpoints, the run line went out with the first unit. */
	plan_format_part(&plan, plan.nunits == 0, &out);
	fwrite(out.buf, 1, out.len, stdout);
out:
	sb_free(&out);
	plan_free(&plan);
	transform_free(opt.transform);
	free(jq);
	bucket_free(b);
	config_free(&cfg);
	free(new_id);
	free(staging);
	if (cli_close_stdout() != 0)
		ret = CLI_FAILED;
	return ret;
}
