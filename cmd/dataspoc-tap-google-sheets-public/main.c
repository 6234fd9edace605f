/*
 * dataspoc-tap-google-sheets-public: the built-in Singer tap for a public
 * Google Sheet (the YAML's "tap: google-sheets-public").  It fetches the
 * sheet's CSV export over HTTPS with libcurl, infers each column's type from
 * its values (integer, number, boolean, else string; empty cells are
 * null), and prints a SCHEMA and the RECORDs.  The CSV is read with
 * dataspoc-tap-csv's reader, lib/csv.[ch].
 *
 * DATASPOC_GSHEETS_BASE_URL replaces https://docs.google.com, for the
 * tests' local server only.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jv.h>

#include "csv.h"
#include "err.h"
#include "json.h"
#include "sb.h"
#include "jvx.h"
#include "singer_tap.h"
#include "util.h"

#ifndef PIPE_VERSION
#define PIPE_VERSION "0.1.0"
#endif


/* A sheet bigger than this is refused (the export is read into memory). */
#define MAX_BYTES ((size_t)1 << 30)
/* The whole fetch's deadline by default, seconds (timeout_seconds). */
#define DEFAULT_TIMEOUT 600L

static const char usage_line[] =
	"usage: dataspoc-tap-google-sheets-public [-d] -c config [-s state] "
	"[-p properties | --catalog catalog]\n";

static const char help_text[] =
	"Fetch a public Google Sheet's CSV export and print it as a Singer stream.\n"
	"\n"
	"  -c, --config FILE      the tap's config (required): {\"url\"} (the address as\n"
	"                         pasted from a browser, or the id); \"sheet_gid\" or\n"
	"                         \"tab_name\"; \"sheet_name\" names the stream;\n"
	"                         \"key_properties\"\n"
	"  -s, --state FILE       accepted and ignored: every run reads the whole sheet\n"
	"  -p, --properties FILE  a catalog: the stream or columns with\n"
	"      --catalog FILE     \"selected\": false are left out\n"
	"  -d, --discover         print the catalog (fetches the sheet)\n"
	"      --about            print the tap's name and capabilities as JSON\n"
	"      --version          print the version\n"
	"  -h, --help             print this help\n"
	"\n"
	"Column types are inferred from the values: integer, number, boolean, else\n"
	"string; an empty cell is null.  Exit status: 0 success, 1 the sheet could not\n"
	"be fetched (not public, not found, network) or is not valid CSV, 2 usage or\n"
	"config error.  See dataspoc-tap-google-sheets-public(1).\n";

static const char about_json[] =
	"{\"name\":\"dataspoc-tap-google-sheets-public\","
	"\"description\":\"Singer tap for public Google Sheets, built into dataspoc-pipe\","
	"\"version\":\"" PIPE_VERSION "\","
	"\"capabilities\":[\"discover\",\"catalog\",\"properties\"],"
	"\"settings\":{\"type\":\"object\",\"properties\":{"
	"\"url\":{\"type\":\"string\"},"
	"\"spreadsheet_id\":{\"type\":\"string\"},"
	"\"sheet_gid\":{\"type\":[\"string\",\"integer\"]},"
	"\"gid\":{\"type\":[\"string\",\"integer\"]},"
	"\"tab_name\":{\"type\":\"string\"},"
	"\"sheet_name\":{\"type\":\"string\"},"
	"\"stream_name\":{\"type\":\"string\"},"
	"\"key_properties\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}}";

enum coltype { T_NONE, T_INTEGER, T_NUMBER, T_BOOLEAN, T_STRING };

struct sheet {
	const char *config_file;
	const char *catalog_file;
	const char *catalog_what;
	char *id, *gid, *name;	/* the spreadsheet, and the tab's gid or name */
	char *stream;
	char **keys;
	size_t nkeys;
	int selected;
	char **drop;
	size_t ndrop;
	char *url;		/* the export's */
	long timeout;		/* the whole fetch's deadline, seconds (timeout_seconds) */
	struct sb body;
	/* the columns */
	char **cols;
	size_t ncols;
	enum coltype *type;
	int *on;
	struct sb msg;
	int write_failed;
};

static int emit(struct sheet *s)
{
	return singer_tap_emit(&s->msg, &s->write_failed);
}

/* ---- config and catalog (libjq: they hold no record values) ---- */

static int id_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
			return 0;
	return 1;
}

static int digits_ok(const char *s)
{
	if (*s == '\0')
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* The id and gid of a sheet's address: .../spreadsheets/d/ID/edit#gid=GID. */
static int parse_url(struct sheet *s, const char *url)
{
	const char *p = strstr(url, "/spreadsheets/d/"), *e, *g;
	size_t n;

	if (p == NULL)
		return -1;
	p += strlen("/spreadsheets/d/");
	n = strcspn(p, "/?#");
	s->id = xstrndup(p, n);
	if (!id_ok(s->id))
		return -1;
	/* gid= in the query or the fragment; the last one is the sheet shown */
	for (g = NULL, e = p; (e = strstr(e, "gid=")) != NULL; e += 4)
		if (e[-1] == '?' || e[-1] == '&' || e[-1] == '#')
			g = e + 4;
	if (g != NULL) {
		n = strspn(g, "0123456789");
		if (n == 0)
			return -1;
		s->gid = xstrndup(g, n);
	}
	return 0;
}

/*
 * The spreadsheet of "url" or "spreadsheet_id" (the Python DataSpoc Pipe's
 * rule: either takes the id alone or the whole address, "url" first), and
 * the address's gid.  0, or an exit status (said).
 */
static int parse_sheet(struct sheet *s, const char *key, const char *ref)
{
	if (strstr(ref, "/spreadsheets/d/") != NULL ? parse_url(s, ref) == 0 : id_ok(ref)) {
		if (s->id == NULL)
			s->id = xstrdup(ref);
		return 0;
	}
	return singer_tap_bad("config", s->config_file, "\"%s\" '%s' is neither a spreadsheet id nor "
			      "a Google Sheets address (https://docs.google.com/spreadsheets/d/ID/"
			      "edit#gid=N)", key, ref);
}

/*
 * The Python DataSpoc Pipe's config: "url" or "spreadsheet_id"; the gid from
 * "sheet_gid", else "gid", else the address; the stream named by
 * "sheet_name", else "stream_name".  "tab_name" (ours) chooses a tab by its
 * name instead of its gid.
 */
static int load_config(struct sheet *s)
{
	static const char *const known[] = {
		"url", "spreadsheet_id", "sheet_gid", "gid", "tab_name", "sheet_name",
		"stream_name", "key_properties", "timeout_seconds"
	};
	const char *file = s->config_file;
	jv conf = jv_invalid(), v;
	char *url = NULL, *sid = NULL, *sheet_gid = NULL, *gid = NULL, *sheet_name = NULL;
	char *timeout = NULL;
	int rc;

	rc = singer_tap_load_json("config", file, &conf);
	if (rc)
		goto out;
	if (jv_get_kind(conf) != JV_KIND_OBJECT) {
		rc = singer_tap_bad("config", file, "not a JSON object");
		goto out;
	}
	if (singer_tap_config_string(conf, "url", 0, &url) < 0 ||
	    singer_tap_config_string(conf, "spreadsheet_id", 0, &sid) < 0 ||
	    singer_tap_config_string(conf, "sheet_gid", 1, &sheet_gid) < 0 ||
	    singer_tap_config_string(conf, "gid", 1, &gid) < 0 ||
	    singer_tap_config_string(conf, "tab_name", 0, &s->name) < 0 ||
	    singer_tap_config_string(conf, "sheet_name", 0, &sheet_name) < 0 ||
	    singer_tap_config_string(conf, "stream_name", 0, &s->stream) < 0) {
		rc = singer_tap_bad("config", file, "\"url\", \"spreadsheet_id\", \"tab_name\", "
			 "\"sheet_name\" and \"stream_name\" must be non-empty strings, "
			 "\"sheet_gid\" and \"gid\" a string or a number of digits");
		goto out;
	}
	if (url == NULL && sid == NULL) {
		rc = singer_tap_bad("config", file, "give \"url\" (the sheet's address) or "
			 "\"spreadsheet_id\"");
		goto out;
	}
	/* "url" first, as in the Python tool */
	if ((rc = parse_sheet(s, url ? "url" : "spreadsheet_id", url ? url : sid)) != 0)
		goto out;
	if (sheet_gid != NULL || gid != NULL) {
		const char *key = sheet_gid ? "sheet_gid" : "gid";
		char *g = sheet_gid ? sheet_gid : gid;

		if (!digits_ok(g)) {
			rc = singer_tap_bad("config", file, "\"%s\" must be digits, not '%s'", key, g);
			goto out;
		}
		if (s->name != NULL) {
			rc = singer_tap_bad("config", file, "give \"%s\" or \"tab_name\", not both", key);
			goto out;
		}
		free(s->gid);
		s->gid = xstrdup(g);
	}
	if (s->name != NULL) {
		/* a tab named chooses over the address's gid */
		free(s->gid);
		s->gid = NULL;
	}
	if (singer_tap_config_string(conf, "timeout_seconds", 1, &timeout) < 0) {
		rc = singer_tap_bad("config", file, "\"timeout_seconds\" must be a number of seconds");
		goto out;
	}
	s->timeout = DEFAULT_TIMEOUT;
	if (timeout != NULL) {
		char *end;

		errno = 0;
		s->timeout = strtol(timeout, &end, 10);
		if (!digits_ok(timeout) || *end != '\0' || errno != 0 || s->timeout < 1 || s->timeout > 86400) {
			rc = singer_tap_bad("config", file, "\"timeout_seconds\" must be 1 to 86400, not '%s'",
					    timeout);
			goto out;
		}
	}
	if (sheet_name != NULL) {
		free(s->stream);
		s->stream = sheet_name;
		sheet_name = NULL;
	}
	if (s->stream == NULL)
		s->stream = xstrdup(s->name ? s->name : "sheet");
	v = jvx_get(conf, "key_properties");
	if (!jvx_absent(v) && singer_tap_string_list(v, &s->keys, &s->nkeys) != 0)
		rc = singer_tap_bad("config", file, "\"key_properties\" must be an array of strings");
	jv_free(v);
	if (rc)
		goto out;
	singer_tap_warn_unknown(conf, known, sizeof(known) / sizeof(known[0]), file, NULL);
out:
	free(url);
	free(sid);
	free(sheet_gid);
	free(gid);
	free(sheet_name);
	free(timeout);
	jv_free(conf);
	return rc;
}

static int load_catalog(struct sheet *s)
{
	/* A catalog that does not list the stream leaves it out. */
	return singer_tap_select_one(s->catalog_what, s->catalog_file, s->stream, &s->selected,
				     &s->drop, &s->ndrop);
}

/* ---- the export, over HTTP ---- */

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct sb *b = arg;

	if (b->len + size * n > MAX_BYTES)
		return 0;
	sb_add(b, p, size * n);
	return size * n;
}

/* 1 when url is Google's sign-in page (a sheet that is not shared). */
static int login_page(const char *url)
{
	return url != NULL && (strstr(url, "accounts.google.com") != NULL ||
			       strstr(url, "/ServiceLogin") != NULL ||
			       strstr(url, "/signin/") != NULL);
}

static char *export_url(const struct sheet *s)
{
	const char *base = getenv("DATASPOC_GSHEETS_BASE_URL");
	struct sb u = SB_INIT;
	const char *p;

	if (base == NULL || *base == '\0')
		base = "https://docs.google.com";
	sb_addf(&u, "%s/spreadsheets/d/%s/", base, s->id);
	if (s->name != NULL) {
		sb_adds(&u, "gviz/tq?tqx=out:csv&sheet=");
		for (p = s->name; *p; p++) {
			unsigned char c = (unsigned char)*p;

			if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~')
				sb_addc(&u, (char)c);
			else
				sb_addf(&u, "%%%02X", c);
		}
	} else {
		sb_adds(&u, "export?format=csv");
		if (s->gid != NULL)
			sb_addf(&u, "&gid=%s", s->gid);
	}
	return sb_detach(&u);
}

static int fetch(struct sheet *s)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	CURL *h = NULL;
	CURLcode r;
	long code = 0;
	char *final = NULL, *ctype = NULL;
	int rc = EXIT_FAIL;

	s->url = export_url(s);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || (h = curl_easy_init()) == NULL) {
		err_msg("cannot fetch '%s': libcurl cannot start", s->url);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_URL, s->url);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 120L);
	/* a server that drips bytes slower than any sheet needs must still end */
	curl_easy_setopt(h, CURLOPT_TIMEOUT, s->timeout);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "dataspoc-pipe/" PIPE_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s->body);
	r = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &final);
	curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ctype);
	if (r == CURLE_WRITE_ERROR && s->body.len + CURL_MAX_WRITE_SIZE > MAX_BYTES) {
		err_msg("cannot fetch '%s': the sheet is larger than 1 GiB", s->url);
		goto out;
	}
	if (r != CURLE_OK) {
		err_msg("cannot fetch '%s': %s", s->url, *errbuf ? errbuf : curl_easy_strerror(r));
		goto out;
	}
	if (login_page(final) || code == 401 || code == 403) {
		err_msg("cannot fetch '%s': the sheet is not public (Google asks to sign in): "
			"share it as 'Anyone with the link' or publish it to the web", s->url);
		goto out;
	}
	if (code == 404) {
		err_msg("cannot fetch '%s': HTTP 404: no such spreadsheet or sheet (check "
			"the id and the gid or name)", s->url);
		goto out;
	}
	if (code < 200 || code > 299) {
		err_msg("cannot fetch '%s': HTTP %ld", s->url, code);
		goto out;
	}
	if (ctype != NULL && strncasecmp(ctype, "text/html", 9) == 0) {
		err_msg("cannot fetch '%s': the answer is a web page, not CSV (is the sheet "
			"public?)", s->url);
		goto out;
	}
	rc = 0;
out:
	curl_easy_cleanup(h);
	return rc;
}

/* ---- types ---- */

static int is_integer(const char *p, size_t n)
{
	size_t i = 0;

	if (n > 0 && p[0] == '-')
		i++;
	if (i == n || (p[i] == '0' && n - i > 1))
		return 0;
	for (; i < n; i++)
		if (p[i] < '0' || p[i] > '9')
			return 0;
	return 1;
}

/* JSON's number syntax: what is printed must be valid as it is. */
static int is_number(const char *p, size_t n)
{
	struct json_span v;
	size_t pos;
	const char *why;

	if (n == 0 || !((p[0] >= '0' && p[0] <= '9') || p[0] == '-'))
		return 0;
	return json_validate(p, n, &v, &pos, &why) == 0 && v.type == JSON_NUMBER &&
	       v.len == n;
}

static int is_bool(const char *p, size_t n, int *val)
{
	if (n == 4 && strncasecmp(p, "true", 4) == 0)
		*val = 1;
	else if (n == 5 && strncasecmp(p, "false", 5) == 0)
		*val = 0;
	else
		return 0;
	return 1;
}

/* Widen t so that it holds the cell p[0..n) (empty: null fits every type). */
static enum coltype widen(enum coltype t, const char *p, size_t n)
{
	int b;

	if (n == 0 || t == T_STRING)
		return t;
	if ((t == T_NONE || t == T_INTEGER) && is_integer(p, n))
		return T_INTEGER;
	if ((t == T_NONE || t == T_INTEGER || t == T_NUMBER) && is_number(p, n))
		return T_NUMBER;
	if ((t == T_NONE || t == T_BOOLEAN) && is_bool(p, n, &b))
		return T_BOOLEAN;
	return T_STRING;
}

static const char *type_name(enum coltype t)
{
	switch (t) {
	case T_INTEGER: return "integer";
	case T_NUMBER: return "number";
	case T_BOOLEAN: return "boolean";
	default: return "string";
	}
}

/* The header, then every row once to infer the types.  0 or an exit status. */
static int read_header(struct sheet *s)
{
	struct csv *c = csv_open_mem(s->body.buf ? s->body.buf : "", s->body.len, s->url, ',');
	size_t i, j, len;
	const char *f;
	int r, rc = EXIT_FAIL;

	r = csv_next(c);
	if (r < 0) {
		rc = csv_fail(c);
		goto out;
	}
	if (r == 0) {
		rc = 0;
		goto out;
	}
	s->ncols = c->nfields;
	s->cols = xcalloc(s->ncols, sizeof(*s->cols));
	s->type = xcalloc(s->ncols, sizeof(*s->type));
	s->on = xcalloc(s->ncols, sizeof(*s->on));
	for (i = 0; i < c->nfields; i++) {
		f = csv_field(c, i, &len);
		if (!util_utf8_valid(f, len) || memchr(f, '\0', len)) {
			err_msg("%s:%lu: column %zu: invalid UTF-8 in the header", s->url,
				c->row_line, i + 1);
			goto out;
		}
		/* A blank header cell gets a name, as its column letter would. */
		s->cols[i] = len ? xstrndup(f, len) : xasprintf("column_%zu", i + 1);
		s->on[i] = !singer_tap_in_list(s->drop, s->ndrop, s->cols[i]) ||
			   singer_tap_in_list(s->keys, s->nkeys, s->cols[i]);
	}
	j = util_strv_first_dup(s->cols, s->ncols);
	if (j < s->ncols) {
		err_msg("%s:%lu: column '%s' appears twice", s->url, c->row_line, s->cols[j]);
		goto out;
	}
	for (i = 0; i < s->nkeys; i++)
		if (!singer_tap_in_list(s->cols, s->ncols, s->keys[i])) {
			rc = singer_tap_bad("config", s->config_file, "key property '%s' is not a column "
				 "of the sheet", s->keys[i]);
			goto out;
		}
	while ((r = csv_next(c)) == 1) {
		if (c->nfields > s->ncols) {
			/* Cells past the header are kept only when empty. */
			for (i = s->ncols; i < c->nfields; i++) {
				csv_field(c, i, &len);
				if (len) {
					err_msg("%s:%lu: %zu fields, the header has %zu", s->url,
						c->row_line, c->nfields, s->ncols);
					goto out;
				}
			}
		}
		for (i = 0; i < s->ncols && i < c->nfields; i++) {
			f = csv_field(c, i, &len);
			if (!util_utf8_valid(f, len)) {
				err_msg("%s:%lu: column '%s': invalid UTF-8", s->url, c->row_line,
					s->cols[i]);
				goto out;
			}
			s->type[i] = widen(s->type[i], f, len);
		}
	}
	if (r < 0) {
		rc = csv_fail(c);
		goto out;
	}
	rc = 0;
out:
	csv_close(c);
	return rc;
}

static void add_schema(struct sheet *s, struct sb *out)
{
	size_t i, k = 0;

	sb_adds(out, "{\"type\":\"object\",\"properties\":{");
	for (i = 0; i < s->ncols; i++) {
		if (!s->on[i])
			continue;
		if (k++)
			sb_addc(out, ',');
		json_quote(out, s->cols[i], strlen(s->cols[i]));
		sb_addf(out, ":{\"type\":[\"null\",\"%s\"]}", type_name(s->type[i]));
	}
	sb_adds(out, "}}");
}

static void add_keys(struct sheet *s, struct sb *out)
{
	size_t i;

	sb_addc(out, '[');
	for (i = 0; i < s->nkeys; i++) {
		if (i)
			sb_addc(out, ',');
		json_quote(out, s->keys[i], strlen(s->keys[i]));
	}
	sb_addc(out, ']');
}

static int sync_sheet(struct sheet *s)
{
	struct csv *c = NULL;
	struct sb pre = SB_INIT;
	size_t i, len;
	const char *f;
	int r, b, rc;

	if ((rc = fetch(s)) != 0 || (rc = read_header(s)) != 0)
		return rc;
	rc = EXIT_FAIL;
	sb_adds(&s->msg, "{\"type\":\"SCHEMA\",\"stream\":");
	json_quote(&s->msg, s->stream, strlen(s->stream));
	sb_adds(&s->msg, ",\"schema\":");
	add_schema(s, &s->msg);
	sb_adds(&s->msg, ",\"key_properties\":");
	add_keys(s, &s->msg);
	sb_adds(&s->msg, "}\n");
	if (emit(s) < 0)
		goto out;
	sb_adds(&pre, "{\"type\":\"RECORD\",\"stream\":");
	json_quote(&pre, s->stream, strlen(s->stream));
	sb_adds(&pre, ",\"record\":{");
	c = csv_open_mem(s->body.buf ? s->body.buf : "", s->body.len, s->url, ',');
	r = csv_next(c);	/* the header, read before */
	while (r == 1 && (r = csv_next(c)) == 1) {
		int first = 1;

		sb_add(&s->msg, pre.buf, pre.len);
		for (i = 0; i < s->ncols; i++) {
			if (!s->on[i])
				continue;
			if (!first)
				sb_addc(&s->msg, ',');
			first = 0;
			json_quote(&s->msg, s->cols[i], strlen(s->cols[i]));
			sb_addc(&s->msg, ':');
			f = i < c->nfields ? csv_field(c, i, &len) : (len = 0, "");
			if (len == 0)
				sb_adds(&s->msg, "null");
			else if (s->type[i] == T_INTEGER || s->type[i] == T_NUMBER)
				sb_add(&s->msg, f, len);
			else if (s->type[i] == T_BOOLEAN && is_bool(f, len, &b))
				sb_adds(&s->msg, b ? "true" : "false");
			else
				json_quote(&s->msg, f, len);
		}
		sb_adds(&s->msg, "}}\n");
		if (s->msg.len >= 1 << 16 && emit(s) < 0)
			goto out;
	}
	if (r < 0) {
		rc = csv_fail(c);
		goto out;
	}
	rc = emit(s) < 0 ? EXIT_FAIL : 0;
out:
	csv_close(c);
	sb_free(&pre);
	return rc;
}

static int discover(struct sheet *s)
{
	struct sb cat = SB_INIT;
	size_t i;
	int rc;

	if ((rc = fetch(s)) != 0 || (rc = read_header(s)) != 0)
		return rc;
	sb_adds(&cat, "{\"streams\":[{\"tap_stream_id\":");
	json_quote(&cat, s->stream, strlen(s->stream));
	sb_adds(&cat, ",\"stream\":");
	json_quote(&cat, s->stream, strlen(s->stream));
	sb_adds(&cat, ",\"schema\":");
	add_schema(s, &cat);
	sb_adds(&cat, ",\"key_properties\":");
	add_keys(s, &cat);
	sb_adds(&cat, ",\"replication_method\":\"FULL_TABLE\",\"metadata\":[{\"breadcrumb\":[],"
		"\"metadata\":{\"inclusion\":\"available\",\"selected-by-default\":true,"
		"\"table-key-properties\":");
	add_keys(s, &cat);
	sb_adds(&cat, ",\"forced-replication-method\":\"FULL_TABLE\"}}");
	for (i = 0; i < s->ncols; i++) {
		sb_adds(&cat, ",{\"breadcrumb\":[\"properties\",");
		json_quote(&cat, s->cols[i], strlen(s->cols[i]));
		sb_adds(&cat, "],\"metadata\":{\"inclusion\":");
		sb_adds(&cat, singer_tap_in_list(s->keys, s->nkeys, s->cols[i]) ? "\"automatic\"" :
			"\"available\"");
		sb_adds(&cat, ",\"selected-by-default\":true}}");
	}
	sb_adds(&cat, "]}]}");
	rc = singer_tap_print_pretty(cat.buf, cat.len, &s->msg, &s->write_failed);
	sb_free(&cat);
	return rc;
}

static int sheet_config(void *p, const struct singer_tap_args *a)
{
	struct sheet *s = p;

	s->config_file = a->config;
	/* -s is accepted: a full read each run, no bookmark */
	s->catalog_file = a->catalog ? a->catalog : a->properties;
	s->catalog_what = a->catalog ? "catalog" : "properties";
	return load_config(s);
}

static int sheet_discover(void *s)
{
	return discover(s);
}

/* The catalog, then the sheet when it is selected. */
static int sheet_sync(void *p)
{
	struct sheet *s = p;
	int rc;

	if (s->catalog_file != NULL && (rc = load_catalog(s)) != 0)
		return rc;
	return s->selected ? sync_sheet(s) : 0;
}

static int sheet_end(void *p, int rc, int *write_failed)
{
	struct sheet *s = p;

	free(s->id);
	free(s->gid);
	free(s->name);
	free(s->stream);
	singer_tap_free_list(s->keys, s->nkeys);
	singer_tap_free_list(s->drop, s->ndrop);
	singer_tap_free_list(s->cols, s->ncols);
	free(s->type);
	free(s->on);
	free(s->url);
	sb_free(&s->body);
	sb_free(&s->msg);
	*write_failed = s->write_failed;
	return rc;
}

static const struct singer_tap_hooks hooks = {
	.name = "dataspoc-tap-google-sheets-public",
	.usage_line = usage_line,
	.help = help_text,
	.about_json = about_json,
	.config = sheet_config,
	.discover = sheet_discover,
	.sync = sheet_sync,
	.end = sheet_end,
};

/* Parse the options; fetch the sheet and print it (or its catalog). */
int main(int argc, char **argv)
{
	struct sheet s;

	memset(&s, 0, sizeof(s));
	s.selected = 1;
	return singer_tap_main(argc, argv, &hooks, &s);
}
