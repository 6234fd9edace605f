/*
 * fuzz_config: libFuzzer target for the config loader.  The input is
 * written to a pipeline file in a private home and loaded with
 * config_load_file(), as `-c FILE.yaml` does; an input starting with
 * "#home\n" goes to <home>/config.yaml instead (the defaults), beside a
 * small valid pipeline.  A load either fails with a message or gives a
 * config whose fields hold what the contract in config.h promises.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char home[256], pipeline[300], defaults[300];

static void must(int ok)
{
	if (!ok)
		abort();
}

static void put(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	snprintf(home, sizeof(home), "%s/fuzz_config.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(home) == NULL)
		abort();
	snprintf(pipeline, sizeof(pipeline), "%s/p.yaml", home);
	snprintf(defaults, sizeof(defaults), "%s/config.yaml", home);
	setenv("DATASPOC_PIPE_HOME", home, 1);
	setenv("HOME", home, 1);
	return 0;
}

/* "" or relative components, none of them empty, "." or "..". */
static int path_ok(const char *p)
{
	const char *c = p, *end;

	if (*p == '\0')
		return 1;
	for (;;) {
		end = strchr(c, '/');
		if (end == NULL)
			end = c + strlen(c);
		if (end == c || (end - c == 1 && c[0] == '.') ||
		    (end - c == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		if (*end == '\0')
			return 1;
		c = end + 1;
	}
}

static void valid_json(const char *text)
{
	struct json_span v;
	size_t errpos;
	const char *errmsg;

	if (text == NULL)
		return;
	must(json_validate(text, strlen(text), &v, &errpos, &errmsg) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char home_tag[] = "#home\n";
	static const char small[] = "source:\n  tap: tap-x\ndestination:\n  path: raw\n";
	struct pipe_config cfg;
	size_t i;

	unlink(defaults);
	if (size >= sizeof(home_tag) - 1 && memcmp(data, home_tag, sizeof(home_tag) - 1) == 0) {
		put(defaults, data + sizeof(home_tag) - 1, size - (sizeof(home_tag) - 1));
		put(pipeline, small, sizeof(small) - 1);
	} else {
		put(pipeline, data, size);
	}
	if (config_load_file(pipeline, &cfg) != 0) {
		/* cfg is all zero after a failure */
		must(cfg.name == NULL && cfg.tap_argv == NULL && cfg.bucket == NULL);
		return 0;
	}
	must(strcmp(cfg.name, "p") == 0);
	must(cfg.tap_argv != NULL && cfg.tap_argv[0] != NULL);
	for (i = 0; cfg.tap_argv[i]; i++)
		;
	must(cfg.bucket != NULL && cfg.path != NULL);
	must(path_ok(cfg.path));
	must(cfg.compression == COMPRESSION_ZSTD || cfg.compression == COMPRESSION_GZIP ||
	     cfg.compression == COMPRESSION_NONE);
	must(cfg.max_file_size >= 1024);
	must(cfg.incremental == 0 || cfg.incremental == 1);
	valid_json(cfg.tap_config_json);
	valid_json(cfg.metadata_json);
	if (cfg.streams) {
		must(cfg.streams[0] != NULL);
		for (i = 0; cfg.streams[i]; i++)
			must(cfg.streams[i][0] != '\0');
	}
	free(config_source_name(&cfg));
	config_free(&cfg);
	return 0;
}
