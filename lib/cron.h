/* cron: checking crontab(5) schedules before they reach a crontab. */
#ifndef PIPE_CRON_H
#define PIPE_CRON_H

#include "sb.h"

/*
 * Check a schedule as cron(8) reads the first five fields of a crontab line:
 * minute (0-59), hour (0-23), day of month (1-31), month (1-12 or jan-dec),
 * day of week (0-7 or sun-sat; 0 and 7 are Sunday), separated by blanks.
 * Each field is a comma-separated list of items: '*', N or N-M, each
 * optionally followed by /STEP ('*' or a range only; STEP >= 1).  Names are
 * three letters, any case, and may end a range (mon-fri).  Alternatively
 * one macro: @reboot, @yearly, @annually, @monthly, @weekly, @daily,
 * @midnight, @hourly.
 *
 * Returns 0 when valid.  Otherwise -1; when the shape is wrong (not five
 * fields, characters no field may hold, an unknown macro) why is left
 * untouched, and when a field is wrong a reason naming it is appended to why:
 * "minute 61 is out of range 0-59".
 */
int cron_check(const char *expr, struct sb *why);

/*
 * cron_check(), with the whole reason, as a pipeline's schedule.cron is
 * refused, appended to why: "schedule.cron '61 * * * *': minute 61 is out
 * of range 0-59", or "schedule.cron must be five crontab fields (...), not
 * 'x'".  0 when valid, else -1.
 */
int cron_explain(const char *expr, struct sb *why);

enum cron_form {
	CRON_FORM_CRON,		/* five fields of numbers, Sunday 0 */
	CRON_FORM_SYSTEMD,	/* systemd.time(7) OnCalendar= values */
};

/*
 * A valid schedule (cron_explain()) said for another scheduler, appended to
 * out, each line ending in '\n'.  CRON_FORM_CRON: one line of five fields,
 * numbers only (no names, no macro, days of week 0-6, '*' for a whole
 * range, runs as N-M), what Kubernetes' CronJob and Slurm's scrontab read as
 * cron(8) does.  CRON_FORM_SYSTEMD: one OnCalendar= value a line; two when
 * both the day of month and the day of week are restricted, as cron(8) then
 * runs on either while systemd wants both.  @reboot has no time and is
 * refused.  0, or -1 with the reason appended to why.
 */
int cron_convert(const char *expr, enum cron_form form, struct sb *out, struct sb *why);

#endif
