/*
 * http_text: the text the stores' requests and answers are made of, no
 * network: percent-encoding as S3 and Azure both want it, query
 * parameters, and the little XML both answer with.  Only the stores
 * (s3*.c, azure*.c) and the unit tests include this header.
 */
#ifndef PIPE_HTTP_TEXT_H
#define PIPE_HTTP_TEXT_H

#include <stddef.h>

#include "sb.h"

/* One query parameter; value NULL is the empty value. */
struct http_param {
	const char *name;
	const char *value;
};

/*
 * Percent-encode s[0..len) as S3, SigV4 and Azure want a path or a query
 * value: A-Z a-z 0-9 - _ . ~ stay, '/' stays when keep_slash, every other
 * byte becomes %XX (upper-case hex; UTF-8 bytes one by one).  Appended to
 * out.
 */
void http_uri_encode(struct sb *out, const char *s, size_t len, int keep_slash);

/*
 * Decode %XX escapes of s[0..len) into out (appended); with plus, '+' is a
 * space (form encoding, as S3's encoding-type=url uses).  -1 on a bad
 * escape or a decoded NUL (out then holds what came before), else 0.
 */
int http_url_decode(struct sb *out, const char *s, size_t len, int plus);

/*
 * XML, as much as the stores' answers need: the text of the next element
 * named tag ("<Key>...</Key>" or "<Key attr=...>...") found from *pos,
 * entities decoded (&amp; &lt; &gt; &quot; &apos; &#N; &#xH;), appended to
 * out after resetting it.  *pos moves past the element.  1 found, 0 none.
 */
int http_xml_next(const char *xml, size_t len, const char *tag, size_t *pos, struct sb *out);

/* Decode the entities of s[0..len) into out (appended); unknown ones stay. */
void http_xml_unescape(struct sb *out, const char *s, size_t len);

/* Escape & < > " ' for element text.  Appended to out. */
void http_xml_escape(struct sb *out, const char *s);

/* The first needle (a string) in hay[from..len): its offset, or len when absent. */
size_t http_find(const char *hay, size_t len, size_t from, const char *needle);

#endif
