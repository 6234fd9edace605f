/*
 * jvx: the few accessors of libjq's jv that the programs share, for the
 * files libjq reads (config, catalog, state, manifest, logs): never for
 * record values (lib/json.c keeps those exact).
 */
#ifndef PIPE_JVX_H
#define PIPE_JVX_H

#include <jv.h>

/* obj[key] (obj borrowed, the answer owned); invalid when obj is not an
 * object or has no such key. */
jv jvx_get(jv obj, const char *key);

/* 1 when v (borrowed) is invalid or null: a member that is not there. */
int jvx_absent(jv v);

/* obj[key] when it is a number, else def. */
double jvx_number(jv obj, const char *key, double def);

/* A C copy of the JSON string v (borrowed), or NULL when it holds a NUL. */
char *jvx_cstr(jv v);

/* A C copy of obj[key] when it is a string without a NUL, else NULL. */
char *jvx_string(jv obj, const char *key);

#endif
