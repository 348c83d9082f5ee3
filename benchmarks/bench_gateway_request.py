"""The gateway's CPU per request: single-record Produce requests through a gateway in front of
Tansu, the gateway's process CPU (user and system) divided by the requests.

    python benchmarks/bench_gateway_request.py                       # this tree, asyncio and uvloop
    python benchmarks/bench_gateway_request.py --rev 8e70bcc         # and an earlier commit, side by side
    python benchmarks/bench_gateway_request.py --requests 500 --rounds 1   # quick
    python benchmarks/bench_gateway_request.py --event-loop uvloop --byte-pipe        # and the floor of any proxy here
    python benchmarks/bench_gateway_request.py --acls 10000 --compare-gc-freeze       # a state of some size, frozen or not

Each measurement is a child process that runs the gateway (``GatewayEndpoint``, SASL_PLAINTEXT,
the user ``alice`` allowed WRITE on the topic ``bench`` by an ACL, so every request is really
authorized) on its event loop in a background thread, in front of one Tansu that all share; the
client is another process, so its work is not counted. Four loads:

- ``one at a time``: one connection sends a Produce (v9, acks=1, one record of 100 bytes) and
  waits for its answer before the next, as a producer with linger.ms=0 at a low rate does;
- ``pipelined``: ``--connections`` connections each keep ``--in-flight`` requests outstanding,
  as fast as the gateway answers (a saturating rate);
- ``batched produce``: one connection, ``--in-flight`` outstanding, each Produce one batch of
  ``--batch-records`` records of 1 KiB (64 KiB), a third as many requests;
- ``fetch``: the same, each a Fetch (v12) of up to ``--fetch-bytes`` (1 MiB) of the batches
  that connection wrote first: the consumer's side (the table shows the answers' size).

``--compare-metrics`` measures each configuration with the gateway's Prometheus metrics
(``ServerMetrics``, every decision and request counted) off and on.

The gateway opens its state as ``kafkasec serve`` does (written first, then loaded whole), with
``--acls`` more ACLs in it (on other topics, for other users), and freezes its heap as serve
does once its listeners are up (``kafkasec.server.gc.freeze``; ``--compare-gc-freeze``: on and
off), and tunes glibc's malloc as serve does (``kafkasec.server.malloc.mmap.threshold``;
``--compare-malloc``: at its default and 0). After each run the process times one full garbage collection: the stall that one would
cause when it came (the table's last column; the one before counts the collections during the run).

``--byte-pipe`` adds a proxy that only copies bytes between the client and Tansu (asyncio
Protocols, no parsing, no login, no security): what the same load costs a proxy that does
nothing, the floor of any proxy's CPU per request on the machine (its system calls, mostly).

The figure is the gateway process's CPU time (os.times: user + system, every thread) over the
requests, after a warm-up. The configurations (``--event-loop`` choices, ``--rev``'s tree ...)
run in alternation, ``--rounds`` times, so that a noisy neighbour hurts all alike; the table
shows each one's median and its ratio to the first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_embedded_broker import machine  # noqa: E402
from compare_revisions import IMPORT_TREE_UNDER_TEST, revision_worktree  # noqa: E402

from kafkasec.server.heap import DEFAULT_MMAP_THRESHOLD, GC_FREEZE, MMAP_THRESHOLD  # noqa: E402

from tansu_support import TansuBroker  # noqa: E402

MEASURE = r"""
def measured(host, port, load):
    '''This process's CPU per request while a client process runs ``load`` against host:port.'''
    client = subprocess.Popen([sys.executable, "-c", CLIENT, host, str(port), json.dumps(load)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "ready"
    collections_before = sum(generation["collections"] for generation in gc.get_stats())
    before = os.times()
    client.stdin.write("go\n")
    client.stdin.flush()
    result = json.loads(client.stdout.readline())
    after = os.times()
    client.wait()
    collections = sum(generation["collections"] for generation in gc.get_stats()) - collections_before
    started = time.perf_counter()
    gc.collect()  # what a full collection would stop this process for, once it came
    full_collection_ms = (time.perf_counter() - started) * 1e3
    cpu = (after.user - before.user) + (after.system - before.system)
    return {"cpu_us": cpu * 1e6 / result["requests"], "wall_us": result["wall_s"] * 1e6 / result["requests"],
            "rate": result["requests"] / result["wall_s"], "answer_bytes": result["answer_bytes"], "collections": collections,
            "full_collection_ms": full_collection_ms}

def new_loop():
    if EVENT_LOOP == "uvloop":
        import uvloop
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()

def loop_in_thread():
    loop = new_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    return loop

async def create_topic(host, port, login):
    connection = await KafkaConnection.open(host, port)
    async with connection:
        if login:
            await connection.login("SCRAM-SHA-256", "admin", "admin-secret")
        schema = wire.request_schema(ApiKey.CREATE_TOPICS, 5)
        topic = wire.build(wire.item_type(schema, "topics"), name="bench", num_partitions=1, replication_factor=1)
        await connection.request(wire.build(schema, topics=(topic,), timeout=datetime.timedelta(seconds=10)))
"""

GATEWAY = IMPORT_TREE_UNDER_TEST + r"""
import asyncio, datetime, gc, json, os, subprocess, sys, tempfile, threading, time
sys.path[:0] = [TREE, TESTS]  # the tree measured first, before the directory it runs in
import kafkasec
from kafkasec import AclBinding
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import KafkaConnection
from kafkasec.server.gateway import Gateway, GatewayEndpoint
import server_support
from gateway_support import gateway_security
""" + MEASURE + r"""
def main():
    state = os.path.join(tempfile.mkdtemp(), "state.db")
    writer = gateway_security(state, UPSTREAM)
    server_support.add_users(writer)
    writer.create_acls([AclBinding.of("TOPIC", "bench", "LITERAL", "User:alice", "*", operation, "ALLOW")
                        for operation in ("WRITE", "READ", "DESCRIBE")])
    for start in range(0, ACLS, 10_000):  # a state of some size: ACLs on other topics, for other users
        writer.create_acls([AclBinding.of("TOPIC", f"other-{n}", "LITERAL", f"User:user-{n % 1000}", "*", "READ", "ALLOW")
                            for n in range(start, min(ACLS, start + 10_000))])
    writer.close()
    del writer
    gc.collect()
    # The gateway opens the state as kafkasec serve does: loaded whole at start.
    security = gateway_security(state, UPSTREAM, **SETTINGS)
    loop = loop_in_thread()
    options = {}
    if METRICS:
        from kafkasec.server.metrics import ServerMetrics
        options["metrics"] = ServerMetrics(security)
        security.authorization.observe_results(options["metrics"].authorized)
    endpoint = asyncio.run_coroutine_threadsafe(GatewayEndpoint(security, Gateway(security), **options).start(), loop).result()
    asyncio.run_coroutine_threadsafe(create_topic(endpoint.host, endpoint.port, True), loop).result()
    # What kafkasec serve does to its process, where the tree measured does it: an earlier
    # commit's serve may have had none of these (no heap module) or only some.
    try:
        import kafkasec.server.heap as heap
    except ImportError:
        heap = None
    for tuning in ("freeze_startup_heap", "tune_allocator", "tune_collector"):
        if hasattr(heap, tuning):
            getattr(heap, tuning)(security.config)
    result = measured(endpoint.host, endpoint.port, {**LOAD, "login": True})
    assert kafkasec.__file__.startswith(TREE), (kafkasec.__file__, TREE)
    print(json.dumps(result))
    asyncio.run_coroutine_threadsafe(endpoint.stop(), loop).result()
    security.close()

main()
"""

BYTE_PIPE = r"""
import asyncio, datetime, gc, json, os, subprocess, sys, threading, time
sys.path[:0] = [TESTS]
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import KafkaConnection
""" + MEASURE + r"""
class Side(asyncio.Protocol):
    '''One end of a piped connection: what it receives is written to the other end, as is.'''
    def __init__(self):
        self.transport = self.other = None
        self.early = []  # what the client sent before the upstream connection was open
    def connection_made(self, transport):
        self.transport = transport
    def data_received(self, data):
        if self.other is None:
            self.early.append(data)
        else:
            self.other.transport.write(data)
    def connection_lost(self, exc):
        if self.other is not None:
            self.other.transport.close()

async def serve(upstream_host, upstream_port):
    loop = asyncio.get_running_loop()
    def accepted():
        client = Side()
        async def connect():
            _, upstream = await loop.create_connection(Side, upstream_host, upstream_port)
            upstream.other, client.other = client, upstream
            for data in client.early:
                upstream.transport.write(data)
        loop.create_task(connect())
        return client
    return await loop.create_server(accepted, "127.0.0.1", 0)

def main():
    host, port = UPSTREAM.rsplit(":", 1)
    loop = loop_in_thread()
    server = asyncio.run_coroutine_threadsafe(serve(host, int(port)), loop).result()
    asyncio.run_coroutine_threadsafe(create_topic(host, int(port), False), loop).result()
    print(json.dumps(measured("127.0.0.1", server.sockets[0].getsockname()[1], {**LOAD, "login": False})))

main()
"""

CLIENT = r"""
import asyncio, datetime, json, sys, time
sys.path[:0] = [TESTS]
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import KafkaConnection
from record_batches import record_batch

host, port, load = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])

def produce(records):
    schema = wire.request_schema(ApiKey.PRODUCE, 9)
    topic_type = wire.item_type(schema, "topic_data")
    partition = wire.build(wire.item_type(topic_type, "partition_data"), index=0, records=record_batch(records))
    return wire.build(schema, acks=1, timeout=datetime.timedelta(seconds=30),
                      topic_data=(wire.build(topic_type, name="bench", partition_data=(partition,)),))

def fetch(offset, max_bytes):
    schema = wire.request_schema(ApiKey.FETCH, 12)
    topic_type = wire.item_type(schema, "topics")
    partition = wire.build(wire.item_type(topic_type, "partitions"), partition=0, current_leader_epoch=-1, fetch_offset=offset,
                           last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=max_bytes)
    # Answered at once when the topic has records; Tansu answers nothing to a max_wait of 0.
    return wire.build(schema, replica_id=-1, max_wait=datetime.timedelta(milliseconds=100), min_bytes=1, max_bytes=max_bytes,
                      session_epoch=-1, topics=(wire.build(topic_type, topic="bench", partitions=(partition,)),))

SINGLE = produce([(None, bytes(100))])
BATCH = produce([(None, bytes(1024))] * load["batch_records"])

def request_frame(body):
    return wire.size_prefixed(wire.encode_request(body, correlation_id=1, client_id="bench"))

async def fetch_frame(connection):
    # A Fetch of the records that a few batched Produce requests of this connection write now.
    written = [await connection.request(BATCH) for _ in range(-(-load["fetch_bytes"] // (1024 * load["batch_records"])))]
    return request_frame(fetch(written[0].responses[0].partition_responses[0].base_offset, load["fetch_bytes"]))

async def connection_load(connection, frame, requests, in_flight):
    reader, writer = connection.streams()
    window = asyncio.Semaphore(in_flight)
    async def read_answers():
        for _ in range(requests):
            size = int.from_bytes(await reader.readexactly(4), "big")
            await reader.readexactly(size)
            answered.append(size)
            window.release()
    answers = asyncio.ensure_future(read_answers())
    for _ in range(requests):
        await window.acquire()
        writer.write(frame)
    await answers

answered = []  # the size of each answer

async def main():
    connections = [await KafkaConnection.open(host, port, client_id="bench") for _ in range(load["connections"])]
    for connection in connections:
        if load["login"]:
            await connection.login("SCRAM-SHA-256", "alice", "alice-secret")
    if load["request"] == "fetch":
        frames = [await fetch_frame(connection) for connection in connections]
    else:
        frames = [request_frame(SINGLE if load["request"] == "single" else BATCH)] * len(connections)
    await asyncio.gather(*(connection_load(c, f, load["warmup"], load["in_flight"]) for c, f in zip(connections, frames)))
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    await asyncio.gather(*(connection_load(c, f, load["requests"], load["in_flight"]) for c, f in zip(connections, frames)))
    wall = time.perf_counter() - started
    measured = answered[load["warmup"] * len(connections):]
    print(json.dumps({"requests": load["requests"] * len(connections), "wall_s": wall,
                      "answer_bytes": sum(measured) / len(measured)}), flush=True)

asyncio.run(main())
"""


class Configuration(NamedTuple):
    """What one measurement runs: the gateway of a tree, or (``tree`` None) the byte pipe."""

    tree_name: str
    tree: Path | None
    event_loop: str
    metrics: bool = False
    gc_freeze: bool = True
    malloc_tuned: bool = True

    @property
    def settings(self) -> dict[str, str]:
        """The gateway's settings that the comparisons turn off: none for an earlier commit,
        which may not know them (it runs as its serve did)."""
        if self.tree != ROOT:
            return {}
        return {GC_FREEZE: str(self.gc_freeze).lower(),
                MMAP_THRESHOLD: str(DEFAULT_MMAP_THRESHOLD if self.malloc_tuned else 0)}

    @property
    def label(self) -> str:
        if self.tree is None:
            return f"byte pipe | {self.event_loop} | - | - | -"
        if self.tree != ROOT:  # an earlier commit, as its serve ran
            return f"{self.tree_name} | {self.event_loop} | off | - | -"
        return " | ".join((self.tree_name, self.event_loop, *("on" if chosen else "off" for chosen in
                                                              (self.metrics, self.gc_freeze, self.malloc_tuned))))


def measure(configuration: Configuration, upstream: str, load: dict, acls: int) -> dict:
    """One child process: ``configuration``'s server under ``load`` (a gateway's state holding
    ``acls`` more ACLs), its CPU per request."""
    tree = configuration.tree or ROOT
    constants = (f"TREE = {str(tree)!r}\nTESTS = {str(ROOT / 'tests')!r}\nUPSTREAM = {upstream!r}\n"
                 f"EVENT_LOOP = {configuration.event_loop!r}\nMETRICS = {configuration.metrics!r}\n"
                 f"SETTINGS = {configuration.settings!r}\nLOAD = {load!r}\nACLS = {acls!r}\n")
    client = f"TESTS = {str(ROOT / 'tests')!r}\n" + CLIENT
    script = constants + f"CLIENT = {client!r}\n" + (GATEWAY if configuration.tree is not None else BYTE_PIPE)
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, timeout=600,
                          cwd=tree)
    if done.returncode != 0:
        raise RuntimeError(f"the measurement failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def configurations(args, trees: dict[str, Path]) -> list[Configuration]:
    """Every tree on every event loop; metrics and the heap's freeze both ways where asked
    (this tree's only: an earlier commit is measured as it was); the byte pipe last."""
    chosen = []
    for tree_name, tree in trees.items():
        for event_loop in args.event_loop:
            for metrics in (False, True) if args.compare_metrics and tree == ROOT else (False,):
                for gc_freeze in (True, False) if args.compare_gc_freeze and tree == ROOT else (True,):
                    for malloc_tuned in (True, False) if args.compare_malloc and tree == ROOT else (True,):
                        chosen.append(Configuration(tree_name, tree, event_loop, metrics, gc_freeze, malloc_tuned))
    if args.byte_pipe:
        chosen += [Configuration("byte pipe", None, event_loop) for event_loop in args.event_loop]
    return chosen


def run(args, trees: dict[str, Path]) -> None:
    single = {"request": "single", "batch_records": args.batch_records, "fetch_bytes": args.fetch_bytes}
    large = {**single, "connections": 1, "in_flight": args.in_flight, "requests": max(1, args.requests // 3),
             "warmup": max(1, args.warmup // 3)}
    loads = {
        "one at a time": {**single, "connections": 1, "in_flight": 1, "requests": args.requests, "warmup": args.warmup},
        "pipelined": {**single, "connections": args.connections, "in_flight": args.in_flight,
                      "requests": args.requests, "warmup": args.warmup},
        "batched produce": {**large, "request": "batch"},
        "fetch": {**large, "request": "fetch"},
    }
    loads = {name: load for name, load in loads.items() if name in (args.load or loads)}
    measured = configurations(args, trees)
    samples: dict[tuple[str, Configuration], list[dict]] = {(load, c): [] for load in loads for c in measured}
    with TansuBroker() as tansu:
        for _ in range(args.rounds):
            for load_name, load in loads.items():
                for configuration in measured:
                    samples[(load_name, configuration)].append(measure(configuration, tansu.bootstrap, load, args.acls))
    print(f"machine: {machine()}")
    print(f"{args.rounds} rounds; {args.requests} single-record Produce requests per connection; pipelined: "
          f"{args.connections} connections x {args.in_flight} in flight; {args.acls:,} more ACLs in the state\n")
    print("| load | tree | event loop | metrics | gc freeze | malloc tuned | CPU µs/request | ratio | requests/s | wall µs/request "
          "| KiB/answer | GC collections in the run | a full collection's pause, ms |")
    print("|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for load_name in loads:
        first = None
        for configuration in measured:
            runs = samples[(load_name, configuration)]
            cpu = statistics.median(run["cpu_us"] for run in runs)
            first = first or cpu
            rate = statistics.median(run["rate"] for run in runs)
            wall = statistics.median(run["wall_us"] for run in runs)
            ratio = f"{cpu / first:.2f}x" if first else "n/a"  # a short run may read no CPU tick at all
            collections = statistics.median(run["collections"] for run in runs)
            pause = statistics.median(run["full_collection_ms"] for run in runs)
            answer = statistics.median(run["answer_bytes"] for run in runs) / 1024
            print(f"| {load_name} | {configuration.label} | {cpu:.0f} | {ratio} | {rate:,.0f} | {wall:.0f} | "
                  f"{answer:,.1f} | {collections:.0f} | {pause:.1f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=3000, help="measured requests per connection")
    parser.add_argument("--warmup", type=int, default=300, help="requests per connection before the measured ones")
    parser.add_argument("--connections", type=int, default=8, help="connections of the pipelined load")
    parser.add_argument("--in-flight", type=int, default=5, help="requests outstanding per connection, pipelined")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--event-loop", action="append", choices=("asyncio", "uvloop"),
                        help="the event loops to measure (default: both)")
    parser.add_argument("--rev", help="also measure this earlier commit (a git worktree of it), side by side")
    parser.add_argument("--compare-metrics", action="store_true",
                        help="each configuration with its Prometheus metrics off and on (this tree's ServerMetrics)")
    parser.add_argument("--compare-gc-freeze", action="store_true",
                        help="each configuration with kafkasec.server.gc.freeze on and off (this tree's)")
    parser.add_argument("--load", action="append", choices=("one at a time", "pipelined", "batched produce", "fetch"),
                        help="the loads to measure (default: all)")
    parser.add_argument("--batch-records", type=int, default=64,
                        help="records of 1 KiB in each request of the batched produce load")
    parser.add_argument("--fetch-bytes", type=int, default=1 << 20,
                        help="max_bytes of each Fetch of the fetch load (from offset 0 of the topic the produce loads fill)")
    parser.add_argument("--acls", type=int, default=0,
                        help="ACLs on other topics for other users in the gateway's state (a state of some size)")
    parser.add_argument("--compare-malloc", action="store_true",
                        help="each configuration with kafkasec.server.malloc.mmap.threshold at its default and 0 (this tree's)")
    parser.add_argument("--byte-pipe", action="store_true",
                        help="also a proxy that copies bytes and does nothing else: the floor of any proxy's cost here")
    args = parser.parse_args(argv)
    args.event_loop = args.event_loop or ["asyncio", "uvloop"]
    if args.rev is None:
        run(args, {"this tree": ROOT})
        return 0
    with revision_worktree(args.rev) as worktree:
        run(args, {args.rev: worktree, "this tree": ROOT})
    return 0


if __name__ == "__main__":
    sys.exit(main())
