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
 * too: it finds it lost and says so as it always has.  An encrypted
 * connection is read through libpq.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "err.h"
#include "sb.h"
#include "tap_pg.h"

/* Bytes read at a time from a message whose content is not kept. */
#define SKIP_CHUNK 65536

static int wait_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		int n = poll(&p, 1, -1);

		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/*
 * Read n bytes of fd into buf (NULL: read and drop them).  0, or -1 at the
 * connection's end or an error (libpq finds it and says what).
 */
static int read_full(int fd, char *buf, size_t n)
{
	char skip[SKIP_CHUNK];

	while (n) {
		size_t want = buf ? n : (n < sizeof(skip) ? n : sizeof(skip));
		ssize_t got = recv(fd, buf ? buf : skip, want, 0);

		if (got > 0) {
			n -= (size_t)got;
			if (buf)
				buf += got;
		} else if (got == 0) {
			return -1;
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (wait_readable(fd) != 0)
				return -1;
		} else if (errno != EINTR) {
			return -1;
		}
	}
	return 0;
}

/* The next message's type, left in the socket; -1 at the end or an error. */
static int peek_type(int fd)
{
	unsigned char c;

	for (;;) {
		ssize_t got = recv(fd, &c, 1, MSG_PEEK);

		if (got == 1)
			return c;
		if (got == 0)
			return -1;
		if (errno == EAGAIN || errno == EWOULDBLOCK) {
			if (wait_readable(fd) != 0)
				return -1;
		} else if (errno != EINTR) {
			return -1;
		}
	}
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

/* The rows through libpq (an encrypted connection). */
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
	int fd, rc = 0, failed = 0, type;
	PGresult *res;

	*bad = NULL;
	if (!PQsendQuery(conn, sql))
		return -1;
	fd = PQsocket(conn);
	if (PQsslInUse(conn) || PQgssEncInUse(conn) || fd < 0) {
		rc = copy_libpq(conn, row, arg, bad);
		goto results;
	}
	/* (a type 0 is no message's: strchr() would find the string's end) */
	while ((type = peek_type(fd)) > 0 && strchr("HdcNSA", type) != NULL) {
		unsigned char h[5];
		uint32_t len;

		if (read_full(fd, (char *)h, 5) != 0)
			break;
		len = bin_be32(h + 1);
		/* libpq's bounds: a message's length counts itself; only CopyData, a
		 * notice or a notification is ever over 30000 bytes */
		if (len < 4 || len > (uint32_t)INT32_MAX || (len > 30000 && strchr("dNA", type) == NULL)) {
			/* the connection is no use: libpq's words, and libpq finds it closed */
			sb_addf(why, "lost synchronization with server: got message type \"%c\", length %d",
				type, (int32_t)len);
			shutdown(fd, SHUT_RDWR);
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
			if (read_full(fd, msg, len) != 0)
				break;
			if (type == 'd')
				rc = row(arg, msg, len);
			else
				notice(msg, len);
		} else if (read_full(fd, NULL, len) != 0) {
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
