/* Unit tests of cron_check(). */
#include "cron.h"
#include "sb.h"
#include "taptest.h"

static void valid(const char *expr)
{
	struct sb why = SB_INIT;

	ok(cron_check(expr, &why) == 0 && why.len == 0, "valid: '%s'", expr);
	sb_free(&why);
}

/* want: the reason, or "" for a shape error (no reason given). */
static void invalid(const char *expr, const char *want)
{
	struct sb why = SB_INIT;
	int r = cron_check(expr, &why);

	ok(r == -1, "invalid: '%s'", expr);
	is_str(why.buf ? why.buf : "", want, "reason for '%s'", expr);
	sb_free(&why);
}

/* want: the lines cron_convert() appends, or NULL when it refuses with why. */
static void converts(const char *expr, enum cron_form form, const char *want, const char *why_want)
{
	struct sb out = SB_INIT, why = SB_INIT;
	int r = cron_convert(expr, form, &out, &why);

	if (want) {
		ok(r == 0, "converts: '%s'", expr);
		is_str(out.buf ? out.buf : "", want, "'%s' as %s", expr,
		       form == CRON_FORM_CRON ? "cron" : "systemd");
	} else {
		ok(r == -1 && out.len == 0, "refused: '%s'", expr);
		is_str(why.buf ? why.buf : "", why_want, "why '%s' is refused", expr);
	}
	sb_free(&out);
	sb_free(&why);
}

static void convert_tests(void)
{
	converts("0 */2 * * *", CRON_FORM_CRON, "0 0,2,4,6,8,10,12,14,16,18,20,22 * * *\n", NULL);
	converts("0 */2 * * *", CRON_FORM_SYSTEMD,
		 "*-*-* 00,02,04,06,08,10,12,14,16,18,20,22:00:00\n", NULL);
	converts("*/15 9-17 * * mon-fri", CRON_FORM_CRON, "0,15,30,45 9-17 * * 1-5\n", NULL);
	converts("*/15 9-17 * * mon-fri", CRON_FORM_SYSTEMD,
		 "Mon..Fri *-*-* 09..17:00,15,30,45:00\n", NULL);
	/* 7 is Sunday; both day fields restricted: either day */
	converts("0 0 1,15 * 7", CRON_FORM_CRON, "0 0 1,15 * 0\n", NULL);
	converts("0 0 1,15 * 7", CRON_FORM_SYSTEMD, "Sun *-*-* 00:00:00\n*-*-01,15 00:00:00\n", NULL);
	converts("0 0 1-31 * 1", CRON_FORM_CRON, "0 0 * * *\n", NULL);
	converts("30 2 1 jan *", CRON_FORM_CRON, "30 2 1 1 *\n", NULL);
	converts("30 2 1 jan *", CRON_FORM_SYSTEMD, "*-01-01 02:30:00\n", NULL);
	converts("0 0 * * 0,6,5", CRON_FORM_SYSTEMD, "Sun,Fri,Sat *-*-* 00:00:00\n", NULL);
	converts("@weekly", CRON_FORM_CRON, "0 0 * * 0\n", NULL);
	converts("@hourly", CRON_FORM_SYSTEMD, "*-*-* *:00:00\n", NULL);
	converts("@yearly", CRON_FORM_SYSTEMD, "*-01-01 00:00:00\n", NULL);
	converts("@reboot", CRON_FORM_CRON, NULL,
		 "schedule.cron '@reboot' names no time: only cron itself runs a job at boot");
	converts("0 0 */2 * 1", CRON_FORM_CRON, NULL,
		 "schedule.cron '0 0 */2 * 1': a day field '*/STEP' beside a restricted one is read "
		 "differently by other crons; name the days as a list");
	converts("0 0 */2 * 1", CRON_FORM_SYSTEMD,
		 "Mon *-*-01,03,05,07,09,11,13,15,17,19,21,23,25,27,29,31 00:00:00\n", NULL);
	converts("61 * * * *", CRON_FORM_CRON, NULL,
		 "schedule.cron '61 * * * *': minute 61 is out of range 0-59");
}

int main(void)
{
	convert_tests();
	valid("0 */2 * * *");
	valid("* * * * *");
	valid("59 23 31 12 7");
	valid("0 0 1 1 0");
	valid("0-59/15 0,6,12,18 1-15 jan-jun mon-fri");
	valid("5,10-20/5,*/7 * * JAN,Dec Sun");
	valid(" \t0  1 * * *\t ");
	valid("@daily");
	valid("@reboot");
	valid("@midnight");

	invalid("", "");
	invalid("every hour", "");
	invalid("* * * *", "");
	invalid("* * * * * *", "");
	{
		struct sb why = SB_INIT;

		ok(cron_check("0 * * * *\nrm -rf /", &why) == -1 && why.len == 0, "invalid: a newline and a command");
		sb_free(&why);
	}
	invalid("0 * * * * ;", "");
	invalid("@often", "");
	invalid("@daily ", "");
	invalid("61 * * * *", "minute 61 is out of range 0-59");
	invalid("* 24 * * *", "hour 24 is out of range 0-23");
	invalid("* * 0 * *", "day of month 0 is out of range 1-31");
	invalid("* * * 13 *", "month 13 is out of range 1-12");
	invalid("* * * * 8", "day of week 8 is out of range 0-7");
	invalid("* * * * 99999999999999999999", "day of week 99999999999999999999 is out of range 0-7");
	invalid("* * * foo *", "month 'foo' is neither a number nor a name (jan, feb, ...)");
	invalid("* * * * sunday", "day of week 'sunday' is neither a number nor a name (sun, mon, ...)");
	invalid("mon * * * *", "minute 'mon' is not a number");
	invalid("5/10 * * * *", "minute '5/10': a step needs '*' or a range before it");
	invalid("*/0 * * * *", "minute step '0' must be a number from 1 to 59");
	invalid("*/ * * * *", "minute step '' must be a number from 1 to 59");
	invalid("*/60 * * * *", "minute step '60' must be a number from 1 to 59");
	invalid("*/5x * * * *", "minute step '5x' must be a number from 1 to 59");
	invalid("10-5 * * * *", "minute range '10-5' ends before it starts");
	invalid("1,,2 * * * *", "minute: empty list item");
	invalid("1, * * * *", "minute: empty list item");
	invalid("1- * * * *", "minute: a number is missing");
	invalid("-1 * * * *", "minute '-' is not a number");
	invalid("** * * * *", "minute '**' is not N, N-M, * or one of them with /STEP");
	invalid("1-2-3 * * * *", "minute '1-2-3' is not N, N-M, * or one of them with /STEP");
	return tap_done();
}
