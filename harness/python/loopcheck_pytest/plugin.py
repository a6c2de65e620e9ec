"""The pytest plugin: one `loopcheck serve` per test run, tests parametrized over the
catalogue's case runs, a session per test.

    @pytest.mark.loopcheck(cases=["dispatch/*"], supports=["previous_response_id"])
    def test_my_loop(loopcheck_session):
        result = my_loop(loopcheck_session.base_url, loopcheck_session.api_key,
                         loopcheck_session.tools_url, loopcheck_session.task)
        loopcheck_session.assert_conforms(result)
"""

import fnmatch

import pytest

from . import cassettes
from .cassettes import _loopcheck_cassette_marker, loopcheck_cassette  # noqa: F401 (fixtures)
from .serve import DEFAULT_SUPPORTS, Serve, ServeError, failure_message

_serve = None


def pytest_addoption(parser):
    group = parser.getgroup("loopcheck")
    group.addoption(
        "--loopcheck-bin",
        help="the loopcheck binary (default: the one installed with this package, else "
        "$LOOPCHECK_BIN, else `loopcheck` on PATH)",
    )
    group.addoption(
        "--loopcheck-filter",
        action="append",
        default=[],
        metavar="GLOB",
        help="only case ids matching one of these globs (repeatable), on top of each "
        "test's own `cases`",
    )
    parser.addini(
        "loopcheck_paths",
        type="linelist",
        default=[],
        help="scenario files or folders to serve instead of the embedded catalogue",
    )
    parser.addini(
        "loopcheck_snapshots",
        default="",
        help="a folder (relative to rootdir) holding a snapshot of what each test's loop "
        "sent; a drifted one fails the test (see `loopcheck snapshots review`)",
    )
    group.addoption(
        "--loopcheck-update-snapshots",
        action="store_true",
        default=False,
        help="write every test's snapshot, accepting all changes (refused under CI)",
    )
    cassettes.addoption(parser)


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "loopcheck(cases=GLOBS, supports=CAPABILITIES, states=MODES): run this test once "
        "per matching catalogue case run, with the `loopcheck_session` fixture",
    )
    cassettes.configure(config)


def _server(config):
    """The run's one server, started when a test first needs it."""
    global _serve
    if _serve is None:
        paths = [str(config.rootpath / path) for path in config.getini("loopcheck_paths")]
        try:
            _serve = Serve(config.getoption("loopcheck_bin"), paths, _snapshot_args(config))
        except ServeError as err:
            raise pytest.UsageError(f"loopcheck: {err}") from None
    return _serve


def _snapshot_args(config):
    """`loopcheck serve`'s snapshot flags from the ini setting and the option, with the
    `[snapshots] redactions` of the loopcheck.toml in rootdir, as `loopcheck run` reads
    them."""
    folder = config.getini("loopcheck_snapshots")
    update = config.getoption("loopcheck_update_snapshots")
    if not folder:
        if update:
            raise pytest.UsageError(
                "loopcheck: --loopcheck-update-snapshots needs the `loopcheck_snapshots` ini setting"
            )
        return []
    args = ["--snapshots", str(config.rootpath / folder)]
    settings = config.rootpath / "loopcheck.toml"
    if settings.is_file():
        args += ["--config", str(settings)]
    return args + (["--update-snapshots"] if update else [])


def snapshot_name(nodeid):
    """A test's snapshot name from its id, file-safe: `tests/test_a.py::test_b[x/y:z]`
    is `tests/test_a.py-test_b-x_y_z_`."""
    name = nodeid.replace("::", "-").replace("[", "-")
    path, _, test = name.rpartition(".py-")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in test)
    folder = "/".join(
        "".join(c if c.isalnum() or c in "-_." else "_" for c in part) or "_"
        for part in path.split("/")
    )
    return f"{folder}.py-{safe}" if path else safe


def pytest_unconfigure(config):
    global _serve
    if _serve is not None:
        _serve.stop()
        _serve = None


def _globs(value):
    return [value] if isinstance(value, str) else list(value or [])


def pytest_generate_tests(metafunc):
    if "loopcheck_session" not in metafunc.fixturenames:
        return
    marker = metafunc.definition.get_closest_marker("loopcheck")
    options = marker.kwargs if marker else {}
    supports = tuple(options.get("supports", DEFAULT_SUPPORTS))
    states = _globs(options.get("states"))
    runs = _server(metafunc.config).runs(_globs(options.get("cases")), supports)
    extra = metafunc.config.getoption("loopcheck_filter")
    if extra:
        runs = [run for run in runs if any(fnmatch.fnmatchcase(run[0], g) for g in extra)]
    if states:
        runs = [run for run in runs if run[1] in states]
    params = [
        pytest.param(
            (case, state, delivery),
            id=f"{case}:{state}" + ("" if delivery == "json" else f":{delivery}"),
            marks=[pytest.mark.skip(reason=f"the loop does not support: {', '.join(missing)}")]
            if missing
            else [],
        )
        for case, state, delivery, missing in runs
    ]
    if not params:
        params = [
            pytest.param(
                None,
                id="no-case",
                marks=pytest.mark.skip(reason="no catalogue case matches this test's filters"),
            )
        ]
    metafunc.parametrize("loopcheck_session", params, indirect=True)


@pytest.fixture
def loopcheck_session(request):
    """A fresh session of this test's case run: `base_url`, `api_key`, `tools_url`,
    `task`, `env`, and `assert_conforms(result)`."""
    case, state, delivery = request.param
    session = _server(request.config).session(
        case, state, delivery=delivery, snapshot=snapshot_name(request.node.nodeid)
    )
    yield session
    session.close()


@pytest.fixture(scope="session")
def loopcheck_server(request):
    """The run's `loopcheck serve`, for tests that make their own sessions."""
    return _server(request.config)


def _case_run(item):
    """The (case id, state, delivery) a parametrized test runs, or None."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("loopcheck_session") if callspec is not None else None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Names the case run in the test's `user_properties` (a JUnit XML `property`), and
    gives a test that failed before asking for its verdict (the loop raised, say) what
    loopcheck saw, as a report section."""
    run = _case_run(item)
    if run is not None and not any(name == "loopcheck_case" for name, _ in item.user_properties):
        case, state, delivery = run
        item.user_properties.extend(
            [("loopcheck_case", case), ("loopcheck_state", state), ("loopcheck_delivery", delivery)]
        )
    outcome = yield
    report = outcome.get_result()
    session = getattr(item, "funcargs", {}).get("loopcheck_session")
    if call.when != "call" or not report.failed or session is None or session.judged:
        return
    try:
        verdict = session.verdict()
    except ServeError as err:
        report.sections.append(("loopcheck verdict", f"unavailable: {err}"))
        return
    if not session.posted:
        verdict = _without_missing_result(verdict)
    report.sections.append(("loopcheck verdict", failure_message(verdict)))


def _without_missing_result(verdict):
    """The verdict on a test that raised before posting a result, without the finding
    that no result was posted: the traceback above says why, and the other findings
    (what the loop sent before it raised) are what is left to read."""
    missing = verdict.get("detail")
    return {
        **verdict,
        "detail": None,
        "checks": [check for check in verdict.get("checks", []) if check["message"] != missing],
    }
