# loopcheck-equivalent
# form: never polls a background response: serves a webhook receiver on 127.0.0.1, registers it, verifies each event with the SDK's `client.webhooks.unwrap` (rejecting the rest with 400), and retrieves the response once its event has come, as OpenAI's webhooks guide does
# cases: background/*
# supports: previous_response_id,background,webhook

import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

# Seconds to wait for a response's event before giving up on it.
EVENT_TIMEOUT = 15

_run_case = loop.run_case
# Verified events by the response they name; the receiver thread fills it.
ended = {}
arrived = threading.Condition()
receiver = {}


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        try:
            # The raw bytes and headers: the signature covers the body as sent.
            event = receiver["client"].webhooks.unwrap(
                body, dict(self.headers.items()), secret=receiver["secret"]
            )
        except openai.InvalidWebhookSignatureError as err:
            loop.log(f"webhook rejected: {err}")
            self.send_response(400)
            self.end_headers()
            return
        loop.log(f"webhook {event.type} for {event.data.id}")
        with arrived:
            ended[event.data.id] = event
            arrived.notify_all()
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):  # stdout is reserved for the result line
        pass


def listen(tools_url):
    """Serves the receiver (once per process) and registers it with this case's server;
    the signing secret comes with the answer."""
    if "url" not in receiver:
        server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        receiver["url"] = f"http://127.0.0.1:{server.server_address[1]}/webhook"
    status, endpoint = loop.post_json(f"{tools_url}/webhooks", {"url": receiver["url"]})
    if status != 200:
        raise loop.Stop("unsupported", f"webhook registration answered {status}: {endpoint}")
    receiver.update(client=loop.make_client(), secret=endpoint["signing_secret"])


def run_case(task):
    if task.get("background", False):
        try:
            listen(os.environ["LOOPCHECK_TOOLS_URL"])
        except loop.Stop as stop:
            return {"status": "failed", "reason": stop.reason, "detail": stop.detail}
    return _run_case(task)


def poll(client, response):
    """Waits for the response's verified event, then retrieves it once."""
    if response.status not in ("queued", "in_progress"):
        return response
    with arrived:
        if not arrived.wait_for(lambda: response.id in ended, timeout=EVENT_TIMEOUT):
            raise loop.Stop("timeout", f"no webhook event for {response.id}")
    return loop.validated(client.responses.with_raw_response.retrieve(response.id).text)


loop.run_case = run_case
loop.poll = poll

loop.main()
