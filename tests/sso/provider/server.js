// A real OpenID Connect provider (npm's oidc-provider, pinned in package.json) on loopback, for
// the single sign-on tests: tests/sso/oidc_provider.py starts it, README.md beside this file
// describes its configuration and its test endpoints.
//
// It is a test double of an identity provider, never a production one: accounts sign in with
// their e-mail address and no password, consent is given automatically, and the /__test__/
// endpoints let a test change what the provider does (which is why it only ever listens on
// 127.0.0.1).
import * as crypto from 'node:crypto';
import { readFileSync } from 'node:fs';

import Provider from 'oidc-provider';
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';

const ID_TOKEN_MODES = new Set([
  'normal', // as issued
  'wrong-key', // signed by a key the JWKS does not publish (the published key's kid kept)
  'wrong-nonce', // another nonce than the one the relying party sent
  'wrong-aud', // issued to another client
  'wrong-iss', // issued by another issuer
  'expired', // exp and iat an hour in the past
  'alg-none', // unsigned ("alg": "none", empty signature)
]);

function readConfig() {
  const source = process.argv[2]
    ? readFileSync(process.argv[2], 'utf8')
    : process.env.OIDC_PROVIDER_CONFIG;
  if (!source) {
    throw new Error('pass the configuration as a JSON file (argv[2]) or in OIDC_PROVIDER_CONFIG');
  }
  const config = JSON.parse(source);
  const issuer = new URL(config.issuer ?? '');
  if (issuer.protocol !== 'http:' || issuer.hostname !== '127.0.0.1' || !issuer.port) {
    throw new Error(`issuer must be http://127.0.0.1:<port>, got ${config.issuer}`);
  }
  if (!Array.isArray(config.clients) || !config.clients.length) {
    throw new Error('clients must list at least one client');
  }
  if (!Array.isArray(config.accounts) || !config.accounts.length) {
    throw new Error('accounts must list at least one account');
  }
  for (const account of config.accounts) {
    if (!account.sub || !account.email) throw new Error('every account needs a sub and an email');
  }
  return { ...config, port: Number(issuer.port) };
}

const config = readConfig();
const accounts = config.accounts.map((account) => ({ email_verified: true, ...account }));

// Clients live in a map the test endpoints can change: served through the adapter, not as
// static clients (which oidc-provider caches for good), so a redirect URI added while the
// provider runs (the live server's, whose port is known late) takes effect at once.
const clients = new Map(config.clients.map((client) => [client.client_id, {
  grant_types: ['authorization_code'],
  response_types: ['code'],
  token_endpoint_auth_method: 'client_secret_basic',
  ...client,
}]));
const memoryAdapter = createMemoryAdapter();
function adapter(model) {
  if (model !== 'Client') return memoryAdapter(model);
  return {
    async find(id) { return clients.get(id); },
    async upsert() {},
    async destroy() {},
  };
}

// The signing key is made here rather than by oidc-provider so that a tampered ID token can be
// re-signed with it (a changed claim under a valid signature); the rogue key signs the
// "wrong-key" tokens and is published nowhere.
function rsaKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return privateKey;
}
const signingKey = rsaKey();
const signingJwk = { ...signingKey.export({ format: 'jwk' }), kid: 'test-signing-key', use: 'sig', alg: 'RS256' };
const rogueKey = rsaKey();

const state = { idTokenMode: 'normal', autoLogin: null, authorizationRequests: [] };

const provider = new Provider(config.issuer, {
  adapter,
  jwks: { keys: [signingJwk] },
  cookies: {
    // Prefixed so that they never meet the relying party's on 127.0.0.1 (cookies ignore ports).
    names: { session: 'op_session', interaction: 'op_interaction', resume: 'op_interaction_resume' },
    keys: [crypto.randomBytes(32).toString('base64url')],
  },
  pkce: { required: () => true },
  responseTypes: ['code'],
  scopes: ['openid', 'email', 'profile'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // The ID token carries the scopes' claims too (as Google's and most providers' do), not only
  // the userinfo endpoint.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: false } },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  async findAccount(_ctx, sub) {
    const account = accounts.find((candidate) => candidate.sub === sub);
    if (!account) return undefined;
    return {
      accountId: account.sub,
      async claims() {
        const { sub: id, email, email_verified: verified, name } = account;
        return { sub: id, email, email_verified: verified, name };
      },
    };
  },
  async renderError(ctx, out) {
    ctx.type = 'html';
    ctx.body = page('Sign-in error', `<p id="error">${escape(out.error)}: ${escape(out.error_description ?? '')}</p>`);
  },
  ttl: {
    AccessToken: 3600,
    AuthorizationCode: 60,
    Grant: 3600,
    IdToken: 3600,
    Interaction: 600,
    Session: 3600,
  },
});

function escape(text) {
  return String(text).replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

function page(title, body) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title></head>`
    + `<body><h1>${escape(title)}</h1>${body}</body></html>`;
}

function loginPage(uid, details, message = '') {
  const client = escape(details.params.client_id);
  const known = accounts.map((account) => `<li>${escape(account.email)}</li>`).join('');
  return page('Test identity provider', `
    ${message ? `<p id="error" role="alert">${escape(message)}</p>` : ''}
    <p>Signing in to <code>${client}</code>. Test accounts (no password):</p><ul>${known}</ul>
    <form method="post" action="/interaction/${escape(uid)}/login">
      <label>E-mail <input type="email" name="email" autofocus required></label>
      <button type="submit" id="op-sign-in">Sign in</button>
    </form>
    <form method="post" action="/interaction/${escape(uid)}/abort">
      <button type="submit" id="op-cancel">Cancel</button>
    </form>`);
}

async function readBody(ctx) {
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  if (ctx.is('application/json')) return text ? JSON.parse(text) : {};
  return Object.fromEntries(new URLSearchParams(text));
}

// Sign-in and consent in one: the account signs in and every requested scope and claim is
// granted, so the provider sends the browser straight back to the relying party.
async function finishInteraction(ctx, details, accountId) {
  const { params } = details;
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId, clientId: params.client_id });
  grant.addOIDCScope(params.scope);
  if (params.claims) {
    const requested = JSON.parse(params.claims);
    grant.addOIDCClaims([
      ...Object.keys(requested.id_token ?? {}),
      ...Object.keys(requested.userinfo ?? {}),
    ]);
  }
  const grantId = await grant.save();
  await provider.interactionFinished(ctx.req, ctx.res, {
    login: { accountId },
    consent: { grantId },
  }, { mergeWithLastSubmission: false });
  ctx.respond = false;
}

async function interactions(ctx) {
  const [, , uid, action] = ctx.path.split('/');
  const details = await provider.interactionDetails(ctx.req, ctx.res);
  if (details.uid !== uid) ctx.throw(400, 'interaction mismatch');
  if (ctx.method === 'GET' && !action) {
    // Signed in already (a new client, or another prompt): consent without asking.
    const signedIn = details.session?.accountId;
    const account = signedIn ?? accounts.find((candidate) => candidate.email === state.autoLogin)?.sub;
    if (account) return finishInteraction(ctx, details, account);
    ctx.type = 'html';
    ctx.body = loginPage(uid, details);
    return undefined;
  }
  if (ctx.method === 'POST' && action === 'login') {
    const { email = '' } = await readBody(ctx);
    const account = accounts.find((candidate) => candidate.email.toLowerCase() === email.trim().toLowerCase());
    if (!account) {
      ctx.status = 400;
      ctx.type = 'html';
      ctx.body = loginPage(uid, details, `No test account has the e-mail address ${email}.`);
      return undefined;
    }
    return finishInteraction(ctx, details, account.sub);
  }
  if (ctx.method === 'POST' && action === 'abort') {
    await provider.interactionFinished(ctx.req, ctx.res, {
      error: 'access_denied',
      error_description: 'The person cancelled the sign-in.',
    }, { mergeWithLastSubmission: false });
    ctx.respond = false;
    return undefined;
  }
  ctx.throw(404);
  return undefined;
}

function json(ctx, status, body) {
  ctx.status = status;
  ctx.body = body;
}

async function testEndpoints(ctx) {
  const body = ctx.method === 'GET' ? {} : await readBody(ctx);
  const path = ctx.path.slice('/__test__'.length);
  const clientPath = path.match(/^\/clients\/([^/]+)\/redirect_uris$/);
  if (path === '/state' && ctx.method === 'GET') {
    return json(ctx, 200, {
      id_token: state.idTokenMode,
      auto_login: state.autoLogin,
      authorization_requests: state.authorizationRequests,
      clients: [...clients.values()].map(({ client_id: id, redirect_uris: uris }) => ({ client_id: id, redirect_uris: uris })),
    });
  }
  if (path === '/mode' && ctx.method === 'POST') {
    if ('id_token' in body) {
      if (!ID_TOKEN_MODES.has(body.id_token)) {
        return json(ctx, 400, { error: `id_token must be one of ${[...ID_TOKEN_MODES].join(', ')}` });
      }
      state.idTokenMode = body.id_token;
    }
    if ('auto_login' in body) {
      if (body.auto_login !== null && !accounts.some((account) => account.email === body.auto_login)) {
        return json(ctx, 400, { error: `auto_login must be null or a test account's email, got ${body.auto_login}` });
      }
      state.autoLogin = body.auto_login;
    }
    return json(ctx, 200, { id_token: state.idTokenMode, auto_login: state.autoLogin });
  }
  if (path === '/reset' && ctx.method === 'POST') {
    state.idTokenMode = 'normal';
    state.autoLogin = null;
    state.authorizationRequests = [];
    return json(ctx, 200, { id_token: state.idTokenMode, auto_login: state.autoLogin });
  }
  if (clientPath && ctx.method === 'POST') {
    const client = clients.get(decodeURIComponent(clientPath[1]));
    if (!client) return json(ctx, 404, { error: 'no such client' });
    if (typeof body.redirect_uri !== 'string' || !URL.canParse(body.redirect_uri)) {
      return json(ctx, 400, { error: 'redirect_uri must be an absolute URL' });
    }
    const uris = new Set([...(client.redirect_uris ?? []), body.redirect_uri]);
    clients.set(client.client_id, { ...client, redirect_uris: [...uris] });
    return json(ctx, 200, { client_id: client.client_id, redirect_uris: [...uris] });
  }
  return json(ctx, 404, { error: 'no such test endpoint' });
}

function b64json(part) {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
}

function sign(header, payload, key) {
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  if (!key) return `${input}.`;
  return `${input}.${crypto.sign('sha256', Buffer.from(input), key).toString('base64url')}`;
}

function tamper(idToken, mode) {
  const [headerPart, payloadPart] = idToken.split('.');
  const header = b64json(headerPart);
  const payload = b64json(payloadPart);
  const now = Math.floor(Date.now() / 1000);
  switch (mode) {
    case 'wrong-key': return sign(header, payload, rogueKey);
    case 'wrong-nonce': return sign(header, { ...payload, nonce: crypto.randomBytes(16).toString('base64url') }, signingKey);
    case 'wrong-aud': return sign(header, { ...payload, aud: 'another-client', azp: 'another-client' }, signingKey);
    case 'wrong-iss': return sign(header, { ...payload, iss: 'http://127.0.0.1:9/not-this-issuer' }, signingKey);
    case 'expired': return sign(header, { ...payload, iat: now - 7200, auth_time: now - 7200, exp: now - 3600 }, signingKey);
    case 'alg-none': return sign({ alg: 'none', typ: header.typ }, payload, null);
    default: return idToken;
  }
}

const app = provider;
app.use(async (ctx, next) => {
  if (ctx.path.startsWith('/__test__/')) return testEndpoints(ctx);
  if (ctx.path.startsWith('/interaction/')) return interactions(ctx);
  if (ctx.path === '/auth' && ctx.method === 'GET') {
    const recorded = ['client_id', 'redirect_uri', 'response_type', 'scope', 'state', 'nonce',
      'code_challenge', 'code_challenge_method', 'prompt', 'login_hint'];
    state.authorizationRequests.push(Object.fromEntries(
      recorded.filter((name) => ctx.query[name] !== undefined).map((name) => [name, ctx.query[name]]),
    ));
  }
  await next();
  if (ctx.path === '/token' && state.idTokenMode !== 'normal' && ctx.body?.id_token) {
    ctx.body = { ...ctx.body, id_token: tamper(ctx.body.id_token, state.idTokenMode) };
  }
  return undefined;
});

const server = app.listen(config.port, '127.0.0.1', () => {
  process.stdout.write(`oidc-provider listening on ${config.issuer}\n`);
});
for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
