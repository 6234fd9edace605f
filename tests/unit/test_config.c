/* Unit tests for lib/config.c: pipeline YAML files, defaults, sizes, names. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "err.h"
#include "sb.h"
#include "size.h"
#include "taptest.h"

static char *tmp;		/* the sandbox, canonical */
static char *home;		/* $DATASPOC_PIPE_HOME */
static char *pfile;		/* <home>/pipelines/t.yaml */
static char *errpath;		/* captured stderr */
static char *errtext;		/* what the last call printed on stderr */
static struct pipe_config cfg;

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL || fputs(text, f) == EOF || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = xcalloc(1, 65536);
	size_t n;

	if (f == NULL) {
		perror(path);
		exit(2);
	}
	n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static char *path_in(const char *dir, const char *name)
{
	return xasprintf("%s/%s", dir, name);
}

/* Call config_load_name (file == NULL) or config_load_file, capturing stderr. */
static int load(const char *name, const char *file)
{
	int saved, fd, rc;

	config_free(&cfg);
	saved = dup(STDERR_FILENO);
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved < 0 || fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		perror("capturing stderr");
		exit(2);
	}
	close(fd);
	rc = file ? config_load_file(file, &cfg) : config_load_name(name, &cfg);
	dup2(saved, STDERR_FILENO);
	close(saved);
	free(errtext);
	errtext = slurp(errpath);
	return rc;
}

static int is_zero(const struct pipe_config *c)
{
	static const struct pipe_config zero;

	return memcmp(c, &zero, sizeof(zero)) == 0;
}

/* Load yaml as pipeline "t"; 0 when it loaded without a word on stderr. */
static int pipeline(const char *yaml)
{
	int rc;

	config_free(&cfg);
	write_file(pfile, yaml);
	rc = load("t", NULL);
	return rc == 0 && errtext[0] == '\0' ? 0 : -1;
}

static void loads(const char *yaml, const char *desc)
{
	if (!ok(pipeline(yaml) == 0, "%s", desc))
		printf("#   stderr: %s", errtext);
}

/* Expect yaml to be refused with "test: <file><where_what>\n". */
static void refused_in(const char *file, const char *where_what, const char *desc)
{
	char *want = xasprintf("test: %s%s\n", file, where_what);

	is_str(errtext, want, "%s", desc);
	ok(is_zero(&cfg), "%s: cfg left zeroed", desc);
	free(want);
}

static void refused(const char *yaml, const char *where_what, const char *desc)
{
	int rc;

	config_free(&cfg);
	write_file(pfile, yaml);
	rc = load("t", NULL);
	is_int(rc, -1, "%s: refused", desc);
	refused_in(pfile, where_what, desc);
}

#define MINI_SOURCE "source:\n  tap: tap-x\n"
#define MINI_DEST "destination:\n  bucket: /lake\n"

static void test_minimal(void)
{
	char *cwd_file;

	loads(MINI_SOURCE MINI_DEST, "minimal pipeline loads");
	is_str(cfg.name, "t", "name");
	is_str(cfg.file, pfile, "file");
	is_str(cfg.tap_argv[0], "tap-x", "tap argv[0]");
	ok(cfg.tap_argv[1] == NULL, "tap argv has one word");
	ok(cfg.tap_config_file == NULL && cfg.tap_config_json == NULL, "no tap config");
	ok(cfg.streams == NULL && cfg.catalog_file == NULL, "no streams, no catalog");
	is_str(cfg.bucket, "/lake", "bucket");
	is_str(cfg.path, "raw", "path defaults to raw");
	is_int(cfg.compression, COMPRESSION_ZSTD, "compression defaults to zstd");
	is_int(cfg.compression_level, 1, "zstd level defaults to 1 for Parquet, pyarrow's");
	is_int(cfg.max_file_size, 128 * 1024 * 1024, "max_file_size defaults to 128 MiB");
	ok(cfg.endpoint_url == NULL, "no endpoint_url");
	is_str(cfg.format, "parquet", "format defaults to parquet, as in the Python tool");
	is_int(cfg.parquet, 1, "parquet flag set by default");
	is_int(cfg.mismatch_fail, 0, "schema_mismatch defaults to widen");
	is_int(cfg.incremental, 0, "incremental defaults to off");
	ok(cfg.cron == NULL, "no cron");

	/* The example of DESIGN.md, as the Python tool's users write it. */
	loads("source:\n"
	      "  tap: tap-postgres            # a command on PATH\n"
	      "  config: /path/to/config.json\n"
	      "  streams: [public-orders]\n"
	      "destination:\n"
	      "  bucket: s3://company-datalake\n"
	      "  path: raw\n"
	      "  compression: zstd\n"
	      "incremental:\n"
	      "  enabled: true\n"
	      "schedule:\n"
	      "  cron: \"0 */2 * * *\"\n", "DESIGN.md example loads");
	is_str(cfg.tap_config_file, "/path/to/config.json", "absolute config path kept");
	ok(cfg.streams && cfg.streams[0] && cfg.streams[1] == NULL, "one stream");
	is_str(cfg.streams ? cfg.streams[0] : NULL, "public-orders", "stream name");
	is_str(cfg.bucket, "s3://company-datalake", "s3 bucket kept as written");
	is_int(cfg.incremental, 1, "incremental.enabled: true");
	is_str(cfg.cron, "0 */2 * * *", "cron");

	/* What the Python tool's `add` wrote: partition_by, empty schedule. */
	loads("destination:\n"
	      "  bucket: file:///tmp/lake\n"
	      "  compression: zstd\n"
	      "  partition_by: _extraction_date\n"
	      "  path: raw\n"
	      "incremental:\n"
	      "  enabled: false\n"
	      "schedule: {}\n"
	      "source:\n"
	      "  config: /home/u/.dataspoc-pipe/sources/t.json\n"
	      "  tap: tap-csv\n", "a pipeline written by the Python tool loads");

	/* .yml when there is no .yaml */
	cwd_file = path_in(home, "pipelines/other.yml");
	write_file(cwd_file, MINI_SOURCE MINI_DEST);
	is_int(load("other", NULL), 0, "NAME.yml is found");
	is_str(cfg.file, cwd_file, "file is the .yml");
	unlink(cwd_file);
	free(cwd_file);
	config_free(&cfg);
}

static void test_tap(void)
{
	static const char *const want[] = {
		"python3", "my tap.py", "--flag", "a b", "c\"d", "e$f", "gh", "", NULL
	};
	size_t i;

	loads("source:\n"
	      "  tap: python3 'my tap.py'  --flag \"a b\" \"c\\\"d\" 'e$f' g\\h ''\n"
	      MINI_DEST, "tap string with quotes and escapes");
	for (i = 0; want[i]; i++)
		is_str(cfg.tap_argv[i], want[i], "tap argv[%zu]", i);
	ok(cfg.tap_argv[i] == NULL, "tap argv ends after %zu words", i);

	loads("source:\n  tap: [python3, -m, \"tap x\", '--a b']\n" MINI_DEST,
	      "tap as a flow list");
	is_str(cfg.tap_argv[2], "tap x", "list words are verbatim");
	is_str(cfg.tap_argv[3], "--a b", "list word with a space");
	ok(cfg.tap_argv[4] == NULL, "list argv has 4 words");

	loads("source:\n  tap:\n    - /opt/taps/bin/tap-mysql\n    - $HOME|x\n" MINI_DEST,
	      "tap as a block list, nothing interpreted");
	is_str(cfg.tap_argv[1], "$HOME|x", "list word with shell characters is verbatim");

	refused("source:\n  tap: tap-x --config $HOME/c.json\n" MINI_DEST,
		":2:8: source.tap: '$' is special to a shell, and the tap runs without one: "
		"quote it, or write source.tap as a list", "unquoted $ in tap");
	refused("source:\n  tap: tap-x | tee log\n" MINI_DEST,
		":2:8: source.tap: '|' is special to a shell, and the tap runs without one: "
		"quote it, or write source.tap as a list", "pipe in tap");
	refused("source:\n  tap: 'tap-x \"$X\"'\n" MINI_DEST,
		":2:8: source.tap: '$' inside double quotes is expanded by a shell, and the tap "
		"runs without one: use single quotes, or write source.tap as a list",
		"$ in double quotes in tap");
	refused("source:\n  tap: tap-x 'unterminated\n" MINI_DEST,
		":2:8: source.tap: unterminated single quote", "unterminated quote in tap");
	refused("source:\n  tap: ~/bin/tap-x\n" MINI_DEST,
		":2:8: source.tap: a word starting with '~' is special to a shell, and the tap "
		"runs without one: quote it, or write source.tap as a list", "~ in tap");
	refused("source:\n  tap: FOO=1 tap-x\n" MINI_DEST,
		":2:8: source.tap: 'FOO=1' would set a variable in a shell, and the tap runs "
		"without one: set it in the environment", "variable assignment in tap");
	refused("source:\n  tap: {cmd: tap-x}\n" MINI_DEST,
		":2:8: source.tap must be a string or a list of strings", "tap as a mapping");
	refused("source:\n  tap:\n    - tap-x\n    - [a]\n" MINI_DEST,
		":4:7: source.tap must be a string or a list of strings", "tap list with a list in it");
	refused("source:\n  tap:\n" MINI_DEST,
		":2:3: source.tap must be a string or a list of strings", "empty tap");
	refused("source:\n  tap: []\n" MINI_DEST,
		":2:8: source.tap names no command", "tap as an empty list");
	refused("source:\n  tap: \"tap\\0x\"\n" MINI_DEST,
		":2:8: source.tap contains a NUL byte", "NUL byte in tap");
	refused("source:\n  config: /c.json\n" MINI_DEST,
		":2:3: missing required key 'tap' in source", "no tap");
}

static void test_source_keys(void)
{
	loads("source:\n  tap: tap-x\n  streams:\n    - a\n    - b-c\n  catalog: /cat.json\n" MINI_DEST,
	      "streams and catalog");
	is_str(cfg.streams[0], "a", "stream 0");
	is_str(cfg.streams[1], "b-c", "stream 1");
	ok(cfg.streams[2] == NULL, "two streams");
	is_str(cfg.catalog_file, "/cat.json", "catalog");

	loads("source:\n  tap: x\n  metadata:\n    'db-public-*': {replication-method: INCREMENTAL, replication-key: updated_at}\n"
	      "    orders: {selected: true}\n  catalog_flag: properties\n" MINI_DEST, "metadata and catalog_flag");
	is_str(cfg.metadata_json,
	       "{\"db-public-*\":{\"replication-method\":\"INCREMENTAL\",\"replication-key\":\"updated_at\"},"
	       "\"orders\":{\"selected\":true}}", "metadata as JSON, in file order, booleans kept");
	is_str(cfg.catalog_flag, "properties", "catalog_flag");
	refused("source:\n  tap: x\n  metadata: [a]\n" MINI_DEST,
		":3:13: source.metadata must be a mapping of stream names (or patterns) to metadata",
		"metadata as a list");
	refused("source:\n  tap: x\n  metadata:\n    orders: INCREMENTAL\n" MINI_DEST,
		":4:13: source.metadata.orders must be a mapping of metadata keys to values",
		"metadata of a stream as a scalar");
	refused("source:\n  tap: x\n  catalog_flag: both\n" MINI_DEST,
		":3:17: source.catalog_flag must be one of catalog, properties, not 'both'", "bad catalog_flag");
	refused("source:\n  tap: x\n  streams: [a, b, a]\n" MINI_DEST,
		":3:19: source.streams: duplicate stream 'a'", "duplicate stream");
	refused("source:\n  tap: x\n  streams: [a, '']\n" MINI_DEST,
		":3:16: source.streams: a stream name is empty", "empty stream name");
	refused("source:\n  tap: x\n  streams: orders\n" MINI_DEST,
		":3:12: source.streams must be a list of stream names", "streams as a string");
	refused("source:\n  tap: x\n  streams: []\n" MINI_DEST,
		":3:12: source.streams is empty (leave it out to take every stream)", "empty streams");
	refused("source:\n  tap: x\n  streams:\n  - {a: 1}\n" MINI_DEST,
		":4:5: source.streams must be a list of stream names", "stream as a mapping");
	refused("source:\n  tap: x\n  catalog: [a]\n" MINI_DEST,
		":3:12: source.catalog must be a path (a string)", "catalog as a list");
	refused("source:\n  tap: x\n  config: [a]\n" MINI_DEST,
		":3:11: source.config must be a path (a string) or a mapping", "config as a list");
	refused("source:\n  tap: x\n  config: ''\n" MINI_DEST,
		":3:11: source.config is empty", "empty config path");
	refused("source:\n  tap: x\n  taps: y\n" MINI_DEST,
		":3:3: unknown key 'taps' in source: did you mean 'tap'? (expected one of: tap, config, streams, catalog, metadata, catalog_flag)",
		"unknown key in source");
	refused("source: tap-x\n" MINI_DEST, ":1:9: source must be a mapping", "source as a string");
}

static void test_paths(void)
{
	char *want, *dir, *file, *cwd;

	loads("source:\n  tap: x\n  config: sources/t.json\n  catalog: ../cat.json\n" MINI_DEST,
	      "relative config and catalog paths");
	want = xasprintf("%s/pipelines/sources/t.json", home);
	is_str(cfg.tap_config_file, want, "relative config resolved against the file's directory");
	free(want);
	want = xasprintf("%s/cat.json", home);
	is_str(cfg.catalog_file, want, "relative catalog resolved against the file's directory, "
	       "leading ../ taken off it");
	free(want);

	loads("source:\n  tap: x\n  config: ~/src/t.json\n" MINI_DEST, "~/ in config");
	want = xasprintf("%s/user/src/t.json", tmp);
	is_str(cfg.tap_config_file, want, "~/ is $HOME");
	free(want);

	/* -c with a relative file: relative to the working directory. */
	dir = path_in(tmp, "rel");
	mkdir(dir, 0700);
	file = path_in(dir, "p-1.yml");
	write_file(file, "source:\n  tap: x\n  config: c.json\ndestination:\n  bucket: lake\n");
	cwd = getcwd(NULL, 0);
	if (chdir(tmp) < 0)
		perror(tmp);
	is_int(load(NULL, "rel/p-1.yml"), 0, "config_load_file with a relative path");
	is_str(cfg.name, "p-1", "name from the file's basename without .yml");
	is_str(cfg.file, "rel/p-1.yml", "file as given");
	want = xasprintf("%s/rel/c.json", tmp);
	is_str(cfg.tap_config_file, want, "config path made absolute");
	free(want);
	want = xasprintf("%s/rel/lake", tmp);
	is_str(cfg.bucket, want, "relative bucket resolved against the file's directory, "
	       "as source.config is");
	free(want);
	if (chdir(cwd) < 0)
		perror(cwd);
	free(cwd);
	unlink(file);
	free(file);

	file = path_in(dir, "bad name.yaml");
	write_file(file, MINI_SOURCE MINI_DEST);
	is_int(load(NULL, file), -1, "a file whose name is no pipeline name is refused");
	want = xasprintf("test: %s: 'bad name' is not a valid pipeline name (letters, digits, "
			 "'.', '_' and '-', starting with a letter or digit, at most 64): "
			 "rename the file\n", file);
	is_str(errtext, want, "bad file name message");
	free(want);
	unlink(file);
	free(file);

	file = path_in(dir, "none.yaml");
	is_int(load(NULL, file), -1, "a missing -c file is refused");
	want = xasprintf("test: cannot open '%s': %s\n", file, strerror(ENOENT));
	is_str(errtext, want, "missing -c file message");
	free(want);
	free(file);
	rmdir(dir);
	free(dir);

	is_int(load("nope", NULL), -1, "a missing pipeline is refused");
	want = xasprintf("test: no pipeline 'nope' (looked for %s/pipelines/nope.yaml)\n", home);
	is_str(errtext, want, "missing pipeline message");
	free(want);
	is_int(load("../t", NULL), -1, "an invalid name is refused");
	is_str(errtext, "test: invalid pipeline name '../t' (letters, digits, '.', '_' and '-', "
	       "starting with a letter or digit, at most 64)\n", "invalid name message");
	ok(is_zero(&cfg), "cfg zeroed after a refused name");
}

static void test_inline_config(void)
{
	loads("source:\n"
	      "  tap: x\n"
	      "  config:\n"
	      "    host: db.example.com\n"
	      "    port: 5432\n"
	      "    port_str: \"5432\"\n"
	      "    ratio: 0.25\n"
	      "    half: .5\n"
	      "    big: 1e3\n"
	      "    neg: -7\n"
	      "    plus: +8\n"
	      "    hex: 0x1F\n"
	      "    oct: 0o17\n"
	      "    zero: 0\n"
	      "    ssl: true\n"
	      "    off: FALSE\n"
	      "    none: ~\n"
	      "    empty:\n"
	      "    quoted_true: 'true'\n"
	      "    zip: '01234'\n"
	      "    word: yes please\n"
	      "    text: |\n"
	      "      line \"1\"\n"
	      "      tab\there\n"
	      "    schemas: [public, \"sales\"]\n"
	      "    nested:\n"
	      "      a: {b: [1, {c: null}]}\n"
	      "    emptymap: {}\n"
	      "    emptylist: []\n"
	      "    \"key with space\": x\n"
	      "    7: seven\n"
	      MINI_DEST, "inline config mapping");
	is_str(cfg.tap_config_json,
	       "{\"host\":\"db.example.com\",\"port\":5432,\"port_str\":\"5432\",\"ratio\":0.25,"
	       "\"half\":0.5,\"big\":1e3,\"neg\":-7,\"plus\":8,\"hex\":31,\"oct\":15,\"zero\":0,"
	       "\"ssl\":true,\"off\":false,\"none\":null,\"empty\":null,\"quoted_true\":\"true\","
	       "\"zip\":\"01234\",\"word\":\"yes please\",\"text\":\"line \\\"1\\\"\\ntab\\there\\n\","
	       "\"schemas\":[\"public\",\"sales\"],\"nested\":{\"a\":{\"b\":[1,{\"c\":null}]}},"
	       "\"emptymap\":{},\"emptylist\":[],\"key with space\":\"x\",\"7\":\"seven\"}",
	       "inline config as JSON text");
	ok(cfg.tap_config_file == NULL, "no config file with an inline mapping");

	loads("source:\n  tap: x\n  config: {a: 1., b: -.5e-3, c: 007.5, d: 1.2.3, e: -0}\n" MINI_DEST,
	      "float forms");
	is_str(cfg.tap_config_json, "{\"a\":1.0,\"b\":-0.5e-3,\"c\":7.5,\"d\":\"1.2.3\",\"e\":-0}",
	       "floats normalised to JSON");

	refused("source:\n  tap: x\n  config:\n    zip: 01234\n" MINI_DEST,
		":4:10: source.config.zip: 01234 is octal in YAML 1.1 and decimal in YAML 1.2: "
		"quote it for a string, or drop the leading zero", "leading-zero integer");
	refused("source:\n  tap: x\n  config:\n    db:\n      ssl: on\n" MINI_DEST,
		":5:12: source.config.db.ssl: on is a boolean in YAML 1.1 and a string in YAML 1.2: "
		"write true or false, or quote it for a string", "YAML 1.1 boolean");
	refused("source:\n  tap: x\n  config:\n    list: [1, .inf]\n" MINI_DEST,
		":4:15: source.config.list[1]: .inf has no JSON form: quote it for a string",
		"infinity");
	refused("source:\n  tap: x\n  config:\n    a: 1\n    b: 2\n    a: 3\n" MINI_DEST,
		":6:5: duplicate key 'a' in source.config (also at line 4)", "duplicate inline key");
	refused("source:\n  tap: x\n  config:\n    ? [k]\n    : v\n" MINI_DEST,
		":4:7: source.config: keys must be strings", "list as an inline key");
	refused("source:\n  tap: x\n  config:\n    <<: {a: 1}\n" MINI_DEST,
		":4:5: source.config: merge keys (<<) are not supported", "merge key");
	refused("source:\n  tap: x\n  config:\n    big: 0x10000000000000000\n" MINI_DEST,
		":4:10: source.config.big: 0x10000000000000000 is too large", "hex overflow");
}

static void test_destination(void)
{
	loads(MINI_SOURCE "destination:\n  bucket: gs://b/pre\n  path: ''\n  compression: gzip\n"
	      "  max_file_size: 64MiB\n  endpoint_url: http://127.0.0.1:9000\n  format: jsonl\n",
	      "every destination key");
	is_str(cfg.bucket, "gs://b/pre", "gs bucket");
	is_str(cfg.path, "", "empty path allowed");
	is_int(cfg.compression, COMPRESSION_GZIP, "gzip");
	is_int(cfg.compression_level, 6, "gzip level defaults to 6");
	is_int(cfg.max_file_size, 64 * 1024 * 1024, "max_file_size with a suffix");
	is_str(cfg.endpoint_url, "http://127.0.0.1:9000", "endpoint_url");

	loads(MINI_SOURCE "destination:\n  bucket: file:///data/lake\n  path: a/b.c/d_e\n"
	      "  compression: none\n  max_file_size: 2048\n", "compression none");
	is_int(cfg.compression, COMPRESSION_NONE, "none");
	is_int(cfg.compression_level, 0, "no level for none");
	is_int(cfg.max_file_size, 2048, "max_file_size in bytes");
	is_str(cfg.path, "a/b.c/d_e", "path with components");

	loads(MINI_SOURCE "destination:\n  bucket: s3://b\n  format: jsonl\n", "jsonl, zstd");
	is_int(cfg.compression_level, 3, "zstd level defaults to 3 for JSON lines, zstd's own");
	loads(MINI_SOURCE "destination:\n  bucket: s3://b\n  compression_level: 19\n", "zstd level 19");
	is_int(cfg.compression_level, 19, "zstd level");
	loads(MINI_SOURCE "destination:\n  bucket: s3://b\n  compression: gzip\n  compression_level: 1\n",
	      "gzip level 1");
	is_int(cfg.compression_level, 1, "gzip level");

	refused(MINI_SOURCE "destination:\n  bucket: /l\n  compresion: zstd\n",
		":5:3: unknown key 'compresion' in destination: did you mean 'compression'? (expected one of: bucket, path, "
		"compression, compression_level, max_file_size, endpoint_url, format, row_group_rows, "
		"row_group_size, string_columns, schema_mismatch, account_name, load_method, hard_delete, key_properties, streams)",
		"misspelt destination key");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  compression: lz4\n",
		":5:16: destination.compression must be one of zstd, snappy, gzip, none, not 'lz4'",
		"unknown compression");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  compression_level: 20\n",
		":5:22: destination.compression_level must be from 1 to 19 for zstd, not 20",
		"zstd level too high");
	refused(MINI_SOURCE "destination:\n  compression_level: 10\n  bucket: /l\n  compression: gzip\n",
		":4:22: destination.compression_level must be from 1 to 9 for gzip, not 10",
		"gzip level too high, compression written after it");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  compression_level: high\n",
		":5:22: destination.compression_level must be an integer, not 'high'",
		"level not an integer");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  compression: none\n  compression_level: 3\n",
		":6:22: destination.compression_level does not apply to compression none",
		"level with none");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  max_file_size: 1000\n",
		":5:18: destination.max_file_size must be at least 1 KiB, not '1000'",
		"max_file_size too small");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  max_file_size: 12XB\n",
		":5:18: destination.max_file_size must be a size such as 134217728, 64MiB or 1G, "
		"not '12XB'", "max_file_size with a bad suffix");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  path: /raw\n",
		":5:9: destination.path '/raw' must be relative (no leading '/')", "absolute path");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  path: a/../b\n",
		":5:9: destination.path 'a/../b' must not have '.' or '..' components", "path with ..");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  path: raw/\n",
		":5:9: destination.path 'raw/' has an empty component", "path with a trailing /");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  path: [raw]\n",
		":5:9: destination.path must be a string", "path as a list");
	refused(MINI_SOURCE "destination:\n  bucket: ftp://host/x\n",
		":4:11: destination.bucket: unsupported scheme 'ftp://' (expected a directory, "
		"file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])", "unsupported scheme");
	refused(MINI_SOURCE "destination:\n  bucket: file://lake\n",
		":4:11: destination.bucket 'file://lake': a file:// URL needs an absolute path, "
		"as in file:///data/lake", "file:// without an absolute path");
	refused(MINI_SOURCE "destination:\n  bucket: s3:///x\n",
		":4:11: destination.bucket 's3:///x' names no bucket", "s3 URL without a bucket");
	refused(MINI_SOURCE "destination:\n  bucket: az:///x\n",
		":4:11: destination.bucket 'az:///x' names no container", "az URL without a container");
	refused(MINI_SOURCE "destination:\n  bucket: az:lake\n",
		":4:11: destination.bucket 'az:lake' is not a valid URL (expected a directory, "
		"file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])", "az: without //");
	loads(MINI_SOURCE "destination:\n  bucket: az://lake/zone\n  endpoint_url: http://127.0.0.1:10000/devstoreaccount1\n",
	      "an az:// bucket and its endpoint");
	is_str(cfg.bucket, "az://lake/zone", "az bucket kept as written");
	is_str(cfg.endpoint_url, "http://127.0.0.1:10000/devstoreaccount1", "az endpoint_url");
	ok(cfg.account_name == NULL, "no account_name");
	loads(MINI_SOURCE "destination:\n  bucket: az://lake\n  account_name: mylake01\n", "account_name");
	is_str(cfg.account_name, "mylake01", "account_name kept");
	refused(MINI_SOURCE "destination:\n  bucket: az://lake\n  account_name: My_Lake\n",
		":5:17: destination.account_name must be an Azure storage account name (3 to 24 "
		"lower-case letters and digits), not 'My_Lake'", "account_name with upper case");
	refused(MINI_SOURCE "destination:\n  bucket: s3://lake\n  account_name: mylake\n",
		":5:17: destination.account_name applies only to az:// buckets", "account_name on s3://");
	refused(MINI_SOURCE "destination:\n  bucket:\n",
		":4:3: destination.bucket must be a string", "null bucket");
	refused(MINI_SOURCE "destination:\n  path: raw\n",
		":4:3: missing required key 'bucket' in destination", "no bucket");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  endpoint_url: 127.0.0.1:9000\n",
		":5:17: destination.endpoint_url must be an http:// or https:// URL, not '127.0.0.1:9000'",
		"endpoint_url without a scheme");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: csv\n",
		":5:11: destination.format must be jsonl or parquet, not 'csv'",
		"unsupported format");
	loads(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n", "format parquet");
	is_str(cfg.format, "parquet", "parquet");
	ok(cfg.parquet, "parquet flag");
	is_int(cfg.row_group_rows, 1000000, "row_group_rows defaults to 1,000,000");
	is_int(cfg.row_group_size, 16 * 1024 * 1024, "row_group_size defaults to 16 MiB");
	loads(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  row_group_rows: 5000\n"
	      "  row_group_size: 8MiB\n", "row group bounds");
	is_int(cfg.row_group_rows, 5000, "row_group_rows");
	is_int(cfg.row_group_size, 8 * 1024 * 1024, "row_group_size with a suffix");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  row_group_rows: 0\n",
		":6:19: destination.row_group_rows must be an integer from 1 to 2147483647, not '0'",
		"row_group_rows 0");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  row_group_rows: 1e6\n",
		":6:19: destination.row_group_rows must be an integer from 1 to 2147483647, not '1e6'",
		"row_group_rows not an integer");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  row_group_size: 1000\n",
		":6:19: destination.row_group_size must be at least 1 KiB, not '1000'",
		"row_group_size too small");
	loads(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  string_columns:\n"
	      "    orders: [amount, 'legacy_*']\n    '*': [note]\n", "string_columns");
	ok(cfg.string_columns && cfg.string_columns[6] == NULL, "three pairs");
	if (cfg.string_columns && cfg.string_columns[6] == NULL) {
		is_str(cfg.string_columns[0], "orders", "stream pattern");
		is_str(cfg.string_columns[1], "amount", "column");
		is_str(cfg.string_columns[3], "legacy_*", "column pattern");
		is_str(cfg.string_columns[4], "*", "any stream");
		is_str(cfg.string_columns[5], "note", "its column");
	}
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  string_columns: [a]\n",
		":6:19: destination.string_columns must be a mapping of stream names to lists of column names",
		"string_columns not a mapping");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  string_columns:\n    s: x\n",
		":7:8: destination.string_columns.s must be a list of column names", "string_columns value not a list");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: parquet\n  string_columns:\n    s: ['']\n",
		":7:9: destination.string_columns.s: a column name is empty", "empty column name");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: jsonl\n  string_columns:\n    s: [c]\n",
		":7:5: destination.string_columns applies only to format: parquet", "string_columns without parquet");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: jsonl\n  row_group_rows: 10\n",
		":6:19: destination.row_group_rows applies only to format: parquet",
		"row_group_rows without parquet");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: jsonl\n  schema_mismatch: fail\n",
		":6:20: destination.schema_mismatch applies only to format: parquet",
		"schema_mismatch without parquet");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  schema_mismatch: never\n",
		":5:20: destination.schema_mismatch must be widen or fail, not 'never'", "schema_mismatch value");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  format: jsonl\n  compression: snappy\n",
		":6:16: destination.compression snappy applies only to format: parquet "
		"(JSON lines take zstd, gzip or none)", "snappy with jsonl");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  compression: snappy\n  compression_level: 2\n",
		":6:22: destination.compression_level does not apply to compression snappy", "snappy level");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  partition_by: a=b\n",
		":5:17: destination.partition_by must be _extraction_date or a record field whose name "
		"can name a folder (1 to 128 bytes, no '/', '\\', '=', '%', control characters or "
		"leading '.'), not 'a=b'", "partition_by a field that cannot name a folder");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  partition_by: {field: t, granularity: week}\n",
		":5:41: destination.partition_by.granularity must be day, hour, month, year or value, "
		"not 'week'", "partition_by granularity");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  partition_by: {granularity: day}\n",
		":5:17: destination.partition_by needs a field: {field: FIELD, granularity: "
		"day|hour|month|year|value}", "partition_by without a field");
	refused(MINI_SOURCE "destination:\n  bucket: /l\n  path: a\n  path: b\n",
		":6:3: duplicate key 'path' in destination (also at line 5)", "duplicate key");
}

/* destination.load_method, hard_delete, key_properties, streams (issue #27). */
static void test_load_methods(void)
{
	enum config_method m;
	int hard;
	const char *keys;

	loads(MINI_SOURCE MINI_DEST, "no load_method");
	config_stream_load(&cfg, "orders", &m, &hard, &keys);
	ok(m == CONFIG_LOAD_OVERWRITE && hard == 1 && keys == NULL, "a snapshot pipeline overwrites, as before");
	loads(MINI_SOURCE MINI_DEST "incremental:\n  enabled: true\n", "incremental");
	config_stream_load(&cfg, "orders", &m, &hard, &keys);
	ok(m == CONFIG_LOAD_APPEND && cfg.nloads == 0, "an incremental one appends, as before");

	loads(MINI_SOURCE MINI_DEST "  load_method: upsert\n  hard_delete: no\n  key_properties: [id, 'k 2']\n"
	      "  streams:\n    'audit-*': {load_method: append-only}\n    orders: {hard_delete: true}\n",
	      "every load key");
	config_stream_load(&cfg, "orders", &m, &hard, &keys);
	ok(m == CONFIG_LOAD_UPSERT && hard == 1, "a stream's override of one key; the others the pipeline's");
	is_str(keys, "[\"id\",\"k 2\"]", "key_properties as a JSON array");
	config_stream_load(&cfg, "audit-log", &m, &hard, &keys);
	ok(m == CONFIG_LOAD_APPEND && hard == 0, "a pattern's override");
	ok(config_any_upsert(&cfg), "some stream may upsert");

	refused(MINI_SOURCE MINI_DEST "  load_method: merge\n",
		":5:16: destination.load_method must be append-only, upsert or overwrite, not 'merge'",
		"an unknown load_method");
	refused(MINI_SOURCE MINI_DEST "  key_properties: []\n",
		":5:19: destination.key_properties must be a non-empty list of property names",
		"an empty key");
	refused(MINI_SOURCE MINI_DEST "  streams:\n    a: {load_methd: upsert}\n",
		":6:9: unknown key 'load_methd' in destination.streams.STREAM: did you mean 'load_method'? (expected one of: load_method, "
		"hard_delete, key_properties)", "an unknown key of a stream");
	refused(MINI_SOURCE MINI_DEST "  format: jsonl\n  load_method: upsert\n",
		":6: load_method upsert needs format: parquet (a JSON-lines table cannot be merged by key: "
		"its files are only appended to)", "upsert with JSON lines");
}

static void test_incremental_schedule(void)
{
	static const char *const yes[] = { "yes", "On", "TRUE", "true" };
	static const char *const no[] = { "no", "OFF", "False" };
	char yaml[256];
	size_t i;

	for (i = 0; i < 4; i++) {
		snprintf(yaml, sizeof(yaml), MINI_SOURCE MINI_DEST "incremental:\n  enabled: %s\n", yes[i]);
		loads(yaml, "incremental.enabled: yes-like word");
		is_int(cfg.incremental, 1, "%s is true", yes[i]);
	}
	for (i = 0; i < 3; i++) {
		snprintf(yaml, sizeof(yaml), MINI_SOURCE MINI_DEST "incremental:\n  enabled: %s\n", no[i]);
		loads(yaml, "incremental.enabled: no-like word");
		is_int(cfg.incremental, 0, "%s is false", no[i]);
	}
	loads(MINI_SOURCE MINI_DEST "incremental:\nschedule:\n", "empty sections are absent");
	loads(MINI_SOURCE MINI_DEST "schedule:\n  cron: '@daily'\n", "cron macro");
	is_str(cfg.cron, "@daily", "@daily");

	refused(MINI_SOURCE MINI_DEST "incremental:\n  enabled: maybe\n",
		":6:12: incremental.enabled must be true or false, not 'maybe'", "bad boolean");
	refused(MINI_SOURCE MINI_DEST "incremental: true\n",
		":5:14: incremental must be a mapping", "incremental as a scalar");
	refused(MINI_SOURCE MINI_DEST "incremental:\n  enable: true\n",
		":6:3: unknown key 'enable' in incremental: did you mean 'enabled'? (expected one of: enabled, checkpoint_every)",
		"unknown key in incremental");
	refused(MINI_SOURCE MINI_DEST "schedule:\n  cron: every hour\n",
		":6:9: schedule.cron must be five crontab fields (as in \"0 */2 * * *\") or "
		"@hourly, @daily, ..., not 'every hour'", "bad cron");
	refused(MINI_SOURCE MINI_DEST "schedule:\n  cron: \"0 * * * *\\nrm -rf /\"\n",
		":6:9: schedule.cron must be five crontab fields (as in \"0 */2 * * *\") or "
		"@hourly, @daily, ..., not '0 * * * *?rm -rf /'", "cron with a newline");
}

static void test_file_level(void)
{
	char big[FILENAME_MAX];
	char *want, *data;
	size_t i;

	refused(MINI_SOURCE MINI_DEST "sourc: x\n",
		":5:1: unknown top-level key 'sourc': did you mean 'source'? (expected one of: source, "
		"destination, incremental, schedule)", "a top-level key's typo");
	/* the Python tool's files carry keys it ignores: so do we, said by run and validate */
#define EXTRAS MINI_SOURCE "  note: from the wiki\n" MINI_DEST "  region: us-east-1\n" \
	"notes: x\nincremental:\n  enabled: true\n  strategy: y\n"
	is_int(pipeline(EXTRAS), 0, "keys that are no typo of a known one are passed over, silently");
	ok(cfg.incremental == 1, "... the known ones read");
	config_unknown_warn = 1;
	is_int(load("t", NULL), 0, "... and said when config_unknown_warn is set");
	ok(strstr(errtext, "test: warning: ") == errtext &&
	   strstr(errtext, "t.yaml:3:3: unknown key 'note' in source ignored (known: tap, ") &&
	   strstr(errtext, "t.yaml:6:3: unknown key 'region' in destination ignored") &&
	   strstr(errtext, "t.yaml:7:1: unknown key 'notes' ignored (known: source, ") &&
	   strstr(errtext, "t.yaml:10:3: unknown key 'strategy' in incremental ignored"),
	   "... each with its place");
	config_unknown_warn = 0;
#undef EXTRAS
	refused(MINI_SOURCE MINI_DEST "source:\n  tap: y\n",
		":5:1: duplicate key 'source' (also at line 1)", "duplicate top-level key");
	refused(MINI_DEST, ":1:1: missing required key 'source'", "no source");
	refused(MINI_SOURCE, ":1:1: missing required key 'destination' (with a bucket: "
		"config.yaml gives no destination.bucket)", "no destination");
	refused(MINI_SOURCE "destination: /lake\n", ":3:14: destination must be a mapping",
		"destination as a string");
	refused("- source\n", ":1:1: a pipeline file must be a mapping (with source: and destination:)",
		"a list at the top");
	refused("", ":1:1: empty pipeline file", "empty file");
	refused("# nothing\n\n", ":1:1: empty pipeline file", "only comments");
	refused("source:\n  tap: x: y\n",
		":2:9: mapping values are not allowed in this context", "YAML syntax error");
	refused("source:\n  tap: x\n  streams: [a, b\ndestination:\n  bucket: /l\n",
		":4:12: did not find expected ',' or ']' (while parsing a flow sequence at line 3, "
		"column 12)", "unclosed flow sequence");
	refused("source:\n\ttap: x\n",
		":2:1: found character that cannot start any token (a tab: YAML indents with spaces)",
		"tab indentation");
	refused("source:\n  tap: \"x\xff\"\n",
		":2:10: invalid leading UTF-8 octet", "invalid UTF-8");
	refused("source: &s\n  tap: x\n" MINI_DEST,
		":1:9: anchors (&s) are not supported: write the value out", "anchor");
	refused("x: &s 1\nsource:\n  tap: *s\n" MINI_DEST,
		":1:4: anchors (&s) are not supported: write the value out", "anchor on a scalar");
	refused(MINI_SOURCE "destination:\n  bucket: !!str /l\n",
		":4:11: tags (tag:yaml.org,2002:str) are not supported: quote a value to make it a string",
		"tag");
	refused(MINI_SOURCE MINI_DEST "---\n" MINI_SOURCE,
		":5:1: more than one YAML document in the file", "two documents");

	/* Over 1 MiB, even when it is all comments. */
	data = xmalloc(1100 * 1024 + 1);
	for (i = 0; i < 1100 * 1024; i++)
		data[i] = i % 64 == 63 ? '\n' : '#';
	data[i] = '\0';
	config_free(&cfg);
	write_file(pfile, data);
	free(data);
	is_int(load("t", NULL), -1, "a file over 1 MiB is refused");
	snprintf(big, sizeof(big), "test: %s: pipeline file too large (more than 1 MiB)\n", pfile);
	is_str(errtext, big, "too large message");

	/* Nested too deep for anyone's good. */
	data = xmalloc(400);
	strcpy(data, MINI_SOURCE MINI_DEST "x: ");
	for (i = 0; i < 70; i++)
		strcat(data, "[");
	config_free(&cfg);
	write_file(pfile, data);
	free(data);
	is_int(load("t", NULL), -1, "deep nesting is refused");
	want = xasprintf("test: %s:5:67: nested more than 64 levels deep\n", pfile);
	is_str(errtext, want, "deep nesting message");
	free(want);
}

static void test_bucket_paths(void)
{
	static const struct {
		const char *b, *want;	/* want: after "<tmp>/", or "=" as written, or NULL */
	} cases[] = {
		{ "lake", "home/pipelines/lake" }, { "./lake", "home/pipelines/lake" },
		{ "../lake", "home/lake" }, { "../../x/y", "x/y" }, { ".", "home/pipelines" },
		{ "~/lake", "user/lake" }, { "~", "user" }, { "lake:2024", "home/pipelines/lake:2024" },
		{ "/abs/lake", "=" }, { "file:///data/lake", "=" }, { "s3://b/p", "=" },
		{ "gs://b", "=" },
	};
	struct sb why = SB_INIT;
	char *want, *got;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *yaml = xasprintf(MINI_SOURCE "destination:\n  bucket: '%s'\n", cases[i].b);

		char *desc = xasprintf("bucket '%s' loads", cases[i].b);

		loads(yaml, desc);
		free(yaml);
		free(desc);
		want = strcmp(cases[i].want, "=") ? xasprintf("%s/%s", tmp, cases[i].want) :
		       xstrdup(cases[i].b);
		is_str(cfg.bucket, want, "bucket '%s' resolved", cases[i].b);
		free(want);
	}
	refused(MINI_SOURCE "destination:\n  bucket: s3:/mybucket\n",
		":4:11: destination.bucket 's3:/mybucket' is not a valid URL (expected a directory, "
		"file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])", "s3: with one slash");
	refused(MINI_SOURCE "destination:\n  bucket: ~bob/lake\n",
		":4:11: destination.bucket '~bob/lake': only a leading ~/ is expanded (write the "
		"home directory in full)", "~user in a bucket");
	refused("source:\n  tap: x\n  config: ~bob/c.json\n" MINI_DEST,
		":3:11: source.config '~bob/c.json': only a leading ~/ is expanded (write the "
		"home directory in full)", "~user in source.config");

	/* The function the wizard's answer goes through: the same rule. */
	sb_reset(&why);
	got = config_bucket_resolve("s3:/mybucket", "/w", NULL, &why);
	ok(got == NULL, "config_bucket_resolve refuses s3:/mybucket");
	is_str(why.buf, "destination.bucket 's3:/mybucket' is not a valid URL (expected a directory, "
	       "file:///abs/dir, s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])", "with the loader's reason");
	sb_reset(&why);
	got = config_bucket_resolve("FILE:/x", "/w", NULL, &why);
	ok(got == NULL, "config_bucket_resolve refuses FILE:/x");
	sb_reset(&why);
	got = config_bucket_resolve("S3://lake", "/w", "bucket", &why);
	ok(got == NULL, "config_bucket_resolve refuses S3://lake");
	is_str(why.buf, "bucket 'S3://lake': the scheme is written in lower case, as in s3://lake",
	       "an upper-case scheme, named as what was given");
	sb_reset(&why);
	got = config_bucket_resolve("file:lake", "/w", "bucket", &why);
	is_str(why.buf, "bucket 'file:lake' is not a valid URL (expected a directory, file:///abs/dir, "
	       "s3://bucket[/prefix], gs://bucket[/prefix] or az://container[/prefix])", "file:lake");
	sb_reset(&why);
	got = config_bucket_resolve("lake", "/w", NULL, &why);
	is_str(got, "/w/lake", "config_bucket_resolve: relative to the directory given");
	free(got);
	sb_reset(&why);
	got = config_bucket_resolve("s3://b/p", "/w", NULL, &why);
	is_str(got, "s3://b/p", "config_bucket_resolve: a URL as written");
	free(got);
	sb_reset(&why);
	got = config_bucket_resolve("", "/w", NULL, &why);
	ok(got == NULL, "config_bucket_resolve refuses an empty bucket");
	is_str(why.buf, "destination.bucket is empty", "empty bucket reason");
	sb_free(&why);
}

/* config_check_source(), stderr captured; 0 when it returned rc. */
static int check_source(int rc_want, struct sb *found)
{
	int saved, fd, rc;

	saved = dup(STDERR_FILENO);
	fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (saved < 0 || fd < 0 || dup2(fd, STDERR_FILENO) < 0) {
		perror("capturing stderr");
		exit(2);
	}
	close(fd);
	rc = config_check_source(&cfg, found);
	dup2(saved, STDERR_FILENO);
	close(saved);
	free(errtext);
	errtext = slurp(errpath);
	return rc == rc_want ? 0 : -1;
}

static void test_check_source(void)
{
	char *json = path_in(home, "sources.json"), *want;
	struct sb found = SB_INIT;

	unlink(json);
	loads("source:\n  tap: x\n  config: ../sources.json\n" MINI_DEST, "a missing config file loads");
	ok(check_source(-1, NULL) == 0, "config_check_source: a missing file is an error");
	want = xasprintf("test: %s:3:11: source.config: cannot read '%s': No such file or directory\n",
			 pfile, json);
	is_str(errtext, want, "named at source.config's place in the pipeline file");
	free(want);

	mkdir(json, 0700);
	ok(check_source(-1, NULL) == 0, "config_check_source: a directory is an error");
	want = xasprintf("test: %s:3:11: source.config: cannot read '%s': Is a directory\n", pfile, json);
	is_str(errtext, want, "a directory: EISDIR");
	free(want);
	rmdir(json);

	write_file(json, "{\n  \"host\": \"db\",\n  \"port\": 54x2\n}\n");
	ok(check_source(-1, NULL) == 0, "config_check_source: invalid JSON is an error");
	ok(strncmp(errtext, "test: ", 6) == 0 && strstr(errtext, ".json:3:13: the tap's config "
	   "(source.config) is not JSON: ") != NULL, "invalid JSON: file:line:col, not a byte offset");
	if (strstr(errtext, ".json:3:13:") == NULL)
		printf("#   stderr: %s", errtext);
	write_file(json, "\n  [\"host\"]\n");
	ok(check_source(-1, NULL) == 0, "config_check_source: an array is an error");
	want = xasprintf("test: %s:2:3: the tap's config (source.config) is not a JSON object\n", json);
	is_str(errtext, want, "not an object: where the value starts");
	free(want);

	write_file(json, "{\"files\": [{\"entity\": \"t\", \"path\": \"/path/to/my_table.csv\"}],"
		   " \"password\": \"CHANGE_ME\", \"db\": {\"name\": \"CHANGE_ME\"}, \"user\": \"me\"}\n");
	ok(check_source(0, &found) == 0, "config_check_source: a template loads");
	is_str(errtext, "", "quietly");
	is_str(found.buf, ".files[0].path, .password, .db.name", "placeholders named by member");
	sb_free(&found);
	write_file(json, "{\"path\": \"/data/path/to/x.csv\", \"password\": \"s3cret\"}\n");
	ok(check_source(0, &found) == 0 && found.len == 0, "filled in: no placeholder");
	ok(check_source(0, NULL) == 0, "placeholders NULL: not looked for");

	loads("source:\n  tap: x\n  config:\n    password: CHANGE_ME\n" MINI_DEST, "inline template");
	ok(check_source(0, &found) == 0, "config_check_source: inline config");
	is_str(found.buf, ".password", "placeholders of an inline config");
	sb_free(&found);
	loads(MINI_SOURCE MINI_DEST, "no tap config");
	ok(check_source(0, &found) == 0 && found.len == 0, "no tap config: nothing to check");
	unlink(json);
	free(json);
	config_free(&cfg);
}

static void test_home_config(void)
{
	char *conf = path_in(home, "config.yaml"), *want, *got;

	write_file(conf, "# only comments\n");
	loads(MINI_SOURCE MINI_DEST, "config.yaml with only comments");
	write_file(conf, "");
	loads(MINI_SOURCE MINI_DEST, "empty config.yaml");

	write_file(conf, "destination:\n  bucket: s3://default\n  path: landing\n"
		   "  compression: gzip\n  compression_level: 9\n  max_file_size: 1G\n"
		   "  endpoint_url: https://minio.local\n");
	loads(MINI_SOURCE "destination:\n  path: other\n", "defaults from config.yaml");
	is_str(cfg.bucket, "s3://default", "default bucket");
	is_str(cfg.path, "other", "the pipeline's own path wins");
	is_int(cfg.compression, COMPRESSION_GZIP, "default compression");
	is_int(cfg.compression_level, 9, "default level for that compression");
	is_int(cfg.max_file_size, 1024ULL * 1024 * 1024, "default max_file_size");
	is_str(cfg.endpoint_url, "https://minio.local", "default endpoint_url");

	loads(MINI_SOURCE "destination:\n  bucket: /mine\n  compression: zstd\n",
	      "pipeline overrides config.yaml");
	is_str(cfg.bucket, "/mine", "the pipeline's own bucket wins");
	is_int(cfg.compression, COMPRESSION_ZSTD, "the pipeline's own compression wins");
	is_int(cfg.compression_level, 1, "a default level for another compression is not used (zstd's for Parquet)");

	/* The Python tool's init wrote "defaults:". */
	write_file(conf, "# DataSpoc Pipe\n\ndefaults:\n  compression: none\n"
		   "  partition_by: _extraction_date\ndestination:\n  path: p\n");
	loads(MINI_SOURCE MINI_DEST, "legacy defaults: in config.yaml");
	is_int(cfg.compression, COMPRESSION_NONE, "compression from defaults:");
	is_str(cfg.path, "p", "path from destination:");

	/* A pipeline needs no destination: when config.yaml gives the bucket. */
	write_file(conf, "destination:\n  bucket: lake\n  format: jsonl\n");
	loads(MINI_SOURCE, "a pipeline without destination: loads with config.yaml's bucket");
	want = xasprintf("%s/lake", home);
	is_str(cfg.bucket, want, "config.yaml's relative bucket: relative to config.yaml's directory");
	is_str(cfg.format, "jsonl", "config.yaml's format");
	is_str(cfg.path, "raw", "path's own default");
	is_int(config_default_bucket(&got), 0, "config_default_bucket");
	is_str(got, want, "config_default_bucket: config.yaml's bucket, resolved");
	free(got);
	free(want);
	write_file(conf, "destination:\n  compression: gzip\n");
	is_int(config_default_bucket(&got), 0, "config_default_bucket without a bucket");
	ok(got == NULL, "config_default_bucket: NULL when config.yaml gives none");
	refused(MINI_SOURCE, ":1:1: missing required key 'destination' (with a bucket: config.yaml "
		"gives no destination.bucket)", "no destination: and no default bucket");

	write_file(conf, "destination:\n  bucket: /l\n  compresion: gzip\n");
	is_int(pipeline(MINI_SOURCE MINI_DEST), -1, "config.yaml with an unknown key");
	refused_in(conf, ":3:3: unknown key 'compresion' in destination: did you mean 'compression'? (expected one of: bucket, "
		   "path, compression, compression_level, max_file_size, endpoint_url, format, "
		   "row_group_rows, row_group_size, string_columns, schema_mismatch, account_name, load_method, hard_delete, key_properties, streams)",
		   "config.yaml unknown key message");
	write_file(conf, "defualts:\n  compression: zstd\n");
	is_int(pipeline(MINI_SOURCE MINI_DEST), -1, "config.yaml with a misspelt key");
	refused_in(conf, ":1:1: unknown top-level key 'defualts': did you mean 'defaults'? (expected one of: destination)",
		   "config.yaml top-level key message");
	/* the Python tool's init writes defaults: {compression, partition_by} */
	write_file(conf, "# DataSpoc Pipe\ndefaults:\n  compression: zstd\n  partition_by: _extraction_date\n");
	is_int(pipeline(MINI_SOURCE MINI_DEST), 0, "the Python tool's config.yaml");
	write_file(conf, "destination:\n  compression: gzip\n  compression_level: 12\n");
	is_int(pipeline(MINI_SOURCE MINI_DEST), -1, "config.yaml with a bad level");
	refused_in(conf, ":3:22: destination.compression_level must be from 1 to 9 for gzip, not 12",
		   "config.yaml level message");
	unlink(conf);
	free(conf);
}

static void test_helpers(void)
{
	static const struct {
		const char *s;
		int rc;
		uint64_t v;
	} sizes[] = {
		{ "0", 0, 0 }, { "1024", 0, 1024 }, { "1K", 0, 1024 }, { "2KB", 0, 2048 },
		{ "3KiB", 0, 3072 }, { "1m", 0, 1048576 }, { "5 MiB", 0, 5242880 },
		{ "2gb", 0, 2147483648ULL }, { "1GiB", 0, 1073741824ULL },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", -1, 0 }, { "17179869184G", -1, 0 },
		{ "", -1, 0 }, { "K", -1, 0 }, { "-1", -1, 0 }, { "+1", -1, 0 },
		{ " 1", -1, 0 }, { "1T", -1, 0 }, { "1.5M", -1, 0 }, { "1 M B", -1, 0 },
	};
	static const struct {
		const char *tap, *source;
	} names[] = {
		{ "tap-postgres", "postgres" }, { "dataspoc-tap-csv", "csv" },
		{ "/opt/bin/tap-mysql", "mysql" }, { "tap-", "tap" }, { "python3", "python3" },
		{ "./taps/dataspoc-x", "x" }, { "..", "tap" }, { "dir/", "tap" },
		{ "/opt/taps/tap-x", "x" }, { "tap-x.sh", "x" }, { ".tap", ".tap" },
		{ "tap-a-tap-b", "a-b" },
	};
	/* Python's rule: a string's last word; a YAML list's first */
	static const struct {
		const char *w0, *w1;
		int listed;
		const char *source;
	} words[] = {
		{ "python", "mock_tap.py", 0, "mock_tap" }, { "python3", "/x/tap-y.py", 0, "y" },
		{ "tap-x", "--config=a.json", 0, "--config=a" }, { "tap-x", "--debug", 1, "x" },
	};
	char *argv3[3] = { NULL, NULL, NULL };
	static const struct {
		const char *name;
		int valid;
	} valid[] = {
		{ "orders", 1 }, { "pg-orders_2.v1", 1 }, { "0", 1 }, { "", 0 }, { "-x", 0 },
		{ ".x", 0 }, { "a/b", 0 }, { "a b", 0 }, { "..", 0 },
		{ "a234567890123456789012345678901234567890123456789012345678901234", 1 },
		{ "a2345678901234567890123456789012345678901234567890123456789012345", 0 },
	};
	struct pipe_config c;
	char *argv[2] = { NULL, NULL };
	const char *h;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t v = 0;
		int rc = config_parse_size(sizes[i].s, &v);

		is_int(rc, sizes[i].rc, "config_parse_size('%s') returns %d", sizes[i].s, sizes[i].rc);
		if (rc == 0)
			ok(v == sizes[i].v, "config_parse_size('%s') = %llu", sizes[i].s,
			   (unsigned long long)sizes[i].v);
	}
	memset(&c, 0, sizeof(c));
	c.tap_argv = argv;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char *s;

		argv[0] = (char *)(uintptr_t)names[i].tap;
		s = config_source_name(&c);
		is_str(s, names[i].source, "source name of '%s'", names[i].tap);
		free(s);
	}
	c.tap_argv = argv3;
	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		char *s;

		argv3[0] = (char *)(uintptr_t)words[i].w0;
		argv3[1] = (char *)(uintptr_t)words[i].w1;
		c.tap_listed = words[i].listed;
		s = config_source_name(&c);
		is_str(s, words[i].source, "source name of '%s %s'%s", words[i].w0, words[i].w1,
		       words[i].listed ? " (a list)" : "");
		free(s);
	}
	c.tap_listed = 0;
	{
		char *s = config_source_name(NULL);

		is_str(s, "tap", "source name without a config");
		free(s);
	}
	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		is_int(config_valid_name(valid[i].name), valid[i].valid, "config_valid_name('%s')",
		       valid[i].name);
	is_int(config_valid_name(NULL), 0, "config_valid_name(NULL)");
	is_str(config_compression_ext(COMPRESSION_ZSTD), ".zst", "zstd extension");
	is_str(config_compression_ext(COMPRESSION_GZIP), ".gz", "gzip extension");
	is_str(config_compression_ext(COMPRESSION_NONE), "", "no extension for none");

	h = config_home();
	is_str(h, home, "config_home is $DATASPOC_PIPE_HOME");
	ok(config_home() == h, "config_home keeps its string while nothing changed");
	unsetenv("DATASPOC_PIPE_HOME");
	setenv("HOME", "/nowhere/", 1);
	is_str(config_home(), "/nowhere/.dataspoc-pipe", "config_home falls back to $HOME");
	setenv("DATASPOC_PIPE_HOME", "/x/home//", 1);
	is_str(config_home(), "/x/home", "config_home drops trailing slashes");
	setenv("DATASPOC_PIPE_HOME", home, 1);

	memset(&c, 0, sizeof(c));
	config_free(&c);
	config_free(NULL);
	ok(is_zero(&c), "config_free on a zeroed struct and on NULL");
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(void)
{
	char templ[] = "/tmp/test_config.XXXXXX";
	char *dir, *user;

	err_prog = "test";
	if (mkdtemp(templ) == NULL || (tmp = realpath(templ, NULL)) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	home = path_in(tmp, "home");
	dir = path_in(home, "pipelines");
	user = path_in(tmp, "user");
	if (mkdir(home, 0700) < 0 || mkdir(dir, 0700) < 0 || mkdir(user, 0700) < 0) {
		perror("mkdir");
		return 2;
	}
	setenv("DATASPOC_PIPE_HOME", home, 1);
	setenv("HOME", user, 1);
	pfile = path_in(dir, "t.yaml");
	errpath = path_in(tmp, "stderr");

	test_minimal();
	test_tap();
	test_source_keys();
	test_paths();
	test_inline_config();
	test_destination();
	test_load_methods();
	test_incremental_schedule();
	test_file_level();
	test_bucket_paths();
	test_home_config();
	test_check_source();
	setenv("HOME", user, 1);
	test_helpers();

	config_free(&cfg);
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	free(errtext);
	free(errpath);
	free(pfile);
	free(user);
	free(dir);
	free(home);
	free(tmp);
	return tap_done();
}
