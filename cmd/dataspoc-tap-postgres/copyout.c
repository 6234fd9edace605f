/*
 * dataspoc-tap-postgres: COPY ... TO STDOUT with each row read once.
 *
 * libpq's PQgetCopyData() needs a CopyData message whole in its input
 * buffer and then returns a malloc'd copy of it: a row costs twice its size.
 * On a connection that is not encrypted (no SSL, no GSSAPI) the COPY is sent
 * with PQsendQuery() and its messages are read off the socket here, each
 * row's straight into one buffer of its size: CopyOutResponse, CopyData,
 * CopyDone, and the NoticeResponse (printed as libpq prints it),
 * ParameterStatus and NotificationResponse that may come between them: the
 * last two dropped (libpq keeps the parameter's value it had, and queues no
 * notification: the tap asks for neither, LISTENs to nothing, and a server
 * since PostgreSQL 14 reports a parameter's change just before
 * ReadyForQuery, which libpq reads itself).  Any other message (ErrorResponse, or the
 * CommandComplete of a COPY without CopyDone) is only peeked at and left in
 * the socket, as is everything after CopyDone: libpq, still waiting for the
 * query's results (PGASYNC_BUSY), reads them with PQgetResult() as it would
 * after PQgetCopyData() (fe-protocol3.c: in that state CommandComplete is
 * the COPY's result, ErrorResponse its error, ReadyForQuery the end), and
 * the connection goes on.  A connection lost mid-message is left to libpq
 * too: it finds it lost and says so as it always has.
 *
 * An SSL connection is read the same way through libpq's own OpenSSL object
 * (PQsslStruct(conn, "OpenSSL")), with SSL_read() and SSL_peek(): when the
 * COPY is sent libpq's input buffer holds nothing of its reply, and what
 * OpenSSL has decrypted but not handed out stays inside the SSL object,
 * where libpq finds it (its wait asks SSL_pending() before the socket,
 * fe-misc.c pqSocketCheck(); fe-secure-openssl.c pgtls_read() is
 * SSL_read()), so the messages after CopyDone are libpq's as on a plain
 * connection.  SSL_read(), SSL_peek(), SSL_get_error() and
 * ERR_clear_error() are found with dlsym(3) in the libssl and libcrypto
 * libpq brought in (the tap is not linked with -lssl); without them, with
 * another TLS library, or on a GSSAPI-encrypted connection, the rows are
 * read through libpq (PQgetCopyData(): twice the row).  A TLS error or
 * close is left to libpq, as a closed socket is.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <openssl/ssl.h>

#include "err.h"
#include "sb.h"
#include "tap_pg.h"

/* Bytes read at a time from a message whose content is not kept. */
#define SKIP_CHUNK 65536

/* libssl's and libcrypto's calls, found in the process (libpq's) */
static struct {
	int (*read)(SSL *, void *, int);
	int (*peek)(SSL *, void *, int);
	int (*get_error)(const SSL *, int);
	void (*clear_error)(void);
} ossl;

/* ossl filled, once: 0, or -1 when a call is not there */
static int ossl_load(void)
{
	static int state;	/* 0 not tried, 1 there, -1 not */
	static const char *const names[] = { "SSL_read", "SSL_peek", "SSL_get_error", "ERR_clear_error" };
	void *p[4];
	size_t i;

	if (state)
		return state > 0 ? 0 : -1;
	state = -1;
	for (i = 0; i < 4; i++)
		if ((p[i] = dlsym(RTLD_DEFAULT, names[i])) == NULL)
			return -1;
	/* dlsym's object pointers into function pointers (ISO C has no cast for it) */
	memcpy(&ossl.read, &p[0], sizeof(ossl.read));
	memcpy(&ossl.peek, &p[1], sizeof(ossl.peek));
	memcpy(&ossl.get_error, &p[2], sizeof(ossl.get_error));
	memcpy(&ossl.clear_error, &p[3], sizeof(ossl.clear_error));
	state = 1;
	return 0;
}

/* Where the COPY's bytes come from: the socket, or libpq's SSL object on it. */
struct src {
	int fd;
	SSL *ssl;
};

static int wait_fd(int fd, short events)
{
	struct pollfd p = { .fd = fd, .events = events };

	for (;;) {
		int n = poll(&p, 1, -1);

		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/*
 * Up to n bytes (n > 0) of src into buf, waiting for them; with peek they
 * are left there.  The count, or 0 at the connection's end or an error
 * (libpq finds it and says what).
 */
static size_t src_recv(struct src *s, void *buf, size_t n, int peek)
{
	for (;;) {
		short events = POLLIN;

		if (s->ssl) {
			int want = n > INT_MAX ? INT_MAX : (int)n, got;

			ossl.clear_error();	/* SSL_get_error() reads the thread's queue */
			got = peek ? ossl.peek(s->ssl, buf, want) : ossl.read(s->ssl, buf, want);
			if (got > 0)
				return (size_t)got;
			switch (ossl.get_error(s->ssl, got)) {
			case SSL_ERROR_WANT_READ:
				break;
			case SSL_ERROR_WANT_WRITE:
				events = POLLOUT;
				break;
			default:	/* closed (ZERO_RETURN, SYSCALL) or an SSL error: libpq's to say */
				return 0;
			}
		} else {
			ssize_t got = recv(s->fd, buf, n, peek ? MSG_PEEK : 0);

			if (got > 0)
				return (size_t)got;
			if (got == 0)
				return 0;
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				return 0;
		}
		if (wait_fd(s->fd, events) != 0)
			return 0;
	}
}

/*
 * Read n bytes of src into buf (NULL: read and drop them).  0, or -1 at the
 * connection's end or an error (libpq finds it and says what).
 */
static int read_full(struct src *s, char *buf, size_t n)
{
	char skip[SKIP_CHUNK];

	while (n) {
		size_t want = buf ? n : (n < sizeof(skip) ? n : sizeof(skip));
		size_t got = src_recv(s, buf ? buf : skip, want, 0);

		if (got == 0)
			return -1;
		n -= got;
		if (buf)
			buf += got;
	}
	return 0;
}

/* The next message's type, left where it is; -1 at the end or an error. */
static int peek_type(struct src *s)
{
	unsigned char c;

	return src_recv(s, &c, 1, 1) == 1 ? c : -1;
}

/*
 * A NoticeResponse's fields f[0..len) printed as libpq's default notice
 * processor prints them (its default verbosity: severity and message,
 * detail, hint, internal query).
 */
static void notice(const char *f, size_t len)
{
	const char *sev = NULL, *msg = NULL, *detail = NULL, *hint = NULL, *query = NULL;
	const char *end = f + len;
	struct sb out = SB_INIT;

	while (f < end && *f) {
		const char *v = f + 1, *z = memchr(v, '\0', (size_t)(end - v));

		if (z == NULL)
			break;
		switch (*f) {
		case 'S': sev = v; break;
		case 'M': msg = v; break;
		case 'D': detail = v; break;
		case 'H': hint = v; break;
		case 'q': query = v; break;
		}
		f = z + 1;
	}
	if (sev)
		sb_addf(&out, "%s:  ", sev);
	sb_addf(&out, "%s\n", msg ? msg : "");
	if (detail)
		sb_addf(&out, "DETAIL:  %s\n", detail);
	if (hint)
		sb_addf(&out, "HINT:  %s\n", hint);
	if (query)
		sb_addf(&out, "QUERY:  %s\n", query);
	fputs(out.buf, stderr);
	sb_free(&out);
}

/* The rows through libpq (GSSAPI, or an SSL this file cannot read). */
static int copy_libpq(PGconn *conn, int (*row)(void *, const char *, size_t), void *arg, PGresult **bad)
{
	PGresult *res = PQgetResult(conn);
	char *buf;
	int n, rc = 0;

	if (PQresultStatus(res) != PGRES_COPY_OUT) {
		*bad = res;
		while ((res = PQgetResult(conn)) != NULL)
			PQclear(res);
		return -1;
	}
	PQclear(res);
	while ((n = PQgetCopyData(conn, &buf, 0)) > 0) {
		if (rc == 0)
			rc = row(arg, buf, (size_t)n);
		PQfreemem(buf);
	}
	return rc == 0 && n == -2 ? -1 : rc;
}

int copy_out(PGconn *conn, const char *sql, int (*row)(void *, const char *, size_t), void *arg,
	     PGresult **bad, struct sb *why)
{
	char *msg = NULL;
	size_t cap = 0;
	struct src src;
	int rc = 0, failed = 0, type;
	PGresult *res;

	*bad = NULL;
	if (!PQsendQuery(conn, sql))
		return -1;
	src.fd = PQsocket(conn);
	src.ssl = NULL;
	if (PQsslInUse(conn) && ossl_load() == 0)
		src.ssl = PQsslStruct(conn, "OpenSSL");
	if ((PQsslInUse(conn) && src.ssl == NULL) || PQgssEncInUse(conn) || src.fd < 0) {
		rc = copy_libpq(conn, row, arg, bad);
		goto results;
	}
	/* which way the rows come, for the tests */
	if (getenv("DATASPOC_PIPE_PG_DEBUG_COPY"))
		fprintf(stderr, "dataspoc-tap-postgres: COPY read off the %s\n", src.ssl ? "SSL object" : "socket");
	/* (a type 0 is no message's: strchr() would find the string's end) */
	while ((type = peek_type(&src)) > 0 && strchr("HdcNSA", type) != NULL) {
		unsigned char h[5];
		uint32_t len;

		if (read_full(&src, (char *)h, 5) != 0)
			break;
		len = bin_be32(h + 1);
		/* libpq's bounds: a message's length counts itself; only CopyData, a
		 * notice or a notification is ever over 30000 bytes */
		if (len < 4 || len > (uint32_t)INT32_MAX || (len > 30000 && strchr("dNA", type) == NULL)) {
			/* the connection is no use: libpq's words, and libpq finds it closed */
			sb_addf(why, "lost synchronization with server: got message type \"%c\", length %d",
				type, (int32_t)len);
			shutdown(src.fd, SHUT_RDWR);
			failed = 1;
			break;
		}
		len -= 4;
		if (type == 'd' && len == 0)
			continue;	/* an empty CopyData: libpq drops it */
		if ((type == 'd' && rc == 0) || type == 'N') {
			/* the row in one buffer of its size, kept for the next when small */
			if (cap < len || cap > 2 * (size_t)len + BIG_VALUE) {
				free(msg);
				cap = len ? len : 1;
				msg = xmalloc(cap);
			}
			if (read_full(&src, msg, len) != 0)
				break;
			if (type == 'd')
				rc = row(arg, msg, len);
			else
				notice(msg, len);
		} else if (read_full(&src, NULL, len) != 0) {
			break;
		}
		if (type == 'c')
			break;
	}
	free(msg);
results:
	/* CommandComplete and ReadyForQuery, or the error, as libpq reads them */
	while ((res = PQgetResult(conn)) != NULL) {
		if (*bad == NULL && !failed && PQresultStatus(res) != PGRES_COMMAND_OK)
			*bad = res;
		else
			PQclear(res);
	}
	if (rc == 0 && (failed || *bad))
		rc = -1;
	return rc;
}
