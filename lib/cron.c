/* cron: checking crontab(5) schedules. */
#include "cron.h"

#include <string.h>
#include <strings.h>

struct field {
	const char *name;
	int lo, hi;
	const char *const *names;	/* names[i] stands for name_base + i, or NULL */
	int name_base;
};

static const char *const months[] = {
	"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL
};
static const char *const days[] = { "sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL };

static const struct field fields[5] = {
	{ "minute", 0, 59, NULL, 0 },
	{ "hour", 0, 23, NULL, 0 },
	{ "day of month", 1, 31, NULL, 0 },
	{ "month", 1, 12, months, 1 },
	{ "day of week", 0, 7, days, 0 },
};

static const char *const macros[] = {
	"@reboot", "@yearly", "@annually", "@monthly", "@weekly", "@daily",
	"@midnight", "@hourly", NULL
};

/* Parse a number or a name at *p (ending at end); -1 when neither. */
static int value(const struct field *f, const char **p, const char *end, struct sb *why)
{
	const char *s = *p;
	long v = 0;
	size_t i, n = 0;

	while (s + n < end && s[n] >= '0' && s[n] <= '9')
		n++;
	if (n > 0) {
		for (i = 0; i < n; i++) {
			v = v * 10 + (s[i] - '0');
			if (v > 1000)
				v = 1000;
		}
		if (v < f->lo || v > f->hi) {
			sb_addf(why, "%s %.*s is out of range %d-%d", f->name, (int)n, s, f->lo, f->hi);
			return -1;
		}
		*p = s + n;
		return (int)v;
	}
	while (s + n < end && ((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z')))
		n++;
	if (n == 3 && f->names) {
		for (i = 0; f->names[i]; i++) {
			if (strncasecmp(s, f->names[i], 3) == 0) {
				*p = s + 3;
				return f->name_base + (int)i;
			}
		}
	}
	if (n == 0)
		n = s < end ? 1 : 0;
	if (n == 0)
		sb_addf(why, "%s: a number is missing", f->name);
	else if (f->names)
		sb_addf(why, "%s '%.*s' is neither a number nor a name (%s, %s, ...)",
			f->name, (int)n, s, f->names[0], f->names[1]);
	else
		sb_addf(why, "%s '%.*s' is not a number", f->name, (int)n, s);
	return -1;
}

/* One comma-separated item of field f: s[0..end). */
static int item(const struct field *f, const char *s, const char *end, struct sb *why)
{
	const char *item0 = s;
	int a, b, ranged = 0;

	if (s == end) {
		sb_addf(why, "%s: empty list item", f->name);
		return -1;
	}
	if (*s == '*') {
		s++;
		ranged = 1;
	} else {
		a = value(f, &s, end, why);
		if (a < 0)
			return -1;
		if (s < end && *s == '-') {
			s++;
			b = value(f, &s, end, why);
			if (b < 0)
				return -1;
			if (b < a) {
				sb_addf(why, "%s range '%.*s' ends before it starts", f->name,
					(int)(end - item0), item0);
				return -1;
			}
			ranged = 1;
		}
	}
	if (s < end && *s == '/') {
		long step = 0;
		const char *d = ++s;

		if (!ranged) {
			sb_addf(why, "%s '%.*s': a step needs '*' or a range before it", f->name,
				(int)(end - item0), item0);
			return -1;
		}
		while (s < end && *s >= '0' && *s <= '9') {
			step = step * 10 + (*s - '0');
			if (step > 1000)
				step = 1000;
			s++;
		}
		if (s == d || s < end || step < 1 || step > f->hi) {
			sb_addf(why, "%s step '%.*s' must be a number from 1 to %d", f->name,
				(int)(end - d), d, f->hi);
			return -1;
		}
	}
	if (s < end) {
		sb_addf(why, "%s '%.*s' is not N, N-M, * or one of them with /STEP", f->name,
			(int)(end - item0), item0);
		return -1;
	}
	return 0;
}

int cron_check(const char *expr, struct sb *why)
{
	const char *s = expr, *w[5], *e[5];
	int n = 0, i;

	if (*s == '@') {
		for (i = 0; macros[i]; i++) {
			if (strcmp(s, macros[i]) == 0)
				return 0;
		}
		return -1;
	}
	for (;;) {
		size_t len;

		s += strspn(s, " \t");
		if (*s == '\0')
			break;
		len = strspn(s, "0123456789*/,-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz");
		if (len == 0 || n == 5 || (s[len] != '\0' && s[len] != ' ' && s[len] != '\t'))
			return -1;
		w[n] = s;
		e[n] = s + len;
		n++;
		s += len;
	}
	if (n != 5)
		return -1;
	for (i = 0; i < 5; i++) {
		const char *p = w[i];

		for (;;) {
			const char *comma = memchr(p, ',', (size_t)(e[i] - p));
			const char *end = comma ? comma : e[i];

			if (item(&fields[i], p, end, why) != 0)
				return -1;
			if (comma == NULL)
				break;
			p = comma + 1;
		}
	}
	return 0;
}

int cron_explain(const char *expr, struct sb *why)
{
	struct sb field = SB_INIT;

	if (cron_check(expr, &field) == 0)
		return 0;
	if (field.len == 0)
		sb_addf(why, "schedule.cron must be five crontab fields (as in \"0 */2 * * *\") "
			  "or @hourly, @daily, ..., not '%s'", expr);
	else
		sb_addf(why, "schedule.cron '%s': %s", expr, field.buf);
	sb_free(&field);
	return -1;
}
