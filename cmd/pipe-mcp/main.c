/*
 * pipe-mcp: the Model Context Protocol server of dataspoc-pipe, for AI
 * agents.  Speaks MCP (JSON-RPC 2.0, one message a line) on stdin and
 * stdout, and answers its tools (list_pipelines, pipeline_config,
 * run_pipeline, pipeline_status, pipeline_logs, show_manifest,
 * validate_pipeline) and its resource (pipe://pipelines) by running the
 * existing commands as children.  -p and -l print what two of them answer
 * with, the config of a pipeline and the list of pipelines.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "mcp.h"

#include "cli.h"
#include "err.h"

static const char usage_line[] = "pipe-mcp [-hr] | -p NAME | -l";

static const char help_text[] =
	"usage: pipe-mcp [-hr]\n"
	"       pipe-mcp -p NAME\n"
	"       pipe-mcp -l\n"
	"\n"
	"Serve the Model Context Protocol on stdin and stdout (JSON-RPC 2.0, one\n"
	"message a line), for AI agents: the tools list_pipelines, pipeline_config,\n"
	"run_pipeline, pipeline_status, pipeline_logs, show_manifest and\n"
	"validate_pipeline, and the resource pipe://pipelines.  Each runs a command\n"
	"of dataspoc-pipe's, found beside pipe-mcp or else on PATH (dataspoc-pipe run\n"
	"and validate, pipe-state pipelines, status, logs and manifest); what it\n"
	"prints comes back as the answer, secrets masked.  A run takes the pipeline's\n"
	"lock as any run does, sends progress notifications, and stops cleanly when\n"
	"its request is cancelled.  Only MCP messages go to stdout; logs go to stderr.\n"
	"The session ends at the end of stdin, once the requests in flight are\n"
	"answered.\n"
	"\n"
	"Options:\n"
	"  -l              print the resource pipe://pipelines (each pipeline's name,\n"
	"                  tap and bucket, as JSON) and exit\n"
	"  -p NAME         print the config of pipeline NAME as pipeline_config\n"
	"                  answers it (JSON, secrets masked) and exit\n"
	"  -r, --read-only serve without run_pipeline\n"
	"  -h, --help      this help\n"
	"  --version       its version\n"
	"\n"
	"Exit status: 0 the session ended, 1 it failed (stdout could not be\n"
	"written), 2 bad usage or an unknown pipeline (-p); killed by the signal\n"
	"that stopped it (SIGINT, SIGTERM, SIGHUP).\n";

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "read-only", no_argument, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	const char *name = NULL;
	int opt, list = 0, read_only = 0;

	err_init(argv[0]);
	if (cli_version(argc, argv))
		return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
	while ((opt = getopt_long(argc, argv, "hlp:r", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			fputs(help_text, stdout);
			return cli_close_stdout() == 0 ? CLI_OK : CLI_FAILED;
		case 'l':
			list = 1;
			break;
		case 'p':
			name = optarg;
			break;
		case 'r':
			read_only = 1;
			break;
		default:
			cli_usage(usage_line);
			return CLI_USAGE;
		}
	}
	if (optind != argc || (name && list) || ((name || list) && read_only)) {
		cli_usage(usage_line);
		return CLI_USAGE;
	}
	if (name)
		return show_config(name);
	if (list)
		return show_pipelines();
	return server_run(read_only);
}
