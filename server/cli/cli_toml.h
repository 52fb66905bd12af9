/* cli_toml: replaces one table of a TOML document, keeping every other byte
 * (`kforge mcp-config codex --write` on ~/.codex/config.toml). The document
 * is scanned against TOML 1.0's grammar first; what the scanner cannot read
 * is refused with the line and the reason, never rewritten. */
#ifndef KF_CLI_TOML_H
#define KF_CLI_TOML_H

#include <stddef.h>

#include "base/kf_err.h"

#define CLI_TOML_MAX_BYTES (1u << 20) /* documents larger than this: KF_ETOOBIG */

/* Sets table name (bare keys joined by dots, e.g. "mcp_servers.kforge") in
 * the TOML text doc (len bytes, borrowed) to block (borrowed: a header line
 * [name] and its keys, ending in a newline). Every [name] table and its
 * sub-tables [name.*] are replaced by block at the place of the first (more
 * than one [name] is a document an earlier append broke; they become one);
 * without one, block is appended after a blank line. Everything else is
 * copied byte for byte. Returns 0 with *out (new, free with free(), NUL
 * terminated) and *out_len, and *replaced = the number of [name] tables
 * found; KF_EINVAL naming the line when doc is not TOML the scanner can
 * read, has a duplicate key or table, or sets name some other way (dotted
 * keys, an inline table, [[name]]); KF_ETOOBIG past CLI_TOML_MAX_BYTES or
 * the scanner's limits. */
int cli_toml_set_table(const char *doc, size_t len, const char *name, const char *block, char **out,
		       size_t *out_len, int *replaced, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
