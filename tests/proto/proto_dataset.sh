#!/bin/sh
# proto_dataset: `kforge dataset export` end to end on a machine without a
# GPU, with the libcuda test double of proto_gpu_mock (tests/gpu/mock_cuda.c):
# a correct kernel and the double's cheats (partial write, out of bounds,
# input mutation, fault, hang: the behaviours of tests/gpu/cheats) are each
# checked and benchmarked through the real binaries; the export holds the
# correct kernel only, validates against its own schema.json (python3
# jsonschema), and the directory rules hold (non-empty refused, --force).
set -u
. "$(dirname "$0")/mock_env.sh"
mock_setup dataset
PID=
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; rm -rf "$T"' EXIT
mock_harness
mock_axpb_spec
fail=0
kf() {
	LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" "$BIN" "$@" --data-dir "$T/data" \
		--sandbox=none --json
}
ok() { echo "ok   proto_dataset: $1"; }
bad() { echo "FAIL proto_dataset: $1"; fail=1; }
# The correct kernel: a plain parent run, then the checked and timed one.
echo ok >"$T/mode"
kf check "$T/axpb.json" --trials 1 >"$T/parent.json" 2>>"$T/err"
parent=$(python3 -c "import json; print(json.load(open('$T/parent.json'))['run_id'])")
kf check "$T/axpb.json" --trials 1 --description "axpb: y = s * x + w" \
	--notes "grid-stride loop" --parent "$parent" >/dev/null 2>>"$T/err"
kf bench "$T/axpb.json" --budget-ms 50 --size 1 --description "axpb: y = s * x + w" \
	--parent "$parent" >/dev/null 2>>"$T/err"
# The cheats: each checked and benchmarked (both run, both fail).
for m in partial oob mutate fault hang; do
	echo "$m" >"$T/mode"
	kf check "$T/axpb.json" --trials 1 --no-odd-size --timeout-s 2 >/dev/null 2>>"$T/err"
	# a hanging kernel's benchmark would wait out its whole timeout
	[ "$m" = hang ] || kf bench "$T/axpb.json" --budget-ms 50 --size 1 >/dev/null 2>>"$T/err"
done
n=$("$BIN" runs --data-dir "$T/data" --json --limit 100 | python3 -c "import json,sys; print(len(json.load(sys.stdin)['runs']))")
[ "$n" = 12 ] && ok "12 runs recorded (3 correct, 9 cheats)" || bad "runs recorded: $n, want 12"
if "$BIN" dataset export --out "$T/out" --data-dir "$T/data" --trajectories >"$T/export.txt" 2>>"$T/err"; then
	ok "export exits 0: $(head -1 "$T/export.txt")"
else
	bad "export failed: $(tail -2 "$T/err")"
fi
if /usr/bin/python3 - "$T/out" "$SRC/tests/gpu/pass/axpb.cu" <<'EOF'
import json, os, sys
import jsonschema
out, good_src = sys.argv[1], open(sys.argv[2]).read()
schema = json.load(open(os.path.join(out, "schema.json")))
jsonschema.Draft202012Validator.check_schema(schema)
recs = [json.loads(l) for l in open(os.path.join(out, "data", "kernels.jsonl"))]
for r in recs:
    jsonschema.validate(r, schema, cls=jsonschema.Draft202012Validator)
assert len(recs) == 1, f"{len(recs)} records, want exactly the correct kernel"
r = recs[0]
assert r["source"] == good_src, "the exported source is not the correct kernel"
assert r["task"]["description"] == "axpb: y = s * x + w", r["task"]
assert r["notes"] == "grid-stride loop", r["notes"]
assert r["lineage"]["trajectory"][0]["kind"] == "check", r["lineage"]
assert r["gpu"]["name"] == "kforge mock GPU" and r["versions"]["driver"], r["versions"]
card = open(os.path.join(out, "README.md")).read()
assert card.startswith("---\nlicense: cc-by-4.0\n") and "data_files:" in card, card[:200]
EOF
then ok "the export is the correct kernel alone and validates against schema.json"
else bad "export content (above)"; fi
"$BIN" dataset export --out "$T/out" --data-dir "$T/data" >"$T/o" 2>"$T/e"
code=$?
[ "$code" = 2 ] && grep -q "is not empty.*--force" "$T/e" && ok "a non-empty --out is refused naming --force" \
	|| bad "non-empty --out: exit $code: $(cat "$T/e")"
"$BIN" dataset export --out "$T/out" --data-dir "$T/data" --force --min-speedup 1000 >/dev/null 2>"$T/e" &&
	[ ! -s "$T/out/data/kernels.jsonl" ] && ok "--force rewrites; --min-speedup filters" \
	|| bad "--force / --min-speedup: $(cat "$T/e")"
"$BIN" dataset export --data-dir "$T/data" >/dev/null 2>"$T/e"
[ $? = 2 ] && grep -q "needs --out" "$T/e" && ok "export without --out is a usage error" \
	|| bad "export without --out: $(cat "$T/e")"
"$BIN" dataset export --out "$T/x" --since yesterday --data-dir "$T/data" >/dev/null 2>"$T/e"
[ $? = 2 ] && grep -q "since" "$T/e" && ok "a bad --since names since" || bad "bad --since: $(cat "$T/e")"
# The same export streamed over REST: GET /v1/dataset.jsonl.
"$BIN" serve --http 127.0.0.1:0 --port-file "$T/port" --data-dir "$T/data" \
	--log-level warn 2>"$T/serve.log" &
PID=$!
i=0
while [ ! -s "$T/port" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
U="http://127.0.0.1:$(cat "$T/port")/v1/dataset.jsonl"
"$BIN" dataset export --out "$T/out2" --data-dir "$T/data" >/dev/null 2>&1
code=$(curl -s -o "$T/rest.jsonl" -D "$T/h" -w '%{http_code}' "$U")
[ "$code" = 200 ] && grep -qi "content-type: application/x-ndjson" "$T/h" &&
	cmp -s "$T/rest.jsonl" "$T/out2/data/kernels.jsonl" &&
	ok "GET /v1/dataset.jsonl streams the export's records" ||
	bad "GET /v1/dataset.jsonl: $code, $(head -c 300 "$T/rest.jsonl")"
code=$(curl -s -o "$T/r" -w '%{http_code}' "$U?min_speedup=1000&gpu=mock")
[ "$code" = 200 ] && [ ! -s "$T/r" ] && ok "its filters apply (min_speedup)" || bad "filters: $code $(cat "$T/r")"
code=$(curl -s -o "$T/r" -w '%{http_code}' "$U?min_speedup=fast")
[ "$code" = 400 ] && grep -q "min_speedup" "$T/r" && ok "a bad min_speedup is a 400 naming it" \
	|| bad "bad min_speedup: $code $(cat "$T/r")"
code=$(curl -s -o "$T/r" -w '%{http_code}' -X POST -H 'Content-Type: application/json' -d '{}' "$U")
[ "$code" = 405 ] && ok "POST is 405" || bad "POST: $code $(cat "$T/r")"
curl -s "http://127.0.0.1:$(cat "$T/port")/v1/openapi.json" | python3 -c "
import json, sys
p = json.load(sys.stdin)['paths']['/v1/dataset.jsonl']['get']
assert 'application/x-ndjson' in p['responses']['200']['content'], p
assert {x['name'] for x in p['parameters']} >= {'since', 'op', 'gpu', 'min_speedup'}, p
" && ok "OpenAPI lists /v1/dataset.jsonl with its filters" || bad "OpenAPI entry"
exit $fail
