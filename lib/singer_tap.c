/* singer_tap: the built-in Singer taps' command line. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "err.h"
#include "singer_tap.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif

enum { OPT_ABOUT = 256, OPT_CATALOG, OPT_VERSION };

static int usage(const char *usage_line)
{
	fputs(usage_line, stderr);
	return 2;
}

int singer_tap_args(int argc, char **argv, const char *name, const char *usage_line,
		    const char *help, struct singer_tap_args *a)
{
	static const struct option longopts[] = {
		{ "about", no_argument, NULL, OPT_ABOUT },
		{ "catalog", required_argument, NULL, OPT_CATALOG },
		{ "config", required_argument, NULL, 'c' },
		{ "discover", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ "properties", required_argument, NULL, 'p' },
		{ "state", required_argument, NULL, 's' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 }
	};
	int ch;

	memset(a, 0, sizeof(*a));
	opterr = 0;	/* getopt would print the whole argv[0] */
	while ((ch = getopt_long(argc, argv, ":c:dhp:s:", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_ABOUT:
			a->about = 1;
			break;
		case OPT_CATALOG:
			a->catalog = optarg;
			break;
		case 'c':
			a->config = optarg;
			break;
		case 'd':
			a->discover = 1;
			break;
		case 'h':
			fputs(usage_line, stdout);
			fputs("\n", stdout);
			fputs(help, stdout);
			return 0;
		case 'p':
			a->properties = optarg;
			break;
		case 's':
			a->state = optarg;
			break;
		case OPT_VERSION:
			printf("%s %s\n", name, PIPE_VERSION);
			return 0;
		case ':':
			err_msg("option '%s' needs an argument", argv[optind - 1]);
			return usage(usage_line);
		default:
			if (optopt > 0 && optopt < 256)
				err_msg("unknown option '-%c'", optopt);
			else
				err_msg("unknown option '%s'", argv[optind - 1]);
			return usage(usage_line);
		}
	}
	if (optind < argc) {
		err_msg("unexpected argument '%s'", argv[optind]);
		return usage(usage_line);
	}
	if (a->about)
		return SINGER_TAP_GO;
	if (a->config == NULL) {
		err_msg("--config is required");
		return usage(usage_line);
	}
	if (a->catalog != NULL && a->properties != NULL) {
		err_msg("--catalog and --properties are exclusive");
		return usage(usage_line);
	}
	return SINGER_TAP_GO;
}
