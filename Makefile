# kforge — one Makefile. `make` builds the daemon, the harness, the knowledge
# base and the kernel library; `make run` starts the daemon over HTTP;
# `make test` runs every CPU test. V=1 shows the commands.
# Each folder builds into one static library, so a test links only the
# modules it needs (see TEST_DEPS_* below).

PREFIX ?= /usr/local
CC ?= cc
CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
# The kernels' fatbin covers these real targets plus PTX for the newest, so
# the baselines run on any GPU from Turing on.
KERNEL_ARCHS ?= 75 80 86 89 90
B := build

ifeq ($(V),1)
Q :=
else
Q := @
endif

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEB_PKGS := libjansson-dev libmicrohttpd-dev libsqlite3-dev check pkg-config \
	bubblewrap clang wrk chromium curl python3 slurm-wlm munge python3-jsonschema

WARN := -Wall -Wextra -Werror -Wstrict-prototypes
CFLAGS ?= -O2 -g
ALL_CFLAGS = -std=c11 $(WARN) -D_GNU_SOURCE -I. -I$(CUDA_HOME)/include \
	-MMD -MP $(CFLAGS) $(EXTRA_CFLAGS)
LDLIBS_BASE := -ljansson -lmicrohttpd -lsqlite3 -lpthread -lm -ldl
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm -lpthread)

# --- module sources -------------------------------------------------------
# One static library per subsystem (a folder); MODULES lists them bottom-up
# and DEPS_<m> names what each may use, so a call into an undeclared module
# fails the link of that module's check (`make lint`, tests/lint/).
MODULES := base kernels kb jail compile spec pool history exec dataset check torchop profile model mcp tools transport cli app
SRC_base := $(wildcard base/*.c)
SRC_kernels := $(wildcard kernels/*.c kernels/ref/*.c)
SRC_kb := $(filter-out knowledge/kb_build_main.c,$(wildcard knowledge/*.c))
SRC_jail := $(wildcard sandbox/jail/*.c)
SRC_compile := $(wildcard sandbox/compile/*.c)
SRC_spec := $(wildcard sandbox/spec/*.c)
SRC_pool := $(wildcard sandbox/pool/*.c)
SRC_history := $(wildcard sandbox/history/*.c)
SRC_exec := $(wildcard sandbox/exec/*.c)
SRC_dataset := $(wildcard sandbox/dataset/*.c)
SRC_check := $(wildcard sandbox/check/*.c)
SRC_model := $(wildcard sandbox/model/*.c)
SRC_torchop := $(wildcard sandbox/torchop/*.c)
SRC_profile := $(wildcard sandbox/profile/*.c)
SRC_mcp := $(wildcard server/mcp/*.c)
SRC_tools := $(wildcard server/tools/*.c)
SRC_transport := $(wildcard server/transport/*.c)
SRC_cli := $(wildcard server/cli/*.c)
SRC_app := server/app.c
HARNESS_SRC := $(wildcard sandbox/harness/*.c)
KERNELS_CU := $(wildcard kernels/*.cu)

# What each module may call (its direct dependencies; the rest of the list
# is below it). tests/lint/ checks every library's undefined symbols and
# every #include against these lines.
DEPS_base :=
DEPS_kernels := base
DEPS_kb := kernels base
DEPS_jail := base
DEPS_pool := base
DEPS_history := base
DEPS_exec := history base
DEPS_dataset := history compile kernels base
DEPS_spec := kernels base
DEPS_compile := kb pool jail base
DEPS_check := compile spec history pool jail kb kernels base
DEPS_torchop := check compile spec pool jail kernels base
DEPS_profile := check compile spec pool jail kernels base
DEPS_model := pool jail base
DEPS_mcp := base
DEPS_tools := mcp torchop profile exec check model compile spec history pool kb kernels base
DEPS_transport := mcp base
DEPS_app := tools transport mcp exec check compile history pool kb base
DEPS_cli := app tools transport mcp torchop profile exec dataset check model compile spec history pool kb kernels base

obj = $(patsubst %.c,$(B)/%.o,$(1))
$(foreach m,$(MODULES),$(eval LIB_$(m) := $(B)/libkf_$(m).a))
# Link order: dependents first.
LINK_ORDER := cli app transport tools mcp dataset model torchop profile check exec history spec compile pool jail kb kernels base
ALL_LIBS := $(foreach m,$(LINK_ORDER),$(LIB_$(m)))

BIN := $(B)/kforge
HARNESS := $(B)/kforge-harness
KB_BUILD := $(B)/kb-build
NVRTC_HELPER := $(B)/kforge-nvrtc
KB_DB := $(B)/knowledge.db
FATBIN := $(B)/kernels/kernels.fatbin
SKILL_REFS := skill/references/README.md
SKILL_SPECS := skill/templates/specs/README.md

# test runs the proto suites after test-unit (below).
.PHONY: all run test test-unit test-gpu bench bench-protocol bench-check bench-kernels bench-kb asan lint fuzz \
	install clean deps check-deps
.DEFAULT_GOAL := all

# The CPU pieces (no nvcc run): what test-unit needs.
CPU_TARGETS := $(BIN) $(HARNESS) $(KB_DB) $(SKILL_REFS) $(SKILL_SPECS) $(NVRTC_HELPER)
all: $(B)/.deps-ok $(CPU_TARGETS) $(FATBIN)

# --- dependencies ---------------------------------------------------------
# The MCP conformance suite and the SDK tests run under Node (npx): Debian's
# nodejs and npm are installed only when npx is missing (a NodeSource node
# brings npx and conflicts with Debian's npm).
deps:
	$(SUDO) apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(DEB_PKGS)
	command -v npx >/dev/null || DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm

# Checks headers and tools; a plain `make` never installs anything: it names
# what is missing and fails. `make run` and `make test` install it instead
# (deps-auto).
DEPS_CHECK = for h in jansson.h:libjansson-dev microhttpd.h:libmicrohttpd-dev \
		sqlite3.h:libsqlite3-dev check.h:check; do \
		printf '\#include <%s>\n' $${h%%:*} | $(CC) -E -x c - >/dev/null 2>&1 || \
		{ echo "missing $${h%%:*} (Debian package $${h\#*:})"; exit 1; }; \
	done; \
	command -v bwrap >/dev/null || { echo "missing bwrap (Debian package bubblewrap)"; exit 1; }
$(B)/.deps-ok:
	$(Q)mkdir -p $(B)
	$(Q)( $(DEPS_CHECK) ) || { echo "kforge: run \`make deps\` to install what is missing"; exit 1; }
	$(Q)touch $@

.PHONY: deps-auto
deps-auto:
	$(Q)( $(DEPS_CHECK) ) >/dev/null 2>&1 || { echo "kforge: dependencies missing: running make deps"; \
		$(MAKE) --no-print-directory deps; }
	$(Q)mkdir -p $(B) && ( $(DEPS_CHECK) ) && touch $(B)/.deps-ok

# --- objects and libraries ------------------------------------------------
# The web page is embedded with .incbin; -MMD does not see it.
$(B)/server/transport/web.o: server/transport/web/index.html
$(B)/sandbox/torchop/torchop_verify.o: sandbox/torchop/verify.py
$(B)/sandbox/check/check_pyworker.o: sandbox/check/torch_worker.py
$(B)/sandbox/torchop/torchop_export.o: $(wildcard sandbox/torchop/export/*.py)

$(B)/%.o: %.c | $(B)/.deps-ok
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) -c -o $@ $<

define LIB_RULE
$$(LIB_$(1)): $$(call obj,$(2))
	@mkdir -p $$(dir $$@)
	@$$(if $$(Q),echo "  AR      $$@")
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call LIB_RULE,$(m),$(SRC_$(m)))))

$(BIN): $(B)/server/main.o $(ALL_LIBS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(LDLIBS_BASE) $(LDFLAGS)

# jansson is linked statically where its archive exists, so the harness needs
# nothing inside the jail beyond libc and the driver.
JANSSON_STATIC := -Wl,-Bstatic -ljansson -Wl,-Bdynamic
JANSSON_A := $(shell $(CC) -print-file-name=libjansson.a)
HARNESS_LIBS = $(if $(filter /%,$(JANSSON_A)),$(JANSSON_STATIC),-ljansson) -lm -ldl -lpthread

# The harness talks to the GPU through the driver API. It links against the
# toolkit's stub libcuda so it builds on machines without a driver; at run
# time the real libcuda.so.1 is needed, and without it the daemon answers
# no_gpu before ever starting the harness.
# It reads the job's spec with sandbox/spec and links only these modules
# (checksrc holds its includes to them): never the compiler, the references
# or the daemon.
DEPS_HARNESS := spec kernels base
$(HARNESS): $(call obj,$(HARNESS_SRC)) $(foreach m,$(DEPS_HARNESS),$(LIB_$(m)))
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ -L$(CUDA_HOME)/lib64/stubs -lcuda $(HARNESS_LIBS) $(LDFLAGS)

# The compiler's NVRTC helper: runs in the jail, dlopens the toolkit's
# libnvrtc (so it links nothing from CUDA).
$(NVRTC_HELPER): $(B)/sandbox/compile/nvrtc/main.o
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ -ldl $(LDFLAGS)

$(KB_BUILD): $(B)/knowledge/kb_build_main.o $(ALL_LIBS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(LDLIBS_BASE) $(LDFLAGS)

KB_SOURCES := $(wildcard knowledge/gpu-facts/*.csv knowledge/gpu-facts/*.md knowledge/guides/*.md knowledge/*.sql knowledge/*.csv)
$(KB_DB): $(KB_BUILD) $(KB_SOURCES)
	@$(if $(Q),echo "  KB      $@")
	$(Q)$(KB_BUILD) --src knowledge --out $@

# The skill's references are generated from the guides (one source of truth).
$(SKILL_REFS): knowledge/export-skill-refs.sh $(wildcard knowledge/guides/*.md)
	@$(if $(Q),echo "  GEN     skill/references")
	$(Q)sh knowledge/export-skill-refs.sh knowledge/guides skill/references

# A starting spec per built-in op, from the same registry the harness uses.
$(SKILL_SPECS): $(BIN)
	@$(if $(Q),echo "  GEN     skill/templates/specs")
	$(Q)rm -rf skill/templates/specs && mkdir -p skill/templates/specs
	$(Q)for op in $$($(BIN) ops --names); do \
		$(BIN) ops $$op > skill/templates/specs/$$op.json || exit 1; done
	$(Q)printf '%s\n' "# Starting kernel specs" "" \
		"Generated by \`kforge ops NAME\` at build time, one per built-in op (bf16 where" \
		"the op has it; \`kforge ops NAME --dtype f32\` for others). Each is the op" \
		"shorthand, the default sizes, a launch list shaped like kforge's own kernel" \
		"and a kernel skeleton whose parameters follow the launch's arguments." > $@

# Device code only: one fatbin with every kernel of the library, loaded by
# the harness for built-in baselines. nvcc takes one input file for a
# fatbin, so the .cu files are compiled as one unity translation unit.
$(FATBIN): $(KERNELS_CU) $(wildcard kernels/*.cuh kernels/*.h)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $@")
	$(Q)printf '#include "%s"\n' $(KERNELS_CU) > $(B)/kernels/all.cu
	$(Q)$(NVCC) --fatbin -O3 -std=c++17 -I. \
		$(foreach a,$(KERNEL_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
		-gencode arch=compute_90,code=compute_90 -o $@ $(B)/kernels/all.cu

# --- tests ----------------------------------------------------------------
# tests/unit/check_<name>.c is one Check suite, linked against the module
# libraries (the linker takes only what the suite calls).
TEST_SRC := $(wildcard tests/unit/check_*.c)
TESTS := $(patsubst tests/unit/%.c,$(B)/tests/unit/%,$(TEST_SRC))

.SECONDARY:
.SECONDEXPANSION:
$(B)/tests/unit/check_%: $(B)/tests/unit/check_%.o $(ALL_LIBS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(CHECK_LIBS) $(LDLIBS_BASE) $(LDFLAGS)

# The failing-allocator suite counts every allocation kforge's code makes:
# the linker sends malloc & co. to tests/unit/failalloc.c.
FAILALLOC_WRAP := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup,--wrap=strndup \
	-Wl,--wrap=json_loads,--wrap=json_loadb,--wrap=json_load_file
$(B)/tests/unit/check_failalloc: $(B)/tests/unit/check_failalloc.o $(B)/tests/unit/failalloc.o $(ALL_LIBS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(FAILALLOC_WRAP) $(CHECK_LIBS) $(LDLIBS_BASE) $(LDFLAGS)

# Environment every test run sees: where the built pieces are.
TEST_ENV = KFORGE_BIN=$(abspath $(BIN)) KFORGE_HARNESS=$(abspath $(HARNESS)) \
	KFORGE_KB=$(abspath $(KB_DB)) KFORGE_SRC=$(abspath .)

test-unit: $(B)/.deps-ok $(CPU_TARGETS) $(TESTS)
	$(Q)fail=0; for t in $(TESTS); do $(TEST_ENV) $$t || fail=1; done; exit $$fail

# Protocol, conformance and end-to-end suites are added as tests/*.sh; each
# exits 0 on success and prints its own summary.
PROTO_TESTS := $(sort $(wildcard tests/proto/proto_*.sh))
test: deps-auto
	$(Q)$(MAKE) --no-print-directory test-unit $(FATBIN)
	$(Q)fail=0; for t in $(PROTO_TESTS); do $(TEST_ENV) sh $$t || fail=1; done; exit $$fail

# tests/gpu/run.sh (kernels and check_kernel), tests/gpu_runner.py (the
# GPU pool and run history through `kforge serve`), tests/gpu/torchop.py
# (build_torch_op and the kernel-builder export), tests/gpu/model.sh
# (the torch ops and benchmark_model), tests/gpu/profile.sh
# (profile_kernel under ncu), tests/gpu/hostmem.sh (the harness's host
# memory limit) and tests/gpu/eval.sh (kforge eval on the task set's
# reference solutions and the cheats, the dataset export loaded); each
# skips without a GPU.
test-gpu: all
	$(Q)fail=0; $(TEST_ENV) sh tests/gpu/run.sh || fail=1; \
		python3 tests/gpu_runner.py --bin $(BIN) || fail=1; \
		python3 tests/gpu/torchop.py --bin $(BIN) || fail=1; \
		$(TEST_ENV) sh tests/gpu/model.sh || fail=1; \
		$(TEST_ENV) sh tests/gpu/profile.sh || fail=1; \
		$(TEST_ENV) sh tests/gpu/hostmem.sh || fail=1; \
		$(TEST_ENV) sh tests/gpu/eval.sh $(BIN) $(B)/gpu-eval || fail=1; exit $$fail

# Benchmarks write their reports under build/bench/, never into tracked
# files: the curated docs/bench-*.md are copied from them by hand, with
# date, machine and commit (tests/README.md).
BENCH_OUT := $(B)/bench
BENCH_COMMIT = $$(git describe --always --dirty 2>/dev/null || echo unknown)
# Knowledge base: in-process lookup and search medians -> bench-kb.md.
BENCH_KB := $(B)/tests/bench/bench_kb
$(BENCH_KB): $(B)/tests/bench/bench_kb.o $(ALL_LIBS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(LDLIBS_BASE) $(LDFLAGS)
bench-kb: $(BENCH_KB) $(KB_DB)
	$(Q)mkdir -p $(BENCH_OUT) && BENCH_COMMIT=$(BENCH_COMMIT) \
		$(BENCH_KB) $(KB_DB) $(BENCH_OUT)/bench-kb.md; rc=$$?; \
		echo "bench-kb: report in $(BENCH_OUT)/bench-kb.md"; exit $$rc
# Compile: cold nvcc -c vs nvcc --cubin vs NVRTC vs kforge's jailed
# compile, and cache-hit latency -> bench-compile.md.
BENCH_COMPILE := $(B)/tests/bench/bench_compile
$(BENCH_COMPILE): $(B)/tests/bench/bench_compile.o $(ALL_LIBS)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(LDLIBS_BASE) $(LDFLAGS)
bench-compile: $(BENCH_COMPILE) $(NVRTC_HELPER)
	$(Q)mkdir -p $(BENCH_OUT) && BENCH_COMMIT=$(BENCH_COMMIT) \
		$(BENCH_COMPILE) $(BENCH_OUT)/bench-compile.md; rc=$$?; \
		echo "bench-compile: report in $(BENCH_OUT)/bench-compile.md"; exit $$rc
# Protocol overhead: tools/list and a trivial tool call over HTTP (wrk,
# many connections) and stdio -> bench-protocol.md.
BENCH_STDIO := $(B)/tests/bench/bench_stdio
$(BENCH_STDIO): $(B)/tests/bench/bench_stdio.o $(LIB_base)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) -o $@ $^ $(LDFLAGS)
bench-protocol: $(BIN) $(BENCH_STDIO)
	$(Q)mkdir -p $(BENCH_OUT) && KFORGE_BIN=$(abspath $(BIN)) BENCH_STDIO=$(abspath $(BENCH_STDIO)) \
		sh tests/bench/bench_protocol.sh $(BENCH_OUT)/bench-protocol.md; rc=$$?; \
		echo "bench-protocol: report in $(BENCH_OUT)/bench-protocol.md"; exit $$rc
# A check and a bench --size 0 of the skill's plain RMSNorm with the mock
# libcuda: the CPU phases of the loop -> bench-check.md.
bench-check: $(BIN) $(HARNESS)
	$(Q)mkdir -p $(BENCH_OUT) && KFORGE_BIN=$(abspath $(BIN)) KFORGE_HARNESS=$(abspath $(HARNESS)) \
		sh tests/bench/bench_check.sh $(BENCH_OUT)/bench-check.md
bench: bench-kb bench-compile bench-protocol bench-check

# kforge's kernels against PyTorch eager and torch.compile (GPU machine).
bench-kernels:
	$(Q)sh kernels/bench/run.sh

RUN_ADDR ?= 127.0.0.1:7070
run: deps-auto
	$(Q)$(MAKE) --no-print-directory all
	@echo "kforge: MCP (Streamable HTTP) at http://$(RUN_ADDR)/mcp"
	@echo "kforge: web page at http://$(RUN_ADDR)/ ; REST under http://$(RUN_ADDR)/v1/"
	@echo "kforge: register with Claude Code (stdio, recommended):"
	@echo "          $$($(BIN) mcp-config claude)"
	@echo "        or over this HTTP server:"
	@echo "          $$($(BIN) mcp-config claude --http http://$(RUN_ADDR)/mcp)"
	@echo "        Codex: $(BIN) mcp-config codex --write ; .mcp.json: $(BIN) mcp-config json"
	$(Q)$(BIN) serve --http $(RUN_ADDR)

# --- sanitizers, lint, fuzz -------------------------------------------------
# -O1 changes GCC's value-range view, so -Wformat-truncation (bounded
# snprintf by design) fires where -O2 does not; it is off for this build only.
# halt_on_error makes UBSan findings fail the run like ASan's.
# The fatbin is device code, which the sanitizers do not see: build-asan
# takes build's instead of running nvcc a second time.
asan: $(FATBIN)
	$(Q)mkdir -p build-asan/kernels && cp -p $(FATBIN) build-asan/kernels/
	$(MAKE) B=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -Wno-format-truncation" \
		LDFLAGS="-fsanitize=address,undefined" \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 test

# libFuzzer targets (tests/fuzz/fuzz_<t>.c), each linked with the sources it
# exercises, built by clang with ASan+UBSan and run for FUZZ_SECONDS from its
# seeds (tests/fuzz/seeds/<t>: test inputs and every crash ever found) and
# its dictionary (tests/fuzz/<t>.dict) where there is one. CI runs them for
# a short budget (.ci/run); `make fuzz` longer. New inputs libFuzzer finds
# stay in build-fuzz/corpus_<t> between runs.
FUZZ_SECONDS ?= 120
FUZZ_TARGETS := flags expr spec jsonrpc schema mcp http
FUZZ_SRC_jsonrpc := server/mcp/jsonrpc.c base/kf_err.c
FUZZ_SRC_schema := server/mcp/schema.c base/kf_err.c
FUZZ_SRC_flags := sandbox/compile/compile_flags.c base/kf_err.c
FUZZ_SRC_expr := sandbox/spec/expr.c base/kf_err.c
FUZZ_SRC_spec := $(SRC_spec) $(SRC_kernels) $(SRC_base)
FUZZ_SRC_mcp := $(SRC_mcp) $(SRC_base)
FUZZ_SRC_http := server/transport/http_guard.c base/kf_err.c
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -I. -I$(CUDA_HOME)/include -g -O1 \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_BINS := $(patsubst %,build-fuzz/fuzz_%,$(FUZZ_TARGETS))

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_SRC_$$*)
	$(Q)command -v clang >/dev/null || $(MAKE) --no-print-directory deps
	@mkdir -p build-fuzz
	@$(if $(Q),echo "  FUZZCC  $@")
	$(Q)clang $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_SRC_$*) -ljansson -lpthread -lm -ldl

fuzz: $(FUZZ_BINS)
	$(Q)for t in $(FUZZ_TARGETS); do \
		mkdir -p build-fuzz/corpus_$$t && cp -n tests/fuzz/seeds/$$t/* build-fuzz/corpus_$$t/; \
		dict=; [ -f tests/fuzz/$$t.dict ] && dict=-dict=tests/fuzz/$$t.dict; \
		echo "  FUZZ    $$t ($(FUZZ_SECONDS) s)"; \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=65536 -timeout=10 \
			-print_final_stats=1 -artifact_prefix=build-fuzz/crash_$$t- $$dict \
			build-fuzz/corpus_$$t 2>build-fuzz/fuzz_$$t.log || { tail -60 build-fuzz/fuzz_$$t.log; exit 1; }; \
		grep -E 'stat::number_of_executed_units' build-fuzz/fuzz_$$t.log; \
	done

# The clang-format check covers the project's C and CUDA: base/, server/,
# sandbox/, knowledge/, kernels/ (library, references, headers) and the C of
# tests/unit, tests/bench and tests/fuzz. Left out: the .cu test data and
# skill examples, whose layout is part of what they show. The banned-call
# grep covers everything.
LINT_FORMAT_FILES = $$(git ls-files 'base/*.[ch]' 'server/*.[ch]' 'sandbox/*.[ch]' 'knowledge/*.[ch]' \
	'tests/unit/*.[ch]' 'tests/bench/*.c' 'tests/fuzz/*.c' \
	'kernels/*.[ch]' 'kernels/*.cu' 'kernels/*.cuh' 'kernels/ref/*.[ch]' | grep -v '^kernels/\(dev\|bench\)/')
lint: $(ALL_LIBS)
	$(Q)python3 tests/lint/checksrc.py --allow tests/lint/allow.txt --libdir $(B)
	$(Q)sh tests/lint/test_checksrc.sh
	$(Q)clang-format --dry-run --Werror $(LINT_FORMAT_FILES)
	$(Q)! git grep -nE '\b(strcpy|sprintf|strcat|atoi|gets)\s*\(' -- '*.c' '*.h' '*.cu' || \
		{ echo "lint: banned call above"; exit 1; }

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/kforge $(DESTDIR)$(PREFIX)/share/kforge
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/kforge
	install -m 755 $(HARNESS) $(DESTDIR)$(PREFIX)/lib/kforge/kforge-harness
	install -m 755 $(NVRTC_HELPER) $(DESTDIR)$(PREFIX)/lib/kforge/kforge-nvrtc
	install -m 644 $(KB_DB) $(DESTDIR)$(PREFIX)/share/kforge/knowledge.db
	install -m 644 $(FATBIN) $(DESTDIR)$(PREFIX)/share/kforge/kernels.fatbin
	rm -rf $(DESTDIR)$(PREFIX)/share/kforge/skill
	install -d $(DESTDIR)$(PREFIX)/share/kforge/skill
	cp -R SKILL.md skill $(DESTDIR)$(PREFIX)/share/kforge/skill/
	install -d $(DESTDIR)$(PREFIX)/share/kforge/eval
	install -m 644 kernels/eval/*.json $(DESTDIR)$(PREFIX)/share/kforge/eval/

clean:
	rm -rf $(B) build-asan build-fuzz

-include $(shell find $(B) -name '*.d' 2>/dev/null)
