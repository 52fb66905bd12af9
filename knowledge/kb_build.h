/* kb_build: turns the knowledge sources (knowledge/gpu-facts/ CSVs and
 * SOURCES.md, knowledge/schema.sql, knowledge/guides/ Markdown) into one sqlite
 * database. Deterministic: same sources, same bytes (fixed page size, rows
 * inserted in sorted order, VACUUM, no timestamps). Used by build/kb-build
 * and by tests. */
#ifndef KF_KB_BUILD_H
#define KF_KB_BUILD_H

#include "base/kf_err.h"

/* Builds out_path (replaced atomically: written to out_path.tmp, renamed)
 * from src_dir (borrowed; contains schema.sql, gpu-facts/, guides/). A
 * missing guides/ folder is allowed (no guides). Fails, naming the file (and
 * line or row and field), with KF_EINVAL on: a guide without front matter or
 * without id/title/tags/archs/sources, a duplicate guide id, a
 * kforge://guides/<id> link to no guide, a known GPU figure whose row has no
 * source or whose source names no key of SOURCES.md, a malformed CSV;
 * KF_EIO on unreadable files; KF_EDB on sqlite errors. */
int kb_build(const char *src_dir, const char *out_path, struct kf_err *err)
	__attribute__((warn_unused_result));

#endif
