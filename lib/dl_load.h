/*
 * dl_load: a shared library loaded by the first call that needs it
 * (lib/store/curl_load.c, lib/store/crypto_load.c,
 * lib/parquet/snappy_load.c): the programs are linked without it, and a
 * process that never needs it never maps it.
 */
#ifndef PIPE_DL_LOAD_H
#define PIPE_DL_LOAD_H

#include <stddef.h>

/* An entry point of the library: its name, and the function pointer it fills. */
struct dl_sym {
	const char *name;
	void *fp;		/* the address of a function pointer */
	size_t size;		/* its size */
};

#define DL_SYM(f, name) { (name), &(f), sizeof(f) }

/*
 * dlopen(3) soname and fill every one of syms[0..n) with dlsym(3).  0, or
 * -1 with "cannot load WHAT: REASON" said on stderr and the library closed.
 * The caller makes sure it runs once (pthread_once).
 */
int dl_load(const char *soname, const char *what, const struct dl_sym *syms, size_t n);

#endif
