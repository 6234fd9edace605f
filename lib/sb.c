/* sb: growable byte strings. */
#include "sb.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

void sb_grow(struct sb *sb, size_t n)
{
	size_t want = sb->len + n + 1;

	if (want <= sb->cap)
		return;
	if (sb->cap == 0)
		sb->cap = 64;
	while (sb->cap < want)
		sb->cap *= 2;
	sb->buf = xrealloc(sb->buf, sb->cap);
	/* a string that only grew is still a string ("" after the first grow) */
	sb->buf[sb->len] = '\0';
}

void sb_add(struct sb *sb, const void *data, size_t len)
{
	sb_grow(sb, len);
	if (len)
		memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
}

void sb_adds(struct sb *sb, const char *s)
{
	sb_add(sb, s, strlen(s));
}

void sb_addc(struct sb *sb, char c)
{
	sb_grow(sb, 1);
	sb->buf[sb->len++] = c;
	sb->buf[sb->len] = '\0';
}

void sb_addf(struct sb *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	sb_grow(sb, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	sb->len += (size_t)n;
}

void sb_reset(struct sb *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

char *sb_detach(struct sb *sb)
{
	char *p = sb->buf ? sb->buf : xstrdup("");

	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return p;
}

void sb_free(struct sb *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

void sb_add_thousands(struct sb *sb, unsigned long long n)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%llu", n);
	int i;

	for (i = 0; i < len; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			sb_addc(sb, ',');
		sb_addc(sb, digits[i]);
	}
}
