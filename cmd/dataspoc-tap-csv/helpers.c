/* dataspoc-tap-csv: the small things its files share. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "sb.h"
#include "tap_csv.h"
#include "util.h"

/* ---- small helpers ---- */

int bytes_eq(const char *a, size_t alen, const char *b)
{
	return alen == strlen(b) && memcmp(a, b, alen) == 0;
}

/* ---- output ---- */

int emit(struct tap *t)
{
	return singer_tap_emit(&t->msg, &t->write_failed);
}
