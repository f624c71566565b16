"""The official OXP Python SDK (`oxp` from PyPI, generated from the published 1.0 OpenAPI) as a
client of the local server, with strict response validation: every answer must parse as the
SDK's types. Run by tests/oxp_sdk.rs with the URLs of a server without authentication and of one
with `OXP_AUTH=jwt` (HS256 with the key given); exits non-zero at the first failed check.
"""
import base64
import hashlib
import hmac
import json
import sys
import time

import oxp
from oxp import Oxp


def check(condition, what):
    if not condition:
        raise AssertionError(what)
    print(f"ok   {what}")


def hs256(key, claims):
    def b64(data):
        return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
    head = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = b64(json.dumps(claims).encode())
    mac = hmac.new(key.encode(), f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(mac)}"


def client(url, token="unused"):
    return Oxp(base_url=url, bearer_token=token, max_retries=0,
               _strict_response_validation=True)


def main(open_url, secured_url, key):
    check(client(open_url).health.check() is None, "the SDK's health check passes (GET /health)")
    # Health is for load balancers: answered without a token where every other route needs one.
    check(client(secured_url, "not-a-token").health.check() is None,
          "the health check needs no token on a server that authenticates")

    tools = client(open_url).tools

    listed = tools.list()
    ids = [t.id for t in listed.items]
    check("Calculator.Add@1.0.0" in ids and "SMS.Send@0.1.2" in ids,
          f"GET /tools lists the tools under `items`: {ids}")
    sms = next(t for t in listed.items if t.id == "SMS.Send@0.1.2")
    check(sms.requirements.secrets[0].id == "TWILIO_API_KEY",
          "a tool's requirements parse as the SDK's types")

    add = tools.call(request={"tool_id": "Calculator.Add", "input": {"a": 10, "b": 5}})
    check(add.result.success is True and add.result.value == 15,
          "a call answers its value (a number)")
    check(isinstance(add.result.duration, float) and add.result.call_id,
          "a result carries a duration and a generated call id")

    ring = tools.call(request={"tool_id": "Doorbell.Ring@0.1.0",
                               "input": {"doorbell_id": "doorbell42"}})
    check(ring.result.success is True and ring.result.value is None,
          "a tool without output answers null")

    stamp = tools.call(request={"tool_id": "System.GetTimestamp", "call_id": "sdk-1"})
    check(stamp.result.call_id == "sdk-1" and "timestamp" in stamp.result.value,
          "an object value, and the client's call id echoed")

    fail = tools.call(request={"tool_id": "Doorbell.Ring",
                               "input": {"doorbell_id": "doorbell1"}})
    error = fail.result.error
    check(fail.result.success is False and error.message == "Doorbell ID not found"
          and error.can_retry is True and error.retry_after_ms == 500,
          "a tool failure is success: false with the error's retry guidance")

    try:
        tools.call(request={"tool_id": "No.Such"})
        check(False, "an unknown tool is an error")
    except oxp.BadRequestError as e:
        check(e.status_code == 400 and e.body["message"] == "Tool 'No_Such' was not found",
              "an unknown tool is a 400 ServerErrorResponse")

    try:
        tools.call(request={"tool_id": "Calculator.Add", "input": {"a": "ten"}})
        check(False, "invalid input is an error")
    except oxp.UnprocessableEntityError as e:
        check(e.status_code == 422 and set(e.body["parameter_errors"]) == {"a", "b"},
              "invalid input is a 422 naming each parameter")

    try:
        client(secured_url, "not-a-token").tools.list()
        check(False, "a bad token is refused")
    except oxp.AuthenticationError as e:
        check(e.status_code == 401 and e.body["message"] == "Authentication failed",
              "a bad token is a 401 the SDK reads as an authentication error")

    token = hs256(key, {"sub": "sdk-user", "exp": int(time.time()) + 300})
    listed = client(secured_url, token).tools.list()
    check(len(listed.items) > 0, "a valid bearer token lists the tools")


if __name__ == "__main__":
    main(*sys.argv[1:4])
