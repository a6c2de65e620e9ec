"""The support loop with one seeded defect: it answers each call under the call's item id
(`fc_...`) instead of its call_id. loopcheck must fail it and say why. Not collected by
default (its name does not start with `test_`); run it by naming the file.
"""

import pytest
import support_loop
from test_support_loop import run_session


def answer_by_item_id(call, registry, execute):
    return {"type": "function_call_output", "call_id": call.id,
            "output": support_loop.run_call(call, registry, execute)}


@pytest.mark.loopcheck(cases=["correlation/02-call-id-distinct"], supports=["previous_response_id"])
def test_loop_answering_by_item_id(loopcheck_session, monkeypatch):
    monkeypatch.setattr(support_loop, "answer", answer_by_item_id)
    loopcheck_session.assert_conforms(run_session(loopcheck_session))
