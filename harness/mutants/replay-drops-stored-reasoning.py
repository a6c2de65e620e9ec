# loopcheck-mutant
# defect: replays the history with storage left on but leaves out the reasoning items, trusting the stored responses to supply them, so the model loses its reasoning before each call
# caught-by: reasoning/replayed
# cases: reasoning/01-encrypted-retention
# supports: replay

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_initial_config = loop.initial_config
_run = loop.run


def initial_config(task):
    return _initial_config({**task, "state": "replay"})


def replay_items(response):
    return [loop.replay(item) for item in response.output if item.type != "reasoning"]


def run(task, client, tools):
    if task["state"] != "replay":
        raise loop.Stop("unsupported", f"state mode {task['state']!r} is not supported")
    return _run({**task, "state": "stateless"}, client, tools)


loop.initial_config = initial_config
loop.replay_items = replay_items
loop.run = run

loop.main()
