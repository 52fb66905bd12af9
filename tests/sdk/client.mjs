// Official MCP TypeScript SDK client against kforge. Usage:
//   node client.mjs stdio KFORGE_BIN DATA_DIR
//   node client.mjs http URL
// Connects, checks the negotiated server info, lists every tool (following
// cursors), calls a fixture tool, checks progress and a tool-level error,
// and exits 0 only if every check passed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, a, b] = process.argv.slice(2);
let failures = 0;
function check(name, cond, detail) {
  if (!cond) {
    failures++;
    console.error(`FAIL ${name}: ${JSON.stringify(detail)}`);
  }
}

const transport = mode === "http"
  ? new StreamableHTTPClientTransport(new URL(a))
  : new StdioClientTransport({
      command: a,
      args: ["serve", "--data-dir", b, "--conformance-fixtures", "--log-level", "warn"],
      stderr: "inherit",
    });
const client = new Client({ name: "kforge-sdk-test", version: "1.0.0" });
await client.connect(transport);

const info = client.getServerVersion();
check("server name", info?.name === "kforge", info);
check("instructions", (client.getInstructions() ?? "").includes("kforge"), client.getInstructions());

const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
check("tools listed", tools.some((t) => t.name === "test_simple_text"), tools.map((t) => t.name));

const r = await client.callTool({ name: "test_simple_text", arguments: {} });
check("call result", r.content?.[0]?.text === "This is a simple text response for testing.", r);

const progress = [];
await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
  onprogress: (p) => progress.push(p.progress),
});
check("progress", progress.length === 3 && progress[2] === 100, progress);

const bad = await client.callTool({ name: "json_schema_2020_12_tool", arguments: { name: 7 } });
check("tool-level error", bad.isError === true, bad);

const text = await client.readResource({ uri: "test://static-text" });
check("resource", text.contents?.[0]?.text?.startsWith("This is"), text);

await client.close();
console.log(`sdk ${mode}: ${tools.length} tools listed, ${failures} failures`);
process.exit(failures ? 1 : 0);
