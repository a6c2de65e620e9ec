# loopcheck-mutant
# defect: answers a local shell call with its call_id in a call_id field, as other kinds are answered, instead of in the output's id
# caught-by: call-id/answered
# cases: shell/03-local-shell-call
# supports: previous_response_id, stateless, shell

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

del loop.ANSWER_REF["local_shell_call_output"]

loop.main()
