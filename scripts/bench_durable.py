#!/usr/bin/env python3
"""The durable work model's figures, with the release binary on 127.0.0.1 (run by
`scripts/bench --talk-back`, with .venv's Python for boto3; prints one JSON object):

- takeover: two servers sharing a DynamoDB table on moto; one accepts a RAP invocation
  (`Demo.Sleep`, 1 s) and is killed (SIGKILL) 0.3 s into it; the time until the survivor's
  `tool_result` reaches the runtime, less the tool's own second: with the defaults
  (`OXP_WORK_LEASE_SECS` 30, `OXP_WORK_SWEEP_SECS` 5) and with a 5 s lease and a 1 s sweep.
- subscriptions: one server on an embedded file opens N subscriptions (`Demo.Watch` over RAP),
  publishes two signed events to their topic, closes their thread, and does it all again once
  the first round's records expired (a 180 s subscription lifetime): the server's resident
  memory and the file's size at each step, and the time until every subscription had the
  first event.
- memory: one server opens N subscriptions, then N more, its other caches (recent call
  outcomes, the database's pages) bounded to 4 MiB each: the resident set at each step, so
  the growth between them is what an open subscription holds.
- live: one server holding N live work records not due (the expiries of N open
  subscriptions), sweeping every second, on an embedded file and on a DynamoDB table on moto:
  RAP round trips (`Calculator.Add`, one at a time) for 70 s, so that sweeps and a reclaim pass
  (once a minute) fall among them: the median, the 99th percentile and the slowest, which a
  sweep or a reclaim that read every record would show.

    .venv/bin/python scripts/bench_durable.py BINARY MOTO_URL [N] [live]
"""
import hashlib, hmac, http.server, json, os, shutil, signal, subprocess, sys, tempfile
import threading, time, urllib.request, uuid
from concurrent.futures import ThreadPoolExecutor

from bench_lambda import free_port

SECRET = "bench-durable-webhook-secret"
# Subscriptions opened at once (fewer than a caller's pending invocations, 256 by default).
BATCH = 200
# Seconds the server is left before its memory is read.
SETTLE = 5
# The bound of the server's other caches in the memory run (4 MiB each).
CACHES = 4 * 1024 * 1024
# The subscriptions' lifetime (OXP_SUBSCRIPTION_TTL_SECS): longer than a round takes, short
# enough to wait for between the rounds.
TTL = 180


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
    return {"OXP_STATE_TABLE": table, "OXP_SECRET_MCP_STATE_KEY": "bench-servers-share-this-key-32-bytes",
            "AWS_ENDPOINT_URL": moto, "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}


def state_table(moto):
    import boto3
    client = boto3.client("dynamodb", endpoint_url=moto, region_name="us-east-1",
                          aws_access_key_id="testing", aws_secret_access_key="testing")
    name = f"oxp-durable-{uuid.uuid4().hex[:12]}"
    # As template.yaml makes it: the index of due work included.
    client.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": t}
                              for a, t in [("pk", "S"), ("sk", "S"), ("dpk", "S"), ("due", "N")]],
        GlobalSecondaryIndexes=[{"IndexName": "due", "Projection": {"ProjectionType": "ALL"},
                                 "KeySchema": [{"AttributeName": "dpk", "KeyType": "HASH"},
                                               {"AttributeName": "due", "KeyType": "RANGE"}]}])
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


def open_subscriptions(base, runtime, ids):
    """Opens a subscription to topic `fan` for each id, a batch at a time, each answered before
    the next: what stays in memory is what the subscriptions hold, not a burst of invocations
    in flight."""
    results = runtime.count("tool_result")
    done = 0
    for start_ in range(0, len(ids), BATCH):
        batch = ids[start_:start_ + BATCH]
        with ThreadPoolExecutor(32) as pool:
            list(pool.map(lambda i: post(base, "/invoke", {
                "operation": "Demo_Watch", "arguments": {"topic": "fan"},
                "id": i, "group_id": "fan", "callback_url": runtime.url}), batch))
        done += len(batch)
        runtime.wait("tool_result", results + done, 600)


def settled_rss_kib(pid):
    """The resident set once the allocator gave back what a burst left (it does within
    seconds)."""
    time.sleep(SETTLE)
    return rss_kib(pid)


def subscriptions(binary, n, ttl=TTL):
    """File (and memory) of N subscriptions over two rounds of open, two events, close; the
    second once the first one's records expired (a lifetime of `ttl` seconds)."""
    folder = tempfile.mkdtemp(prefix="oxp-durable-")
    state = os.path.join(folder, "oxp-state.redb")
    runtime = Runtime()
    # One caller (no authentication) opens them all: its shares sized to fit.
    proc, base = start(binary, {"OXP_STATE_PATH": state, "OXP_SUBSCRIPTION_MAX_PER_CALLER": str(2 * n),
                                "OXP_WORK_MAX_PER_CALLER": str(4 * n),
                                "OXP_SUBSCRIPTION_TTL_SECS": str(ttl)})
    out = {"n": n, "rounds": []}
    try:
        out["rss_start_kib"] = settled_rss_kib(proc.pid)
        out["file_start"] = os.path.getsize(state) if os.path.exists(state) else 0
        for round_ in range(2):
            r = {}
            open_subscriptions(base, runtime, [f"w{round_}-{i}" for i in range(n)])
            r["rss_open_kib"], r["file_open"] = settled_rss_kib(proc.pid), os.path.getsize(state)
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
            r["rss_events_kib"] = settled_rss_kib(proc.pid)
            post(base, "/close_thread", {"thread_id": "fan"})
            time.sleep(2)
            r["file_closed"] = os.path.getsize(state)
            out["rounds"].append(r)
            if round_ == 0:
                # The closed subscriptions' records expire a lifetime after the close; the
                # next round's writes reclaim them and reuse their pages.
                time.sleep(ttl + 5)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return out


def memory(binary, n):
    """What an open subscription holds in the server's memory: the resident set with N/2 open
    and with N open, the server's caches of other things (recent call outcomes, the database's
    pages) bounded small, so what grows is what subscriptions hold."""
    folder = tempfile.mkdtemp(prefix="oxp-durable-")
    runtime = Runtime()
    proc, base = start(binary, {"OXP_STATE_PATH": os.path.join(folder, "oxp-state.redb"),
                                "OXP_SUBSCRIPTION_MAX_PER_CALLER": str(2 * n),
                                "OXP_WORK_MAX_PER_CALLER": str(4 * n),
                                "OXP_IDEMPOTENCY_MAX_BYTES": str(CACHES),
                                "OXP_STATE_CACHE_BYTES": str(CACHES)})
    try:
        out = {"n": n, "caches_bytes": CACHES, "rss_start_kib": settled_rss_kib(proc.pid)}
        half = n // 2
        open_subscriptions(base, runtime, [f"m-{i}" for i in range(half)])
        out["rss_half_kib"] = settled_rss_kib(proc.pid)
        open_subscriptions(base, runtime, [f"m-{i}" for i in range(half, n)])
        out["rss_full_kib"] = settled_rss_kib(proc.pid)
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)
    return out


def live(binary, n, env):
    """RAP round trips (ms) for 70 s beside N live work records not due (`env`: the store)."""
    folder = tempfile.mkdtemp(prefix="oxp-durable-")
    runtime = Runtime()
    env = dict(env, OXP_SUBSCRIPTION_MAX_PER_CALLER=str(2 * n),
               OXP_WORK_MAX_PER_CALLER=str(4 * n), OXP_WORK_SWEEP_SECS="1")
    env.setdefault("OXP_STATE_PATH", os.path.join(folder, "oxp-state.redb"))
    proc, base = start(binary, env)
    try:
        open_subscriptions(base, runtime, [f"l-{i}" for i in range(n)])
        took = []
        end = time.monotonic() + 70
        i = 0
        while time.monotonic() < end:
            results = runtime.count("tool_result")
            sent = time.monotonic()
            post(base, "/invoke", {"operation": "Calculator_Add", "arguments": {"a": 1, "b": 2},
                                   "id": f"add-{i}", "group_id": "live", "callback_url": runtime.url})
            runtime.wait("tool_result", results + 1, 60)
            took.append((time.monotonic() - sent) * 1000)
            i += 1
        took.sort()
        return {"n": n, "calls": len(took), "median_ms": round(took[len(took) // 2], 2),
                "p99_ms": round(took[int(len(took) * 0.99)], 2), "max_ms": round(took[-1], 2)}
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(folder, ignore_errors=True)


def main():
    binary, moto = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    if sys.argv[4:] == ["live"]:
        print(json.dumps({"live_embedded": live(binary, n, {}),
                          "live_moto": live(binary, n, aws_env(moto, state_table(moto)))}))
        return
    figures = {
        "takeover_default_s": takeover(binary, moto, None, None, 3),
        "takeover_short_s": takeover(binary, moto, 5, 1, 3),
        "subscriptions": subscriptions(binary, n),
        "memory": memory(binary, 2 * n),
    }
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
