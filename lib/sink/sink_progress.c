/* sink_progress: how far each stream is, on stderr. */
#include "sink_impl.h"

#include <unistd.h>

#include "util.h"

/* A stream's records, its parts' (partition_by) added. */
static unsigned long long records_of(const struct sink *s, const struct stream *st)
{
	unsigned long long records = st->records, base = 0;

	sink_part_sum(s, st, &records, &base);
	return records;
}

void sink_progress(struct sink *s, int final)
{
	struct sb out = SB_INIT;
	size_t i;

	if (!s->opt->progress)
		return;
	if (s->tty && !final) {
		struct stream *st = s->last;

		if (st == NULL)
			return;
		unsigned long long n = records_of(s, st);

		sb_addf(&out, "\r\033[K  %s: ", st->name);
		sb_add_thousands(&out, n);
		sb_adds(&out, n == 1 ? " record..." : " records...");
		s->live = 1;
	} else {
		if (s->live)
			sb_adds(&out, "\r\033[K");
		s->live = 0;
		for (i = 0; i < s->n; i++) {
			struct stream *st = &s->streams[i];
			unsigned long long n;

			if (st->dropped || st->parent)
				continue;
			n = records_of(s, st);
			if (!final && n == st->shown)
				continue;
			st->shown = n;
			sb_addf(&out, "  %s: ", st->name);
			sb_add_thousands(&out, n);
			sb_adds(&out, n == 1 ? " record...\n" : " records...\n");
		}
	}
	if (out.len && write(STDERR_FILENO, out.buf, out.len) < 0) {
		/* progress is best effort */
	}
	sb_free(&out);
}

void sink_maybe_progress(struct sink *s)
{
	double now;

	if (!s->opt->progress)
		return;
	now = util_now();
	if (now < s->next_progress)
		return;
	s->next_progress = now + (s->tty ? 0.2 : 10.0);
	sink_progress(s, 0);
}
