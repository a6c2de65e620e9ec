"""Validates what the fake Responses server sent against the Open Responses specification.

Reads JSON lines on standard input, one document each: ``{"label": ..., "model": ...,
"value": ...}``, where ``model`` names what the document is:

- ``response``: a Response body (``ResponseResource``);
- ``event``: a stream event, over SSE or the WebSocket (the ``*StreamingEvent`` model
  whose ``type`` it names);
- ``socket_error``: a WebSocket ``error`` event (``WebSocketErrorEvent``);
- ``compaction``: a compacted response (``CompactResource``).

Writes one JSON object on standard output: the spec version, how many documents of each
model were checked, every complaint the spec's models make that no entry of
``DIFFERENCES`` excuses (``label``, ``path``, ``complaint``), and how many complaints each
difference excused. The models come from the ``openresponses-types`` package (pinned in
tests/requirements.txt), never from a copy in the repository.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable

import openresponses_types
from openresponses_types import types as spec
from pydantic import BaseModel, ValidationError

SPEC_VERSION = "2026-04-24"

# Output item kinds OpenAI's SDK has and the spec's output union does not
# (`ResponseOutputItem` in openai/types/responses/response_output_item.py).
OPENAI_ONLY_ITEMS = {
    "file_search_call",
    "web_search_call",
    "computer_call",
    "computer_call_output",
    "program",
    "program_output",
    "tool_search_call",
    "tool_search_output",
    "additional_tools",
    "image_generation_call",
    "code_interpreter_call",
    "local_shell_call",
    "local_shell_call_output",
    "shell_call",
    "shell_call_output",
    "apply_patch_call",
    "apply_patch_call_output",
    "mcp_call",
    "mcp_list_tools",
    "mcp_approval_request",
    "mcp_approval_response",
    "custom_tool_call",
    "custom_tool_call_output",
}

# Stream events OpenAI's SDK has and the spec does not (`ResponseStreamEvent` in
# openai/types/responses/response_stream_event.py). The spec names reasoning text events
# `response.reasoning.delta/.done`; OpenAI names them `response.reasoning_text.*`.
OPENAI_ONLY_EVENTS = {
    "response.custom_tool_call_input.delta",
    "response.custom_tool_call_input.done",
    "response.reasoning_text.delta",
    "response.reasoning_text.done",
    "response.shell_call_command.added",
    "response.shell_call_command.delta",
    "response.shell_call_command.done",
    "response.shell_call_output_content.delta",
    "response.shell_call_output_content.done",
    "response.mcp_call_arguments.delta",
    "response.mcp_call_arguments.done",
    "response.mcp_call.in_progress",
    "response.mcp_call.completed",
    "response.mcp_call.failed",
    "response.mcp_list_tools.in_progress",
    "response.mcp_list_tools.completed",
    "response.mcp_list_tools.failed",
    "response.web_search_call.in_progress",
    "response.web_search_call.searching",
    "response.web_search_call.completed",
    "response.file_search_call.in_progress",
    "response.file_search_call.searching",
    "response.file_search_call.completed",
    "response.code_interpreter_call.in_progress",
    "response.code_interpreter_call.interpreting",
    "response.code_interpreter_call.completed",
    "response.code_interpreter_call_code.delta",
    "response.code_interpreter_call_code.done",
    "response.image_generation_call.in_progress",
    "response.image_generation_call.generating",
    "response.image_generation_call.partial_image",
    "response.image_generation_call.completed",
    "response.compaction.compacting",
    "response.audio.delta",
    "response.audio.done",
    "response.audio.transcript.delta",
    "response.audio.transcript.done",
}

# Tool kinds OpenAI's SDK has beside `function` (`Tool` in openai/types/responses/tool.py);
# the spec's `tools` holds function tools only.
OPENAI_ONLY_TOOLS = {
    "custom",
    "namespace",
    "shell",
    "apply_patch",
    "local_shell",
    "computer",
    "computer_use_preview",
    "tool_search",
    "mcp",
    "web_search",
    "web_search_preview",
    "web_search_2025_08_26",
    "web_search_preview_2025_03_11",
    "file_search",
    "code_interpreter",
    "image_generation",
    "programmatic_tool_calling",
}


def _type_in(kinds: set[str]) -> Callable[[Any, Any], bool]:
    return lambda node, _root: isinstance(node, dict) and node.get("type") in kinds


@dataclass(frozen=True)
class Difference:
    """Where OpenAI's SDK types and the spec disagree, and the fake follows OpenAI.

    A complaint is excused when its path (indices as ``[*]``) is one of ``paths`` or lies
    under one, and ``when(node, root)`` holds for the node at that path (None when
    absent) and the whole document. An empty path is the whole document.
    """

    paths: tuple[str, ...]
    reason: str
    sdk: str
    when: Callable[[Any, Any], bool] = lambda _node, _root: True


def _absent(node: Any, _root: Any) -> bool:
    return node is None


def _response(path: str) -> tuple[str, str]:
    """`path` in a Response body, and in the Response a lifecycle event carries."""
    return (path, f"response.{path}")


_ANNOTATIONS = (
    *_response("output[*].content[*].annotations[*]"),
    "item.content[*].annotations[*]",
    "part.annotations[*]",
    "annotation",
)

# The one table of differences. Every other complaint fails the test.
DIFFERENCES: list[Difference] = [
    Difference(
        (*_response("presence_penalty"), *_response("frequency_penalty")),
        "the spec requires `presence_penalty` and `frequency_penalty` on a Response; "
        "OpenAI's Response has neither",
        "openai/types/responses/response.py",
        _absent,
    ),
    Difference(
        (*_response("output[*]"), "item"),
        "an output item kind OpenAI has and the spec's output union lacks (custom tool "
        "calls, programs, shell, apply_patch, computer, tool search, MCP, hosted tools)",
        "openai/types/responses/response_output_item.py",
        _type_in(OPENAI_ONLY_ITEMS),
    ),
    Difference(
        _response("tools[*]"),
        "a tool kind OpenAI has beside `function` (custom, programmatic_tool_calling, "
        "shell, ...); the spec's Response lists function tools only",
        "openai/types/responses/tool.py",
        _type_in(OPENAI_ONLY_TOOLS),
    ),
    Difference(
        _ANNOTATIONS,
        "an annotation kind OpenAI has beside `url_citation` (file_citation, "
        "container_file_citation, file_path); the spec has url citations only",
        "openai/types/responses/response_output_text.py",
        _type_in({"file_citation", "container_file_citation", "file_path"}),
    ),
    Difference(
        ("",),
        "a stream event OpenAI has and the spec lacks (custom tool input, reasoning_text, "
        "shell, MCP, hosted tools, compaction)",
        "openai/types/responses/response_stream_event.py",
        _type_in(OPENAI_ONLY_EVENTS),
    ),
    Difference(
        _response("text.format.description"),
        "a `json_schema` text format echoed without `description`: the spec requires the "
        "key (nullable), OpenAI's config leaves it optional",
        "openai/types/responses/response_format_text_json_schema_config.py",
        _absent,
    ),
    Difference(
        _response("text.format.schema"),
        "a `json_schema` text format's `schema`: the spec's model types it as null (its "
        "generator's reading of an open JSON Schema), OpenAI's is the JSON Schema object",
        "openai/types/responses/response_format_text_json_schema_config.py",
        lambda node, _root: isinstance(node, dict),
    ),
    Difference(
        ("logprobs[*].bytes",),
        "a text delta or done event's token logprobs without `bytes`: OpenAI's event "
        "logprobs carry `token`, `logprob` and `top_logprobs` only (an output_text part's "
        "logprobs, which the spec and OpenAI agree on, carry `bytes`)",
        "openai/types/responses/response_text_delta_event.py",
        _absent,
    ),
    Difference(
        ("error",),
        "the flat `error` event: OpenAI's has `code`, `message` and `param` at the top "
        "level, the spec's nests them in `error`",
        "openai/types/responses/response_error_event.py",
        lambda node, root: node is None and isinstance(root, dict) and "message" in root,
    ),
]


def _event_models() -> dict[str, type[BaseModel]]:
    """Every streaming event model of the spec, by the `type` it carries."""
    models = {}
    for name, model in vars(spec).items():
        if not (name.endswith("StreamingEvent") and isinstance(model, type)):
            continue
        kind = model.model_fields["type"].annotation
        if isinstance(kind, type) and issubclass(kind, Enum):
            for member in kind:
                models[member.value] = model
    return models


EVENT_MODELS = _event_models()
MODELS: dict[str, type[BaseModel]] = {
    "response": spec.ResponseResource,
    "socket_error": spec.WebSocketErrorEvent,
    "compaction": spec.CompactResource,
}


@dataclass
class Complaint:
    path: str
    pattern: str
    message: str


def _locate(loc: tuple, root: Any, missing: bool) -> tuple[list[Any], list[tuple[int, str]]]:
    """Splits a pydantic location into the document's keys and indices, and the union
    members it went through (as (position in the keys, member name))."""
    keys: list[Any] = []
    members: list[tuple[int, str]] = []
    node = root
    for n, part in enumerate(loc):
        last = n == len(loc) - 1
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            keys.append(part)
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and (
            part in node or last and missing
        ):
            keys.append(part)
            node = node.get(part)
        else:
            members.append((len(keys), str(part)))
    return keys, members


def _path(keys: list[Any], wildcard: bool = False) -> str:
    text = ""
    for key in keys:
        if isinstance(key, int):
            text += "[*]" if wildcard else f"[{key}]"
        else:
            text += f".{key}" if text else str(key)
    return text


def _mismatched_type(error: dict, rest: list[Any]) -> bool:
    """The error, at `rest` under a union member, says the node's `type` is another
    member's kind."""
    return rest == ["type"] and error["type"] in ("literal_error", "enum")


def _under(entry: tuple, prefix: tuple, before: tuple, at: int) -> bool:
    """The located error went through the union at `prefix`, after the members `before`."""
    _e, keys, members = entry
    return (
        tuple(keys[:at]) == prefix
        and len(members) > len(before)
        and tuple(members[: len(before)]) == before
        and members[len(before)][0] == at
    )


def complaints(error: ValidationError, root: Any) -> list[Complaint]:
    """The complaints of a validation, pruned of the union members a node is not: where
    the spec allows several kinds, only the member whose `type` the node has speaks, and
    a node of no kind the union has gets one complaint saying so."""
    located = []
    for e in error.errors():
        keys, members = _locate(e["loc"], root, e["type"] == "missing")
        located.append((e, keys, members))

    # Union points: (the keys up to the union, the members chosen before it).
    changed = True
    while changed:
        changed = False
        points: dict[tuple, set[str]] = {}
        for e, keys, members in located:
            for i, (at, name) in enumerate(members):
                points.setdefault((tuple(keys[:at]), tuple(members[:i]), at), set()).add(name)
        for (prefix, before, at), names in sorted(points.items(), key=lambda p: p[0][2]):
            if len(names) < 2:
                continue
            inside = [entry for entry in located if _under(entry, prefix, before, at)]
            mismatched = {
                members[len(before)][1]
                for e, keys, members in inside
                if _mismatched_type(e, keys[at:])
            }
            matching = names - mismatched
            if matching:
                drop = {id(entry) for entry in inside if entry[2][len(before)][1] not in matching}
                if not drop:
                    continue
                located = [entry for entry in located if id(entry) not in drop]
            else:
                node = _walk(root, _path(list(prefix)))
                kind = node.get("type") if isinstance(node, dict) else node
                expected = sorted(
                    {
                        e["ctx"]["expected"]
                        for e, keys, members in inside
                        if _mismatched_type(e, keys[at:]) and "expected" in e.get("ctx", {})
                    }
                )
                summary = {
                    "type": "union_kind",
                    "msg": f"no kind the spec allows here has type {kind!r} "
                    f"(it allows {', '.join(expected)})",
                }
                gone = {id(entry) for entry in inside}
                located = [entry for entry in located if id(entry) not in gone]
                located.append((summary, list(prefix), list(before)))
            changed = True
            break

    found = []
    seen = set()
    for e, keys, _members in located:
        path = _path(keys)
        if (path, e["msg"]) in seen:
            continue
        seen.add((path, e["msg"]))
        found.append(Complaint(path, _path(keys, wildcard=True), e["msg"]))
    return found


def excused_by(complaint: Complaint, root: Any) -> Difference | None:
    for difference in DIFFERENCES:
        for head in difference.paths:
            covered = (
                not head
                or complaint.pattern == head
                or complaint.pattern.startswith(head + ".")
                or complaint.pattern.startswith(head + "[")
            )
            # The node at the difference's path, with the complaint's own indices.
            if covered and difference.when(_walk(root, _concrete(complaint.path, head)), root):
                return difference
    return None


def _concrete(path: str, pattern: str) -> str:
    """The prefix of `path` that `pattern` (with `[*]`) covers."""
    if not pattern:
        return ""
    out, p, q = "", 0, 0
    while q < len(pattern):
        if pattern.startswith("[*]", q):
            end = path.index("]", p) + 1
            out += path[p:end]
            p, q = end, q + 3
        else:
            out += path[p]
            p, q = p + 1, q + 1
    return out


def _walk(root: Any, path: str) -> Any:
    """The node at `path` (`a.b[2].c`), or None."""
    node = root
    for part in path.replace("[", ".[").split("."):
        if not part:
            continue
        if part.startswith("["):
            index = int(part[1:-1])
            node = node[index] if isinstance(node, list) and index < len(node) else None
        else:
            node = node.get(part) if isinstance(node, dict) else None
    return node


def validate(model: str, value: Any) -> list[Complaint]:
    if model == "event":
        kind = value.get("type") if isinstance(value, dict) else None
        schema = EVENT_MODELS.get(kind)
        if schema is None:
            return [Complaint("", "", f"the spec has no stream event of type {kind!r}")]
    else:
        schema = MODELS[model]
    try:
        schema.model_validate(value)
    except ValidationError as error:
        return complaints(error, value)
    return []


def main() -> int:
    if openresponses_types.__spec_version__ != SPEC_VERSION:
        print(
            f"openresponses-types models spec {openresponses_types.__spec_version__}, "
            f"not {SPEC_VERSION}: install tests/requirements.txt",
            file=sys.stderr,
        )
        return 2
    checked: dict[str, int] = {}
    failures = []
    excused: dict[str, int] = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        document = json.loads(line)
        model, value = document["model"], document["value"]
        checked[model] = checked.get(model, 0) + 1
        for complaint in validate(model, value):
            difference = excused_by(complaint, value)
            if difference is None:
                failures.append(
                    {
                        "label": document["label"],
                        "path": complaint.path or "(the whole document)",
                        "complaint": complaint.message,
                    }
                )
            else:
                key = f"{difference.reason} ({difference.sdk})"
                excused[key] = excused.get(key, 0) + 1
    json.dump(
        {
            "spec_version": openresponses_types.__spec_version__,
            "checked": checked,
            "failures": failures,
            "excused": excused,
        },
        sys.stdout,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
