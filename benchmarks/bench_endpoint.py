"""The Kafka-protocol endpoint under load and abuse, measured from outside, in one run.

    python benchmarks/bench_endpoint.py [--quick] [--seconds S]

The endpoint runs as ``kafkasec serve`` in its own process (one core of its own); the clients
are kafkasec's kio-based KafkaConnection on asyncio in this process. Measured:

- logins per second (SaslHandshake and two SaslAuthenticate on a new connection) with N
  concurrent clients, against the same login run in-process through the facade (no sockets,
  no framing, no kio): the ratio is what the network shell costs;
- authorized Metadata requests per second (v12, all topics, with KIP-430 topic operations, for
  a user whose ACLs let it see half of 50 topics) with N concurrent connections, against the
  handler called in-process;
- the same Metadata load while 200 more connections sit open and eight more tasks keep sending
  fuzzed and oversized frames on fresh connections: the ratio to the quiet run;
- stalled connections: 200 connections that send half a frame, and how long until the
  endpoint has closed all of them (``connections.max.idle.ms`` is 1000 ms here);
- hardening, on a second endpoint whose catalogue has 5,000 topics of 6 partitions: the time of
  one all-topics Metadata answer (without and with KIP-430 operations), and the p50/p99 login
  latency of an honest client, quiet, while six clients keep asking for that Metadata, and
  while 1,000 hostile connections hold half-sent 512 KiB frames. With ``--rev`` the same runs
  against that commit's ``kafkasec serve``, side by side.

The clients' PBKDF2 is cached (a real client computes it once per password too), so the login
rate is the server's, not the client's. Prints a Markdown table with ratios and the machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import os
import platform
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compare_revisions import IMPORT_TREE_UNDER_TEST, ROOT, revision_worktree

from kafkasec import AccessControlEntry, AclBinding, KafkaSecurity, RequestContext, ResourcePattern
from kafkasec.protocol import wire
from kafkasec.scram import client as scram_client_module
from kafkasec.scram.client import ScramClient
from kafkasec.scram.credentials import ScramCredentialInfo, ScramFormatter, UserScramCredentialUpsertion
from kafkasec.server import Catalogue, KafkaConnection, Node

USERS = {"admin": "admin-secret", "reader": "reader-secret"}
TOPICS = [f"topic-{index:03d}" for index in range(50)]
IDLE_MS = 1000


def cache_client_pbkdf2() -> None:
    """The clients' salted passwords, computed once per (password, salt, iterations)."""
    original = ScramFormatter.salted_password

    @functools.lru_cache(maxsize=None)
    def cached(self_mechanism, password, salt, iterations):
        return original(ScramFormatter(self_mechanism), password, salt, iterations)

    def salted_password(self, password, salt, iterations):
        return cached(self.mechanism, password, bytes(salt), iterations)

    scram_client_module.ScramFormatter.salted_password = salted_password


def prepare_state(directory: Path) -> tuple[Path, Path, Path]:
    state = directory / "state.db"
    properties = directory / "server.properties"
    properties.write_text(
        f"super.users=User:admin\nconnections.max.idle.ms={IDLE_MS}\n"
        "connection.failed.authentication.delay.ms=100\n"
    )
    catalogue = directory / "catalogue.json"
    catalogue.write_text(json.dumps({"topics": [{"name": name, "partitions": 3} for name in TOPICS]}))
    admin = RequestContext.for_principal("User:admin")
    with KafkaSecurity(super_users="User:admin", state_path=str(state)) as security:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            security.alter_user_scram_credentials(
                [UserScramCredentialUpsertion(u, ScramCredentialInfo(mechanism, 4096), p) for u, p in USERS.items()],
                context=admin,
            )
        security.create_acls(
            [AclBinding(ResourcePattern("TOPIC", name), AccessControlEntry("User:reader", "*", "READ", "ALLOW")) for name in TOPICS[::2]]
        )
    return state, properties, catalogue


SERVE_FROM_TREE = IMPORT_TREE_UNDER_TEST + r"""
sys.path.insert(0, sys.argv[1])
from kafkasec.cli import main
sys.exit(main(sys.argv[2:]))
"""


def start_server(state: Path, properties: Path, catalogue: Path, tree: Path | None = None) -> tuple[subprocess.Popen, int]:
    """``kafkasec serve`` of the working tree, or of ``tree`` (another commit's worktree)."""
    arguments = ["--state", str(state), "--config", str(properties), "serve", "--port", "0", "--catalogue", str(catalogue)]
    if tree is None:
        command = [sys.executable, "-m", "kafkasec.cli", *arguments]
    else:
        command = [sys.executable, "-c", SERVE_FROM_TREE, str(tree), *arguments]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = process.stdout.readline()  # "kafkasec serve: SASL_PLAINTEXT listening on 127.0.0.1:PORT"
    return process, int(line.rsplit(":", 1)[1])


def metadata_request():
    return wire.build(wire.request_schema(3, 12), topics=None, include_topic_authorized_operations=True)


async def login(port: int, user="reader", mechanism="SCRAM-SHA-512") -> KafkaConnection:
    connection = await KafkaConnection.open("127.0.0.1", port)
    await connection.login(mechanism, user, USERS[user])
    return connection


async def rate(worker, clients: int, seconds: float) -> float:
    """Operations per second of ``clients`` concurrent ``worker(deadline)`` loops."""
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    counts = await asyncio.gather(*(worker(deadline) for _ in range(clients)))
    return sum(counts) / (time.perf_counter() - started)


async def logins_per_second(port: int, clients: int, seconds: float) -> float:
    async def worker(deadline):
        done = 0
        while time.perf_counter() < deadline:
            connection = await login(port)
            await connection.close()
            done += 1
        return done

    return await rate(worker, clients, seconds)


async def metadata_per_second(port: int, clients: int, seconds: float) -> float:
    connections = [await login(port) for _ in range(clients)]
    body = metadata_request()

    async def worker(deadline):
        connection = connections.pop()
        done = 0
        while time.perf_counter() < deadline:
            response = await connection.request(body)
            assert len(response.topics) == len(TOPICS) // 2
            done += 1
        await connection.close()
        return done

    return await rate(worker, clients, seconds)


async def abuse(port: int, stop: asyncio.Event, rng: random.Random) -> int:
    """Fuzzed and oversized frames on fresh connections until ``stop``; how many were sent."""
    valid = wire.encode_request(metadata_request(), correlation_id=1, client_id="fuzz")
    sent = 0
    while not stop.is_set():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        choice = sent % 3
        if choice == 0:
            frame = bytearray(valid)
            for _ in range(4):
                frame[rng.randrange(len(frame))] = rng.randrange(256)
            writer.write(struct.pack(">i", len(frame)) + bytes(frame))
        elif choice == 1:
            writer.write(struct.pack(">i", 1 << 30) + b"\x00" * 64)  # a gigabyte announced
        else:
            writer.write(bytes(rng.randrange(256) for _ in range(48)))
        try:
            # The first bytes or the close: a mutated frame that still parses is answered and kept open.
            await asyncio.wait_for(reader.read(65536), 0.5)
        except (asyncio.TimeoutError, ConnectionError):
            pass
        writer.close()
        sent += 1
    return sent


async def metadata_under_abuse(port: int, clients: int, seconds: float) -> tuple[float, int]:
    idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(200)]
    stop = asyncio.Event()
    fuzzers = [asyncio.create_task(abuse(port, stop, random.Random(seed))) for seed in range(8)]
    measured = await metadata_per_second(port, clients, seconds)
    stop.set()
    sent = sum(await asyncio.gather(*fuzzers))
    for _, writer in idle:
        writer.close()
    return measured, sent


async def stalled_connections_freed(port: int, count: int = 200) -> float:
    connections = [await asyncio.open_connection("127.0.0.1", port) for _ in range(count)]
    for _, writer in connections:
        writer.write(b"\x00\x00\x01")  # three bytes of a size prefix, never the fourth
    started = time.perf_counter()
    await asyncio.gather(*(reader.read() for reader, _ in connections))
    freed = time.perf_counter() - started
    for _, writer in connections:
        writer.close()
    return freed


def in_process_logins_per_second(state: Path, seconds: float) -> float:
    with KafkaSecurity(super_users="User:admin", state_path=str(state)) as security:
        done, deadline = 0, time.perf_counter() + seconds
        started = time.perf_counter()
        while time.perf_counter() < deadline:
            client = ScramClient("SCRAM-SHA-512", "reader", USERS["reader"])
            server = security.scram_server("SCRAM-SHA-512")
            first = server.evaluate_response(client.first_message())
            client.verify_server_final(server.evaluate_response(client.final_message(first)))
            security.build_principal(server.authentication_context("127.0.0.1"))
            done += 1
        return done / (time.perf_counter() - started)


def in_process_metadata_per_second(state: Path, catalogue: Path, seconds: float) -> float:
    # Imported here, after kafkasec.server: in the trees before 5b44001 importing the module
    # first met an import cycle, and --rev runs this against such trees.
    from kafkasec.protocol.cluster_apis import ClusterRequests

    with KafkaSecurity(super_users="User:admin", state_path=str(state)) as security:
        cluster = ClusterRequests(Catalogue.from_file(str(catalogue)), Node(1, "127.0.0.1", 9092), "c")
        context = RequestContext.for_principal("User:reader", security_protocol="SASL_PLAINTEXT")
        body = metadata_request()
        done, deadline = 0, time.perf_counter() + seconds
        started = time.perf_counter()
        while time.perf_counter() < deadline:
            wire.encode_response(cluster.handle_metadata(security, context, body, 12), correlation_id=1)
            done += 1
        return done / (time.perf_counter() - started)


REVISION_CHILD = IMPORT_TREE_UNDER_TEST + r"""
import tempfile
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import bench_endpoint as bench
state, _, catalogue = bench.prepare_state(Path(tempfile.mkdtemp()))
print(bench.in_process_metadata_per_second(state, catalogue, float(sys.argv[3])))
"""


def metadata_against_revision(revision: str, seconds: float, rounds: int = 3) -> tuple[float, float]:
    """The in-process Metadata handler of the working tree and of ``revision``, alternating in
    child processes; each side's best round."""
    best = {"current": 0.0, revision: 0.0}
    with revision_worktree(revision) as worktree:
        for _ in range(rounds):
            for side, tree in (("current", ROOT), (revision, worktree)):
                output = subprocess.run(
                    [sys.executable, "-c", REVISION_CHILD, str(tree), str(ROOT / "benchmarks"), str(seconds)],
                    check=True, capture_output=True, text=True,
                ).stdout
                best[side] = max(best[side], float(output.strip().splitlines()[-1]))
    return best["current"], best[revision]


BIG_TOPICS, BIG_PARTITIONS = 5000, 6


def big_catalogue(directory: Path) -> Path:
    catalogue = directory / "big-catalogue.json"
    topics = [{"name": f"big-{index:05d}", "partitions": BIG_PARTITIONS} for index in range(BIG_TOPICS)]
    catalogue.write_text(json.dumps({"topics": topics}))
    return catalogue


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def metadata_seconds(port: int, operations: bool, count: int) -> list[float]:
    """The time of each of ``count`` all-topics Metadata answers to the super user."""
    body = wire.build(wire.request_schema(3, 12), topics=None, include_topic_authorized_operations=operations)
    times = []
    async with await login(port, "admin") as connection:
        assert len((await connection.request(body)).topics) == BIG_TOPICS
        frame = wire.encode_request(body, correlation_id=1, client_id="bench")
        for _ in range(count):
            started = time.perf_counter()
            await connection.exchange(frame)  # not decoded: the client's time is not the server's
            times.append(time.perf_counter() - started)
    return times


async def login_seconds(port: int, count: int, within_s: float = 60.0) -> list[float]:
    """The time of each of ``count`` logins of an honest client on a new connection, one after
    another; fewer if they take longer than ``within_s`` in all (an old commit under load)."""
    times = []
    deadline = time.perf_counter() + within_s
    while len(times) < count and time.perf_counter() < deadline:
        started = time.perf_counter()
        connection = await login(port)
        times.append(time.perf_counter() - started)
        await connection.close()
    return times


async def logins_while(port: int, count: int, load) -> list[float]:
    """Login times while ``load(stop)`` runs; the load is stopped and awaited afterwards."""
    stop = asyncio.Event()
    running = asyncio.create_task(load(stop))
    await asyncio.sleep(1.0)  # the load is under way before the first login
    try:
        return await login_seconds(port, count)
    finally:
        stop.set()
        await running


def big_metadata_load(port: int, clients: int = 6):
    async def load(stop: asyncio.Event) -> None:
        body = wire.build(wire.request_schema(3, 12), topics=None, include_topic_authorized_operations=True)
        frame = wire.encode_request(body, correlation_id=1, client_id="bench")

        async def ask_until_stopped():
            async with await login(port, "admin") as connection:
                while not stop.is_set():
                    await connection.exchange(frame)

        await asyncio.gather(*(ask_until_stopped() for _ in range(clients)))

    return load


def hostile_load(port: int, connections: int = 1000, frame: int = 512 * 1024):
    async def load(stop: asyncio.Event) -> None:
        writers = []
        for _ in range(connections):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                continue  # refused: the endpoint is at a cap
            writer.write(struct.pack(">i", frame) + b"\x00" * (frame - 1))  # all but the last byte
            writers.append(writer)
        await stop.wait()
        for writer in writers:
            writer.transport.abort()

    return load


async def hardening(port: int, logins: int, metadata_requests: int) -> dict:
    return {
        "metadata": await metadata_seconds(port, False, metadata_requests),
        "metadata with operations": await metadata_seconds(port, True, metadata_requests),
        "login, quiet": await login_seconds(port, logins),
        "login, six clients asking for all of the Metadata": await logins_while(port, logins, big_metadata_load(port)),
        "login, 1,000 hostile connections": await logins_while(port, logins, hostile_load(port)),
    }


def hardening_runs(state: Path, catalogue: Path, revision: str | None, logins: int, metadata_requests: int) -> dict:
    """The hardening measurements of the working tree, and of ``revision``'s server (Kafka's
    default idle timeout: the hostile connections stay)."""
    properties = state.parent / "hardening.properties"
    properties.write_text("super.users=User:admin\n")
    sides = {}
    trees = [("this tree", None)]
    with contextlib.ExitStack() as stack:
        if revision:
            trees.append((revision, stack.enter_context(revision_worktree(revision))))
        for side, tree in trees:
            server, port = start_server(state, properties, catalogue, tree)
            try:
                sides[side] = asyncio.run(hardening(port, logins, metadata_requests))
            finally:
                server.terminate()
                server.wait(10)
    return sides


def print_hardening(sides: dict) -> None:
    names = list(sides)
    print(f"\nHardening: {BIG_TOPICS:,} topics x {BIG_PARTITIONS} partitions; times in ms (p50 / p99).\n")
    ratio_header = f" p99 {names[1]} / this tree |" if len(names) > 1 else ""
    print("| measurement | " + " | ".join(names) + " |" + ratio_header)
    print("|---|" + "---:|" * (len(names) + (len(names) > 1)))
    for measurement in sides[names[0]]:
        cells = [sides[name][measurement] for name in names]
        row = " | ".join(f"{percentile(c, 0.5) * 1e3:,.1f} / {percentile(c, 0.99) * 1e3:,.1f}" for c in cells)
        ratio = f" {percentile(cells[1], 0.99) / percentile(cells[0], 0.99):,.2f} |" if len(names) > 1 else ""
        what = f"all-topics {measurement}" if measurement.startswith("metadata") else measurement
        print(f"| {what} | {row} |{ratio}")


def machine() -> str:
    load = ", ".join(f"{value:.1f}" for value in os.getloadavg())
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load {load}"


async def over_the_wire(port: int, seconds: float, client_counts) -> dict:
    results = {}
    for clients in client_counts:
        results[("login", clients)] = await logins_per_second(port, clients, seconds)
        results[("metadata", clients)] = await metadata_per_second(port, clients, seconds)
    results["abuse"] = await metadata_under_abuse(port, max(client_counts), seconds)
    results["stalled"] = await stalled_connections_freed(port)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="1 s per measurement (unless --seconds says otherwise), 1 and 16 clients, fewer hardening samples")
    parser.add_argument("--seconds", type=float, default=None, help="per measurement (default: 3; --quick: 1)")
    parser.add_argument("--rev", help="also compare the in-process Metadata handler and the hardening runs with this commit")
    parser.add_argument("--hardening-only", action="store_true", help="only the 5,000-topic hardening runs")
    args = parser.parse_args()
    seconds = args.seconds if args.seconds is not None else 1.0 if args.quick else 3.0
    client_counts = (1, 16) if args.quick else (1, 16, 64)
    cache_client_pbkdf2()
    logins, metadata_requests = (20, 5) if args.quick else (100, 20)
    with tempfile.TemporaryDirectory() as directory:
        state, properties, catalogue = prepare_state(Path(directory))
        hardened = hardening_runs(state, big_catalogue(Path(directory)), args.rev, logins, metadata_requests)
        if args.hardening_only:
            print(f"Machine: {machine()}.")
            print_hardening(hardened)
            return
        login_baseline = in_process_logins_per_second(state, seconds)
        metadata_baseline = in_process_metadata_per_second(state, catalogue, seconds)
        server, port = start_server(state, properties, catalogue)
        try:
            results = asyncio.run(over_the_wire(port, seconds, client_counts))
        finally:
            server.terminate()
            server.wait(10)
    print(f"Machine: {machine()}. {seconds:g} s per measurement; the endpoint in its own process.\n")
    print("| measurement | clients | per second | ratio |")
    print("|---|---:|---:|---|")
    print(f"| login in-process (facade, no sockets) | 1 | {login_baseline:,.0f} | 1.00 (baseline) |")
    for clients in client_counts:
        value = results[("login", clients)]
        print(f"| login over the wire | {clients} | {value:,.0f} | {value / login_baseline:.2f}x in-process |")
    print(f"| Metadata handler in-process | 1 | {metadata_baseline:,.0f} | 1.00 (baseline) |")
    quiet = results[("metadata", max(client_counts))]
    for clients in client_counts:
        value = results[("metadata", clients)]
        print(f"| Metadata over the wire | {clients} | {value:,.0f} | {value / metadata_baseline:.2f}x in-process |")
    abused, sent = results["abuse"]
    print(f"| Metadata with 200 idle connections and eight fuzzers ({sent:,} bad frames) | {max(client_counts)} | {abused:,.0f} | {abused / quiet:.2f}x quiet |")
    if args.rev:
        current, earlier = metadata_against_revision(args.rev, seconds)
        print(f"| Metadata handler in-process, this tree / {args.rev} | 1 | {current:,.0f} / {earlier:,.0f} | "
              f"{current / earlier:.2f}x {args.rev} |")
    print(f"\n200 stalled connections (half a size prefix each) were all closed {results['stalled']:.2f} s after the last byte "
          f"(connections.max.idle.ms = {IDLE_MS}).")
    print_hardening(hardened)


if __name__ == "__main__":
    main()
