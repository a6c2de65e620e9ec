# loopcheck-mutant
# defect: carries the instructions as a system message of its own wording instead of the task's
# caught-by: state/config-resent
# cases: state/01-instructions-every-request
# supports: previous_response_id,stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config
_run = loop.run


def initial_config(task):
    config = dict(_initial_config(task))
    config.pop("instructions", None)
    return config


def run(task, client, tools):
    system = {"role": "system", "content": "You are a helpful travel assistant."}
    first = task["input"]
    first = [{"role": "user", "content": first}] if isinstance(first, str) else list(first)
    return _run({**task, "input": [system] + first}, client, tools)


loop.initial_config = initial_config
loop.run = run

loop.main()
