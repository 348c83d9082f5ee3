"""The endpoint under hostile TLS, a failing identity provider and heavy requests, measured from
outside, this tree and another commit side by side (issue "The endpoint under hostile TLS").

    python benchmarks/bench_hostile.py [--rev REV] [--only tls,jwks,heavy,heavy-gateway] [--handshakes N]
    python benchmarks/bench_hostile.py --quick --handshakes 20 --seconds 0.3   # a smoke run (~10 s): does every run work?

Each run starts ``kafkasec serve`` in its own process (of this tree, and of ``--rev``'s
worktree) and measures:

- **tls**: an SSL listener with an RSA-2048 key (every ClientHello costs the server an RSA
  signature). N connections (default 1,000) from 127.0.0.1 send a ClientHello and stop there.
  An honest client on 127.0.0.2 connects, handshakes and asks ApiVersions every 20 ms
  throughout; its p50/p99/max. The server's RSS idle, with the handshakes pending, and 3 s
  after they closed; and, with ``max.connections.per.ip=100``, the file descriptors the server
  holds while the N stall.
- **jwks**: a SASL listener with SCRAM and OAUTHBEARER whose JWKS endpoint accepts connections
  and never answers. An honest SCRAM client's Metadata p50/p99 quiet, and while three clients
  try an OAUTHBEARER login every 100 ms each; how long those logins take to be answered.
- **heavy**: four connections of a user without ACLs keep sending DescribeGroups naming 40,000
  groups (and, in a second phase, Metadata naming 40,000 topics); another user's Metadata
  p50/p99 quiet and meanwhile.
- **heavy-gateway**: the same against ``kafkasec serve --upstream`` in front of a Tansu of its
  own (tests/tansu_support.py): the gateway reads and authorizes such requests on its threads.

The clients run in this process on their own threads (blocking sockets), so that what they
measure is not delayed by each other. Prints Markdown tables and the machine.

``--quick`` shortens what makes a run last, for a smoke run whose numbers mean little: the tls
run's two 3 s pauses become 0.5 s, the jwks attack lasts ``--seconds`` instead of at least 12 s
(longer than a stalled fetch's 10 s timeout: with less, the answered logins are only those
refused before the fetch was asked for), and the heavy requests name 2,000 names.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import ipaddress
import os
import platform
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from compare_revisions import IMPORT_TREE_UNDER_TEST, revision_worktree  # noqa: E402
from cryptography import x509  # noqa: E402
from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import rsa  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402

from kafkasec import KafkaSecurity, RequestContext  # noqa: E402
from kafkasec.protocol import wire  # noqa: E402
from kafkasec.protocol.api_keys import ApiKey  # noqa: E402
from kafkasec.scram.client import ScramClient  # noqa: E402
from kafkasec.scram.credentials import ScramCredentialInfo, UserScramCredentialUpsertion  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tansu_support import TansuBroker  # noqa: E402

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
HEAVY_NAMES = 40_000

SERVE_FROM_TREE = IMPORT_TREE_UNDER_TEST + r"""
sys.path.insert(0, sys.argv[1])
from kafkasec.cli import main
sys.exit(main(sys.argv[2:]))
"""


# --- the server ----------------------------------------------------------------------------------


def prepare_state(directory: Path) -> Path:
    """alice and bob with SCRAM-SHA-256 passwords; no ACLs (allow.everyone is off)."""
    state = directory / "state.db"
    admin = RequestContext.for_principal("User:admin")
    with KafkaSecurity(super_users="User:admin", state_path=str(state)) as security:
        security.alter_user_scram_credentials(
            [UserScramCredentialUpsertion(user, ScramCredentialInfo("SCRAM-SHA-256", 4096), password)
             for user, password in USERS.items()],
            context=admin,
        )
    return state


@contextlib.contextmanager
def serving(tree: Path | None, state: Path, properties: dict[str, str], protocol: str):
    """``kafkasec serve`` of this tree or of ``tree``: (process, port)."""
    config = state.parent / f"server-{time.monotonic_ns()}.properties"
    config.write_text("".join(f"{key}={value}\n" for key, value in properties.items()))
    arguments = ["serve", "--state", str(state), "--config", str(config), "--host", "127.0.0.1", "--port", "0",
                 "--security-protocol", protocol]
    command = ([sys.executable, "-m", "kafkasec", *arguments] if tree is None
               else [sys.executable, "-c", SERVE_FROM_TREE, str(tree), *arguments])
    # The installed plugins are this tree's: another commit's kafkasec may not import them.
    environment = {**os.environ, "KAFKASEC_LOAD_PLUGINS": ""}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environment)
    try:
        line = process.stdout.readline()  # "kafkasec serve: SSL listening on 127.0.0.1:PORT"
        if "listening on" not in line:
            raise RuntimeError(f"kafkasec serve did not start: {line!r}")
        yield process, int(line.rsplit(":", 1)[1])
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# --- blocking Kafka-protocol clients --------------------------------------------------------------


def send_frame(sock, frame: bytes) -> None:
    sock.sendall(wire.size_prefixed(frame))


def read_frame(sock) -> bytes:
    (size,) = struct.unpack(">i", read_exactly(sock, 4))
    return read_exactly(sock, size)


def read_exactly(sock, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            raise ConnectionError("closed by the server")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def request_frame(api_key: int, version: int, **values) -> bytes:
    body = wire.build(wire.request_schema(api_key, version), **values)
    return wire.encode_request(body, correlation_id=1, client_id="bench")


def metadata_frame(names: list[str]) -> bytes:
    topic = wire.item_type(wire.request_schema(ApiKey.METADATA, 12), "topics")
    return request_frame(ApiKey.METADATA, 12, topics=[wire.build(topic, name=name) for name in names],
                         allow_auto_topic_creation=False)


API_VERSIONS = request_frame(ApiKey.API_VERSIONS, 0)
SMALL_METADATA = metadata_frame(["orders"])


def scram_login(sock, user: str) -> None:
    send_frame(sock, request_frame(ApiKey.SASL_HANDSHAKE, 1, mechanism="SCRAM-SHA-256"))
    read_frame(sock)
    client = ScramClient("SCRAM-SHA-256", user, USERS[user])
    send_frame(sock, request_frame(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=client.first_message()))
    server_first = wire.decode_response(read_frame(sock), ApiKey.SASL_AUTHENTICATE, 2)[1].auth_bytes
    send_frame(sock, request_frame(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=client.final_message(server_first)))
    answer = wire.decode_response(read_frame(sock), ApiKey.SASL_AUTHENTICATE, 2)[1]
    if int(answer.error_code):
        raise RuntimeError(f"login refused: {answer.error_message}")


def logged_in(port: int, user: str) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    scram_login(sock, user)
    return sock


def timed_loop(stop: threading.Event, action, interval_s: float) -> list[float]:
    """Seconds each ``action()`` took, one every ``interval_s`` until ``stop``."""
    took = []
    while not stop.is_set():
        started = time.perf_counter()
        action()
        took.append(time.perf_counter() - started)
        time.sleep(max(0.0, interval_s - (time.perf_counter() - started)))
    return took


def in_thread(function, *args):
    result: dict = {}
    thread = threading.Thread(target=lambda: result.setdefault("value", function(*args)), daemon=True)
    thread.start()
    return thread, result


def summary(seconds: list[float]) -> str:
    if not seconds:
        return "none"
    ordered = sorted(seconds)
    pick = lambda fraction: ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000  # noqa: E731
    return f"{pick(0.5):.1f} / {pick(0.99):.1f} / {ordered[-1] * 1000:.1f}"


def p99(seconds: list[float]) -> float:
    ordered = sorted(seconds)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] * 1000


# --- tls -----------------------------------------------------------------------------------------


def rsa_server_files(directory: Path) -> tuple[Path, Path]:
    """A CA and an RSA-2048 server key and certificate for 127.0.0.1: (key+chain PEM, CA PEM)."""
    ca_key = rsa.generate_private_key(65537, 2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "bench CA")])
    start = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    end = start + datetime.timedelta(days=2)
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(1).not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True).sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(65537, 2048)
    certificate = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
                   .issuer_name(ca_name).public_key(key.public_key()).serial_number(2)
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .sign(ca_key, hashes.SHA256()))
    bundle, ca_file = directory / "server.pem", directory / "ca.pem"
    bundle.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
                       + certificate.public_bytes(serialization.Encoding.PEM))
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    return bundle, ca_file


def client_hello(context: ssl.SSLContext) -> bytes:
    tls = context.wrap_bio(ssl.MemoryBIO(), outgoing := ssl.MemoryBIO(), server_side=False)
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def honest_tls_round(port: int, context: ssl.SSLContext) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30, source_address=("127.0.0.2", 0)) as raw:
        with context.wrap_socket(raw) as tls:
            send_frame(tls, API_VERSIONS)
            read_frame(tls)


def tls_run(tree, directory: Path, handshakes: int, settle_s: float = 3.0) -> dict:
    bundle, ca_file = rsa_server_files(directory)
    context = ssl.create_default_context(cafile=str(ca_file))
    context.check_hostname = False
    hello = client_hello(context)
    results = {}
    for label, extra in (("uncapped", {}), ("per-ip cap 100", {"max.connections.per.ip": "100"})):
        properties = {"ssl.keystore.location": str(bundle), "allow.everyone.if.no.acl.found": "true",
                      "connections.max.idle.ms": "600000", **extra}
        with serving(tree, directory / "state.db", properties, "SSL") as (process, port):
            for _ in range(5):
                honest_tls_round(port, context)
            idle_rss, idle_fds = rss_mb(process.pid), open_fds(process.pid)
            stop = threading.Event()
            thread, honest = in_thread(timed_loop, stop, lambda: honest_tls_round(port, context), 0.02)
            stalled = []
            for _ in range(handshakes):
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                    sock.sendall(hello)
                    stalled.append(sock)
                except OSError:
                    break
            time.sleep(settle_s)  # the server answers every ClientHello it kept
            pending_rss, pending_fds = rss_mb(process.pid), open_fds(process.pid)
            for sock in stalled:
                sock.close()
            time.sleep(settle_s)
            stop.set()
            thread.join()
            results[label] = {
                "honest": honest["value"], "idle_rss": idle_rss, "pending_rss": pending_rss,
                "after_rss": rss_mb(process.pid), "idle_fds": idle_fds, "pending_fds": pending_fds,
            }
    return results


# --- jwks ----------------------------------------------------------------------------------------


@contextlib.contextmanager
def silent_http_server():
    """A port that accepts connections and never answers (an identity provider that hangs)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(512)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/jwks.json"
    finally:
        stop.set()
        thread.join()
        for sock in held:
            sock.close()
        server.close()


UNSIGNED_JWT = "eyJhbGciOiJSUzI1NiIsImtpZCI6ImsxIn0.eyJzdWIiOiJtYWxsb3J5IiwiZXhwIjo0MTAyNDQ0ODAwfQ.c2lnbmF0dXJl"


def oauthbearer_attempt(port: int) -> float:
    """An OAUTHBEARER login with a token whose key the server does not have: seconds to the answer."""
    started = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        send_frame(sock, request_frame(ApiKey.SASL_HANDSHAKE, 1, mechanism="OAUTHBEARER"))
        read_frame(sock)
        message = f"n,,\x01auth=Bearer {UNSIGNED_JWT}\x01\x01".encode()
        send_frame(sock, request_frame(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=message))
        with contextlib.suppress(ConnectionError):
            read_frame(sock)
    return time.perf_counter() - started


class MetadataProbe:
    """alice, logged in, asking a one-topic Metadata every 10 ms: her round trips in phases."""

    def __init__(self, port: int):
        self._sock = logged_in(port, "alice")

    def ask(self) -> None:
        send_frame(self._sock, SMALL_METADATA)
        read_frame(self._sock)

    def start(self):
        """Start a phase: (stop, result) — set ``stop``, then ``result()`` is the seconds of each ask."""
        stop = threading.Event()
        thread, result = in_thread(timed_loop, stop, self.ask, 0.01)

        def finished() -> list[float]:
            thread.join()
            return result["value"]

        return stop, finished

    def phase(self, seconds: float) -> list[float]:
        stop, finished = self.start()
        time.sleep(seconds)
        stop.set()
        return finished()

    def close(self) -> None:
        self._sock.close()


def jwks_run(tree, directory: Path, seconds: float, attack_s: float = 12.0) -> dict:
    with silent_http_server() as url:
        properties = {"sasl.enabled.mechanisms": "SCRAM-SHA-256,OAUTHBEARER",
                      "sasl.oauthbearer.jwks.endpoint.url": url,
                      "connection.failed.authentication.delay.ms": "100"}
        with serving(tree, directory / "state.db", properties, "SASL_PLAINTEXT") as (process, port):
            alice = MetadataProbe(port)
            quiet = alice.phase(seconds)
            stop, loaded = alice.start()
            attackers = [in_thread(timed_loop, stop, lambda: oauthbearer_attempt(port), 0.1) for _ in range(3)]
            time.sleep(attack_s)
            stop.set()
            for thread, _ in attackers:
                thread.join(30)
            alice.close()
            logins = [took for _, result in attackers for took in result.get("value", [])]
            return {"quiet": quiet, "loaded": loaded(), "logins": logins}


# --- heavy ---------------------------------------------------------------------------------------


def heavy_run(tree, directory: Path, seconds: float, name_count: int = HEAVY_NAMES,
              properties: dict[str, str] | None = None) -> dict:
    """alice's Metadata quiet, then while bob's four connections send heavy requests, to a
    ``kafkasec serve`` with ``properties`` (an upstream: a gateway)."""
    names = [f"g{index}" for index in range(name_count)]
    heavy_frames = {
        "DescribeGroups": request_frame(ApiKey.DESCRIBE_GROUPS, 5, groups=names),
        "Metadata": metadata_frame(names),
    }
    results = {}
    with serving(tree, directory / "state.db", properties or {}, "SASL_PLAINTEXT") as (process, port):
        alice = MetadataProbe(port)
        results["quiet"] = alice.phase(seconds)
        for name, frame in heavy_frames.items():
            bobs = [logged_in(port, "bob") for _ in range(4)]
            stop = threading.Event()

            def heavy(sock, frame=frame):
                send_frame(sock, frame)
                read_frame(sock)

            hogs = [in_thread(timed_loop, stop, lambda sock=sock: heavy(sock), 0.0) for sock in bobs]
            time.sleep(1.0)  # the four are under way
            results[name] = alice.phase(seconds)
            stop.set()
            for thread, _ in hogs:
                thread.join(120)
            results[name + " heavy"] = [took for _, result in hogs for took in result.get("value", [])]
            for sock in bobs:
                sock.close()
        alice.close()
    return results


# --- report --------------------------------------------------------------------------------------


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return f"{model}, nproc {os.cpu_count()}, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="also measure this commit's kafkasec serve, side by side")
    parser.add_argument("--only", default="tls,jwks,heavy,heavy-gateway")
    parser.add_argument("--handshakes", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke run: short pauses, the jwks attack for --seconds, 2,000 names per heavy request")
    args = parser.parse_args()
    # The jwks attack outlasts a stalled fetch's 10 s timeout, so that its refusals are counted too.
    settle_s, attack_s, heavy_names = (0.5, args.seconds, 2_000) if args.quick else (3.0, max(args.seconds, 12.0), HEAVY_NAMES)
    print(f"Machine: {machine()}\n")
    only = set(args.only.split(","))
    with contextlib.ExitStack() as stack:
        trees: list[tuple[str, Path | None]] = [("this tree", None)]
        if args.rev:
            trees.append((args.rev, stack.enter_context(revision_worktree(args.rev))))
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        prepare_state(directory)
        if "tls" in only:
            print(f"### {args.handshakes} TLS handshakes stalled after the ClientHello (RSA-2048 server key)\n")
            print("| tree | run | honest client ms p50 / p99 / max | RSS MB idle / pending / after | server fds idle / pending |")
            print("|---|---|---:|---:|---:|")
            for label, tree in trees:
                for run, measured in tls_run(tree, directory, args.handshakes, settle_s).items():
                    print(f"| {label} | {run} | {summary(measured['honest'])} | {measured['idle_rss']:.0f} / "
                          f"{measured['pending_rss']:.0f} / {measured['after_rss']:.0f} | "
                          f"{measured['idle_fds']} / {measured['pending_fds']} |", flush=True)
            print()
        if "jwks" in only:
            print("### A JWKS endpoint that never answers: three clients keep trying OAUTHBEARER\n")
            print("| tree | Metadata ms quiet p50 / p99 / max | meanwhile | p99 ratio | OAUTHBEARER answered, ms p50 / p99 / max (count) |")
            print("|---|---:|---:|---:|---:|")
            for label, tree in trees:
                measured = jwks_run(tree, directory, args.seconds, attack_s)
                print(f"| {label} | {summary(measured['quiet'])} | {summary(measured['loaded'])} | "
                      f"{p99(measured['loaded']) / p99(measured['quiet']):.2f} | {summary(measured['logins'])} "
                      f"({len(measured['logins'])}) |", flush=True)
            print()
        for run in ("heavy", "heavy-gateway"):
            if run not in only:
                continue
            properties = {}
            if run == "heavy-gateway":
                tansu = stack.enter_context(TansuBroker())
                properties = {"kafkasec.upstream.bootstrap.servers": tansu.bootstrap,
                              "kafkasec.upstream.unadvertised.apis": "DeleteRecords"}
            print(f"### Four connections of a user without ACLs sending requests naming {heavy_names:,} names"
                  f"{' to a gateway in front of Tansu' if properties else ''}\n")
            print("| tree | Metadata ms quiet p50 / p99 / max | during DescribeGroups | during Metadata | heavy requests answered (DescribeGroups / Metadata) |")
            print("|---|---:|---:|---:|---:|")
            for label, tree in trees:
                measured = heavy_run(tree, directory, args.seconds, heavy_names, properties)
                print(f"| {label} | {summary(measured['quiet'])} | {summary(measured['DescribeGroups'])} | "
                      f"{summary(measured['Metadata'])} | {len(measured['DescribeGroups heavy'])} / "
                      f"{len(measured['Metadata heavy'])} |", flush=True)
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
