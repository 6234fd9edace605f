/*
 * s3: placeholder until the S3 store (libcurl, SigV4) lands; it replaces
 * this file entirely.
 */
#include "bucket_impl.h"
#include "err.h"

struct bucket *s3_bucket_open(const char *url)
{
	err_msg("cannot open bucket '%s': s3:// buckets: not built in this version", url);
	return NULL;
}
