"""Strands Agents' MCPClient (PyPI strands-agents, the agent SDK AWS users reach for first)
against the oxp-lambda binary, driven without a model, as an agent's tool loop drives it: it
lists and calls the showcase tools, answers a tool's question through its elicitation callback,
gets a tool's progress, and cancels a long call, whose slot the server frees at once. Run by
tests/mcp_strands.rs with Strands installed by scripts/test into .venv/strands. Prints one
`ok   <what>` line per check; exits non-zero at the first that fails."""
import sys
import threading
import time

import mcp_types as types
from strands.tools.mcp import MCPClient, TasksConfig


def check(cond, what):
    if not cond:
        print(f"FAIL {what}", flush=True)
        sys.exit(1)
    print(f"ok   {what}", flush=True)


def main(url):
    asked = []

    async def elicit(_context, params):
        asked.append(params)
        choice = params.requested_schema["properties"]["choice"]["enum"][1]
        return types.ElicitResult(action="accept", content={"choice": choice})

    with MCPClient(url=url, elicitation_callback=elicit) as client:
        # Strands reads the negotiated revision the same way before it uses tasks.
        version = client._background_thread_session.protocol_version
        check(version == "2026-07-28", f"Strands negotiates 2026-07-28: {version}")
        names = [t.tool_name for t in client.list_tools_sync()]
        check("Calculator_Add" in names and "Demo_Sleep" in names, f"list_tools_sync: {names}")

        result = client.call_tool_sync("call-1", "Calculator_Add", {"a": 10, "b": 5})
        check(result["status"] == "success" and result["content"][0]["text"] == "15",
              f"a call answers its value: {result}")

        result = client.call_tool_sync("call-2", "Doorbell_Ring", {"doorbell_id": "nope"})
        check(result["status"] == "error", "a tool error is an error result")

        result = client.call_tool_sync(
            "call-3", "Demo_Confirm", {"prompt": "Deploy?", "choices": ["Yes", "No"], "default": 0})
        check(len(asked) == 1 and asked[0].message == "Deploy?", "the question reaches the callback")
        check(result["status"] == "success"
              and result.get("structuredContent") == {"selected": 1, "choice": "No"},
              f"the call completes with the user's choice: {result}")

        seen = []

        async def on_progress(progress, total, message):
            seen.append((progress, total, message))

        result = client.call_tool_sync("call-4", "Demo_Sleep", {"ms": 300}, progress_callback=on_progress)
        done = [p for p, _, _ in seen]
        check(result["status"] == "success" and len(seen) == 10 and done == sorted(set(done)),
              f"progress reaches the callback, increasing, before the result: {seen}")

        # The agent gives up on a call (its cancel signal): the server's one slot is free at once.
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        result = client.call_tool_sync("call-5", "Demo_Sleep", {"ms": 20000}, cancel_signal=cancel)
        check(result["status"] == "error", f"the cancelled call ends in an error result: {result}")
        started = time.monotonic()
        result = client.call_tool_sync("call-6", "Calculator_Add", {"a": 1, "b": 2})
        waited = time.monotonic() - started
        check(result["status"] == "success" and waited < 1.0,
              f"after a cancelled call the slot is free within 1 s ({waited:.2f} s)")

    # With its tasks configuration Strands declares the extension: a long-running tool is a
    # task, which it polls to its result; cancelling the call cancels the task.
    with MCPClient(url=url, tasks_config=TasksConfig()) as client:
        result = client.call_tool_sync("call-7", "Demo_Sleep", {"ms": 300})
        check(result["status"] == "success" and '"cancelled":false' in result["content"][0]["text"],
              f"a long-running tool runs as a task polled to its result: {result}")
        cancel = threading.Event()
        threading.Timer(0.5, cancel.set).start()
        result = client.call_tool_sync("call-8", "Demo_Sleep", {"ms": 20000}, cancel_signal=cancel)
        check(result["status"] == "error", f"the cancelled task's call ends in an error result: {result}")
        started = time.monotonic()
        result = client.call_tool_sync("call-9", "Calculator_Add", {"a": 1, "b": 2})
        waited = time.monotonic() - started
        check(result["status"] == "success" and waited < 1.0,
              f"after a cancelled task the slot is free within 1 s ({waited:.2f} s)")


if __name__ == "__main__":
    main(sys.argv[1])
