# loopcheck-mutant
# defect: raises on a backend 403 (raise_for_status style), ending the whole loop instead of answering the call
# caught-by: authz/denial-relayed
# cases: authz/01-cross-tenant-denied
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_output_for = loop.Tools.output_for


def output_for(status, answer):
    if status >= 400:
        raise RuntimeError(f"tool backend answered HTTP {status}: {answer}")
    return _output_for(status, answer)


loop.Tools.output_for = staticmethod(output_for)

loop.main()
