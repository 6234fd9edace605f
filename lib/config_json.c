/*
 * config_json: an inline mapping of a pipeline file (source.config,
 * source.metadata) as compact JSON text: scalars typed by the YAML 1.2 core
 * schema, what YAML 1.1 reads otherwise refused (config.h says which).
 */
#include "config_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "json.h"
#include "sb.h"

enum plain_result { PLAIN_OK, PLAIN_STRING, PLAIN_OCTAL, PLAIN_BOOL11, PLAIN_NONFINITE, PLAIN_RANGE };

/* A plain scalar under the YAML 1.2 core schema, as a JSON literal. */
static enum plain_result plain_json(const char *s, struct sb *out)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const trues[] = { "true", "True", "TRUE", NULL };
	static const char *const falses[] = { "false", "False", "FALSE", NULL };
	static const char *const bool11[] = {
		"yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON",
		"off", "Off", "OFF", NULL
	};
	static const char *const nonfinite[] = {
		".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
		"-.INF", ".nan", ".NaN", ".NAN", NULL
	};
	size_t len = strlen(s), i, ib, ie, fb = 0, fe = 0, eb = 0;
	int neg = 0, dot = 0;

	if (one_of(s, nulls)) {
		sb_adds(out, "null");
		return PLAIN_OK;
	}
	if (one_of(s, trues) || one_of(s, falses)) {
		sb_adds(out, one_of(s, trues) ? "true" : "false");
		return PLAIN_OK;
	}
	if (one_of(s, bool11))
		return PLAIN_BOOL11;
	if (one_of(s, nonfinite))
		return PLAIN_NONFINITE;
	if (len > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
		int base = s[1] == 'o' ? 8 : 16;
		unsigned long long v;
		char *end;

		if (!all_digits(s + 2, len - 2, base))
			return PLAIN_STRING;
		errno = 0;
		v = strtoull(s + 2, &end, base);
		if (errno == ERANGE)
			return PLAIN_RANGE;
		sb_addf(out, "%llu", v);
		return PLAIN_OK;
	}
	/* [-+]? ( \.[0-9]+ | [0-9]+ ( \.[0-9]* )? ) ( [eE][-+]?[0-9]+ )? */
	i = 0;
	if (s[i] == '-' || s[i] == '+')
		neg = s[i++] == '-';
	ib = i;
	while (isdigit((unsigned char)s[i]))
		i++;
	ie = i;
	if (s[i] == '.') {
		dot = 1;
		fb = ++i;
		while (isdigit((unsigned char)s[i]))
			i++;
		fe = i;
	}
	if (ie == ib && (!dot || fe == fb))
		return PLAIN_STRING;
	if (s[i] == 'e' || s[i] == 'E') {
		size_t d;

		eb = i++;
		if (s[i] == '-' || s[i] == '+')
			i++;
		d = i;
		while (isdigit((unsigned char)s[i]))
			i++;
		if (i == d)
			return PLAIN_STRING;
	}
	if (s[i] != '\0')
		return PLAIN_STRING;
	if (!dot && !eb) {
		if (ie - ib > 1 && s[ib] == '0')
			return PLAIN_OCTAL;
		if (neg)
			sb_addc(out, '-');
		sb_add(out, s + ib, ie - ib);
		return PLAIN_OK;
	}
	if (neg)
		sb_addc(out, '-');
	while (ie - ib > 1 && s[ib] == '0')
		ib++;
	if (ie == ib)
		sb_addc(out, '0');
	else
		sb_add(out, s + ib, ie - ib);
	if (dot) {
		sb_addc(out, '.');
		if (fe == fb)
			sb_addc(out, '0');
		else
			sb_add(out, s + fb, fe - fb);
	}
	if (eb)
		sb_adds(out, s + eb);
	return PLAIN_OK;
}

int config_yaml_json(struct yctx *c, yaml_node_t *n, struct sb *kp, struct sb *out)
{
	size_t kplen = kp->len;

	if (n->type == YAML_SCALAR_NODE) {
		const char *s = sval(n);

		if (!is_plain(n)) {
			json_quote(out, s, n->data.scalar.length);
			return 0;
		}
		switch (plain_json(s, out)) {
		case PLAIN_OK:
			return 0;
		case PLAIN_STRING:
			json_quote(out, s, n->data.scalar.length);
			return 0;
		case PLAIN_OCTAL:
			return config_yerr(c, n->start_mark, "%s: %s is octal in YAML 1.1 and decimal in YAML 1.2: "
					   "quote it for a string, or drop the leading zero", kp->buf, s);
		case PLAIN_BOOL11:
			return config_yerr(c, n->start_mark, "%s: %s is a boolean in YAML 1.1 and a string in YAML 1.2: "
					   "write true or false, or quote it for a string", kp->buf, s);
		case PLAIN_NONFINITE:
			return config_yerr(c, n->start_mark, "%s: %s has no JSON form: quote it for a string",
					   kp->buf, s);
		case PLAIN_RANGE:
			return config_yerr(c, n->start_mark, "%s: %s is too large", kp->buf, s);
		}
		return -1;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		yaml_node_item_t *it;
		size_t i = 0;

		sb_addc(out, '[');
		for (it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++, i++) {
			if (i)
				sb_addc(out, ',');
			sb_addf(kp, "[%zu]", i);
			if (config_yaml_json(c, node(c, *it), kp, out) < 0)
				return -1;
			kp->len = kplen;
			kp->buf[kplen] = '\0';
		}
		sb_addc(out, ']');
		return 0;
	}
	if (n->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *pair, *q;

		sb_addc(out, '{');
		FOR_PAIRS(n, pair) {
			yaml_node_t *k = node(c, pair->key);
			const char *ks;

			if (k->type != YAML_SCALAR_NODE)
				return config_yerr(c, k->start_mark, "%s: keys must be strings", kp->buf);
			ks = sval(k);
			if (is_plain(k) && strcmp(ks, "<<") == 0)
				return config_yerr(c, k->start_mark, "%s: merge keys (<<) are not supported", kp->buf);
			for (q = n->data.mapping.pairs.start; q < pair; q++) {
				yaml_node_t *k2 = node(c, q->key);

				if (k2->data.scalar.length == k->data.scalar.length &&
				    memcmp(sval(k2), ks, k->data.scalar.length) == 0)
					return config_yerr(c, k->start_mark, "duplicate key '%s' in %s (also at line %zu)",
							   ks, kp->buf, k2->start_mark.line + 1);
			}
			if (pair > n->data.mapping.pairs.start)
				sb_addc(out, ',');
			json_quote(out, ks, k->data.scalar.length);
			sb_addc(out, ':');
			sb_addf(kp, ".%s", ks);
			if (config_yaml_json(c, node(c, pair->value), kp, out) < 0)
				return -1;
			kp->len = kplen;
			kp->buf[kplen] = '\0';
		}
		sb_addc(out, '}');
		return 0;
	}
	return config_yerr(c, n->start_mark, "%s: unsupported YAML node", kp->buf);
}
