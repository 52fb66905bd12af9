#!/bin/sh
# run.sh: `make test-gpu`. Runs every GPU suite tests/gpu/<suite>.sh (each
# builds what it needs, skips with a clear line where there is no GPU, and
# exits nonzero on failure) and fails if any failed.
cd "$(dirname "$0")/../.." || exit 1
fail=0
for t in tests/gpu/*.sh; do
	[ "$(basename "$t")" = run.sh ] && continue
	echo "== $t"
	sh "$t" || fail=1
done
exit $fail
