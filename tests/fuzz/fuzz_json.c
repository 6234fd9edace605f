/*
 * fuzz_json: libFuzzer target for the scanner's fast path.  The input is
 * one line: json_validate_inner() and json_validate_inner_slow() must agree
 * on it (tests/fuzz/json_diff.h), with the record's members noted in
 * little room and in plenty, without room, and with other keys noted.
 * libFuzzer's copy of the input ends where the input does: ASan sees any
 * read past it.
 */
#include <stdint.h>
#include <stdlib.h>

#include "json_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;

	if (!json_diff(in, size, 8, 2, JSON_DIFF_ROOM, 1, 1) ||
	    !json_diff(in, size, 8, 2, 3, 1, 1) ||
	    !json_diff(in, size, 8, 2, 0, 0, 1) ||
	    !json_diff(in, size, JSON_DIFF_NKEYS, 8, 5, 1, 0) ||
	    !json_diff(in, size, 0, 0, 4, 1, 1))
		abort();
	return 0;
}
