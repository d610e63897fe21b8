"""Every answer the integration suites receive, checked against botocore's service models.

botocore's models are the one description of SageMaker, SageMaker Runtime and Application Auto
Scaling that nobody on this project wrote, and the stock clients parse with them leniently: a
member of the wrong type or a code the operation cannot answer reaches the caller unnoticed.
`check_response` is strict where botocore is lenient. Each body must be JSON of the operation's
output shape (or, for an error, of the error's shape): every member the shape has, no member
it lacks, the required ones present, types, enums, lengths and ranges as the model states them.
An error's code must be one the model lists for the operation or one of the Common Errors.

`watch(client)` hooks a boto3 client, so every call a suite makes is checked as it returns and a
violation fails that call with AssertionError. `awscli_initialize` does the same for the aws CLI
(v1 loads it as a plugin: carve_harness writes the config), which writes violations to
$CARVE_WIRE_VIOLATIONS for the harness to raise after the command. With $CARVE_WIRE_RECORD set,
one JSON line per checked answer is appended there (service, operation, status, code), so a run
can say what traffic it checked (docs/testing.md)."""

import base64
import binascii
import json
import os
import re

# The codes any action of these services may answer beside the ones each operation lists: the
# API References' "Common Errors", SigV4's refusals, and awsJson's unknown target.
COMMON_ERRORS = frozenset({
    "ValidationException", "ServiceUnavailable", "InternalFailure", "ThrottlingException",
    "UnknownOperationException", "AccessDeniedException", "IncompleteSignature",
    "InvalidSignatureException", "MissingAuthenticationToken", "RequestExpired",
    "UnrecognizedClientException", "InvalidClientTokenId", "NotAuthorized",
})

# Refusals of the HTTP layer, made before any operation is read (the body is too large to parse,
# the headers too long): no service model lists them, and each has exactly one status.
TRANSPORT_ERRORS = {"RequestEntityTooLarge": 413, "RequestHeaderFieldsTooLarge": 431}

# Members whose location is not the body (rest-json): they travel in headers, the URI or the
# status line.
_NOT_IN_BODY = {"header", "headers", "uri", "querystring", "statusCode"}


class WireViolation(AssertionError):
    pass


def _fail(path, message):
    raise WireViolation(f"{path}: {message}")


def _check_length(path, shape, n, what):
    low, high = shape.metadata.get("min"), shape.metadata.get("max")
    if low is not None and n < low:
        _fail(path, f"{what} {n} is below the model's min {low} ({shape.name})")
    if high is not None and n > high:
        _fail(path, f"{what} {n} is above the model's max {high} ({shape.name})")


def check_value(value, shape, path):
    """Raises WireViolation unless `value` (parsed JSON) is a value of botocore `shape`."""
    kind = shape.type_name
    if kind == "structure":
        if not isinstance(value, dict):
            _fail(path, f"expected an object ({shape.name}), got {type(value).__name__}")
        members = {name: member for name, member in shape.members.items()
                   if member.serialization.get("location") not in _NOT_IN_BODY}
        wire_names = {member.serialization.get("name", name): name
                      for name, member in members.items()}
        for key, item in value.items():
            if key not in wire_names:
                _fail(path, f"member {key!r} is not in the model's {shape.name}")
            if item is None:
                _fail(f"{path}.{key}", "null, which no member of the model may be")
            check_value(item, members[wire_names[key]], f"{path}.{key}")
        for name in shape.required_members:
            if name in members and members[name].serialization.get("name", name) not in value:
                _fail(path, f"required member {name!r} of {shape.name} is missing")
    elif kind == "list":
        if not isinstance(value, list):
            _fail(path, f"expected a list ({shape.name}), got {type(value).__name__}")
        _check_length(path, shape, len(value), "list length")
        for i, item in enumerate(value):
            check_value(item, shape.member, f"{path}[{i}]")
    elif kind == "map":
        if not isinstance(value, dict):
            _fail(path, f"expected a map ({shape.name}), got {type(value).__name__}")
        _check_length(path, shape, len(value), "map size")
        for key, item in value.items():
            check_value(key, shape.key, f"{path} key {key!r}")
            check_value(item, shape.value, f"{path}[{key!r}]")
    elif kind == "string":
        if not isinstance(value, str):
            _fail(path, f"expected a string ({shape.name}), got {type(value).__name__}")
        if shape.enum and value not in shape.enum:
            _fail(path, f"{value!r} is not in the enum of {shape.name}: {list(shape.enum)}")
        _check_length(path, shape, len(value), "length")
        pattern = shape.metadata.get("pattern")
        if pattern:
            try:
                matcher = re.compile(pattern)
            except re.error:
                matcher = None  # A Java-only construct: the length and enum checks still hold.
            if matcher and not matcher.fullmatch(value):
                _fail(path, f"{value[:80]!r} does not match {shape.name}'s pattern {pattern}")
    elif kind in ("integer", "long"):
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(path, f"expected an integer ({shape.name}), got {value!r}")
        _check_length(path, shape, value, "value")
    elif kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(path, f"expected a number ({shape.name}), got {value!r}")
        _check_length(path, shape, value, "value")
    elif kind == "boolean":
        if not isinstance(value, bool):
            _fail(path, f"expected a boolean ({shape.name}), got {value!r}")
    elif kind == "timestamp":
        # JSON protocols send epoch seconds unless the shape says otherwise.
        if shape.serialization.get("timestampFormat") in ("iso8601", "rfc822"):
            if not isinstance(value, str):
                _fail(path, f"expected a {shape.serialization['timestampFormat']} string")
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            _fail(path, f"expected epoch seconds ({shape.name}), got {value!r}")
    elif kind == "blob":
        if not isinstance(value, str):
            _fail(path, f"expected base64 text ({shape.name}), got {type(value).__name__}")
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error:
            _fail(path, f"{value[:40]!r} is not base64 ({shape.name})")
    else:
        _fail(path, f"the model's type {kind!r} has no check here")


def _parse(body, path):
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        _fail(path, f"the body is not JSON ({e}): {body[:120]!r}")


def error_code(body, headers):
    """The code of an error answer as botocore reads it: x-amzn-ErrorType, else __type or
    code, each without a namespace prefix or a trailing ':...'."""
    raw = {k.lower(): v for k, v in headers.items()}.get("x-amzn-errortype")
    if not raw and isinstance(body, dict):
        raw = body.get("__type") or body.get("code") or body.get("Code")
    if not isinstance(raw, str) or not raw:
        return None
    return raw.split(":")[0].split("#")[-1]


def check_response(operation, status, body, headers):
    """Raises WireViolation unless (status, body, headers) is an answer botocore's model allows
    for `operation` (a botocore OperationModel); returns the error code or None."""
    where = f"{operation.service_model.service_name} {operation.name} ({status})"
    if 200 <= status < 300:
        shape = operation.output_shape
        if shape is None:
            if body.strip() not in (b"", b"{}"):
                _fail(where, f"the operation has no output, yet the body is {body[:120]!r}")
            return None
        payload = shape.serialization.get("payload")
        if payload:
            member = shape.members[payload]
            if member.type_name in ("blob", "string") or member.serialization.get("eventstream"):
                return None  # The model's payload is the copy's own bytes or an event stream.
            check_value(_parse(body, where), member, where)
            return None
        if not body.strip() and not shape.required_members:
            return None
        check_value(_parse(body, where), shape, where)
        return None
    parsed = _parse(body, where)
    code = error_code(parsed, headers)
    if code is None:
        _fail(where, f"an error without a code (__type or x-amzn-ErrorType): {body[:160]!r}")
    listed = {}
    for shape in operation.error_shapes:
        listed[shape.metadata.get("error", {}).get("code", shape.name)] = shape
    if code in TRANSPORT_ERRORS and code not in listed:
        if TRANSPORT_ERRORS[code] != status:
            _fail(where, f"{code} is the HTTP layer's {TRANSPORT_ERRORS[code]}, not {status}")
        listed_or_common = True
    else:
        listed_or_common = code in listed or code in COMMON_ERRORS
    if not listed_or_common:
        _fail(where, f"{code} is neither listed for {operation.name} ({sorted(listed)}) nor a "
                     f"common error")
    message = parsed.get("message", parsed.get("Message"))
    if not isinstance(message, str) or not message:
        _fail(where, f"{code} carries no message: {body[:160]!r}")
    if code in listed:
        shape = listed[code]
        declared = shape.metadata.get("error", {}).get("httpStatusCode")
        if declared is not None and declared != status:
            _fail(where, f"{code} is declared with status {declared} in the model")
        # botocore reads the message from "message" or "Message" whatever the shape calls it.
        rest = {k: v for k, v in parsed.items()
                if k not in ("__type", "code", "Code", "message", "Message")}
        if "Message" in shape.members:
            rest["Message"] = message
        check_value(rest, shape, f"{where} {code}")
    return code


def _record(operation, status, code):
    path = os.environ.get("CARVE_WIRE_RECORD")
    if path:
        line = json.dumps({"service": operation.service_model.service_name,
                           "operation": operation.name, "status": status, "code": code})
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


def _after_call(http_response=None, model=None, **_):
    if http_response is None or model is None:
        return
    status = http_response.status_code
    if status < 300 and (model.has_streaming_output or model.has_event_stream_output):
        code = None  # Reading a stream's body here would take it from the caller.
    else:
        code = check_response(model, status, http_response.content or b"",
                              dict(http_response.headers))
    _record(model, status, code)


def watch(client):
    """Checks every answer `client` (a boto3 client) receives; returns the client."""
    client.meta.events.register("after-call", _after_call)
    return client


def _cli_after_call(**kwargs):
    try:
        _after_call(**kwargs)
    except WireViolation as e:
        with open(os.environ["CARVE_WIRE_VIOLATIONS"], "a", encoding="utf-8") as f:
            f.write(f"{e}\n")


def awscli_initialize(cli):
    """The aws CLI v1's plugin entry: checks every answer the command receives."""
    if os.environ.get("CARVE_WIRE_VIOLATIONS"):
        cli.register("after-call", _cli_after_call)
