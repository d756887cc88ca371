// The official TypeScript SDK's client against Warrant's /mcp: list tools, then call tools.
//
//   node ts_client.mjs <v1|v2> <legacy|auto|modern> <url> [<tool> <json arguments>]...
//
// v1 is `@modelcontextprotocol/sdk` (speaks 2025-11-25 and earlier only; the era must be
// `legacy`), v2 is `@modelcontextprotocol/client` (2026-07-28; `legacy`, `auto` or `modern`,
// which pins 2026-07-28). The lease token comes from WARRANT_TOKEN and goes in an Authorization
// header on every request, as any HTTP client of Warrant does. Prints one JSON object:
// {protocolVersion, tools, calls: [{tool, result} | {tool, error}]}; an error while connecting
// or listing prints {error} and exits 2.

const [sdk, era, url, ...rest] = process.argv.slice(2);
const headers = { Authorization: `Bearer ${process.env.WARRANT_TOKEN ?? ""}` };
const info = { name: "warrant-interop", version: "1.0.0" };

function describe(error) {
  // v1 puts the HTTP status in `code`; v2 in `data.status` (its `code` is a string).
  const status = error?.data?.status ?? (typeof error?.code === "number" ? error.code : undefined);
  return { name: error?.constructor?.name, code: error?.code, status, message: String(error?.message ?? error) };
}

let client;
let transport;
let protocolVersion;
if (sdk === "v1") {
  if (era !== "legacy") throw new Error("the v1 SDK speaks only the legacy (2025-11-25) era");
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StreamableHTTPClientTransport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js");
  client = new Client(info);
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
} else if (sdk === "v2") {
  const { Client, StreamableHTTPClientTransport } = await import("@modelcontextprotocol/client");
  const mode = { legacy: "legacy", auto: "auto", modern: { pin: "2026-07-28" } }[era];
  if (mode === undefined) throw new Error(`unknown era ${era}`);
  client = new Client(info, { versionNegotiation: { mode } });
  transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
} else {
  throw new Error(`unknown sdk ${sdk}`);
}

const out = { sdk, era };
try {
  await client.connect(transport);
  protocolVersion = sdk === "v1" ? transport.protocolVersion : client.getNegotiatedProtocolVersion();
  out.protocolVersion = protocolVersion;
  out.serverInfo = client.getServerVersion();
  out.tools = (await client.listTools()).tools;
} catch (error) {
  out.error = describe(error);
  console.log(JSON.stringify(out));
  await client.close().catch(() => {});
  process.exit(2);
}

out.calls = [];
for (let i = 0; i + 1 < rest.length; i += 2) {
  const tool = rest[i];
  try {
    out.calls.push({ tool, result: await client.callTool({ name: tool, arguments: JSON.parse(rest[i + 1]) }) });
  } catch (error) {
    out.calls.push({ tool, error: describe(error) });
  }
}
await client.close();
console.log(JSON.stringify(out));
