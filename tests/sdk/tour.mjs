// Every kforge tool on a success path and an error path, through one of
// three MCP clients from npm, each of which checks structuredContent
// against the tool's outputSchema:
//   sdk1       the TypeScript SDK 1.x Client (@modelcontextprotocol/sdk)
//   v2         the v2 client (@modelcontextprotocol/client)
//   inspector  the Inspector CLI (@modelcontextprotocol/inspector --cli),
//              one process per call
// Usage:
//   node tour.mjs CLIENT stdio BIN [SERVE_ARGS...]
//   node tour.mjs CLIENT http URL
// The GPU tools need a GPU, or the mock of proto_sdk.sh (its environment is
// inherited by a stdio server). A success must be a result with
// structuredContent (summary first, the same JSON in the text block); an
// error must be isError with no structuredContent and the error object
// (summary, error.code) as the text block. A client that throws is a
// failure. Exits 0 only if every check passed.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const [kind, mode, target, ...serveArgs] = process.argv.slice(2);
const here = dirname(fileURLToPath(import.meta.url));
let failures = 0, checks = 0;
function check(name, cond, detail) {
  checks++;
  if (!cond) {
    failures++;
    console.error(`FAIL tour ${kind} ${mode}: ${name}: ${JSON.stringify(detail)?.slice(0, 600)}`);
  }
}

// --- clients: each gives list() and call(name, args) -> {result} | {thrown} ---

async function sdkClient(pkg) {
  const v1 = pkg === "sdk1";
  const { Client } = await import(v1 ? "@modelcontextprotocol/sdk/client/index.js" : "@modelcontextprotocol/client");
  const { StdioClientTransport } = await import(v1 ? "@modelcontextprotocol/sdk/client/stdio.js"
    : "@modelcontextprotocol/client/stdio");
  const { StreamableHTTPClientTransport } = await import(v1
    ? "@modelcontextprotocol/sdk/client/streamableHttp.js" : "@modelcontextprotocol/client");
  const transport = mode === "http" ? new StreamableHTTPClientTransport(new URL(target))
    : new StdioClientTransport({ command: target, args: serveArgs, env: process.env, stderr: "inherit" });
  const client = new Client({ name: `kforge-tour-${pkg}`, version: "1.0.0" });
  await client.connect(transport);
  return {
    async list() {
      const tools = [];
      let cursor;
      do {
        const page = await client.listTools(cursor ? { cursor } : {});
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      return tools;
    },
    async call(name, args) {
      try {
        return { result: await client.callTool({ name, arguments: args }, undefined, { timeout: 300000 }) };
      } catch (e) {
        return { thrown: String(e?.message ?? e) };
      }
    },
    close: () => client.close(),
  };
}

function inspectorClient() {
  const require = createRequire(import.meta.url);
  const bin = join(dirname(require.resolve("@modelcontextprotocol/inspector/package.json")),
    "clients/launcher/build/index.js");
  const run = (method, extra) => {
    const where = mode === "http" ? [target] : ["--", target, ...serveArgs];
    const p = spawnSync(process.execPath, [bin, "--cli", "--format", "json", "-q", "--method", method,
      ...extra, ...where], { encoding: "utf8", timeout: 300000, env: process.env });
    // One JSON object per line: {"result": ...} and, for isError, an
    // {"error": {"code": "tool_is_error"}} line after it.
    const lines = (p.stdout + "\n" + p.stderr).split("\n").filter((l) => l.startsWith("{"));
    const objs = lines.map((l) => { try { return JSON.parse(l); } catch { return {}; } });
    const res = objs.find((o) => o.result);
    if (res)
      return { result: res.result };
    return { thrown: JSON.stringify(objs.find((o) => o.error) ?? { status: p.status, stderr: p.stderr.slice(-300) }) };
  };
  return {
    async list() {
      const r = run("tools/list", []);
      if (!r.result)
        throw new Error(r.thrown);
      return r.result.tools;
    },
    async call(name, args) {
      return run("tools/call", ["--tool-name", name, "--tool-args-json", JSON.stringify(args)]);
    },
    close: async () => {},
  };
}

// --- the tour ---

function loadSpec(file) {
  const spec = JSON.parse(readFileSync(file, "utf8"));
  for (const part of [spec, spec.reference, spec.baseline])
    if (typeof part?.source === "string" && part.source.startsWith("file:"))
      part.source = readFileSync(join(dirname(file), part.source.slice(5)), "utf8");
  delete spec._expect; // the GPU suite's own keys
  delete spec._args;
  return spec;
}
const spec = loadSpec(join(here, "../gpu/pass/axpb_f32.json"));
const wrongSpec = { ...spec, launch: [{ ...spec.launch[0], kernel: "not_in_the_source" }] };
const SOURCE = `extern "C" __global__ void tour_scale(float *y, const float *x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }
`;
const NOT_A_RUN = "r000000000000000"; // well formed, never issued

function isSuccess(name, r) {
  const sc = r.result?.structuredContent;
  let text;
  try { text = JSON.parse(r.result?.content?.[0]?.text ?? "null"); } catch { text = null; }
  check(`${name} succeeds`, r.result && !r.result.isError && sc && typeof sc === "object"
    && Object.keys(sc)[0] === "summary" && JSON.stringify(text) === JSON.stringify(sc), r.thrown ?? r.result);
  return sc ?? {};
}

function isError(name, r, code) {
  let obj = {};
  try { obj = JSON.parse(r.result?.content?.[0]?.text ?? "{}"); } catch { obj = {}; }
  check(`${name} fails as a tool error`, r.result?.isError === true && r.result.structuredContent === undefined
    && typeof obj.summary === "string" && typeof obj.error?.code === "string"
    && (!code || obj.error.code === code), r.thrown ?? r.result);
  return obj;
}

const client = kind === "inspector" ? inspectorClient() : await sdkClient(kind);
const tools = await client.list();
const names = tools.map((t) => t.name).sort();
check("every tool listed with an outputSchema", tools.every((t) => t.outputSchema), names);
const toured = new Set();
const c = (name, args) => { toured.add(name); return client.call(name, args); };

isSuccess("get_gpu_specs", await c("get_gpu_specs", { gpu: "H100" }));
isError("get_gpu_specs unknown", await c("get_gpu_specs", { gpu: "no-such-gpu-9000" }), "not_found");
isSuccess("search_guides", await c("search_guides", { query: "shared memory bank conflicts" }));
isError("search_guides bad limit", await c("search_guides", { query: "x", limit: 0 }), "invalid");
isSuccess("read_guide", await c("read_guide", { id: "bank-conflicts" }));
isError("read_guide unknown", await c("read_guide", { id: "no-such-guide" }), "not_found");
const comp1 = isSuccess("compile_kernel", await c("compile_kernel", { source: SOURCE, arch: "sm_90" }));
const bad = isError("compile_kernel syntax error",
  await c("compile_kernel", { source: SOURCE.replace("2.0f", "2.0f +"), arch: "sm_90" }), "compile_error");
check("compile error keeps its diagnostics", bad.diagnostics?.length > 0, bad);
const chk = isSuccess("check_kernel", await c("check_kernel", { spec, trials: 1 }));
const chkBad = isError("check_kernel wrong kernel name", await c("check_kernel", { spec: wrongSpec, trials: 1 }));
check("failed check keeps its detail", chkBad.passed === false && Array.isArray(chkBad.sizes), chkBad);
// build_torch_op needs torch on the GPU host (tests/gpu/torchop.py): here its refusals.
const refused = isError("build_torch_op of a failed check",
  await c("build_torch_op", { run: chkBad.run_id ?? NOT_A_RUN }));
check("build_torch_op says the run did not pass", /did not pass|not_found/.test(JSON.stringify(refused)), refused);
isError("build_torch_op unknown run", await c("build_torch_op", { run: NOT_A_RUN }), "not_found");
isSuccess("benchmark_kernel", await c("benchmark_kernel", { spec, budget_ms: 50, size: 1 }));
isError("benchmark_kernel wrong kernel name", await c("benchmark_kernel", { spec: wrongSpec, budget_ms: 50, size: 1 }));
const prof = isSuccess("profile_kernel", await c("profile_kernel", { spec }));
check("profile_kernel ends with what to try", Array.isArray(prof.try) && prof.profiled === true, prof);
isError("profile_kernel unknown size", await c("profile_kernel", { spec, size: 9 }), "invalid");
const mb = isSuccess("benchmark_model", await c("benchmark_model",
  { recipe: "dit", shapes: [{ kind: "prefill", batch: 1, seq: 64 }], iters: 3 }));
check("benchmark_model answers speedups", Array.isArray(mb.speedups), mb);
isError("benchmark_model unknown op",
  await c("benchmark_model", { recipe: "qwen3", patch: { Qwen3MLP: "fast" } }), "invalid");
isSuccess("list_runs", await c("list_runs", {}));
isError("list_runs bad cursor", await c("list_runs", { cursor: "zzzzzzzzzzzzzzzz" }));
isSuccess("get_run", await c("get_run", { id: comp1.run_id ?? NOT_A_RUN }));
isError("get_run unknown", await c("get_run", { id: NOT_A_RUN }), "not_found");
isSuccess("compare_runs", await c("compare_runs", { a: chk.run_id ?? NOT_A_RUN, b: chk.run_id ?? NOT_A_RUN }));
isError("compare_runs unknown", await c("compare_runs", { a: NOT_A_RUN, b: NOT_A_RUN }), "not_found");

check("the tour calls every listed tool", names.every((n) => toured.has(n)),
  names.filter((n) => !toured.has(n)));
await client.close();
console.log(`tour ${kind} ${mode}: ${checks - failures}/${checks} checks passed`);
process.exit(failures ? 1 : 0);
