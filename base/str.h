/* str: string building shared by the layers that rewrite text (op templates,
 * compiler messages). */
#ifndef KF_STR_H
#define KF_STR_H

/* Returns a new copy of s with every occurrence of from replaced by to,
 * scanning left to right without overlaps (free with free()); a copy of s
 * when from is "". NULL when out of memory. s, from, to: borrowed. */
char *str_replace_all(const char *s, const char *from, const char *to);

#endif
