/*
 * singer_tap: what the built-in Singer taps (dataspoc-tap-csv, -parquet,
 * -postgres, -google-sheets-public) share: their command line, and reading
 * their JSON files (config, catalog) with libjq.
 */
#ifndef PIPE_SINGER_TAP_H
#define PIPE_SINGER_TAP_H

#include <stddef.h>

#include <jv.h>

#include "sb.h"

/* A tap's exit statuses beside 0: a failure, a usage or config error. */
enum { EXIT_FAIL = 1, EXIT_USAGE = 2 };

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

/*
 * A built-in tap's words and hooks, for singer_tap_main().  tap is the
 * tap's own state, handed to each hook; a hook returns 0, or the exit
 * status after reporting.
 */
struct singer_tap_hooks {
	const char *name;		/* the program's: --version, usage */
	const char *usage_line, *help;	/* singer_tap_args()'s */
	const char *about_json;		/* --about: printed pretty, unless about is set */
	int (*about)(void *tap);	/* --about printed by the tap itself (or NULL) */
	/* the options into the tap (their strings point into argv), then its config */
	int (*config)(void *tap, const struct singer_tap_args *a);
	int (*discover)(void *tap);	/* -d: print the catalog */
	int (*sync)(void *tap);		/* the catalog, the state, then the streams */
	/*
	 * Last, whatever came before: free the tap; returns rc (or the status of
	 * a failure of its own, such as its last flush), *write_failed set when
	 * a write to stdout failed.
	 */
	int (*end)(void *tap, int rc, int *write_failed);
};

/*
 * A built-in tap's main(): its command line (singer_tap_args()), stdout
 * fully buffered, then --about, or the config and -d's catalog or the sync;
 * the end hook, and the exit status (singer_tap_finish()).  tap zeroed (or
 * with its defaults) by the caller.
 */
int singer_tap_main(int argc, char **argv, const struct singer_tap_hooks *h, void *tap);

/*
 * Read the JSON file path into *out (owned by the caller).  what names the
 * file in messages ("config", "catalog", "properties"): "what 'path':
 * strerror" when it cannot be read, "what 'path': reason" when it is too
 * large or not JSON (jq's reason, cut before the text it quotes: the file
 * may hold secrets).  0, or 2 (the exit status of a config error) after
 * reporting.
 */
int singer_tap_load_json(const char *what, const char *path, jv *out);

/*
 * A path of the tap's config, as the tap opens it (newly allocated): a
 * relative one is relative to $DATASPOC_TAP_CONFIG_DIR, the folder of the
 * file the config was written in, which pipe-tap sets (a pipeline's
 * relative paths are relative to its file, never to where a run starts,
 * which for cron is $HOME); without it, to the working directory.  An
 * absolute path, and a URL ("s3://..."), as written.
 */
char *singer_tap_path(const char *path);

/* Print "what 'file': why" and return 2 (the exit status of a config error). */
int singer_tap_bad(const char *what, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* singer_tap_bad() for the byte pos of file's text[0..len): "what 'file':
 * line L, column C: why".  Returns 2. */
int singer_tap_bad_at(const char *what, const char *file, const char *text, size_t len,
		      size_t pos, const char *why);

/* 1 when catalog metadata entry m (an object) says "selected": false. */
int singer_tap_deselected(jv m);

/*
 * Read the catalog file (what: "catalog" or "properties") and hand back its
 * "streams" array in *streams (owned by the caller).  0, or 2 after
 * reporting a file that cannot be read, is not JSON or is not a catalog.
 */
int singer_tap_catalog(const char *what, const char *file, jv *streams);

/* The id of catalog stream s (borrowed): its "tap_stream_id", else its
 * "stream"; invalid when s is not an object or neither is a string. */
jv singer_tap_stream_id(jv s);

/*
 * Catalog stream s's selection (s borrowed; name names it in messages).
 * *selected is cleared by "selected": false in its schema (the legacy
 * form) or in its metadata of breadcrumb []; each property whose
 * breadcrumb ["properties", NAME] says "selected": false is appended to
 * *drop (*ndrop strings, each the caller's).  0, or 2 after reporting
 * metadata that is not a list of objects with a "breadcrumb" array.
 */
int singer_tap_stream_selection(const char *what, const char *file, const char *name, jv s,
				int *selected, char ***drop, size_t *ndrop);

/*
 * The catalog file's stream named stream, for a tap of one stream: *selected
 * is 1 when the catalog lists it and leaves it selected (0 when it does not
 * list it), its deselected properties appended to *drop.  0, or 2 after
 * reporting (singer_tap_catalog(), singer_tap_stream_selection()).
 */
int singer_tap_select_one(const char *what, const char *file, const char *stream, int *selected,
			  char ***drop, size_t *ndrop);

/* Warn "config 'file': [where: ]key 'K' ignored" for each member of object
 * obj not among the n strings of known (where may be NULL); a key that
 * begins with "_" is a comment ("_comment", as the Python tool writes). */
void singer_tap_warn_unknown(jv obj, const char *const *known, size_t n, const char *file,
			     const char *where);

/*
 * Config member key as a C string in *out (the caller's; NULL when the
 * member is absent or null): a non-empty string without a NUL or, with num,
 * a whole number from 0 to 2^32-1 (printed in decimal).  0, or -1 when the
 * member is something else (the caller says what it expects).
 */
int singer_tap_config_string(jv conf, const char *key, int num, char **out);

/*
 * Write msg to stdout and empty it: 0, or -1 once the write failed (said on
 * stderr unless stdout's reader is gone, EPIPE), with *write_failed set.
 */
int singer_tap_emit(struct sb *msg, int *write_failed);

/* JSON text json (the tap's own: --about, --discover) pretty-printed through
 * msg to stdout: 0, or the exit status of a failure after saying it. */
int singer_tap_print_pretty(const char *json, size_t len, struct sb *msg, int *write_failed);

/* The end of a tap's main(): close stdout and give the exit status, rc
 * unless closing or an earlier write failed (then 1 when rc was 0). */
int singer_tap_finish(int rc, int write_failed);

/*
 * JSON array of strings v (borrowed) into *list, NULL-terminated, and its
 * length *n: each string the caller's, and so is the list, read or not (free
 * it with singer_tap_free_list()).  0, or -1 when v is not an array or an
 * element is not a string without a NUL (the strings before it are kept).
 */
int singer_tap_string_list(jv v, char ***list, size_t *n);

/* Free the n strings of list, and list (NULL with n 0 is fine). */
void singer_tap_free_list(char **list, size_t n);

/* 1 when s is one of the n strings of list, else 0. */
int singer_tap_in_list(char *const *list, size_t n, const char *s);

#endif
