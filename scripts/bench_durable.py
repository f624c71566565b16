#!/usr/bin/env python3
"""The durable work model's figures, with the release binary on 127.0.0.1 (run by
`scripts/bench --talk-back`, with .venv's Python for boto3; prints one JSON object):

- takeover: two servers sharing a DynamoDB table on moto; one accepts a RAP invocation
  (`Demo.Sleep`, 1 s) and is killed (SIGKILL) 0.3 s into it; the time until the survivor's
  `tool_result` reaches the runtime, less the tool's own second: with the defaults
  (`OXP_WORK_LEASE_SECS` 30, `OXP_WORK_SWEEP_SECS` 5) and with a 5 s lease and a 1 s sweep.
- subscriptions: one server on an embedded file opens N subscriptions (`Demo.Watch` over RAP),
  publishes two signed events to their topic, closes their thread, and does it all again: the
  server's resident memory and the file's size at each step, and the time until every
  subscription had the first event.

    .venv/bin/python scripts/bench_durable.py BINARY MOTO_URL [N]
"""
import hashlib, hmac, http.server, json, os, shutil, signal, subprocess, sys, tempfile
import threading, time, urllib.request, uuid
from concurrent.futures import ThreadPoolExecutor

from bench_lambda import free_port

SECRET = "bench-durable-webhook-secret"
# Subscriptions opened at once (fewer than a caller's pending invocations, 256 by default).
BATCH = 200


class Runtime:
    """A RAP runtime's callback on loopback: counts each kind of message and when it came."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds = {}
        self.times = {}
        runtime = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()
                try:
                    kind = json.loads(body).get("type", "")
                except ValueError:
                    kind = ""
                with runtime.lock:
                    runtime.kinds[kind] = runtime.kinds.get(kind, 0) + 1
                    runtime.times[kind] = time.monotonic()

            def log_message(self, *_):
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True
            # The server delivers many at once: socketserver's backlog of 5 would drop their
            # connections (each then retried a second later), timing the backlog, not the server.
            request_queue_size = 1024

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/callback"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def count(self, kind):
        with self.lock:
            return self.kinds.get(kind, 0)

    def wait(self, kind, n, timeout):
        end = time.monotonic() + timeout
        while self.count(kind) < n:
            if time.monotonic() > end:
                raise RuntimeError(f"{self.count(kind)} of {n} {kind} after {timeout} s")
            time.sleep(0.005)
        with self.lock:
            return self.times[kind]


def start(binary, env):
    port = free_port()
    full = dict(os.environ, OXP_AUTH="none", OXP_LOG="warn", OXP_PORT=str(port),
                OXP_SECRET_DEMO_WEBHOOK_SECRET=SECRET, **env)
    full.pop("AWS_LAMBDA_RUNTIME_API", None)
    proc = subprocess.Popen([binary, "--port", str(port)], env=full,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            return proc, base
        except Exception:
            if time.monotonic() > end or proc.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)


def post(base, path, body, headers=None):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method="POST", headers={
        "content-type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=120) as r:
        return r.status, r.read()


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def aws_env(moto, table):
    return {"OXP_STATE_TABLE": table, "AWS_ENDPOINT_URL": moto, "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def state_table(moto):
    import boto3
    client = boto3.client("dynamodb", endpoint_url=moto, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    name = f"oxp-durable-{uuid.uuid4().hex[:12]}"
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                   {"AttributeName": "sk", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                              {"AttributeName": "sk", "AttributeType": "S"}])
    return name


def takeover(binary, moto, lease, sweep, runs):
    """Seconds from the kill to the survivor's answer, less the tool's own second."""
    delays = []
    for i in range(runs):
        env = aws_env(moto, state_table(moto))
        if lease:
            env.update(OXP_WORK_LEASE_SECS=str(lease), OXP_WORK_SWEEP_SECS=str(sweep))
        runtime = Runtime()
        first, base = start(binary, env)
        second, _ = start(binary, env)
        try:
            post(base, "/invoke", {"operation": "Demo_Sleep", "arguments": {"ms": 1000},
                                   "id": f"job-{i}", "group_id": "t", "callback_url": runtime.url})
            time.sleep(0.3)
            first.send_signal(signal.SIGKILL)
            first.wait()
            killed = time.monotonic()
            answered = runtime.wait("tool_result", 1, 120)
            delays.append(answered - killed - 1.0)
        finally:
            for p in (first, second):
                if p.poll() is None:
                    p.terminate()
                    p.wait()
    return sorted(delays)


def subscriptions(binary, n):
    """Memory and file of N subscriptions over two rounds of open, two events, close."""
    folder = tempfile.mkdtemp(prefix="oxp-durable-")
    state = os.path.join(folder, "oxp-state.redb")
    runtime = Runtime()
    # One caller (no authentication) opens them all: its shares sized to fit.
    proc, base = start(binary, {"OXP_STATE_PATH": state, "OXP_SUBSCRIPTION_MAX_PER_CALLER": str(2 * n),
                                "OXP_WORK_MAX_PER_CALLER": str(4 * n)})
    out = {"n": n, "rounds": []}
    try:
        time.sleep(0.5)
        out["rss_start_kib"] = rss_kib(proc.pid)
        out["file_start"] = os.path.getsize(state) if os.path.exists(state) else 0
        for round_ in range(2):
            r = {}
            # Opened a batch at a time, each answered before the next: what stays in memory is
            # what the subscriptions hold, not a burst of invocations in flight.
            results = runtime.count("tool_result")
            for start_ in range(0, n, BATCH):
                batch = range(start_, min(n, start_ + BATCH))
                with ThreadPoolExecutor(32) as pool:
                    list(pool.map(lambda i: post(base, "/invoke", {
                        "operation": "Demo_Watch", "arguments": {"topic": "fan"},
                        "id": f"w{round_}-{i}", "group_id": "fan", "callback_url": runtime.url}), batch))
                runtime.wait("tool_result", results + batch.stop, 600)
            time.sleep(1)
            r["rss_open_kib"], r["file_open"] = rss_kib(proc.pid), os.path.getsize(state)
            events = runtime.count("subscription_event")
            for k in (1, 2):
                body = json.dumps({"topic": "fan", "event": {"round": round_, "n": k}}).encode()
                sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
                sent = time.monotonic()
                status, _ = post(base, "/webhooks/demo", body, {"x-hub-signature-256": sig})
                assert status == 202, status
                done = runtime.wait("subscription_event", events + k * n, 600)
                if k == 1:
                    r["first_event_all_s"] = done - sent
                r[f"file_event_{k}"] = os.path.getsize(state)
            r["rss_events_kib"] = rss_kib(proc.pid)
            post(base, "/close_thread", {"thread_id": "fan"})
            time.sleep(2)
            r["file_closed"] = os.path.getsize(state)
            out["rounds"].append(r)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return out


def main():
    binary, moto = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    figures = {
        "takeover_default_s": takeover(binary, moto, None, None, 3),
        "takeover_short_s": takeover(binary, moto, 5, 1, 3),
        "subscriptions": subscriptions(binary, n),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
