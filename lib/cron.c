/* cron: checking crontab(5) schedules. */
#include "cron.h"

#include <stdint.h>
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

/* One comma-separated item of field f: s[0..end); its values set in *mask. */
static int item(const struct field *f, const char *s, const char *end, struct sb *why,
		uint64_t *mask)
{
	const char *item0 = s;
	int a, b, ranged = 0, v;
	long step = 1;

	if (s == end) {
		sb_addf(why, "%s: empty list item", f->name);
		return -1;
	}
	if (*s == '*') {
		s++;
		ranged = 1;
		a = f->lo;
		b = f->hi;
	} else {
		a = value(f, &s, end, why);
		b = a;
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
		const char *d = ++s;

		step = 0;
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
	for (v = a; v <= b; v += (int)step)
		*mask |= (uint64_t)1 << v;
	return 0;
}

/*
 * Parse five fields: each one's values in mask[i], and star[i] when it starts
 * with '*' (cron(8) matches a day when the day of month or the day of week
 * matches if both are restricted, when both match otherwise).  A macro is
 * checked only (0, mask untouched).
 */
static int parse(const char *expr, struct sb *why, uint64_t mask[5], int star[5])
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

		mask[i] = 0;
		star[i] = *p == '*';
		for (;;) {
			const char *comma = memchr(p, ',', (size_t)(e[i] - p));
			const char *end = comma ? comma : e[i];

			if (item(&fields[i], p, end, why, &mask[i]) != 0)
				return -1;
			if (comma == NULL)
				break;
			p = comma + 1;
		}
	}
	return 0;
}

int cron_check(const char *expr, struct sb *why)
{
	uint64_t mask[5];
	int star[5];

	return parse(expr, why, mask, star);
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

/* The five fields of a macro other than @reboot. */
static const struct {
	const char *macro, *fields;
} macro_fields[] = {
	{ "@yearly", "0 0 1 1 *" }, { "@annually", "0 0 1 1 *" }, { "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" }, { "@daily", "0 0 * * *" }, { "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

/*
 * The values of mask from lo to hi: '*' when all, else a list in which a run
 * of three or more is lo SEP hi; names (when not NULL) for the values, and
 * width digits otherwise.
 */
static void put_field(struct sb *out, uint64_t mask, int lo, int hi, const char *sep,
		      const char *const *names, int width)
{
	int v, w, first = 1;

	if (mask == (((uint64_t)2 << hi) - ((uint64_t)1 << lo))) {
		sb_addc(out, '*');
		return;
	}
	for (v = lo; v <= hi; v = w + 1) {
		w = v;
		if (!(mask & ((uint64_t)1 << v)))
			continue;
		while (w < hi && (mask & ((uint64_t)1 << (w + 1))))
			w++;
		if (!first)
			sb_addc(out, ',');
		first = 0;
		if (w - v >= 2) {
			if (names)
				sb_addf(out, "%s%s%s", names[v], sep, names[w]);
			else
				sb_addf(out, "%0*d%s%0*d", width, v, sep, width, w);
		} else {
			if (names)
				sb_addf(out, "%s", names[v]);
			else
				sb_addf(out, "%0*d", width, v);
			if (w > v) {
				if (names)
					sb_addf(out, ",%s", names[w]);
				else
					sb_addf(out, ",%0*d", width, w);
			}
		}
	}
}

static const char *const day_names[] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };

/* One OnCalendar= value: the days of week dow (all: none named). */
static void put_calendar(struct sb *out, uint64_t dow, uint64_t dom, uint64_t month,
			 uint64_t hour, uint64_t minute)
{
	if (dow != 0x7f) {
		put_field(out, dow, 0, 6, "..", day_names, 0);
		sb_addc(out, ' ');
	}
	sb_adds(out, "*-");
	put_field(out, month, 1, 12, "..", NULL, 2);
	sb_addc(out, '-');
	put_field(out, dom, 1, 31, "..", NULL, 2);
	sb_addc(out, ' ');
	put_field(out, hour, 0, 23, "..", NULL, 2);
	sb_addc(out, ':');
	put_field(out, minute, 0, 59, "..", NULL, 2);
	sb_adds(out, ":00\n");
}

int cron_convert(const char *expr, enum cron_form form, struct sb *out, struct sb *why)
{
	uint64_t m[5], dow;
	int star[5], all_dom, all_dow;
	size_t i;

	if (cron_explain(expr, why) != 0)
		return -1;
	if (expr[0] == '@') {
		for (i = 0; i < sizeof(macro_fields) / sizeof(macro_fields[0]); i++) {
			if (strcmp(expr, macro_fields[i].macro) == 0)
				break;
		}
		if (i == sizeof(macro_fields) / sizeof(macro_fields[0])) {
			sb_addf(why, "schedule.cron '%s' names no time: only cron itself runs a job at boot",
				expr);
			return -1;
		}
		expr = macro_fields[i].fields;
	}
	if (parse(expr, why, m, star) != 0)
		return -1;
	dow = m[4] & 0x7f;
	if (m[4] & 0x80)
		dow |= 1;	/* 7 is Sunday */
	if (form == CRON_FORM_SYSTEMD) {
		if (star[2] || star[4]) {
			put_calendar(out, dow, m[2], m[3], m[1], m[0]);
		} else {
			put_calendar(out, dow, 0xfffffffeu, m[3], m[1], m[0]);
			put_calendar(out, 0x7f, m[2], m[3], m[1], m[0]);
		}
		return 0;
	}
	/*
	 * Five fields of numbers only (Sunday 0): what any cron reads alike
	 * (Kubernetes' reads days of week 0-6).  A whole field is '*', which
	 * changes how the two day fields combine: cron(8) matches either day
	 * when both fields are restricted (start with no '*'), both otherwise.
	 */
	all_dom = m[2] == 0xfffffffeu;
	all_dow = dow == 0x7f;
	if (!star[2] && !star[4] && (all_dom || all_dow)) {
		all_dom = all_dow = 1;	/* either: every day */
	} else if ((star[2] || star[4]) && !all_dom && !all_dow) {
		sb_addf(why, "schedule.cron '%s': a day field '*/STEP' beside a restricted one is read "
			  "differently by other crons; name the days as a list", expr);
		return -1;
	}
	if (all_dom)
		m[2] = 0xfffffffeu;
	if (all_dow)
		dow = 0x7f;
	put_field(out, m[0], 0, 59, "-", NULL, 0);
	sb_addc(out, ' ');
	put_field(out, m[1], 0, 23, "-", NULL, 0);
	sb_addc(out, ' ');
	put_field(out, m[2], 1, 31, "-", NULL, 0);
	sb_addc(out, ' ');
	put_field(out, m[3], 1, 12, "-", NULL, 0);
	sb_addc(out, ' ');
	put_field(out, dow, 0, 6, "-", NULL, 0);
	sb_addc(out, '\n');
	return 0;
}
