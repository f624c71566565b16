// A real OAuth 2.0 / OpenID Connect server (npm `oidc-provider`) on loopback, for
// tests/mcp_oauth.rs: client `mcp-test` may use client_credentials; tokens are RS256 JWTs
// (keys at /jwks) for the resource the client names (RFC 8707), with the scopes it asks for
// among `tools:call` and `tools:other`. Run with Node 22 from node_modules: node
// tests/oidc_provider.mjs PORT. Prints one line once it listens.
import Provider from 'oidc-provider';

const port = Number(process.argv[2]);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: 'mcp-test',
      client_secret: 'mcp-test-secret',
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: 'client_secret_basic',
    },
  ],
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource) => ({
        scope: 'tools:call tools:other',
        audience: resource,
        accessTokenFormat: 'jwt',
        accessTokenTTL: 300,
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
});

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
