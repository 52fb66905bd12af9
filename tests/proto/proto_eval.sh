#!/bin/sh
# proto_eval: `kforge eval` end to end without a GPU, with the libcuda test
# double of proto_gpu_mock (tests/gpu/mock_cuda.c): the repository's task
# set loads (at least 50 tasks, the 15 ops among them) and prints prompts;
# malformed task files are named with the task and field; `eval run` scores
# a correct solution, one that does not compile and one without a launch,
# then (the double switched to faulting, then hanging, then writing half
# its output) the same correct source again, each failure scored with its
# reason (and the safeguards that fired) while the eval goes on; a pass
# against a weak reference is scored failed;
# fast_p and the per-task rows come back as JSON, and the correct solution
# is a run that exports as data.
set -u
SRC=${KFORGE_SRC:-$(pwd)}
BIN=${KFORGE_BIN:-$SRC/build/kforge}
HARNESS=${KFORGE_HARNESS:-$SRC/build/kforge-harness}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
fail=0
ok() { echo "ok   proto_eval: $1"; }
bad() { echo "FAIL proto_eval: $1"; fail=1; }
T=$(mktemp -d /tmp/kforge-eval-XXXXXX)
trap 'rm -rf "$T"' EXIT
# The task set in the repository.
"$BIN" eval list --json --tasks "$SRC/kernels/eval" >"$T/list.json" 2>"$T/e"
python3 -c "
import json
t = json.load(open('$T/list.json'))['tasks']
ids = {x['id'] for x in t}
assert len(t) >= 50, len(t)
assert {'rmsnorm_bf16', 'gemm_bf16', 'groupnorm', 'masked_softmax', 'cross_entropy_soft',
        'quantize_int8_rowwise', 'gemv', 'rope_positions'} <= ids, ids
assert all(x['math'] for x in t)
" && ok "the task set loads: $(python3 -c "import json; print(len(json.load(open('$T/list.json'))['tasks']))") tasks" || bad "task set: $(cat "$T/e")"
"$BIN" eval prompt groupnorm --tasks "$SRC/kernels/eval" >"$T/p" 2>&1
grep -q "Group normalization" "$T/p" && grep -q '"G"' "$T/p" && grep -q "groupnorm.cu" "$T/p" &&
	ok "eval prompt prints description, math, spec and what to answer" || bad "prompt: $(head -5 "$T/p")"
"$BIN" eval prompt nope --tasks "$SRC/kernels/eval" >/dev/null 2>"$T/e"
[ $? = 4 ] && grep -q "no task 'nope'" "$T/e" && ok "an unknown task is exit 4" || bad "unknown task: $(cat "$T/e")"
# Malformed task files: the file, the task and the field are named.
mkdir -p "$T/badtasks"
printf '{"tasks": [{"id": "a1", "description": "d", "spec": {}, "reference": {"torch": "y = x"}, "baseline": {"kind": "none"}}]}' >"$T/badtasks/x.json"
"$BIN" eval list --tasks "$T/badtasks" >/dev/null 2>"$T/e"
[ $? = 1 ] && grep -q "x.json: task 'a1' (#0): field 'math': missing" "$T/e" &&
	ok "a task without math names file, task and field" || bad "missing math: $(cat "$T/e")"
printf '{"tasks": [{"id": "a1", "op": "rmsnorm", "spec": {}, "reference": {"op": "rmsnorm", "torch": "x"}, "baseline": {"kind": "op"}}]}' >"$T/badtasks/x.json"
"$BIN" eval list --tasks "$T/badtasks" >/dev/null 2>"$T/e"
grep -q "task 'a1' (#0): field 'reference': want exactly one" "$T/e" && ok "two references are refused naming reference" || bad "two refs: $(cat "$T/e")"
printf '{"tasks": [{"id": "A-1"}]}' >"$T/badtasks/x.json"
"$BIN" eval list --tasks "$T/badtasks" >/dev/null 2>"$T/e"
grep -q "field 'id'" "$T/e" && ok "a bad id is refused naming id" || bad "bad id: $(cat "$T/e")"
printf '{"tasks": [' >"$T/badtasks/x.json"
"$BIN" eval list --tasks "$T/badtasks" >/dev/null 2>"$T/e"
grep -q "x.json: line 1" "$T/e" && ok "a file that does not parse is named with its line" || bad "parse: $(cat "$T/e")"
if ! [ -x "$CUDA_HOME/bin/nvcc" ] || ! [ -x "$HARNESS" ]; then
	echo "SKIP proto_eval run: needs nvcc and build/kforge-harness"
	exit $fail
fi
cc -shared -fPIC -I"$CUDA_HOME/include" -o "$T/libcuda.so.1" "$SRC/tests/gpu/mock_cuda.c" || exit 1
cat >"$T/harness.sh" <<EOF
#!/bin/sh
export MOCK_CUDA_AXPB=\$(cat "$T/mode" 2>/dev/null)
LD_LIBRARY_PATH="$T" exec "$HARNESS" "\$@"
EOF
chmod +x "$T/harness.sh"
# A task set of axpb tasks (the kernel the double runs) and solutions.
mkdir -p "$T/tasks" "$T/sol"
python3 - "$SRC/tests/gpu/pass/axpb_f32.json" "$T" <<'EOF'
import json, os, sys
sys.path.insert(0, os.path.dirname(sys.argv[1]) + "/..")
import run
spec, _, _ = run.load_spec(sys.argv[1])
T = sys.argv[2]
src, launch = spec.pop("source"), spec.pop("launch")
task = lambda i: {"id": i, "level": 1, "description": "y = s * x + w, elementwise.",
                  "math": "y = s * x + w", "reference": spec["reference"], "spec": spec,
                  "baseline": {"kind": "source", "why": "the plain reference kernel"}}
ids = ["a_good", "b_nocompile", "c_nolaunch", "d_fault", "e_hang", "f_good_again", "g_badjson",
       "h_partial", "i_weak"]
tasks = [task(i) for i in ids]
# i_weak: w all ones and s tiny make y nearly constant, so a kernel
# writing one value would pass: the check flags its reference as weak.
weak = json.loads(json.dumps(spec))
weak["tensors"]["w"]["init"] = "ones"
weak["scalars"]["s"]["value"] = 1e-7
tasks[-1]["spec"] = weak
json.dump({"tasks": tasks}, open(T + "/tasks/t.json", "w"))
for i in ids:
    open(f"{T}/sol/{i}.cu", "w").write(src if i != "b_nocompile" else src + "\nthis is not C++;\n")
    if i == "g_badjson":
        open(f"{T}/sol/{i}.json", "w").write('{"launch": [')
    elif i != "c_nolaunch":
        json.dump({"launch": launch, "notes": "grid-stride"}, open(f"{T}/sol/{i}.json", "w"))
EOF
ev() {
	echo "$1" >"$T/mode"; shift
	LD_LIBRARY_PATH="$T" KFORGE_HARNESS="$T/harness.sh" "$BIN" eval run "$T/sol" --tasks "$T/tasks" \
		--data-dir "$T/data" --sandbox=none --timeout-s 3 --budget-ms 50 "$@"
}
ev ok --only a_good,b_nocompile,c_nolaunch,g_badjson --json --out "$T/r1.json" >"$T/o1" 2>"$T/e1"
ev fault --only d_fault --json >"$T/o2" 2>>"$T/e1"
ev hang --only e_hang --json >"$T/o3" 2>>"$T/e1"
ev ok --only f_good_again >"$T/o4" 2>>"$T/e1"
ev partial --only h_partial --json >"$T/o5" 2>>"$T/e1"
ev ok --only i_weak --json >"$T/o6" 2>>"$T/e1"
python3 - "$T" <<'EOF' && ok "eval run scores correct and failed solutions with reasons and fast_p, and goes on" || { bad "eval run"; tail -5 "$T/e1"; }
import json, sys
T = sys.argv[1]
r1 = json.load(open(T + "/r1.json"))
assert json.load(open(T + "/o1")) == r1
rows = {r["id"]: r for r in r1["results"]}
assert r1["tasks"] == 4 and r1["correct"] == 1, r1["summary"]
assert "g_badjson.json: line 1" in rows["g_badjson"]["reason"], rows["g_badjson"]
assert rows["a_good"]["correct"] and rows["a_good"]["check_run"] and rows["a_good"]["bench_run"], rows["a_good"]
assert isinstance(rows["a_good"].get("speedup"), float), rows["a_good"]
assert not rows["b_nocompile"]["correct"] and "error" in rows["b_nocompile"]["reason"].lower(), rows["b_nocompile"]
assert not rows["c_nolaunch"]["correct"] and "no launch" in rows["c_nolaunch"]["reason"], rows["c_nolaunch"]
assert abs(r1["fast_p"]["fast_0"] - 1 / 4) < 1e-9, r1["fast_p"]
sp = rows["a_good"]["speedup"]
assert r1["fast_p"]["fast_1"] == (1 / 4 if sp >= 1 else 0), (sp, r1["fast_p"])
d = json.load(open(T + "/o2"))["results"][0]
assert not d["correct"] and "ILLEGAL_ADDRESS" in d["reason"], d
h = json.load(open(T + "/o3"))["results"][0]
assert not h["correct"] and "did not finish" in h["reason"], h
assert "1 of 1 tasks correct" in open(T + "/o4").read()
p = json.load(open(T + "/o5"))["results"][0]
assert not p["correct"] and "coverage" in p["safeguards"] and "never written" in p["reason"], p
w = json.load(open(T + "/o6"))["results"][0]
assert not w["correct"] and w["reason"].startswith("weak reference: ") and "weak_reference" in w["flags"], w
assert "bench_run" not in w, w
EOF
"$BIN" dataset export --out "$T/ds" --data-dir "$T/data" >/dev/null 2>&1
n=$(wc -l <"$T/ds/data/kernels.jsonl")
[ "$n" = 1 ] && grep -q '"description":"y = s \* x + w, elementwise. Math: y = s \* x + w"' "$T/ds/data/kernels.jsonl" &&
	ok "the eval's correct solution exports as one record with the task's description" || bad "export after eval: $n records"
exit $fail
