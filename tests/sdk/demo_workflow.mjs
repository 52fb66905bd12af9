// The demo workflow through the official MCP TypeScript SDK client over
// stdio: GPU facts, a guide search and read, compile, check, benchmark and
// the run history, asserting on each tool's structuredContent (the SDK also
// validates it against the tool's outputSchema) or, on isError, the error
// object in its text block. Without a GPU the check and benchmark must answer
// isError with error.code "no_gpu" and no number.
//   node demo_workflow.mjs KFORGE_BIN DATA_DIR
import { existsSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, data] = process.argv.slice(2);
const haveGpu = existsSync("/dev/nvidiactl");
let failures = 0, checks = 0;
function check(name, cond, detail) {
  checks++;
  if (!cond) {
    failures++;
    console.error(`FAIL ${name}: ${JSON.stringify(detail)?.slice(0, 1500)}`);
  }
}

const SOURCE = `#include <cuda_bf16.h>
extern "C" __global__ void wf_rmsnorm(__nv_bfloat16 *y, const __nv_bfloat16 *x,
                                      const __nv_bfloat16 *w, int T, int D, float eps)
{
    __shared__ float part[256];
    const __nv_bfloat16 *xr = x + (size_t)blockIdx.x * D;
    __nv_bfloat16 *yr = y + (size_t)blockIdx.x * D;
    float ss = 0.f;
    for (int i = threadIdx.x; i < D; i += blockDim.x) { float v = __bfloat162float(xr[i]); ss += v * v; }
    part[threadIdx.x] = ss;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    float r = rsqrtf(part[0] / D + eps);
    for (int i = threadIdx.x; i < D; i += blockDim.x)
        yr[i] = __float2bfloat16(__bfloat162float(xr[i]) * r * __bfloat162float(w[i]));
}
`;
const spec = {
  op: "rmsnorm", dtype: "bf16", source: SOURCE, arch: "sm_90",
  sizes: [{ T: 512, D: 4096 }, { T: 7, D: 1000 }],
  launch: [{ kernel: "wf_rmsnorm", grid: ["T"], block: [256], args: ["y", "x", "w", "T", "D", "eps"] }],
};

const client = new Client({ name: "kforge-demo-workflow", version: "1.0.0" });
await client.connect(new StdioClientTransport({
  command: bin, args: ["serve", "--data-dir", data, "--log-level", "warn"], stderr: "inherit",
}));
const call = async (name, args) => {
  const r = await client.callTool({ name, arguments: args });
  // An isError result carries its error object as the text block only.
  check(`${name}: no structuredContent on isError`, !r.isError || r.structuredContent === undefined, r);
  const sc = r.isError ? JSON.parse(r.content?.[0]?.text ?? "{}") : r.structuredContent ?? {};
  check(`${name}: summary first`, Object.keys(sc)[0] === "summary" && typeof sc.summary === "string", sc);
  check(`${name}: text block is the same JSON`, JSON.stringify(JSON.parse(r.content?.[0]?.text ?? "null")) ===
    JSON.stringify(sc), r.content?.[0]?.text?.slice(0, 200));
  return { r, sc };
};

let { r, sc } = await call("get_gpu_specs", { gpu: "h200" });
check("h200 facts", !r.isError && sc.gpu?.id === "h200" && sc.gpu.figures?.sm_count?.value === 132
  && (sc.gpu.sources?.[sc.gpu.figures.sm_count.source]?.length > 0
    || sc.gpu.figures.sm_count.source_keys?.length > 0), sc.gpu?.figures?.sm_count);

({ r, sc } = await call("search_guides", { query: "rmsnorm vectorized 16-byte loads", limit: 5 }));
const ids = (sc.hits ?? []).map((h) => h.id);
check("search finds the rmsnorm guide", !r.isError && ids.includes("rmsnorm-layernorm"), ids);

({ r, sc } = await call("read_guide", { id: "rmsnorm-layernorm" }));
check("guide read with sources", !r.isError && sc.markdown?.length > 1000 && sc.sources?.length > 0, sc.title);

({ r, sc } = await call("compile_kernel", { source: SOURCE, arch: "sm_90" }));
const k = sc.kernels?.[0];
check("compile ok with resources", !r.isError && sc.ok === true && k?.name === "wf_rmsnorm"
  && k.registers > 0 && k.shared_static_bytes === 1024 && k.occupancy?.length > 0, sc);
const compileRun = sc.run_id;

({ r, sc } = await call("check_kernel", { spec, trials: 1 }));
if (haveGpu) {
  check("check passes on the GPU", !r.isError && sc.passed === true, sc.summary);
} else {
  check("check answers no_gpu", r.isError === true && sc.error?.code === "no_gpu" && sc.passed === false, sc);
}

({ r, sc } = await call("benchmark_kernel", { spec }));
if (haveGpu) {
  check("benchmark measured", !r.isError && sc.candidate?.median_us > 0 && sc.verified !== false, sc.summary);
} else {
  check("benchmark answers no_gpu, no number", r.isError === true && sc.error?.code === "no_gpu"
    && sc.candidate === undefined, sc);
}

({ r, sc } = await call("list_runs", { limit: 10 }));
const kinds = (sc.runs ?? []).map((x) => x.kind);
check("runs recorded", !r.isError && ["compile", "check", "bench"].every((x) => kinds.includes(x)), kinds);

({ r, sc } = await call("get_run", { id: compileRun }));
check("get_run returns the compile", !r.isError && sc.run?.kind === "compile", sc.summary);

await client.close();
console.log(`sdk demo workflow: ${checks - failures} passed, ${failures} failed`);
process.exit(failures ? 1 : 0);
