// The official TypeScript SDK v2 client against `skill-evals mcp-serve`, in each version
// negotiation mode: node sdk_client.cjs CLIENTS_DIR stdio|http TARGET
// TARGET: the server command as a JSON array (stdio, the client starts it) or the URL (http).
// Prints one JSON object per mode on stdout: what the client negotiated and got back.
"use strict";
const path = require("node:path");
const { createRequire } = require("node:module");

const [clientsDir, kind, target] = process.argv.slice(2);
const load = createRequire(path.join(clientsDir, "package.json"));
const { Client, StreamableHTTPClientTransport } = load("@modelcontextprotocol/client");
const { StdioClientTransport } = load("@modelcontextprotocol/client/stdio");

const MODES = { legacy: { mode: "legacy" }, auto: { mode: "auto" }, pin: { mode: { pin: "2026-07-28" } } };

function transport() {
  if (kind === "http") return new StreamableHTTPClientTransport(new URL(target));
  const [command, ...args] = JSON.parse(target);
  return new StdioClientTransport({ command, args, stderr: "ignore" });
}

async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (err) {
    return { code: err.code ?? null, message: String(err.message || err).slice(0, 300) };
  }
}

async function run(name, negotiation) {
  const client = new Client({ name: "skill-evals-test", version: "1.0.0" }, { versionNegotiation: negotiation });
  const out = { mode: name };
  try {
    await client.connect(transport());
    out.era = client.getProtocolEra ? client.getProtocolEra() : null;
    out.version = client.getNegotiatedProtocolVersion ? client.getNegotiatedProtocolVersion() : null;
    out.server = client.getServerVersion();
    out.capabilities = client.getServerCapabilities();
    const tools = await client.listTools();
    out.tools = tools.tools.map((t) => t.name);
    const call = await client.callTool({ name: out.tools[0], arguments: {} });
    out.callText = call.content[0].text;
    const resources = await client.listResources();
    out.resources = resources.resources.map((r) => r.uri);
    const read = await client.readResource({ uri: out.resources[0] });
    out.readText = read.contents[0].text;
    out.missing = await errorOf(client.readResource({ uri: "skill://no-such-skill/SKILL.md" }));
    out.unknownTool = await errorOf(client.callTool({ name: "no_such_tool", arguments: {} }));
  } catch (err) {
    out.error = String(err && err.stack ? err.stack : err).slice(0, 2000);
  } finally {
    await client.close().catch(() => {});
  }
  return out;
}

(async () => {
  for (const [name, negotiation] of Object.entries(MODES)) {
    process.stdout.write(JSON.stringify(await run(name, negotiation)) + "\n");
  }
  process.exit(0);
})();
