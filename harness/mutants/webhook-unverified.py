# loopcheck-mutant
# defect: takes the first webhook event that arrives as its response's end, without verifying its signature, and retrieves the response it names
# caught-by: background/webhook-verified
# cases: background/01-polling
# supports: previous_response_id,background,webhook

import json
import os
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import loop  # noqa: E402

_run_case = loop.run_case
events = queue.Queue()


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        events.put(json.loads(body))  # no client.webhooks.unwrap: any event is believed
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def run_case(task):
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/webhook"
    loop.post_json(f"{os.environ['LOOPCHECK_TOOLS_URL']}/webhooks", {"url": url})
    return _run_case(task)


def poll(client, response):
    event = events.get(timeout=15)
    return loop.validated(client.responses.with_raw_response.retrieve(event["data"]["id"]).text)


loop.run_case = run_case
loop.poll = poll

loop.main()
