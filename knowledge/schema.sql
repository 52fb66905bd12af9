-- knowledge.db schema, applied by kb-build (knowledge/kb_build.c) to a fresh
-- database before the sources are imported. Read-only at run time
-- (knowledge/kb.c). Conventions: an unknown figure is a row with status
-- 'unknown' and NULL value (never 0); 'n/a' means the format or feature does
-- not exist on that hardware; every 'known' figure names its source text and
-- at least one key of `sources`. Derived figures (ridge points, occupancy,
-- feature usability) are computed by kb.c at query time and never stored.
-- No timestamps anywhere: the same sources give the same bytes.

CREATE TABLE meta (
	key TEXT PRIMARY KEY,
	value TEXT NOT NULL
) WITHOUT ROWID;

-- Source keys table of gpu-facts/SOURCES.md ("PG-LEG", "H100-WP", ...);
-- the DQ-* row is expanded into one key per device query ("DQ-T4", ...).
CREATE TABLE sources (
	key TEXT PRIMARY KEY,
	title TEXT NOT NULL,      -- what the source is, with its URL when given
	where_read TEXT NOT NULL  -- which archived copy was read
) WITHOUT ROWID;

-- Known conflicts between sources ("C1" ...), as SOURCES.md resolves them.
CREATE TABLE conflicts (
	id TEXT PRIMARY KEY,
	title TEXT NOT NULL,
	text TEXT NOT NULL
) WITHOUT ROWID;

-- Metadata of each figure column: label, unit, kind.
CREATE TABLE fields (
	field TEXT PRIMARY KEY,
	ord INTEGER NOT NULL UNIQUE,
	label TEXT NOT NULL,
	unit TEXT NOT NULL,
	kind TEXT NOT NULL CHECK (kind IN ('product', 'per_cc', 'feature'))
) WITHOUT ROWID;

-- One row per GPU of gpu-facts/gpus.csv, in file order.
CREATE TABLE gpus (
	id TEXT PRIMARY KEY,            -- canonical id from knowledge/aliases.csv
	ord INTEGER NOT NULL UNIQUE,    -- row order in gpus.csv
	name TEXT NOT NULL,
	form_factor TEXT NOT NULL,
	architecture TEXT NOT NULL,
	compute_capability TEXT NOT NULL, -- "9.0"
	cc_major INTEGER NOT NULL,
	cc_minor INTEGER NOT NULL,
	sm_target TEXT NOT NULL,        -- as written: "sm_90a (sm_90 baseline)"
	best_target TEXT NOT NULL,      -- first sm_XY[a|f] in sm_target
	derived_fields TEXT NOT NULL,   -- the source list's own derivations
	notes TEXT NOT NULL,
	sources_product TEXT NOT NULL,
	sources_per_cc_limits TEXT NOT NULL,
	conflicts TEXT NOT NULL         -- comma-separated conflict ids
) WITHOUT ROWID;

-- Every figure of every GPU, one row per (gpu, column).
CREATE TABLE gpu_figures (
	gpu_id TEXT NOT NULL REFERENCES gpus(id),
	field TEXT NOT NULL REFERENCES fields(field),
	status TEXT NOT NULL CHECK (status IN ('known', 'unknown', 'n/a')),
	value REAL,           -- numeric figures when known, else NULL
	text TEXT NOT NULL,   -- the cell as written ('' when unknown)
	source TEXT,          -- its figure_sources.csv line, else the row's text for this kind; NULL when n/a; for an unknown figure its line's gap ("no NVIDIA source: ...") or NULL
	derivation TEXT NOT NULL, -- how SOURCES.md derived it ('' when read directly)
	PRIMARY KEY (gpu_id, field),
	CHECK (status <> 'known' OR source IS NOT NULL)
) WITHOUT ROWID;

-- Per-figure source ids: the keys of `sources` named by the figure's source.
CREATE TABLE figure_sources (
	gpu_id TEXT NOT NULL,
	field TEXT NOT NULL,
	source_key TEXT NOT NULL REFERENCES sources(key),
	PRIMARY KEY (gpu_id, field, source_key)
) WITHOUT ROWID;

-- gpu-facts/per_cc.csv: per compute capability limits and flags.
CREATE TABLE per_cc (
	cc TEXT PRIMARY KEY,  -- "9.0"
	cc_major INTEGER NOT NULL,
	cc_minor INTEGER NOT NULL,
	architecture TEXT NOT NULL,
	sm_target TEXT NOT NULL,
	sources TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE per_cc_figures (
	cc TEXT NOT NULL REFERENCES per_cc(cc),
	field TEXT NOT NULL,
	status TEXT NOT NULL CHECK (status IN ('known', 'unknown', 'n/a')),
	value REAL,
	text TEXT NOT NULL,
	PRIMARY KEY (cc, field)
) WITHOUT ROWID;

CREATE TABLE per_cc_sources (
	cc TEXT NOT NULL,
	source_key TEXT NOT NULL REFERENCES sources(key),
	PRIMARY KEY (cc, source_key)
) WITHOUT ROWID;

-- Aliases, normalized (lower case, only [a-z0-9.], leading "nvidia",
-- "geforce", "tesla" dropped). An alias naming several GPUs is a group;
-- rank 0 is the canonical pick, then table order.
CREATE TABLE aliases (
	alias TEXT NOT NULL,
	gpu_id TEXT NOT NULL REFERENCES gpus(id),
	rank INTEGER NOT NULL,
	PRIMARY KEY (alias, gpu_id)
) WITHOUT ROWID;

-- Guides: Markdown with front matter (id, title, tags, archs, sources,
-- checked).
CREATE TABLE guides (
	id TEXT PRIMARY KEY,
	title TEXT NOT NULL,
	tags TEXT NOT NULL,    -- comma-separated
	archs TEXT NOT NULL,   -- comma-separated as written
	sources TEXT NOT NULL, -- newline-separated
	related TEXT NOT NULL, -- comma-separated ids (front matter `related`)
	links TEXT NOT NULL,   -- comma-separated ids linked as kforge://guides/<id>
	body TEXT NOT NULL,    -- Markdown after the front matter
	path TEXT NOT NULL,    -- file name under guides/
	checked TEXT NOT NULL  -- which GPUs and CUDA version the advice was checked on
) WITHOUT ROWID;

CREATE TABLE guide_tags (
	guide_id TEXT NOT NULL REFERENCES guides(id),
	tag TEXT NOT NULL,
	PRIMARY KEY (tag, guide_id)
) WITHOUT ROWID;

-- Which compute capabilities a guide applies to: cc = major*10+minor;
-- plus = 1 for "sm_80+" (that CC and newer); any = 1 for "all"; fam = 1
-- for a plain or family target ("sm_80", "sm_100f", "hopper"), which also
-- covers the later minors of its major (sm_80 code runs on 8.6 and 8.9),
-- while an arch-specific "sm_90a" covers exactly 9.0.
CREATE TABLE guide_archs (
	guide_id TEXT NOT NULL REFERENCES guides(id),
	cc INTEGER NOT NULL,
	plus INTEGER NOT NULL,
	any INTEGER NOT NULL,
	fam INTEGER NOT NULL,
	PRIMARY KEY (guide_id, cc, plus, any, fam)
) WITHOUT ROWID;

-- Full-text index, ranked by kf_rank (kb_guides.c: per-field BM25, weights
-- id 1, title 2, tags 1, body 1). Porter stemming over unicode61.
CREATE VIRTUAL TABLE guides_fts USING fts5(
	id, title, tags, body,
	tokenize = 'porter unicode61'
);
