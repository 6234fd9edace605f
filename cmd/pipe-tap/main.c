/*
 * pipe-tap: run a pipeline's Singer tap.  Reads the saved state (one JSON
 * line, as pipe-state get prints it) on stdin, runs the tap with --config,
 * --state and --catalog as needed, copies its Singer stream to stdout and
 * ends it with one line saying how the tap ended.  Exits with the tap's
 * status (128+n when killed by signal n, 127 not found, 126 cannot run).
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "config.h"
#include "err.h"
#include "sb.h"
#include "tap.h"
#include "util.h"

static const char usage_line[] = "pipe-tap [-hnsv] [-D PID] [-l FILE] NAME | -c FILE.yaml";

static const char help_text[] =
	"usage: pipe-tap [-hnsv] [-D PID] [-l FILE] NAME\n"
	"       pipe-tap [-hnsv] [-D PID] [-l FILE] -c FILE.yaml\n"
	"\n"
	"Run the pipeline's Singer tap.  The saved state is read from stdin (one\n"
	"JSON line; empty or {} means none).  The tap runs without a shell, with\n"
	"--config FILE (an inline mapping goes to a private temporary file, removed\n"
	"afterwards), --state FILE when the state is a non-empty object, and\n"
	"a catalog when source.catalog, source.streams or source.metadata is set:\n"
	"the tap's discovered catalog (cached beside the pipeline as NAME.catalog.json,\n"
	"discovered again when a chosen stream is not in it) with the chosen streams\n"
	"selected and the metadata applied, passed with --catalog or --properties\n"
	"(source.catalog_flag, else the tap's --about, whose answer is cached in\n"
	"NAME.tap.json).  Both caches hold for one tap command only.\n"
	"Its stdout is copied to stdout, after a DATASPOC_TAP_SELECTED line naming\n"
	"the selected streams, and followed by one end line:\n"
	"  {\"type\":\"DATASPOC_TAP_END\",\"status\":\"success\",\"exit_status\":0}\n"
	"SIGINT, SIGTERM and SIGHUP are passed on to the tap's process group.  When\n"
	"$DATASPOC_PIPE_PID names a process that ends, or stdout's reader goes away,\n"
	"the tap is stopped (SIGTERM); a tap still there $DATASPOC_PIPE_KILL_GRACE\n"
	"seconds later (default 5) is killed with its group.\n"
	"\n"
	"Options:\n"
	"  -c FILE     the pipeline file, instead of NAME\n"
	"  -D PID      with -n: first make the private folder of the driver PID for\n"
	"              its run ($TMPDIR/dataspoc-pipe.XXXXXX, locked while this runs;\n"
	"              the folders of runs that are over removed first), print its\n"
	"              path as the first line on stdout (and, once the checks passed,\n"
	"              a new run id as the second, and as the third \"transform\" when\n"
	"              the pipeline may have a transform for pipe-sink -n to check,\n"
	"              else \"checkpoints\" when it checkpoints, else \"none\"; as the\n"
	"              fourth \"merge\" when it sets a load_method for pipe-merge, else\n"
	"              \"none\"), export it as\n"
	"              DATASPOC_PIPE_RUN_DIR and write stderr to its check.err\n"
	"  -l FILE     append the tap's stderr to FILE instead of showing it (that\n"
	"              of discovery and --about too), keeping only its end: past\n"
	"              128 KiB it is cut to its last 64 KiB\n"
	"  -n          check that a run could start: the config, the tap found, the\n"
	"              streams selected (running discovery when needed); run nothing\n"
	"  -s          check the source: run the tap's discovery with its config\n"
	"              (within $DATASPOC_PIPE_CHECK_TIMEOUT seconds, default 30), print\n"
	"              the flag that hands it a catalog, then the streams it offers,\n"
	"              one a line; on failure say its first line of error, exit 1\n"
	"  -v          without -l, show the stderr of discovery and --about as they\n"
	"              run (else discovery's is shown only when it fails); with -l,\n"
	"              also show the tap's stderr, whole lines, as it comes\n"
	"  --refresh-catalog  run the tap's discovery and --about again, even when\n"
	"              their answers are cached beside the pipeline\n"
	"  -h, --help  this help\n"
	"  --version   its version\n"
	"\n"
	"Exit status: the tap's own; 128+n when it was killed by signal n; 126 it\n"
	"cannot run; 127 not found; 2 bad usage or config.\n";

/* -D: the driver's private folder, locked on this descriptor while pipe-tap lives */
static int run_dir_lock = -1;

/*
 * At the end of pipe-tap -n -D the folder is marked changed and its lock let
 * go, for the driver's next program to take on descriptor 9 (another open of
 * the folder).  LOCK_UN frees it for every copy of this descriptor: a
 * janitor forked a moment ago may not have closed its copy yet.  Between
 * this and that lock nothing holds it, and a sweep leaves a folder changed
 * in the last minute alone (discovery may have taken longer).
 */
static void let_go_of_run_dir(void)
{
	if (futimens(run_dir_lock, NULL) != 0) {
		/* an older folder is swept only once its lock is free: the run then fails, said by the next program */
	}
	flock(run_dir_lock, LOCK_UN);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "refresh-catalog", no_argument, NULL, 'R' },
		{ NULL, 0, NULL, 0 }
	};
	struct pipe_config cfg;
	struct sb state = SB_INIT;
	struct tap_options topt = { NULL, 0, 0, 0, 0 };
	const char *file = NULL, *log = NULL;
	long driver = 0;
	int c, ret, said = -1;

	err_init_stage(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	if (cli_lock_run() != 0)
		return CLI_FAILED;
	/* (linked statically: no getpwuid(3), cmd/pipe-tap/build.mk) */
	config_home_by_getent();
	memset(&cfg, 0, sizeof(cfg));
	while ((c = getopt_long(argc, argv, "c:D:hl:nsv", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			file = optarg;
			break;
		case 'D':
			driver = util_parse_long(optarg, 1, 0x7fffffffL, 0);
			if (driver <= 0) {
				cli_usage(usage_line);
				return CLI_USAGE;
			}
			break;
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'l':
			log = optarg;
			break;
		case 'n':
			topt.check = 1;
			break;
		case 's':
			topt.source = 1;
			break;
		case 'R':
			topt.refresh_catalog = 1;
			break;
		case 'v':
			topt.live = 1;
			break;
		default:
			cli_usage(usage_line);
			return CLI_USAGE;
		}
	}
	if (argc - optind > 1 || (driver > 0 && !topt.check)) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (driver > 0) {
		/* (tap_make_run_dir() leaves stdout /dev/null: the run id's line goes here) */
		said = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		if (said < 0 || tap_make_run_dir(driver, &run_dir_lock) != 0)
			return CLI_FAILED;
		atexit(let_go_of_run_dir);
	}
	if (cli_load_config(file, optind < argc ? argv[optind] : NULL, &cfg) != 0)
		return CLI_USAGE;
	/* a missing tap config is a config error, said before the tap starts */
	if (config_check_source(&cfg, NULL) != 0) {
		config_free(&cfg);
		return CLI_USAGE;
	}
	/* A terminal on stdin means "no state", not "wait for one". */
	if (!topt.check && !topt.source && !isatty(STDIN_FILENO) && util_read_fd(STDIN_FILENO, &state) != 0) {
		err_msg("cannot read the state from stdin:");
		config_free(&cfg);
		return CLI_FAILED;
	}
	fflush(stdout);
	topt.stderr_path = log;
	ret = tap_run(&cfg, state.buf ? state.buf : "", state.len, STDOUT_FILENO, &topt);
	/* -D: the checks passed; the run's id, for pipe-state get -r (no file for it to make) */
	if (said >= 0 && ret == 0) {
		/* and what pipe-sink -n would have to check or say (the driver starts it only for a transform) */
		const char *sink = config_transform_maybe(cfg.name) ? "transform" :
				   config_checkpoints(&cfg) ? "checkpoints" : "none";
		/* and whether pipe-merge has streams to merge or load methods to say (issue #27) */
		char *id = util_new_run_id(), *line = xasprintf("%s\n%s\n%s\n", id, sink, cfg.nloads ? "merge" : "none");

		if (util_write_all(said, line, strlen(line)) != 0) {
			err_msg("cannot hand over the run id:");
			ret = CLI_FAILED;
		}
		free(line);
		free(id);
	}
	if (said >= 0)
		close(said);
	sb_free(&state);
	config_free(&cfg);
	if (cli_close_stdout() != 0 && ret == 0)
		ret = CLI_FAILED;
	return ret;
}
