// A real OpenID Connect provider (npm `oidc-provider`) on loopback for tests/oauth_flow.rs:
// client `oxp-demo` (authorization code, PKCE, refresh tokens) redirecting to the server's
// /oauth/demo/callback. The user's login and consent are driven programmatically: the
// interaction grants the scopes asked for to the account named by `login_hint`, or denies when
// it is `deny`. Access tokens live 61 s, so with the server refreshing 60 s ahead a call two
// seconds later must refresh; GET /test-stats counts refresh grants.
// Run: node tests/oauth_provider.mjs PORT SERVER_BASE_URL. Prints one line once it listens.
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const server = process.argv[3];
const issuer = `http://127.0.0.1:${port}`;
let refreshes = 0;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'oxp-demo',
      client_secret: 'oxp-demo-secret',
      grant_types: ['authorization_code', 'refresh_token'],
      redirect_uris: [`${server}/oauth/demo/callback`],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  features: { devInteractions: { enabled: false } },
  issueRefreshToken: () => true,
  ttl: { AccessToken: 61 },
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
});

provider.on('grant.success', (ctx) => {
  if (ctx.oidc.params.grant_type === 'refresh_token') refreshes += 1;
});

provider.use(async (ctx, next) => {
  if (ctx.path === '/test-stats') {
    ctx.body = { refreshes };
    return;
  }
  if (ctx.path.startsWith('/interaction/')) {
    const details = await provider.interactionDetails(ctx.req, ctx.res);
    const account = details.params.login_hint;
    if (!account || account === 'deny') {
      await provider.interactionFinished(ctx.req, ctx.res,
        { error: 'access_denied', error_description: 'the user refused' },
        { mergeWithLastSubmission: false });
      return;
    }
    const grant = new provider.Grant({ accountId: account, clientId: details.params.client_id });
    grant.addOIDCScope(details.params.scope);
    const grantId = await grant.save();
    await provider.interactionFinished(ctx.req, ctx.res,
      { login: { accountId: account }, consent: { grantId } },
      { mergeWithLastSubmission: false });
    return;
  }
  await next();
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
