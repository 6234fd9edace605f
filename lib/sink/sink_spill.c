/* sink_spill: the records of the streams that wait for a file. */
#include "sink_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "recwriter.h"

/*
 * Spill.  At most max_open files are open at once (each holds a descriptor
 * or, on S3 and Azure, a part buffer; a Parquet file its row group, a
 * JSON-lines file a segment of the compressors' pool).  A stream that has a record while every slot
 * is taken does not close another stream's file: it goes cold, and its
 * records wait, in order, in memory and then in chunks of one spill file
 * (unlinked, in TMPDIR).  When the records waiting, all streams, pass
 * spill_max, the stream with the most waiting takes the slot of the stream
 * idle the longest (whose file is rolled) and lands them; at the end every
 * cold stream lands what waits.  So a tap interleaving more streams than
 * there are slots gets a few files per stream, not one per record, while
 * memory, descriptors and disk stay bounded.
 */
enum { COLD_CHUNK = 8 * 1024, SPILL_BLOCK = 4096 };

struct spill_head {
	uint64_t len;		/* bytes of the record(s) that follow */
	unsigned long long count;	/* records in them */
	unsigned long long lineno;	/* the input line, for messages */
	unsigned long long failed_in;	/* the stream's failed_in then */
};

static int spill_open(struct sink *s)
{
	const char *dir = getenv("TMPDIR");
	char *path;

	if (dir == NULL || *dir == '\0')
		dir = "/tmp";
#ifdef O_TMPFILE
	s->spill_fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (s->spill_fd >= 0)
		return 0;
#endif
	path = xasprintf("%s/pipe-sink-spill.XXXXXX", dir);
	s->spill_fd = mkstemp(path);
	if (s->spill_fd >= 0) {
		unlink(path);
		fcntl(s->spill_fd, F_SETFD, FD_CLOEXEC);
	} else {
		sink_fail(s, "cannot create a spill file in '%s' for the streams beyond %zu open files: %s",
			  dir, s->opt->max_open, strerror(errno));
	}
	free(path);
	return s->spill_fd >= 0 ? 0 : -1;
}

/* The stream's tail in memory, appended to the spill file as one chunk. */
static int spill_chunk(struct sink *s, struct stream *st)
{
	const char *p = st->cold.buf;
	size_t left = st->cold.len;
	/* Chunks start on a block, so that landing one frees all its blocks. */
	uint64_t off = (s->spill_end + SPILL_BLOCK - 1) & ~(uint64_t)(SPILL_BLOCK - 1);

	if (s->spill_fd < 0 && spill_open(s) != 0)
		return -1;
	while (left > 0) {
		ssize_t n = pwrite(s->spill_fd, p, left, (off_t)(off + (st->cold.len - left)));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			sink_fail(s, "cannot write the spill file of stream '%s': %s", st->name,
				  n < 0 ? strerror(errno) : "no progress");
			return -1;
		}
		p += n;
		left -= (size_t)n;
	}
	s->spill_end = off + st->cold.len;
	if (st->nchunks == st->chunks_cap) {
		st->chunks_cap = st->chunks_cap ? st->chunks_cap * 2 : 8;
		st->chunks = xrealloc(st->chunks, st->chunks_cap * sizeof(*st->chunks));
	}
	st->chunks[st->nchunks].off = off;
	st->chunks[st->nchunks++].len = st->cold.len;
	sb_reset(&st->cold);
	return 0;
}

/* Land every entry of buf[0..len) (spill_head + bytes, back to back). */
static int land_entries(struct sink *s, struct stream *st, const char *buf, size_t len)
{
	size_t pos = 0;

	while (pos < len) {
		struct spill_head h;

		memcpy(&h, buf + pos, sizeof(h));
		pos += sizeof(h);
		/* Messages name the line and record the entry came from. */
		s->lineno = h.lineno;
		st->failed_in = h.failed_in;
		if (s->rw->land(s, st, buf + pos, (size_t)h.len, h.count, NULL) != 0)
			return -1;
		pos += (size_t)h.len;
	}
	return 0;
}

/* A cold stream lands every record waiting, and is cold no more. */
int sink_drain(struct sink *s, struct stream *st)
{
	unsigned long long lineno = s->lineno, failed_in = st->failed_in;
	struct sb chunk = SB_INIT;
	size_t i;
	int r = 0;

	for (i = 0; i < st->nchunks && r == 0; i++) {
		size_t want = (size_t)st->chunks[i].len, got = 0;

		sb_reset(&chunk);
		sb_grow(&chunk, want);
		while (got < want) {
			ssize_t n = pread(s->spill_fd, chunk.buf + got, want - got,
					  (off_t)(st->chunks[i].off + got));

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				sink_fail(s, "cannot read the spill file of stream '%s': %s", st->name,
					  n < 0 ? strerror(errno) : "it is shorter than written");
				r = -1;
				break;
			}
			got += (size_t)n;
		}
		if (r == 0)
			r = land_entries(s, st, chunk.buf, want);
		/* Its disk back: the file only grows, what it holds does not.
		 * (Best effort: a file system that cannot keeps the bytes.) */
		if (fallocate(s->spill_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			      (off_t)st->chunks[i].off,
			      (off_t)((st->chunks[i].len + SPILL_BLOCK - 1) &
				      ~(uint64_t)(SPILL_BLOCK - 1))) != 0) {
			/* nothing to do */
		}
	}
	if (r == 0)
		r = land_entries(s, st, st->cold.buf, st->cold.len);
	sb_free(&chunk);
	s->lineno = lineno;
	st->failed_in = failed_in;
	s->waiting -= st->waiting;
	st->waiting = 0;
	st->nchunks = 0;
	sb_free(&st->cold);
	/* Nothing waits any more: the spill file starts again from empty. */
	if (r == 0 && s->waiting == 0 && s->spill_end > 0) {
		if (ftruncate(s->spill_fd, 0) != 0) {
			/* It is only disk: the file is gone at exit. */
		} else {
			s->spill_end = 0;
		}
	}
	return r;
}

/* A record goes to its file, or waits (see above); from: see lib/sink/recwriter.h, land. */
int sink_spill_route(struct sink *s, struct stream *st, const char *bytes, size_t len,
		     unsigned long long count, const struct singer_msg *from)
{
	struct spill_head h;

	if (st->waiting > 0 && s->open < s->opt->max_open && sink_drain(s, st) != 0)
		return -1;
	if (st->waiting == 0 && (st->file || s->open < s->opt->max_open))
		return s->rw->land(s, st, bytes, len, count, from);
	memset(&h, 0, sizeof(h));
	h.len = len;
	h.count = count;
	h.lineno = s->lineno;
	h.failed_in = st->failed_in;
	sb_add(&st->cold, (const char *)&h, sizeof(h));
	sb_add(&st->cold, bytes, len);
	st->waiting += sizeof(h) + len;
	s->waiting += sizeof(h) + len;
	if (st->cold.len >= COLD_CHUNK && spill_chunk(s, st) != 0)
		return -1;
	if (s->waiting > s->opt->spill_max) {
		struct stream *most = st;
		size_t i;

		for (i = 0; i < s->n; i++) {
			if (s->streams[i].waiting > most->waiting)
				most = &s->streams[i];
		}
		return sink_drain(s, most);
	}
	return 0;
}
