"""The HTTP port an operator's tools read: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

Off unless ``kafkasec.metrics.port`` is set; bound to loopback unless ``kafkasec.metrics.host``
says otherwise (metrics name listeners and APIs, and a probe needs no more than the host's own
network). It runs on a thread of its own with prometheus_client's threaded WSGI server, so that
a scrape of a large registry never holds up the event loop, and a slow scraper holds only its
own thread.

- ``/healthz``: 200 while the process serves HTTP at all (a liveness probe: restart if not);
- ``/readyz``: 200 when every readiness check passes, else 503; the body lists each check and
  its state (a readiness probe: send no traffic until it passes). ``kafkasec serve``'s checks:
  the security state is loaded and followed, every listener is open, and for a gateway, the
  upstream answers a TCP connection.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, Sequence
from wsgiref.simple_server import WSGIRequestHandler, make_server

from prometheus_client import make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from kafkasec.server.metrics import ServerMetrics

log = logging.getLogger("kafkasec.server.operations")

METRICS_PORT = "kafkasec.metrics.port"
METRICS_HOST = "kafkasec.metrics.host"

ReadinessCheck = tuple[str, Callable[[], bool]]
"""A check's name, and what says whether it passes now (called at every probe)."""


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        """Probes come every few seconds: not one log line each."""


class OperationsServer:
    """``/metrics``, ``/healthz`` and ``/readyz`` on ``host:port`` (0: a free port; :attr:`port`
    has it once started)."""

    def __init__(self, metrics: ServerMetrics, readiness: Sequence[ReadinessCheck], *, host: str = "127.0.0.1", port: int = 0):
        self.metrics = metrics
        self.readiness = list(readiness)
        self.host = host
        self.port = port
        self._metrics_app = make_wsgi_app(metrics.registry)
        self._server: ThreadingWSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> OperationsServer:
        if self._server is not None:
            raise ValueError("the operations server is already started")
        self._server = make_server(self.host, self.port, self._app, ThreadingWSGIServer, handler_class=_QuietHandler)
        self.port = self._server.server_port
        self._thread = threading.Thread(target=self._server.serve_forever, name="kafkasec-operations-http", daemon=True)
        self._thread.start()
        log.info("metrics and health on http://%s:%d/metrics, /healthz, /readyz", self.host, self.port)
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        self._server = None
        if self._thread is not None:
            self._thread.join(5)

    def readiness_report(self) -> tuple[bool, str]:
        """Whether every check passes, and one line per check."""
        lines, ready = [], True
        for name, check in self.readiness:
            try:
                passed = bool(check())
            except Exception as error:  # a check that fails to run does not pass
                passed = False
                log.warning("readiness check %s failed: %s", name, error)
            ready = ready and passed
            lines.append(f"{name}: {'ok' if passed else 'not ready'}")
        return ready, "\n".join(lines) + "\n"

    def _app(self, environ, start_response):
        path = environ.get("PATH_INFO", "/")
        if environ.get("REQUEST_METHOD", "GET") not in ("GET", "HEAD"):
            return _text(start_response, "405 Method Not Allowed", "GET only\n")
        if path == "/healthz":
            return _text(start_response, "200 OK", "ok\n")
        if path == "/readyz":
            ready, report = self.readiness_report()
            return _text(start_response, "200 OK" if ready else "503 Service Unavailable", report)
        if path == "/metrics":
            return self._metrics_app(environ, start_response)
        return _text(start_response, "404 Not Found", "/metrics, /healthz or /readyz\n")


def _text(start_response, status: str, body: str) -> list[bytes]:
    data = body.encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))])
    return [data]
