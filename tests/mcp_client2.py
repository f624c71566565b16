"""The MCP Python SDK 2.x (`mcp.Client(url)`, auto mode: 2026-07-28 where the server speaks it)
against the oxp-lambda binary. Run by tests/mcp_client2.rs with the SDK installed by
scripts/test into .venv/mcp2. Prints one `ok   <what>` line per check; exits non-zero at the first
that fails."""
import sys
import time

import anyio
import mcp_types as types
from mcp import Client


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


async def main(url):
    asked = []
    sampled = []

    async def sample(_context, params):
        sampled.append(params)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="A short summary."),
            model="test-model", stop_reason="endTurn")

    async def elicit(_context, params):
        asked.append(params)
        choice = params.requested_schema["properties"]["choice"]["enum"][1]
        return types.ElicitResult(action="accept", content={"choice": choice})

    async with Client(url, elicitation_callback=elicit, sampling_callback=sample) as client:
        check(client.protocol_version == "2026-07-28",
              f"auto mode negotiates 2026-07-28: {client.protocol_version}")
        listed = await client.list_tools()
        names = [t.name for t in listed.tools]
        check("Calculator_Add" in names and "Demo_Confirm" in names, f"tools/list: {names}")
        stamp = next(t for t in listed.tools if t.name == "System_GetTimestamp")
        check(stamp.input_schema.get("properties") == {}, "a tool without input lists properties {}")

        result = await client.call_tool("Calculator_Add", {"a": 10, "b": 5})
        check(not result.is_error and result.content[0].text == "15", "a call answers its value")

        result = await client.call_tool("Demo_Image", {})
        check([c.type for c in result.content] == ["text", "image"], "content items are content blocks")

        result = await client.call_tool("Doorbell_Ring", {"doorbell_id": "nope"})
        check(result.is_error, "a tool error is isError")

        # A tool asks the user: the SDK drives the input_required round through its callback.
        result = await client.call_tool(
            "Demo_Confirm", {"prompt": "Deploy?", "choices": ["Yes", "No"], "default": 0})
        check(len(asked) == 1 and asked[0].message == "Deploy?", "the question reaches the callback")
        check(not result.is_error and result.structured_content == {"selected": 1, "choice": "No"},
              f"the call completes with the user's choice: {result}")

        # A tool asks the client's model: the SDK drives the sampling round through its callback.
        text = "The quick brown fox jumps over the lazy dog."
        result = await client.call_tool("Demo_Summarize", {"text": text})
        check(len(sampled) == 1 and text in sampled[0].messages[0].content.text
              and sampled[0].max_tokens == 300, f"the request reaches the model: {sampled}")
        check(not result.is_error and result.structured_content == {"summary": "A short summary."},
              f"the call completes with the model's answer: {result}")

        # A call with a progress callback: the tool's progress arrives before its result.
        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        result = await client.call_tool("Demo_Sleep", {"ms": 300}, progress_callback=on_progress)
        done = [p for p, _, _ in seen]
        check(not result.is_error and len(seen) == 10 and done == sorted(set(done))
              and seen[-1][:2] == (300, 300) and seen[0][2].startswith("slept "),
              f"progress reaches the callback, increasing, before the result: {seen}")

        # A client that gives up on a call cancels it: the server's one slot is free at once.
        started = time.monotonic()
        try:
            await client.call_tool("Demo_Sleep", {"ms": 20000}, read_timeout_seconds=0.5)
            check(False, "the sleep times out")
        except Exception:
            pass
    async with Client(url) as client:
        started = time.monotonic()
        result = await client.call_tool("Calculator_Add", {"a": 1, "b": 2})
        waited = time.monotonic() - started
        check(not result.is_error and waited < 1.0,
              f"after a timed-out call the slot is free within 1 s ({waited:.2f} s)")

    # The handshake revision (2025-11-25): the same request reaches the model on the call's
    # stream, under the session the server hands a client that declares sampling.
    async with Client(url, mode="legacy", sampling_callback=sample) as client:
        result = await client.call_tool("Demo_Summarize", {"text": "Handshake text."})
        check(len(sampled) == 2 and "Handshake text." in sampled[1].messages[0].content.text,
              "at 2025-11-25 the request reaches the model on the call's stream")
        check(not result.is_error and result.structured_content == {"summary": "A short summary."},
              f"and the call completes with its answer: {result}")
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("Demo_Summarize", {"text": "No model here."})
        check(result.is_error and "MCP client that offers it" in result.content[0].text,
              f"a handshake client without sampling gets a tool error saying why: {result}")


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
