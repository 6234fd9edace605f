/*
 * mask: secrets out of everything we print, persist or answer.
 *
 * The one owner of what a secret looks like.  Three kinds of them become
 * "***":
 *
 *   - every string value of the tap's config under a secret-looking member
 *     name (password, token, api_key, ...: mask_secret_name()), at any depth;
 *   - every credential-shaped part of any text: the value of NAME=value,
 *     NAME: value and "NAME": "value" with a secret-looking NAME
 *     (AccountKey=, SharedAccessSignature=, sig=, password=, X-Amz-Signature=,
 *     ...), the rest of the line after Authorization:, and the password of
 *     scheme://user:password@; the same parts found inside any value of the
 *     tap's config (a connection string under "conn", a SAS token under
 *     "sas") are masked wherever they appear alone too;
 *   - the values of the environment's credentials: AWS_* and AZURE_*
 *     variables with a secret-looking name or a connection string
 *     (AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AZURE_STORAGE_KEY,
 *     AZURE_STORAGE_SAS_TOKEN, AZURE_STORAGE_CONNECTION_STRING, ...).
 *
 * The tap's stderr is masked line by line as it comes (lib/child.c), so the
 * terminal (a failure's last words, run -v), the run log's tap_stderr and
 * MCP's answers and progress all see the same masked text.
 */
#ifndef PIPE_MASK_H
#define PIPE_MASK_H

#include "config.h"
#include "json.h"
#include "sb.h"

/* What a masked secret reads as. */
#define MASK_WORD "***"

/* 1 when a member or parameter called name usually holds a secret. */
int mask_secret_name(const char *name);

/*
 * The secret-looking members of v (at any depth, non-empty strings): their
 * names into names (", "-separated) and their decoded values into vals
 * (NUL-separated); either may be NULL.
 */
void mask_secret_members(const struct json_span *v, struct sb *names, struct sb *vals);

struct mask;

/*
 * The secrets of cfg's tap config (NULL, or one that cannot be read: none)
 * and of the environment, ready to mask many texts.
 */
struct mask *mask_new(const struct pipe_config *cfg);
void mask_apply(const struct mask *m, struct sb *text);

/*
 * Besides its secrets, m says from (a private file's path, which nobody
 * can look at: the tap's temporary config, state and catalog) as to (what
 * people wrote it from: the pipeline's file:line:col), before masking.
 */
void mask_rename(struct mask *m, const char *from, const char *to);
void mask_free(struct mask *m);

/*
 * Where a piece s[0..len) of a longer text (a line too long to be held
 * whole) can be cut, to be masked apart from what follows: no secret, no
 * private path, no credential-shaped part (its NAME to its value's end,
 * one the end of s leaves unfinished too) and no word spans the cut.  0:
 * nowhere yet.
 */
size_t mask_cut(const struct mask *m, const char *s, size_t len);

/* mask_new(cfg), mask_apply(), mask_free(): for one text. */
void mask_text(const struct pipe_config *cfg, struct sb *text);

#endif
