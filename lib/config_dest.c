/*
 * config_dest: a pipeline's destination: mapping and its checks, the
 * defaults of <home>/config.yaml, and the two merged into the pipeline's.
 */
#include "config_impl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "err.h"
#include "size.h"
#include "util.h"

#define DEFAULT_MAX_FILE_SIZE (128ULL * 1024 * 1024)
#define DEFAULT_ROW_GROUP_ROWS 1000000ULL
#define DEFAULT_ROW_GROUP_SIZE (16ULL * 1024 * 1024)

static const char *const home_names[] = { "destination", "defaults" };
static const struct keys home_keys = { NULL, home_names, 2, 1 };

static const char *const dest_names[] = {
	"bucket", "path", "compression", "compression_level", "max_file_size",
	"endpoint_url", "format", "row_group_rows", "row_group_size", "string_columns",
	"schema_mismatch", "account_name", "load_method", "hard_delete", "key_properties",
	"streams", "partition_by"
};
static const struct keys dest_keys = { "destination", dest_names, D_NKEYS, D_NKEYS - 1 };

void config_dest_free(struct dest *d)
{
	free(d->bucket);
	free(d->path);
	free(d->endpoint_url);
	free(d->account_name);
	util_strv_free(d->strcols);
	free(d->part_field);
	config_loads_free(d->loads, d->nloads);
	memset(d, 0, sizeof(*d));
}

/*
 * The forms a bucket takes, in every message that refuses one (the wizard's
 * prompt, help add and dataspoc-pipe(1) say the same).
 */
#define BUCKET_FORMS "expected a directory, file:///abs/dir, s3://bucket[/prefix], " \
	"gs://bucket[/prefix] or az://container[/prefix]"

/* "s3", "gs", "az" or "file" in any case, i letters long */
static const char *known_scheme(const char *b, size_t i)
{
	static const char *const names[] = { "file", "s3", "gs", "az" };
	size_t k;

	for (k = 0; k < sizeof(names) / sizeof(names[0]); k++)
		if (strlen(names[k]) == i && strncasecmp(b, names[k], i) == 0)
			return names[k];
	return NULL;
}

/*
 * Check bucket value b (what names it: "destination.bucket", "bucket");
 * *url is set when it is a URL (kept as written), not a path.  0, or -1
 * with the reason in why.
 */
static int bucket_problem(const char *b, const char *what, int *url, struct sb *why)
{
	const char *known;
	size_t i = 0;

	*url = 0;
	if (*b == '\0') {
		sb_addf(why, "%s is empty", what);
		return -1;
	}
	if (isalpha((unsigned char)b[0])) {
		while (isalnum((unsigned char)b[i]) || b[i] == '+' || b[i] == '-' || b[i] == '.')
			i++;
	}
	if (i == 0 || b[i] != ':')
		return 0;
	known = known_scheme(b, i);
	if (strncmp(b + i, "://", 3) != 0) {
		if (known) {
			sb_addf(why, "%s '%s' is not a valid URL (%s)", what, b, BUCKET_FORMS);
			return -1;
		}
		return 0;	/* a relative directory such as "lake:2024" */
	}
	*url = 1;
	if (known && strncmp(b, known, i) != 0) {
		sb_addf(why, "%s '%s': the scheme is written in lower case, as in %s://%s", what, b,
			known, b + i + 3);
		return -1;
	}
	if (i == 4 && strncmp(b, "file", 4) == 0) {
		if (b[7] != '/') {
			sb_addf(why, "%s '%s': a file:// URL needs an "
				 "absolute path, as in file:///data/lake", what, b);
			return -1;
		}
		return 0;
	}
	if (known) {
		if (b[5] == '\0' || b[5] == '/') {
			sb_addf(why, "%s '%s' names no %s", what, b,
				b[0] == 'a' ? "container" : "bucket");
			return -1;
		}
		return 0;
	}
	sb_addf(why, "%s: unsupported scheme '%.*s://' (%s)", what, (int)i, b, BUCKET_FORMS);
	return -1;
}

char *config_bucket_resolve(const char *bucket, const char *dir, const char *what, struct sb *why)
{
	int url;

	if (what == NULL)
		what = "destination.bucket";
	if (bucket_problem(bucket, what, &url, why) < 0)
		return NULL;
	if (url)
		return xstrdup(bucket);
	return config_resolve_path(bucket, dir, what, why);
}

static int check_path(struct yctx *c, yaml_node_t *v, const char *p)
{
	const char *comp = p;

	if (*p == '\0')
		return 0;
	if (*p == '/')
		return config_yerr(c, v->start_mark, "destination.path '%s' must be relative (no leading '/')", p);
	for (;;) {
		size_t n = strcspn(comp, "/");
		size_t j;

		if (n == 0)
			return config_yerr(c, v->start_mark, "destination.path '%s' has an empty component", p);
		if ((n == 1 && comp[0] == '.') || (n == 2 && comp[0] == '.' && comp[1] == '.'))
			return config_yerr(c, v->start_mark, "destination.path '%s' must not have '.' or '..' components", p);
		for (j = 0; j < n; j++)
			if ((unsigned char)comp[j] < 0x20 || comp[j] == 0x7f)
				return config_yerr(c, v->start_mark, "destination.path has a control character");
		if (comp[n] == '\0')
			return 0;
		comp += n + 1;
	}
}

static int valid_level(struct yctx *c, const struct dest *d, enum compression comp)
{
	long max = comp == COMPRESSION_ZSTD ? 19 : 9;

	if (!d->set[D_LEVEL])
		return 0;
	if (comp == COMPRESSION_NONE || comp == COMPRESSION_SNAPPY)
		return config_yerr(c, d->at[D_LEVEL], "destination.compression_level does not apply to compression %s",
				   comp == COMPRESSION_NONE ? "none" : "snappy");
	if (d->level < 1 || d->level > max)
		return config_yerr(c, d->at[D_LEVEL], "destination.compression_level must be from 1 to %ld for %s, not %s",
				   max, comp == COMPRESSION_ZSTD ? "zstd" : "gzip", d->level_text);
	return 0;
}

/*
 * destination.string_columns: {STREAM-PATTERN: [COLUMN-PATTERN, ...], ...},
 * into d->strcols as pairs.
 */
static int parse_strcols(struct yctx *c, yaml_node_t *v, struct dest *d)
{
	static const char what[] = "a mapping of stream names to lists of column names";
	yaml_node_pair_t *pair;
	char **pairs = NULL;
	size_t n = 0;

	if (v->type != YAML_MAPPING_NODE)
		return config_yerr(c, v->start_mark, "destination.string_columns must be %s", what);
	FOR_PAIRS(v, pair) {
		yaml_node_t *key = node(c, pair->key), *list = node(c, pair->value);
		yaml_node_item_t *it;
		const char *stream, *col;

		if (config_get_str(c, key, "destination.string_columns", what, &stream) < 0)
			goto fail;
		if (*stream == '\0') {
			config_yerr(c, key->start_mark, "destination.string_columns: a stream name is empty");
			goto fail;
		}
		if (list->type != YAML_SEQUENCE_NODE ||
		    list->data.sequence.items.start == list->data.sequence.items.top) {
			config_yerr(c, list->start_mark, "destination.string_columns.%s must be a list of column names",
				    stream);
			goto fail;
		}
		for (it = list->data.sequence.items.start; it < list->data.sequence.items.top; it++) {
			yaml_node_t *e = node(c, *it);

			if (config_get_str(c, e, "destination.string_columns", "a list of column names", &col) < 0)
				goto fail;
			if (*col == '\0') {
				config_yerr(c, e->start_mark, "destination.string_columns.%s: a column name is empty", stream);
				goto fail;
			}
			push(&pairs, &n, xstrdup(stream));
			push(&pairs, &n, xstrdup(col));
		}
	}
	util_strv_free(d->strcols);
	d->strcols = pairs;
	return 0;
fail:
	util_strv_free(pairs);
	return -1;
}

static const char *const gran_names[] = { "auto", "day", "hour", "month", "year", "value" };

const char *config_granularity_name(enum config_granularity g)
{
	return (size_t)g < sizeof(gran_names) / sizeof(gran_names[0]) ? gran_names[g] : "auto";
}

/*
 * destination.partition_by: _extraction_date (the Python tool's default,
 * which it wrote into every pipeline and ignored), FIELD, or {field: FIELD,
 * granularity: G}.  FIELD names the Hive folder (FIELD_G=...): no '/',
 * '\\', '=', '%', control bytes or leading '.'.
 */
static int parse_partition(struct yctx *c, yaml_node_t *v, struct dest *d)
{
	static const char *const names[] = { "field", "granularity" };
	static const struct keys pkeys = { "destination.partition_by", names, 2, 2 };
	yaml_node_t *seen[2] = { NULL, NULL }, *fv = NULL, *gv = NULL;
	const char *s, *g = NULL;
	size_t i, n;

	if (v->type == YAML_MAPPING_NODE) {
		yaml_node_pair_t *pair;

		FOR_PAIRS(v, pair) {
			int k = config_key_index(c, &pkeys, pair, seen);

			if (k < 0)
				return -1;
			if (k == 0)
				fv = node(c, pair->value);
			else
				gv = node(c, pair->value);
		}
		if (fv == NULL || is_null(fv))
			return config_yerr(c, v->start_mark, "destination.partition_by needs a field: "
					   "{field: FIELD, granularity: day|hour|month|year|value}");
		if (config_get_str(c, fv, "destination.partition_by.field", "a string", &s) < 0)
			return -1;
		if (gv && !is_null(gv) &&
		    config_get_str(c, gv, "destination.partition_by.granularity", "a string", &g) < 0)
			return -1;
	} else if (config_get_str(c, v, "destination.partition_by", "a field name or a mapping", &s) < 0) {
		return -1;
	}
	free(d->part_field);
	d->part_field = NULL;
	d->part_gran = CONFIG_GRAN_AUTO;
	if (g) {
		for (i = 1; i < sizeof(gran_names) / sizeof(gran_names[0]); i++) {
			if (strcmp(g, gran_names[i]) == 0)
				break;
		}
		if (i == sizeof(gran_names) / sizeof(gran_names[0]))
			return config_yerr(c, gv->start_mark, "destination.partition_by.granularity must be "
					   "day, hour, month, year or value, not '%s'", g);
		d->part_gran = (enum config_granularity)i;
	}
	if (strcmp(s, "_extraction_date") == 0) {
		if (d->part_gran != CONFIG_GRAN_AUTO && d->part_gran != CONFIG_GRAN_DAY)
			return config_yerr(c, gv->start_mark, "destination.partition_by _extraction_date is the "
					   "run's date (dt=YYYY-MM-DD): its granularity is day, not '%s'", g);
		d->part_gran = CONFIG_GRAN_AUTO;
		return 0;
	}
	n = strlen(s);
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch < 0x20 || ch == 0x7f || ch == '/' || ch == '\\' || ch == '=' || ch == '%')
			break;
	}
	if (n == 0 || n > 128 || i < n || s[0] == '.')
		return config_yerr(c, (fv ? fv : v)->start_mark, "destination.partition_by must be "
				   "_extraction_date or a record field whose name can name a folder (1 to 128 "
				   "bytes, no '/', '\\', '=', '%%', control characters or leading '.'), not '%s'", s);
	d->part_field = xstrdup(s);
	return 0;
}

static int parse_dest_value(struct yctx *c, int k, yaml_node_t *v, struct dest *d)
{
	const char *s;

	if (k == D_BUCKET) {
		struct sb why = SB_INIT;
		int r;

		if (config_get_str(c, v, "destination.bucket", "a string", &s) < 0)
			return -1;
		if ((d->bucket = config_bucket_resolve(s, c->dir, NULL, &why)) == NULL) {
			r = config_yerr(c, v->start_mark, "%s", why.buf);
			sb_free(&why);
			return r;
		}
		return 0;
	}
	if (k == D_PATH) {
		if (config_get_str(c, v, "destination.path", "a string", &s) < 0 || check_path(c, v, s) < 0)
			return -1;
		d->path = xstrdup(s);
		return 0;
	}
	if (k == D_COMPRESSION) {
		if (config_get_str(c, v, "destination.compression", "a string", &s) < 0)
			return -1;
		if (strcmp(s, "zstd") == 0)
			d->compression = COMPRESSION_ZSTD;
		else if (strcmp(s, "gzip") == 0)
			d->compression = COMPRESSION_GZIP;
		else if (strcmp(s, "none") == 0)
			d->compression = COMPRESSION_NONE;
		else if (strcmp(s, "snappy") == 0)
			d->compression = COMPRESSION_SNAPPY;
		else
			return config_yerr(c, v->start_mark, "destination.compression must be one of zstd, snappy, gzip, none, not '%s'", s);
		return 0;
	}
	if (k == D_LEVEL) {
		const char *p;

		if (config_get_str(c, v, "destination.compression_level", "an integer", &s) < 0)
			return -1;
		p = s + (*s == '-' || *s == '+');
		if (!all_digits(p, strlen(p), 10))
			return config_yerr(c, v->start_mark, "destination.compression_level must be an integer, not '%s'", s);
		errno = 0;
		d->level = strtol(s, NULL, 10);
		if (errno == ERANGE)
			d->level = *s == '-' ? -1 : 1000;
		d->level_text = s;
		return 0;
	}
	if (k == D_MAXSIZE) {
		if (config_get_str(c, v, "destination.max_file_size", "a size", &s) < 0)
			return -1;
		if (config_parse_size(s, &d->max_file_size) < 0)
			return config_yerr(c, v->start_mark, "destination.max_file_size must be a size such as "
					   "134217728, 64MiB or 1G, not '%s'", s);
		if (d->max_file_size < 1024)
			return config_yerr(c, v->start_mark, "destination.max_file_size must be at least 1 KiB, not '%s'", s);
		return 0;
	}
	if (k == D_ENDPOINT) {
		if (config_get_str(c, v, "destination.endpoint_url", "a string", &s) < 0)
			return -1;
		if (!((strncasecmp(s, "http://", 7) == 0 && s[7]) ||
		      (strncasecmp(s, "https://", 8) == 0 && s[8])))
			return config_yerr(c, v->start_mark, "destination.endpoint_url must be an http:// or https:// URL, not '%s'", s);
		d->endpoint_url = xstrdup(s);
		return 0;
	}
	if (k == D_FORMAT) {
		if (config_get_str(c, v, "destination.format", "a string", &s) < 0)
			return -1;
		if (strcmp(s, "jsonl") != 0 && strcmp(s, "parquet") != 0)
			return config_yerr(c, v->start_mark, "destination.format must be jsonl or parquet, not '%s'", s);
		d->parquet = strcmp(s, "parquet") == 0;
		return 0;
	}
	if (k == D_MISMATCH) {
		if (config_get_str(c, v, "destination.schema_mismatch", "a string", &s) < 0)
			return -1;
		if (strcmp(s, "widen") != 0 && strcmp(s, "fail") != 0)
			return config_yerr(c, v->start_mark, "destination.schema_mismatch must be widen or fail, not '%s'", s);
		d->mismatch_fail = strcmp(s, "fail") == 0;
		return 0;
	}
	if (k == D_RG_ROWS) {
		if (config_get_str(c, v, "destination.row_group_rows", "an integer", &s) < 0)
			return -1;
		errno = 0;
		if (!all_digits(s, strlen(s), 10) || (d->rg_rows = strtoull(s, NULL, 10)) < 1 ||
		    d->rg_rows > INT32_MAX || errno == ERANGE)
			return config_yerr(c, v->start_mark, "destination.row_group_rows must be an integer "
					   "from 1 to 2147483647, not '%s'", s);
		return 0;
	}
	if (k == D_STRCOLS)
		return parse_strcols(c, v, d);
	if (k == D_ACCOUNT) {
		size_t i, n;

		if (config_get_str(c, v, "destination.account_name", "a string", &s) < 0)
			return -1;
		n = strlen(s);
		for (i = 0; i < n; i++)
			if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9')))
				break;
		if (n < 3 || n > 24 || i < n)
			return config_yerr(c, v->start_mark, "destination.account_name must be an Azure storage "
					   "account name (3 to 24 lower-case letters and digits), not '%s'", s);
		d->account_name = xstrdup(s);
		return 0;
	}
	if (k == D_RG_SIZE) {
		if (config_get_str(c, v, "destination.row_group_size", "a size", &s) < 0)
			return -1;
		if (config_parse_size(s, &d->rg_size) < 0)
			return config_yerr(c, v->start_mark, "destination.row_group_size must be a size such as "
					   "67108864, 64MiB or 1G, not '%s'", s);
		if (d->rg_size < 1024)
			return config_yerr(c, v->start_mark, "destination.row_group_size must be at least 1 KiB, not '%s'", s);
		return 0;
	}
	if (k == D_LOAD || k == D_HARDDEL || k == D_KEYPROPS || k == D_STREAMS)
		return config_parse_load(c, k, v, d);
	return parse_partition(c, v, d);
}

int config_parse_dest(struct yctx *c, yaml_node_t *map, struct dest *d)
{
	yaml_node_t *seen[D_NKEYS] = { NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return config_yerr(c, map->start_mark, "destination must be a mapping");
	FOR_PAIRS(map, pair) {
		int k = config_key_index(c, &dest_keys, pair, seen);
		yaml_node_t *v = node(c, pair->value);

		if (k == CONFIG_KEY_IGNORED)
			continue;
		if (k < 0)
			return -1;
		if (is_null(v) && k == D_BUCKET)
			return config_yerr(c, node(c, pair->key)->start_mark,
					   "destination.bucket must be a string");
		if (is_null(v))
			continue;
		/* A later mapping (destination: after defaults:) wins. */
		if (k == D_BUCKET || k == D_PATH || k == D_ENDPOINT || k == D_ACCOUNT) {
			char **slot = k == D_BUCKET ? &d->bucket : k == D_PATH ? &d->path :
				      k == D_ENDPOINT ? &d->endpoint_url : &d->account_name;

			free(*slot);
			*slot = NULL;
		}
		if (parse_dest_value(c, k, v, d) < 0)
			return -1;
		d->set[k] = 1;
		d->at[k] = v->start_mark;
	}
	return 0;
}

/* ---- the pipeline's destination, with the defaults ---- */

static char **take_argv(char ***p)
{
	char **v = *p;

	*p = NULL;
	return v;
}

static char **copy_argv(char *const *v)
{
	char **out = NULL;
	size_t n = 0;

	while (*v)
		push(&out, &n, xstrdup(*v++));
	return out;
}

static char *take(char **p)
{
	char *s = *p;

	*p = NULL;
	return s;
}

int config_dest_merge(struct yctx *c, struct dest *d, const struct dest *def,
		      const yaml_node_t *dmap, const yaml_node_t *root, struct pipe_config *cfg)
{
	enum compression comp, defcomp;

	if (d->bucket)
		cfg->bucket = take(&d->bucket);
	else if (def->bucket)
		cfg->bucket = xstrdup(def->bucket);
	else if (dmap == NULL) {
		config_yerr(c, root->start_mark, "missing required key 'destination' (with a bucket: "
			    "config.yaml gives no destination.bucket)");
		return -1;
	} else {
		config_yerr(c, dmap->start_mark, "missing required key 'bucket' in destination");
		return -1;
	}
	cfg->path = xstrdup(d->path ? d->path : def->path ? def->path : "raw");
	if (d->endpoint_url)
		cfg->endpoint_url = take(&d->endpoint_url);
	else if (def->endpoint_url)
		cfg->endpoint_url = xstrdup(def->endpoint_url);
	if (d->account_name)
		cfg->account_name = take(&d->account_name);
	else if (def->account_name)
		cfg->account_name = xstrdup(def->account_name);
	if (cfg->account_name && strncmp(cfg->bucket, "az://", 5) != 0) {
		config_yerr(c, d->set[D_ACCOUNT] ? d->at[D_ACCOUNT] : dmap ? dmap->start_mark : root->start_mark,
			    "destination.account_name applies only to az:// buckets");
		return -1;
	}
	cfg->max_file_size = d->set[D_MAXSIZE] ? d->max_file_size :
			     def->set[D_MAXSIZE] ? def->max_file_size : DEFAULT_MAX_FILE_SIZE;

	defcomp = def->set[D_COMPRESSION] ? def->compression : COMPRESSION_ZSTD;
	comp = d->set[D_COMPRESSION] ? d->compression : defcomp;
	cfg->compression = comp;
	if (valid_level(c, d, comp) < 0)
		return -1;
	cfg->parquet = d->set[D_FORMAT] ? d->parquet : def->set[D_FORMAT] ? def->parquet : 1;
	/*
	 * zstd: level 1 for Parquet pages, the level pyarrow writes them at
	 * (Arrow's default), so the Python tool's files and ours cost the same
	 * to make and to read; 3, zstd's own default, for JSON lines.
	 */
	if (d->set[D_LEVEL])
		cfg->compression_level = (int)d->level;
	else if (def->set[D_LEVEL] && defcomp == comp)
		cfg->compression_level = (int)def->level;
	else
		cfg->compression_level = comp == COMPRESSION_ZSTD ? (cfg->parquet ? 1 : 3) :
					 comp == COMPRESSION_GZIP ? 6 : 0;
	cfg->format = xstrdup(cfg->parquet ? "parquet" : "jsonl");
	if (!cfg->parquet && (d->set[D_RG_ROWS] || d->set[D_RG_SIZE] || d->set[D_STRCOLS] ||
			      d->set[D_MISMATCH])) {
		int k = d->set[D_RG_ROWS] ? D_RG_ROWS : d->set[D_RG_SIZE] ? D_RG_SIZE :
			d->set[D_STRCOLS] ? D_STRCOLS : D_MISMATCH;

		config_yerr(c, d->at[k], "destination.%s applies only to format: parquet", dest_names[k]);
		return -1;
	}
	if (!cfg->parquet && comp == COMPRESSION_SNAPPY) {
		config_yerr(c, d->set[D_COMPRESSION] ? d->at[D_COMPRESSION] : dmap ? dmap->start_mark : root->start_mark,
			    "destination.compression snappy applies only to format: parquet "
			    "(JSON lines take zstd, gzip or none)");
		return -1;
	}
	cfg->mismatch_fail = d->set[D_MISMATCH] ? d->mismatch_fail :
			     def->set[D_MISMATCH] ? def->mismatch_fail : 0;
	if (d->strcols)
		cfg->string_columns = take_argv(&d->strcols);
	else if (def->strcols)
		cfg->string_columns = copy_argv(def->strcols);
	cfg->row_group_rows = d->set[D_RG_ROWS] ? d->rg_rows :
			      def->set[D_RG_ROWS] ? def->rg_rows : DEFAULT_ROW_GROUP_ROWS;
	cfg->row_group_size = d->set[D_RG_SIZE] ? d->rg_size :
			      def->set[D_RG_SIZE] ? def->rg_size : DEFAULT_ROW_GROUP_SIZE;
	if (d->set[D_PARTITION]) {
		cfg->partition_by = take(&d->part_field);
		cfg->partition_granularity = d->part_gran;
	} else if (def->set[D_PARTITION] && def->part_field) {
		cfg->partition_by = xstrdup(def->part_field);
		cfg->partition_granularity = def->part_gran;
	}
	return config_load_merge(c, d, def, cfg);
}

/* ---- config.yaml ---- */

/*
 * Read <home>/config.yaml into d.  Its own compression_level is checked
 * against its own compression here, while its document is loaded.
 */
int config_load_home(struct dest *d)
{
	char *file = xasprintf("%s/config.yaml", config_home());
	char *buf = NULL;
	size_t len = 0;
	struct yctx c;
	yaml_node_t *root, *seen[2] = { NULL, NULL };
	yaml_node_pair_t *pair;
	int rc = -1, r;

	memset(&c, 0, sizeof(c));
	r = config_read_file(file, "config file", 1, &buf, &len);
	if (r == -2)
		rc = 0;
	if (r < 0)
		goto out;
	if (config_yaml_load(&c, file, buf, len) < 0)
		goto out;
	root = yaml_document_get_root_node(&c.doc);
	if (root == NULL || is_null(root)) {
		rc = 0;
		goto out;
	}
	if (root->type != YAML_MAPPING_NODE) {
		config_yerr(&c, root->start_mark, "config.yaml must be a mapping (with destination:)");
		goto out;
	}
	/* defaults: first, so that destination: wins wherever it is written. */
	for (r = 1; r >= 0; r--) {
		FOR_PAIRS(root, pair) {
			yaml_node_t *v = node(&c, pair->value);
			int k = config_key_index(&c, &home_keys, pair, seen);

			if (k == CONFIG_KEY_IGNORED)
				continue;
			if (k < 0)
				goto out;
			if (k == r && !is_null(v) && config_parse_dest(&c, v, d) < 0)
				goto out;
		}
		memset(seen, 0, sizeof(seen));
	}
	if (valid_level(&c, d, d->set[D_COMPRESSION] ? d->compression : COMPRESSION_ZSTD) < 0)
		goto out;
	d->level_text = NULL;
	rc = 0;
out:
	config_yaml_close(&c);
	free(buf);
	free(file);
	if (rc < 0)
		config_dest_free(d);
	return rc;
}

int config_default_bucket(char **out)
{
	struct dest def;

	*out = NULL;
	memset(&def, 0, sizeof(def));
	if (config_load_home(&def) < 0)
		return -1;
	*out = take(&def.bucket);
	config_dest_free(&def);
	return 0;
}
