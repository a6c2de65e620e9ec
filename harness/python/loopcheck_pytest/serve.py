"""A `loopcheck serve` process and its sessions, over plain HTTP (standard library only)."""

import fnmatch
import importlib.metadata
import json
import os
import pathlib
import shutil
import subprocess
import threading
import urllib.error
import urllib.request
import warnings

#: The capabilities of a loop that declares none (the contract's default).
DEFAULT_SUPPORTS = ("previous_response_id", "stateless")

#: How long `loopcheck serve` may take to print its URL.
START_TIMEOUT_S = 30


class ServeError(RuntimeError):
    """`loopcheck serve` could not be started or answered with an error."""


class ShouldWarning(UserWarning):
    """The loop conforms, but a SHOULD check failed."""


def find_binary(explicit=None):
    """The loopcheck binary: `explicit`, else the one installed with this package (the
    `loopcheck` wheel), else $LOOPCHECK_BIN, else `loopcheck` on PATH."""
    candidates = (
        (explicit, "given"),
        (packaged_binary(), None),
        (os.environ.get("LOOPCHECK_BIN"), "given"),
    )
    for candidate, given in candidates:
        if candidate:
            if given and not os.path.isfile(candidate):
                raise ServeError(f"no loopcheck binary at {candidate!r}")
            return candidate
    found = shutil.which("loopcheck")
    if found is None:
        raise ServeError(
            "no loopcheck binary: install it (pip install loopcheck), or name it with "
            "--loopcheck-bin or the LOOPCHECK_BIN environment variable"
        )
    return found


def packaged_binary():
    """The `loopcheck` binary the wheel installed beside this module, or None when this
    module is not the installed `loopcheck` distribution's (a source checkout, say).

    The distribution's file list is the authority: it names both this module and the
    binary, so a copy of the plugin on sys.path never picks up another install's binary.
    """
    try:
        dist = importlib.metadata.distribution("loopcheck")
    except importlib.metadata.PackageNotFoundError:
        return None
    files = dist.files or []
    here = pathlib.Path(__file__).resolve()
    located = [(file, pathlib.Path(dist.locate_file(file)).resolve()) for file in files]
    if not any(path == here for _, path in located):
        return None
    name = "loopcheck.exe" if os.name == "nt" else "loopcheck"
    for file, path in located:
        if file.name == name and path.parent.name in ("bin", "Scripts") and path.is_file():
            return str(path)
    return None


def request(method, url, body=None, timeout=30, token=None):
    """Sends JSON, returns (status, parsed JSON answer). A session's control routes need
    its `token`."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("content-type", "application/json")
    if token is not None:
        req.add_header("authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            status, text = answer.status, answer.read()
    except urllib.error.HTTPError as err:
        status, text = err.code, err.read()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text.decode(errors="replace")


def error_text(answer):
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        return answer["error"].get("message", str(answer))
    return str(answer)


class Serve:
    """One `loopcheck serve` process on 127.0.0.1; `stop()` ends it."""

    def __init__(self, binary=None, paths=(), args=()):
        # The server stops when its stdin closes, so it ends with this process however
        # this process ends (SIGKILL included).
        command = [find_binary(binary), "serve", "--stop-on-eof", *map(str, paths), *args]
        self._process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.url = self._read_url(command)
        # Drain both pipes so a chatty server never blocks on a full pipe.
        self._stderr = []
        for stream, sink in ((self._process.stdout, None), (self._process.stderr, self._stderr)):
            threading.Thread(target=_drain, args=(stream, sink), daemon=True).start()

    def _read_url(self, command):
        first = []
        reader = threading.Thread(target=lambda: first.append(self._process.stdout.readline()))
        reader.daemon = True
        reader.start()
        reader.join(START_TIMEOUT_S)
        line = first[0] if first else ""
        for word in line.split():
            if word.startswith("http://127.0.0.1:"):
                return word
        self._process.kill()
        _, stderr = self._process.communicate(timeout=5)
        raise ServeError(
            f"`{' '.join(command)}` did not print its URL"
            + (f" within {START_TIMEOUT_S} s" if not line else f" (it printed {line!r})")
            + (f":\n{stderr.strip()}" if stderr and stderr.strip() else "")
        )

    def stop(self):
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.stop()

    def cases(self):
        """Every case the server holds: [{id, summary, level, area, runs: [{state, requires}]}]."""
        status, answer = request("GET", f"{self.url}/loopcheck/cases")
        if status != 200:
            raise ServeError(f"GET /loopcheck/cases: {status} {error_text(answer)}")
        return answer["cases"]

    def runs(self, filters=(), supports=DEFAULT_SUPPORTS):
        """The case runs whose id matches one of `filters` (globs; none: every case), each
        as (case id, state, delivery, missing capabilities). A loop that does not stream
        gets no streamed run of a case that also runs with JSON responses, and a loop that
        does not declare `replay` no replay run, nor one that does not declare `websocket`
        a run over the socket."""
        selected = []
        for case in self.cases():
            if filters and not any(fnmatch.fnmatchcase(case["id"], f) for f in filters):
                continue
            deliveries = {run.get("delivery", "json") for run in case["runs"]}
            for run in case["runs"]:
                delivery = run.get("delivery", "json")
                if delivery == "stream" and "json" in deliveries and "stream" not in supports:
                    continue
                if run["state"] == "replay" and "replay" not in supports:
                    continue
                if delivery == "websocket" and "websocket" not in supports:
                    continue
                missing = [word for word in run["requires"] if word not in supports]
                selected.append((case["id"], run["state"], delivery, missing))
        return selected

    def session(self, case, state=None, seed=None, delivery=None, snapshot=None):
        """A new session of `case` in `state` (default: the case's first state mode),
        with `delivery` "json", "stream" or "websocket" (default: the case's first
        delivery); with a server started with `--snapshots`, its verdict is held to the
        snapshot named `snapshot` (default: the case run's, as `loopcheck run` names it)."""
        body = {"case": case}
        if snapshot is not None:
            body["snapshot"] = snapshot
        if state is not None:
            body["state"] = state
        if delivery is not None:
            body["delivery"] = delivery
        if seed is not None:
            body["seed"] = seed
        status, answer = request("POST", f"{self.url}/loopcheck/sessions", body)
        if status != 201:
            raise ServeError(f"creating a session of {case}: {status} {error_text(answer)}")
        return Session(answer)


def _drain(stream, sink):
    for line in stream:
        if sink is not None and len(sink) < 200:
            sink.append(line)


class Session:
    """One case run on the server: what the loop needs, and the verdict on what it did."""

    def __init__(self, created):
        self.created = created
        self.id = created["id"]
        self.case = created["case"]
        self.state = created["state"]
        #: The fake Responses API: give it to the OpenAI client as `base_url`.
        self.base_url = created["base_url"]
        self.api_key = created["api_key"]
        #: The fixture tool backend (`POST {tools_url}/call/{name}`, `/approvals`).
        self.tools_url = created["tools_url"]
        #: The task: input, tools with their schemas, max_rounds, principal, ...
        self.task = created["task"]
        #: The environment a controller process would get.
        self.env = created["env"]
        self.requires = created["requires"]
        #: What the session's control routes (result, verdict, delete) need, as
        #: `Authorization: Bearer {token}`.
        self.token = created["token"]
        self._posted = False
        #: True once a verdict was asked for.
        self.judged = False

    @property
    def posted(self):
        """True once the loop's result was posted."""
        return self._posted

    def call_tool(self, name, call_id, arguments, principal=None, approval=None):
        """Runs a call on the fixture backend: (HTTP status, JSON answer). The answer
        is `{"result": ...}` with 200, else `{"error": {"message": ...}}` (an unknown
        tool, a refused approval, a scripted failure)."""
        body = {"call_id": call_id, "arguments": arguments}
        if principal is not None:
            body["principal"] = principal
        if approval is not None:
            body["approval"] = approval
        return request("POST", f"{self.tools_url}/call/{name}", body)

    def ask_approval(self, name, call_id, arguments, principal=None):
        """Asks the fixture approver about a call: its JSON answer."""
        body = {"call_id": call_id, "name": name, "arguments": arguments}
        if principal is not None:
            body["principal"] = principal
        return request("POST", f"{self.tools_url}/approvals", body)[1]

    def post_result(self, result):
        """Hands the loop's result object to the session (once)."""
        status, answer = request("POST", self.created["result_url"], result, token=self.token)
        self._posted = True
        # 422 keeps the bad result as the reason there is none; the verdict says why.
        if status not in (200, 422):
            raise ServeError(f"posting the result of {self.case}: {status} {error_text(answer)}")

    def verdict(self, result=None):
        """The oracle's verdict (the JSON report's case shape), posting `result` first if
        given."""
        if result is not None and not self._posted:
            self.post_result(result)
        status, answer = request("GET", self.created["verdict_url"], token=self.token)
        self.judged = True
        if status != 200:
            raise ServeError(f"the verdict on {self.case}: {status} {error_text(answer)}")
        return answer

    def assert_conforms(self, result=None):
        """Raises AssertionError naming every failing check unless the verdict passes, as
        `loopcheck run` judges it: SHOULD checks that failed (`non-strict`) only warn."""
        __tracebackhide__ = True  # the failure is the loop's, not this helper's
        verdict = self.verdict(result)
        if verdict["verdict"] == "non-strict":
            warnings.warn(ShouldWarning(failure_message(verdict)), stacklevel=2)
        elif verdict["verdict"] != "pass":
            raise AssertionError(failure_message(verdict))
        return verdict

    def close(self):
        request("DELETE", self.created["url"], token=self.token)


def failure_message(verdict):
    """A verdict as a test failure: the case, the verdict, each failing check and why."""
    lines = [f"loopcheck {verdict['id']} [{verdict['state']}]: {verdict['verdict']}"]
    if verdict.get("detail"):
        lines.append(f"  {verdict['detail']}")
    if verdict.get("verdict") == "drift" and verdict.get("snapshot_message"):
        lines.extend(f"  {line}" for line in verdict["snapshot_message"].splitlines())
        if "pending as" in verdict["snapshot_message"]:
            lines.append("  (or accept every change: rerun with --loopcheck-update-snapshots)")
    for check in verdict.get("checks", []):
        if check["verdict"] in ("fail", "non-strict"):
            lines.append(f"  {check['verdict']} {check['id']} ({check['level']}): {check['message']}")
            if check.get("diff"):
                lines.append(f"      expected: {check['diff']['expected']}")
                lines.append(f"      actual:   {check['diff']['actual']}")
    return "\n".join(lines)
