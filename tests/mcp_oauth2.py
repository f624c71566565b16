"""MCP authorization with the newest MCP Python SDK (PyPI `mcp` 2.x): its OAuth client
(`ClientCredentialsOAuthProvider` on the SDK's HTTP client) against the oxp-lambda binary
(OXP_AUTH=jwt), tokens from a real OAuth server (npm oidc-provider, tests/oidc_provider.mjs).

Run by tests/mcp_oauth.rs with the server's /mcp URL and the issuer; in the SDK's default mode
(`server/discover` first, then 2026-07-28) and in legacy mode (the initialize handshake), each
client starts without a token: the server's 401 leads it to the protected resource metadata,
the authorization server and a token for this resource, with which it lists and calls. Exits
non-zero at the first failed check.
"""
import asyncio
import sys

from mcp import Client
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from mcp_oauth_common import Memory, check


async def session(server, issuer, mode, version):
    storage = Memory()
    auth = ClientCredentialsOAuthProvider(
        server_url=server,
        storage=storage,
        client_id="mcp-test",
        client_secret="mcp-test-secret",
        scope="tools:call",
        issuer=issuer,
    )
    async with create_mcp_http_client(auth=auth) as http:
        async with Client(streamable_http_client(server, http_client=http), mode=mode) as client:
            check(client.protocol_version == version, f"{mode}: the client speaks {version}")
            check(storage.tokens is not None, f"{mode}: the 401 led the SDK to a token")
            listed = await client.list_tools()
            check(any(t.name == "Calculator_Add" for t in listed.tools), f"{mode}: the tools are listed")
            result = await client.call_tool("Calculator_Add", {"a": 2, "b": 3})
            check(not result.is_error and result.content[0].text == "5", f"{mode}: a tool call succeeds")


async def main(server, issuer):
    await session(server, issuer, "auto", "2026-07-28")
    await session(server, issuer, "legacy", "2025-11-25")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
