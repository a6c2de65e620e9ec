# loopcheck-equivalent
# form: replays the whole history on every request with storage left on (no `store: false`, no `include`, no previous_response_id), reasoning items by their stored id without encrypted_content, the loop the official samples write with `input += response.output`
# cases: state/*, correlation/*, reasoning/*, program/05-stateless-replay, terminal/01-message-beside-calls
# supports: replay,programmatic

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_initial_config = loop.initial_config
_replay = loop.replay
_run = loop.run


def initial_config(task):
    """What a stateless loop sends, minus `store: false` and `include`: nothing asks the
    API to keep the responses away, so they are stored."""
    return _initial_config({**task, "state": "replay"})


def replay(item):
    """A stored reasoning item is found by its id: its encrypted_content is not sent back."""
    data = _replay(item)
    if data["type"] == "reasoning":
        data.pop("encrypted_content", None)
    return data


def run(task, client, tools):
    """The stateless loop (every item replayed, in order), storage left on."""
    if task["state"] != "replay":
        raise loop.Stop("unsupported", f"state mode {task['state']!r} is not supported")
    return _run({**task, "state": "stateless"}, client, tools)


loop.initial_config = initial_config
loop.replay = replay
loop.run = run

loop.main()
