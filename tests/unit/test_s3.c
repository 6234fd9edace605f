/*
 * Unit tests of the S3 store: encoding, queries, url mapping, XML, the
 * profile files, and the requests themselves, caught by a scripted HTTP
 * server on 127.0.0.1.  Signatures are checked against a SigV4 signer
 * written here from the specification (HMAC from OpenSSL), which is itself
 * checked first against AWS's published examples.
 */
#include "bucket.h"
#include "err.h"
#include "store/http_text.h"
#include "store/s3.h"
#include "sb.h"
#include "taptest.h"
#include "util.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/hmac.h>
#include <openssl/sha.h>

static char tmpdir[] = "/tmp/test_s3.XXXXXX";

/* ---------- stderr capture ---------- */

static int saved_stderr = -1;
static char errfile[64];

static void capture_begin(void)
{
	int fd;

	snprintf(errfile, sizeof(errfile), "%s/stderr", tmpdir);
	fd = open(errfile, O_CREAT | O_TRUNC | O_WRONLY, 0644);
	if (fd < 0) {
		perror("capture");
		exit(2);
	}
	saved_stderr = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* What went to stderr, less its final newline (static buffer). */
static const char *capture_end(void)
{
	static char buf[8192];
	ssize_t n;
	int fd;

	dup2(saved_stderr, 2);
	close(saved_stderr);
	fd = open(errfile, O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n < 0 ? 0 : n] = '\0';
	if (fd >= 0)
		close(fd);
	unlink(errfile);
	return buf;
}

/* ---------- a SigV4 signer from the specification ---------- */

static void hex(const unsigned char *md, size_t n, char *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
	out[2 * n] = '\0';
}

static void sha256hex(const void *data, size_t len, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256(data, len, md);
	hex(md, sizeof(md), out);
}

static void hmac(const void *key, size_t klen, const char *data, unsigned char out[32])
{
	unsigned int n = 32;

	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)data, strlen(data), out, &n);
}

/*
 * The signature of a canonical request built from its parts.  headers are
 * "name:value" lines already lower-cased and trimmed, in sorted order;
 * creq_hash (may be NULL) receives the canonical request's hash.
 */
static void sigv4(const char *method, const char *uri, const char *query,
		  const char *const *headers, size_t nh, const char *payload_hash,
		  const char *amzdate, const char *region, const char *service,
		  const char *secret, char sig[65], char creq_hash[65])
{
	struct sb creq = SB_INIT, sts = SB_INIT, signed_h = SB_INIT;
	char h[65], date[9], *k;
	unsigned char k1[32], k2[32];
	size_t i;

	for (i = 0; i < nh; i++) {
		size_t n = strcspn(headers[i], ":");

		if (i)
			sb_addc(&signed_h, ';');
		sb_add(&signed_h, headers[i], n);
	}
	sb_addf(&creq, "%s\n%s\n%s\n", method, uri, query);
	for (i = 0; i < nh; i++)
		sb_addf(&creq, "%s\n", headers[i]);
	sb_addf(&creq, "\n%s\n%s", signed_h.buf, payload_hash);
	sha256hex(creq.buf, creq.len, h);
	if (creq_hash)
		memcpy(creq_hash, h, 65);
	memcpy(date, amzdate, 8);
	date[8] = '\0';
	sb_addf(&sts, "AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", amzdate, date,
		region, service, h);
	k = xasprintf("AWS4%s", secret);
	hmac(k, strlen(k), date, k1);
	hmac(k1, 32, region, k2);
	hmac(k2, 32, service, k1);
	hmac(k1, 32, "aws4_request", k2);
	hmac(k2, 32, sts.buf, k1);
	hex(k1, 32, sig);
	free(k);
	sb_free(&creq);
	sb_free(&sts);
	sb_free(&signed_h);
}

/* AWS's published examples, run through the signer above. */
static void test_published_vectors(void)
{
	const char *s3secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	char sig[65], ch[65], empty[65];

	sha256hex("", 0, empty);
	is_str(empty, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
	       "sha256 of nothing");
	{
		/* the SigV4 test suite's get-vanilla */
		const char *hd[] = { "host:example.amazonaws.com", "x-amz-date:20150830T123600Z" };

		sigv4("GET", "/", "", hd, 2, empty, "20150830T123600Z", "us-east-1", "service",
		      "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", sig, NULL);
		is_str(sig, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
		       "reference signer: SigV4 test suite get-vanilla");
	}
	{
		/* S3 docs: GetObject of examplebucket/test.txt with a Range */
		const char *hd[] = {
			"host:examplebucket.s3.amazonaws.com", "range:bytes=0-9",
			"x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			"x-amz-date:20130524T000000Z",
		};

		sigv4("GET", "/test.txt", "", hd, 4, empty, "20130524T000000Z", "us-east-1", "s3",
		      s3secret, sig, ch);
		is_str(ch, "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
		       "reference signer: S3 GetObject example, canonical request hash");
		is_str(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
		       "reference signer: S3 GetObject example, signature");
	}
	{
		/* S3 docs: PutObject of "test$file.text" */
		const char *body = "Welcome to Amazon S3.";
		char ph[65];
		const char *hd[] = {
			"date:Fri, 24 May 2013 00:00:00 GMT", "host:examplebucket.s3.amazonaws.com",
			"x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
			"x-amz-date:20130524T000000Z", "x-amz-storage-class:REDUCED_REDUNDANCY",
		};
		struct sb uri = SB_INIT;

		sha256hex(body, strlen(body), ph);
		is_str(ph, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
		       "S3 PutObject example: payload hash");
		sb_addc(&uri, '/');
		http_uri_encode(&uri, "test$file.text", 14, 1);
		is_str(uri.buf, "/test%24file.text", "S3 PutObject example: key encoded by http_uri_encode");
		sigv4("PUT", uri.buf, "", hd, 5, ph, "20130524T000000Z", "us-east-1", "s3",
		      s3secret, sig, NULL);
		is_str(sig, "98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd",
		       "reference signer: S3 PutObject example");
		sb_free(&uri);
	}
	{
		/* S3 docs: ListObjects with max-keys=2 and prefix=J */
		const struct http_param q[] = { { "prefix", "J" }, { "max-keys", "2" } };
		struct sb query = SB_INIT;
		const char *hd[] = {
			"host:examplebucket.s3.amazonaws.com",
			"x-amz-content-sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
			"x-amz-date:20130524T000000Z",
		};

		s3_query(&query, q, 2);
		is_str(query.buf, "max-keys=2&prefix=J", "S3 list example: query sorted by s3_query");
		sigv4("GET", "/", query.buf, hd, 3, empty, "20130524T000000Z", "us-east-1", "s3",
		      s3secret, sig, NULL);
		is_str(sig, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59db6670ed5711ef69dc6f7",
		       "reference signer: S3 ListObjects example");
		sb_free(&query);
	}
}

/* ---------- text ---------- */

static void test_encoding(void)
{
	struct sb o = SB_INIT;

	http_uri_encode(&o, "raw/pg/orders/dt=2026-01-01/x y~ü.jsonl", 40, 1);
	is_str(o.buf, "raw/pg/orders/dt%3D2026-01-01/x%20y~%C3%BC.jsonl", "key: = space unicode ~, '/' kept");
	sb_reset(&o);
	http_uri_encode(&o, "a/b=c d+e*f'g(h)!", 17, 0);
	is_str(o.buf, "a%2Fb%3Dc%20d%2Be%2Af%27g%28h%29%21", "query value: '/' and sub-delims encoded");
	sb_reset(&o);
	http_uri_encode(&o, "AZaz09-_.~", 10, 0);
	is_str(o.buf, "AZaz09-_.~", "unreserved stay");
	sb_reset(&o);
	http_uri_encode(&o, "", 0, 1);
	ok(o.buf && o.buf[0] == '\0', "empty input gives an empty string");
	sb_free(&o);

	http_uri_encode(&o, "\xf0\x9f\x98\x80%", 5, 1);
	is_str(o.buf, "%F0%9F%98%80%25", "4-byte UTF-8 and '%%'");
	sb_reset(&o);

	is_int(http_url_decode(&o, "a+b%2Bc%20d%C3%BC", 17, 1), 0, "url decode");
	is_str(o.buf, "a b+c dü", "'+' is a space, %%2B a plus");
	sb_reset(&o);
	is_int(http_url_decode(&o, "a+b", 3, 0), 0, "url decode without plus");
	is_str(o.buf, "a+b", "'+' kept");
	sb_reset(&o);
	is_int(http_url_decode(&o, "a%2", 3, 1), -1, "truncated escape refused");
	sb_reset(&o);
	is_int(http_url_decode(&o, "a%zz", 4, 1), -1, "bad escape refused");
	sb_reset(&o);
	is_int(http_url_decode(&o, "a%00b", 5, 1), -1, "%%00 refused");
	sb_free(&o);
}

static void test_query(void)
{
	struct sb o = SB_INIT;
	const struct http_param list[] = {
		{ "prefix", "raw/dt=1/a b" }, { "list-type", "2" },
		{ "continuation-token", "1/x+y=" }, { "encoding-type", "url" },
	};
	const struct http_param up[] = { { "uploads", NULL } };
	const struct http_param part[] = { { "uploadId", "Zx/9+a=" }, { "partNumber", "10" } };
	const struct http_param same[] = { { "a", "2" }, { "a", "10" }, { "A", "z" }, { "a b", "" } };

	s3_query(&o, list, 4);
	is_str(o.buf, "continuation-token=1%2Fx%2By%3D&encoding-type=url&list-type=2&prefix=raw%2Fdt%3D1%2Fa%20b",
	       "ListObjectsV2 query sorted and encoded");
	sb_reset(&o);
	s3_query(&o, up, 1);
	is_str(o.buf, "uploads=", "a parameter without value keeps its '='");
	sb_reset(&o);
	s3_query(&o, part, 2);
	is_str(o.buf, "partNumber=10&uploadId=Zx%2F9%2Ba%3D", "UploadPart query");
	sb_reset(&o);
	s3_query(&o, same, 4);
	is_str(o.buf, "A=z&a=10&a=2&a%20b=", "bytewise order by encoded name, then value");
	sb_reset(&o);
	s3_query(&o, NULL, 0);
	ok(o.len == 0, "no parameters, no query");
	sb_free(&o);
}

static void target_case(const char *url, const char *endpoint, const char *region,
			const char *addressing, const char *key, const char *want_url,
			const char *want_prefix, const char *want_region)
{
	struct s3_target t;
	struct sb why = SB_INIT;
	char *u;

	if (!ok(s3_target_init(&t, url, endpoint, region, addressing, &why) == 0,
		"target %s endpoint %s addressing %s", url, endpoint ? endpoint : "(none)",
		addressing ? addressing : "(auto)")) {
		printf("#   %s\n", why.buf ? why.buf : "");
		sb_free(&why);
		return;
	}
	u = s3_target_url(&t, key, NULL);
	is_str(u, want_url, "  url of '%s'", key ? key : "(bucket)");
	is_str(t.prefix, want_prefix, "  prefix");
	is_str(t.region, want_region, "  region");
	free(u);
	s3_target_free(&t);
}

static void target_bad(const char *url, const char *endpoint, const char *addressing,
		       const char *want)
{
	struct s3_target t;
	struct sb why = SB_INIT;

	ok(s3_target_init(&t, url, endpoint, NULL, addressing, &why) == -1 && why.buf &&
	   strstr(why.buf, want), "refused: %s %s (%s)", url, endpoint ? endpoint : "", why.buf ? why.buf : "accepted");
	sb_free(&why);
}

static void test_target(void)
{
	struct s3_target t;
	struct sb why = SB_INIT;
	char *u;

	target_case("s3://data", NULL, NULL, NULL, "a/b.txt",
		    "https://data.s3.us-east-1.amazonaws.com/a/b.txt", "", "us-east-1");
	target_case("s3://data/raw/zone/", NULL, "eu-west-3", NULL, "dt=1/x y",
		    "https://data.s3.eu-west-3.amazonaws.com/raw/zone/dt%3D1/x%20y", "raw/zone/", "eu-west-3");
	target_case("s3://data/raw", NULL, NULL, NULL, NULL,
		    "https://data.s3.us-east-1.amazonaws.com/", "raw/", "us-east-1");
	target_case("s3://my.dotted.bucket", NULL, "us-west-2", NULL, "k",
		    "https://s3.us-west-2.amazonaws.com/my.dotted.bucket/k", "", "us-west-2");
	target_case("s3://data", NULL, NULL, "path", "k",
		    "https://s3.us-east-1.amazonaws.com/data/k", "", "us-east-1");
	target_case("s3://data", NULL, "cn-north-1", NULL, "k",
		    "https://data.s3.cn-north-1.amazonaws.com.cn/k", "", "cn-north-1");
	target_case("s3://lake/p", "http://127.0.0.1:9000", NULL, NULL, "a b",
		    "http://127.0.0.1:9000/lake/p/a%20b", "p/", "us-east-1");
	target_case("s3://lake", "http://127.0.0.1:9000/", NULL, NULL, NULL,
		    "http://127.0.0.1:9000/lake", "", "us-east-1");
	target_case("s3://lake", "https://acct.r2.cloudflarestorage.com", "auto", NULL, "k",
		    "https://acct.r2.cloudflarestorage.com/lake/k", "", "auto");
	target_case("s3://lake", "https://minio.local/s3/", NULL, NULL, "k",
		    "https://minio.local/s3/lake/k", "", "us-east-1");
	target_case("s3://lake", "https://minio.local:9000", NULL, "virtual", "k",
		    "https://lake.minio.local:9000/k", "", "us-east-1");
	target_case("gs://lake/raw", NULL, NULL, NULL, "dt=1/k",
		    "https://storage.googleapis.com/lake/raw/dt%3D1/k", "raw/", "auto");
	target_case("gs://lake", NULL, NULL, "virtual", "k",
		    "https://lake.storage.googleapis.com/k", "", "auto");
	target_case("S3://Lake_1", "http://h:1", NULL, NULL, "k", "http://h:1/Lake_1/k", "", "us-east-1");

	ok(s3_target_init(&t, "gs://lake", NULL, NULL, NULL, &why) == 0 && t.gcs && t.path_style,
	   "gs:// is GCS, path-style");
	s3_target_free(&t);
	ok(s3_target_init(&t, "s3://lake/a", "http://127.0.0.1:1", NULL, NULL, &why) == 0 &&
	   !t.gcs && t.path_style && strcmp(t.scheme, "s3") == 0, "custom endpoint: path-style");
	u = s3_target_url(&t, "x", "a=1");
	is_str(u, "http://127.0.0.1:1/lake/a/x?a=1", "url with a query");
	free(u);
	s3_target_free(&t);

	target_bad("s3://", NULL, NULL, "no bucket name");
	target_bad("s3:///x", NULL, NULL, "no bucket name");
	target_bad("s3://a b", NULL, NULL, "bucket name");
	target_bad("s3://b/../x", NULL, NULL, "prefix");
	target_bad("s3://b/a//x", NULL, NULL, "prefix");
	target_bad("s3://b", "ftp://h", NULL, "http:// or https://");
	target_bad("s3://b", "http://", NULL, "host");
	target_bad("s3://b", "http://h?x=1", NULL, "no query");
	target_bad("s3://b", "http://user:pw@h", NULL, "host");
	target_bad("s3://b", "http://h", "sideways", "addressing");
	target_bad("file:///x", NULL, NULL, "s3://");
	ok(s3_target_init(&t, "s3://b", NULL, "us east", NULL, &why) == -1, "bad region refused");
	sb_free(&why);
}

static void test_xml(void)
{
	struct sb code = SB_INIT, msg = SB_INIT, next = SB_INIT, text = SB_INIT;
	char **keys = NULL;
	size_t n = 0, pos = 0;
	int trunc = -1;
	const char *err = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code>"
			  "<Message>Access &amp; &quot;denied&quot; &lt;here&gt; &#233;&#x263A;</Message>"
			  "<RequestId>1</RequestId></Error>";
	const char *page = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			   "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			   "<Name>b</Name><Prefix>raw%2F</Prefix><KeyCount>3</KeyCount>"
			   "<MaxKeys>1000</MaxKeys><EncodingType>url</EncodingType>"
			   "<IsTruncated>true</IsTruncated>"
			   "<Contents><Key>raw/dt%3D1/a+b.jsonl</Key><Size>3</Size></Contents>"
			   "<Contents><Key>raw/%C3%BC%2B%26.txt</Key><Size>3</Size></Contents>"
			   "<Contents>\n  <Key>raw/x&amp;y</Key>\n</Contents>"
			   "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=</NextContinuationToken>"
			   "</ListBucketResult>";
	const char *plain = "<ListBucketResult><IsTruncated>false</IsTruncated>"
			    "<Contents><Key>a+b &amp; c</Key></Contents><KeyCount>1</KeyCount></ListBucketResult>";

	ok(s3_xml_error(err, strlen(err), &code, &msg) == 1, "error body recognised");
	is_str(code.buf, "AccessDenied", "error code");
	is_str(msg.buf, "Access & \"denied\" <here> \xc3\xa9\xe2\x98\xba", "error message, entities decoded");
	ok(s3_xml_error(page, strlen(page), &code, &msg) == 0, "a list page is no error");
	ok(s3_xml_error("", 0, &code, &msg) == 0, "an empty body is no error");
	ok(s3_xml_error("<Error><Code>SlowDown</Code></Error>", 36, &code, &msg) == 1 &&
	   strcmp(code.buf, "SlowDown") == 0 && msg.len == 0, "error without a message");

	is_int(s3_xml_list(page, strlen(page), &keys, &n, &trunc, &next), 0, "list page parsed");
	is_int(n, 3, "three keys");
	if (n == 3) {
		is_str(keys[0], "raw/dt=1/a b.jsonl", "key decoded from encoding-type=url ('+' is space)");
		is_str(keys[1], "raw/\xc3\xbc+&.txt", "unicode, '+' and '&' decoded");
		is_str(keys[2], "raw/x&y", "entity then url decoding");
	}
	is_int(trunc, 1, "IsTruncated");
	is_str(next.buf, "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=", "NextContinuationToken");
	util_strv_free(keys);

	is_int(s3_xml_list(plain, strlen(plain), &keys, &n, &trunc, &next), 0, "page without EncodingType");
	is_int(n, 1, "one key");
	if (n == 1)
		is_str(keys[0], "a+b & c", "keys taken as they are when the store did not encode them");
	is_int(trunc, 0, "not truncated");
	ok(next.len == 0, "no token");
	util_strv_free(keys);

	{
		static const char etags[] =
			"<ListBucketResult><Contents><Key>b</Key><ETag>&quot;9b2cf535f27731c974343645a3985328&quot;</ETag>"
			"</Contents><Contents><Key>a</Key><Size>0</Size></Contents>"
			"<Contents><ETag>\"mp-2\"</ETag><Key>c</Key></Contents></ListBucketResult>";
		char **vers = NULL;

		is_int(s3_xml_list_versions(etags, strlen(etags), &keys, &vers, &n, &trunc, &next), 0,
		       "list page with ETags parsed");
		is_int(n, 3, "three keys, three versions");
		if (n == 3) {
			is_str(vers[0], "\"9b2cf535f27731c974343645a3985328\"", "an ETag, its quotes unescaped");
			is_str(vers[1], "", "no ETag: \"\"");
			is_str(keys[2], "c", "the key after its ETag");
			is_str(vers[2], "\"mp-2\"", "an ETag before its key");
			ok(vers[3] == NULL, "versions NULL-terminated");
		}
		util_strv_free(keys);
		util_strv_free(vers);
		is_int(s3_xml_list_versions("<Error/>", 8, &keys, &vers, &n, &trunc, &next), -1,
		       "not a ListBucketResult (versions)");
		ok(keys == NULL && vers == NULL, "nothing returned on error");
	}
	is_int(s3_xml_list("<Error/>", 8, &keys, &n, &trunc, &next), -1, "not a ListBucketResult");
	is_int(s3_xml_list("<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>%zz</Key></Contents></ListBucketResult>",
			   102, &keys, &n, &trunc, &next), -1, "undecodable key refused");

	pos = 0;
	ok(http_xml_next("<A><KeyCount>2</KeyCount><Key>k</Key></A>", 40, "Key", &pos, &text) &&
	   strcmp(text.buf, "k") == 0, "<KeyCount> is not <Key>");
	pos = 0;
	ok(http_xml_next("<A><UploadId/></A>", 18, "UploadId", &pos, &text) && text.len == 0,
	   "an empty element");
	pos = 0;
	ok(!http_xml_next("<A><Key>unterminated", 20, "Key", &pos, &text), "unterminated element");
	sb_reset(&text);
	http_xml_unescape(&text, "&bogus; &#0; &#xD800; &amp", 26);
	is_str(text.buf, "&bogus; &#0; &#xD800; &amp", "unknown and invalid entities stay");
	sb_reset(&text);
	http_xml_escape(&text, "\"a\"&<'>");
	is_str(text.buf, "&quot;a&quot;&amp;&lt;&apos;&gt;", "escape");

	sb_free(&code);
	sb_free(&msg);
	sb_free(&next);
	sb_free(&text);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL) {
		perror(path);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

static void test_profiles(void)
{
	char *cred = xasprintf("%s/credentials", tmpdir);
	char *conf = xasprintf("%s/config", tmpdir);
	char *v = NULL;
	struct s3_settings st;
	struct s3_creds c;

	write_file(cred, "# comment\n[default]\naws_access_key_id = AKDEFAULT\n"
			 "aws_secret_access_key=sdefault\n\n[work]\n  ; indented comment\n"
			 "aws_access_key_id\t=  AKWORK  \naws_secret_access_key = s/work+=\n"
			 "aws_session_token = tok\n[half]\naws_access_key_id = AKHALF\n");
	write_file(conf, "[default]\nregion = eu-west-1\n[profile work]\nregion = sa-east-1\n"
			 "s3 =\n  endpoint_url = http://127.0.0.1:9000\n  addressing_style = path\n"
			 "output = json\n[profile cfgkeys]\naws_access_key_id = AKCFG\n"
			 "aws_secret_access_key = scfg\n[profile sso]\nsso_session = corp\n"
			 "[profile top]\nendpoint_url = https://top.example\n");

	is_int(s3_ini_get(cred, "work", "aws_access_key_id", &v), 1, "ini: key found");
	is_str(v, "AKWORK", "ini: blanks trimmed");
	free(v);
	is_int(s3_ini_get(cred, "work", "aws_secret_access_key", &v), 1, "ini: secret");
	is_str(v, "s/work+=", "ini: value with '=' in it");
	free(v);
	is_int(s3_ini_get(cred, "nope", "aws_access_key_id", &v), 0, "ini: no such section");
	ok(v == NULL, "ini: nothing returned");
	is_int(s3_ini_get(conf, "profile work", "s3.endpoint_url", &v), 1, "ini: nested key");
	is_str(v, "http://127.0.0.1:9000", "ini: nested value");
	free(v);
	is_int(s3_ini_get(conf, "profile work", "endpoint_url", &v), 0,
	       "ini: a nested key is not a top-level one");
	is_int(s3_ini_get(conf, "profile work", "output", &v), 1, "ini: a top-level key after a nest");
	free(v);
	is_int(s3_ini_get("/nonexistent/x", "default", "region", &v), 0, "ini: a missing file is no error");

	setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
	setenv("AWS_CONFIG_FILE", conf, 1);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_SESSION_TOKEN");
	unsetenv("AWS_REGION");
	unsetenv("AWS_DEFAULT_REGION");
	unsetenv("AWS_ENDPOINT_URL");
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("DATASPOC_PIPE_S3_ADDRESSING");
	unsetenv("AWS_PROFILE");

	ok(s3_settings_load(&st) == 0, "settings: default profile");
	is_str(st.profile, "default", "  profile");
	is_str(st.region, "eu-west-1", "  region from [default]");
	ok(st.endpoint == NULL, "  no endpoint");
	ok(s3_creds_load(&c, &st, 0) == 0, "creds: default profile");
	is_str(c.id, "AKDEFAULT", "  key id");
	is_str(c.secret, "sdefault", "  secret");
	ok(c.token == NULL, "  no token");
	s3_creds_free(&c);
	s3_settings_free(&st);

	setenv("AWS_PROFILE", "work", 1);
	ok(s3_settings_load(&st) == 0, "settings: profile work");
	is_str(st.region, "sa-east-1", "  region from [profile work]");
	is_str(st.endpoint, "http://127.0.0.1:9000", "  endpoint from s3.endpoint_url");
	is_str(st.addressing, "path", "  addressing from s3.addressing_style");
	ok(s3_creds_load(&c, &st, 0) == 0, "creds: profile work");
	is_str(c.id, "AKWORK", "  key id");
	is_str(c.token, "tok", "  session token");
	s3_creds_free(&c);
	setenv("AWS_REGION", "ap-south-1", 1);
	setenv("AWS_ENDPOINT_URL", "http://env:1", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "senv", 1);
	s3_settings_free(&st);
	ok(s3_settings_load(&st) == 0, "settings: environment over profile");
	is_str(st.region, "ap-south-1", "  AWS_REGION wins");
	is_str(st.endpoint, "http://env:1", "  AWS_ENDPOINT_URL wins");
	ok(s3_creds_load(&c, &st, 0) == 0 && strcmp(c.id, "AKENV") == 0 &&
	   strcmp(c.source, "environment") == 0, "creds: the environment comes first");
	s3_creds_free(&c);
	setenv("GOOGLE_HMAC_ACCESS_ID", "GOOG1", 1);
	setenv("GOOGLE_HMAC_SECRET", "gsecret", 1);
	ok(s3_creds_load(&c, &st, 1) == 0 && strcmp(c.id, "GOOG1") == 0, "creds: GCS HMAC keys for gs://");
	s3_creds_free(&c);
	ok(s3_creds_load(&c, &st, 0) == 0 && strcmp(c.id, "AKENV") == 0, "creds: not for s3://");
	s3_creds_free(&c);
	unsetenv("GOOGLE_HMAC_ACCESS_ID");
	unsetenv("GOOGLE_HMAC_SECRET");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	capture_begin();
	ok(s3_creds_load(&c, &st, 0) == -1, "creds: key id without secret refused");
	is_str(capture_end(), "test_s3: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
	       "  message");
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_REGION");
	unsetenv("AWS_ENDPOINT_URL");
	s3_settings_free(&st);

	setenv("AWS_PROFILE", "cfgkeys", 1);
	s3_settings_load(&st);
	ok(s3_creds_load(&c, &st, 0) == 0 && strcmp(c.id, "AKCFG") == 0, "creds: keys in the config file");
	s3_creds_free(&c);
	s3_settings_free(&st);

	setenv("AWS_PROFILE", "top", 1);
	s3_settings_load(&st);
	is_str(st.endpoint, "https://top.example", "settings: a profile's top-level endpoint_url");
	s3_settings_free(&st);

	setenv("AWS_PROFILE", "half", 1);
	s3_settings_load(&st);
	capture_begin();
	ok(s3_creds_load(&c, &st, 0) == -1, "creds: a key id without its secret in a profile");
	ok(strstr(capture_end(), "has aws_access_key_id but no aws_secret_access_key") != NULL, "  message");
	s3_settings_free(&st);

	setenv("AWS_PROFILE", "sso", 1);
	s3_settings_load(&st);
	capture_begin();
	ok(s3_creds_load(&c, &st, 0) == -1, "creds: an SSO profile is refused");
	ok(strstr(capture_end(), "aws configure export-credentials --profile sso") != NULL,
	   "  with a hint");
	s3_settings_free(&st);

	setenv("AWS_PROFILE", "none", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	s3_settings_load(&st);
	capture_begin();
	ok(s3_creds_load(&c, &st, 0) == -1, "creds: none anywhere");
	is_str(capture_end(), "test_s3: no credentials for s3://: set AWS_ACCESS_KEY_ID and "
	       "AWS_SECRET_ACCESS_KEY, or a profile (AWS_PROFILE, now 'none') in ~/.aws/credentials",
	       "  message");
	s3_settings_free(&st);
	unsetenv("AWS_PROFILE");
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	unsetenv("AWS_CONFIG_FILE");

	{
		const char *j = "{\"Code\":\"Success\",\"AccessKeyId\":\"ASIA1\",\"SecretAccessKey\":\"s\","
				"\"Token\":\"t\",\"Expiration\":\"2030-01-02T03:04:05Z\"}";
		const char *j2 = "{\"AccessKeyId\":\"ASIA2\",\"SecretAccessKey\":\"s\","
				 "\"Expiration\":\"2030-01-02T03:04:05.123Z\"}";

		ok(s3_creds_from_json(&c, j, strlen(j)) == 0 && strcmp(c.id, "ASIA1") == 0 &&
		   strcmp(c.token, "t") == 0 && c.expires == 1893553445, "container/IMDS credentials");
		s3_creds_free(&c);
		ok(s3_creds_from_json(&c, j2, strlen(j2)) == 0 && c.token == NULL &&
		   c.expires == 1893553445, "fractions of a second in Expiration");
		s3_creds_free(&c);
		ok(s3_creds_from_json(&c, "{\"AccessKeyId\":\"A\"}", 19) == -1, "no secret: refused");
		ok(s3_creds_from_json(&c, "nope", 4) == -1, "not JSON: refused");
	}
	free(cred);
	free(conf);
}

/* ---------- a scripted HTTP server ---------- */

struct req {
	char method[16];
	char target[4096];
	struct sb head;		/* header lines, "Name: value\r\n" each */
	char *body;
	size_t body_len;
};

struct reply {
	int status;
	char headers[512];
	char *body;
};

/* Replies that are not answers: */
enum {
	CLOSE = -1,		/* read the request, close the connection */
	CUT_HEADERS = -2,	/* "HTTP/1.1 200", half of the headers, close */
	STALL = -3		/* read the request, wait for the client to hang up */
};

#define MAXQ 64
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct req reqs[MAXQ];
static int nreqs;
static struct reply replies[MAXQ];
static int nreplies, next_reply;
static int server_port;

static void expect_reply(int status, const char *headers, const char *body)
{
	struct reply *r;

	pthread_mutex_lock(&mu);
	r = &replies[nreplies++];
	r->status = status;
	snprintf(r->headers, sizeof(r->headers), "%s", headers ? headers : "");
	r->body = xstrdup(body ? body : "");
	pthread_mutex_unlock(&mu);
}

static void reset_server(void)
{
	int i;

	pthread_mutex_lock(&mu);
	for (i = 0; i < nreqs; i++) {
		sb_free(&reqs[i].head);
		free(reqs[i].body);
	}
	for (i = 0; i < nreplies; i++)
		free(replies[i].body);
	memset(reqs, 0, sizeof(reqs));
	memset(replies, 0, sizeof(replies));
	nreqs = nreplies = next_reply = 0;
	pthread_mutex_unlock(&mu);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Value of header name in a head block, or NULL (static buffer). */
static const char *header_of(const struct sb *head, const char *name)
{
	static char val[4096];
	size_t nlen = strlen(name);
	const char *p = head->buf;

	while (p && *p) {
		const char *eol = strstr(p, "\r\n");

		if (eol == NULL)
			break;
		if ((size_t)(eol - p) > nlen && p[nlen] == ':' && strncasecmp(p, name, nlen) == 0) {
			const char *v = p + nlen + 1;
			size_t n;

			while (*v == ' ' || *v == '\t')
				v++;
			n = (size_t)(eol - v);
			while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
				n--;
			if (n >= sizeof(val))
				n = sizeof(val) - 1;
			memcpy(val, v, n);
			val[n] = '\0';
			return val;
		}
		p = eol + 2;
	}
	return NULL;
}

static void serve(int fd)
{
	struct sb in = SB_INIT;
	char buf[65536];

	for (;;) {
		char *end;
		size_t hlen, clen = 0;
		struct req r;
		struct reply rep = { 200, "", NULL };
		struct sb out = SB_INIT;
		const char *v;
		ssize_t n;

		while ((end = in.buf ? strstr(in.buf, "\r\n\r\n") : NULL) == NULL) {
			n = read(fd, buf, sizeof(buf));
			if (n <= 0)
				goto done;
			sb_add(&in, buf, (size_t)n);
		}
		hlen = (size_t)(end - in.buf) + 4;
		memset(&r, 0, sizeof(r));
		sscanf(in.buf, "%15s %4095s", r.method, r.target);
		sb_add(&r.head, strstr(in.buf, "\r\n") + 2, hlen - (size_t)(strstr(in.buf, "\r\n") + 2 - in.buf) - 2);
		v = header_of(&r.head, "Content-Length");
		if (v)
			clen = strtoul(v, NULL, 10);
		v = header_of(&r.head, "Expect");
		if (v && strcasecmp(v, "100-continue") == 0 && in.len - hlen < clen)
			write_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
		while (in.len - hlen < clen) {
			n = read(fd, buf, sizeof(buf));
			if (n <= 0) {
				sb_free(&r.head);
				goto done;
			}
			sb_add(&in, buf, (size_t)n);
		}
		r.body = xmalloc(clen + 1);
		memcpy(r.body, in.buf + hlen, clen);
		r.body[clen] = '\0';
		r.body_len = clen;
		/* keep what follows (a pipelined request) */
		memmove(in.buf, in.buf + hlen + clen, in.len - hlen - clen);
		in.len -= hlen + clen;
		in.buf[in.len] = '\0';

		pthread_mutex_lock(&mu);
		if (nreqs < MAXQ)
			reqs[nreqs++] = r;
		else {
			sb_free(&r.head);
			free(r.body);
		}
		if (next_reply < nreplies)
			rep = replies[next_reply++];
		pthread_mutex_unlock(&mu);
		if (rep.status == CLOSE) {
			/* the work done, the answer lost */
			goto done;
		}
		if (rep.status == CUT_HEADERS) {
			sb_addf(&out, "HTTP/1.1 200 X\r\n%s", rep.headers);
			write_all(fd, out.buf, out.len / 2);
			sb_free(&out);
			goto done;
		}
		if (rep.status == STALL) {
			/* no answer until the client gives up (at most 20 s) */
			struct timeval tv = { 20, 0 };

			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			while (read(fd, buf, sizeof(buf)) > 0)
				;
			goto done;
		}
		if (strstr(rep.headers, "Content-Length:"))
			sb_addf(&out, "HTTP/1.1 %d X\r\n%s\r\n", rep.status, rep.headers);
		else
			sb_addf(&out, "HTTP/1.1 %d X\r\n%sContent-Length: %zu\r\n\r\n", rep.status,
				rep.headers, strcmp(r.method, "HEAD") == 0 && rep.body && *rep.body == 'L' ?
				(size_t)5 : rep.body ? strlen(rep.body) : 0);
		if (strcmp(r.method, "HEAD") != 0 && rep.body)
			sb_adds(&out, rep.body);
		if (write_all(fd, out.buf, out.len) < 0) {
			sb_free(&out);
			goto done;
		}
		sb_free(&out);
	}
done:
	sb_free(&in);
	close(fd);
}

static void *server_main(void *arg)
{
	int lfd = *(int *)arg;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			return NULL;
		}
		serve(fd);
	}
}

static int start_server(void)
{
	static int lfd;
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	pthread_t th;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(lfd, 8) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen) < 0) {
		perror("server");
		return -1;
	}
	server_port = ntohs(a.sin_port);
	if (pthread_create(&th, NULL, server_main, &lfd) != 0)
		return -1;
	pthread_detach(th);
	return 0;
}

/* ---------- checking what curl sent ---------- */

static const char *SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/*
 * Recompute the Authorization header's signature of request r from its
 * method, target and the headers it says it signed; 1 when it matches.
 */
static int signature_ok(const struct req *r, const char *region, char *why, size_t wlen)
{
	char auth[2048], sh[1024], sig[65], got[65], date[9], ph[65], *q, *p;
	const char *v, *amzdate, *names[32], *lines[32];
	char *copies[32];
	size_t n = 0, i;
	int good = 0;
	struct sb path = SB_INIT;

	v = header_of(&r->head, "Authorization");
	if (v == NULL) {
		snprintf(why, wlen, "no Authorization header");
		return 0;
	}
	snprintf(auth, sizeof(auth), "%s", v);
	p = strstr(auth, "SignedHeaders=");
	q = strstr(auth, "Signature=");
	if (strncmp(auth, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/", 40) != 0 || !p || !q ||
	    strlen(q + 10) != 64) {
		snprintf(why, wlen, "malformed Authorization: %.300s", auth);
		return 0;
	}
	snprintf(got, sizeof(got), "%s", q + 10);
	snprintf(sh, sizeof(sh), "%.*s", (int)strcspn(p + 14, ","), p + 14);
	amzdate = header_of(&r->head, "x-amz-date");
	if (amzdate == NULL) {
		snprintf(why, wlen, "no x-amz-date");
		return 0;
	}
	amzdate = xstrdup(amzdate);
	memcpy(date, amzdate, 8);
	date[8] = '\0';
	{
		char scope[256];

		snprintf(scope, sizeof(scope), "Credential=AKIDEXAMPLE/%s/%s/s3/aws4_request,", date, region);
		if (strstr(auth, scope) == NULL) {
			snprintf(why, wlen, "wrong scope in %.300s", auth);
			goto out;
		}
	}
	/* the signed headers, as the server sees them */
	for (p = strtok(sh, ";"); p && n < 32; p = strtok(NULL, ";")) {
		const char *val = header_of(&r->head, p);

		if (val == NULL) {
			snprintf(why, wlen, "signed header '%s' was not sent", p);
			goto out_lines;
		}
		names[n] = p;
		copies[n] = xasprintf("%s:%s", p, val);
		lines[n] = copies[n];
		n++;
	}
	v = header_of(&r->head, "x-amz-content-sha256");
	if (v == NULL) {
		snprintf(why, wlen, "no x-amz-content-sha256");
		goto out_lines;
	}
	sha256hex(r->body, r->body_len, ph);
	if (strcmp(v, ph) != 0) {
		snprintf(why, wlen, "x-amz-content-sha256 %s is not the body's %s", v, ph);
		goto out_lines;
	}
	q = strchr(r->target, '?');
	sb_add(&path, r->target, q ? (size_t)(q - r->target) : strlen(r->target));
	sigv4(r->method, path.buf, q ? q + 1 : "", lines, n, ph, amzdate, region, "s3", SECRET, sig, NULL);
	good = strcmp(sig, got) == 0;
	if (!good)
		snprintf(why, wlen, "signature %s, expected %s", got, sig);
	(void)names;
out_lines:
	for (i = 0; i < n; i++)
		free(copies[i]);
out:
	free((void *)(uintptr_t)amzdate);
	sb_free(&path);
	return good;
}

/* Is name among the signed headers of r? */
static int signed_header(const struct req *r, const char *name)
{
	const char *v = header_of(&r->head, "Authorization");
	char sh[1024], *p;

	if (v == NULL || (p = strstr(v, "SignedHeaders=")) == NULL)
		return 0;
	snprintf(sh, sizeof(sh), ";%.*s;", (int)strcspn(p + 14, ","), p + 14);
	p = xasprintf(";%s;", name);
	v = strstr(sh, p) ? "" : NULL;
	free(p);
	return v != NULL;
}

static void check_req(int i, const char *method, const char *target, const char *what)
{
	char why[512] = "";

	if (!ok(i < nreqs, "%s: request %d was made", what, i + 1))
		return;
	is_str(reqs[i].method, method, "%s: method", what);
	is_str(reqs[i].target, target, "%s: path and query", what);
	if (!ok(signature_ok(&reqs[i], "eu-west-3", why, sizeof(why)), "%s: signature verified", what))
		printf("#   %s\n", why);
}

static const char *NOSUCHKEY = "<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code>"
			       "<Message>The specified key does not exist.</Message></Error>";

static void test_requests(void)
{
	struct bucket *b;
	struct sb out = SB_INIT;
	char ep[64], hash[65], *pname;
	const char *key = "dt=2026-01-01/x y ü~.jsonl";
	const char *enc = "/bkt/base/dt%3D2026-01-01/x%20y%20%C3%BC~.jsonl";
	const char *msg;
	char **keys = NULL;
	size_t n = 0;
	int r;

	if (start_server() < 0) {
		ok(0, "scripted server started");
		return;
	}
	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", server_port);
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", SECRET, 1);
	setenv("AWS_SESSION_TOKEN", "session/token+1=", 1);
	setenv("AWS_REGION", "eu-west-3", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("DATASPOC_PIPE_S3_RETRIES", "2", 1);
	setenv("DATASPOC_PIPE_S3_PART_SIZE", "5MiB", 1);
	setenv("DATASPOC_PIPE_S3_SETTLE_MS", "1", 1);
	unsetenv("AWS_PROFILE");

	b = bucket_open_opts("s3://bkt/base/", ep);
	if (!ok(b != NULL, "open s3://bkt/base/ at %s", ep))
		return;
	is_str(bucket_url(b), "s3://bkt/base/", "url kept as given");

	/* PutObject */
	reset_server();
	expect_reply(200, "ETag: \"abc\"\r\n", "");
	is_int(bucket_put(b, key, "hello\n", 6), 0, "put a key holding '=', spaces, unicode, '~'");
	check_req(0, "PUT", enc, "PutObject");
	if (nreqs > 0) {
		sha256hex("hello\n", 6, hash);
		is_str(header_of(&reqs[0].head, "x-amz-content-sha256"), hash,
		       "PutObject: x-amz-content-sha256 is the body's SHA-256");
		is_str(header_of(&reqs[0].head, "x-amz-security-token"), "session/token+1=",
		       "PutObject: session token sent");
		ok(signed_header(&reqs[0], "x-amz-security-token") && signed_header(&reqs[0], "host") &&
		   signed_header(&reqs[0], "x-amz-content-sha256") && signed_header(&reqs[0], "x-amz-date"),
		   "PutObject: token, host, content hash and date are signed");
		is_int(reqs[0].body_len, 6, "PutObject: body sent");
	}

	/* GetObject */
	reset_server();
	expect_reply(200, "", "data\n");
	is_int(bucket_get(b, key, &out), 0, "get");
	is_str(out.buf, "data\n", "get: body");
	check_req(0, "GET", enc, "GetObject");
	if (nreqs > 0)
		is_str(header_of(&reqs[0].head, "x-amz-content-sha256"),
		       "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		       "GetObject: hash of the empty payload");
	reset_server();
	expect_reply(404, "Content-Type: application/xml\r\n", NOSUCHKEY);
	sb_reset(&out);
	is_int(bucket_get(b, "missing", &out), 1, "get: NoSuchKey is 'not found'");
	ok(out.len == 0, "get: nothing appended");
	reset_server();
	expect_reply(404, "", "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>");
	capture_begin();
	is_int(bucket_get(b, "k", &out), -1, "get: NoSuchBucket is an error");
	msg = capture_end();
	pname = xasprintf("test_s3: cannot read 's3://bkt/base/k': GetObject: HTTP 404 NoSuchBucket: "
			  "The specified bucket does not exist (bucket 'bkt' at %s)", ep);
	is_str(msg, pname, "NoSuchBucket message");
	free(pname);

	/* HeadObject */
	reset_server();
	expect_reply(200, "", "");
	expect_reply(404, "", "");
	is_int(bucket_exists(b, "a b"), 1, "exists: 200");
	is_int(bucket_exists(b, "a b"), 0, "exists: 404");
	check_req(0, "HEAD", "/bkt/base/a%20b", "HeadObject");
	reset_server();
	expect_reply(403, "", "");
	expect_reply(403, "", "<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match</Message></Error>");
	capture_begin();
	is_int(bucket_exists(b, "k"), -1, "exists: 403");
	is_str(capture_end(), "test_s3: cannot look at 's3://bkt/base/k': HeadObject: HTTP 403 SignatureDoesNotMatch: "
	       "The request signature we calculated does not match", "  the store's words, asked for with a GET");
	if (nreqs == 2)
		is_str(header_of(&reqs[1].head, "Range"), "bytes=0-0", "  a GET of one byte");
	reset_server();
	expect_reply(403, "", "");
	expect_reply(403, "", "");
	capture_begin();
	is_int(bucket_exists(b, "k"), -1, "exists: 403 without words");
	is_str(capture_end(), "test_s3: cannot look at 's3://bkt/base/k': HeadObject: HTTP 403 Forbidden", "  the status alone");

	/* Errors are not retried, 5xx are, and messages hold no secret */
	reset_server();
	expect_reply(403, "", "<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>");
	capture_begin();
	is_int(bucket_put(b, "k", "x", 1), -1, "put: 403");
	msg = capture_end();
	is_str(msg, "test_s3: cannot write 's3://bkt/base/k': PutObject: HTTP 403 AccessDenied: Access Denied",
	       "AccessDenied message");
	is_int(nreqs, 1, "403: no retry");
	ok(strstr(msg, SECRET) == NULL && strstr(msg, "session/token") == NULL, "no secret in the message");

	reset_server();
	expect_reply(503, "", "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");
	expect_reply(500, "", "<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>");
	expect_reply(200, "", "");
	is_int(bucket_put(b, "k", "x", 1), 0, "put: 503 then 500 then 200 succeeds");
	is_int(nreqs, 3, "  three attempts");
	if (nreqs == 3)
		ok(reqs[2].body_len == 1 && reqs[2].body[0] == 'x', "  the body sent again");

	reset_server();
	expect_reply(503, "", "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");
	expect_reply(503, "", "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");
	expect_reply(503, "", "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>");
	expect_reply(200, "", "");
	capture_begin();
	is_int(bucket_put(b, "k", "x", 1), -1, "put: 503 three times fails with 2 retries");
	is_str(capture_end(), "test_s3: cannot write 's3://bkt/base/k': PutObject: HTTP 503 SlowDown: "
	       "Please reduce your request rate. (gave up after 3 attempts)", "  message");
	is_int(nreqs, 3, "  bounded attempts");

	reset_server();
	expect_reply(429, "", "");
	expect_reply(200, "", "");
	is_int(bucket_delete(b, "k"), 0, "delete: 429 is retried");
	check_req(1, "DELETE", "/bkt/base/k", "DeleteObject");
	reset_server();
	expect_reply(404, "", NOSUCHKEY);
	is_int(bucket_delete(b, "k"), 0, "delete: a missing key is fine");

	/* put_new */
	reset_server();
	expect_reply(404, "", "");
	expect_reply(412, "", "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>");
	expect_reply(200, "", "rival");
	is_int(bucket_put_new(b, "lock", "me", 2), 1, "put_new: 412 means taken");
	if (nreqs == 3) {
		is_str(reqs[1].method, "PUT", "put_new: PUT after HEAD");
		is_str(header_of(&reqs[1].head, "If-None-Match"), "*", "put_new: If-None-Match: *");
		ok(signed_header(&reqs[1], "if-none-match"), "put_new: If-None-Match is signed");
		check_req(1, "PUT", "/bkt/base/lock", "conditional PutObject");
		check_req(2, "GET", "/bkt/base/lock", "412: read back (our own write sent twice?)");
	} else {
		ok(0, "put_new: three requests, got %d", nreqs);
	}
	reset_server();
	expect_reply(200, "", "");
	is_int(bucket_put_new(b, "lock", "me", 2), 1, "put_new: an existing object is taken");
	is_int(nreqs, 1, "  seen by HEAD, nothing written");
	reset_server();
	expect_reply(404, "", "");
	expect_reply(200, "", "");
	expect_reply(200, "", "me");
	expect_reply(200, "", "me");
	is_int(bucket_put_new(b, "lock", "me", 2), 0, "put_new: created and read back twice");
	is_int(nreqs, 4, "  HEAD, PUT, GET, GET");
	reset_server();
	expect_reply(404, "", "");
	expect_reply(200, "", "");
	expect_reply(200, "", "me");
	expect_reply(200, "", "rival");
	is_int(bucket_put_new(b, "lock", "me", 2), 1, "put_new: a rival's write seen by the second read wins");
	reset_server();
	expect_reply(404, "", "");
	expect_reply(200, "", "");
	expect_reply(200, "", "you");
	is_int(bucket_put_new(b, "lock", "me", 2), 1, "put_new: store ignored the condition, another won");

	/* the store's own conditional create */
	reset_server();
	expect_reply(412, "", "");
	is_int(bucket_probe_conditional(b, "probe"), 1, "probe: 412 means the store honours If-None-Match");
	if (nreqs == 1)
		is_str(header_of(&reqs[0].head, "If-None-Match"), "*", "  sent with If-None-Match: *");
	reset_server();
	expect_reply(200, "", "");
	is_int(bucket_probe_conditional(b, "probe"), 0, "probe: 200 means it ignores it");
	reset_server();
	expect_reply(501, "", "<Error><Code>NotImplemented</Code><Message>no</Message></Error>");
	is_int(bucket_probe_conditional(b, "probe"), 0, "probe: 501 means it cannot");
	reset_server();
	expect_reply(404, "", "");
	expect_reply(200, "", "");
	expect_reply(200, "", "me");
	expect_reply(200, "", "me");
	is_int(bucket_put_new(b, "lock2", "me", 2), 0, "put_new after a 501: works on reads alone");
	if (nreqs == 4)
		ok(header_of(&reqs[1].head, "If-None-Match") == NULL, "  no If-None-Match sent any more");

	/* move */
	reset_server();
	expect_reply(200, "", "L");	/* HEAD: Content-Length 5 */
	expect_reply(200, "", "<CopyObjectResult><ETag>\"e\"</ETag></CopyObjectResult>");
	expect_reply(204, "", "");
	is_int(bucket_move(b, "staging/a b=1", "dt=1/a b"), 0, "move");
	check_req(1, "PUT", "/bkt/base/dt%3D1/a%20b", "CopyObject");
	if (nreqs > 1) {
		is_str(header_of(&reqs[1].head, "x-amz-copy-source"), "/bkt/base/staging/a%20b=1",
		       "CopyObject: x-amz-copy-source encoded, '=' kept");
		ok(signed_header(&reqs[1], "x-amz-copy-source"), "CopyObject: copy source signed");
	}
	check_req(2, "DELETE", "/bkt/base/staging/a%20b%3D1", "move: DeleteObject of the source");
	reset_server();
	expect_reply(404, "", "");
	is_int(bucket_move(b, "gone", "there"), 1, "move: missing source");
	reset_server();
	expect_reply(200, "", "L");
	expect_reply(200, "", "<Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>");
	expect_reply(200, "", "<CopyObjectResult><ETag>\"e\"</ETag></CopyObjectResult>");
	expect_reply(204, "", "");
	is_int(bucket_move(b, "a", "b"), 0, "move: an error inside a 200 is retried");
	is_int(nreqs, 4, "  HEAD, copy, copy, delete");
	reset_server();
	expect_reply(200, "", "L");
	is_int(bucket_move(b, "a", "a"), 0, "move onto itself: nothing but HEAD");
	is_int(nreqs, 1, "  one request");

	/* ListObjectsV2 */
	reset_server();
	expect_reply(200, "", "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>true</IsTruncated>"
		     "<Contents><Key>base/dt%3D1/b</Key></Contents><Contents><Key>base/dt%3D1/a+z</Key></Contents>"
		     "<Contents><Key>base/dt%3D1/dir/</Key></Contents>"
		     "<NextContinuationToken>t/1+=</NextContinuationToken></ListBucketResult>");
	expect_reply(200, "", "<ListBucketResult><EncodingType>url</EncodingType><IsTruncated>false</IsTruncated>"
		     "<Contents><Key>base/dt%3D1/%C3%BC</Key></Contents></ListBucketResult>");
	is_int(bucket_list(b, "dt=1/", &keys, &n), 0, "list over two pages");
	is_int(n, 3, "  three keys (a folder marker passed over)");
	if (n == 3) {
		is_str(keys[0], "dt=1/a z", "  sorted, decoded, prefix removed");
		is_str(keys[1], "dt=1/b", "  second");
		is_str(keys[2], "dt=1/\xc3\xbc", "  third");
	}
	util_strv_free(keys);
	check_req(0, "GET", "/bkt?encoding-type=url&list-type=2&prefix=base%2Fdt%3D1%2F", "ListObjectsV2 page 1");
	check_req(1, "GET", "/bkt?continuation-token=t%2F1%2B%3D&encoding-type=url&list-type=2&prefix=base%2Fdt%3D1%2F",
		  "ListObjectsV2 page 2");
	reset_server();
	expect_reply(200, "", "<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>");
	capture_begin();
	is_int(bucket_list(b, "", &keys, &n), -1, "list: truncated without a token is an error");
	ok(strstr(capture_end(), "gives no new continuation token") != NULL, "  message");

	/* writer: small */
	reset_server();
	{
		struct bucket_writer *w = bucket_writer_open(b, "s/small");

		expect_reply(200, "ETag: \"x\"\r\n", "");
		ok(w && bucket_writer_write(w, "abc", 3) == 0 && bucket_writer_write(w, "def", 3) == 0,
		   "writer: small writes");
		is_int(nreqs, 0, "  nothing sent before close");
		is_int(bucket_writer_close(w), 0, "  close");
		check_req(0, "PUT", "/bkt/base/s/small", "writer: one PutObject");
		if (nreqs > 0)
			ok(reqs[0].body_len == 6 && memcmp(reqs[0].body, "abcdef", 6) == 0, "  body");
	}

	/* writer: multipart */
	reset_server();
	{
		struct bucket_writer *w = bucket_writer_open(b, "s/big file");
		size_t chunk = 1 << 20, total = 0, i;
		char *data = xmalloc(chunk);

		expect_reply(200, "", "<InitiateMultipartUploadResult><Bucket>bkt</Bucket><Key>base/s/big file</Key>"
			     "<UploadId>up/1+=</UploadId></InitiateMultipartUploadResult>");
		expect_reply(200, "ETag: \"e1\"\r\n", "");
		expect_reply(200, "ETag: \"e2\"\r\n", "");
		expect_reply(200, "ETag: \"e3\"\r\n", "");
		expect_reply(200, "", "<CompleteMultipartUploadResult><ETag>\"m-3\"</ETag></CompleteMultipartUploadResult>");
		r = 0;
		for (i = 0; i < 11 && r == 0; i++) {
			memset(data, 'a' + (int)i, chunk);
			r = bucket_writer_write(w, data, chunk);
			total += chunk;
		}
		is_int(r, 0, "writer: 11 MiB written");
		is_int(nreqs, 3, "  create and two 5 MiB parts sent while writing");
		is_int(bucket_writer_close(w), 0, "  close");
		is_int(nreqs, 5, "  last part and complete at close");
		check_req(0, "POST", "/bkt/base/s/big%20file?uploads=", "CreateMultipartUpload");
		check_req(1, "PUT", "/bkt/base/s/big%20file?partNumber=1&uploadId=up%2F1%2B%3D", "UploadPart 1");
		check_req(3, "PUT", "/bkt/base/s/big%20file?partNumber=3&uploadId=up%2F1%2B%3D", "UploadPart 3");
		check_req(4, "POST", "/bkt/base/s/big%20file?uploadId=up%2F1%2B%3D", "CompleteMultipartUpload");
		if (nreqs == 5) {
			is_int(reqs[1].body_len, 5 << 20, "  part 1 is 5 MiB");
			is_int(reqs[3].body_len, 1 << 20, "  part 3 is the rest");
			ok(reqs[2].body[0] == 'f' && reqs[3].body[0] == 'k', "  parts in order");
			is_str(reqs[4].body, "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			       "<Part><PartNumber>1</PartNumber><ETag>&quot;e1&quot;</ETag></Part>"
			       "<Part><PartNumber>2</PartNumber><ETag>&quot;e2&quot;</ETag></Part>"
			       "<Part><PartNumber>3</PartNumber><ETag>&quot;e3&quot;</ETag></Part>"
			       "</CompleteMultipartUpload>", "  the parts listed at completion");
		}
		(void)total;
		free(data);
	}

	/* writer: abort and failure abort the upload */
	reset_server();
	{
		struct bucket_writer *w = bucket_writer_open(b, "s/aborted");
		char *data = xcalloc(1, 6 << 20);

		expect_reply(200, "", "<InitiateMultipartUploadResult><UploadId>U2</UploadId></InitiateMultipartUploadResult>");
		expect_reply(200, "ETag: \"e1\"\r\n", "");
		expect_reply(204, "", "");
		is_int(bucket_writer_write(w, data, 6 << 20), 0, "writer: 6 MiB");
		bucket_writer_abort(w);
		is_int(nreqs, 3, "  abort sends one more request");
		check_req(2, "DELETE", "/bkt/base/s/aborted?uploadId=U2", "AbortMultipartUpload");

		reset_server();
		w = bucket_writer_open(b, "s/failed");
		expect_reply(200, "", "<InitiateMultipartUploadResult><UploadId>U3</UploadId></InitiateMultipartUploadResult>");
		expect_reply(400, "", "<Error><Code>InvalidDigest</Code><Message>bad</Message></Error>");
		expect_reply(204, "", "");
		capture_begin();
		is_int(bucket_writer_write(w, data, 6 << 20), -1, "writer: a part refused");
		ok(strstr(capture_end(), "UploadPart: HTTP 400 InvalidDigest: bad") != NULL, "  message");
		check_req(2, "DELETE", "/bkt/base/s/failed?uploadId=U3", "  upload aborted at once");
		is_int(bucket_writer_write(w, "x", 1), -1, "  later writes fail");
		is_int(bucket_writer_close(w), -1, "  close fails");
		is_int(nreqs, 3, "  without another request");
		free(data);
	}
	bucket_free(b);

	/* publishing an object above the copy part size: UploadPartCopy */
	setenv("DATASPOC_PIPE_S3_COPY_PART_SIZE", "5MiB", 1);
	b = bucket_open_opts("s3://bkt/base/", ep);
	unsetenv("DATASPOC_PIPE_S3_COPY_PART_SIZE");
	reset_server();
	expect_reply(200, "Content-Length: 12582912\r\n", "");
	expect_reply(200, "", "<InitiateMultipartUploadResult><UploadId>C1</UploadId></InitiateMultipartUploadResult>");
	expect_reply(200, "", "<CopyPartResult><ETag>&quot;p1&quot;</ETag></CopyPartResult>");
	expect_reply(200, "", "<CopyPartResult><ETag>\"p2\"</ETag></CopyPartResult>");
	expect_reply(200, "", "<CopyPartResult><ETag>\"p3\"</ETag></CopyPartResult>");
	expect_reply(200, "", "<CompleteMultipartUploadResult><ETag>\"m-3\"</ETag></CompleteMultipartUploadResult>");
	expect_reply(204, "", "");
	is_int(b ? bucket_move(b, "staging/big=1", "dt=1/big") : -2, 0, "move of 12 MiB in 5 MiB copy parts");
	is_int(nreqs, 7, "  HEAD, create, three part copies, complete, delete");
	check_req(1, "POST", "/bkt/base/dt%3D1/big?uploads=", "multipart copy: CreateMultipartUpload");
	check_req(2, "PUT", "/bkt/base/dt%3D1/big?partNumber=1&uploadId=C1", "UploadPartCopy 1");
	check_req(4, "PUT", "/bkt/base/dt%3D1/big?partNumber=3&uploadId=C1", "UploadPartCopy 3");
	if (nreqs == 7) {
		is_str(header_of(&reqs[2].head, "x-amz-copy-source"), "/bkt/base/staging/big=1", "  copy source");
		is_str(header_of(&reqs[2].head, "x-amz-copy-source-range"), "bytes=0-5242879", "  first range");
		is_str(header_of(&reqs[3].head, "x-amz-copy-source-range"), "bytes=5242880-10485759", "  second range");
		is_str(header_of(&reqs[4].head, "x-amz-copy-source-range"), "bytes=10485760-12582911", "  last range");
		ok(signed_header(&reqs[2], "x-amz-copy-source-range"), "  range signed");
		ok(strstr(reqs[5].body, "<Part><PartNumber>1</PartNumber><ETag>&quot;p1&quot;</ETag></Part>") &&
		   strstr(reqs[5].body, "<Part><PartNumber>3</PartNumber><ETag>&quot;p3&quot;</ETag></Part>"),
		   "  the copied parts completed");
	}
	check_req(6, "DELETE", "/bkt/base/staging/big%3D1", "multipart copy: source deleted");
	reset_server();
	expect_reply(200, "Content-Length: 12582912\r\n", "");
	expect_reply(200, "", "<InitiateMultipartUploadResult><UploadId>C2</UploadId></InitiateMultipartUploadResult>");
	expect_reply(200, "", "<Error><Code>AccessDenied</Code><Message>no</Message></Error>");
	expect_reply(204, "", "");
	capture_begin();
	is_int(b ? bucket_move(b, "a", "b") : -2, -1, "multipart copy: a part refused");
	ok(strstr(capture_end(), "UploadPartCopy: HTTP 200 AccessDenied: no") != NULL, "  message");
	check_req(3, "DELETE", "/bkt/base/b?uploadId=C2", "  the copy aborted, the source kept");
	is_int(nreqs, 4, "  nothing more");
	bucket_free(b);

	/* a store that is not there */
	setenv("DATASPOC_PIPE_S3_RETRIES", "1", 1);
	{
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a;
		socklen_t alen = sizeof(a);
		int port;

		/* a port nobody listens on: bind, note it, close */
		memset(&a, 0, sizeof(a));
		a.sin_family = AF_INET;
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		bind(fd, (struct sockaddr *)&a, sizeof(a));
		getsockname(fd, (struct sockaddr *)&a, &alen);
		port = ntohs(a.sin_port);
		close(fd);
		snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", port);
		b = bucket_open_opts("s3://bkt", ep);
		capture_begin();
		is_int(b ? bucket_get(b, "k", &out) : -2, -1, "server down: get fails");
		msg = capture_end();
		ok(strncmp(msg, "test_s3: cannot read 's3://bkt/k': GetObject: ", 46) == 0 &&
		   strstr(msg, "onnect") && strstr(msg, "(gave up after 2 attempts)"),
		   "server down: one line naming the key, the connection failure and the attempts");
		printf("# %s\n", msg);
		bucket_free(b);
	}
	unsetenv("DATASPOC_PIPE_S3_RETRIES");

	/* bad settings */
	setenv("DATASPOC_PIPE_S3_PART_SIZE", "lots", 1);
	capture_begin();
	ok(bucket_open("s3://bkt") == NULL, "bad part size refused");
	is_str(capture_end(), "test_s3: DATASPOC_PIPE_S3_PART_SIZE must be a size such as 8MiB, not 'lots'",
	       "  message");
	unsetenv("DATASPOC_PIPE_S3_PART_SIZE");
	capture_begin();
	ok(bucket_open("s3://b/../x") == NULL, "bad prefix refused at open");
	ok(strstr(capture_end(), "invalid bucket 's3://b/../x': the prefix") != NULL, "  message");
	pname = xasprintf("gs://lake");
	b = bucket_open(pname);
	ok(b != NULL, "gs:// opens with the AWS variables as HMAC keys");
	bucket_free(b);
	free(pname);
	sb_free(&out);
	reset_server();
}

/*
 * Answers lost after the work was done, cut short, or never coming: the
 * faults of tests/s3-faults.bats, one at a time.
 */
static void test_lost_answers(void)
{
	struct bucket *b;
	struct sb out = SB_INIT;
	char ep[64];
	const char *msg;
	char *data = xcalloc(1, 6 << 20);
	struct bucket_writer *w;
	double t0;
	int i;

	snprintf(ep, sizeof(ep), "http://127.0.0.1:%d", server_port);
	setenv("DATASPOC_PIPE_S3_RETRIES", "2", 1);
	setenv("DATASPOC_PIPE_S3_PART_SIZE", "5MiB", 1);
	b = bucket_open_opts("s3://bkt/base/", ep);
	if (!ok(b != NULL, "open s3://bkt/base/ again"))
		return;

	/* curl 7.88 takes a header block cut short for a whole answer */
	reset_server();
	expect_reply(CUT_HEADERS, "Content-Type: application/xml\r\nContent-Length: 0\r\nETag: \"e\"\r\n", "");
	expect_reply(404, "", "");
	is_int(bucket_exists(b, "k"), 0, "headers cut short: not taken for a 200, asked again");
	is_int(nreqs, 2, "  two requests");
	reset_server();
	for (i = 0; i < 3; i++)
		expect_reply(CUT_HEADERS, "Content-Type: application/xml\r\nContent-Length: 0\r\nETag: \"e\"\r\n", "");
	capture_begin();
	is_int(bucket_put(b, "k", "x", 1), -1, "headers cut short every time: an error");
	is_str(capture_end(), "test_s3: cannot write 's3://bkt/base/k': PutObject: the connection closed "
	       "inside the answer's headers (gave up after 3 attempts)", "  message");

	/* the run lock written, the answer lost: a retry meets 412 and reads back its own */
	reset_server();
	expect_reply(404, "", "");
	expect_reply(CLOSE, "", "");
	expect_reply(412, "", "<Error><Code>PreconditionFailed</Code><Message>no</Message></Error>");
	expect_reply(200, "", "me");
	expect_reply(200, "", "me");
	is_int(bucket_put_new(b, "lock", "me", 2), 0, "put_new: written, answer lost, 412 on the retry: ours");
	is_int(nreqs, 5, "  HEAD, PUT, PUT, GET, GET");
	if (nreqs == 5)
		ok(strcmp(reqs[1].method, "PUT") == 0 && strcmp(reqs[2].method, "PUT") == 0 &&
		   strcmp(reqs[3].method, "GET") == 0, "  the PUT sent twice, then read back");
	reset_server();
	expect_reply(404, "", "");
	expect_reply(CLOSE, "", "");
	expect_reply(412, "", "<Error><Code>PreconditionFailed</Code><Message>no</Message></Error>");
	expect_reply(200, "", "rival");
	is_int(bucket_put_new(b, "lock", "me", 2), 1, "put_new: 412 on the retry and a rival's bytes: taken");

	/* CompleteMultipartUpload done, its answer lost */
	reset_server();
	w = bucket_writer_open(b, "s/done");
	expect_reply(200, "", "<InitiateMultipartUploadResult><UploadId>U4</UploadId></InitiateMultipartUploadResult>");
	expect_reply(200, "ETag: \"e1\"\r\n", "");
	expect_reply(200, "ETag: \"e2\"\r\n", "");
	expect_reply(CLOSE, "", "");
	expect_reply(404, "", "<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>");
	expect_reply(200, "Content-Length: 6291457\r\nETag: \"m-2\"\r\n", "");
	ok(w && bucket_writer_write(w, data, 6 << 20) == 0 && bucket_writer_write(w, "x", 1) == 0,
	   "complete lost: 6 MiB and a byte written");
	capture_begin();
	is_int(bucket_writer_close(w), 0, "complete lost: NoSuchUpload on the retry, the object there: done");
	is_str(capture_end(), "", "  nothing said");
	is_int(nreqs, 6, "  create, 2 parts, complete twice, HEAD");
	check_req(5, "HEAD", "/bkt/base/s/done", "  the object looked at");

	reset_server();
	w = bucket_writer_open(b, "s/notdone");
	expect_reply(200, "", "<InitiateMultipartUploadResult><UploadId>U5</UploadId></InitiateMultipartUploadResult>");
	expect_reply(200, "ETag: \"e1\"\r\n", "");
	expect_reply(200, "ETag: \"e2\"\r\n", "");
	expect_reply(CLOSE, "", "");
	expect_reply(404, "", "<Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message></Error>");
	expect_reply(200, "Content-Length: 6291457\r\nETag: \"m-3\"\r\n", "");
	expect_reply(204, "", "");
	ok(w && bucket_writer_write(w, data, 6 << 20) == 0 && bucket_writer_write(w, "x", 1) == 0,
	   "complete lost, another object there: written");
	capture_begin();
	is_int(bucket_writer_close(w), -1, "  an object of 3 parts is not ours: an error");
	ok(strstr(capture_end(), "CompleteMultipartUpload: HTTP 404 NoSuchUpload") != NULL, "  NoSuchUpload named");
	check_req(6, "DELETE", "/bkt/base/s/notdone?uploadId=U5", "  the upload aborted");

	/* CreateMultipartUpload done, its answer lost: the stray upload aborted */
	reset_server();
	w = bucket_writer_open(b, "s/c");
	expect_reply(CLOSE, "", "");
	expect_reply(200, "", "<InitiateMultipartUploadResult><UploadId>U7</UploadId></InitiateMultipartUploadResult>");
	expect_reply(200, "", "<ListMultipartUploadsResult><Bucket>bkt</Bucket><KeyMarker></KeyMarker>"
		     "<Upload><Key>base/s/c</Key><UploadId>U6</UploadId></Upload>"
		     "<Upload><Key>base/s/c</Key><UploadId>U7</UploadId></Upload>"
		     "<Upload><Key>base/s/cc</Key><UploadId>U8</UploadId></Upload>"
		     "<IsTruncated>false</IsTruncated></ListMultipartUploadsResult>");
	expect_reply(204, "", "");
	expect_reply(200, "ETag: \"e1\"\r\n", "");
	expect_reply(204, "", "");
	is_int(w ? bucket_writer_write(w, data, 6 << 20) : -2, 0, "create lost: 6 MiB written");
	is_int(nreqs, 5, "  create twice, list, abort, part 1");
	check_req(2, "GET", "/bkt?prefix=base%2Fs%2Fc&uploads=", "  ListMultipartUploads of the key");
	check_req(3, "DELETE", "/bkt/base/s/c?uploadId=U6", "  the stray upload aborted");
	check_req(4, "PUT", "/bkt/base/s/c?partNumber=1&uploadId=U7", "  the parts go to the other");
	bucket_writer_abort(w);
	check_req(5, "DELETE", "/bkt/base/s/c?uploadId=U7", "  which the writer's abort aborts");
	is_int(nreqs, 6, "  the other key's upload left alone");
	bucket_free(b);

	/* a stalled answer: a timeout after DATASPOC_PIPE_S3_TIMEOUT seconds, retried */
	setenv("DATASPOC_PIPE_S3_TIMEOUT", "1", 1);
	setenv("DATASPOC_PIPE_S3_RETRIES", "1", 1);
	b = bucket_open_opts("s3://bkt/base/", ep);
	reset_server();
	expect_reply(STALL, "", "");
	expect_reply(200, "", "data");
	sb_reset(&out);
	t0 = util_now();
	is_int(b ? bucket_get(b, "k", &out) : -2, 0, "stall: timed out, then read");
	is_str(out.buf, "data", "  the second answer");
	ok(util_now() - t0 >= 0.9 && util_now() - t0 < 10, "  after about a second (%.1f s)", util_now() - t0);
	reset_server();
	expect_reply(STALL, "", "");
	expect_reply(STALL, "", "");
	capture_begin();
	is_int(b ? bucket_get(b, "k", &out) : -2, -1, "stall every time: an error");
	msg = capture_end();
	ok(strstr(msg, "test_s3: cannot read 's3://bkt/base/k': GetObject: Operation too slow") == msg &&
	   strstr(msg, "(gave up after 2 attempts)"), "  message: %s", msg);
	bucket_free(b);
	setenv("DATASPOC_PIPE_S3_TIMEOUT", "0", 1);
	capture_begin();
	ok(bucket_open("s3://bkt") == NULL, "DATASPOC_PIPE_S3_TIMEOUT=0 refused");
	is_str(capture_end(), "test_s3: DATASPOC_PIPE_S3_TIMEOUT must be a number of seconds from 1 to 3600, not '0'",
	       "  message");
	unsetenv("DATASPOC_PIPE_S3_TIMEOUT");
	unsetenv("DATASPOC_PIPE_S3_RETRIES");
	unsetenv("DATASPOC_PIPE_S3_PART_SIZE");
	sb_free(&out);
	free(data);
	reset_server();
}

int main(int argc, char **argv)
{
	(void)argc;
	err_init(argv[0]);
	if (mkdtemp(tmpdir) == NULL) {
		perror("mkdtemp");
		return 2;
	}
	setenv("HOME", tmpdir, 1);
	test_published_vectors();
	test_encoding();
	test_query();
	test_target();
	test_xml();
	test_profiles();
	test_requests();
	test_lost_answers();
	{
		char *cmd = xasprintf("rm -rf '%s'", tmpdir);

		if (system(cmd) != 0)
			printf("# could not remove %s\n", tmpdir);
		free(cmd);
	}
	return tap_done();
}
