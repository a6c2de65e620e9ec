"""The controller-contract plumbing the Python adapters share (docs/contract.md): the
fixture backend, the result line and persistent mode. It decides nothing about the loop:
what to run, validate, retry or stop is the framework's.

An adapter runs from the source tree (`<venv>/bin/python harness/frameworks/<name>/adapter.py`)
and imports this file from its parent folder.
"""

import json
import os
import sys
import urllib.error
import urllib.request


def log(*args):
    print(*args, file=sys.stderr, flush=True)  # stdout is reserved for the result line


def post_json(url, body):
    """POST JSON; (status, body text). A 4xx or 5xx answer is returned, not raised."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as err:  # 4xx/5xx still carry a JSON body
        return err.code, err.read().decode()


def tools_url():
    """This case's fixture backend (section 4)."""
    return os.environ["LOOPCHECK_TOOLS_URL"].rstrip("/")


def run_call(task, name, call_id, arguments):
    """Runs one call on the fixture backend as the framework hands it over, asking the
    approver first when the task requires an approval for the tool. Blocking.

    Returns one of ("result", the backend's result) when the call ran, ("denied",
    "approval denied: <reason>") when the approver refused it, or ("error", the backend's
    error answer as it came, its JSON text)."""
    url = tools_url()
    body = {"call_id": call_id, "arguments": arguments, "principal": task["principal"]}
    if name in (task.get("approval_required") or []):
        status, text = post_json(f"{url}/approvals", {**body, "name": name})
        answer = parse_object(text)
        if answer.get("approved") is not True:
            return "denied", f"approval denied: {answer.get('reason') or f'HTTP {status}: {text}'}"
        body["approval"] = answer.get("approval")
    status, text = post_json(f"{url}/call/{name}", body)
    answer = parse_object(text)
    if status == 200 and "result" in answer:
        return "result", answer["result"]
    return "error", text


def parse_object(text):
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def serve(run_case, failure):
    """Prints the result line of `run_case(task)` (a result object), or of `failure(err)`
    for an exception it raised: for the task file of LOOPCHECK_TASK, or, without it, for
    each case line on standard input (persistent mode, section 9), so that the framework
    is imported once per worker; each case reads its own URLs and key from its line."""
    if "LOOPCHECK_TASK" in os.environ:  # one process per case
        with open(os.environ["LOOPCHECK_TASK"]) as f:
            print(json.dumps(_result(run_case, failure, json.load(f))), flush=True)
        return
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            os.environ.update(request["env"])
            print(json.dumps(_result(run_case, failure, request["task"])), flush=True)


def _result(run_case, failure, task):
    try:
        return run_case(task)
    except Exception as err:
        log(f"framework error: {err!r}")
        return failure(err)
