"""The official MCP Python SDK (`mcp` from PyPI) as the client of the local server's /mcp.

Run by tests/mcp_sdk.rs with the server's URL; exits non-zero at the first failed check.
Each check is one sentence of what an MCP client expects of the server.
"""
import asyncio
import base64
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.exceptions import McpError


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok   {what}")


async def main(url):
    async with streamablehttp_client(url) as (read, write, get_session_id):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            check(init.serverInfo.name == "oxp-lambda", "initialize names the server")
            check(init.capabilities.tools is not None, "the server offers tools")
            check(get_session_id() is None, "stateless: no session id is handed out")

            listed = await session.list_tools()
            names = [t.name for t in listed.tools]
            check(names == ["Calculator_Add", "Demo_Confirm", "Demo_Image", "Demo_Sleep",
                             "Demo_Summarize", "Demo_Watch", "Doorbell_Ring", "SMS_Send", "System_GetTimestamp"],
                  f"tools/list serves each tool under its listing name: {names}")
            add = listed.tools[0]
            check(add.inputSchema["required"] == ["a", "b"], "the input schema is the tool's")
            sleep = listed.tools[3]
            check(sleep.title == "Sleep" and sleep.annotations.readOnlyHint is True
                  and sleep.annotations.idempotentHint is True
                  and sleep.annotations.destructiveHint is False,
                  "a tool's title and annotations are served as MCP's")
            stamp = listed.tools[8]
            check(stamp.outputSchema and stamp.outputSchema["type"] == "object",
                  "an object output has an output schema")

            result = await session.call_tool("Calculator_Add", {"a": 10, "b": 5})
            check(not result.isError and result.content[0].text == "15", "a call answers its value")

            result = await session.call_tool("System_GetTimestamp", {})
            check(not result.isError and "timestamp" in result.structuredContent,
                  "a tool without input answers structured content, validated by the SDK")

            result = await session.call_tool("Demo_Image", {})
            kinds = [c.type for c in result.content]
            image = result.content[1]
            check(not result.isError and kinds == ["text", "image"]
                  and image.mimeType == "image/png"
                  and base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n"),
                  "content items are MCP content blocks: a text and a real PNG image")

            result = await session.call_tool("Doorbell_Ring", {"doorbell_id": "nope"})
            error = json.loads(result.content[0].text)
            check(result.isError and error["message"] == "Doorbell ID not found"
                  and error["can_retry"] is True and error["retry_after_ms"] == 500,
                  "a tool error is isError with the OXP error fields")

            result = await session.call_tool("Calculator_Add", {"a": "ten"})
            error = json.loads(result.content[0].text)
            check(result.isError and set(error["parameter_errors"]) == {"a", "b"},
                  "invalid arguments are isError naming each bad parameter")

            try:
                await session.call_tool("No_Such_Tool", {})
                check(False, "an unknown tool is an error")
            except McpError as e:
                check(e.error.code == -32602 and "No_Such_Tool" in e.error.message,
                      "an unknown tool is a JSON-RPC invalid params error")

            await session.send_ping()
            check(True, "ping answers")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
