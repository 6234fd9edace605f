/*
 * config: pipeline files (YAML, libyaml) and $DATASPOC_PIPE_HOME: the home,
 * names, and loading a pipeline file's top level.  The sections and the YAML
 * underneath are in the other config_*.c files (config_impl.h lists them).
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <yaml.h>

#include "config_impl.h"
#include "cron.h"
#include "err.h"
#include "sb.h"
#include "size.h"
#include "util.h"

static const char *const top_names[] = {
	"source", "destination", "incremental", "schedule"
};
static const struct keys top_keys = { NULL, top_names, 4, 4 };
enum { T_SOURCE, T_DESTINATION, T_INCREMENTAL, T_SCHEDULE };

static const char *const incr_names[] = { "enabled", "checkpoint_every" };
static const struct keys incr_keys = { "incremental", incr_names, 2, 2 };
enum { I_ENABLED, I_CHECKPOINT };

static const char *const sched_names[] = { "cron" };
static const struct keys sched_keys = { "schedule", sched_names, 1, 1 };

/* ---- home and names ---- */

static int by_getent;

/*
 * A weak reference: a program linked statically (pipe-tap, pipe-stages)
 * that nothing else makes hold getpwuid has it NULL, and asks getent
 * instead, as config_home_by_getent() does; glibc's link-time warning
 * about getpwuid in a static program is not printed for each of them.
 */
extern struct passwd *getpwuid(uid_t uid) __attribute__((weak));

void config_home_by_getent(void)
{
	by_getent = 1;
}

/* The home of a passwd line "name:pw:uid:gid:gecos:home:shell" of uid: new string, or NULL. */
static char *passwd_line_home(const char *line, uid_t uid)
{
	const char *f[7];
	size_t n = 0;
	char *end;
	unsigned long u;

	f[n++] = line;
	for (const char *p = line; *p && *p != '\n' && n < 7; p++)
		if (*p == ':')
			f[n++] = p + 1;
	if (n < 7)
		return NULL;
	u = strtoul(f[2], &end, 10);
	if (end == f[2] || *end != ':' || u != (unsigned long)uid)
		return NULL;
	return xstrndup(f[5], (size_t)(f[6] - 1 - f[5]));
}

/*
 * uid's home as `getent passwd UID` prints it (NSS, in a program of the
 * shared C library); when getent cannot run, from /etc/passwd.  NULL when
 * neither knows uid.
 */
static char *home_by_getent(uid_t uid)
{
	static char getent[] = "getent", passwd[] = "passwd";
	char id[32], buf[4096], *home = NULL;
	char *const argv[] = { getent, passwd, id, NULL };
	struct sb out = SB_INIT;
	int fds[2], st = 0, null;
	pid_t pid;
	ssize_t r;
	FILE *f;

	snprintf(id, sizeof(id), "%lu", (unsigned long)uid);
	if (pipe2(fds, O_CLOEXEC) == 0) {
		pid = fork();
		if (pid == 0) {
			null = open("/dev/null", O_RDWR);
			if (dup2(fds[1], STDOUT_FILENO) < 0 || null < 0 ||
			    dup2(null, STDIN_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0)
				_exit(127);
			execvp(argv[0], argv);
			_exit(127);
		}
		close(fds[1]);
		while (pid > 0 && ((r = read(fds[0], buf, sizeof(buf))) > 0 || (r < 0 && errno == EINTR)))
			if (r > 0 && out.len < 65536)
				sb_add(&out, buf, (size_t)r);
		close(fds[0]);
		while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0 && out.buf)
			home = passwd_line_home(out.buf, uid);
		sb_free(&out);
		/* 0: its line; 2: no such user in any of the databases */
		if (pid > 0 && WIFEXITED(st) && (WEXITSTATUS(st) == 0 || WEXITSTATUS(st) == 2))
			return home;
	}
	f = fopen("/etc/passwd", "re");
	if (f == NULL)
		return NULL;
	while (home == NULL && fgets(buf, sizeof(buf), f))
		home = passwd_line_home(buf, uid);
	fclose(f);
	return home;
}

const char *config_home(void)
{
	static char *home;
	const char *env = getenv("DATASPOC_PIPE_HOME");
	char *now;
	size_t len;

	if (env && *env) {
		now = xstrdup(env);
	} else {
		const char *h = getenv("HOME");
		char *found = NULL;
		struct passwd *pw;

		if (h == NULL || *h == '\0') {
			if (by_getent || getpwuid == NULL)
				h = found = home_by_getent(getuid());
			else if ((pw = getpwuid(getuid())) != NULL)
				h = pw->pw_dir;
		}
		if (h == NULL)
			h = "";
		len = strlen(h);
		while (len > 0 && h[len - 1] == '/')
			len--;
		now = xasprintf("%.*s/.dataspoc-pipe", (int)len, h);
		free(found);
	}
	len = strlen(now);
	while (len > 1 && now[len - 1] == '/')
		now[--len] = '\0';
	/* Keep the string callers hold unless the environment changed. */
	if (home && strcmp(home, now) == 0) {
		free(now);
		return home;
	}
	free(home);
	home = now;
	return home;
}

int config_valid_name(const char *name)
{
	size_t i;

	if (name == NULL || !isalnum((unsigned char)name[0]))
		return 0;
	for (i = 1; name[i]; i++) {
		unsigned char ch = (unsigned char)name[i];

		if (i >= 64 || !(isalnum(ch) || ch == '.' || ch == '_' || ch == '-'))
			return 0;
	}
	return 1;
}

const char *config_compression_name(enum compression c)
{
	static const char *const names[] = { "zstd", "gzip", "none", "snappy" };

	return (unsigned)c < sizeof(names) / sizeof(names[0]) ? names[c] : "?";
}

const char *config_compression_ext(enum compression c)
{
	switch (c) {
	case COMPRESSION_ZSTD:
		return ".zst";
	case COMPRESSION_GZIP:
		return ".gz";
	case COMPRESSION_NONE:
	case COMPRESSION_SNAPPY:
		break;
	}
	return "";
}

char *config_source_name(const struct pipe_config *cfg)
{
	const char *s, *slash, *dot;
	struct sb out = SB_INIT;
	size_t n, i;

	if (cfg == NULL || cfg->tap_argv == NULL || cfg->tap_argv[0] == NULL)
		return xstrdup("tap");
	for (n = 0; !cfg->tap_listed && cfg->tap_argv[n + 1] != NULL; n++)
		;
	s = cfg->tap_argv[n];
	slash = strrchr(s, '/');
	if (slash)
		s = slash + 1;
	/* the stem, as Python's pathlib has it: a leading dot is no suffix */
	dot = strrchr(s, '.');
	n = dot && dot != s && dot[1] != '\0' ? (size_t)(dot - s) : strlen(s);
	if (n >= 9 && strncmp(s, "dataspoc-", 9) == 0) {
		s += 9;
		n -= 9;
	}
	for (i = 0; i < n;) {
		if (n - i >= 4 && strncmp(s + i, "tap-", 4) == 0) {
			i += 4;
			continue;
		}
		sb_addc(&out, s[i++]);
	}
	/* It becomes a folder of the bucket layout. */
	if (out.len == 0 || strcmp(out.buf, ".") == 0 || strcmp(out.buf, "..") == 0) {
		sb_free(&out);
		return xstrdup("tap");
	}
	return sb_detach(&out);
}

void config_free(struct pipe_config *cfg)
{
	if (cfg == NULL)
		return;
	free(cfg->name);
	free(cfg->file);
	free(cfg->dir);
	util_strv_free(cfg->tap_argv);
	free(cfg->tap_config_file);
	free(cfg->tap_config_json);
	util_strv_free(cfg->streams);
	util_strv_free(cfg->string_columns);
	free(cfg->catalog_file);
	free(cfg->metadata_json);
	free(cfg->metadata_where);
	free(cfg->catalog_flag);
	free(cfg->bucket);
	free(cfg->path);
	free(cfg->endpoint_url);
	free(cfg->account_name);
	free(cfg->format);
	free(cfg->cron);
	free(cfg->partition_by);
	config_loads_free(cfg->loads, cfg->nloads);
	memset(cfg, 0, sizeof(*cfg));
}

/* ---- incremental, schedule ---- */

static int parse_bool(const char *s, int *out)
{
	static const char *const t[] = { "true", "yes", "on" };
	static const char *const f[] = { "false", "no", "off" };
	size_t i;

	for (i = 0; i < 3; i++) {
		if (strcasecmp(s, t[i]) == 0) {
			*out = 1;
			return 0;
		}
		if (strcasecmp(s, f[i]) == 0) {
			*out = 0;
			return 0;
		}
	}
	return -1;
}

/*
 * incremental.checkpoint_every: a duration (30s, 15m, 1h: a whole number
 * and s, m, min or h) or a size of records (512MiB, 2GB: lib/size.h, with
 * its B).  A bare K, M or G is refused: 15M could be minutes or MiB.
 */
static int parse_checkpoint(const char *s, struct pipe_config *cfg)
{
	static const struct { const char *unit; unsigned long secs; } units[] = {
		{ "s", 1 }, { "m", 60 }, { "min", 60 }, { "h", 3600 }
	};
	char *end;
	unsigned long long n;
	size_t i, len = strlen(s);

	if (len == 0 || !isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	n = strtoull(s, &end, 10);
	while (*end == ' ')
		end++;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit) == 0) {
			if (errno || n == 0 || n > 366ULL * 86400 / units[i].secs)
				return -1;
			cfg->checkpoint_seconds = (unsigned long)n * units[i].secs;
			return 0;
		}
	}
	if (strcmp(end, "B") == 0 && errno == 0 && n > 0) {
		cfg->checkpoint_bytes = n;
		return 0;
	}
	if (s[len - 1] != 'B' && s[len - 1] != 'b')
		return -1;
	if (config_parse_size(s, &cfg->checkpoint_bytes) != 0 || cfg->checkpoint_bytes == 0)
		return -1;
	return 0;
}

int config_checkpoints(const struct pipe_config *cfg)
{
	return cfg->checkpoint_seconds != 0 || cfg->checkpoint_bytes != 0;
}

static int parse_incremental(struct yctx *c, yaml_node_t *map, struct pipe_config *cfg)
{
	yaml_node_t *seen[2] = { NULL, NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return config_yerr(c, map->start_mark, "incremental must be a mapping");
	FOR_PAIRS(map, pair) {
		yaml_node_t *v = node(c, pair->value);
		const char *s;
		int k = config_key_index(c, &incr_keys, pair, seen);

		if (k == CONFIG_KEY_IGNORED)
			continue;
		if (k < 0)
			return -1;
		if (is_null(v))
			continue;
		if (k == I_CHECKPOINT) {
			if (config_get_str(c, v, "incremental.checkpoint_every", "a duration or a size", &s) < 0)
				return -1;
			if (parse_checkpoint(s, cfg) < 0)
				return config_yerr(c, v->start_mark, "incremental.checkpoint_every must be a duration "
						   "(30s, 15m, 1h) or a size of records (512MiB), not '%s'", s);
			continue;
		}
		if (config_get_str(c, v, "incremental.enabled", "true or false", &s) < 0)
			return -1;
		if (parse_bool(s, &cfg->incremental) < 0)
			return config_yerr(c, v->start_mark, "incremental.enabled must be true or false, not '%s'", s);
	}
	/* A half snapshot must not replace a whole one: checkpoints keep what they publish. */
	if (seen[I_CHECKPOINT] && config_checkpoints(cfg) && !cfg->incremental)
		return config_yerr(c, seen[I_CHECKPOINT]->start_mark,
				   "incremental.checkpoint_every needs incremental.enabled: true (a snapshot "
				   "pipeline replaces its tables whole, and a checkpoint would publish half of one)");
	return 0;
}

static int parse_schedule(struct yctx *c, yaml_node_t *map, struct pipe_config *cfg)
{
	yaml_node_t *seen[1] = { NULL };
	yaml_node_pair_t *pair;

	if (map->type != YAML_MAPPING_NODE)
		return config_yerr(c, map->start_mark, "schedule must be a mapping");
	FOR_PAIRS(map, pair) {
		yaml_node_t *v = node(c, pair->value);
		struct sb why = SB_INIT;
		const char *s;
		int r, k = config_key_index(c, &sched_keys, pair, seen);

		if (k == CONFIG_KEY_IGNORED)
			continue;
		if (k < 0)
			return -1;
		if (is_null(v))
			continue;
		if (config_get_str(c, v, "schedule.cron", "a string", &s) < 0)
			return -1;
		if (cron_explain(s, &why) != 0) {
			r = config_yerr(c, v->start_mark, "%s", why.buf);
			sb_free(&why);
			return r;
		}
		cfg->cron = xstrdup(s);
	}
	return 0;
}

/* ---- loading a pipeline ---- */

/* Parse the pipeline document of c into cfg, with defaults def. */
static int parse_pipeline(struct yctx *c, struct dest *def, struct pipe_config *cfg)
{
	yaml_node_t *root = yaml_document_get_root_node(&c->doc);
	yaml_node_t *seen[4] = { NULL, NULL, NULL, NULL };
	yaml_node_t *dmap = NULL;
	yaml_node_pair_t *pair;
	struct dest d;
	int rc = -1;

	memset(&d, 0, sizeof(d));
	if (root == NULL || is_null(root)) {
		yaml_mark_t m = { 0, 0, 0 };

		return config_yerr(c, root ? root->start_mark : m, "empty pipeline file");
	}
	if (root->type != YAML_MAPPING_NODE)
		return config_yerr(c, root->start_mark, "a pipeline file must be a mapping (with source: and destination:)");
	FOR_PAIRS(root, pair) {
		yaml_node_t *v = node(c, pair->value);
		int k = config_key_index(c, &top_keys, pair, seen), r = 0;

		if (k == CONFIG_KEY_IGNORED)
			continue;
		if (k < 0)
			goto out;
		if (k == T_SOURCE) {
			r = config_parse_source(c, v, cfg);
		} else if (k == T_DESTINATION) {
			dmap = v;
			r = config_parse_dest(c, v, &d);
		} else if (is_null(v)) {
			continue;
		} else if (k == T_INCREMENTAL) {
			r = parse_incremental(c, v, cfg);
		} else {
			r = parse_schedule(c, v, cfg);
		}
		if (r < 0)
			goto out;
	}
	if (seen[T_SOURCE] == NULL) {
		config_yerr(c, root->start_mark, "missing required key 'source'");
		goto out;
	}
	rc = config_dest_merge(c, &d, def, dmap, root, cfg);
out:
	config_dest_free(&d);
	return rc;
}

static int load(const char *name, const char *file, const char *buf, size_t len,
		struct pipe_config *cfg)
{
	struct dest def;
	struct yctx c;
	int rc = -1;

	memset(&def, 0, sizeof(def));
	memset(&c, 0, sizeof(c));
	if (config_load_home(&def) < 0)
		goto out;
	if (config_yaml_load(&c, file, buf, len) < 0)
		goto out;
	cfg->name = xstrdup(name);
	cfg->file = xstrdup(file);
	cfg->dir = xstrdup(c.dir);
	rc = parse_pipeline(&c, &def, cfg);
out:
	config_yaml_close(&c);
	config_dest_free(&def);
	if (rc < 0)
		config_free(cfg);
	return rc;
}

/* ---- the pipeline files of the home directory ---- */

/* <home>/pipelines/NAME.EXT */
static char *pipeline_path(const char *name, const char *ext)
{
	return xasprintf("%s/pipelines/%s.%s", config_home(), name, ext);
}

int config_name_ok(const char *name)
{
	if (config_valid_name(name))
		return 1;
	config_say("invalid pipeline name '%s' (letters, digits, '.', '_' and '-', "
		   "starting with a letter or digit, at most 64)", name ? name : "");
	return 0;
}

char *config_pipeline_file(const char *name, int *missing)
{
	char *yaml = pipeline_path(name, "yaml"), *yml;

	*missing = 0;
	if (access(yaml, F_OK) == 0 || errno != ENOENT)
		return yaml;
	yml = pipeline_path(name, "yml");
	if (access(yml, F_OK) == 0 || errno != ENOENT) {
		free(yaml);
		return yml;
	}
	free(yml);
	*missing = 1;
	return yaml;
}

size_t config_pipeline_ext(const char *base)
{
	size_t n = strlen(base);

	if (n > 5 && strcmp(base + n - 5, ".yaml") == 0)
		return 5;
	if (n > 4 && strcmp(base + n - 4, ".yml") == 0)
		return 4;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int config_pipelines(char ***names, size_t *n)
{
	char *dir = xasprintf("%s/pipelines", config_home());
	size_t cap = 16, i, j;
	struct dirent *e;
	DIR *d;

	*names = xcalloc(1, sizeof(**names));
	*n = 0;
	d = opendir(dir);
	if (d == NULL) {
		if (errno == ENOENT) {
			free(dir);
			return 0;
		}
		err_msg("cannot read '%s':", dir);
		free(dir);
		return -1;
	}
	*names = xrealloc(*names, cap * sizeof(**names));
	while ((e = readdir(d)) != NULL) {
		size_t ext = config_pipeline_ext(e->d_name);
		char *name;

		if (ext == 0)
			continue;
		name = xstrndup(e->d_name, strlen(e->d_name) - ext);
		if (!config_valid_name(name)) {
			err_warn("skipping '%s/%s': not a valid pipeline name", dir, e->d_name);
			free(name);
			continue;
		}
		if (*n + 1 >= cap) {
			cap *= 2;
			*names = xrealloc(*names, cap * sizeof(**names));
		}
		(*names)[(*n)++] = name;
	}
	closedir(d);
	free(dir);
	qsort(*names, *n, sizeof(**names), cmp_str);
	for (i = j = 0; i < *n; i++) {
		if (j > 0 && strcmp((*names)[j - 1], (*names)[i]) == 0)
			free((*names)[i]);
		else
			(*names)[j++] = (*names)[i];
	}
	*n = j;
	(*names)[j] = NULL;
	return 0;
}

int config_transform_maybe(const char *name)
{
	static const char *const ext[] = { "jq", "py" };
	char *dir = xasprintf("%s/transforms", config_home());
	struct stat st;
	size_t i;
	int maybe = 1;

	if (lstat(dir, &st) != 0) {
		maybe = errno != ENOENT;
		goto out;
	}
	/* (a folder that cannot be searched: pipe-sink says why) */
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, X_OK) != 0)
		goto out;
	maybe = 0;
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]) && !maybe; i++) {
		char *path = xasprintf("%s/%s.%s", dir, name, ext[i]);

		maybe = lstat(path, &st) == 0 || errno != ENOENT;
		free(path);
	}
out:
	free(dir);
	return maybe;
}

/* ---- loading a pipeline file ---- */

int config_load_name(const char *name, struct pipe_config *cfg)
{
	char *file = NULL, *buf = NULL;
	size_t len = 0;
	int rc = -1, r;

	memset(cfg, 0, sizeof(*cfg));
	if (!config_name_ok(name))
		return -1;
	file = pipeline_path(name, "yaml");
	r = config_read_file(file, "pipeline file", 1, &buf, &len);
	if (r == -2) {
		char *yml = pipeline_path(name, "yml");

		r = config_read_file(yml, "pipeline file", 1, &buf, &len);
		if (r == -2)
			config_say("no pipeline '%s' (looked for %s)", name, file);
		else {
			free(file);
			file = yml;
			yml = NULL;
		}
		free(yml);
	}
	if (r == 0)
		rc = load(name, file, buf, len, cfg);
	free(buf);
	free(file);
	return rc;
}

int config_load_file(const char *file, struct pipe_config *cfg)
{
	const char *base = strrchr(file, '/');
	char *name, *buf = NULL;
	size_t len = 0, n;
	int rc = -1;

	memset(cfg, 0, sizeof(*cfg));
	base = base ? base + 1 : file;
	n = strlen(base) - config_pipeline_ext(base);
	name = xstrndup(base, n);
	if (!config_valid_name(name)) {
		config_say("%s: '%s' is not a valid pipeline name (letters, digits, '.', '_' and '-', "
			   "starting with a letter or digit, at most 64): rename the file", file, name);
		goto out;
	}
	if (config_read_file(file, "pipeline file", 0, &buf, &len) == 0)
		rc = load(name, file, buf, len, cfg);
out:
	free(buf);
	free(name);
	return rc;
}
