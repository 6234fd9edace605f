/* mask: secrets out of everything we print, persist or answer (mask.h). */
#include "mask.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "util.h"

extern char **environ;

/*
 * What a secret is called: the one list.  A member of the tap's config, a
 * NAME=value in a tap's words, an environment variable: each is judged by
 * it (lower case, '-' as '_'), a name holding a part or being a whole word.
 */
static const struct {
	const char *word;
	int whole;
} secret_names[] = {
	{ "password", 0 }, { "passwd", 0 }, { "passphrase", 0 }, { "secret", 0 },
	{ "token", 0 }, { "credential", 0 }, { "private_key", 0 }, { "api_key", 0 },
	{ "apikey", 0 }, { "access_key", 0 }, { "client_key", 0 }, { "auth_key", 0 },
	{ "signature", 0 },		/* SharedAccessSignature, X-Amz-Signature */
	{ "accountkey", 0 }, { "account_key", 0 },	/* Azure's connection strings */
	{ "sharedaccesskey", 0 }, { "shared_access_key", 0 },
	{ "key", 1 }, { "pass", 1 }, { "pwd", 1 },
	{ "sig", 1 },			/* a SAS token's signature */
	{ "authorization", 1 }, { "proxy_authorization", 1 },	/* the rest of the line */
};

/* A secret shorter than this, met outside a member of its own, is not masked alone. */
enum { MIN_ALONE = 4 };

static char *lower_name(const char *name, size_t len)
{
	char *low = xstrndup(name, len), *p;

	for (p = low; *p; p++) {
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
		else if (*p == '-')
			*p = '_';
	}
	return low;
}

/* 0: not a secret's name; 1: one; 2: one whose value is the rest of the line. */
static int name_kind(const char *name, size_t len)
{
	char *low = lower_name(name, len);
	size_t i, n = strlen(low);
	int hit = 0;

	for (i = 0; i < sizeof(secret_names) / sizeof(secret_names[0]) && !hit; i++)
		hit = secret_names[i].whole ? strcmp(low, secret_names[i].word) == 0
					    : strstr(low, secret_names[i].word) != NULL;
	if (hit && n >= 13 && strcmp(low + n - 13, "authorization") == 0)
		hit = 2;
	free(low);
	return hit;
}

int mask_secret_name(const char *name)
{
	return name_kind(name, strlen(name)) != 0;
}

static int word_byte(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/*
 * The credential-shaped parts of s[0..len), in order, each as [from, to)
 * to hit(), with start where what makes it one begins (its NAME, the
 * scheme): the value of "NAME=value", "NAME: value", "\"NAME\": \"value\""
 * with a secret-looking NAME (after an Authorization's colon, the rest of
 * the line), and the password of "scheme://user:password@host".  With
 * open_end, s is a piece of a longer text: a part that the end of s leaves
 * unfinished (a NAME with no value yet, "scheme:", "scheme://user:pa") is
 * one too, up to len.
 */
static void scan_parts(const char *s, size_t len, void (*hit)(void *ctx, size_t start, size_t from, size_t to),
		       void *ctx, int open_end)
{
	size_t i = 0;

	while (i < len) {
		size_t w = i, e, v, ve;
		unsigned char q = 0;
		int kind;

		if (!word_byte((unsigned char)s[i])) {
			size_t st = i;

			while (st > 0 && word_byte((unsigned char)s[st - 1]))
				st--;
			if (open_end && s[i] == ':' && (i + 1 == len || (i + 2 == len && s[i + 1] == '/'))) {
				hit(ctx, st, len, len);
				return;
			}
			if (s[i] == ':' && i + 2 < len && s[i + 1] == '/' && s[i + 2] == '/') {
				/* scheme://user:password@ */
				size_t u = i + 3, c = 0, at;

				for (at = u; at < len && s[at] != '@' && s[at] != '/' && s[at] != ' ' &&
				     s[at] != '\n'; at++)
					if (s[at] == ':' && !c)
						c = at;
				if (at < len && s[at] == '@' && c && c + 1 < at) {
					hit(ctx, st, c + 1, at);
					i = at;
					continue;
				}
				if (open_end && at == len) {
					hit(ctx, st, len, len);
					return;
				}
			}
			i++;
			continue;
		}
		while (i < len && word_byte((unsigned char)s[i]))
			i++;
		e = i;
		v = i;
		if (v < len && s[v] == '"')
			v++;
		while (v < len && s[v] == ' ')
			v++;
		if (open_end && (v >= len || (s[v] == ':' && v + 1 == len)) && name_kind(s + w, e - w)) {
			hit(ctx, w, len, len);
			return;
		}
		if (v >= len || (s[v] != '=' && s[v] != ':') || (s[v] == ':' && v + 1 < len && s[v + 1] == '/'))
			continue;
		kind = name_kind(s + w, e - w);
		if (!kind)
			continue;
		v++;
		while (v < len && s[v] == ' ')
			v++;
		if (v < len && (s[v] == '"' || s[v] == '\'')) {
			q = (unsigned char)s[v];
			v++;
		}
		if (open_end && v >= len) {
			hit(ctx, w, len, len);
			return;
		}
		for (ve = v; ve < len && s[ve] != '\n' &&
		     (q ? (unsigned char)s[ve] != q
			: kind == 2 ? s[ve] != '\r'
				    : (s[ve] != ' ' && s[ve] != ',' && s[ve] != '&' && s[ve] != ';' && s[ve] != '}'));
		     ve++)
			;
		if (ve > v) {
			hit(ctx, w, v, ve);
			i = ve;
		}
	}
}

/* ---- the secrets to look for ---- */

struct mask {
	char **needles;		/* longest first */
	size_t n;
	char **from, **to;	/* mask_rename()'s */
	size_t nren;
};

struct needles {
	struct sb *vals;
	const char *s;
};

static void add_part(void *ctx, size_t start, size_t from, size_t to)
{
	(void)start;
	struct needles *nd = ctx;

	if (to - from >= MIN_ALONE) {
		sb_add(nd->vals, nd->s + from, to - from);
		sb_addc(nd->vals, '\0');
	}
}

/* The credential-shaped parts of s as needles of vals. */
static void add_parts(struct sb *vals, const char *s, size_t len)
{
	struct needles nd = { vals, s };

	scan_parts(s, len, add_part, &nd, 0);
}

/*
 * The secrets of v: names and values of its secret-looking members
 * (mask_secret_members()), and with parts, the credential-shaped parts of
 * its other string values into parts.
 */
static void find_secrets(const struct json_span *v, struct sb *names, struct sb *vals, struct sb *parts,
			 int depth)
{
	struct json_span key, val;
	size_t pos = 0;

	if (depth > 64)
		return;
	if (v->type == JSON_ARRAY) {
		while (json_array_next(v, &pos, &val))
			find_secrets(&val, names, vals, parts, depth + 1);
		return;
	}
	if (parts && v->type == JSON_STRING) {
		struct sb value = SB_INIT;

		json_string_decode(v, &value);
		if (value.len)
			add_parts(parts, value.buf, value.len);
		sb_free(&value);
		return;
	}
	if (v->type != JSON_OBJECT)
		return;
	while (json_object_next(v, &pos, &key, &val)) {
		struct sb name = SB_INIT, value = SB_INIT;
		int secret = 0;

		json_string_decode(&key, &name);
		if (val.type == JSON_STRING && val.len > 2 && name.buf && strlen(name.buf) == name.len &&
		    mask_secret_name(name.buf)) {
			secret = 1;
			if (names) {
				if (names->len)
					sb_adds(names, ", ");
				sb_adds(names, name.buf);
			}
			json_string_decode(&val, &value);
			if (vals && value.len && strlen(value.buf) == value.len)
				sb_add(vals, value.buf, value.len + 1);
		}
		sb_free(&name);
		sb_free(&value);
		if (!secret)
			find_secrets(&val, names, vals, parts, depth + 1);
	}
}

void mask_secret_members(const struct json_span *v, struct sb *names, struct sb *vals)
{
	find_secrets(v, names, vals, NULL, 0);
}

/*
 * The environment's credentials: the values of AWS_* and AZURE_* variables
 * with a secret-looking name, one ending in _KEY or a connection string (not
 * their ids), and the credential-shaped parts of any of them.
 */
static void env_secrets(struct sb *vals)
{
	char **e;

	for (e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '='), *val;
		size_t nlen;

		if (eq == NULL || (strncmp(*e, "AWS_", 4) != 0 && strncmp(*e, "AZURE_", 6) != 0))
			continue;
		nlen = (size_t)(eq - *e);
		val = eq + 1;
		if (nlen > 3 && memcmp(eq - 3, "_ID", 3) == 0)
			continue;
		if (strlen(val) >= MIN_ALONE &&
		    (name_kind(*e, nlen) || (nlen >= 4 && memcmp(eq - 4, "_KEY", 4) == 0) ||
		     (nlen >= 17 && memcmp(eq - 17, "CONNECTION_STRING", 17) == 0)))
			sb_add(vals, val, strlen(val) + 1);
		add_parts(vals, val, strlen(val));
	}
}

static int longer_first(const void *a, const void *b)
{
	size_t la = strlen(*(char *const *)a), lb = strlen(*(char *const *)b);

	return la < lb ? 1 : la > lb ? -1 : 0;
}

struct mask *mask_new(const struct pipe_config *cfg)
{
	struct mask *m = xcalloc(1, sizeof(*m));
	struct sb file = SB_INIT, vals = SB_INIT;
	struct json_span v;
	struct stat st;
	const char *json = NULL, *errmsg, *p;
	size_t jlen = 0, errpos, i;

	if (cfg && cfg->tap_config_file && util_read_file(cfg->tap_config_file, &file, &st) == 0) {
		json = file.buf ? file.buf : "";
		jlen = file.len;
	} else if (cfg && cfg->tap_config_json) {
		json = cfg->tap_config_json;
		jlen = strlen(json);
	}
	if (json && json_validate(json, jlen, &v, &errpos, &errmsg) == 0)
		find_secrets(&v, NULL, &vals, &vals, 0);
	env_secrets(&vals);
	for (p = vals.buf; p && p < vals.buf + vals.len; p += strlen(p) + 1)
		if (*p)
			m->n++;
	m->needles = xcalloc(m->n + 1, sizeof(*m->needles));
	for (i = 0, p = vals.buf; p && p < vals.buf + vals.len; p += strlen(p) + 1)
		if (*p)
			m->needles[i++] = xstrdup(p);
	/* the longest first, so that a value holding another is masked whole */
	qsort(m->needles, m->n, sizeof(*m->needles), longer_first);
	sb_free(&file);
	sb_free(&vals);
	return m;
}

void mask_free(struct mask *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n; i++)
		free(m->needles[i]);
	free(m->needles);
	for (i = 0; i < m->nren; i++) {
		free(m->from[i]);
		free(m->to[i]);
	}
	free(m->from);
	free(m->to);
	free(m);
}

void mask_rename(struct mask *m, const char *from, const char *to)
{
	if (m == NULL || *from == '\0')
		return;
	m->from = xrealloc(m->from, (m->nren + 1) * sizeof(*m->from));
	m->to = xrealloc(m->to, (m->nren + 1) * sizeof(*m->to));
	m->from[m->nren] = xstrdup(from);
	m->to[m->nren++] = xstrdup(to);
}

/* Replace every occurrence of needle in text by word. */
static void replace_all(struct sb *text, const char *needle, const char *word)
{
	size_t n = strlen(needle);
	struct sb out = SB_INIT;
	const char *p, *hit;

	if (n == 0 || text->len == 0 || !memmem(text->buf, text->len, needle, n))
		return;
	for (p = text->buf; (hit = memmem(p, text->len - (size_t)(p - text->buf), needle, n)); p = hit + n) {
		sb_add(&out, p, (size_t)(hit - p));
		sb_adds(&out, word);
	}
	sb_add(&out, p, text->len - (size_t)(p - text->buf));
	sb_free(text);
	*text = out;
}

/* Replace every occurrence of needle in text by MASK_WORD. */
static void mask_value(struct sb *text, const char *needle)
{
	replace_all(text, needle, MASK_WORD);
}

struct masking {
	const char *s;
	size_t done;
	struct sb out;
};

static void mask_part(void *ctx, size_t start, size_t from, size_t to)
{
	struct masking *mk = ctx;

	(void)start;
	sb_add(&mk->out, mk->s + mk->done, from - mk->done);
	sb_adds(&mk->out, MASK_WORD);
	mk->done = to;
}

void mask_apply(const struct mask *m, struct sb *text)
{
	struct masking mk = { NULL, 0, SB_INIT };
	size_t i;

	if (text->len == 0)
		return;
	for (i = 0; m && i < m->nren; i++)
		replace_all(text, m->from[i], m->to[i]);
	for (i = 0; m && i < m->n; i++)
		mask_value(text, m->needles[i]);
	mk.s = text->buf;
	scan_parts(text->buf, text->len, mask_part, &mk, 0);
	if (mk.done == 0 && mk.out.len == 0)
		return;
	sb_add(&mk.out, text->buf + mk.done, text->len - mk.done);
	sb_free(text);
	*text = mk.out;
}

/* mask_cut()'s: a part that spans cut moves it to the part's start. */
static void cut_part(void *ctx, size_t start, size_t from, size_t to)
{
	size_t *cut = ctx;

	(void)from;
	if (start < *cut && to > *cut)
		*cut = start;
}

/* A needle's occurrence in s[0..len) that spans cut moves it to its start (1: moved). */
static int cut_needle(const char *s, size_t len, const char *needle, size_t *cut)
{
	size_t n = strlen(needle), from = *cut >= n ? *cut - n + 1 : 0;
	const char *hit;

	if (n < 2 || from >= *cut)
		return 0;
	hit = memmem(s + from, (*cut + n - 1 < len ? *cut + n - 1 : len) - from, needle, n);
	if (hit == NULL || (size_t)(hit - s) >= *cut)
		return 0;
	*cut = (size_t)(hit - s);
	return 1;
}

size_t mask_cut(const struct mask *m, const char *s, size_t len)
{
	size_t hold = 1, cut, was, i;

	for (i = 0; m && i < m->n; i++)
		if (strlen(m->needles[i]) > hold)
			hold = strlen(m->needles[i]);
	for (i = 0; m && i < m->nren; i++)
		if (strlen(m->from[i]) > hold)
			hold = strlen(m->from[i]);
	if (len <= hold)
		return 0;
	cut = len - hold;
	do {
		was = cut;
		/* not inside a word (a NAME cut in two is no NAME) */
		while (cut > 0 && word_byte((unsigned char)s[cut - 1]) && word_byte((unsigned char)s[cut]))
			cut--;
		for (i = 0; m && i < m->nren; i++)
			cut_needle(s, len, m->from[i], &cut);
		for (i = 0; m && i < m->n; i++)
			cut_needle(s, len, m->needles[i], &cut);
		scan_parts(s, len, cut_part, &cut, 1);
	} while (cut != was && cut > 0);
	return cut;
}

void mask_text(const struct pipe_config *cfg, struct sb *text)
{
	struct mask *m;

	if (text->len == 0)
		return;
	m = mask_new(cfg);
	mask_apply(m, text);
	mask_free(m);
}
