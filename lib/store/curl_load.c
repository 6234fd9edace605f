/*
 * curl_load: libcurl, loaded by the first call that needs it.
 *
 * The programs are linked without -lcurl: libcurl.so.4 and the thirty-odd
 * libraries it brings (GnuTLS, nettle, Kerberos, LDAP, SASL, ...) are mapped
 * only by a process that reaches an s3:// or gs:// bucket.  Mapping them at
 * every start cost a few milliseconds of symbol lookups in each pipe-*
 * program, a good part of a small local run (issue #14).  The functions
 * below are the libcurl entry points this project calls, by the names and
 * prototypes of <curl/curl.h> (the compiler checks them), each passing its
 * call on to libcurl's own, found with dlsym(3).  When libcurl cannot be
 * loaded, that is said once, and the calls fail as libcurl's do when it
 * cannot start: curl_global_init() returns CURLE_FAILED_INIT,
 * curl_easy_init() and curl_slist_append() NULL.
 */
#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include <pthread.h>
#include <stdarg.h>
#include <string.h>

#include "dl_load.h"
#include "err.h"

#define CURL_SONAME "libcurl.so.4"

static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_reset)(CURL *);
	void (*easy_cleanup)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
} fn;
static int usable;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
	const struct dl_sym syms[] = {
		DL_SYM(fn.global_init, "curl_global_init"), DL_SYM(fn.easy_init, "curl_easy_init"),
		DL_SYM(fn.easy_setopt, "curl_easy_setopt"), DL_SYM(fn.easy_perform, "curl_easy_perform"),
		DL_SYM(fn.easy_getinfo, "curl_easy_getinfo"), DL_SYM(fn.easy_reset, "curl_easy_reset"),
		DL_SYM(fn.easy_cleanup, "curl_easy_cleanup"), DL_SYM(fn.easy_strerror, "curl_easy_strerror"),
		DL_SYM(fn.slist_append, "curl_slist_append"), DL_SYM(fn.slist_free_all, "curl_slist_free_all"),
	};

	usable = dl_load(CURL_SONAME, "libcurl (needed for s3:// and gs:// buckets)", syms,
			 sizeof(syms) / sizeof(syms[0])) == 0;
}

static int ready(void)
{
	pthread_once(&once, load);
	return usable;
}

CURLcode curl_global_init(long flags)
{
	return ready() ? fn.global_init(flags) : CURLE_FAILED_INIT;
}

CURL *curl_easy_init(void)
{
	return ready() ? fn.easy_init() : NULL;
}

/*
 * The argument's type comes with the option's number, as in libcurl
 * (CURLOPTTYPE_*): a long, an object pointer, a function pointer, a
 * curl_off_t, or a struct curl_blob pointer.
 */
CURLcode curl_easy_setopt(CURL *h, CURLoption option, ...)
{
	CURLcode rc;
	va_list ap;

	if (!ready())
		return CURLE_FAILED_INIT;
	va_start(ap, option);
	if (option < CURLOPTTYPE_OBJECTPOINT) {
		rc = fn.easy_setopt(h, option, va_arg(ap, long));
	} else if (option < CURLOPTTYPE_FUNCTIONPOINT) {
		rc = fn.easy_setopt(h, option, va_arg(ap, void *));
	} else if (option < CURLOPTTYPE_OFF_T) {
		rc = fn.easy_setopt(h, option, va_arg(ap, void (*)(void)));
	} else if (option < CURLOPTTYPE_BLOB) {
		rc = fn.easy_setopt(h, option, va_arg(ap, curl_off_t));
	} else {
		rc = fn.easy_setopt(h, option, va_arg(ap, void *));
	}
	va_end(ap);
	return rc;
}

CURLcode curl_easy_perform(CURL *h)
{
	return ready() ? fn.easy_perform(h) : CURLE_FAILED_INIT;
}

/* Every CURLINFO_* takes a pointer to where the answer goes. */
CURLcode curl_easy_getinfo(CURL *h, CURLINFO info, ...)
{
	CURLcode rc;
	va_list ap;

	if (!ready())
		return CURLE_FAILED_INIT;
	va_start(ap, info);
	rc = fn.easy_getinfo(h, info, va_arg(ap, void *));
	va_end(ap);
	return rc;
}

void curl_easy_reset(CURL *h)
{
	if (ready())
		fn.easy_reset(h);
}

void curl_easy_cleanup(CURL *h)
{
	if (ready())
		fn.easy_cleanup(h);
}

const char *curl_easy_strerror(CURLcode code)
{
	return ready() ? fn.easy_strerror(code) : "libcurl could not be loaded";
}

struct curl_slist *curl_slist_append(struct curl_slist *list, const char *s)
{
	return ready() ? fn.slist_append(list, s) : NULL;
}

void curl_slist_free_all(struct curl_slist *list)
{
	if (ready())
		fn.slist_free_all(list);
}
