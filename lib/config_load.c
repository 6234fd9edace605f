/*
 * config_load: how a stream's table takes a run's records (issue #27):
 * destination.load_method, .hard_delete, .key_properties, and their
 * per-stream overrides under destination.streams, the Singer SDK's names.
 */
#include "config_impl.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json.h"
#include "util.h"

static const char *const method_names[] = { NULL, "append-only", "upsert", "overwrite" };

const char *config_method_name(enum config_method m)
{
	return m > CONFIG_LOAD_DEFAULT && m <= CONFIG_LOAD_OVERWRITE ? method_names[m] : "default";
}

void config_loads_free(struct config_load *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(l[i].pattern);
		free(l[i].keys);
	}
	free(l);
}

static struct config_load *add_load(struct dest *d, const char *pattern)
{
	struct config_load *l;

	if (d->nloads == 0) {
		d->loads = xcalloc(1, sizeof(*d->loads));
		d->loads[0].hard_delete = -1;
		d->nloads = 1;
	}
	if (pattern == NULL)
		return &d->loads[0];
	d->loads = xrealloc(d->loads, (d->nloads + 1) * sizeof(*d->loads));
	l = &d->loads[d->nloads++];
	memset(l, 0, sizeof(*l));
	l->pattern = xstrdup(pattern);
	l->hard_delete = -1;
	return l;
}

static int bool_of(const char *s, int *out)
{
	static const char *const t[] = { "true", "yes", "on" }, *const f[] = { "false", "no", "off" };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (strcasecmp(s, t[i]) == 0 || strcasecmp(s, f[i]) == 0) {
			*out = strcasecmp(s, t[i]) == 0;
			return 0;
		}
	}
	return -1;
}

/* One of load_method (k D_LOAD), hard_delete, key_properties into l; what: its key path. */
static int parse_one(struct yctx *c, int k, yaml_node_t *v, struct config_load *l, const char *what)
{
	const char *s;

	if (k == D_LOAD) {
		if (config_get_str(c, v, what, "a string", &s) < 0)
			return -1;
		if (strcmp(s, "append-only") == 0 || strcmp(s, "append") == 0)
			l->method = CONFIG_LOAD_APPEND;
		else if (strcmp(s, "upsert") == 0)
			l->method = CONFIG_LOAD_UPSERT;
		else if (strcmp(s, "overwrite") == 0)
			l->method = CONFIG_LOAD_OVERWRITE;
		else
			return config_yerr(c, v->start_mark, "%s must be append-only, upsert or overwrite, not '%s'",
					   what, s);
		l->line = v->start_mark.line + 1;
		return 0;
	}
	if (k == D_HARDDEL) {
		if (config_get_str(c, v, what, "true or false", &s) < 0)
			return -1;
		if (bool_of(s, &l->hard_delete) < 0)
			return config_yerr(c, v->start_mark, "%s must be true or false, not '%s'", what, s);
		return 0;
	}
	{
		yaml_node_item_t *it;
		char **names = NULL;
		size_t n = 0;
		struct sb out = SB_INIT;

		if (v->type != YAML_SEQUENCE_NODE || v->data.sequence.items.start == v->data.sequence.items.top)
			return config_yerr(c, v->start_mark, "%s must be a non-empty list of property names", what);
		for (it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++) {
			yaml_node_t *e = node(c, *it);

			if (config_get_str(c, e, what, "a list of property names", &s) < 0) {
				util_strv_free(names);
				return -1;
			}
			if (*s == '\0') {
				util_strv_free(names);
				return config_yerr(c, e->start_mark, "%s: a property name is empty", what);
			}
			push(&names, &n, xstrdup(s));
		}
		json_quote_list(&out, names, n);
		util_strv_free(names);
		free(l->keys);
		l->keys = sb_detach(&out);
		return 0;
	}
}

static int parse_streams(struct yctx *c, yaml_node_t *v, struct dest *d)
{
	static const char *const names[] = { "load_method", "hard_delete", "key_properties" };
	static const struct keys ks = { "destination.streams.STREAM", names, 3, 3 };
	static const int kmap[] = { D_LOAD, D_HARDDEL, D_KEYPROPS };
	yaml_node_pair_t *pair, *q;

	if (v->type != YAML_MAPPING_NODE)
		return config_yerr(c, v->start_mark, "destination.streams must be a mapping of stream names "
				   "to {load_method, hard_delete, key_properties}");
	FOR_PAIRS(v, pair) {
		yaml_node_t *key = node(c, pair->key), *m = node(c, pair->value), *seen[3] = { NULL, NULL, NULL };
		struct config_load *l;
		const char *stream;
		char what[256];

		if (config_get_str(c, key, "destination.streams", "a mapping of stream names", &stream) < 0)
			return -1;
		if (*stream == '\0')
			return config_yerr(c, key->start_mark, "destination.streams: a stream name is empty");
		if (m->type != YAML_MAPPING_NODE)
			return config_yerr(c, m->start_mark, "destination.streams.%s must be a mapping "
					   "(load_method, hard_delete, key_properties)", stream);
		l = add_load(d, stream);
		FOR_PAIRS(m, q) {
			int k = config_key_index(c, &ks, q, seen);
			yaml_node_t *val = node(c, q->value);

			if (k == CONFIG_KEY_IGNORED)
				continue;
			if (k < 0)
				return -1;
			if (is_null(val))
				continue;
			snprintf(what, sizeof(what), "destination.streams.%s.%s", stream, names[k]);
			if (parse_one(c, kmap[k], val, l, what) < 0)
				return -1;
		}
	}
	return 0;
}

int config_parse_load(struct yctx *c, int k, yaml_node_t *v, struct dest *d)
{
	struct config_load *l;
	size_t i;

	if (k == D_STREAMS) {
		/* a later mapping (destination: after defaults:) wins */
		for (i = 1; i < d->nloads; i++) {
			free(d->loads[i].pattern);
			free(d->loads[i].keys);
		}
		if (d->nloads > 1)
			d->nloads = 1;
		return parse_streams(c, v, d);
	}
	l = add_load(d, NULL);
	return parse_one(c, k, v, l, k == D_LOAD ? "destination.load_method" :
			 k == D_HARDDEL ? "destination.hard_delete" : "destination.key_properties");
}

static struct config_load copy_load(const struct config_load *l)
{
	struct config_load o = *l;

	o.pattern = l->pattern ? xstrdup(l->pattern) : NULL;
	o.keys = l->keys ? xstrdup(l->keys) : NULL;
	return o;
}

int config_load_merge(struct yctx *c, struct dest *d, const struct dest *def, struct pipe_config *cfg)
{
	const struct dest *from = d->nloads ? d : def;
	const char *file = from == d ? c->file : "config.yaml";
	size_t i;

	if (from->nloads == 0)
		return 0;
	cfg->loads = xcalloc(from->nloads, sizeof(*cfg->loads));
	for (i = 0; i < from->nloads; i++)
		cfg->loads[i] = copy_load(&from->loads[i]);
	cfg->nloads = from->nloads;
	/* config.yaml's keys apply where the pipeline sets none of them */
	if (from == d && def->nloads && !d->set[D_LOAD] && !d->set[D_HARDDEL] && !d->set[D_KEYPROPS]) {
		free(cfg->loads[0].keys);
		cfg->loads[0] = copy_load(&def->loads[0]);
	}
	for (i = 0; i < cfg->nloads; i++) {
		const struct config_load *l = &cfg->loads[i];

		if (l->method != CONFIG_LOAD_UPSERT)
			continue;
		if (!cfg->parquet) {
			config_say("%s:%zu: load_method upsert needs format: parquet (a JSON-lines table "
				   "cannot be merged by key: its files are only appended to)", file, l->line);
			return -1;
		}
	}
	return 0;
}

void config_stream_load(const struct pipe_config *cfg, const char *stream, enum config_method *method,
			int *hard_delete, const char **keys)
{
	size_t i;

	*method = CONFIG_LOAD_DEFAULT;
	*hard_delete = -1;
	*keys = NULL;
	for (i = 1; i < cfg->nloads; i++) {
		const struct config_load *l = &cfg->loads[i];

		if (fnmatch(l->pattern, stream, 0) != 0)
			continue;
		if (*method == CONFIG_LOAD_DEFAULT)
			*method = l->method;
		if (*hard_delete < 0)
			*hard_delete = l->hard_delete;
		if (*keys == NULL)
			*keys = l->keys;
	}
	if (cfg->nloads) {
		if (*method == CONFIG_LOAD_DEFAULT)
			*method = cfg->loads[0].method;
		if (*hard_delete < 0)
			*hard_delete = cfg->loads[0].hard_delete;
		if (*keys == NULL)
			*keys = cfg->loads[0].keys;
	}
	if (*method == CONFIG_LOAD_DEFAULT)
		*method = cfg->incremental ? CONFIG_LOAD_APPEND : CONFIG_LOAD_OVERWRITE;
	if (*hard_delete < 0)
		*hard_delete = 1;
}

int config_any_upsert(const struct pipe_config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->nloads; i++)
		if (cfg->loads[i].method == CONFIG_LOAD_UPSERT)
			return 1;
	return 0;
}
