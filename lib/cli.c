/* cli: the parts of every main() that would otherwise be written four times. */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>

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

/* The descriptor $name names, when it is open on a file of that type; else -1. */
static int inherited_fd(const char *name, mode_t type)
{
	long fd = util_env_long(name, 3, 1023, -1);
	struct stat st;

	if (fd < 0 || fstat((int)fd, &st) != 0 || (st.st_mode & S_IFMT) != type)
		return -1;
	return (int)fd;
}

/* flock(2) exclusive, at once: 0 or -1. */
static int lock_now(int fd)
{
	int r;

	while ((r = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
		;
	return r;
}

int cli_lock_run(void)
{
	int fd = inherited_fd("DATASPOC_PIPE_RUN_DIR_FD", S_IFDIR);
	const char *dir = getenv("DATASPOC_PIPE_RUN_DIR");
	struct stat st;

	if (fd >= 0) {
		if (lock_now(fd) != 0) {
			err_msg("cannot lock the run's private folder '%s':", dir ? dir : "?");
			return -1;
		}
		/* (a sweep removes a folder once it holds its lock) */
		if (fstat(fd, &st) != 0 || st.st_nlink == 0) {
			err_msg("the run's private folder '%s' is gone", dir ? dir : "?");
			return -1;
		}
	}
	fd = inherited_fd("DATASPOC_PIPE_STAGES_FD", S_IFREG);
	if (fd >= 0)
		lock_now(fd);
	return 0;
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

int cli_version(int argc, char **argv)
{
	const char *name;

	if (argc != 2 || strcmp(argv[1], "--version") != 0)
		return 0;
	name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	printf("%s %s\n", name, PIPE_VERSION);
	return 1;
}
