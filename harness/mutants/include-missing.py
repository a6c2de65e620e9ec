# loopcheck-mutant
# defect: does not ask for reasoning.encrypted_content in stateless mode
# caught-by: state/include-encrypted
# cases: reasoning/01-encrypted-retention
# supports: stateless

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402


_initial_config = loop.initial_config


def initial_config(task):
    config = _initial_config(task)
    config.pop("include", None)
    return config


loop.initial_config = initial_config

loop.main()
