#include "jvx.h"

#include <string.h>

#include "err.h"

jv jvx_get(jv obj, const char *key)
{
	if (jv_get_kind(obj) != JV_KIND_OBJECT)
		return jv_invalid();
	return jv_object_get(jv_copy(obj), jv_string(key));
}

int jvx_absent(jv v)
{
	return !jv_is_valid(v) || jv_get_kind(v) == JV_KIND_NULL;
}

double jvx_number(jv obj, const char *key, double def)
{
	jv v = jvx_get(obj, key);
	double d = jv_get_kind(v) == JV_KIND_NUMBER ? jv_number_value(v) : def;

	jv_free(v);
	return d;
}

char *jvx_cstr(jv v)
{
	const char *s = jv_string_value(v);
	size_t n = (size_t)jv_string_length_bytes(jv_copy(v));

	if (memchr(s, '\0', n) != NULL)
		return NULL;
	return xstrndup(s, n);
}

char *jvx_string(jv obj, const char *key)
{
	jv v = jvx_get(obj, key);
	char *s = jv_get_kind(v) == JV_KIND_STRING ? jvx_cstr(v) : NULL;

	jv_free(v);
	return s;
}
