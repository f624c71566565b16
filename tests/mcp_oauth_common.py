"""What tests/mcp_oauth.py (MCP Python SDK 1.x) and tests/mcp_oauth2.py (2.x) share: a check
that prints the sentence it holds, and the SDK's token storage kept in memory. Both majors
export `TokenStorage` from `mcp.client.auth`, so each script, run from tests/, imports this
under its own SDK."""
from mcp.client.auth import TokenStorage


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok   {what}")


class Memory(TokenStorage):
    """Tokens and the registered client, for one run."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info
