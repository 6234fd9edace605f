/* cli: the parts of every main() that would otherwise be written four times. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/prctl.h>

#include "err.h"
#include "util.h"

int cli_load_config(const char *file, const char *name, struct pipe_config *cfg)
{
	if ((file == NULL) == (name == NULL)) {
		err_msg(file ? "give either a pipeline NAME or -c FILE, not both" :
			"no pipeline: give a NAME or -c FILE");
		return -1;
	}
	return file ? config_load_file(file, cfg) : config_load_name(name, cfg);
}

const char *cli_run_id(const char *arg, int *bad)
{
	const char *id = arg ? arg : getenv("DATASPOC_RUN_ID");

	*bad = 0;
	if (id == NULL || *id == '\0')
		return NULL;
	if (!util_run_id_ok(id)) {
		err_msg("invalid run id '%s' (expected the shape 20261130T004809Z-3fa9c1)", id);
		*bad = 1;
		return NULL;
	}
	return id;
}

void cli_die_with_driver(void)
{
	long driver = util_env_long("DATASPOC_PIPE_PID", 2, 0x7fffffffL, 0);

	if (driver == 0 || (long)getppid() != driver)
		return;
	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	/* it may have died before the call */
	if ((long)getppid() != driver)
		_exit(CLI_FAILED);
}

int cli_close_stdout(void)
{
	int bad = ferror(stdout);

	if (fclose(stdout) != 0 || bad) {
		if (errno == 0)
			errno = EIO;
		err_msg("write error:");
		return -1;
	}
	return 0;
}

void cli_usage(const char *usage)
{
	fprintf(stderr, "usage: %s\n", usage);
}
