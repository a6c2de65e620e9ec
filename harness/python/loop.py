"""loopcheck's Python reference controller: a contract-v1 Responses tool loop on the
official `openai` SDK (docs/contract.md).

One round is one model request. A completed response's `function_call` items each get
exactly one `function_call_output` (same `call_id`, same `caller`) in the next request; a
response without calls is the final answer, unless a program just finished
(`program_output`, no message): then the model answers in one more request.

Every response body is validated strictly with `Response.model_validate`: the SDK
otherwise builds its models leniently, and a shape its types reject must fail the case
(reason `sdk_parse_error`), not slip through as half-filled attributes.

Each step of the loop is a module-level function (or a `Tools` method) that `run` calls
through the module, so a test can swap exactly one of them for a defective version
(`loop.replay_items = ...`); harness/mutants/ does that to prove each check catches its
defect.

A task with `"websocket": true` (the Responses API's WebSocket mode) sends every model
request of the case run as a `response.create` event on one connection
(`SocketSession`, on the SDK's `client.responses.connect()`); `uses_socket` makes that
choice per task, and everything else in the loop is the same.
"""

import email.utils
import json
import math
import os
import random
import re
import ssl
import sys
import time
import urllib.error
import urllib.request

import jsonschema
import openai
import pydantic
from openai.lib.streaming.responses import ResponseStreamState
from openai.types.responses import Response
from websockets.exceptions import ConnectionClosed, InvalidStatus, WebSocketException
from websockets.protocol import State

TERMINAL_EVENTS = {"response.completed", "response.incomplete", "response.failed"}
# Seconds between polls of a background response (the fake answers each poll at once).
POLL_INTERVAL = 0.02


class Stop(Exception):
    """Ends the loop with a failed result (docs/contract.md)."""

    def __init__(self, reason, detail):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def log(*args):
    print(*args, file=sys.stderr, flush=True)  # stdout is reserved for the result line


class Failure(str):
    """An error output: the call did not run, or ran and failed. Sent as it is for a
    function or custom tool call; a shell or patch call reports it in its own fields."""


def error_output(message):
    return Failure(json.dumps({"error": str(message)}))


def post_json(url, body, timeout=30):
    """POST JSON; (status, parsed body or None). Raises TimeoutError when no answer came
    within `timeout` seconds, OSError on other transport errors."""
    status, answer, _ = post_json_with_headers(url, body, timeout)
    return status, answer


def post_json_with_headers(url, body, timeout=30):
    """post_json, with the answer's headers as a third element."""
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            status, text, headers = answer.status, answer.read(), answer.headers
    except urllib.error.HTTPError as err:  # 4xx/5xx still carry a JSON body
        status, text, headers = err.code, err.read(), err.headers
    except urllib.error.URLError as err:
        if isinstance(err.reason, TimeoutError):  # urllib wraps a connect timeout
            raise err.reason from err
        raise
    try:
        return status, json.loads(text), headers
    except ValueError:
        return status, None, headers


#: Checked schemas' validators by the schema's JSON: checking a schema against its
#: meta-schema costs about 2 ms, and a persistent worker meets the same tools case after case.
_VALIDATORS = {}


def schema_validator(schema):
    """A validator of `schema`, which is checked first (a malformed one raises)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]


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
        # Custom tools take free-form text: name -> the compiled `regex` grammar the whole
        # input must match, or None (plain text, or a `lark` grammar, not checked here).
        self.custom = {}
        # The tools known by their type (shell, local_shell, apply_patch) offered here:
        # type -> the callers it allows.
        self.typed = {}
        # The computer ({"type": "computer"} or "computer_use_preview"): its calls carry
        # actions, performed by the backend's /call/computer.
        self.computer = False
        # A namespace's function and custom tools are registered as "namespace.name"; a
        # call finds one only under its own namespace, never by the bare name.
        self.namespace_of = {}
        # A client-executed tool search looks through the deferred tools
        # (`defer_loading: true`), the catalogue whose definitions it loads.
        self.search = any(
            tool.get("type") == "tool_search" and tool.get("execution") == "client" for tool in task["tools"]
        )
        self.catalogue = [tool for tool in task["tools"] if tool.get("defer_loading") is True]
        for tool in flat_tools(task["tools"]):
            if tool.get("namespace_of") is not None:
                self.namespace_of[tool["name"]] = tool["namespace_of"]
            if tool.get("type") in TYPED_TOOLS:
                self.typed[tool["type"]] = tool.get("allowed_callers") or ["direct"]
                continue
            if tool.get("type") in ("computer", "computer_use_preview"):
                self.computer = True
                continue
            if tool.get("type") == "custom":
                self.custom[tool["name"]] = regex_grammar(tool.get("format"))
                continue
            if tool.get("type") != "function":
                continue
            schema = tool.get("parameters")
            if schema is not None:
                schema = schema_validator(schema)
            self.registry[tool["name"]] = (schema, tool.get("allowed_callers") or ["direct"])
        # The optional budgets: tool executions (distinct call_ids), the wait for one tool
        # request, and the case's deadline (run_case sets it: it counts from the start).
        self.max_calls = tool_call_budget(task)
        self.timeout = tool_timeout(task)
        self.executed = set()
        self.deadline = None

    def handle(self, call):
        # Everything the model sent is checked before anything is dispatched.
        # A call without a `type` (built by hand, not by the SDK) is a function call.
        if getattr(call, "type", "function_call") == "custom_tool_call":
            return self.handle_custom(call)
        if getattr(call, "type", "function_call") in TYPED_CALLS:
            return self.handle_typed(call)
        name = self.registered_name(call)
        entry = self.lookup(name)
        if entry is None:
            return error_output(f"unknown tool: {name}")
        validator, allowed_callers = entry
        if not self.caller_allowed(call, allowed_callers):
            return error_output("Function caller is excluded by allowed_callers.")
        try:
            args = self.parse_arguments(call.arguments)
        except ValueError as err:
            return error_output(f"invalid JSON arguments: {err}")
        problem = self.schema_problem(validator, args)
        if problem is not None:
            return error_output(f"arguments do not match the schema: {problem}")
        body = {"call_id": call.call_id, "arguments": args, "principal": self.principal}
        return self.dispatch(call, with_namespace(call, body))

    def registered_name(self, call):
        """The name the call's tool is registered under ("namespace.name" for a call that
        names a namespace); the name of no tool when the call names a namespaced tool
        without its namespace, or under another."""
        namespace = getattr(call, "namespace", None)
        name = call.name if namespace is None else f"{namespace}.{call.name}"
        owner = self.namespace_of.get(name)
        if owner != namespace:
            return name if owner is None else f"{name} (without its namespace {owner})"
        return name

    def handle_custom(self, call):
        """A custom tool call: its text `input` checked against the tool's regex grammar,
        then run with `input` in place of `arguments`."""
        name = self.registered_name(call)
        if name not in self.custom:
            return error_output(f"unknown custom tool: {name}")
        grammar = self.custom[name]
        if grammar is not None and grammar.fullmatch(call.input) is None:
            return error_output(f"input does not match the grammar of {name}")
        body = {"call_id": call.call_id, "input": call.input, "principal": self.principal}
        return self.dispatch(call, with_namespace(call, body))

    def handle_computer(self, call):
        """A computer call: its action (or batch of actions) performed on the backend, once
        the approver approved its pending safety checks; answered with the screenshot that
        came back, the approved checks acknowledged. A refused, failed or unknown call is
        not performed: its screenshot has no image and it acknowledges nothing."""
        item = {
            "type": "computer_call_output",
            "call_id": call.call_id,
            "output": {"type": "computer_screenshot"},
        }
        if not self.computer:
            log(f"  {call.call_id}: no computer tool offered, nothing performed")
            return item
        body = {"call_id": call.call_id, "principal": self.principal}
        if call.action is not None:
            body["action"] = call.action.to_dict(mode="json", exclude_none=True)
        if call.actions is not None:
            body["actions"] = [a.to_dict(mode="json", exclude_none=True) for a in call.actions]
        checks = [c.to_dict(mode="json", exclude_none=True) for c in call.pending_safety_checks]
        computer = ComputerRequest(call.call_id)
        try:
            if checks:
                approval, refusal = self.ask_approval(
                    computer, {**body, "pending_safety_checks": checks}, computer.name
                )
                if refusal is not None:
                    log(f"  {call.call_id}: safety checks refused, nothing performed")
                    return item
                body["approval"] = approval
                item["acknowledged_safety_checks"] = checks
            result = json.loads(self.execute(computer, body, computer.name))
        except OSError as err:  # urllib.error.URLError is an OSError
            log(f"  {call.call_id}: tool backend unreachable: {err}")
            return item
        if isinstance(result, dict):
            item["output"].update({k: result[k] for k in ("image_url", "file_id") if k in result})
        return item

    def handle_tool_search(self, call):
        """A client tool search: run on the backend's /call/tool_search with its
        arguments; answered with the catalogue's definitions of the tools it found (none
        when the search failed, or the task offers no client tool search)."""
        item = {"type": "tool_search_output", "call_id": call.call_id, "execution": "client", "tools": []}
        if not self.search:
            log(f"  {call.call_id}: no client tool search offered, nothing searched")
            return item
        body = {"call_id": call.call_id, "arguments": call.arguments, "principal": self.principal}
        try:
            search = SearchRequest(call.call_id)
            result = json.loads(self.execute(search, body, search.name))
        except OSError as err:  # urllib.error.URLError is an OSError
            log(f"  {call.call_id}: tool backend unreachable: {err}")
            return item
        found = result.get("tools") if isinstance(result, dict) else None
        for name in found if isinstance(found, list) else []:
            item["tools"].extend(tool for tool in self.catalogue if tool.get("name") == name)
        return item

    def handle_typed(self, call):
        """A shell, local shell or patch call: its `action` or `operation` run on the
        tool named by its type; the answer's fields in that kind's shape."""
        name, field = TYPED_CALLS[call.type]
        if name not in self.typed:
            return typed_answer(call, error_output(f"unknown tool: {name}"))
        if not self.caller_allowed(call, self.typed[name]):
            return typed_answer(call, error_output("Tool caller is excluded by allowed_callers."))
        given = getattr(call, field).to_dict(mode="json")
        body = {"call_id": call.call_id, field: given, "principal": self.principal}
        return typed_answer(call, self.dispatch(call, body, name))

    def dispatch(self, call, body, name=None):
        """Approval when the tool needs one, then execution; the output to send. `name`
        is the tool's, for the calls that carry none (shell, patch). A namespaced call is
        approved as "namespace.name" and sent with its bare name and its namespace."""
        registered = name or self.registered_name(call)
        name = name or call.name
        try:
            if self.needs_approval(registered):
                approval, refusal = self.ask_approval(call, body, name)
                if refusal is not None:
                    return refusal
                body["approval"] = approval
            return self.execute(call, body, name)
        except OSError as err:  # urllib.error.URLError is an OSError
            return error_output(f"tool backend unreachable: {err}")

    def decide(self, request):
        """An MCP approval request put to the approver: the mcp_approval_response to send,
        approving only on an explicit grant and giving the reason of a refusal."""
        try:
            arguments = json.loads(request.arguments)
        except ValueError:
            arguments = request.arguments
        body = {
            "call_id": request.id,
            "name": request.name,
            "arguments": arguments,
            "server_label": request.server_label,
            "principal": self.principal,
        }
        try:
            status, answer = post_json(f"{self.url}/approvals", body)
        except OSError as err:
            status, answer = None, {"reason": f"approval request failed: {err}"}
        decision = {"type": "mcp_approval_response", "approval_request_id": request.id}
        if status == 200 and answer.get("approved") is True:
            return {**decision, "approve": True}
        if status == 200 and answer.get("approved") is False:
            reason = answer.get("reason") or "no reason given"
        elif status is None:
            reason = answer["reason"]
        else:
            reason = f"approval request failed: HTTP {status}"
        return {**decision, "approve": False, "reason": reason}

    def lookup(self, name):
        """The registry entry (schema validator or None, allowed callers); None if unknown."""
        return self.registry.get(name)

    @staticmethod
    def caller_allowed(call, allowed_callers):
        # A local shell call has no caller: always direct.
        caller = getattr(call, "caller", None)
        caller = "programmatic" if caller and caller.type == "program" else "direct"
        return caller in allowed_callers

    @staticmethod
    def parse_arguments(text):
        """The arguments as a dict; ValueError when they are not a JSON object."""
        args = json.loads(text)
        if not isinstance(args, dict):
            raise ValueError("expected a JSON object")
        return args

    @staticmethod
    def schema_problem(validator, args):
        """What is wrong with the arguments under the tool's schema, or None."""
        if validator is None:
            return None
        error = jsonschema.exceptions.best_match(validator.iter_errors(args))
        return None if error is None else error.message

    def needs_approval(self, name):
        return name in self.approval_required

    def ask_approval(self, call, body, name):
        """(approval token, None), or (None, the error output that answers the call)."""
        status, answer = post_json(f"{self.url}/approvals", {**body, "name": name})
        if status != 200 or not isinstance(answer, dict):
            return None, error_output(f"approval request failed: HTTP {status}")
        if answer.get("approved") is False:
            reason = answer.get("reason") or "no reason given"
            return None, error_output(f"approval denied: {reason}")
        if answer.get("approved") is not True or not answer.get("approval"):
            return None, error_output("approval request failed: malformed answer")
        return answer["approval"], None

    def execute(self, call, body, name):
        """Runs the call on the backend; the output to send for it. Raises Stop when a
        budget ends the loop: the call would go past max_tool_calls, or the deadline
        passed."""
        if call.call_id not in self.executed:
            if self.max_calls is not None and len(self.executed) >= self.max_calls:
                raise Stop(
                    "max_tool_calls",
                    f"{name} ({call.call_id}) would be tool execution "
                    f"{len(self.executed) + 1}: max_tool_calls is {self.max_calls}",
                )
            self.executed.add(call.call_id)
        # 429 and 5xx are transient, and so is a tool that does not answer within
        # tool_timeout_ms: resending with the same call_id is safe because the backend
        # de-duplicates by it. 403 (denied), 409, 404 and 422 would fail again: relayed.
        timed_out = False
        for attempt in range(self.CALL_ATTEMPTS):
            limit = self.request_timeout()
            try:
                status, answer, headers = post_json_with_headers(
                    f"{self.url}/call/{name}", body, limit
                )
            except TimeoutError:
                time_left(self.deadline)  # Stop("timeout") when it was the deadline
                log(f"tool {name} ({call.call_id}): no answer in time, attempt {attempt + 1}")
                timed_out = True
                continue
            if not self.retryable(status):
                break
            log(f"tool {name} ({call.call_id}): HTTP {status} on attempt {attempt + 1}")
            timed_out = False
            wait = self.retry_wait(headers)
            if wait is None:  # longer than any retry is worth: answered as failed
                return error_output(f"tool unavailable: HTTP {status}, retry much later")
            if attempt + 1 < self.CALL_ATTEMPTS:
                time.sleep(wait)
        else:
            if timed_out:
                return error_output(f"tool timed out: no answer within {limit * 1000:.0f} ms")
            return error_output("tool unavailable")
        return self.output_for(status, answer)

    def request_timeout(self):
        """How long one tool request may wait: tool_timeout_ms, cut to the time left
        before the deadline (Stop("timeout") once it has passed); 30 s without either."""
        limits = [t for t in (self.timeout, time_left(self.deadline)) if t is not None]
        return min(limits, default=30)

    # Attempts at one call the backend keeps refusing (429, 5xx) before it is answered
    # as failed.
    CALL_ATTEMPTS = 3

    @staticmethod
    def retryable(status):
        return status == 429 or status >= 500

    @staticmethod
    def retry_wait(headers):
        """Seconds to wait before resending: what the answer asks for (retry-after-ms,
        else retry-after), else 50 ms; None when it asks for more than 60 s."""
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            try:
                wait = float(headers.get(name)) * scale
            except (TypeError, ValueError):
                continue
            if wait > 0:
                return wait if wait <= 60 else None
        return 0.05

    @staticmethod
    def output_for(status, answer):
        """The backend's result, JSON-encoded, or an error output naming its refusal."""
        answer = answer if isinstance(answer, dict) else {}
        if status == 200 and "result" in answer:
            return json.dumps(answer["result"])
        error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
        code = "forbidden" if status == 403 else error.get("code") or f"HTTP {status}"
        return error_output(f"{code}: {error.get('message') or 'no message'}")


# The tools known by their type, and the call items that call them: item type -> (tool
# name, the call's input field).
TYPED_TOOLS = ("shell", "local_shell", "apply_patch")
TYPED_CALLS = {
    "shell_call": ("shell", "action"),
    "local_shell_call": ("local_shell", "action"),
    "apply_patch_call": ("apply_patch", "operation"),
}


def typed_answer(call, output):
    """The answer fields of a shell, local shell or patch call from its output (the
    backend's result as JSON, or a Failure). A shell call's output is the backend's
    chunks, a failure one chunk with the reason in stderr and exit code 1; a local shell
    call's output is JSON text, as a function's; a patch reports `completed` or
    `failed` in its status, the log line or reason in its output."""
    failed = isinstance(output, Failure)
    reason = json.loads(output)["error"] if failed else None
    if call.type == "shell_call":
        if failed:
            chunks = [{"stdout": "", "stderr": reason, "outcome": {"type": "exit", "exit_code": 1}}]
        else:
            chunks = json.loads(output)
        fields = {"output": chunks}
        if call.action.max_output_length is not None:
            fields["max_output_length"] = call.action.max_output_length
        return fields
    if call.type == "apply_patch_call":
        if failed:
            return {"status": "failed", "output": reason}
        result = json.loads(output)
        result = result if isinstance(result, dict) else {}
        return {"status": result.get("status", "completed"), "output": str(result.get("output", ""))}
    return {"output": str(output)}
def flat_tools(tools):
    """The task's tools with each namespace's tools in its place, named "namespace.name"
    and marked with their namespace (`namespace_of`)."""
    for tool in tools:
        if tool.get("type") != "namespace":
            yield tool
            continue
        for member in tool.get("tools") or []:
            yield {**member, "name": f"{tool['name']}.{member['name']}", "namespace_of": tool["name"]}


def with_namespace(call, body):
    """A backend request body with the call's namespace, when it names one."""
    namespace = getattr(call, "namespace", None)
    return body if namespace is None else {**body, "namespace": namespace}


class SearchRequest:
    """A tool search call as the backend's requests name it: the `tool_search` tool."""

    name = "tool_search"

    def __init__(self, call_id):
        self.call_id = call_id


class ComputerRequest:
    """A computer call as the backend's requests name it: the `computer` tool."""

    name = "computer"

    def __init__(self, call_id):
        self.call_id = call_id


def regex_grammar(format_):
    """A custom tool's `{"type": "grammar", "syntax": "regex"}` format compiled, else None."""
    if isinstance(format_, dict) and format_.get("type") == "grammar" and format_.get("syntax") == "regex":
        return re.compile(format_["definition"])
    return None


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

# The WebSocket mode. The SDK's connection reconnects by itself only when given an
# `on_reconnecting` handler (close codes 1001, 1005, 1006, 1011-1013, 1015): it opens a new
# connection and sends what was queued but never sent, not a create already sent, and
# the new connection holds none of the old one's `store: false` responses, so a
# `previous_response_id` to one of them would be refused there. No handler is given here:
# SocketSession replaces a closed connection before the next create and resends a create
# whose answer never started, whatever the state mode.

# Seconds a graceful close may take at the end of a case run before the connection is
# simply dropped: the outcome is settled by then.
SOCKET_CLOSE_TIMEOUT = 1.0
# The SDK's retry policy for an HTTP answer (`openai._base_client`, `_constants`), which
# the socket's refusals follow: a server-directed wait of up to two minutes is honoured,
# a longer one is not retried; otherwise an exponential backoff with jitter.
MAX_RETRY_AFTER = 120.0
INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0


def uses_socket(task):
    """Whether the case run's model requests go over the WebSocket mode."""
    return bool(task.get("websocket", False))


class SocketRefused(Exception):
    """The API refused a create as HTTP would: an `error` event with a status before the
    answer's first event, or a refused upgrade."""

    def __init__(self, status, message, headers):
        super().__init__(f"HTTP {status}: {message}")
        self.status, self.headers = status, headers


class SocketUnanswered(Exception):
    """No connection, or the connection was lost before the answer's first event: retried
    as an HTTP connection error is."""


def retry_after(headers):
    """Seconds the answer asks to wait (`retry-after-ms`, `retry-after` in seconds or as
    an HTTP date), or None, as the SDK reads them."""
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value)
        except ValueError:
            continue
        infinity = value.strip().lower().lstrip("+") in ("inf", "infinity")
        if math.isinf(delay) and not infinity:
            return MAX_RETRY_AFTER + 1  # an overflowing wait is a long one, not a malformed one
        return delay / divisor
    try:
        date = email.utils.parsedate_tz(headers.get("retry-after"))
        return None if date is None else float(email.utils.mktime_tz(date) - time.time())
    except (TypeError, ValueError, OverflowError, OSError):
        return None


def should_retry(status, headers):
    """Whether the SDK would retry an HTTP answer with this status and these headers:
    `x-should-retry` wins, then 408, 409, 429 and 5xx; never when asked to wait too long."""
    wait = retry_after(headers)
    if wait is not None and math.isfinite(wait) and wait > MAX_RETRY_AFTER:
        return False
    flag = headers.get("x-should-retry")
    if flag in ("true", "false"):
        return flag == "true"
    return status in (408, 409, 429) or status >= 500


def retry_delay(headers, retries):
    """Seconds before retry number `retries + 1`: what the answer asks for, else the SDK's
    backoff (0.5 s doubling, at most 8 s, less up to a quarter of jitter)."""
    wait = retry_after(headers)
    if wait is not None and math.isfinite(wait) and 0 < wait <= MAX_RETRY_AFTER:
        return wait
    return min(INITIAL_RETRY_DELAY * 2.0**retries, MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


def socket_event(body):
    """The `response.create` event for a create's body: its fields, without `stream`
    (implicit on a socket) and `background` (not served on one)."""
    event = {key: value for key, value in body.items() if key not in ("stream", "background")}
    return {"type": "response.create", **event}


def stream_error(event):
    """The failure of an `error` event in an answer: the documented flat shape, or the
    nested one the socket sends."""
    error = event.get("error") if isinstance(event.get("error"), dict) else event
    return Stop("api_error", f"stream error {error.get('code')}: {error.get('message')}")


class SocketSession:
    """The WebSocket connection of one case run, to `/responses` on OPENAI_BASE_URL: opened
    at the first create, replaced when the server closed it between creates, closed by
    `close()` at the end of the run. One response is in flight at a time.

    `create(body)` answers as `create()` does for a stream: the events are fed to the SDK's
    stream accumulator (which raises on any out-of-order event), calls are read from the
    terminal event only, and its response is `validated`. The API refusing a create (an
    `error` event with a status before the answer's first event, or a refused upgrade) is
    retried as the SDK retries that HTTP answer, on the same connection; a connection that
    cannot be made or is lost before the answer's first event is retried on a new one, as
    a connection error; both at most `client.max_retries` times. Once an answer started,
    an `error` event or a lost connection is a broken stream, never retried."""

    def __init__(self, client, deadline=None):
        self.client = client
        self.deadline = deadline
        self.connection = None

    def create(self, body):
        event = socket_event(body)
        retries = 0
        while True:
            try:
                return self.attempt(event)
            except SocketRefused as refusal:
                failure, headers = refusal, refusal.headers
                retry = should_retry(refusal.status, headers)
            except SocketUnanswered as lost:
                failure, headers, retry = lost, {}, True
            if not retry or retries >= self.client.max_retries:
                raise Stop("api_error", str(failure))
            wait = retry_delay(headers, retries)
            log(f"{failure}; retrying in {wait:.2f} s")
            time.sleep(wait)
            retries += 1

    def close(self):
        """Closes the connection, if one is open, as a client that is done closes it."""
        connection, self.connection = self.connection, None
        if connection is not None:
            try:
                connection.close()
            except (WebSocketException, OSError) as err:  # the outcome is settled already
                log(f"closing the connection: {err}")

    def attempt(self, event):
        """Sends the create once, on the open connection or a new one, and reads its answer."""
        limit = self.attempt_timeout()
        until = time.monotonic() + limit
        self.discard_if_closed()
        if self.connection is None:
            self.connection = self.connect(limit)
        try:
            self.connection.send(event)
        except (WebSocketException, OSError) as err:
            self.close()
            raise SocketUnanswered(f"sending the create: {err!r}")
        return self.read_answer(until)

    def attempt_timeout(self):
        """How long one attempt (connecting, sending, the whole answer) may take: the
        client's read timeout, cut to the time left before the deadline (Stop("timeout")
        once it has passed), as an HTTP attempt is bounded."""
        timeout = self.client.timeout
        limits = [getattr(timeout, "read", timeout), time_left(self.deadline)]
        return min((t for t in limits if t is not None), default=600)

    def connect(self, limit):
        # The SDK's connect: the base URL as ws(s):// plus /responses, the bearer key and
        # the SDK's headers on the upgrade.
        options = {"open_timeout": limit, "close_timeout": SOCKET_CLOSE_TIMEOUT}
        try:
            connection = self.client.responses.connect(websocket_connection_options=options).enter()
        except InvalidStatus as refused:  # the upgrade's HTTP answer: the API's refusal
            answer = refused.response
            text = answer.body.decode(errors="replace") if answer.body else ""
            headers = {name.lower(): value for name, value in answer.headers.raw_items()}
            raise SocketRefused(answer.status_code, error_message(text), headers)
        except (WebSocketException, OSError) as err:  # TimeoutError is an OSError
            raise SocketUnanswered(f"connecting: {err!r}")
        log("connected over the WebSocket mode")
        return connection

    def discard_if_closed(self):
        """Drops the connection if the server closed it, or it broke, while the loop was
        busy elsewhere (the server's connection time limit closes with 1001)."""
        if self.connection is None:
            return
        while True:
            try:
                stray = self.transport().recv(timeout=0)  # only what arrived already
            except TimeoutError:
                break
            except ConnectionClosed as closed:
                log(f"{describe_close(closed)} while idle; reconnecting")
                self.close()
                return
            log(f"ignored between answers: {str(stray)[:200]}")
        if self.transport().state is not State.OPEN:  # the close is under way
            log("the server is closing the connection; reconnecting")
            self.close()

    def transport(self):
        """The SDK connection's websockets connection: the SDK's recv() takes no timeout,
        this one's does."""
        return self.connection._connection

    def read_answer(self, until):
        """The create's answer, read to its terminal event by `until`."""
        state = ResponseStreamState(input_tools=openai.omit, text_format=openai.omit)
        started = False
        while True:
            message, event = self.next_event(until, started)
            started = True
            state.handle_event(self.connection.parse_event(message))
            # Calls are only read from the terminal event: items seen before it may still
            # be cut short, and a response that never completes must run nothing.
            if event.get("type") in TERMINAL_EVENTS:
                return validated(json.dumps(event.get("response")))

    def next_event(self, until, started):
        """The answer's next event, as its text and its JSON object, read by `until`. An
        `error` event raises: the API refusing the create before the answer `started`, a
        broken stream after."""
        try:
            message = self.transport().recv(timeout=max(0.0, until - time.monotonic()))
        except TimeoutError:
            time_left(self.deadline)  # Stop("timeout") when it was the deadline
            raise self.lost(started, "no answer in time")
        except ConnectionClosed as closed:
            raise self.lost(started, describe_close(closed))
        if not isinstance(message, str):
            raise Stop("api_error", "a binary message where an event was expected")
        try:
            event = json.loads(message)
        except ValueError as err:
            raise Stop("api_error", f"an event that is not JSON: {err}")
        if not isinstance(event, dict):
            raise Stop("api_error", f"an event that is not an object: {message[:200]}")
        if event.get("type") == "error":
            refusal = refused_create(event) if not started else None
            raise refusal or stream_error(event)
        return message, event

    def lost(self, started, detail):
        """The failure of a connection lost during a create: retried before the answer's
        first event, a broken stream after it."""
        self.close()
        if started:
            log(f"the event stream broke: {detail}")
            return Stop("api_error", "the stream ended before a terminal event")
        return SocketUnanswered(f"the connection was lost before an answer: {detail}")


def refused_create(event):
    """The API's refusal an `error` event with a status carries, or None (a stream's error
    event has no status)."""
    status = event.get("status")
    if not isinstance(status, int) or isinstance(status, bool):
        return None
    error = event.get("error") if isinstance(event.get("error"), dict) else {}
    headers = error.get("headers") if isinstance(error.get("headers"), dict) else {}
    headers = {str(name).lower(): str(value) for name, value in headers.items()}
    return SocketRefused(status, error.get("message") or "no message", headers)


def error_message(text):
    """The message of an API error body, or the text itself."""
    try:
        return json.loads(text)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return text or "no message"


def describe_close(closed):
    frame = closed.rcvd
    if frame is None:
        return "the connection was lost"
    return f"the server closed the connection ({frame.code}: {frame.reason})"



def model_request(client, socket, kwargs, task):
    """One model request: a `response.create` on the case run's socket when it has one,
    else over HTTP (`create`, streamed when the task streams)."""
    if socket is not None:
        return socket.create(kwargs)
    return create(client, kwargs, task.get("stream", False))


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
    # A refusal part refuses, whatever text sits beside it: that text is no answer.
    if refusal is not None:
        raise Stop("refusal", refusal.refusal)
    return response.output_text


def structured_answer(text, text_format):
    """The final message checked against the task's `text_format` (a `json_schema`
    config): it must parse as JSON and satisfy the schema, or the case fails with reason
    `invalid_output`. The answer reported is the message text as the model wrote it."""
    try:
        value = json.loads(text)
    except ValueError as err:
        raise Stop("invalid_output", f"the final message is not JSON: {err}") from None
    schema = text_format.get("schema", {})
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is not None:
        where = "/".join(str(step) for step in error.absolute_path) or "(the top level)"
        raise Stop("invalid_output", f"the final message breaks the schema {text_format.get('name')!r} at {where}: {error.message}")
    return text


def compact(client, config, sent):
    """The context compacted by `POST /responses/compact`: its output (the user messages
    and one `compaction` item) replaces everything sent so far, verbatim."""
    body = {"model": config["model"], "input": sent}
    if config.get("instructions") is not None:
        body["instructions"] = config["instructions"]
    raw = client.responses.with_raw_response.compact(**body)
    output = json.loads(raw.text)["output"]
    log(f"  compacted {len(sent)} item(s) into {len(output)}")
    return [{key: value for key, value in item.items() if value is not None} for item in output]


def compacts_now(task, round_):
    """Whether the context is compacted after this round (stateless mode only: the other
    modes keep their context on the server)."""
    return task["state"] == "stateless" and task.get("compact_after_rounds") == round_


def replay(item):
    """An output item as stateless input: the keys the server sent (so `program` items keep
    their code and fingerprint verbatim), minus nulls and `status` on reasoning, which
    the API rejects in input."""
    data = item.to_dict(mode="json", exclude_none=True)
    if data["type"] == "reasoning":
        data.pop("status", None)
    return data


def replay_items(response):
    """Every output item of a response, in order, as stateless input."""
    return [replay(item) for item in response.output]


#: One TLS context for the process: loading the system's certificates costs about 20 ms,
#: which a persistent worker would otherwise pay for every case's client.
_TLS = None


def http_client(**options):
    """A fresh connection pool (each case starts with its own), on the shared TLS context."""
    global _TLS
    if _TLS is None:
        _TLS = ssl.create_default_context()
    return openai.DefaultHttpxClient(verify=_TLS, **options)


def make_client():
    # OPENAI_BASE_URL and OPENAI_API_KEY come from the environment.
    return openai.OpenAI(max_retries=2, http_client=http_client())


def round_budget(task):
    return task.get("max_rounds", 10)


def tool_call_budget(task):
    """The most tool executions (distinct call_ids) for the case, or None."""
    return task.get("max_tool_calls")


def tool_timeout(task):
    """How long one tool request may take, in seconds, or None."""
    ms = task.get("tool_timeout_ms")
    return None if ms is None else ms / 1000


def start_clock(task):
    """The deadline as a time.monotonic() instant, or None: deadline_ms counts from now,
    the controller's start on the case."""
    ms = task.get("deadline_ms")
    return None if ms is None else time.monotonic() + ms / 1000


def time_left(deadline):
    """Seconds left before the deadline (None without one); Stop("timeout") once it has
    passed: nothing new may start after it."""
    if deadline is None:
        return None
    left = deadline - time.monotonic()
    if left <= 0:
        raise Stop("timeout", "deadline_ms passed")
    return left


def with_deadline(client, deadline):
    """The client, bounded by the deadline: every HTTP attempt (the SDK's own retries
    included) may last only the time left, and none starts once it has passed. The hook
    raises Stop, which the SDK does not retry (it retries only transport errors)."""
    if deadline is None:
        return client

    def bound(request):
        left = time_left(deadline)
        request.extensions["timeout"] = {"connect": left, "read": left, "write": left, "pool": left}

    hooks = {"request": [bound]}
    return client.with_options(http_client=http_client(event_hooks=hooks))


def initial_config(task):
    """What every request carries besides its input. Neither previous_response_id nor a
    conversation carries instructions or tools: they go out with every request."""
    config = {"model": task["model"], "tools": task["tools"], "parallel_tool_calls": True}
    if task.get("instructions") is not None:
        config["instructions"] = task["instructions"]
    if task.get("background", False):
        config["background"] = True
    if task.get("text_format") is not None:  # structured output, asked of every response
        config["text"] = {"format": task["text_format"]}
    if task.get("context_management") is not None:  # server-side compaction
        config["context_management"] = task["context_management"]
    if task["state"] == "stateless":
        if task.get("background", False):  # background responses are stored
            raise Stop("unsupported", "background needs stored responses")
        config.update(store=False, include=["reasoning.encrypted_content"])
    if task.get("include"):  # what the task asks to include beside the mode's own
        config["include"] = config.get("include", []) + [
            value for value in task["include"] if value not in config.get("include", [])
        ]
    return config


def poll(client, response):
    """A background response, polled until it leaves `queued` and `in_progress`."""
    while response.status in ("queued", "in_progress"):
        time.sleep(POLL_INTERVAL)
        response = validated(client.responses.with_raw_response.retrieve(response.id).text)
    return response


# The call item types this loop runs, each with the type of the item that answers it.
ANSWER_TYPES = {
    "function_call": "function_call_output",
    "custom_tool_call": "custom_tool_call_output",
    "shell_call": "shell_call_output",
    "local_shell_call": "local_shell_call_output",
    "apply_patch_call": "apply_patch_call_output",
    "computer_call": "computer_call_output",
    "tool_search_call": "tool_search_output",
}

# The answer field naming the call, where it is not `call_id`: a local shell call's
# output names it in its `id`.
ANSWER_REF = {"local_shell_call_output": "id"}


def pending_calls(response):
    """The calls to answer: a server-executed tool search is hosted, replayed only."""
    return [
        item
        for item in response.output
        if item.type in ANSWER_TYPES and getattr(item, "execution", "client") == "client"
    ]


def approval_requests(response):
    """The MCP approval requests of a response: the model waits for a decision on each.
    Hosted items (web_search_call, mcp_call, ...) ran on the server and are only replayed."""
    return [item for item in response.output if item.type == "mcp_approval_request"]


def is_final(response, calls, requests=()):
    """No calls and no approval requests mean the answer, unless a program just finished
    (`program_output`, no message): then the model answers in one more request."""
    kinds = {item.type for item in response.output}
    return not calls and not requests and ("program_output" not in kinds or "message" in kinds)


def has_room(round_, max_rounds):
    """Whether a request may follow this round, to carry its outputs back."""
    return round_ < max_rounds


def answer(call, output):
    """The output item of the call's kind (function_call_output, custom_tool_call_output,
    shell_call_output, ...): `output` is the output text, or a typed call's answer fields."""
    kind = ANSWER_TYPES[call.type]
    fields = output if isinstance(output, dict) else {"output": output}
    item = {"type": kind, ANSWER_REF.get(kind, "call_id"): call.call_id, **fields}
    if getattr(call, "caller", None) is not None:  # a program's child call: the program resumes on it
        item["caller"] = call.caller.to_dict(mode="json")
    return item


def answer_approvals(requests, tools):
    """One mcp_approval_response per approval request, in their order."""
    decisions = []
    for request in requests:
        decision = tools.decide(request)
        log(f"  {request.id} {request.server_label}/{request.name} -> approve: {decision['approve']}")
        decisions.append(decision)
    return decisions


def answer_calls(calls, tools):
    """One output per call, in the calls' order."""
    outputs = []
    for call in calls:
        if getattr(call, "type", None) == "tool_search_call":
            item = tools.handle_tool_search(call)
            log(f"  {call.call_id} tool_search -> {json.dumps(item)[:160]}")
            outputs.append(item)
            continue
        if getattr(call, "type", None) == "computer_call":
            item = tools.handle_computer(call)
            log(f"  {call.call_id} computer -> {item['output']}")
            outputs.append(item)
            continue
        output = tools.handle(call)
        log(f"  {call.call_id} {getattr(call, 'name', call.type)} -> {output}")
        outputs.append(answer(call, output))
    return outputs


def next_input(state, sent, response, outputs):
    """The next request's input: stateless mode resends everything (the last input, every
    output item of the response, the call outputs); the other modes only the new items."""
    if state == "stateless":
        return sent + replay_items(response) + outputs
    return outputs


def next_config(config, response, state):
    """The next request's configuration: the same, chained to this response."""
    if state == "previous_response_id":
        return {**config, "previous_response_id": response.id}
    return config


def run(task, client, tools):
    state = task["state"]
    config = initial_config(task)
    first = task["input"]
    if state == "stateless":
        sent = [{"role": "user", "content": first}] if isinstance(first, str) else list(first)
    elif state == "conversation":
        config["conversation"] = client.conversations.create().id
        sent = first
    elif state == "previous_response_id":
        sent = first
    else:
        raise Stop("unsupported", f"state mode {state!r} is not supported")

    max_rounds = round_budget(task)
    # One connection per case run in the WebSocket mode, never shared between cases.
    socket = SocketSession(client, tools.deadline) if uses_socket(task) else None
    try:
        for round_ in range(1, max_rounds + 1):
            response = model_request(client, socket, {**config, "input": sent}, task)
            if task.get("background", False):
                response = poll(client, response)
            check_status(response)
            calls = pending_calls(response)
            requests = approval_requests(response)
            kinds = sorted({item.type for item in response.output})
            log(f"round {round_}/{max_rounds}: {len(calls)} function call(s), items {kinds}")
            if is_final(response, calls, requests):
                text = final_answer(response)
                if task.get("text_format") is not None:
                    return structured_answer(text, task["text_format"])
                return text
            if not has_room(round_, max_rounds):  # outputs (or a program's result) never sent
                raise Stop("max_rounds", "model kept calling tools")
            outputs = answer_calls(calls, tools) + answer_approvals(requests, tools)
            sent = next_input(state, sent, response, outputs)
            if compacts_now(task, round_):
                sent = compact(client, config, sent)
            config = next_config(config, response, state)
        raise Stop("max_rounds", "max_rounds allows no model request")
    finally:
        if socket is not None:
            socket.close()


def run_case(task):
    """One case, from the task and the environment, to its result object."""
    try:
        deadline = start_clock(task)
        client = with_deadline(make_client(), deadline)
        tools = Tools(task, os.environ["LOOPCHECK_TOOLS_URL"])
        tools.deadline = deadline
        return {"status": "completed", "output_text": run(task, client, tools)}
    except Stop as stop:
        return {"status": "failed", "reason": stop.reason, "detail": stop.detail}
    except Exception as err:  # openai.APIError once the SDK's retries are spent (or from a
        # nested in-stream error event), a broken stream, or a bug: still a result line.
        log(f"controller error: {err!r}")
        return {"status": "failed", "reason": "api_error", "detail": f"{type(err).__name__}: {err}"}


def warm_up():
    """Builds a client and loads the Responses resource once, before the first case line
    is read: the SDK loads them lazily, and on a loaded machine that cost would fall in
    the first case's timeout instead of the worker's start-up."""
    openai.OpenAI(api_key="warm-up", base_url="http://127.0.0.1:9/v1").responses
    import websockets.sync.client  # noqa: F401 - the SDK's connect() imports it on first use


def main():
    if "LOOPCHECK_TASK" in os.environ:  # one process per case (docs/contract.md)
        with open(os.environ["LOOPCHECK_TASK"]) as f:
            print(json.dumps(run_case(json.load(f))), flush=True)
        return
    # Persistent mode (section 6): one case per line on stdin, one result line each.
    warm_up()
    for line in sys.stdin:
        if line.strip():
            request = json.loads(line)
            os.environ.update(request["env"])
            print(json.dumps(run_case(request["task"])), flush=True)


if __name__ == "__main__":
    main()
