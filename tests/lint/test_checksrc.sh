#!/bin/sh
# Feeds checksrc.py small bad fixtures (in a temporary tree) and asserts each
# finding is reported. Run by `make lint`.
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
t=$(mktemp -d); trap 'rm -rf "$t"' EXIT
mkdir -p "$t/sandbox/jail" "$t/server/mcp" "$t/base"
cp "$root/Makefile" "$t/Makefile"
: > "$t/server/mcp/mcp.h"; : > "$t/base/log.h"
printf '#include "../base/log.h"\n' > "$t/sandbox/jail/rel.c"
printf '#include "server/mcp/mcp.h"\n' > "$t/sandbox/jail/layer.c"
printf '/* seen in run 12 lease 3 */\nstatic int x;\n' > "$t/sandbox/jail/hist.c"
{ printf 'static int jail_long(void)\n{\n'; i=0; while [ $i -lt 130 ]; do echo '	x++;'; i=$((i+1)); done; printf '	return 0;\n}\n'; } > "$t/sandbox/jail/long.c"
out=$(cd "$t" && python3 "$here/checksrc.py" --root . --no-link sandbox/jail/rel.c sandbox/jail/layer.c sandbox/jail/hist.c sandbox/jail/long.c)
rc=$?
fail=0
[ $rc -ne 0 ] || { echo "FAIL checksrc: exit 0 on bad fixtures"; fail=1; }
for want in 'sandbox/jail/rel.c:1: include' 'sandbox/jail/layer.c:1: layer' \
	'sandbox/jail/hist.c:1: history' 'sandbox/jail/long.c:2: funclen'; do
	echo "$out" | grep -qF "$want" || { echo "FAIL checksrc: no '$want'"; fail=1; }
done
[ $fail -eq 0 ] && echo "checksrc fixtures: 4 reported"
exit $fail
