"""The Lambda side of scripts/bench: a Runtime API on loopback that times a bootstrap from process
start to its first poll for an event and to its first answer, invocations per second of one
execution environment (sequential, and concurrent as under Lambda Managed Instances), and moto
for the AWS parts configured as in Lambda. Everything binds 127.0.0.1 and is bounded in time."""
import json, os, socket, statistics, subprocess, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
NEXT = "/2018-06-01/runtime/invocation/next"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class RuntimeApi:
    """Hands out `count` copies of (payload, client context) and records when the bootstrap first
    polled and first answered; each answer is acknowledged after `ack_delay` seconds (a stand-in
    for a tool waiting on I/O)."""

    def __init__(self, payload, context=None, count=1, ack_delay=0.0):
        self.body = json.dumps(payload).encode()
        self.context = json.dumps(context) if context is not None else None
        self.left, self.ack_delay = count, ack_delay
        self.first_poll = self.first_answer = None
        # The bootstrap's pid, once spawned: its CPU time and peak RSS are read at its first
        # answer (`usage`).
        self.pid, self.usage = None, None
        self.answers, self.errors = [], []
        self.done = threading.Event()
        self.lock = threading.Lock()
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes: without this, delayed ACKs add 40 ms.
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def reply(self, status, body=b"", headers=()):
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                now = time.perf_counter()
                with api.lock:
                    if api.first_poll is None:
                        api.first_poll = now
                    n = api.left
                    api.left -= 1
                if n <= 0:
                    api.done.wait(30)  # nothing more to hand out: hold the poll
                    return self.reply(410)
                deadline = int(time.time() * 1000) + 30_000
                headers = [("Lambda-Runtime-Aws-Request-Id", f"req-{n}"),
                           ("Lambda-Runtime-Deadline-Ms", str(deadline)),
                           ("Lambda-Runtime-Invoked-Function-Arn",
                            "arn:aws:lambda:us-east-1:123456789012:function:tools"),
                           ("Content-Type", "application/json")]
                if api.context:
                    headers.append(("Lambda-Runtime-Client-Context", api.context))
                self.reply(200, api.body, headers)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                now = time.perf_counter()
                if self.path.endswith("/response"):
                    if api.ack_delay:
                        time.sleep(api.ack_delay)
                    with api.lock:
                        if api.first_answer is None:
                            api.first_answer = now
                            api.usage = proc_usage(api.pid)
                        api.answers.append(body)
                else:
                    with api.lock:
                        api.errors.append(body)
                self.reply(202)

        class Server(ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # a bootstrap killed mid-poll is how every run ends

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.done.set()
        self.server.shutdown()
        self.server.server_close()


def proc_usage(pid):
    """(CPU ms used by every thread, peak RSS in MB) of process `pid` so far, or None. The CPU
    time is the scheduler's, in nanoseconds (/proc/PID/task/*/schedstat), not clock ticks."""
    if pid is None:
        return None
    try:
        cpu_ns = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                cpu_ns += int(f.read().split()[0])
        with open(f"/proc/{pid}/status") as f:
            hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        return None
    return cpu_ns / 1e6, hwm / 1024


def first_call(binary, env, payload, context=None):
    """One fresh start of `binary`: ms from spawn to its first poll, ms to its first answer, CPU
    ms used until that answer, peak RSS (MB) at it. An HTTP answer must be 2xx."""
    api = RuntimeApi(payload, context)
    t0 = time.perf_counter()
    p = subprocess.Popen([binary], env=lambda_env(api, env),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api.pid = p.pid
    try:
        wait_for(lambda: api.answers or p.poll() is not None, 30, f"{binary}'s first answer")
        if not api.answers:
            raise RuntimeError(f"{binary} exited ({p.returncode}) before answering")
        answer = json.loads(api.answers[0])
        status = answer.get("statusCode", 200) if isinstance(answer, dict) else 200
        if not 200 <= int(status) < 300 or api.errors:
            raise RuntimeError(f"{binary} answered {api.answers[0][:300]!r} {api.errors[:1]!r}")
        return ((api.first_poll - t0) * 1e3, (api.first_answer - t0) * 1e3, *api.usage)
    finally:
        p.kill()
        p.wait()
        api.close()


def lambda_env(api, extra):
    env = {"PATH": os.environ.get("PATH", ""), "AWS_LAMBDA_RUNTIME_API": api.address,
           "AWS_LAMBDA_FUNCTION_NAME": "tools", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
           "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "AWS_REGION": "us-east-1"}
    env.update(extra)
    return env


def wait_for(condition, timeout, what):
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.0005)


def lambda_init(binary, env, payload, context=None, runs=25):
    """Median ms from spawning `binary` against a fresh Runtime API to its first poll for an
    event, and to its answer of the first event."""
    polls, answers = [], []
    for _ in range(runs):
        api = RuntimeApi(payload, context)
        t0 = time.perf_counter()
        p = subprocess.Popen([binary], env=lambda_env(api, env),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            wait_for(lambda: api.first_answer is not None or p.poll() is not None, 15,
                     f"{binary}'s first answer")
            if api.first_answer is None:
                raise RuntimeError(f"{binary} exited ({p.returncode}) before answering")
            if api.errors:
                raise RuntimeError(f"{binary} reported an error: {api.errors[0][:200]!r}")
            polls.append((api.first_poll - t0) * 1e3)
            answers.append((api.first_answer - t0) * 1e3)
        finally:
            p.kill()
            p.wait()
            api.close()
    return statistics.median(polls), statistics.median(answers)


def invocations_per_second(binary, env, payload, count, concurrency, ack_delay):
    """Invocations per second one environment answers, from its first poll to its last answer."""
    api = RuntimeApi(payload, None, count, ack_delay)
    extra = dict(env)
    if concurrency:
        extra["AWS_LAMBDA_MAX_CONCURRENCY"] = str(concurrency)
    p = subprocess.Popen([binary], env=lambda_env(api, extra),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(api.answers) >= count or p.poll() is not None, 120, "the answers")
        if len(api.answers) < count:
            raise RuntimeError(f"{binary} exited after {len(api.answers)} answers")
        return count / (time.perf_counter() - api.first_poll)
    finally:
        p.kill()
        p.wait()
        api.close()


class Moto:
    """moto's server on loopback (installed into .venv by scripts/test), with the table and the
    queues the Lambda configuration names."""

    def __init__(self):
        if subprocess.run([PYTHON, "-c", "import moto.server, boto3"], capture_output=True).returncode:
            # As scripts/test installs it.
            subprocess.run(["python3", "-m", "venv", "--system-site-packages", os.path.dirname(os.path.dirname(PYTHON))], check=True)
            subprocess.run([PYTHON, "-m", "pip", "install", "--quiet", "moto[server]>=5,<6"], check=True)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([PYTHON, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        end = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=1)
                break
            except Exception:
                if time.monotonic() > end:
                    raise RuntimeError("moto did not start")
                time.sleep(0.2)
        made = subprocess.run([PYTHON, "-c", """
import sys, boto3
kw = dict(endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="testing",
          aws_secret_access_key="testing")
boto3.client("dynamodb", **kw).create_table(TableName="oxp-bench", BillingMode="PAY_PER_REQUEST",
    KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                          {"AttributeName": "sk", "AttributeType": "S"}])
sqs = boto3.client("sqs", **kw)
print(sqs.create_queue(QueueName="oxp-bench")["QueueUrl"], sqs.create_queue(QueueName="oxp-bench-dlq")["QueueUrl"])
boto3.client("secretsmanager", **kw).create_secret(Name="oxp/TWILIO_API_KEY", SecretString="bench")
""", self.url], check=True, capture_output=True, text=True).stdout.split()
        self.env = {"OXP_SECRETS_SOURCE": "aws", "OXP_SECRETS_PREFIX": "oxp/",
                    "OXP_IDEMPOTENCY": "dynamodb", "OXP_IDEMPOTENCY_TABLE": "oxp-bench",
                    "OXP_RAP_QUEUE_URL": made[0], "OXP_RAP_DEAD_LETTER_QUEUE_URL": made[1],
                    "AWS_ENDPOINT_URL": self.url, "AWS_REGION": "us-east-1",
                    "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}

    def close(self):
        self.proc.terminate()
        self.proc.wait()


def fixture(path):
    with open(os.path.join(ROOT, path)) as f:
        return json.load(f)


# Where no AWS part is configured: queues the worker role requires, never sent to here.
NO_QUEUES = {"OXP_RAP_QUEUE_URL": "http://127.0.0.1:9/000000000000/jobs",
             "OXP_RAP_DEAD_LETTER_QUEUE_URL": "http://127.0.0.1:9/000000000000/dead"}


def roles():
    """(role, env, event, client context) for each Lambda role of the bootstrap."""
    batch = fixture("events/sqs/rap-worker-batch.json")
    for record in batch["Records"]:
        # Answered at once as records to redeliver: no callback to wait for.
        record["body"] = "not a job"
    return [
        ("HTTP (API Gateway REST call)", {}, fixture("events/apigw-rest-call-success.json"), None),
        ("worker (SQS batch)", {"OXP_LAMBDA_ROLE": "worker"}, batch, None),
        ("AgentCore Gateway target", {"OXP_LAMBDA_ROLE": "agentcore"}, {"a": 2, "b": 3},
         {"custom": {"bedrockAgentCoreToolName": "tools___Calculator_Add"}}),
    ]
