"""MCP authorization as a real client does it: the MCP Python SDK's OAuth discovery against
the oxp-lambda binary (OXP_AUTH=jwt), with tokens from a real OAuth server (npm
oidc-provider, tests/oidc_provider.mjs) that the server validates through its JWKS.

Run by tests/mcp_oauth.rs with the server's /mcp URL and the issuer; exits non-zero at the
first failed check. Each check is one sentence of the MCP authorization spec or RFC 9728.
"""
import asyncio
import sys

import httpx
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamablehttp_client

from mcp_oauth_common import Memory, check

CLIENT = ("mcp-test", "mcp-test-secret")
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
HEADERS = {"accept": "application/json, text/event-stream"}


async def token(http, issuer, resource, scope):
    answer = await http.post(
        f"{issuer}/token",
        data={"grant_type": "client_credentials", "resource": resource, "scope": scope},
        auth=CLIENT,
    )
    answer.raise_for_status()
    return answer.json()["access_token"]


async def main(server, issuer):
    async with httpx.AsyncClient() as http:
        refused = await http.post(server, json=LIST, headers=HEADERS)
        check(refused.status_code == 401, "a request without a token is a 401")
        challenge = refused.headers.get("www-authenticate", "")
        check('resource_metadata="' in challenge, "the 401's WWW-Authenticate names the resource metadata")
        check('scope="tools:call"' in challenge, "and the scope the server requires")
        metadata_url = challenge.split('resource_metadata="')[1].split('"')[0]
        metadata = (await http.get(metadata_url)).json()
        check(metadata["resource"] == server, "the metadata's resource is the /mcp URL the client uses")
        check(metadata["authorization_servers"] == [issuer], "the authorization server is the token issuer")
        check(metadata["bearer_methods_supported"] == ["header"], "tokens go in the Authorization header")

        other = await token(http, issuer, "http://127.0.0.1:9/mcp", "tools:call")
        answer = await http.post(server, json=LIST, headers={**HEADERS, "authorization": f"Bearer {other}"})
        check(answer.status_code == 401, "a token issued for another resource (audience) is refused")

        narrow = await token(http, issuer, server, "tools:other")
        answer = await http.post(server, json=LIST, headers={**HEADERS, "authorization": f"Bearer {narrow}"})
        check(answer.status_code == 403, "a token without the required scope is a 403")
        check('error="insufficient_scope"' in answer.headers.get("www-authenticate", ""),
              "with error=\"insufficient_scope\" in the challenge")

    auth = ClientCredentialsOAuthProvider(
        server_url=server,
        storage=Memory(),
        client_id=CLIENT[0],
        client_secret=CLIENT[1],
        scopes="tools:call",
        issuer=issuer,
    )
    async with streamablehttp_client(server, auth=auth) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            check(True, "the SDK discovered the metadata and the authorization server, got a token and initialized")
            listed = await session.list_tools()
            check(any(t.name == "Calculator_Add" for t in listed.tools), "the tools are listed with the token")
            result = await session.call_tool("Calculator_Add", {"a": 2, "b": 3})
            check(not result.isError and result.content[0].text == "5", "a tool call succeeds with the token")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
