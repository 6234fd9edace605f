/* sb: a growable byte string, always NUL-terminated. */
#ifndef PIPE_SB_H
#define PIPE_SB_H

#include <stddef.h>

struct sb {
	char *buf;	/* NULL until the first addition; then NUL-terminated */
	size_t len;
	size_t cap;
};

#define SB_INIT { NULL, 0, 0 }

/* Make room for n more bytes (plus the NUL). */
void sb_grow(struct sb *sb, size_t n);
void sb_add(struct sb *sb, const void *data, size_t len);
void sb_adds(struct sb *sb, const char *s);
void sb_addc(struct sb *sb, char c);
void sb_addf(struct sb *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Empty the string, keeping its memory. */
void sb_reset(struct sb *sb);
/* Hand the buffer over (never NULL) and reset sb. */
char *sb_detach(struct sb *sb);
void sb_free(struct sb *sb);
/* Append a number with thousands separators: 250000 -> "250,000". */
void sb_add_thousands(struct sb *sb, unsigned long long n);

#endif
