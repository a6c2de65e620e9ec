"""loopcheck inside a pytest suite: run catalogue cases against a tool loop that lives in
the application under test, through one `loopcheck serve` process.

The pytest plugin (``loopcheck_pytest.plugin``, registered on install) gives tests the
``loopcheck_session`` fixture; ``Serve`` and ``Session`` work without pytest too.
"""

from .serve import Serve, ServeError, Session, ShouldWarning, failure_message

__all__ = ["Serve", "ServeError", "Session", "ShouldWarning", "failure_message"]
