/* str: see str.h. */
#include "base/str.h"

#include <stdlib.h>
#include <string.h>

char *str_replace_all(const char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to), n = 0;
	if (!fl)
		return strdup(s);
	for (const char *p = s; (p = strstr(p, from)); p += fl)
		n++;
	char *out = malloc(strlen(s) + n * (tl > fl ? tl - fl : 0) + 1);
	if (!out)
		return NULL;
	char *w = out;
	for (const char *p = s;;) {
		const char *q = strstr(p, from);
		if (!q) {
			memcpy(w, p, strlen(p) + 1);
			break;
		}
		memcpy(w, p, (size_t)(q - p));
		w += q - p;
		memcpy(w, to, tl);
		w += tl;
		p = q + fl;
	}
	return out;
}
