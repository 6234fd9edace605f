/*
 * Unit tests of the Azure store's parts that need no network: the
 * SharedKey string-to-sign (the canonicalized headers and resource of
 * Azure's specification, its examples of canonicalized resources), the
 * HMAC-SHA256 signature (against one computed with openssl(1) from
 * Azurite's published key), base64, connection strings, endpoints and
 * path-style addressing, List Blobs pages and error bodies.
 */
#include "store/azure_impl.h"
#include "err.h"
#include "sb.h"
#include "taptest.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static void test_string_to_sign(void)
{
	struct sb s = SB_INIT;
	const char *get[] = { "x-ms-version: 2021-12-02", "x-ms-date: Tue, 01 Dec 2026 15:00:00 GMT" };
	struct http_param list[] = { { "restype", "container" }, { "comp", "list" } };
	const char *put[] = {
		"x-ms-date:Sun, 11 Oct 2009 21:49:13 GMT", "Content-Length: 11",
		"X-MS-Blob-Type:  BlockBlob ", "If-None-Match: *", "Content-Type: text/plain",
		"x-ms-meta-m1: v1", "x-ms-version: 2009-09-19", "Range: bytes=0-10"
	};
	const char *zero[] = { "Content-Length: 0", "x-ms-version: 2021-12-02" };
	struct http_param many[] = {
		{ "restype", "container" }, { "comp", "list" }, { "include", "uncommittedblobs" },
		{ "include", "metadata" }, { "include", "snapshots" }
	};
	struct http_param block[] = { { "blockid", "ZHNwYmxrLTAwMDAwMDAx" }, { "comp", "block" } };
	struct http_param prefix[] = { { "prefix", "a b/dt=1" }, { "Comp", "list" } };

	az_string_to_sign(&s, "GET", get, 2, "devstoreaccount1", "/devstoreaccount1/lake", list, 2);
	is_str(s.buf, "GET\n\n\n\n\n\n\n\n\n\n\n\n"
	       "x-ms-date:Tue, 01 Dec 2026 15:00:00 GMT\nx-ms-version:2021-12-02\n"
	       "/devstoreaccount1/devstoreaccount1/lake\ncomp:list\nrestype:container",
	       "GET: twelve lines, x-ms-* sorted, the resource with its sorted parameters");

	sb_reset(&s);
	az_string_to_sign(&s, "PUT", put, sizeof(put) / sizeof(put[0]), "myaccount",
			  "/mycontainer/a%20b.txt", NULL, 0);
	is_str(s.buf, "PUT\n\n\n11\n\ntext/plain\n\n\n\n*\n\nbytes=0-10\n"
	       "x-ms-blob-type:BlockBlob\nx-ms-date:Sun, 11 Oct 2009 21:49:13 GMT\n"
	       "x-ms-meta-m1:v1\nx-ms-version:2009-09-19\n"
	       "/myaccount/mycontainer/a%20b.txt",
	       "PUT: the standard headers in their places, names lower-cased, values trimmed");

	sb_reset(&s);
	az_string_to_sign(&s, "PUT", zero, 2, "a", "/c/k", NULL, 0);
	is_str(s.buf, "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-version:2021-12-02\n/a/c/k",
	       "a zero Content-Length is signed as empty (versions since 2015-02-21)");

	/* Azure's example: include=snapshots&include=metadata&include=uncommittedblobs */
	sb_reset(&s);
	az_string_to_sign(&s, "GET", NULL, 0, "myaccount", "/mycontainer", many, 5);
	is_str(strstr(s.buf, "/myaccount"),
	       "/myaccount/mycontainer\ncomp:list\ninclude:metadata,snapshots,uncommittedblobs\n"
	       "restype:container",
	       "one parameter's values sorted and joined with commas");

	sb_reset(&s);
	az_string_to_sign(&s, "PUT", NULL, 0, "acct", "/c/k", block, 2);
	is_str(strstr(s.buf, "/acct"), "/acct/c/k\nblockid:ZHNwYmxrLTAwMDAwMDAx\ncomp:block",
	       "a block id as is");

	sb_reset(&s);
	az_string_to_sign(&s, "GET", NULL, 0, "acct", "/c", prefix, 2);
	is_str(strstr(s.buf, "/acct"), "/acct/c\ncomp:list\nprefix:a b/dt=1",
	       "parameter names lower-cased, values decoded");
	sb_free(&s);
}

static void test_sign(void)
{
	unsigned char *key = NULL;
	size_t len = 0;
	struct sb sig = SB_INIT;
	const char *sts = "GET\n\n\n\n\n\n\n\n\n\n\n\n"
			  "x-ms-date:Tue, 01 Dec 2026 15:00:00 GMT\nx-ms-version:2021-12-02\n"
			  "/devstoreaccount1/devstoreaccount1/lake\ncomp:list\nrestype:container";

	ok(az_base64_decode(DEV_KEY, &key, &len) == 0 && len == 64, "the dev key decodes to 64 bytes");
	az_sign(&sig, key, len, sts, strlen(sts));
	/* printf ... | openssl dgst -sha256 -mac HMAC -macopt hexkey:... -binary | base64 */
	is_str(sig.buf, "nykU7wTlq8FUKiELYkh8cEhrJ3IYbSHza0QGy5uZ+zE=", "HMAC-SHA256, base64");
	free(key);
	sb_free(&sig);

	ok(az_base64_decode("bm90", &key, &len) == 0 && len == 3 && memcmp(key, "not", 3) == 0,
	   "base64 without padding");
	free(key);
	ok(az_base64_decode("bm8=", &key, &len) == 0 && len == 2 && memcmp(key, "no", 2) == 0,
	   "base64 with one '='");
	free(key);
	ok(az_base64_decode("not base64!", &key, &len) < 0 && key == NULL, "not base64: refused");
	ok(az_base64_decode("abc", &key, &len) < 0, "a length not a multiple of 4: refused");
	ok(az_base64_decode("a=bc", &key, &len) < 0, "'=' inside: refused");
	ok(az_base64_decode("", &key, &len) < 0, "empty: refused");
}

static void test_conn(void)
{
	struct az_creds cr;
	struct sb why = SB_INIT;

	memset(&cr, 0, sizeof(cr));
	ok(az_conn_parse(&cr, "DefaultEndpointsProtocol=https;AccountName=lake1;AccountKey=" DEV_KEY
			 ";EndpointSuffix=core.chinacloudapi.cn;QueueEndpoint=https://q/", &why) == 0,
	   "account, key, protocol and suffix");
	is_str(cr.account, "lake1", "AccountName");
	ok(cr.key && cr.key_len == 64, "AccountKey decoded");
	is_str(cr.endpoint, "https://lake1.blob.core.chinacloudapi.cn", "the endpoint from the suffix");
	az_creds_free(&cr);

	ok(az_conn_parse(&cr, "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
			 "SharedAccessSignature=sv=2021&sig=abc%2B;", &why) == 0, "a SAS and an endpoint");
	is_str(cr.sas, "sv=2021&sig=abc%2B", "the SAS as given ('=' inside values kept)");
	is_str(cr.endpoint, "http://127.0.0.1:10000/devstoreaccount1", "BlobEndpoint");
	ok(cr.account == NULL && cr.key == NULL, "no account, no key");
	az_creds_free(&cr);

	ok(az_conn_parse(&cr, "AccountName=a;AccountKey=secret!!", &why) < 0, "a bad key: refused");
	is_str(why.buf, "its AccountKey is not base64", "the reason, without the key");
	az_creds_free(&cr);
	sb_reset(&why);
	ok(az_conn_parse(&cr, "AccountName=a;BlobEndpoint=http://h/a", &why) < 0, "no key, no SAS: refused");
	is_str(why.buf, "it gives neither an AccountKey nor a SharedAccessSignature", "its reason");
	az_creds_free(&cr);
	sb_reset(&why);
	ok(az_conn_parse(&cr, "AccountName=a;SharedAccessSignature=x;oops", &why) < 0, "a part without '='");
	ok(strstr(why.buf, "oops") == NULL, "the part is not shown (it may be a secret)");
	az_creds_free(&cr);
	sb_reset(&why);
	ok(az_conn_parse(&cr, "UseDevelopmentStorage=true", &why) == 0, "UseDevelopmentStorage=true");
	is_str(cr.account, "devstoreaccount1", "... the emulator's account");
	ok(cr.key && cr.key_len == 64, "... and its key");
	is_str(cr.endpoint, "http://127.0.0.1:10000/devstoreaccount1", "... at its blob endpoint");
	az_creds_free(&cr);
	ok(az_conn_parse(&cr, "UseDevelopmentStorage=true;BlobEndpoint=http://127.0.0.1:10099/devstoreaccount1",
			 &why) == 0 && strcmp(cr.endpoint, "http://127.0.0.1:10099/devstoreaccount1") == 0,
	   "UseDevelopmentStorage with a BlobEndpoint: that one");
	az_creds_free(&cr);
	sb_reset(&why);
	ok(az_conn_parse(&cr, "UseDevelopmentStorage=yes", &why) < 0, "UseDevelopmentStorage=yes: refused");
	is_str(why.buf, "UseDevelopmentStorage must be true or false, not 'yes'", "its reason");
	az_creds_free(&cr);
	sb_free(&why);
}

static void target(const char *url, const char *endpoint, const char *account,
		   const char *origin, const char *base, const char *prefix, const char *acct_out,
		   const char *what)
{
	struct az_target t;
	struct sb why = SB_INIT;
	char *acct = account ? xstrdup(account) : NULL;
	int r = az_target_init(&t, url, endpoint, &acct, &why);

	if (!ok(r == 0, "%s: accepted", what)) {
		printf("#   %s\n", why.buf ? why.buf : "");
	} else {
		is_str(t.origin, origin, "%s: origin", what);
		is_str(t.base, base, "%s: base", what);
		is_str(t.prefix, prefix, "%s: prefix", what);
		is_str(acct, acct_out, "%s: account", what);
	}
	az_target_free(&t);
	free(acct);
	sb_free(&why);
}

static void refused(const char *url, const char *endpoint, const char *account,
		    const char *reason, const char *what)
{
	struct az_target t;
	struct sb why = SB_INIT;
	char *acct = account ? xstrdup(account) : NULL;

	ok(az_target_init(&t, url, endpoint, &acct, &why) < 0, "%s: refused", what);
	is_str(why.buf, reason, "%s: reason", what);
	free(acct);
	sb_free(&why);
}

static void test_target(void)
{
	target("az://lake", NULL, "acct1", "https://acct1.blob.core.windows.net", "", "", "acct1",
	       "Azure itself");
	target("az://lake/some/prefix/", NULL, "acct1", "https://acct1.blob.core.windows.net", "",
	       "some/prefix/", "acct1", "a prefix");
	target("az://lake", "http://127.0.0.1:10000/devstoreaccount1", NULL, "http://127.0.0.1:10000",
	       "/devstoreaccount1", "", "devstoreaccount1", "Azurite: the account from the path");
	target("az://lake", "http://127.0.0.1:10000/", "devstoreaccount1", "http://127.0.0.1:10000",
	       "/devstoreaccount1", "", "devstoreaccount1", "Azurite: the account into the path");
	target("az://lake", "http://azurite:10000", "devstoreaccount1", "http://azurite:10000",
	       "/devstoreaccount1", "", "devstoreaccount1", "a compose service name is path-style");
	target("az://lake", "HTTPS://lake1.blob.core.usgovcloudapi.net/", NULL,
	       "https://lake1.blob.core.usgovcloudapi.net", "", "", "lake1",
	       "a sovereign cloud: the account from the host");
	target("az://$root", "https://x.blob.core.windows.net", "x", "https://x.blob.core.windows.net",
	       "", "", "x", "$root");

	refused("az://Lake", NULL, "a", "'Lake' is not a container name (3 to 63 lower-case letters, "
		"digits and single hyphens, starting and ending with a letter or digit)", "upper case");
	refused("az://a--b", NULL, "a", "'a--b' is not a container name (3 to 63 lower-case letters, "
		"digits and single hyphens, starting and ending with a letter or digit)", "double hyphen");
	refused("az://lake", NULL, NULL, "no storage account: set AZURE_STORAGE_ACCOUNT, "
		"destination.account_name or AZURE_STORAGE_CONNECTION_STRING", "no account");
	refused("az://lake", "http://127.0.0.1:10000", NULL, "no storage account for the endpoint "
		"'http://127.0.0.1:10000': set AZURE_STORAGE_ACCOUNT or destination.account_name, or "
		"give the endpoint as http://host:port/ACCOUNT", "Azurite without an account");
	refused("az://lake/a/../b", NULL, "a", "the prefix 'a/../b' has an empty, '.' or '..' "
		"component or a control character", "a prefix with ..");
	refused("az://lake", "ftp://h", "a", "the endpoint 'ftp://h' is not an http:// or https:// url",
		"an ftp endpoint");
	refused("az://lake", "https://u:p@h.blob.core.windows.net", "a", "the endpoint "
		"'https://u:p@h.blob.core.windows.net' names no host (or holds user information)",
		"user information in the endpoint");
}

static void test_xml(void)
{
	static const char page[] =
		"<?xml version=\"1.0\" encoding=\"utf-8\"?>"
		"<EnumerationResults ServiceEndpoint=\"http://x/\" ContainerName=\"c\">"
		"<Prefix>p/</Prefix><MaxResults>2</MaxResults><Blobs>"
		"<Blob><Name>p/a &amp; b</Name><Properties><Etag>0x1</Etag></Properties></Blob>"
		"<Blob><Name Encoded=\"true\">p%2Fbad%00</Name><Properties/></Blob>"
		"<Blob><Name>p/dt=2026-01-01/x.jsonl.zst</Name><Properties/></Blob>"
		"</Blobs><NextMarker>2!72!MDAwMDA</NextMarker></EnumerationResults>";
	static const char last[] =
		"<?xml version=\"1.0\"?><EnumerationResults><Blobs /><NextMarker /></EnumerationResults>";
	static const char err[] =
		"<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>BlobNotFound</Code>"
		"<Message>The specified blob does not exist.\nRequestId:1\nTime:2026</Message></Error>";
	struct sb next = SB_INIT, code = SB_INIT, msg = SB_INIT;
	char **keys = NULL;
	size_t n = 0;

	ok(az_xml_list(page, sizeof(page) - 1, &keys, &n, &next) == 0, "a page");
	is_int(n, 2, "two names (the encoded one passed over)");
	if (n == 2) {
		is_str(keys[0], "p/a & b", "entities decoded");
		is_str(keys[1], "p/dt=2026-01-01/x.jsonl.zst", "the second name");
	}
	is_str(next.buf, "2!72!MDAwMDA", "the marker");
	util_strv_free(keys);
	ok(az_xml_list(last, sizeof(last) - 1, &keys, &n, &next) == 0 && n == 0, "an empty last page");
	ok(next.len == 0, "no marker on the last page");
	util_strv_free(keys);
	ok(az_xml_list("<Error/>", 8, &keys, &n, &next) < 0, "not a page: refused");
	{
		char **vers = NULL;

		ok(az_xml_list_versions(page, sizeof(page) - 1, &keys, &vers, &n, &next) == 0 && n == 2,
		   "a page with versions");
		if (n == 2) {
			is_str(vers[0], "0x1", "a blob's Etag");
			is_str(vers[1], "", "no Etag: \"\" (and the encoded blob's passed over with its name)");
			ok(vers[2] == NULL, "versions NULL-terminated");
		}
		util_strv_free(keys);
		util_strv_free(vers);
		ok(az_xml_list_versions(last, sizeof(last) - 1, &keys, &vers, &n, &next) == 0 && n == 0 &&
		   vers != NULL && vers[0] == NULL, "an empty last page: no versions");
		util_strv_free(keys);
		util_strv_free(vers);
	}

	az_xml_error(err, sizeof(err) - 1, &code, &msg);
	is_str(code.buf, "BlobNotFound", "the error's code");
	is_str(msg.buf, "The specified blob does not exist.", "its message's first line");
	sb_free(&next);
	sb_free(&code);
	sb_free(&msg);
}

int main(void)
{
	err_init("test");
	test_string_to_sign();
	test_sign();
	test_conn();
	test_target();
	test_xml();
	return tap_done();
}
