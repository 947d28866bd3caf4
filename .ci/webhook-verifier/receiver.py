"""A webhook receiver that checks every delivery with the PyPI package `standardwebhooks`.

The service's own code signs the messages; this verifier was written by others to the Standard
Webhooks specification, so a delivery it accepts is one any conforming receiver accepts.

    python receiver.py PORT      # 0 picks a free port; the port is the first line on stdout

Control routes (JSON bodies), for the test that drives it:
    POST /secrets   {"secrets": ["whsec_...", ...]}   the secrets each delivery is verified with,
                                                     each separately (a record has one result per
                                                     secret, in this order)
    POST /fail-next {"count": n, "type": "..."?}      the next n deliveries (of that event type,
                                                     when given) are answered 500
    GET  /results                                    {"deliveries": [record, ...]} in arrival order
Deliveries:
    POST /hook/<anything>   recorded; 204 when at least one secret verifies, else 400 (or the
                            scripted 500, which is recorded too)
"""

import hashlib
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

FORCED_FAILURE = b"forced failure"

lock = threading.Lock()
secrets = []
fail_next = {"count": 0, "type": None}
records = []


def verify(secret, body, headers):
    """Whether `standardwebhooks` accepts the delivery with `secret`, and why not."""
    try:
        Webhook(secret).verify(body, headers)
        return True, None
    except WebhookVerificationError as error:
        return False, str(error)
    except Exception as error:  # a malformed header makes the package raise other errors too
        return False, f"{type(error).__name__}: {error}"


def verify_each_signature(secret, body, headers):
    """For each signature of `webhook-signature`, in order: whether it alone verifies with
    `secret` (shows which secret signed which position after a rotation)."""
    results = []
    for signature in headers.get("webhook-signature", "").split(" "):
        alone = dict(headers, **{"webhook-signature": signature})
        results.append(verify(secret, body, alone)[0])
    return results


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        sys.stderr.write("webhook receiver: " + (format % args) + "\n")

    def log_request(self, code="-", size="-"):
        # The test polls /results; its deliveries are logged with their outcome in `deliver`.
        pass

    def answer(self, status, body=b"", content_type="text/plain"):
        self.send_response(status)
        if status != 204:
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
        self.end_headers()
        if status != 204:
            self.wfile.write(body)

    def read_body(self):
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length)

    def do_GET(self):
        if self.path == "/results":
            with lock:
                body = json.dumps({"deliveries": records}).encode()
            self.answer(200, body, "application/json")
        else:
            self.answer(404, b"not found")

    def do_POST(self):
        body = self.read_body()
        if self.path == "/secrets":
            with lock:
                secrets[:] = json.loads(body)["secrets"]
            self.answer(204)
        elif self.path == "/fail-next":
            control = json.loads(body)
            with lock:
                fail_next["count"] = int(control["count"])
                fail_next["type"] = control.get("type")
            self.answer(204)
        elif self.path.startswith("/hook/"):
            self.deliver(body)
        else:
            self.answer(404, b"not found")

    def deliver(self, body):
        # Header names as the package looks them up (it lowercases them too).
        headers = {name.lower(): value for name, value in self.headers.items()}
        try:
            event_type = json.loads(body).get("type")
        except ValueError:
            event_type = None
        with lock:
            configured = list(secrets)
        results = [verify(secret, body, headers) for secret in configured]
        record = {
            "path": self.path,
            "received_at": time.time(),
            "webhook_id": headers.get("webhook-id"),
            "timestamp": headers.get("webhook-timestamp"),
            "signature": headers.get("webhook-signature"),
            "content_type": headers.get("content-type"),
            "user_agent": headers.get("user-agent"),
            "type": event_type,
            "body": body.decode("utf-8", "replace"),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "verified": [ok for ok, _ in results],
            "errors": [error for _, error in results],
            "verified_by_signature": [
                verify_each_signature(secret, body, headers) for secret in configured
            ],
        }
        with lock:
            forced = fail_next["count"] > 0 and fail_next["type"] in (None, event_type)
            if forced:
                fail_next["count"] -= 1
                status = 500
            else:
                status = 204 if any(record["verified"]) else 400
            record["answered"] = status
            records.append(record)
        self.log_message(
            "%s %s %s verified=%s -> %d",
            record["webhook_id"], event_type, record["timestamp"], record["verified"], status,
        )
        if status == 500:
            self.answer(500, FORCED_FAILURE)
        elif status == 400:
            self.answer(400, json.dumps(record["errors"]).encode(), "application/json")
        else:
            self.answer(204)


def main():
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
