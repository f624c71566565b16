"""The official MCP Python SDK (`mcp` 1.x, which speaks 2025-11-25) asking its user for the
local server's tools: a client with an elicitation callback declares form elicitation at
`initialize`, and a tool's question reaches it as `elicitation/create` on the call's stream.

Run by tests/mcp_elicitation.rs with the server's URL; exits non-zero at the first failed check.
"""
import asyncio
import json
import sys

from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok   {what}")


CONFIRM = {"prompt": "Deploy?", "choices": ["Yes", "No", "Later"], "default": 2}


async def main(url):
    asked = []

    async def answer(context, params):
        asked.append(params)
        schema = params.requestedSchema
        labels = schema["properties"]["choice"]["enum"]
        # The user picks the second choice; a prompt that says "decline" is declined.
        if "decline" in params.message:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"choice": labels[1]})

    async with streamablehttp_client(url) as (read, write, get_session_id):
        async with ClientSession(read, write, elicitation_callback=answer) as session:
            await session.initialize()
            check(get_session_id() is not None,
                  "a client that shows forms gets a session id, which carries that")

            result = await session.call_tool("Demo_Confirm", CONFIRM)
            check(not result.isError, f"the call completes: {result}")
            check(json.loads(result.content[0].text) == {"selected": 1, "choice": "No"},
                  "the tool's question reaches the user and the answer reaches the tool")
            check(asked[0].message == "Deploy?"
                  and asked[0].requestedSchema["properties"]["choice"]["enum"]
                  == ["Yes", "No", "Later"],
                  "the question is a form of the tool's prompt and choices")

            declined = dict(CONFIRM, prompt="Deploy? (decline)")
            result = await session.call_tool("Demo_Confirm", declined)
            check(json.loads(result.content[0].text) == {"selected": 2, "choice": "Later"},
                  "a declined question takes the tool's default")

            both = await asyncio.gather(
                session.call_tool("Demo_Confirm", dict(CONFIRM, prompt="First?")),
                session.call_tool("Demo_Confirm", dict(CONFIRM, prompt="Second?")),
            )
            check(all(json.loads(r.content[0].text)["choice"] == "No" for r in both),
                  "two calls of one session asking at once are each answered")

    # A client without the callback declares nothing: no session, and a tool error as before.
    async with streamablehttp_client(url) as (read, write, get_session_id):
        async with ClientSession(read, write) as session:
            await session.initialize()
            check(get_session_id() is None, "a client that shows no forms gets no session")
            result = await session.call_tool("Demo_Confirm", CONFIRM)
            check(result.isError, "its call is a tool error naming what was needed")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
