"""A local fake model API on 127.0.0.1 for the real SDK clients (``openai.OpenAI``,
``anthropic.Anthropic``) to talk to.

Why a real HTTP server: the providers under test must be driven by the SDKs' own clients, with
their own request encoding and response parsing; only the model is fake. Each POST body is
recorded (parsed JSON) and answered with the next scripted JSON body.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeModelServer", "fake_model_server"]


class FakeModelServer:
    """The scripted answers and the recorded requests (path and JSON body)."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.url = ""

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [body for _, body in self.requests]


@contextmanager
def fake_model_server(answers: list[dict[str, Any]]) -> Iterator[FakeModelServer]:
    """Serve ``answers`` in order, one per POST, on a free port of 127.0.0.1."""
    fake = FakeModelServer(answers)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            fake.requests.append((self.path, json.loads(self.rfile.read(length) or b"{}")))
            if fake.answers:
                status, body = 200, fake.answers.pop(0)
            else:
                status, body = 500, {"error": {"message": "no scripted answer left"}}
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
