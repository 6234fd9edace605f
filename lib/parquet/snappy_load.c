/*
 * snappy_load: libsnappy, loaded by the first call that needs it.
 *
 * Only Parquet pages written or read with snappy use it.  libsnappy is C++:
 * mapped at every start it brings libstdc++ and libgcc_s, some 0.6 ms of
 * CPU at each start of pipe-sink, also for a jsonl or a zstd run (issue
 * #14).  The programs are linked without -lsnappy; the functions below are
 * the entry points of <snappy-c.h> this project calls, by its names and
 * prototypes (the compiler checks them), each passing its call on to
 * libsnappy's own, found with dlsym(3).  When libsnappy cannot be loaded,
 * that is said once, and the calls return SNAPPY_INVALID_INPUT;
 * snappy_max_compressed_length() needs no library (snappy's documented
 * bound, 32 + n + n / 6).
 */
#include <snappy-c.h>

#include <pthread.h>

#include "dl_load.h"
#include "err.h"

#define SNAPPY_SONAME "libsnappy.so.1"

static struct {
	snappy_status (*compress)(const char *, size_t, char *, size_t *);
	snappy_status (*uncompress)(const char *, size_t, char *, size_t *);
	snappy_status (*uncompressed_length)(const char *, size_t, size_t *);
} fn;
static int usable;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	const struct dl_sym syms[] = {
		DL_SYM(fn.compress, "snappy_compress"), DL_SYM(fn.uncompress, "snappy_uncompress"),
		DL_SYM(fn.uncompressed_length, "snappy_uncompressed_length"),
	};

	usable = dl_load(SNAPPY_SONAME, "libsnappy (needed for snappy-compressed Parquet)", syms,
			 sizeof(syms) / sizeof(syms[0])) == 0;
}

static int ready(void)
{
	pthread_once(&once, load);
	return usable;
}

snappy_status snappy_compress(const char *input, size_t input_length, char *compressed,
			      size_t *compressed_length)
{
	return ready() ? fn.compress(input, input_length, compressed, compressed_length)
		       : SNAPPY_INVALID_INPUT;
}

snappy_status snappy_uncompress(const char *compressed, size_t compressed_length,
				char *uncompressed, size_t *uncompressed_length)
{
	return ready() ? fn.uncompress(compressed, compressed_length, uncompressed, uncompressed_length)
		       : SNAPPY_INVALID_INPUT;
}

snappy_status snappy_uncompressed_length(const char *compressed, size_t compressed_length,
					 size_t *result)
{
	return ready() ? fn.uncompressed_length(compressed, compressed_length, result)
		       : SNAPPY_INVALID_INPUT;
}

size_t snappy_max_compressed_length(size_t source_length)
{
	return 32 + source_length + source_length / 6;
}
