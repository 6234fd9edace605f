/*
 * loadgen: the Singer stream of the load suite (tests/load/), fast enough
 * for ten million records through a pipe.
 *
 *   loadgen [-b BLOCK] [-f FIRST] [-n STREAMS] [-p PREFIX] [-P PIPELINE]
 *           [-r RECORDS] [-t EVERY]
 *
 * STREAMS streams named PREFIX0000, PREFIX0001, ... (a SCHEMA each first),
 * each getting RECORDS records {"id":N,"s":"NAME","v":"..."} with N from
 * FIRST+1 to FIRST+RECORDS.  Records go out in turns: BLOCK records of
 * stream 0, BLOCK of stream 1, ..., then the next BLOCK of stream 0, so
 * that every stream stays active until the end.  A STATE
 * {"pipeline":P,"seq":FIRST,"sent":K} follows every EVERY records (0: none
 * on the way), and the last STATE, {"pipeline":P,"seq":FIRST+RECORDS},
 * ends the stream: what a run saves.  Output depends only on the flags.
 *
 * Built by tests/helpers/load.bash with cc; not part of the product.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned long long number(const char *s, const char *what)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (*s == '\0' || *end != '\0') {
		fprintf(stderr, "loadgen: %s wants a whole number, not '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	unsigned long long streams = 1, records = 1000, block = 1, first = 0, every = 0;
	unsigned long long done = 0, round, i, k;
	const char *prefix = "s", *pipeline = "load";
	static char obuf[1 << 20];
	int c;

	while ((c = getopt(argc, argv, "b:f:n:p:P:r:t:")) != -1) {
		switch (c) {
		case 'b': block = number(optarg, "-b"); break;
		case 'f': first = number(optarg, "-f"); break;
		case 'n': streams = number(optarg, "-n"); break;
		case 'p': prefix = optarg; break;
		case 'P': pipeline = optarg; break;
		case 'r': records = number(optarg, "-r"); break;
		case 't': every = number(optarg, "-t"); break;
		default:
			fprintf(stderr, "usage: loadgen [-b BLOCK] [-f FIRST] [-n STREAMS] [-p PREFIX] "
				"[-P PIPELINE] [-r RECORDS] [-t EVERY]\n");
			return 2;
		}
	}
	if (streams == 0 || streams > 100000 || block == 0) {
		fprintf(stderr, "loadgen: -n wants 1 to 100000 streams, -b at least 1\n");
		return 2;
	}
	setvbuf(stdout, obuf, _IOFBF, sizeof(obuf));
	for (i = 0; i < streams; i++)
		printf("{\"type\":\"SCHEMA\",\"stream\":\"%s%04llu\",\"schema\":{\"type\":\"object\","
		       "\"properties\":{\"id\":{\"type\":\"integer\"},\"s\":{\"type\":\"string\"},"
		       "\"v\":{\"type\":\"string\"}}},\"key_properties\":[\"id\"]}\n", prefix, i);
	for (round = 0; round * block < records; round++) {
		unsigned long long lo = round * block, hi = lo + block > records ? records : lo + block;

		for (i = 0; i < streams; i++) {
			for (k = lo; k < hi; k++) {
				/* v varies with id, so the files do not compress to nothing */
				printf("{\"type\":\"RECORD\",\"stream\":\"%s%04llu\",\"record\":"
				       "{\"id\":%llu,\"s\":\"%s%04llu\",\"v\":\"%08llx\"}}\n",
				       prefix, i, first + k + 1, prefix, i,
				       ((first + k + 1) * 2654435761ULL + i) & 0xffffffffULL);
				done++;
				if (every && done % every == 0)
					printf("{\"type\":\"STATE\",\"value\":{\"pipeline\":\"%s\",\"seq\":%llu,"
					       "\"sent\":%llu}}\n", pipeline, first, done);
			}
		}
	}
	printf("{\"type\":\"STATE\",\"value\":{\"pipeline\":\"%s\",\"seq\":%llu}}\n", pipeline, first + records);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		perror("loadgen: write");
		return 1;
	}
	return 0;
}
