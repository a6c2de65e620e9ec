"""A contract-v1 loopcheck controller built on the official OpenAI Python SDK.

Supports the `previous_response_id` and `stateless` state modes and approvals. Every
Responses call goes through `with_raw_response` and the raw body is validated strictly
with `Response.model_validate`, so a response shape the SDK's types reject fails the case
with reason `sdk_parse_error` instead of being papered over by the SDK's lenient parsing.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

import jsonschema
import openai
from openai import OpenAI
from openai.types.responses import Response


class Stop(Exception):
    """Ends the loop with a failed result."""

    def __init__(self, reason, detail):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def error_output(message):
    return json.dumps({"error": str(message)})


def post_json(url, body):
    """POST JSON; returns (status, parsed body or None). Raises on transport errors."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
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


class Tools:
    def __init__(self, task, tools_url):
        self.url = tools_url.rstrip("/")
        self.principal = task["principal"]
        self.approval_required = set(task.get("approval_required") or [])
        self.validators = {}  # the registry: function name -> validator (None: no schema)
        for tool in task["tools"]:
            if tool.get("type") == "function":
                schema = tool.get("parameters")
                if schema is not None:
                    cls = jsonschema.validators.validator_for(schema)
                    cls.check_schema(schema)
                    schema = cls(schema)
                self.validators[tool["name"]] = schema

    def handle(self, call):
        """The output string for one function_call; never raises for tool-side failures."""
        if call.name not in self.validators:
            return error_output(f"unknown tool: {call.name}")
        try:
            args = json.loads(call.arguments)
        except ValueError as err:
            return error_output(f"invalid JSON arguments: {err}")
        if not isinstance(args, dict):
            return error_output("invalid JSON arguments: expected a JSON object")
        validator = self.validators[call.name]
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
                    return error_output(f"approval denied: {answer.get('reason') or 'no reason given'}")
                if answer.get("approved") is not True or not answer.get("approval"):
                    return error_output("approval request failed: malformed answer")
                body["approval"] = answer["approval"]
            for attempt in range(3):  # 5xx is transient; the backend de-duplicates by call_id
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


def create(client, **kwargs):
    """One POST /responses, its raw body validated strictly against the SDK's Response type."""
    try:
        raw = client.responses.with_raw_response.create(**kwargs)
    except openai.APIError as err:
        raise Stop("api_error", f"{type(err).__name__}: {err}")
    try:
        return Response.model_validate(json.loads(raw.text))
    except Exception as err:  # pydantic.ValidationError, or a body that is not JSON
        log(f"the SDK's Response type rejects the body:\n{err}\nbody: {raw.text}")
        raise Stop("sdk_parse_error", str(err))


def replay(item):
    data = item.model_dump(mode="json", exclude_none=True)
    if data.get("type") == "reasoning":
        data.pop("status", None)
    return data


def run(task, client, tools):
    state = task["state"]
    if state not in ("previous_response_id", "stateless"):
        raise Stop("unsupported", f"state mode {state!r} is not supported")
    if task.get("stream") or task.get("background"):
        raise Stop("unsupported", "stream and background are not supported")
    first = task["input"]
    context = [{"role": "user", "content": first}] if isinstance(first, str) else list(first)
    pending, previous_id = [], None
    max_rounds = task.get("max_rounds", 10)
    for round_ in range(1, max_rounds + 1):
        kwargs = {"model": task["model"], "tools": task["tools"], "parallel_tool_calls": True}
        if task.get("instructions") is not None:
            kwargs["instructions"] = task["instructions"]
        if state == "stateless":
            kwargs.update(input=context, store=False, include=["reasoning.encrypted_content"])
        elif previous_id is None:
            kwargs["input"] = first
        else:
            kwargs.update(input=pending, previous_response_id=previous_id)
        response = create(client, **kwargs)
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
        calls = [item for item in response.output if item.type == "function_call"]
        log(f"round {round_}/{max_rounds}: {len(calls)} function call(s)")
        if not calls:
            messages = [item for item in response.output if item.type == "message"]
            parts = messages[-1].content if messages else []
            refusal = next((p for p in parts if p.type == "refusal"), None)
            if refusal is not None and not any(p.type == "output_text" for p in parts):
                raise Stop("refusal", refusal.refusal)
            return response.output_text
        if round_ == max_rounds:  # these calls' outputs could never be sent back
            raise Stop("max_rounds", "model kept calling tools")
        outputs = []
        for call in calls:
            output = tools.handle(call)
            log(f"  {call.call_id} {call.name} -> {output}")
            outputs.append({"type": "function_call_output", "call_id": call.call_id, "output": output})
        if state == "stateless":
            context += [replay(item) for item in response.output] + outputs
        else:
            previous_id, pending = response.id, outputs
    raise Stop("max_rounds", "max_rounds allows no model request")


def main():
    try:
        with open(os.environ["LOOPCHECK_TASK"]) as f:
            task = json.load(f)
        client = OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY from the env
        tools = Tools(task, os.environ["LOOPCHECK_TOOLS_URL"])
        result = {"status": "completed", "output_text": run(task, client, tools)}
    except Stop as stop:
        result = {"status": "failed", "reason": stop.reason, "detail": stop.detail}
    except Exception as err:  # anything unexpected still ends with a result line
        log(f"controller error: {err!r}")
        result = {"status": "failed", "reason": "api_error", "detail": repr(err)}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
