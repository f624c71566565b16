// MCP authorization with the MCP TypeScript SDK 2.x (npm @modelcontextprotocol/client): its
// OAuth client for the client_credentials grant (`ClientCredentialsProvider`) against the
// oxp-lambda binary (OXP_AUTH=jwt), tokens from a real OAuth server (npm oidc-provider,
// tests/oidc_provider.mjs). Run by tests/mcp_oauth.rs with Node 22, the server's /mcp URL and
// the issuer. The client starts without a token: the server's 401 leads it to the protected
// resource metadata, the authorization server and a token for this resource, with which it
// negotiates 2026-07-28, lists and calls. Prints one `ok   <what>` line per check; exits
// non-zero at the first that fails.
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

function check(cond, what) {
  if (!cond) {
    console.log(`FAIL ${what}`);
    process.exit(1);
  }
  console.log(`ok   ${what}`);
}

const [url, issuer] = process.argv.slice(2);
const provider = new ClientCredentialsProvider({
  clientId: 'mcp-test',
  clientSecret: 'mcp-test-secret',
  scope: 'tools:call',
  expectedIssuer: issuer,
});
const client = new Client(
  { name: 'oxp-lambda-tests', version: '1.0.0' },
  { versionNegotiation: { mode: 'auto' } },
);
await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider: provider }));
const version = client.getNegotiatedProtocolVersion();
check(version === '2026-07-28', `auto mode negotiates 2026-07-28: ${version}`);
check(provider.tokens() !== undefined, 'the 401 led the SDK to a token');
const { tools } = await client.listTools();
check(tools.some((t) => t.name === 'Calculator_Add'), 'the tools are listed');
const result = await client.callTool({ name: 'Calculator_Add', arguments: { a: 2, b: 3 } });
check(!result.isError && result.content[0].text === '5', 'a tool call succeeds with the token');
await client.close();
