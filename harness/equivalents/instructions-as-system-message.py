# loopcheck-equivalent
# form: sends no instructions parameter; the task's instructions go as a system message at the head of the first request's input, which previous_response_id and conversations carry on, and at the head of every stateless replay (as LangChain does)
# cases: state/*, correlation/06-three-rounds, stream/06-incomplete
# supports: previous_response_id,stateless,conversation,stream

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


def system_text(task):
    return task["instructions"]


def run(task, client, tools):
    if task.get("instructions") is None:
        return _run(task, client, tools)
    first = task["input"]
    first = [{"role": "user", "content": first}] if isinstance(first, str) else list(first)
    system = {"role": "system", "content": system_text(task)}
    return _run({**task, "input": [system] + first}, client, tools)


loop.initial_config = initial_config
loop.run = run

if __name__ == "__main__":
    loop.main()
