/* Unit tests of the run ids of util.c, and of err.c's last line said. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "err.h"
#include "taptest.h"
#include "util.h"

int main(void)
{
	char *prev = util_new_run_id();
	struct timespec two_ms = { 0, 2000000L };
	int i, sorted = 1, valid = util_run_id_ok(prev);

	ok(valid, "a new run id has the run id's shape: %s", prev);
	ok(strlen(prev) == strlen("20261130T004809Z-4173fa9c1"), "and its length");
	ok(util_run_id_time(prev) != (time_t)-1, "its time parses");
	/* Ids made a few milliseconds apart, within one second or across
	 * one, sort in the order they were made. */
	for (i = 0; i < 20; i++) {
		char *next;

		nanosleep(&two_ms, NULL);
		next = util_new_run_id();
		if (strcmp(prev, next) >= 0) {
			printf("# '%s' does not sort before '%s'\n", prev, next);
			sorted = 0;
		}
		valid &= util_run_id_ok(next);
		free(prev);
		prev = next;
	}
	ok(sorted, "run ids sort in the order they were made, even within one second");
	ok(valid, "all of them valid");
	free(prev);

	ok(util_run_id_ok("20261130T004809Z-3fa9c1"), "the older six-digit suffix is still a run id");
	ok(!util_run_id_ok("20261130T004809Z-"), "an empty suffix is not");
	ok(!util_run_id_ok("20261130T004809Z-3FA9C1"), "nor upper case");
	ok(!util_run_id_ok("2026-11-30"), "nor a date");

	ok(util_utf8_valid("", 0), "utf8: empty");
	ok(util_utf8_valid("a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 10), "utf8: one to four bytes");
	ok(!util_utf8_valid("\xc0\xaf", 2), "utf8: an overlong '/'");
	ok(!util_utf8_valid("\xed\xa0\x80", 3), "utf8: a surrogate");
	ok(!util_utf8_valid("\xf4\x90\x80\x80", 4), "utf8: past U+10FFFF");
	ok(!util_utf8_valid("\xe2\x82", 2), "utf8: cut short");
	ok(!util_utf8_valid("\x80", 1), "utf8: a lone continuation byte");

	/* util_remove_tree: files, a folder in it, a link that is not followed */
	{
		char tree[] = "/tmp/test_util.XXXXXX", path[256], kept[] = "/tmp/test_util_kept.XXXXXX";
		int fd, made = mkdtemp(tree) != NULL && mkdtemp(kept) != NULL;

		snprintf(path, sizeof(path), "%s/kept-file", kept);
		fd = made ? open(path, O_WRONLY | O_CREAT | O_EXCL, 0600) : -1;
		made &= fd >= 0;
		if (fd >= 0)
			close(fd);
		snprintf(path, sizeof(path), "%s/plan", tree);
		fd = made ? open(path, O_WRONLY | O_CREAT | O_EXCL, 0600) : -1;
		made &= fd >= 0 && write(fd, "x\n", 2) == 2;
		if (fd >= 0)
			close(fd);
		snprintf(path, sizeof(path), "%s/sub", tree);
		made &= mkdir(path, 0700) == 0;
		snprintf(path, sizeof(path), "%s/sub/link", tree);
		made &= symlink(kept, path) == 0;
		ok(made, "remove_tree: a tree made");
		ok(util_remove_tree(tree) == 0, "remove_tree: removed");
		ok(access(tree, F_OK) != 0, "remove_tree: the folder is gone");
		snprintf(path, sizeof(path), "%s/kept-file", kept);
		ok(access(path, F_OK) == 0, "remove_tree: what a link in it names stays");
		ok(util_remove_tree(tree) == 0, "remove_tree: a folder already gone is no error");
		ok(util_remove_tree(kept) == 0 && access(kept, F_OK) != 0, "remove_tree: the other one");
	}
	/* err_last_cause(): what a store's "cannot VERB 'SUBJECT': CAUSE" said (issue #29) */
	{
		char buf[64];
		unsigned long said = err_said();
		int fd = dup(2), null = open("/dev/null", O_WRONLY);

		ok(fd >= 0 && null >= 0 && dup2(null, 2) == 2, "err: stderr put aside");
		err_warn("a warning is not a line said");
		ok(err_said() == said, "err: a warning does not count");
		err_msg("cannot write '%s': %s", "/b/it's: here", "No space left on device");
		ok(err_said() == said + 1, "err: a line counts");
		ok(err_last_cause(buf, sizeof(buf)) == 0 && strcmp(buf, "No space left on device") == 0,
		   "err: the cause after the quoted subject: %s", buf);
		ok(err_last(buf, sizeof(buf)) == 0 && strncmp(buf, "cannot write '/b/", 17) == 0,
		   "err: the whole line, without the program's name: %s", buf);
		/* a subject holding "': " is the subject still: the cause is what followed it */
		err_msg("cannot write '%s': %s", "/lake/it': x/f.jsonl", "No space left on device");
		ok(err_last_cause(buf, sizeof(buf)) == 0 && strcmp(buf, "No space left on device") == 0,
		   "err: a subject with \"': \" in it: %s", buf);
		errno = ENOTDIR;
		err_msg("cannot create directory '%s':", "/lake/it': x/s");
		ok(err_last_cause(buf, sizeof(buf)) == 0 && strcmp(buf, strerror(ENOTDIR)) == 0,
		   "err: a subject with \"': \" in it, strerror's cause: %s", buf);
		err_context = "pipeline 'p'";
		err_msg("cannot write '%s': %s", "k", "No space left on device");
		err_context = NULL;
		ok(err_last_cause(buf, sizeof(buf)) == 0 && strcmp(buf, "No space left on device") == 0,
		   "err: a line said in a context: the cause still: %s", buf);
		err_msg("cannot read '%s': column '%s': %s", "f': g", "c", "not a number");
		ok(err_last_cause(buf, sizeof(buf)) == 0 && strcmp(buf, "column 'c': not a number") == 0,
		   "err: the cause of a cause's own quotes is all that follows the subject: %s", buf);
		/* the first line said since a mark: the root cause, not a cleanup's after it */
		{
			unsigned long mark = err_said();

			ok(err_first_cause(mark, buf, sizeof(buf)) == -1 && buf[0] == '\0',
			   "err: nothing said since the mark");
			err_msg("cannot write '%s': %s", "k", "UploadPart: HTTP 500");
			err_msg("cannot abort the upload of '%s': %s", "k", "AbortMultipartUpload: HTTP 500");
			ok(err_first_cause(mark, buf, sizeof(buf)) == 0 && strcmp(buf, "UploadPart: HTTP 500") == 0,
			   "err: the first cause since the mark: %s", buf);
			ok(err_last_cause(buf, sizeof(buf)) == 0 && strcmp(buf, "AbortMultipartUpload: HTTP 500") == 0,
			   "err: the last cause is the last line's: %s", buf);
			for (i = 0; i < 9; i++)
				err_msg("cannot try '%s': %d", "k", i);
			ok(err_first_cause(mark, buf, sizeof(buf)) == 0 && strcmp(buf, "1") == 0,
			   "err: past 8 lines, the oldest kept: %s", buf);
		}
		err_msg("no bucket directory given");
		ok(err_last_cause(buf, sizeof(buf)) == 0 && strcmp(buf, "no bucket directory given") == 0,
		   "err: a line of another shape is its own cause");
		ok(err_last_cause(buf, 8) == 0 && strcmp(buf, "no buck") == 0, "err: cut short to the room given");
		dup2(fd, 2);
		close(fd);
		close(null);
	}
	return tap_done();
}
