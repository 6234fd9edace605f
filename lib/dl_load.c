/* dl_load: a shared library loaded on first use (see dl_load.h). */
#include "dl_load.h"

#include <dlfcn.h>
#include <string.h>

#include "err.h"

int dl_load(const char *soname, const char *what, const struct dl_sym *syms, size_t n)
{
	void *lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	size_t i;

	if (lib == NULL) {
		err_msg("cannot load %s: %s", what, dlerror());
		return -1;
	}
	for (i = 0; i < n; i++) {
		void *p = dlsym(lib, syms[i].name);

		if (p == NULL) {
			err_msg("cannot load %s: %s", what, dlerror());
			dlclose(lib);
			return -1;
		}
		/* dlsym's object pointer into a function pointer (ISO C has no cast for it) */
		memcpy(syms[i].fp, &p, syms[i].size);
	}
	return 0;
}
