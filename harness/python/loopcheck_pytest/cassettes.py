"""A cassette per test: each test that asks for it gets its own `loopcheck record
--listen` on its own file, recording the model traffic of the code under test on the
first run and replaying it on the next ones, matched by request (not by order), so tests
can run in any order and in parallel (pytest-xdist).

    @pytest.mark.loopcheck_cassette
    def test_refund(loopcheck_cassette):
        client = openai.OpenAI()          # OPENAI_BASE_URL points at the cassette
        ...

The cassette is `cassettes/<module path>/<test name>.yaml` under the rootdir (the folder
is the `loopcheck_cassettes` ini setting; the marker's `path` names another file). The
record mode is `--loopcheck-record-mode` (`once` by default: record when the file is
missing, replay when it is there; `none` when CI is set); `--loopcheck-upstream` is where
recordings go (default `$OPENAI_BASE_URL` as pytest started, else the OpenAI API).
"""

import json
import os
import pathlib
import re
import subprocess
import threading

import pytest

from .serve import ServeError, find_binary

#: The record modes, as `loopcheck record --mode` takes them.
MODES = ("once", "new", "all", "none")

#: How long `loopcheck record --listen` may take to print its URL, and to finish.
START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 120

DEFAULT_UPSTREAM = "https://api.openai.com/v1"

#: A key for the SDK's client when replaying without one: the cassette takes its own.
REPLAY_KEY = "sk-loopcheck-replay"


def is_ci():
    """`CI` set to anything but empty, `false` or `0`, as loopcheck reads it."""
    return os.environ.get("CI", "") not in ("", "false", "0")


def addoption(parser):
    group = parser.getgroup("loopcheck")
    group.addoption(
        "--loopcheck-record-mode",
        choices=MODES,
        default=None,
        help="how loopcheck_cassette treats each test's cassette: once (record when "
        "missing, replay when present; the default), new (replay what matches, record "
        "the rest), all (record again), none (replay only; the default when CI is set)",
    )
    group.addoption(
        "--loopcheck-upstream",
        default=None,
        metavar="URL",
        help="where recordings go (default: $OPENAI_BASE_URL as pytest started, else "
        f"{DEFAULT_UPSTREAM})",
    )
    parser.addini(
        "loopcheck_cassettes",
        default="cassettes",
        help="the folder, under the rootdir, of the cassette each test records "
        "(default: cassettes)",
    )


def configure(config):
    config.addinivalue_line(
        "markers",
        "loopcheck_cassette(path=None, match_on=None): record this test's model traffic "
        "into its own cassette, and replay it, with the `loopcheck_cassette` fixture",
    )
    # Read before any test changes it: a test's own OPENAI_BASE_URL is the cassette's.
    config._loopcheck_upstream = (
        config.getoption("loopcheck_upstream")
        or os.environ.get("OPENAI_BASE_URL")
        or DEFAULT_UPSTREAM
    )


def record_mode(config):
    """The mode of this run: the option, else `none` under CI, else `once`."""
    return config.getoption("loopcheck_record_mode") or ("none" if is_ci() else "once")


def safe_name(text):
    """A file name's worth of `text`: letters, digits, `.`, `_` and `-`."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "test"


def cassette_path(node, config):
    """`<rootdir>/<loopcheck_cassettes>/<module path>/<test name>.yaml` for a test's node
    id (`tests/test_x.py::TestY::test_z[a-1]` -> `cassettes/tests/test_x/TestY.test_z-a-1.yaml`)."""
    module, _, name = node.nodeid.partition("::")
    module_parts = [safe_name(part) for part in pathlib.PurePosixPath(module).with_suffix("").parts]
    folder = pathlib.Path(config.rootpath, config.getini("loopcheck_cassettes"), *module_parts)
    return folder / f"{safe_name(name.replace('::', '.'))}.yaml"


class CassetteError(RuntimeError):
    """`loopcheck record --listen` did not start, or did not end with an outcome."""


class Cassette:
    """One test's `loopcheck record --listen`: `base_url` while it runs, `stop()` gives
    its outcome (`recorded`, `replayed`, `drift`, `missing`, `path`)."""

    def __init__(self, binary, path, mode, upstream, match_on=None):
        self.path = pathlib.Path(path)
        args = [binary, "record", "--listen", "--out", str(self.path), "--mode", mode,
                "--upstream", upstream]
        if match_on:
            keys = match_on if isinstance(match_on, str) else ",".join(match_on)
            args += ["--match-on", keys]
        self._process = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        self._stderr = []
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()
        first = self._first_line()
        try:
            started = json.loads(first)
            self.base_url = started["base_url"]
        except (ValueError, KeyError, TypeError):
            self._process.kill()
            self._process.wait()
            self._drain.join(5)
            raise CassetteError(self._why("did not start")) from None
        self.replaying = bool(started.get("replaying"))

    def _read_stderr(self):
        for line in self._process.stderr:
            self._stderr.append(line)

    def _first_line(self):
        line = []
        reader = threading.Thread(target=lambda: line.append(self._process.stdout.readline()))
        reader.daemon = True
        reader.start()
        reader.join(START_TIMEOUT_S)
        return line[0] if line else ""

    def _why(self, what):
        text = "".join(self._stderr).strip()
        return f"loopcheck record --listen on {self.path} {what}" + (f":\n{text}" if text else "")

    def stop(self):
        """Closes its stdin and reads the outcome line."""
        # Not communicate(): the drain thread already reads stderr.
        rest = []
        reader = threading.Thread(target=lambda: rest.append(self._process.stdout.read()))
        reader.daemon = True
        reader.start()
        try:
            self._process.stdin.close()
        except OSError:
            pass  # it is gone already: its outcome, if any, is on stdout
        try:
            self._process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        reader.join(5)
        self._drain.join(5)
        out = rest[0] if rest else ""
        for line in reversed(out.splitlines()):
            try:
                outcome = json.loads(line)
            except ValueError:
                continue
            if isinstance(outcome, dict) and "drift" in outcome:
                return outcome
        raise CassetteError(self._why(f"ended with exit {self._process.returncode} and no outcome"))


def failure(outcome):
    """What a test whose replay drifted, or asked what the cassette does not hold, is
    failed with; None when it did neither."""
    lines = []
    if outcome.get("drift"):
        lines.append(f"the requests drifted from {outcome['path']}:")
        lines += [f"  {change}" for change in outcome["drift"]]
    if outcome.get("missing"):
        lines.append(f"requests not in {outcome['path']} (record them with "
                     "--loopcheck-record-mode new, or again with all):")
        lines += [f"  {request}" for request in outcome["missing"]]
    return "\n".join(lines) or None


@pytest.fixture
def loopcheck_cassette(request, monkeypatch):
    """This test's cassette: `OPENAI_BASE_URL` points at it for the test, `base_url`
    says where it is; at the end the test fails if its requests drifted from the
    recording or were not in it."""
    config = request.config
    marker = request.node.get_closest_marker("loopcheck_cassette")
    options = marker.kwargs if marker else {}
    path = options.get("path")
    path = pathlib.Path(config.rootpath, path) if path else cassette_path(request.node, config)
    try:
        binary = find_binary(config.getoption("loopcheck_bin"))
        cassette = Cassette(binary, path, record_mode(config), config._loopcheck_upstream,
                            options.get("match_on"))
    except (ServeError, CassetteError, OSError) as err:
        pytest.fail(str(err), pytrace=False)
    monkeypatch.setenv("OPENAI_BASE_URL", cassette.base_url)
    if cassette.replaying and not os.environ.get("OPENAI_API_KEY"):
        monkeypatch.setenv("OPENAI_API_KEY", REPLAY_KEY)
    yield cassette
    try:
        outcome = cassette.stop()
    except CassetteError as err:
        pytest.fail(str(err), pytrace=False)
    cassette.outcome = outcome
    message = failure(outcome)
    if message:
        pytest.fail(message, pytrace=False)


@pytest.fixture(autouse=True)
def _loopcheck_cassette_marker(request):
    """A test marked `loopcheck_cassette` gets its cassette without naming the fixture."""
    if request.node.get_closest_marker("loopcheck_cassette") is not None:
        request.getfixturevalue("loopcheck_cassette")
