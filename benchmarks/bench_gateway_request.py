"""The gateway's CPU per request: single-record Produce requests through a gateway in front of
Tansu, the gateway's process CPU (user and system) divided by the requests.

    python benchmarks/bench_gateway_request.py                       # this tree, asyncio and uvloop
    python benchmarks/bench_gateway_request.py --rev 8e70bcc         # and an earlier commit, side by side
    python benchmarks/bench_gateway_request.py --requests 500 --rounds 1   # quick

Each measurement is a child process that runs the gateway (``GatewayEndpoint``, SASL_PLAINTEXT,
the user ``alice`` allowed WRITE on the topic ``bench`` by an ACL, so every request is really
authorized) on its event loop in a background thread, in front of one Tansu that all share; the
client is another process, so its work is not counted. Two loads:

- ``one at a time``: one connection sends a Produce (v9, acks=1, one record of 100 bytes) and
  waits for its answer before the next, as a producer with linger.ms=0 at a low rate does;
- ``pipelined``: ``--connections`` connections each keep ``--in-flight`` requests outstanding,
  as fast as the gateway answers (a saturating rate).

``--compare-metrics`` measures each configuration with the gateway's Prometheus metrics
(``ServerMetrics``, every decision and request counted) off and on.

The figure is the gateway process's CPU time (os.times: user + system, every thread) over the
requests, after a warm-up. The configurations (``--event-loop`` choices, and ``--rev``'s tree)
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

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]

from bench_embedded_broker import machine  # noqa: E402
from compare_revisions import IMPORT_TREE_UNDER_TEST, revision_worktree  # noqa: E402

from tansu_support import TansuBroker  # noqa: E402

GATEWAY = IMPORT_TREE_UNDER_TEST + r"""
import asyncio, datetime, json, os, subprocess, sys, tempfile
sys.path[:0] = [TREE, TESTS]  # the tree measured first, before the directory it runs in
import kafkasec
from kafkasec import AclBinding
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.server import KafkaConnection
from kafkasec.server.gateway import Gateway, GatewayEndpoint
import server_support
from gateway_support import gateway_security

def new_loop():
    if EVENT_LOOP == "uvloop":
        import uvloop
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()

async def create_topic(endpoint):
    connection = await KafkaConnection.open(endpoint.host, endpoint.port)
    async with connection:
        await connection.login("SCRAM-SHA-256", "admin", "admin-secret")
        schema = wire.request_schema(ApiKey.CREATE_TOPICS, 5)
        topic = wire.build(wire.item_type(schema, "topics"), name="bench", num_partitions=1, replication_factor=1)
        await connection.request(wire.build(schema, topics=(topic,), timeout=datetime.timedelta(seconds=10)))

def main():
    directory = tempfile.mkdtemp()
    security = gateway_security(os.path.join(directory, "state.db"), UPSTREAM)
    server_support.add_users(security)
    security.create_acls([AclBinding.of("TOPIC", "bench", "LITERAL", "User:alice", "*", operation, "ALLOW")
                          for operation in ("WRITE", "DESCRIBE")])
    loop = new_loop()
    import threading
    threading.Thread(target=loop.run_forever, daemon=True).start()
    options = {}
    if METRICS:
        from kafkasec.server.metrics import ServerMetrics
        options["metrics"] = ServerMetrics(security)
        security.authorization.observe_results(options["metrics"].authorized)
    endpoint = asyncio.run_coroutine_threadsafe(GatewayEndpoint(security, Gateway(security), **options).start(), loop).result()
    asyncio.run_coroutine_threadsafe(create_topic(endpoint), loop).result()
    client = subprocess.Popen([sys.executable, "-c", CLIENT, endpoint.host, str(endpoint.port), json.dumps(LOAD)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert client.stdout.readline().strip() == "ready"
    before = os.times()
    client.stdin.write("go\n")
    client.stdin.flush()
    result = json.loads(client.stdout.readline())
    after = os.times()
    client.wait()
    cpu = (after.user - before.user) + (after.system - before.system)
    assert kafkasec.__file__.startswith(TREE), (kafkasec.__file__, TREE)
    print(json.dumps({"cpu_us": cpu * 1e6 / result["requests"], "wall_us": result["wall_s"] * 1e6 / result["requests"],
                      "rate": result["requests"] / result["wall_s"]}))
    asyncio.run_coroutine_threadsafe(endpoint.stop(), loop).result()
    security.close()

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
schema = wire.request_schema(ApiKey.PRODUCE, 9)
topic_type = wire.item_type(schema, "topic_data")
partition = wire.build(wire.item_type(topic_type, "partition_data"), index=0, records=record_batch([(None, bytes(100))]))
body = wire.build(schema, acks=1, timeout=datetime.timedelta(seconds=30),
                  topic_data=(wire.build(topic_type, name="bench", partition_data=(partition,)),))
FRAME = wire.size_prefixed(wire.encode_request(body, correlation_id=1, client_id="bench"))

async def connection_load(connection, requests, in_flight):
    reader, writer = connection.streams()
    window = asyncio.Semaphore(in_flight)
    async def read_answers():
        for _ in range(requests):
            size = int.from_bytes(await reader.readexactly(4), "big")
            await reader.readexactly(size)
            window.release()
    answers = asyncio.ensure_future(read_answers())
    for _ in range(requests):
        await window.acquire()
        writer.write(FRAME)
    await answers

async def main():
    connections = [await KafkaConnection.open(host, port, client_id="bench") for _ in range(load["connections"])]
    for connection in connections:
        await connection.login("SCRAM-SHA-256", "alice", "alice-secret")
    await asyncio.gather(*(connection_load(c, load["warmup"], load["in_flight"]) for c in connections))
    print("ready", flush=True)
    sys.stdin.readline()
    started = time.perf_counter()
    await asyncio.gather(*(connection_load(c, load["requests"], load["in_flight"]) for c in connections))
    wall = time.perf_counter() - started
    print(json.dumps({"requests": load["requests"] * len(connections), "wall_s": wall}), flush=True)

asyncio.run(main())
"""


def measure(tree: Path, upstream: str, event_loop: str, metrics: bool, load: dict) -> dict:
    """One child process: the gateway of ``tree`` on ``event_loop`` (with its metrics or not) under ``load``."""
    constants = (f"TREE = {str(tree)!r}\nTESTS = {str(ROOT / 'tests')!r}\nUPSTREAM = {upstream!r}\n"
                 f"EVENT_LOOP = {event_loop!r}\nMETRICS = {metrics!r}\nLOAD = {load!r}\n")
    client = f"TESTS = {str(ROOT / 'tests')!r}\n" + CLIENT
    script = constants + f"CLIENT = {client!r}\n" + GATEWAY
    environment = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment, timeout=600,
                          cwd=tree)
    if done.returncode != 0:
        raise RuntimeError(f"the measurement failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(args, trees: dict[str, Path]) -> None:
    loads = {
        "one at a time": {"connections": 1, "in_flight": 1, "requests": args.requests, "warmup": args.warmup},
        "pipelined": {"connections": args.connections, "in_flight": args.in_flight,
                      "requests": args.requests, "warmup": args.warmup},
    }
    metrics_choices = (False, True) if args.compare_metrics else (False,)
    # Metrics are this tree's: an earlier commit is measured without them.
    configurations = [(tree_name, event_loop, metrics) for tree_name in trees for event_loop in args.event_loop
                      for metrics in metrics_choices if not metrics or trees[tree_name] == ROOT]
    samples: dict[tuple, list[dict]] = {(load, *configuration): [] for load in loads for configuration in configurations}
    with TansuBroker() as tansu:
        for _ in range(args.rounds):
            for load_name, load in loads.items():
                for tree_name, event_loop, metrics in configurations:
                    samples[(load_name, tree_name, event_loop, metrics)].append(
                        measure(trees[tree_name], tansu.bootstrap, event_loop, metrics, load))
    print(f"machine: {machine()}")
    print(f"{args.rounds} rounds; {args.requests} single-record Produce requests per connection; pipelined: "
          f"{args.connections} connections x {args.in_flight} in flight\n")
    print("| load | tree | event loop | metrics | gateway CPU µs/request | ratio | requests/s | wall µs/request |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for load_name in loads:
        first = None
        for tree_name, event_loop, metrics in configurations:
            runs = samples[(load_name, tree_name, event_loop, metrics)]
            cpu = statistics.median(run["cpu_us"] for run in runs)
            first = first or cpu
            rate = statistics.median(run["rate"] for run in runs)
            wall = statistics.median(run["wall_us"] for run in runs)
            ratio = f"{cpu / first:.2f}x" if first else "n/a"  # a short run may read no CPU tick at all
            print(f"| {load_name} | {tree_name} | {event_loop} | {'on' if metrics else 'off'} | {cpu:.0f} | "
                  f"{ratio} | {rate:,.0f} | {wall:.0f} |")


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
