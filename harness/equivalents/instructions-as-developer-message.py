# loopcheck-equivalent
# form: sends no instructions parameter; every request starts its input with a developer message whose text parts hold the task's instructions (as the AI SDK does), stateless or chained
# cases: state/01-instructions-every-request, authz/04-injected-instructions, stream/04-error-event-flat
# supports: previous_response_id,stateless,stream,approvals

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config
_create = loop.create


def initial_config(task):
    config = dict(_initial_config(task))
    instructions = config.pop("instructions", None)
    if instructions is not None:
        config["developer"] = instructions
    return config


def create(client, kwargs, stream):
    kwargs = dict(kwargs)
    instructions = kwargs.pop("developer", None)
    if instructions is not None:
        items = kwargs["input"]
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items)
        developer = {"role": "developer", "content": [{"type": "input_text", "text": instructions}]}
        kwargs["input"] = [developer] + [i for i in items if i != developer]
    return _create(client, kwargs, stream)


loop.initial_config = initial_config
loop.create = create

loop.main()
