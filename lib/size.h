/* size: sizes as the config files write them ("64MiB", "1 G"). */
#ifndef PIPE_SIZE_H
#define PIPE_SIZE_H

#include <stdint.h>

/*
 * Parse a size: a non-negative decimal integer with an optional suffix
 * K, KB, KiB, M, MB, MiB, G, GB, GiB (all powers of 1024; any letter case;
 * spaces allowed before the suffix).  Returns 0, or -1 (nothing printed) on
 * bad syntax or a value above UINT64_MAX.
 */
int config_parse_size(const char *s, uint64_t *out);

#endif
