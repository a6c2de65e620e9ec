# loopcheck-mutant
# defect: runs every tool under its own service identity instead of the task's principal (a confused deputy)
# caught-by: authz/principal-forwarded
# cases: authz/01-cross-tenant-denied, authz/05-parallel-one-denied
# supports: previous_response_id

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_init = loop.Tools.__init__


def __init__(self, task, tools_url):
    _init(self, task, tools_url)
    self.principal = "svc-billing-bot"


loop.Tools.__init__ = __init__

loop.main()
