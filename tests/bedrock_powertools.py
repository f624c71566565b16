"""Software that is not oxp-lambda's, on what tests/bedrock_agent_api.rs gives it.

Powertools for AWS Lambda (Python), AWS's own library for Bedrock Agents' API-schema action
groups, answers a recorded `apiPath` event with a route doing the example server's
Calculator_Add; its answer is printed for the Rust test to compare with oxp-lambda's. And
openapi-spec-validator checks the document `oxp-lambda schema --bedrock-agent-api` printed
against the OpenAPI 3.0 specification.

usage: bedrock_powertools.py EVENT_FILE API_SCHEMA_FILE
"""

import json
import sys
from types import SimpleNamespace

from aws_lambda_powertools.event_handler import BedrockAgentResolver
from openapi_spec_validator import validate

event_file, schema_file = sys.argv[1], sys.argv[2]

with open(schema_file) as f:
    schema = json.load(f)
validate(schema)  # raises, naming the part that breaks the specification
print("ok   the API schema is a valid OpenAPI document", file=sys.stderr)

app = BedrockAgentResolver(enable_validation=False)


@app.post("/Calculator_Add", description="Adds two numbers.")
def add():
    body = app.current_event.raw_event["requestBody"]["content"]["application/json"]
    values = {p["name"]: float(p["value"]) for p in body["properties"]}
    return values["a"] + values["b"]


with open(event_file) as f:
    event = json.load(f)
print(json.dumps(app.resolve(event, SimpleNamespace())))
