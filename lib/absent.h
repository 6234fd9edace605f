/*
 * absent: a property a record of an upsert stream leaves out keeps the
 * table's value (issue #27); one present as null sets null.  LOG_BASED
 * taps leave out a large (TOASTed) column an UPDATE did not change
 * (pgoutput's 'u', wal2json's omitted column; dataspoc-tap-postgres says
 * so once in a warning).  A Parquet file has no "absent", only null:
 * pipe-sink notes the properties of the stream's SCHEMA a record leaves
 * out in a member of its own, ABSENT_MEMBER, which lands in the staged
 * file's extra column; pipe-merge fills them from the key's version before
 * (an earlier record of the run, else the table's row) and drops the
 * member, so that it never reaches the table.
 */
#ifndef PIPE_ABSENT_H
#define PIPE_ABSENT_H

#include <stddef.h>

#include "sb.h"

#define ABSENT_MEMBER "_dataspoc_absent"

/*
 * The properties JSON Schema schema[0..len) declares, but the Singer
 * metadata (_sdc_*: of the record, not the row), NULL-terminated; NULL
 * when none.
 */
char **absent_props(const char *schema, size_t len);

/*
 * When record rec[0..len) (a JSON object) leaves out some of props:
 * 1, and out holds rec with ABSENT_MEMBER, an array of their names, added
 * last; else 0 (out untouched).
 */
int absent_mark(const char *rec, size_t len, char *const *props, struct sb *out);

/* Whether rec[0..len) may carry ABSENT_MEMBER (a quick look for its name). */
int absent_marked(const char *rec, size_t len);

/*
 * rec[0..len) (a JSON object that carries ABSENT_MEMBER) into out, each
 * property it names taken from prev[0..plen), the key's version before
 * (NULL: none): prev's value when prev has the property; still absent
 * (named in ABSENT_MEMBER again) when prev names it absent too; else
 * left out (a null).  The member goes when nothing is absent any more.
 * 0, or -1 when rec (or prev) is not a JSON object.
 */
int absent_fill(const char *rec, size_t len, const char *prev, size_t plen, struct sb *out);

#endif
