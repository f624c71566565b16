"""The stack as deployed, on moto, each function under its own role with IAM enforced.

Run by tests/stack.rs (`scripts/test`): `stack_on_moto.py BOOTSTRAP`, BOOTSTRAP being the host
build of the `oxp-lambda` binary (the same code as the arm64 bootstrap).

1. template.yaml is translated by the SAM translator (aws-sam-translator, the library behind
   `sam deploy`) with the code in S3, as `sam deploy` uploads it.
2. The translated template is checked: every function's role allows what its environment
   makes the binary call, on those resources only, and nothing else (least privilege, read
   from the template, including the parts moto cannot enforce, see 4).
3. The stack is created in moto's CloudFormation (its own moto server, started here); each
   function's role is assumed (STS) and its environment read back from Lambda as created.
4. IAM enforcement is switched on (moto's INITIAL_NO_AUTH_ACTION_COUNT, through
   /moto-api/reset-auth) and each function's bootstrap runs under a Lambda Runtime API on
   loopback with its own role's credentials: an OXP call with its idempotency record in
   DynamoDB and a secret from Secrets Manager, /invoke enqueued to SQS, the worker (fed from
   the queue with its role's rights, as Lambda's poller is) calling back exactly once and
   dead-lettering an undeliverable result, an MCP task queued by the HTTP function and run by
   the worker, the AgentCore and Bedrock Agents functions. Calls a role must not make are
   refused.
   What moto cannot enforce: it authorizes DynamoDB and Secrets Manager calls against the
   resource "*" (only SQS names the queue), so in the deployed copy those statements name "*"
   (their actions are still enforced, and step 2 checks their resources); it ignores resource
   policies (the invocations queue's policy, Lambda permissions) and does not create HTTP APIs
   from CloudFormation (API Gateway is played by the events sent here).
"""

import ast
import copy
import io
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile

import boto3
import botocore.exceptions
from cfnlint.decode import decode_str
from samtranslator.translator.transform import transform

from lambda_harness import REGION, ROOT, Bootstrap, Receiver, http_event, sqs_event

PARAMETERS = {
    "AuthMode": "apigateway",
    "EnableAgentCoreTarget": "true",
    "AgentCoreGatewayRoleArn": "arn:aws:iam::123456789012:role/agentcore-gateway",
    "EnableBedrockAgentFunction": "true",
    "EnableDashboard": "true",
    # The streaming twin of the HTTP function (its role, a RESPONSE_STREAM Function URL, a REST
    # API whose integration streams).
    "EnableStreamingFunctionUrl": "true",
    "EnableStreamingRestApi": "true",
    "SecretPrefix": "oxp/",
    # Users' authorization on (docs/authorization.md): the conditional vault table, its grants
    # and the functions starting with a provider configured.
    "OAuthProviders": "github",
    "PublicUrl": "https://tools.example.com",
    "GitHubClientId": "Iv1.test",
    # A web agent's pages: their preflights answered by the deployed function itself.
    "AllowedOrigins": "https://agent.example.com",
}
BASIC = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
SQS_POLLER = "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole"
# Claims and outcomes are conditional writes; a release writes an expired record, which the
# store turns into a conditional delete.
IDEMPOTENCY = ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem"]


def log(message):
    print(f"stack: {message}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# 1. Translation ----------------------------------------------------------------------------


def translate():
    template, problems = decode_str(open(os.path.join(ROOT, "template.yaml")).read())
    assert not problems, problems
    template = json.loads(json.dumps(template))
    template["Globals"]["Function"]["CodeUri"] = "s3://oxp-code/bootstrap.zip"

    class NoManagedPolicyNames:
        # Policies in template.yaml are statements and ARNs, never names to look up.
        def load(self):
            return {}

    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    return json.loads(json.dumps(transform(template, PARAMETERS, NoManagedPolicyNames())))


# 2. Least privilege, from the translated template ------------------------------------------


def ref(logical):
    return {"Ref": logical}


def arn_of(logical):
    return {"Fn::GetAtt": [logical, "Arn"]}


SECRETS = {
    "Fn::Sub": "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${SecretPrefix}*"
}


def grants(statements):
    """(action, resource) pairs a list of Allow statements grants, resources as written."""
    out = []
    for s in statements:
        assert s["Effect"] == "Allow", s
        actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
        resources = s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
        for a in actions:
            for r in resources:
                assert r != "*", f"a wildcard resource for {a}"
                out.append((a, json.dumps(r, sort_keys=True)))
    return sorted(out)


STATE = ["dynamodb:DeleteItem", "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"]


def needed(env, has_sqs_trigger):
    """What the binary calls in a function with `env`, as (action, resource) pairs."""
    role = env.get("OXP_LAMBDA_ROLE", "http")
    calls = []
    if env.get("OXP_SECRETS_SOURCE") == "aws":
        calls.append(("secretsmanager:GetSecretValue", SECRETS))
    # Only calls with a call id claim one: OXP calls (http) and RAP jobs (worker). AgentCore
    # and Bedrock Agents events carry none, so those roles never touch the table.
    if env.get("OXP_IDEMPOTENCY_TABLE") == ref("OxpCallsTable") and role in ("http", "worker"):
        calls += [(a, arn_of("OxpCallsTable")) for a in IDEMPOTENCY]
    # Durable state (questions, cancellation marks, subscriptions): the HTTP function and the
    # worker; the direct roles carry no call that talks back.
    if env.get("OXP_STATE_TABLE") == ref("OxpStateTable") and role in ("http", "worker"):
        calls += [(a, arn_of("OxpStateTable")) for a in STATE]
    # The worker's sweep reads the work come due from the table's index.
    if env.get("OXP_STATE_TABLE") == ref("OxpStateTable") and role == "worker":
        calls.append(("dynamodb:Query", {"Fn::Sub": "${OxpStateTable.Arn}/index/due"}))
    # /invoke wakes the worker through the queue (http); the worker puts a retry back on it
    # with its backoff as the delay, and records undeliverable results.
    if env.get("OXP_RAP_QUEUE_URL") == ref("OxpInvocationsQueue") and role in ("http", "worker"):
        calls.append(("sqs:SendMessage", arn_of("OxpInvocationsQueue")))
    if env.get("OXP_RAP_DEAD_LETTER_QUEUE_URL") == ref("OxpDeadLetterQueue") and role == "worker":
        calls.append(("sqs:SendMessage", arn_of("OxpDeadLetterQueue")))
    # MCP tasks are queued by the HTTP function (the same queue: one grant).
    enqueue = ("sqs:SendMessage", arn_of("OxpInvocationsQueue"))
    if env.get("OXP_MCP_TASK_QUEUE_URL") == ref("OxpInvocationsQueue") and role in ("http", "worker") \
            and enqueue not in calls:
        calls.append(enqueue)
    managed = [BASIC] + ([SQS_POLLER] if has_sqs_trigger else [])
    return sorted((a, json.dumps(r, sort_keys=True)) for a, r in calls), managed


def check_least_privilege(translated):
    resources = translated["Resources"]
    functions = {k: v for k, v in resources.items() if v["Type"] == "AWS::Lambda::Function"}
    assert len(functions) == 5, sorted(functions)
    for name, function in functions.items():
        props = function["Properties"]
        role_name = props["Role"]["Fn::GetAtt"][0]
        role = resources[role_name]["Properties"]
        env = props["Environment"]["Variables"]
        triggers = [
            r for r in resources.values()
            if r["Type"] == "AWS::Lambda::EventSourceMapping"
            and r["Properties"]["FunctionName"] == ref(name)
        ]
        calls, managed = needed(env, bool(triggers))
        statements = [s for p in role.get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
        # Conditional statements (HasHs256) are not there with these parameters.
        statements = [s for s in statements if not (isinstance(s, dict) and "Fn::If" in s)]
        assert grants(statements) == calls, f"{name}: grants {grants(statements)}, needs {calls}"
        assert sorted(role.get("ManagedPolicyArns", [])) == sorted(managed), name
        trust = role["AssumeRolePolicyDocument"]["Statement"]
        assert trust == [{"Action": ["sts:AssumeRole"], "Effect": "Allow",
                          "Principal": {"Service": ["lambda.amazonaws.com"]}}], trust
        log(f"{name}: its role grants exactly what its environment calls ({len(calls)} grants)")
    # The streaming twin runs as the HTTP function does, answering through its streaming URL.
    stream = functions["OxpStreamFunction"]["Properties"]
    assert stream["Role"] == {"Fn::GetAtt": ["OxpFunctionRole", "Arn"]}, stream["Role"]
    assert stream["Environment"]["Variables"]["OXP_LAMBDA_STREAMING"] == "true", stream
    urls = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::Lambda::Url"
            and r["Properties"]["TargetFunctionArn"] == ref("OxpStreamFunction")]
    assert [(u["InvokeMode"], u["AuthType"]) for u in urls] == \
        [("RESPONSE_STREAM", {"Ref": "StreamingAuthType"})], urls
    assert "StreamingAuthType" not in PARAMETERS, "the default, AWS_IAM"
    opened = [k for k, r in resources.items() if r.get("Condition") == "HasOpenStreamingUrl"]
    assert sorted(opened) == ["OxpStreamUrlPublicInvoke", "OxpStreamUrlPublicInvokeUrl"], opened
    method = resources["OxpStreamRestProxyAny"]["Properties"]
    integration = method["Integration"]
    assert (integration["Type"], integration["ResponseTransferMode"]) == ("AWS_PROXY", "STREAM"), method
    uri = json.dumps(integration["Uri"])
    assert "OxpStreamFunction.Arn" in uri and "/response-streaming-invocations" in uri, uri
    assert method["AuthorizationType"] == {"Fn::If": ["IsStreamingOpen", "NONE", "AWS_IAM"]}, method
    log("OxpStreamFunction: the HTTP function's role, behind an IAM-authenticated streaming URL and REST API")


# 3. The stack in moto ----------------------------------------------------------------------


class Moto:
    def __init__(self):
        self.url = f"http://127.0.0.1:{free_port()}"
        env = dict(os.environ, MOTO_IAM_LOAD_MANAGED_POLICIES="true")
        port = self.url.rsplit(":", 1)[1]
        self.log = open(os.path.join(ROOT, "target", "moto-stack.log"), "w")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", port],
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(150):
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=1)
                return
            except Exception:
                assert self.proc.poll() is None, "moto exited"
                time.sleep(0.2)
        raise AssertionError("moto did not start")

    def client(self, service, creds):
        return boto3.client(service, endpoint_url=self.url, region_name=REGION, **creds)

    def enforce_iam(self):
        # Every request from now on is authenticated and authorized against its caller's policies.
        request = urllib.request.Request(self.url + "/moto-api/reset-auth", data=b"0", method="POST",
                                         headers={"Content-Type": "text/plain"})
        assert json.load(urllib.request.urlopen(request))["status"] == "ok"

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def creds_of(key):
    return {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"],
            **({"aws_session_token": key["SessionToken"]} if "SessionToken" in key else {})}


def as_deployed_on_moto(translated):
    """The copy moto can enforce: DynamoDB and Secrets Manager statements name "*" (see above),
    and no Function URL."""
    deployed = copy.deepcopy(translated)
    # Nor does moto's CloudFormation know Function URLs (checked from the translation above):
    # without them, the outputs that name one.
    urls = [k for k, r in deployed["Resources"].items() if r["Type"] == "AWS::Lambda::Url"]
    for name in urls:
        del deployed["Resources"][name]
    deployed["Outputs"] = {k: o for k, o in deployed.get("Outputs", {}).items()
                           if not any(u in json.dumps(o["Value"]) for u in urls)}
    for resource in deployed["Resources"].values():
        if resource["Type"] != "AWS::IAM::Role":
            continue
        for policy in resource["Properties"].get("Policies", []):
            for s in policy["PolicyDocument"]["Statement"]:
                if "Fn::If" in s:
                    continue
                actions = s["Action"] if isinstance(s["Action"], list) else [s["Action"]]
                if all(a.startswith(("dynamodb:", "secretsmanager:")) for a in actions):
                    s["Resource"] = "*"
    return deployed


def deploy(moto, translated):
    anyone = {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
    iam = moto.client("iam", anyone)
    iam.create_user(UserName="deployer")
    iam.put_user_policy(UserName="deployer", PolicyName="admin", PolicyDocument=json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
    admin = creds_of(iam.create_access_key(UserName="deployer")["AccessKey"])

    s3 = moto.client("s3", admin)
    s3.create_bucket(Bucket="oxp-code")
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as z:
        z.writestr("bootstrap", "the host build runs in its place")
    s3.put_object(Bucket="oxp-code", Key="bootstrap.zip", Body=code.getvalue())

    cfn = moto.client("cloudformation", admin)
    cfn.create_stack(
        StackName="oxp", TemplateBody=json.dumps(as_deployed_on_moto(translated)),
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in PARAMETERS.items()],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"])
    for _ in range(100):
        stack = cfn.describe_stacks(StackName="oxp")["Stacks"][0]
        if not stack["StackStatus"].endswith("IN_PROGRESS"):
            break
        time.sleep(0.1)
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack
    physical = {r["LogicalResourceId"]: r.get("PhysicalResourceId")
                for r in cfn.describe_stack_resources(StackName="oxp")["StackResources"]
                if r.get("LogicalResourceId")}

    # moto's CloudFormation stores a role's inline policy as a Python repr, with a None where
    # AWS::NoValue removed a statement, which its IAM check cannot read: write each one again
    # as the JSON CloudFormation would have made, through the IAM API.
    iam = moto.client("iam", admin)
    for logical, kind in translated["Resources"].items():
        if kind["Type"] == "AWS::IAM::Role":
            role = physical[logical]
            for name in iam.list_role_policies(RoleName=role)["PolicyNames"]:
                document = iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
                if isinstance(document, str):
                    document = ast.literal_eval(document)
                document["Statement"] = [s for s in document["Statement"] if s is not None]
                iam.put_role_policy(RoleName=role, PolicyName=name, PolicyDocument=json.dumps(document))
            # Nor does it attach the managed policies: attach them as CloudFormation does.
            attached = iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
            for arn in kind["Properties"].get("ManagedPolicyArns", []):
                if arn not in [a["PolicyArn"] for a in attached]:
                    iam.attach_role_policy(RoleName=role, PolicyArn=arn)

    lam, sts = moto.client("lambda", admin), moto.client("sts", admin)
    functions = {}
    for logical in ("OxpFunction", "OxpStreamFunction", "OxpWorkerFunction", "OxpAgentCoreFunction",
                    "OxpBedrockAgentFunction"):
        config = lam.get_function_configuration(FunctionName=physical[logical])
        role = sts.assume_role(RoleArn=config["Role"], RoleSessionName=physical[logical])
        functions[logical] = {
            "name": physical[logical],
            "env": config["Environment"]["Variables"],
            "creds": creds_of(role["Credentials"]),
        }
    # The test plays Lambda's SQS poller: moto's own would run the function in Docker.
    lam.update_event_source_mapping(UUID=physical["OxpWorkerFunctionInvocations"], Enabled=False)
    secrets = moto.client("secretsmanager", admin)
    secrets.create_secret(Name="oxp/TWILIO_API_KEY", SecretString="from-secrets-manager")
    log("stack created in moto's CloudFormation; each function's role assumed")
    return admin, physical, functions


# 4. Each bootstrap under its own role ------------------------------------------------------


def denied(call):
    try:
        call()
    except botocore.exceptions.ClientError as e:
        code = e.response["Error"]["Code"]
        assert code in ("AccessDenied", "AccessDeniedException", "403"), code
        return True
    return False


def wait_for(condition, what, within=20):
    deadline = time.time() + within
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def run(binary, moto, admin, physical, functions):
    dynamodb, sqs = moto.client("dynamodb", admin), moto.client("sqs", admin)
    table, queue, dlq = physical["OxpCallsTable"], physical["OxpInvocationsQueue"], physical["OxpDeadLetterQueue"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    receiver = Receiver()
    started = []
    try:
        http_fn = Bootstrap(binary, moto, functions["OxpFunction"])
        started.append(http_fn)

        # An OXP call with a call id: its secret from Secrets Manager, its record in DynamoDB.
        call = {"request": {"tool_id": "SMS.Send", "call_id": "stack-call-1",
                            "input": {"to": "+15550100", "message": "hi"}}}
        answer = http_fn.invoke(http_event("POST", "/tools/call", call, "alice"))
        assert answer["statusCode"] == 200, answer
        assert json.loads(answer["body"])["result"]["value"] == {"status": "sent"}, answer
        items = dynamodb.scan(TableName=table)["Items"]
        assert any(i["pk"]["S"] == "idempotency" and i["sk"]["S"].endswith(":stack-call-1") for i in items), items
        again = http_fn.invoke(http_event("POST", "/tools/call", call, "alice"))
        assert json.loads(again["body"]) == json.loads(answer["body"]), again
        log("http function: OXP call with its secret and its idempotency record, replayed")

        # A page of the allowed origin: its preflight answered (AllowedOrigins reached it).
        preflight = http_event("OPTIONS", "/mcp", None, "alice")
        preflight["headers"].update({"origin": "https://agent.example.com",
                                     "access-control-request-method": "POST"})
        answer = http_fn.invoke(preflight)
        assert answer["statusCode"] == 200, answer
        assert answer["headers"]["access-control-allow-origin"] == "https://agent.example.com", answer
        log("http function: a page of AllowedOrigins gets its CORS preflight answered")

        # The streaming twin: the same call, answered as a stream, under the same role.
        stream_fn = Bootstrap(binary, moto, functions["OxpStreamFunction"])
        started.append(stream_fn)
        call["request"]["call_id"] = "stack-call-streamed"
        streamed = stream_fn.invoke(http_event("POST", "/tools/call", call, "alice"))
        assert streamed.get("streamed") and streamed["statusCode"] == 200, streamed
        assert json.loads(streamed["body"])["result"]["value"] == {"status": "sent"}, streamed
        items = dynamodb.scan(TableName=table)["Items"]
        assert any(i["sk"]["S"].endswith(":stack-call-streamed") for i in items), items
        stream_fn.stop()
        started.remove(stream_fn)
        log("stream function: an OXP call streamed, its secret and record under the http role")

        # /invoke: enqueued to SQS before the 200.
        def invoke(rap_id, path):
            body = {"operation": "Calculator_Add", "arguments": {"a": 20, "b": 22}, "id": rap_id,
                    "group_id": "thread-1", "callback_url": receiver.url(path)}
            reply = http_fn.invoke(http_event("POST", "/invoke", body, "alice"))
            assert reply["statusCode"] == 200, reply
        invoke("stack-inv-1", "ok")

        # The worker, fed as Lambda's poller would, with the worker role's own rights.
        worker = Bootstrap(binary, moto, functions["OxpWorkerFunction"])
        started.append(worker)
        poller = moto.client("sqs", functions["OxpWorkerFunction"]["creds"])
        got = poller.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
        assert len(got) == 1, got
        batch = worker.invoke(sqs_event(got, queue_arn))
        assert batch == {"batchItemFailures": []}, batch
        wait_for(lambda: len(receiver.hits) == 1, "the callback")
        path, result = receiver.hits[0]
        assert path == "/ok" and result["id"] == "stack-inv-1" and result["text"] == "42", result
        # Redelivered (a visibility timeout, a retried batch): claimed in DynamoDB, run once.
        again = worker.invoke(sqs_event(got, queue_arn))
        assert again == {"batchItemFailures": []}, again
        time.sleep(1)
        assert len(receiver.hits) == 1, f"delivered twice: {receiver.hits}"
        poller.delete_message(QueueUrl=queue, ReceiptHandle=got[0]["ReceiptHandle"])
        log("worker: the invocation ran and was delivered exactly once, redelivery included")

        # An undeliverable result is recorded in the dead-letter queue by the worker.
        invoke("stack-inv-2", "reject")
        got = poller.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
        assert worker.invoke(sqs_event(got, queue_arn)) == {"batchItemFailures": []}
        letters = sqs.receive_message(QueueUrl=dlq, MaxNumberOfMessages=10, WaitTimeSeconds=2).get("Messages", [])
        assert any("stack-inv-2" in m["Body"] for m in letters), letters
        # Its delivery mark was released (deleted): a redelivery of the invocation may try
        # again at once, not after the mark's hold. (Moto's IAM checks a call's action, not
        # its table: which table each action is granted on is checked from the template above.)
        marks = [i["sk"]["S"] for i in dynamodb.scan(TableName=table)["Items"]
                 if i["sk"]["S"].startswith("rap-delivered:")]
        assert any(m.endswith(":stack-inv-1") for m in marks), marks
        assert not any(m.endswith(":stack-inv-2") for m in marks), marks
        log("worker: an undeliverable result went to the dead-letter queue, its mark released")

        # An MCP task: queued by the HTTP function, run by the worker, answered from the table.
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": {"name": "stack", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities":
                    {"extensions": {"io.modelcontextprotocol/tasks": {}}}}

        def mcp(method, name, params):
            message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": dict(params, _meta=meta)}
            event = http_event("POST", "/mcp", message, "alice")
            event["headers"].update({"accept": "application/json, text/event-stream",
                                     "mcp-protocol-version": "2026-07-28",
                                     "mcp-method": method, "mcp-name": name})
            reply = http_fn.invoke(event)
            assert reply["statusCode"] == 200, reply
            return json.loads(reply["body"])["result"]
        created = mcp("tools/call", "Demo_Sleep", {"name": "Demo_Sleep", "arguments": {"ms": 50}})
        assert created["resultType"] == "task", created
        got = poller.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)["Messages"]
        assert len(got) == 1 and "oxp_work" in got[0]["Body"], got
        assert worker.invoke(sqs_event(got, queue_arn)) == {"batchItemFailures": []}
        done = mcp("tasks/get", created["taskId"], {"taskId": created["taskId"]})
        assert done["status"] == "completed" and done["result"]["isError"] is False, done
        log("mcp task: queued by the http function, run by the worker, answered from the table")

        agentcore = Bootstrap(binary, moto, functions["OxpAgentCoreFunction"])
        started.append(agentcore)
        context = {"custom": {"bedrockAgentCoreToolName": "oxp___SMS_Send"}}
        result = agentcore.invoke({"to": "+15550100", "message": "hi"}, context)
        assert result.get("isError") is not True and "sent" in json.dumps(result), result
        log("agentcore function: a tool with its secret")

        bedrock = Bootstrap(binary, moto, functions["OxpBedrockAgentFunction"])
        started.append(bedrock)
        event = json.load(open(os.path.join(ROOT, "events", "bedrock-agent", "calculator-add.json")))
        event["function"] = "SMS_Send"
        event["parameters"] = [{"name": "to", "type": "string", "value": "+15550100"},
                               {"name": "message", "type": "string", "value": "hi"}]
        result = bedrock.invoke(event)
        body = result["response"]["functionResponse"]
        assert "responseState" not in body and "sent" in json.dumps(body), result
        log("bedrock-agent function: a tool with its secret")
    finally:
        for b in started:
            b.stop()

    # What each role was not given, refused by moto's IAM.
    def as_role(logical, service):
        return moto.client(service, functions[logical]["creds"])
    item = {"pk": {"S": "idempotency"}, "sk": {"S": "forged"}}
    for logical in ("OxpAgentCoreFunction", "OxpBedrockAgentFunction"):
        assert denied(lambda: as_role(logical, "dynamodb").put_item(TableName=table, Item=item)), logical
        assert denied(lambda: as_role(logical, "sqs").send_message(QueueUrl=queue, MessageBody="{}")), logical
    assert denied(lambda: as_role("OxpWorkerFunction", "dynamodb").scan(TableName=table))
    assert denied(lambda: as_role("OxpFunction", "sqs").send_message(QueueUrl=dlq, MessageBody="{}"))
    assert denied(lambda: as_role("OxpFunction", "dynamodb").scan(TableName=table))
    assert denied(lambda: as_role("OxpFunction", "secretsmanager").create_secret(Name="oxp/x", SecretString="x"))
    log("calls outside each role's grants are refused")


def main():
    binary = sys.argv[1]
    translated = translate()
    check_least_privilege(translated)
    moto = Moto()
    try:
        admin, physical, functions = deploy(moto, translated)
        moto.enforce_iam()
        anonymous = moto.client("sqs", {"aws_access_key_id": "nobody", "aws_secret_access_key": "x"})
        assert denied(lambda: anonymous.list_queues()), "IAM is not enforced"
        run(binary, moto, admin, physical, functions)
    finally:
        moto.stop()
    log("ok")


if __name__ == "__main__":
    main()
