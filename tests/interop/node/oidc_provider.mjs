// A real OpenID Connect provider on loopback for the console's sign-in tests (tests/oidc/):
// node-oidc-provider (panva), with its development sign-in form (any login, any password: the
// login is the account id), one confidential client (the gateway) and the accounts it is given.
//
//   node oidc_provider.mjs '<json>'
//     {"host": "localhost", "clients": [{"client_id", "client_secret", "redirect_uris"}],
//      "accounts": {"<login>": {"email": "...", "email_verified": true}}}
//
// Listens on a free port of 127.0.0.1; the issuer is http://<host>:<port> (`localhost` by default:
// another site than the gateway's 127.0.0.1, so the browser treats the round trip as cross-site,
// as it is in a deployment). Prints one JSON line {"issuer", "port"} when ready.
//
// PKCE is required of every client. Consent is given in advance for the gateway (a first-party
// client, as a deployment's provider usually treats its own gateway). ID tokens carry only the
// standard claims of the provider's default: the scopes' claims (email) come from userinfo.
//
// Test hooks, outside the provider's own routes: POST /__test__/tamper {"aud", "nonce", "iss",
// "exp", "foreign_key"} makes the token endpoint answer its next ID token with those claims changed
// and re-signed (with the provider's own key, or with a key the JWKS does not publish), as a
// provider that is wrong, or someone in its place, would; POST /__test__/tamper {} stops that.
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';

import Provider from 'oidc-provider';
import { SignJWT, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK } from 'jose';

const options = JSON.parse(process.argv[2] ?? '{}');
const host = options.host ?? 'localhost';
const accounts = options.accounts ?? {};
const clients = options.clients ?? [];

async function signingKey(kid) {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  return { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' };
}

const ownKey = await signingKey(randomUUID());
const foreignKey = await signingKey(randomUUID()); // never published
let tamper = null;

const server = createServer();
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const { port } = server.address();
const issuer = `http://${host}:${port}`;

const provider = new Provider(issuer, {
  clients: clients.map((c) => ({
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    ...c,
  })),
  jwks: { keys: [ownKey] },
  cookies: { keys: [randomUUID()] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (!account) return undefined; // the sign-in form takes any login; only these have claims
    return { accountId: id, async claims() { return { sub: id, ...account }; } };
  },
  async loadExistingGrant(ctx) {
    const existing = ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (existing) return ctx.oidc.provider.Grant.find(existing);
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email');
    await grant.save();
    return grant;
  },
});

// The provider answers its own faults with a bare `server_error` page: say what they were.
provider.on('server_error', (ctx, error) => { process.stderr.write(`server_error: ${error.stack}\n`); });

provider.use(async (ctx, next) => {
  await next();
  if (ctx.path !== '/token' || !tamper || !ctx.body || typeof ctx.body !== 'object' || !ctx.body.id_token) return;
  const claims = { ...decodeJwt(ctx.body.id_token) };
  for (const name of ['aud', 'nonce', 'iss', 'exp']) {
    if (name in tamper) claims[name] = tamper[name];
  }
  const key = tamper.foreign_key ? foreignKey : ownKey;
  const { kid } = decodeProtectedHeader(ctx.body.id_token);
  ctx.body = {
    ...ctx.body,
    // A foreign key signs under the kid of the provider's own: a forgery, not a key rotation.
    id_token: await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: tamper.foreign_key ? kid : key.kid })
      .sign(await importJWK(key, 'RS256')),
  };
});

const handler = provider.callback();
server.on('request', (req, res) => {
  if (req.url === '/__test__/tamper' && req.method === 'POST') {
    let body = '';
    req.on('data', (chunk) => { body += chunk; });
    req.on('end', () => {
      const parsed = JSON.parse(body || '{}');
      tamper = Object.keys(parsed).length ? parsed : null;
      res.writeHead(204).end();
    });
    return;
  }
  handler(req, res);
});

process.stdout.write(`${JSON.stringify({ issuer, port })}\n`);
