// The official TypeScript SDK's OAuth client against Warrant's /mcp, configured with the URL only.
//
//   node ts_oauth_client.mjs <v1|v2> <legacy|auto|modern> <auth method> <mcp url> <step>...
//
// v1 is `@modelcontextprotocol/sdk` (legacy era only), v2 `@modelcontextprotocol/client` (eras as
// in ts_client.mjs). <auth method> is the token_endpoint_auth_method the client registers with:
// `none` (a public client), `client_secret_post` (what the SDK's own OAuth example registers) or
// `client_secret_basic`. The client is an `OAuthClientProvider` kept in memory; its redirect URI
// is a loopback listener this script runs (http://127.0.0.1:<port>/callback), as a native app's.
//
// The protocol with the test (tests/interop/test_typescript_oauth.py), one JSON object a line on
// stdout, nothing else on stdout (diagnostics go to stderr):
//
//   {"event":"authorize","url":...}  the SDK's redirectToAuthorization(url): open it in a browser,
//                                    consent; the browser lands on the callback listener
//   {"event":"callback","code":...}  the listener got the code (or {"event":"callback","error":...}
//                                    and the script exits 3); then finishAuth(code), and connect
//                                    again with a new Client and transport, the same provider
//   {"event":"connected","protocolVersion":...,"serverInfo":...}
//   {"event":"http","method","path","status",...}  every HTTP request the SDK made (the
//                                    transport's and its OAuth calls'); for /register also the
//                                    token_endpoint_auth_method granted and whether a client_secret
//                                    came; for /token the grant_type, how the client authenticated
//                                    (client_auth: none, client_secret_post, client_secret_basic)
//                                    and the OAuth `error` and `error_description` of a refusal
//   {"step":...}                     one line per step, in order (below)
//   {"step":"done"}                  the last line; exit 0
//
// Steps, each one argument (run after the client is connected):
//   list                    -> {"step":"list","tools":[names]}
//   call:<tool>:<json args> -> {"step":"call","tool","isError","code":_meta["warrant/code"],"meta","text",
//                               "structuredContent"}, or {"step":"call","tool","error":{name,code,status,message}}
//                               when the SDK threw (an authorization it could not finish itself, for one)
//   sleep:<seconds>         -> {"step":"sleep","seconds"} once slept
//   wait                    -> {"step":"wait"}, then blocks until a line arrives on stdin (the test
//                               moves the gateway's clock, cancels the run, ..., then writes a line)
//
// An error while connecting prints {"event":"failed","error":...} and exits 2. An authorization
// asked for after the first one is printed as an `authorize` event too, but not waited for: the
// step that caused it reports the SDK's error.

import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import { createInterface } from "node:readline";

const [sdk, era, authMethod, url, ...steps] = process.argv.slice(2);
if (!["none", "client_secret_post", "client_secret_basic"].includes(authMethod)) {
  throw new Error(`unknown token endpoint auth method ${authMethod}`);
}
const info = { name: "warrant-interop-oauth", version: "1.0.0" };
const emit = (line) => process.stdout.write(JSON.stringify(line) + "\n");

function describe(error) {
  const status = error?.data?.status ?? (typeof error?.code === "number" ? error.code : undefined);
  return { name: error?.constructor?.name, code: error?.code, status, message: String(error?.message ?? error) };
}

// ---- the SDK -------------------------------------------------------------------------------
let Client;
let Transport;
let UnauthorizedError;
let clientOptions = {};
if (sdk === "v1") {
  if (era !== "legacy") throw new Error("the v1 SDK speaks only the legacy (2025-11-25) era");
  ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
  ({ StreamableHTTPClientTransport: Transport } = await import("@modelcontextprotocol/sdk/client/streamableHttp.js"));
  ({ UnauthorizedError } = await import("@modelcontextprotocol/sdk/client/auth.js"));
} else if (sdk === "v2") {
  ({ Client, StreamableHTTPClientTransport: Transport, UnauthorizedError } = await import("@modelcontextprotocol/client"));
  const mode = { legacy: "legacy", auto: "auto", modern: { pin: "2026-07-28" } }[era];
  if (mode === undefined) throw new Error(`unknown era ${era}`);
  clientOptions = { versionNegotiation: { mode } };
} else {
  throw new Error(`unknown sdk ${sdk}`);
}

// ---- the redirect URI: a loopback listener -------------------------------------------------
let onCallback = () => {};
const listener = createServer((request, response) => {
  const where = new URL(request.url, "http://127.0.0.1");
  if (where.pathname !== "/callback") {
    response.writeHead(404).end();
    return;
  }
  const ok = where.searchParams.has("code");
  response.writeHead(ok ? 200 : 400, { "content-type": "text/html; charset=utf-8" });
  response.end(ok ? "<h1 id='signed-in'>Signed in</h1><p>You may close this window.</p>" : "<h1 id='refused'>Not signed in</h1>");
  onCallback(where.searchParams);
});
await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
const redirectUrl = `http://127.0.0.1:${listener.address().port}/callback`;
const nextCallback = () => new Promise((resolve) => (onCallback = resolve));

// ---- the OAuthClientProvider, in memory -----------------------------------------------------
const expectedState = randomBytes(16).toString("hex");
const store = { tokens: undefined, client: undefined, verifier: undefined, discovery: undefined };
const provider = {
  get redirectUrl() {
    return redirectUrl;
  },
  get clientMetadata() {
    return {
      client_name: `warrant interop ${sdk}`,
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: authMethod,
    };
  },
  state: () => expectedState,
  clientInformation: () => store.client,
  saveClientInformation: (client) => void (store.client = client),
  tokens: () => store.tokens,
  saveTokens: (tokens) => void (store.tokens = tokens),
  codeVerifier: () => {
    if (!store.verifier) throw new Error("no code verifier saved");
    return store.verifier;
  },
  saveCodeVerifier: (verifier) => void (store.verifier = verifier),
  discoveryState: () => store.discovery,
  saveDiscoveryState: (state) => void (store.discovery = state),
  invalidateCredentials: (scope) => {
    if (scope === "all" || scope === "client") store.client = undefined;
    if (scope === "all" || scope === "tokens") store.tokens = undefined;
    if (scope === "all" || scope === "verifier") store.verifier = undefined;
    if (scope === "all" || scope === "discovery") store.discovery = undefined;
  },
  redirectToAuthorization: (authorizationUrl) => emit({ event: "authorize", url: String(authorizationUrl) }),
};

// ---- every HTTP request the SDK makes, reported ---------------------------------------------
async function reportingFetch(input, init) {
  const response = await fetch(input, init);
  const target = new URL(input instanceof Request ? input.url : String(input));
  const line = { event: "http", method: init?.method ?? "GET", path: target.pathname, status: response.status };
  if (target.pathname === "/register" && response.ok) {
    const registered = await response.clone().json();
    line.token_endpoint_auth_method = registered.token_endpoint_auth_method;
    line.client_secret = typeof registered.client_secret === "string";
  }
  if (target.pathname === "/token") {
    const form = new URLSearchParams(String(init?.body ?? ""));
    line.grant_type = form.get("grant_type");
    const basic = new Headers(init?.headers).get("authorization")?.startsWith("Basic ");
    line.client_auth = basic ? "client_secret_basic" : form.has("client_secret") ? "client_secret_post" : "none";
    if (!response.ok) {
      const body = await response.clone().json().catch(() => ({}));
      Object.assign(line, { error: body.error, error_description: body.error_description });
    }
  }
  emit(line);
  return response;
}

function connection() {
  const transport = new Transport(new URL(url), { authProvider: provider, fetch: reportingFetch });
  return { client: new Client(info, clientOptions), transport };
}

// ---- connect: the first attempt asks for an authorization, the second uses its tokens ----------
let client;
try {
  let first = connection();
  try {
    await first.client.connect(first.transport);
    client = first.client;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
    const params = await nextCallback();
    if (params.get("error") || !params.get("code")) {
      emit({ event: "callback", error: params.get("error"), description: params.get("error_description") });
      process.exit(3);
    }
    if (params.get("state") !== expectedState) throw new Error(`state mismatch: ${params.get("state")}`);
    emit({ event: "callback", code: params.get("code") });
    await (sdk === "v1" ? first.transport.finishAuth(params.get("code")) : first.transport.finishAuth(params));
    await first.client.close().catch(() => {});
    const second = connection();
    await second.client.connect(second.transport);
    client = second.client;
    first = second;
  }
  const protocolVersion = sdk === "v1" ? first.transport.protocolVersion : client.getNegotiatedProtocolVersion();
  emit({ event: "connected", protocolVersion, serverInfo: client.getServerVersion() });
} catch (error) {
  emit({ event: "failed", error: describe(error) });
  listener.close();
  process.exit(2);
}

// ---- the steps ------------------------------------------------------------------------------
const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

for (const step of steps) {
  const [kind, ...rest] = step.split(":");
  if (kind === "list") {
    emit({ step: "list", tools: (await client.listTools()).tools.map((t) => t.name) });
  } else if (kind === "call") {
    const tool = rest[0];
    const args = JSON.parse(rest.slice(1).join(":") || "{}");
    try {
      const result = await client.callTool({ name: tool, arguments: args });
      emit({
        step: "call",
        tool,
        isError: result.isError ?? false,
        code: result._meta?.["warrant/code"] ?? null,
        meta: result._meta ?? {},
        text: result.content?.[0]?.text ?? null,
        structuredContent: result.structuredContent ?? null,
      });
    } catch (error) {
      emit({ step: "call", tool, error: describe(error) });
    }
  } else if (kind === "sleep") {
    const seconds = Number(rest[0]);
    await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
    emit({ step: "sleep", seconds });
  } else if (kind === "wait") {
    emit({ step: "wait" });
    await lines.next();
  } else {
    throw new Error(`unknown step ${step}`);
  }
}
input.close();
await client.close().catch(() => {});
listener.close();
emit({ step: "done" });
