"""A starter tool loop for loopcheck, on the official `openai` SDK.

loopcheck runs this file once per case with the task in $LOOPCHECK_TASK and the fake
Responses API in OPENAI_BASE_URL / OPENAI_API_KEY (the SDK reads both). It prints one
JSON result line last. Start here, run `loopcheck run`, and fix what the report says:
the contract is in loopcheck's docs/contract.md.
"""

import json
import os
import sys
import urllib.error
import urllib.request

from openai import OpenAI


class Stop(Exception):
    """Ends the case with a failure: a reason word and a detail."""

    def __init__(self, reason, detail):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def post_json(url, body):
    """POST a JSON body; (status, parsed answer or None)."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"content-type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, None


def error_output(message):
    """An output that tells the model the call did not run, and why."""
    return json.dumps({"error": message})


def run_tool(task, call):
    """Validates a call against the task's registry, runs it on the tool backend, and
    returns the output to send back. Never raises: a bad call gets an error output."""
    tools = {t["name"]: t for t in task["tools"] if t.get("type") == "function"}
    if call.name not in tools:
        return error_output(f"unknown tool: {call.name}")
    try:
        arguments = json.loads(call.arguments)
    except ValueError as err:
        return error_output(f"arguments are not valid JSON: {err}")
    if not isinstance(arguments, dict):
        return error_output("arguments must be a JSON object")
    # TODO: validate `arguments` against tools[call.name]["parameters"] (e.g. with the
    # jsonschema package) before anything runs; ask for approvals (POST /approvals) for
    # the tools in task["approval_required"].
    url = os.environ["LOOPCHECK_TOOLS_URL"].rstrip("/") + f"/call/{call.name}"
    body = {"call_id": call.call_id, "arguments": arguments, "principal": task["principal"]}
    status, answer = post_json(url, body)
    if status == 200 and isinstance(answer, dict) and "result" in answer:
        return json.dumps(answer["result"])
    message = (answer or {}).get("error", {}).get("message") if isinstance(answer, dict) else None
    return error_output(message or f"the tool failed with HTTP {status}")


def run(task):
    client = OpenAI()
    state = task["state"]
    config = {"model": task["model"], "tools": task["tools"]}
    if task.get("instructions"):
        config["instructions"] = task["instructions"]
    if state == "stateless":
        config.update(store=False, include=["reasoning.encrypted_content"])
    elif state != "previous_response_id":
        raise Stop("unsupported", f"state mode {state} is not supported yet")
    first = task["input"]
    sent = [{"role": "user", "content": first}] if isinstance(first, str) else list(first)
    previous = None
    for round_ in range(1, task["max_rounds"] + 1):
        request = dict(config, input=sent)
        if previous is not None:
            request["previous_response_id"] = previous
        response = client.responses.create(**request)
        if response.status == "incomplete":
            raise Stop("incomplete", "the response was cut short")
        if response.status != "completed":
            raise Stop("response_failed", f"the response ended {response.status}")
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            return response.output_text
        if round_ == task["max_rounds"]:
            raise Stop("max_rounds", "the model kept calling tools")
        outputs = [
            {"type": "function_call_output", "call_id": c.call_id, "output": run_tool(task, c)}
            for c in calls
        ]
        if state == "stateless":
            # Replay every output item as it came (output-only fields dropped).
            replay = [item.model_dump(exclude_none=True, exclude={"status"} if item.type == "reasoning" else set()) for item in response.output]
            sent = sent + replay + outputs
        else:
            sent, previous = outputs, response.id
    raise Stop("max_rounds", "no round left")


def main():
    try:
        with open(os.environ["LOOPCHECK_TASK"]) as file:
            task = json.load(file)
        result = {"status": "completed", "output_text": run(task)}
    except Stop as stop:
        result = {"status": "failed", "reason": stop.reason, "detail": stop.detail}
    except Exception as err:  # noqa: BLE001 - every failure still ends with a result line
        result = {"status": "failed", "reason": "api_error", "detail": f"{type(err).__name__}: {err}"}
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
