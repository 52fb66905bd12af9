#!/bin/sh
# Feeds checksrc.py small bad fixtures (in a temporary tree) and asserts each
# finding is reported. Run by `make lint`.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/sandbox/jail" "$t/server/mcp" "$t/base" "$t/sandbox/harness" "$t/sandbox/compile" \
	"$t/sandbox/spec"
cp "$root/Makefile" "$t/Makefile"
: > "$t/server/mcp/mcp.h"; : > "$t/base/log.h"
: > "$t/sandbox/compile/compile.h"; : > "$t/sandbox/spec/spec.h"
# the harness links DEPS_HARNESS (spec): spec.h passes, compile.h does not
printf '#include "sandbox/spec/spec.h"\n#include "sandbox/compile/compile.h"\n' > "$t/sandbox/harness/h.c"
printf '#include "../base/log.h"\n' > "$t/sandbox/jail/rel.c"
printf '#include "server/mcp/mcp.h"\n' > "$t/sandbox/jail/layer.c"
printf '/* seen in run 12 lease 3 */\nstatic int x;\n' > "$t/sandbox/jail/hist.c"
{ printf 'static int jail_long(void)\n{\n'; i=0; while [ $i -lt 130 ]; do echo '	x++;'; i=$((i+1)); done; printf '	return 0;\n}\n'; } > "$t/sandbox/jail/long.c"
out=$(cd "$t" && python3 "$here/checksrc.py" --root . --no-link sandbox/jail/rel.c sandbox/jail/layer.c sandbox/jail/hist.c sandbox/jail/long.c sandbox/harness/h.c)
rc=$?
fail=0
[ $rc -ne 0 ] || { echo "FAIL checksrc: exit 0 on bad fixtures"; fail=1; }
for want in 'sandbox/jail/rel.c:1: include' 'sandbox/jail/layer.c:1: layer' \
	'sandbox/jail/hist.c:1: history' 'sandbox/jail/long.c:2: funclen' \
	'sandbox/harness/h.c:2: layer'; do
	echo "$out" | grep -qF "$want" || { echo "FAIL checksrc: no '$want'"; fail=1; }
done
echo "$out" | grep -qF 'sandbox/harness/h.c:1:' && { echo "FAIL checksrc: the harness may include spec.h (DEPS_HARNESS)"; fail=1; }
[ $fail -eq 0 ] && echo "checksrc fixtures: 5 reported"
exit $fail
