#!/usr/bin/env python3
"""Each Lambda function of template.yaml against a hand-written function and a minimal one, as
docs/performance.md's "Lambda functions" reports them (run by scripts/bench, or alone).

Per function: its arm64 package zipped (scripts/lambda-packages builds them as SAM does), and
under a Runtime API on loopback, medians of interleaved fresh starts of its native release
build: spawn to the first poll, spawn to the first answer, CPU used until that answer, peak
RSS at it. The HTTP role's first event is `POST /tools/call` of `SMS.Send` with its secret in
Secrets Manager and its `call_id` claimed in DynamoDB (moto on loopback), a new `call_id` each
start; `examples/bench_handwritten.rs` does that same work by hand, and
`examples/bench_lambda_minimal.rs` answers `{}`.

    scripts/bench_functions.py [RUNS]     build, measure (RUNS starts each, 15), print the table
                                          and write it into docs/performance.md
    scripts/bench_functions.py --no-build [RUNS]   the same with the builds there are
    scripts/bench_functions.py --against DIR [RUNS]   each role's native release build here
                                          against the one in target directory DIR (another
                                          profile, say), started by turns; prints the medians
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, uuid, zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import bench_lambda  # noqa: E402
from bench_report import splice  # noqa: E402

ROLES = ["oxp-http", "oxp-worker", "oxp-agentcore", "oxp-bedrock-agent"]


def sh(*args, **kw):
    print("+", " ".join(args), flush=True)
    return subprocess.run(args, check=True, **kw)


def build():
    """Native release builds: each role binary with its role's features alone (as
    cargo-lambda builds it), the hand-written and the minimal functions."""
    for role in ROLES:
        sh("cargo", "build", "--locked", "--release", "--no-default-features",
           "--features", f"role-{role[4:]}", "--bin", role)
    sh("cargo", "build", "--locked", "--release", "--features", "lambda,aws-secrets,dynamodb",
       "--example", "bench_handwritten", "--example", "bench_lambda_minimal")
    # The hand-written function's package, as the functions' (scripts/lambda-packages).
    sh("cargo", "lambda", "build", "--release", "--arm64", "--locked", "--no-default-features",
       "--features", "lambda,aws-secrets,dynamodb", "--example", "bench_handwritten",
       "--output-format", "zip", env=dict(os.environ, PATH=os.path.join(ROOT, ".venv", "bin")
                                          + os.pathsep + os.environ["PATH"]))


def sms_event():
    """An API Gateway REST event of SMS.Send with a new call_id."""
    with open("events/apigw-rest-call-success.json") as f:
        event = json.load(f)
    event["body"] = json.dumps({"$schema": "urn:oxp:1.0", "request": {
        "tool_id": "SMS.Send@0.1.2", "call_id": str(uuid.uuid4()),
        "input": {"to": "+15550100", "message": "hi"}}})
    event["isBase64Encoded"] = False
    return event


def zipped_mb(name):
    path = f"target/lambda/{name}/bootstrap.zip"
    if not os.path.exists(path):
        return None
    with zipfile.ZipFile(path) as z:
        z.getinfo("bootstrap")
    return os.path.getsize(path) / 1e6


def cases(moto):
    """Each function's name, binary, environment, event maker and context, in table order."""
    aws = dict(moto.env)
    local = {"OXP_SECRETS_SOURCE": "local", "OXP_IDEMPOTENCY": "off"}
    none = {"OXP_AUTH": "none"}
    batch = bench_lambda.fixture("events/sqs/rap-worker-batch.json")
    for record in batch["Records"]:
        record["body"] = "not a job"
    agentcore = {"custom": {"bedrockAgentCoreToolName": "tools___Calculator_Add"}}
    return [
        ("oxp-http", "target/release/oxp-http", dict(aws, OXP_STATE_TABLE="oxp-bench", **none),
         sms_event, None),
        ("hand-written (lambda_http)", "target/release/examples/bench_handwritten", aws,
         sms_event, None),
        ("minimal (lambda_runtime)", "target/release/examples/bench_lambda_minimal", {},
         lambda: {}, None),
        ("oxp-worker", "target/release/oxp-worker",
         dict(aws, OXP_LAMBDA_ROLE="worker", OXP_STATE_TABLE="oxp-bench", **none),
         lambda: batch, None),
        ("oxp-agentcore", "target/release/oxp-agentcore",
         dict(local, OXP_LAMBDA_ROLE="agentcore", **none), lambda: {"a": 2, "b": 3}, agentcore),
        ("oxp-bedrock-agent", "target/release/oxp-bedrock-agent",
         dict(local, OXP_LAMBDA_ROLE="bedrock-agent", **none),
         lambda: bench_lambda.fixture("events/bedrock-agent/calculator-add.json"), None),
    ]


def measure(runs, against=None):
    """Medians of `runs` interleaved starts of each case; with `against` (a target directory),
    each role's build there too, named "<role> (DIR)", in every round beside the one here."""
    moto = bench_lambda.Moto()
    try:
        chosen = cases(moto)
        if against:
            chosen = [c for role in chosen if role[0] in ROLES
                      for c in (role, (f"{role[0]} ({against})",
                                       os.path.join(against, "release", role[0]), *role[2:]))]
        # Each binary started from a copy made now: on this machine a binary file written
        # long before started up to twice as slowly as a fresh copy of the same bytes (its
        # pages in the page cache as the kernel left them), which is no property of the code.
        fresh = tempfile.mkdtemp(prefix="oxp-bench-functions-")
        for i, case in enumerate(chosen):
            copy = os.path.join(fresh, str(i))
            shutil.copy2(case[1], copy)
            chosen[i] = (case[0], copy, *case[2:])
        # Interleaved: one start of each case per round, so a slow moment of the machine
        # falls on every case alike; the order turned round every other round.
        samples = {name: [] for name, *_ in chosen}
        for round_ in range(runs):
            for name, binary, env, event, context in chosen[::1 if round_ % 2 == 0 else -1]:
                samples[name].append(bench_lambda.first_call(binary, env, event(), context))
        return {name: tuple(statistics.median(s[i] for s in runs_) for i in range(4))
                for name, runs_ in samples.items()}
    finally:
        moto.close()


def table(figures):
    hand = figures["hand-written (lambda_http)"]
    minimal = figures["minimal (lambda_runtime)"]
    rows = ["| function | zipped (arm64) | first poll | first answer | CPU to it | peak RSS |",
            "|---|---|---|---|---|---|"]
    sizes = {role: zipped_mb(role) for role in ROLES}
    sizes["hand-written (lambda_http)"] = zipped_mb("bench_handwritten")
    for name, (poll, answer, cpu, rss) in figures.items():
        size = sizes.get(name)
        rows.append(f"| {name} | {f'{size:.2f} MB' if size else '-'} | {poll:.1f} ms | "
                    f"{answer:.1f} ms | {cpu:.1f} ms | {rss:.1f} MB |")
    http = figures["oxp-http"]
    largest = max((sizes[r] or 0.0, r) for r in ROLES)
    worst_poll = max((figures[r][0] / minimal[0], r) for r in ROLES)

    def goal(what, figure, met):
        return f"| {what} | {figure} | {'met' if met else '**missed**'} |"
    goals = [
        "| goal | figure | |", "|---|---|---|",
        goal("every function's arm64 package under 4 MB zipped",
             f"largest {largest[0]:.2f} MB ({largest[1]})", largest[0] < 4),
        goal("first poll at most 2x the minimal function's, every function",
             f"worst {worst_poll[0]:.2f}x ({worst_poll[1]})", worst_poll[0] <= 2),
        goal("first poll at most 1.2x the hand-written function's (oxp-http)",
             f"{http[0] / hand[0]:.2f}x", http[0] / hand[0] <= 1.2),
        goal("first answer at most 1.2x the hand-written function's",
             f"{http[1] / hand[1]:.2f}x", http[1] / hand[1] <= 1.2),
        goal("CPU until the first answer at most 1.2x", f"{http[2] / hand[2]:.2f}x",
             http[2] / hand[2] <= 1.2),
        goal("peak RSS at the first answer at most 1.5x", f"{http[3] / hand[3]:.2f}x",
             http[3] / hand[3] <= 1.5),
    ]
    return "\n".join(rows) + "\n\n" + "\n".join(goals)


def write_section(figures, runs):
    """The block of docs/performance.md's "Lambda functions": what was measured, the table and
    the goals (the analysis under it is kept by hand)."""
    lines = [
        "Each function of template.yaml as deployed (`scripts/bench_functions.py`): its arm64 "
        "package zipped as `scripts/lambda-packages` builds it (SAM's build), and under a "
        "Runtime API on loopback its native release build (each binary with its role's "
        f"features alone), medians of {runs} interleaved fresh starts: spawn to the first poll, "
        "to the first answer, the CPU it used until that answer and its peak RSS then. "
        "`oxp-http` and the hand-written function (`examples/bench_handwritten.rs`: "
        "`lambda_http`, `jsonschema`, the AWS SDK, nothing of oxp-lambda) answer `POST "
        "/tools/call` of `SMS.Send` with its secret in Secrets Manager and its `call_id` "
        "claimed in DynamoDB (moto on loopback), a new `call_id` each start; the worker a batch "
        "of records that are not jobs; AgentCore and Bedrock Agents `Calculator.Add`; the "
        "minimal `lambda_runtime` function answers `{}`.", "",
        table(figures)]
    splice({"lambda-functions": lines})


def main():
    args = [a for a in sys.argv[1:] if a != "--no-build"]
    if args[:1] == ["--against"]:
        runs = int(args[2]) if len(args) > 2 else 15
        print("| build | first poll | first answer | CPU to it | peak RSS |\n|---|---|---|---|---|")
        for name, (poll, answer, cpu, rss) in measure(runs, args[1]).items():
            print(f"| {name} | {poll:.1f} ms | {answer:.1f} ms | {cpu:.1f} ms | {rss:.1f} MB |")
        return
    runs = int(args[0]) if args else 15
    if "--no-build" not in sys.argv:
        build()
    figures = measure(runs)
    print(table(figures))
    write_section(figures, runs)


if __name__ == "__main__":
    main()
