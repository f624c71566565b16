"""Lambda's side of tests/stack_on_moto.py: a Runtime API on loopback that hands events to a
bootstrap and keeps its answers, the bootstrap started as Lambda starts it, the agent's
callback endpoint, and the events API Gateway and SQS send."""

import http.server
import json
import os
import subprocess
import threading
import time
import uuid

REGION = "us-east-1"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RuntimeApi(http.server.ThreadingHTTPServer):
    """A Lambda Runtime API on loopback: hands out events, keeps the answers."""

    daemon_threads = True

    def __init__(self, function_arn):
        super().__init__(("127.0.0.1", 0), RuntimeHandler)
        self.function_arn = function_arn
        self.events, self.answers = [], {}
        self.ready = threading.Condition()
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def invoke(self, event, client_context=None, within=30):
        request_id = str(uuid.uuid4())
        with self.ready:
            self.events.append((request_id, event, client_context))
            self.ready.notify_all()
            assert self.ready.wait_for(lambda: request_id in self.answers, within), "no answer"
            return self.answers.pop(request_id)


class RuntimeHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        api = self.server
        with api.ready:
            api.ready.wait_for(lambda: api.events)
            request_id, event, context = api.events.pop(0)
        body = json.dumps(event).encode()
        self.send_response(200)
        self.send_header("Lambda-Runtime-Aws-Request-Id", request_id)
        self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1000) + 30_000))
        self.send_header("Lambda-Runtime-Invoked-Function-Arn", api.function_arn)
        self.send_header("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793")
        if context is not None:
            self.send_header("Lambda-Runtime-Client-Context", json.dumps(context))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        streamed = self.headers.get("Lambda-Runtime-Function-Response-Mode") == "streaming"
        body = self.chunked() if streamed else self.rfile.read(int(self.headers.get("Content-Length", 0)))
        parts = self.path.strip("/").split("/")
        api = self.server
        if parts[-1] in ("response", "error"):
            if parts[-1] == "error":
                answer = {"runtime_error": body.decode()}
            elif streamed:
                # Response streaming: the status and headers as JSON, eight NULs, the body.
                prelude, _, rest = body.partition(b"\0" * 8)
                answer = {**json.loads(prelude), "body": rest.decode(), "streamed": True}
            else:
                answer = json.loads(body)
            with api.ready:
                api.answers[parts[-2]] = answer
                api.ready.notify_all()
        self.send_response(202)
        self.send_header("Content-Length", "0")
        self.end_headers()


    def chunked(self):
        """A body sent with chunked transfer encoding (a streamed answer), whole."""
        body = b""
        while True:
            size = int(self.rfile.readline().split(b";")[0], 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                return body
            body += self.rfile.read(size)
            self.rfile.readline()


class Bootstrap:
    """The function's bootstrap with its environment as created and its role's credentials."""

    def __init__(self, binary, moto, function):
        arn = f"arn:aws:lambda:{REGION}:123456789012:function:{function['name']}"
        self.api = RuntimeApi(arn)
        creds = function["creds"]
        env = {
            # Lambda's variables are strings (moto keeps a Number parameter's type).
            **{k: str(v) for k, v in function["env"].items()},
            "PATH": os.environ.get("PATH", ""),
            "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{self.api.server_address[1]}",
            "AWS_LAMBDA_FUNCTION_NAME": function["name"],
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
            "AWS_REGION": REGION,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ACCESS_KEY_ID": creds["aws_access_key_id"],
            "AWS_SECRET_ACCESS_KEY": creds["aws_secret_access_key"],
            "AWS_SESSION_TOKEN": creds["aws_session_token"],
            # Only the test's: AWS is moto, callbacks go to a receiver on loopback over http.
            "AWS_ENDPOINT_URL": moto.url,
            "OXP_RAP_ALLOW_HTTP": "true",
            "OXP_RAP_ALLOW_LOOPBACK_CALLBACKS": "true",
        }
        self.stderr = open(os.path.join(ROOT, "target", f"stack-{function['name']}.log"), "w")
        self.proc = subprocess.Popen([binary], env=env, stdout=self.stderr, stderr=subprocess.STDOUT)

    def invoke(self, event, client_context=None):
        assert self.proc.poll() is None, f"the bootstrap exited: see {self.stderr.name}"
        return self.api.invoke(event, client_context)

    def stop(self):
        self.proc.kill()
        self.proc.wait()
        self.api.shutdown()


class Receiver(http.server.ThreadingHTTPServer):
    """The agent's callback endpoint: /ok answers 200, /reject 400."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), ReceiverHandler)
        self.hits = []
        threading.Thread(target=self.serve_forever, daemon=True).start()

    def url(self, path):
        return f"http://127.0.0.1:{self.server_address[1]}/{path}"


class ReceiverHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        self.server.hits.append((self.path, body))
        self.send_response(200 if self.path == "/ok" else 400)
        self.send_header("Content-Length", "0")
        self.end_headers()


def http_event(method, path, body, sub):
    """An HTTP API (payload 2.0) event with a JWT authorizer's verified claims."""
    return {
        "version": "2.0", "routeKey": f"{method} {path}", "rawPath": path, "rawQueryString": "",
        "headers": {"host": "api.example.com", "content-type": "application/json"},
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "api.example.com",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1",
                     "sourceIp": "203.0.113.10", "userAgent": "agent"},
            "requestId": str(uuid.uuid4()), "routeKey": f"{method} {path}", "stage": "$default",
            "time": "24/Nov/2026:04:00:00 +0000", "timeEpoch": int(time.time() * 1000),
            "authorizer": {"jwt": {"claims": {"sub": sub}, "scopes": None}},
        },
        "isBase64Encoded": False,
        "body": json.dumps(body),
    }


def sqs_event(messages, queue_arn):
    return {"Records": [{
        "messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
        "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "0", "SenderId": "x",
                       "ApproximateFirstReceiveTimestamp": "0"},
        "messageAttributes": {}, "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn, "awsRegion": REGION} for m in messages]}
