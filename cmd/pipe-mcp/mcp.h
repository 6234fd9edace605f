/*
 * pipe-mcp's parts: the server (server.c: the JSON-RPC session on stdin and
 * stdout, the children it runs), the tools and the resource (tools.c: their
 * descriptions, their arguments, the commands they run and how their output
 * becomes an answer), and what pipe-mcp prints itself for them (show.c:
 * pipeline_config's JSON, the pipe://pipelines resource), with the masking
 * of secrets that every answer goes through.
 */
#ifndef PIPE_MCP_H
#define PIPE_MCP_H

#include <jv.h>

#include "child.h"
#include "config.h"
#include "sb.h"

/* JSON-RPC 2.0's error codes, and MCP's for an unknown resource. */
#define RPC_PARSE_ERROR		(-32700)
#define RPC_INVALID_REQUEST	(-32600)
#define RPC_METHOD_NOT_FOUND	(-32601)
#define RPC_INVALID_PARAMS	(-32602)
#define RPC_INTERNAL_ERROR	(-32603)
#define MCP_RESOURCE_NOT_FOUND	(-32002)

/* What pipe-mcp says it is, in initialize's serverInfo. */
#define MCP_SERVER_NAME "dataspoc-pipe"
#define MCP_SERVER_VERSION "0.1.0"

/* The resource, and its MIME type. */
#define MCP_PIPELINES_URI "pipe://pipelines"

/* At most this much of a child's stdout and of its stderr is kept. */
#define MCP_OUTPUT_MAX (16u << 20)

struct tool;

/*
 * One tool call or resource read: the request it answers, the command it
 * runs, what that command printed.  Made by tools.c, run by server.c.
 */
struct job {
	struct job *next;
	jv id;			/* the request's id */
	jv token;		/* its _meta.progressToken, or null */
	const struct tool *tool;	/* NULL: resources/read of pipe://pipelines */
	jv args;		/* the call's arguments, checked */
	struct pipe_config cfg;	/* the pipeline named, loaded for masking */
	int have_cfg;
	int structured;		/* the session's version has structuredContent */

	struct child_process c;	/* the command: c.argv, c.exe (exe) */
	char *exe;
	const char *prog;	/* its name, c.argv[0] (which child_finish() clears) */
	int running;
	int out_fd, err_fd;	/* read ends of its stdout and stderr; -1 at their end */
	struct sb out, err;	/* what it printed (at most MCP_OUTPUT_MAX each) */
	struct sb part[2];	/* run_pipeline: the start of a line of stdout, of stderr,
				   not reported yet */
	int truncated;
	double progress;	/* progress notifications sent */
	int exited;		/* it has ended (not reaped yet) */
	int cancelled;		/* notifications/cancelled came: no answer */
	int stopped;		/* SIGTERM sent */
	double kill_at;		/* SIGKILL to its group then, once stopped; 0: none */
	double give_up_at;	/* once it has ended: stop waiting for its pipes' end */
};

/* ---- tools.c ---- */

/* The tools/list result's "tools" array; run_pipeline left out when read_only. */
jv tools_list(int read_only);

/* The resources/list result's "resources" array. */
jv tools_resources(void);

/*
 * The tool named, or NULL; *disabled set when it exists but read_only
 * leaves it out.
 */
const struct tool *tools_find(const char *name, int read_only, int *disabled);

/* The tool's name. */
const char *tools_name(const struct tool *t);

/* 1 when the tool's progress (its command's lines) is worth reporting. */
int tools_reports_progress(const struct tool *t);

/*
 * Check args (an object, consumed) against t's inputSchema and fill j for
 * it: j->args, j->cfg (quietly loaded when the tool names a pipeline) and
 * the command, j->c.argv and j->c.exe.  Returns 0, or -1 with the reason in
 * *why (a new string, for a JSON-RPC error -32602).
 */
int tools_prepare(const struct tool *t, jv args, struct job *j, char **why);

/* Fill j for resources/read of pipe://pipelines. */
void tools_prepare_resource(struct job *j);

/*
 * The answer to j once its command has ended with status: a tools/call
 * result (isError true when the command failed), or a resources/read result.
 * A resource whose command failed is an error: *code and *why set (new
 * string) and jv_invalid() returned.
 */
jv tools_result(struct job *j, int status, int *code, char **why);

/* ---- show.c ---- */

/*
 * pipe-mcp -p NAME: pipeline NAME's config as pipeline_config answers it,
 * secrets masked, one JSON object on stdout.  An exit status (cli.h).
 */
int show_config(const char *name);

/* pipe-mcp -l: the pipe://pipelines resource, a JSON array on stdout. */
int show_pipelines(void);

/*
 * Mask secrets: every string (and key) of v through mask_apply()
 * with cfg (NULL: its patterns only).  Consumes v.
 */
jv show_mask(const struct pipe_config *cfg, jv v);

/* The same for text. */
void show_mask_text(const struct pipe_config *cfg, struct sb *text);

/* Load pipeline name without a word on stderr (its errors are a child's to say).  0 or -1. */
int show_load_quiet(const char *name, struct pipe_config *cfg);

/* ---- server.c ---- */

/* Serve one MCP session on stdin and stdout.  An exit status (cli.h). */
int server_run(int read_only);

#endif
