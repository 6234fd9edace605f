/*
 * crypto_load: libcrypto, loaded by the first call that needs it.
 *
 * Only the S3 and Azure stores sign requests (SHA-256, HMAC-SHA256, base64).
 * libcrypto.so.3 is linked BIND_NOW with some 4,000 symbol relocations:
 * mapped at every start, it was 2.8 M of the 3.3 M instructions a start of
 * pipe-state or pipe-commit spent before main(), in each of the five starts
 * of a small local run (issue #14).  The programs are linked without
 * -lcrypto; the functions below are the libcrypto entry points this project
 * calls, by the names and prototypes of the OpenSSL headers (the compiler
 * checks them), each passing its call on to libcrypto's own, found with
 * dlsym(3) on the library's handle (so that a process that also maps
 * libcrypto for another reason, libpq's TLS, still reaches the real one).
 * When libcrypto cannot be loaded, that is said once, and the calls fail
 * as they do in libcrypto: EVP_sha256() and HMAC() return NULL,
 * EVP_Digest() 0, EVP_DecodeBlock() -1, EVP_EncodeBlock() 0 (an empty
 * string).  OPENSSL_cleanse(), the wipe of a secret, is explicit_bzero(3):
 * it needs no library, and wipes even when libcrypto is missing.
 */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <pthread.h>
#include <string.h>

#include "dl_load.h"
#include "err.h"

#define CRYPTO_SONAME "libcrypto.so.3"

static struct {
	const EVP_MD *(*sha256)(void);
	int (*digest)(const void *, size_t, unsigned char *, unsigned int *, const EVP_MD *, ENGINE *);
	unsigned char *(*hmac)(const EVP_MD *, const void *, int, const unsigned char *, size_t,
			       unsigned char *, unsigned int *);
	int (*encode_block)(unsigned char *, const unsigned char *, int);
	int (*decode_block)(unsigned char *, const unsigned char *, int);
} fn;
static int usable;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	const struct dl_sym syms[] = {
		DL_SYM(fn.sha256, "EVP_sha256"), DL_SYM(fn.digest, "EVP_Digest"), DL_SYM(fn.hmac, "HMAC"),
		DL_SYM(fn.encode_block, "EVP_EncodeBlock"), DL_SYM(fn.decode_block, "EVP_DecodeBlock"),
	};

	usable = dl_load(CRYPTO_SONAME,
			 "libcrypto (needed to sign requests to s3://, gs:// and az:// buckets)", syms,
			 sizeof(syms) / sizeof(syms[0])) == 0;
}

static int ready(void)
{
	pthread_once(&once, load);
	return usable;
}

const EVP_MD *EVP_sha256(void)
{
	return ready() ? fn.sha256() : NULL;
}

int EVP_Digest(const void *data, size_t count, unsigned char *md, unsigned int *size,
	       const EVP_MD *type, ENGINE *impl)
{
	return ready() && type != NULL ? fn.digest(data, count, md, size, type, impl) : 0;
}

unsigned char *HMAC(const EVP_MD *evp_md, const void *key, int key_len, const unsigned char *data,
		    size_t data_len, unsigned char *md, unsigned int *md_len)
{
	return ready() && evp_md != NULL ? fn.hmac(evp_md, key, key_len, data, data_len, md, md_len)
					 : NULL;
}

int EVP_EncodeBlock(unsigned char *t, const unsigned char *f, int n)
{
	if (!ready()) {
		t[0] = '\0';
		return 0;
	}
	return fn.encode_block(t, f, n);
}

int EVP_DecodeBlock(unsigned char *t, const unsigned char *f, int n)
{
	return ready() ? fn.decode_block(t, f, n) : -1;
}

void OPENSSL_cleanse(void *ptr, size_t len)
{
	explicit_bzero(ptr, len);
}
