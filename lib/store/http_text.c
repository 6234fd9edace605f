/*
 * http_text: the text of the stores' requests and answers, no network:
 * percent-encoding, and the little XML that S3 and Azure answer with
 * (http_text.h).
 */
#include "http_text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"

static int unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '~';
}

void http_uri_encode(struct sb *out, const char *s, size_t len, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i;

	sb_grow(out, len);
	sb_add(out, "", 0);	/* NUL-terminated even when nothing follows */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (unreserved(c) || (keep_slash && c == '/')) {
			sb_addc(out, (char)c);
		} else {
			char e[3] = { '%', hex[c >> 4], hex[c & 15] };

			sb_add(out, e, 3);
		}
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int http_url_decode(struct sb *out, const char *s, size_t len, int plus)
{
	size_t i;

	sb_grow(out, len);
	sb_add(out, "", 0);	/* NUL-terminated even when nothing follows */
	for (i = 0; i < len; i++) {
		char c = s[i];

		if (c == '%') {
			int hi, lo;

			if (i + 2 >= len)
				return -1;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return -1;
			sb_addc(out, (char)(hi * 16 + lo));
			i += 2;
		} else if (c == '+' && plus) {
			sb_addc(out, ' ');
		} else if (c == '\0') {
			return -1;
		} else {
			sb_addc(out, c);
		}
	}
	return 0;
}

/* Append the UTF-8 encoding of code point cp; 0, or -1 when cp is not one. */
static int add_utf8(struct sb *out, unsigned long cp)
{
	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return -1;
	if (cp < 0x80) {
		sb_addc(out, (char)cp);
	} else if (cp < 0x800) {
		sb_addc(out, (char)(0xC0 | (cp >> 6)));
		sb_addc(out, (char)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		sb_addc(out, (char)(0xE0 | (cp >> 12)));
		sb_addc(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
		sb_addc(out, (char)(0x80 | (cp & 0x3F)));
	} else {
		sb_addc(out, (char)(0xF0 | (cp >> 18)));
		sb_addc(out, (char)(0x80 | ((cp >> 12) & 0x3F)));
		sb_addc(out, (char)(0x80 | ((cp >> 6) & 0x3F)));
		sb_addc(out, (char)(0x80 | (cp & 0x3F)));
	}
	return 0;
}

void http_xml_unescape(struct sb *out, const char *s, size_t len)
{
	static const struct {
		const char *name;
		char c;
	} named[] = {
		{ "amp", '&' }, { "lt", '<' }, { "gt", '>' }, { "quot", '"' }, { "apos", '\'' },
	};
	size_t i;

	sb_grow(out, len);
	sb_add(out, "", 0);	/* NUL-terminated even when nothing follows */
	for (i = 0; i < len; i++) {
		const char *semi;
		size_t n, k;

		if (s[i] != '&') {
			sb_addc(out, s[i]);
			continue;
		}
		semi = memchr(s + i, ';', len - i < 12 ? len - i : 12);
		if (semi == NULL) {
			sb_addc(out, '&');
			continue;
		}
		n = (size_t)(semi - (s + i)) - 1;	/* between '&' and ';' */
		for (k = 0; k < sizeof(named) / sizeof(named[0]); k++) {
			if (strlen(named[k].name) == n && memcmp(s + i + 1, named[k].name, n) == 0)
				break;
		}
		if (k < sizeof(named) / sizeof(named[0])) {
			sb_addc(out, named[k].c);
			i += n + 1;
			continue;
		}
		if (n >= 2 && s[i + 1] == '#') {
			int base = (s[i + 2] == 'x' || s[i + 2] == 'X') ? 16 : 10;
			size_t d = base == 16 ? 2 : 1, j;
			unsigned long cp = 0;
			int good = d < n;
			size_t keep = out->len;

			for (j = d; j < n && good; j++) {
				int v = base == 16 ? hexval(s[i + 1 + j]) :
					(isdigit((unsigned char)s[i + 1 + j]) ? s[i + 1 + j] - '0' : -1);

				if (v < 0 || cp > 0x10FFFF)
					good = 0;
				else
					cp = cp * (unsigned long)base + (unsigned long)v;
			}
			if (good && add_utf8(out, cp) == 0) {
				i += n + 1;
				continue;
			}
			out->len = keep;
			out->buf[keep] = '\0';
		}
		sb_addc(out, '&');
	}
}

void http_xml_escape(struct sb *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': sb_adds(out, "&amp;"); break;
		case '<': sb_adds(out, "&lt;"); break;
		case '>': sb_adds(out, "&gt;"); break;
		case '"': sb_adds(out, "&quot;"); break;
		case '\'': sb_adds(out, "&apos;"); break;
		default: sb_addc(out, *s);
		}
	}
}

size_t http_find(const char *hay, size_t len, size_t from, const char *needle)
{
	size_t nlen = strlen(needle), i;

	if (nlen == 0 || len < nlen)
		return len;
	for (i = from; i + nlen <= len; i++) {
		if (hay[i] == needle[0] && memcmp(hay + i, needle, nlen) == 0)
			return i;
	}
	return len;
}

int http_xml_next(const char *xml, size_t len, const char *tag, size_t *pos, struct sb *out)
{
	size_t tlen = strlen(tag), i = *pos;
	char *close = xasprintf("</%s>", tag);
	int found = 0;

	sb_reset(out);
	while (i < len) {
		size_t start, end;
		char after;

		i = http_find(xml, len, i, "<");
		if (i + 1 + tlen >= len)
			break;
		if (memcmp(xml + i + 1, tag, tlen) != 0) {
			i++;
			continue;
		}
		after = xml[i + 1 + tlen];
		if (after != '>' && after != ' ' && after != '/' && after != '\t' &&
		    after != '\n' && after != '\r') {
			i++;
			continue;
		}
		start = http_find(xml, len, i, ">");
		if (start == len)
			break;
		if (xml[start - 1] == '/') {
			/* <Tag/>: empty */
			*pos = start + 1;
			if (out->buf == NULL)
				sb_adds(out, "");
			found = 1;
			break;
		}
		start++;
		end = http_find(xml, len, start, close);
		if (end == len)
			break;
		http_xml_unescape(out, xml + start, end - start);
		if (out->buf == NULL)
			sb_adds(out, "");
		*pos = end + tlen + 3;
		found = 1;
		break;
	}
	free(close);
	return found;
}
