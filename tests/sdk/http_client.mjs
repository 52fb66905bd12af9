// The official MCP TypeScript SDK client over Streamable HTTP, the parts
// that only HTTP has (client.mjs covers listing and calling). Usage:
//   node http_client.mjs URL
// Checks: the server assigns a session id, a progress-streaming call and a
// plain call run concurrently on one session, the SDK's terminateSession
// (DELETE) ends the session so the next request fails with 404, and a new
// client gets a new session. Exits 0 only if every check passed.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);
let failures = 0;
function check(name, cond, detail) {
  if (!cond) {
    failures++;
    console.error(`FAIL ${name}: ${JSON.stringify(detail)}`);
  }
}

const t1 = new StreamableHTTPClientTransport(url);
const c1 = new Client({ name: "kforge-sdk-http", version: "1.0.0" });
await c1.connect(t1);
const sid = t1.sessionId;
check("session id assigned", typeof sid === "string" && /^[0-9a-f]{32}$/.test(sid), sid);

const progress = [];
const [slow, fast] = await Promise.all([
  c1.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  }),
  c1.callTool({ name: "test_simple_text", arguments: {} }),
]);
check("concurrent calls on one session", fast.content?.[0]?.text?.startsWith("This is") &&
  slow.content?.[0]?.text?.includes("progress"), { slow, fast });
check("progress streamed over SSE", progress.join(",") === "0,50,100", progress);

await t1.terminateSession();
let status = 0;
try {
  // A raw request on the ended session (the SDK's connect would start a
  // new initialize instead).
  const r = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream",
      "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "ping" }),
  });
  status = r.status;
} catch (e) {
  status = -1;
}
check("terminateSession ends the session (404 afterwards)", status === 404, status);
await c1.close();

const t2 = new StreamableHTTPClientTransport(url);
const c2 = new Client({ name: "kforge-sdk-http-2", version: "1.0.0" });
await c2.connect(t2);
check("a new client gets a new session", t2.sessionId && t2.sessionId !== sid, t2.sessionId);
const pong = await c2.ping();
check("ping on the new session", pong && typeof pong === "object", pong);
await t2.terminateSession();
await c2.close();

console.log(`sdk http: session ${sid.slice(0, 8)}..., ${failures} failures`);
process.exit(failures ? 1 : 0);
