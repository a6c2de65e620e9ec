"""loopcheck's Python reference controller: a contract-v1 Responses tool loop on the
official `openai` SDK (CONTRACT.md; the wire rules are WIRE.md's).

One round is one model request. A completed response's `function_call` items each get
exactly one `function_call_output` (same `call_id`, same `caller`) in the next request; a
response without calls is the final answer, unless a program just finished
(`program_output`, no message): then the model answers in one more request.

Every response body is validated strictly with `Response.model_validate`: the SDK
otherwise builds its models leniently, and a shape its types reject must fail the case
(reason `sdk_parse_error`), not slip through as half-filled attributes.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

import jsonschema
import openai
import pydantic
from openai.types.responses import Response

TERMINAL_EVENTS = {"response.completed", "response.incomplete", "response.failed"}


class Stop(Exception):
    """Ends the loop with a failed result (CONTRACT.md section 4)."""

    def __init__(self, reason, detail):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def log(*args):
    print(*args, file=sys.stderr, flush=True)  # stdout is reserved for the result line


def error_output(message):
    return json.dumps({"error": str(message)})


def post_json(url, body):
    """POST JSON; (status, parsed body or None). Raises OSError on transport errors."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as err:  # 4xx/5xx still carry a JSON body
        status, text = err.code, err.read()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, None


class Tools:
    """Validation, approval and execution on the fixture backend. `handle` returns the
    output to send for a call and never raises: a rejected or failed call is answered with
    an error output so the model can go on, never dropped."""

    def __init__(self, task, tools_url):
        self.url = tools_url.rstrip("/")
        self.principal = task["principal"]
        self.approval_required = set(task.get("approval_required") or [])
        # The registry is the task's function tools only; hosted tools such as
        # {"type": "programmatic_tool_calling"} are sent to the API but run nothing here.
        self.registry = {}  # name -> (schema validator or None, allowed callers)
        for tool in task["tools"]:
            if tool.get("type") != "function":
                continue
            schema = tool.get("parameters")
            if schema is not None:
                cls = jsonschema.validators.validator_for(schema)
                cls.check_schema(schema)
                schema = cls(schema)
            self.registry[tool["name"]] = (schema, tool.get("allowed_callers") or ["direct"])

    def handle(self, call):
        # Everything the model sent is checked before anything is dispatched.
        if call.name not in self.registry:
            return error_output(f"unknown tool: {call.name}")
        validator, allowed_callers = self.registry[call.name]
        caller = "programmatic" if call.caller and call.caller.type == "program" else "direct"
        if caller not in allowed_callers:
            return error_output("Function caller is excluded by allowed_callers.")
        try:
            args = json.loads(call.arguments)
        except ValueError as err:
            return error_output(f"invalid JSON arguments: {err}")
        if not isinstance(args, dict):
            return error_output("invalid JSON arguments: expected a JSON object")
        if validator is not None:
            error = jsonschema.exceptions.best_match(validator.iter_errors(args))
            if error is not None:
                return error_output(f"arguments do not match the schema: {error.message}")
        body = {"call_id": call.call_id, "arguments": args, "principal": self.principal}
        try:
            if call.name in self.approval_required:
                status, answer = post_json(f"{self.url}/approvals", {**body, "name": call.name})
                if status != 200 or not isinstance(answer, dict):
                    return error_output(f"approval request failed: HTTP {status}")
                if answer.get("approved") is False:
                    reason = answer.get("reason") or "no reason given"
                    return error_output(f"approval denied: {reason}")
                if answer.get("approved") is not True or not answer.get("approval"):
                    return error_output("approval request failed: malformed answer")
                body["approval"] = answer["approval"]
            # 5xx is transient; resending with the same call_id is safe because the backend
            # de-duplicates by it. 403 (denied), 409, 404 and 422 would fail again: relayed.
            for attempt in range(3):
                status, answer = post_json(f"{self.url}/call/{call.name}", body)
                if status < 500:
                    break
                log(f"tool {call.name} ({call.call_id}): HTTP {status} on attempt {attempt + 1}")
                time.sleep(0.05)
            else:
                return error_output("tool unavailable")
        except OSError as err:  # urllib.error.URLError is an OSError
            return error_output(f"tool backend unreachable: {err}")
        answer = answer if isinstance(answer, dict) else {}
        if status == 200 and "result" in answer:
            return json.dumps(answer["result"])
        error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
        code = "forbidden" if status == 403 else error.get("code") or f"HTTP {status}"
        return error_output(f"{code}: {error.get('message') or 'no message'}")


def validated(text):
    """A response body checked strictly against the SDK's Response type."""
    try:
        return Response.model_validate(json.loads(text))
    except (ValueError, pydantic.ValidationError) as err:  # not JSON, or a rejected shape
        log(f"the SDK's Response type rejects the body:\n{err}\nbody: {text}")
        raise Stop("sdk_parse_error", str(err))


def create(client, kwargs, stream):
    """One model request. The SDK retries it (max_retries=2) on connection errors, 408,
    409, 429 and 5xx, honouring retry-after(-ms) and x-should-retry, always with the same
    body; a stream is never retried once it has started."""
    if not stream:
        return validated(client.responses.with_raw_response.create(**kwargs).text)
    # The stream helper's accumulator raises on any out-of-order event, so a stream it
    # accepts is well-formed. `tools` goes in extra_body (the same JSON on the wire): given
    # as `tools=`, the helper json.loads the arguments of every strict call on
    # response.completed, so malformed arguments would abort the whole stream instead of
    # getting an error output, and each call would gain a `parsed_arguments` key that a
    # stateless replay would send back to the API.
    kwargs = dict(kwargs)
    extra_body = {"tools": kwargs.pop("tools")}
    with client.responses.stream(**kwargs, extra_body=extra_body) as events:
        for event in events:
            # Calls are only read from the terminal event: items seen before it may still
            # be cut short, and a response that never completes must run nothing.
            if event.type in TERMINAL_EVENTS:
                return validated(event.response.to_json())
            if event.type == "error":  # the documented flat shape; the nested one raises
                raise Stop("api_error", f"stream error {event.code}: {event.message}")
    raise Stop("api_error", "the stream ended before a terminal event")


def check_status(response):
    """Only a completed response continues the loop; anything else ends the case."""
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        raise Stop("incomplete", f"response incomplete: {reason or 'no reason given'}")
    if response.status == "failed":
        message = response.error.message if response.error else "no error message"
        raise Stop("response_failed", f"response failed: {message}")
    if response.status == "cancelled":
        raise Stop("cancelled", "response was cancelled")
    if response.status != "completed":
        raise Stop("api_error", f"unexpected response status {response.status!r}")


def final_answer(response):
    messages = [item for item in response.output if item.type == "message"]
    parts = messages[-1].content if messages else []
    refusal = next((part for part in parts if part.type == "refusal"), None)
    if refusal is not None and not any(part.type == "output_text" for part in parts):
        raise Stop("refusal", refusal.refusal)
    return response.output_text


def replay(item):
    """An output item as stateless input: the keys the server sent (so `program` items keep
    their code and fingerprint verbatim), minus nulls and `status` on reasoning, which
    the API rejects in input."""
    data = item.to_dict(mode="json", exclude_none=True)
    if data["type"] == "reasoning":
        data.pop("status", None)
    return data


def run(task, client, tools):
    state, background = task["state"], task.get("background", False)
    # Neither previous_response_id nor a conversation carries instructions or tools:
    # they go out with every request.
    base = {"model": task["model"], "tools": task["tools"], "parallel_tool_calls": True}
    if task.get("instructions") is not None:
        base["instructions"] = task["instructions"]
    if background:
        base["background"] = True
    first = task["input"]
    if state == "stateless":
        if background:  # background responses are stored; stateless means store: false
            raise Stop("unsupported", "background needs stored responses")
        base.update(store=False, include=["reasoning.encrypted_content"])
        context = [{"role": "user", "content": first}] if isinstance(first, str) else list(first)
    elif state == "conversation":
        base["conversation"] = client.conversations.create().id
    elif state != "previous_response_id":
        raise Stop("unsupported", f"state mode {state!r} is not supported")
    new_items = first  # what the next request adds (every mode but stateless)

    max_rounds = task.get("max_rounds", 10)
    for round_ in range(1, max_rounds + 1):
        kwargs = {**base, "input": context if state == "stateless" else new_items}
        response = create(client, kwargs, task.get("stream", False))
        while background and response.status in ("queued", "in_progress"):
            time.sleep(0.05)
            response = validated(client.responses.with_raw_response.retrieve(response.id).text)
        check_status(response)
        calls = [item for item in response.output if item.type == "function_call"]
        kinds = {item.type for item in response.output}
        log(f"round {round_}/{max_rounds}: {len(calls)} function call(s), items {sorted(kinds)}")
        if not calls and ("program_output" not in kinds or "message" in kinds):
            return final_answer(response)
        if round_ == max_rounds:  # these outputs (or the program's result) could never be sent
            raise Stop("max_rounds", "model kept calling tools")
        outputs = []
        for call in calls:
            output = tools.handle(call)
            log(f"  {call.call_id} {call.name} -> {output}")
            item = {"type": "function_call_output", "call_id": call.call_id, "output": output}
            if call.caller is not None:  # a program's child call: the program resumes on it
                item["caller"] = call.caller.to_dict(mode="json")
            outputs.append(item)
        if state == "stateless":
            context += [replay(item) for item in response.output] + outputs
        else:
            new_items = outputs
        if state == "previous_response_id":
            base["previous_response_id"] = response.id
    raise Stop("max_rounds", "max_rounds allows no model request")


def main():
    try:
        with open(os.environ["LOOPCHECK_TASK"]) as f:
            task = json.load(f)
        # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment.
        client = openai.OpenAI(max_retries=2)
        tools = Tools(task, os.environ["LOOPCHECK_TOOLS_URL"])
        result = {"status": "completed", "output_text": run(task, client, tools)}
    except Stop as stop:
        result = {"status": "failed", "reason": stop.reason, "detail": stop.detail}
    except Exception as err:  # openai.APIError once the SDK's retries are spent (or from a
        # nested in-stream error event), a broken stream, or a bug: still a result line.
        log(f"controller error: {err!r}")
        detail = f"{type(err).__name__}: {err}"
        result = {"status": "failed", "reason": "api_error", "detail": detail}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
