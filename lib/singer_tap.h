/*
 * singer_tap: what the built-in Singer taps (dataspoc-tap-csv, -parquet,
 * -postgres, -google-sheets-public) share: their command line.
 */
#ifndef PIPE_SINGER_TAP_H
#define PIPE_SINGER_TAP_H

/* A tap's options; the strings point into argv. */
struct singer_tap_args {
	const char *config, *state, *catalog, *properties;
	int discover, about;
};

/* singer_tap_args()'s answer when the tap is to go on with its work. */
#define SINGER_TAP_GO (-1)

/*
 * Parse a Singer tap's command line, the same for every tap:
 *
 *   NAME [-d] -c config [-s state] [-p properties | --catalog catalog]
 *        [--about] [--version] [-h]
 *
 * name is the program's name (for --version: "NAME VERSION"), usage_line
 * the "usage: ..." line with its newline, help the text printed after it
 * and a blank line by -h/--help.  err_init() must have run.
 *
 * Returns SINGER_TAP_GO with *a filled in when the tap is to go on (with
 * a->about set, --config and the exclusivity of --catalog and --properties
 * are not checked); otherwise the exit status the program must stop with
 * now: 0 after --help or --version (printed on stdout: the caller still
 * checks that stdout closed cleanly), 2 after a usage error (reported, then
 * the usage line on stderr).
 */
int singer_tap_args(int argc, char **argv, const char *name, const char *usage_line,
		    const char *help, struct singer_tap_args *a);

#endif
