"""The Lambda emulator steps the docs give, run as written (called by scripts/lambda-e2e).

Each ```sh block of a page below that starts `cargo lambda watch` is one session: the watch line
is run with the environment variables the page gives and nothing else (no AWS endpoint, no
queue), in the folder the page is written for, and every `cargo lambda invoke` line of the block
after it, with the page's function name, event and client context, and every `curl` line (a
request to the emulator's Function URL). The page must give the emulator's address, 127.0.0.1
(cargo lambda watch listens on every interface unless told). The only changes are a free port in
place of the page's (9000, which a CI machine may hold),
`--ignore-changes`, `--output-format json` to read an invocation's answer, and `-sS --max-time`
for curl. Each answer must hold what the page's reader is promised (EXPECTED below, or
tests/events_expected.json for the repository's own events; CURLED for a curl line's stream): a
step that drifted from the code fails here, not for a user.
"""

import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# page -> the folder its commands run in
PAGES = {
    "examples/starter/README.md": "examples/starter",
    "docs/deploy.md": ".",
}

# (page, event) -> what the answer holds (a subset: every key given, lists whole).
EXPECTED = {
    ("examples/starter/README.md", "events/apigw-http-call.json"): {
        "statusCode": 200,
        "body": {"result": {"success": True, "value": 15}},
    },
    ("examples/starter/README.md", "events/apigw-http-forecast-call.json"): {
        "statusCode": 200,
        "body": {"result": {"success": True, "value": {"city": "Lisbon", "summary": "Sunny in Lisbon"}}},
    },
    ("examples/starter/README.md", "events/apigw-http-mcp-call.json"): {
        "statusCode": 200,
        "body": {"id": 1, "result": {"isError": False, "content": [{"type": "text", "text": "15.0"}]}},
    },
    ("examples/starter/README.md", "events/agentcore-call.json"): {
        "isError": False,
        "content": [{"type": "text", "text": "15.0"}],
    },
}


def progress_then_result(messages):
    """An MCP call's stream: its tool's progress, then its result (the stream's last message)."""
    *progress, last = messages or [None]
    return (bool(progress) and all(m.get("method") == "notifications/progress" for m in progress)
            and isinstance(last, dict) and last.get("result", {}).get("isError") is False)


# (page, path) -> what a curl line's Server-Sent Events (their data, parsed) must be.
CURLED = {
    ("docs/deploy.md", "/lambda-url/oxp-lambda/mcp"): progress_then_result,
}


def contains(actual, want):
    if isinstance(want, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in want.items())
    if isinstance(want, list):
        return isinstance(actual, list) and len(actual) == len(want) and all(map(contains, actual, want))
    if isinstance(want, float) and isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return float(actual) == want
    return actual == want


def sessions(page):
    """Each sh block with a `cargo lambda watch`: (watch arguments, [invoke arguments])."""
    text = open(os.path.join(ROOT, page)).read()
    found = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        if "cargo lambda watch" not in block:
            continue
        watch, invokes = None, []
        for line in block.replace("\\\n", " ").splitlines():
            words = shlex.split(line, comments=True)
            if words and words[-1] == "&":
                words.pop()
            if words[:3] == ["cargo", "lambda", "watch"]:
                assert "127.0.0.1" in words, f"{page}: the emulator's address is said: {line!r}"
                watch = without_address(words[3:])
            elif words[:3] == ["cargo", "lambda", "invoke"]:
                invokes.append(without_address(words[3:]))
            elif words[:1] == ["curl"]:
                invokes.append(words)
            elif words:
                sys.exit(f"{page}: a line this check does not know how to run: {line!r}")
        assert watch is not None and invokes, f"{page}: a watch block without invocations"
        found.append((watch, invokes))
    assert found, f"{page}: no `cargo lambda watch` block"
    return found


def without_address(words):
    """`words` less the emulator's address and port the page gives (the check picks its own)."""
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word in ("--invoke-address", "--invoke-port", "-A", "-P"):
            skip = True
        else:
            out.append(word)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def expected_for(page, event):
    if (page, event) in EXPECTED:
        return EXPECTED[(page, event)]
    if page == "docs/deploy.md" and event.startswith("events/") and event.count("/") == 1:
        want = json.load(open(os.path.join(ROOT, "tests/events_expected.json")))[event[len("events/"):]]
        return {"statusCode": want["status"], "body": want["body"]}
    sys.exit(f"{page}: no expected answer for {event}: add it to EXPECTED")


def run_curl(page, args, port):
    """A curl line against the emulator on `port`; whether its stream is what CURLED promises."""
    url = next(a for a in args if "127.0.0.1:9000" in a)
    path = url.split("127.0.0.1:9000", 1)[1]
    args = [a.replace("127.0.0.1:9000", f"127.0.0.1:{port}") for a in args]
    done = subprocess.run([*args, "-sS", "--max-time", "900"], capture_output=True, text=True, timeout=960)
    messages = [json.loads(line[5:]) for line in done.stdout.splitlines() if line.startswith("data:")]
    ok = done.returncode == 0 and CURLED[(page, path)](messages)
    print(f"{'ok  ' if ok else 'FAIL'} {page}: curl {path}", flush=True)
    if not ok:
        print(f"     got  {done.stdout[-2000:]}{done.stderr}")
    return ok


def run_session(page, cwd, watch, invokes, log):
    port = free_port()
    env = dict(os.environ, CARGO_TARGET_DIR=os.path.join(ROOT, "target"))
    # Only what the page says: no AWS endpoint or queue from the caller's environment.
    for name in ["AWS_ENDPOINT_URL", "OXP_RAP_QUEUE_URL", "OXP_RAP_DEAD_LETTER_QUEUE_URL"]:
        env.pop(name, None)
    address = ["--invoke-address", "127.0.0.1", "--invoke-port", str(port)]
    print(f"==> {page}: cargo lambda watch {shlex.join(watch)}", flush=True)
    with open(log, "w") as out:
        server = subprocess.Popen(
            ["cargo", "lambda", "watch", *watch, *address, "--ignore-changes"],
            cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
    failed = 0
    try:
        for _ in range(300):
            if server.poll() is not None:
                sys.exit(f"cargo lambda watch exited: see {log}")
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                time.sleep(0.2)
        for args in invokes:
            if args[0] == "curl":
                failed += not run_curl(page, args, port)
                continue
            event = args[args.index("--data-file") + 1]
            done = subprocess.run(
                ["cargo", "lambda", "invoke", *args, *address, "--output-format", "json"],
                cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                print(done.stdout, done.stderr, open(log).read()[-4000:], sep="\n")
                sys.exit(f"{page}: cargo lambda invoke {shlex.join(args)} failed")
            answer = json.loads(done.stdout)
            if isinstance(answer, dict) and isinstance(answer.get("body"), str):
                answer = dict(answer, body=json.loads(answer["body"] or "null"))
            want = expected_for(page, event)
            ok = contains(answer, want)
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {page}: {event}", flush=True)
            if not ok:
                print(f"     got  {answer}\n     want {want}")
    finally:
        server.terminate()
        server.wait(30)
    return failed


def main():
    failed = 0
    for page, folder in PAGES.items():
        for i, (watch, invokes) in enumerate(sessions(page)):
            log = os.path.join(ROOT, "target", f"docs-emulator-{folder.replace('/', '-').strip('.') or 'repo'}-{i}.log")
            failed += run_session(page, os.path.join(ROOT, folder), watch, invokes, log)
    print(f"docs' emulator steps: {'all answered as promised' if not failed else f'{failed} failed'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
