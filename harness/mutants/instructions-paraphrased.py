# loopcheck-mutant
# defect: carries the instructions as a system message of its own wording instead of the task's
# caught-by: state/config-resent
# cases: state/01-instructions-every-request
# supports: previous_response_id,stateless

import importlib.util
import os

# The equivalent form that sends the task's instructions as a system message, with other
# words in that message.
here = os.path.dirname(os.path.abspath(__file__))
path = os.path.join(here, "..", "equivalents", "instructions-as-system-message.py")
spec = importlib.util.spec_from_file_location("as_system_message", path)
as_system_message = importlib.util.module_from_spec(spec)
spec.loader.exec_module(as_system_message)

as_system_message.system_text = lambda task: "You are a helpful travel assistant."

as_system_message.loop.main()
