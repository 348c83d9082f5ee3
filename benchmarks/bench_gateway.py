"""Kafka clients against a broker, and later through the gateway in front of it: confluent-kafka's
produce and consume throughput, and its per-record delivery latency.

    python benchmarks/bench_gateway.py --tansu                          # a Tansu of its own, directly
    python benchmarks/bench_gateway.py --bootstrap 127.0.0.1:9092       # any broker (or gateway)
    python benchmarks/bench_gateway.py --tansu --compare-gateway        # directly, then through `kafkasec serve --upstream`
    python benchmarks/bench_gateway.py --tansu --records 20000 --latency-seconds 3   # a quick run

Measured, each on a topic of its own (created through the bootstrap given, ``--partitions``):

- produce: ``--records`` records of ``--record-size`` bytes (200,000 of 1 KiB), linger.ms=5,
  ``--acks`` (all), from the first produce() until flush() returns with every delivery confirmed;
- consume: a consumer reading those records back from the beginning, ``--consume-mode assign``
  (all partitions assigned) or ``group`` (subscribed; session.timeout.ms=6000, since Tansu holds
  a JoinGroup for half the session timeout); the rate counts from assign()/subscribe() to the
  last record, and the time to the first record (a group's join, in group mode) is shown beside it;
- latency: single records at acks=1 and linger.ms=0 at a steady ``--latency-rate`` (1,000/s) for
  ``--latency-seconds`` (10 s), each timed from produce() to its delivery callback: p50, p99, max.

``measure(bootstrap, options)`` runs all three against one bootstrap string, so the gateway run
is the same function on the gateway's address. Prints a Markdown table and the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import importlib.metadata
import os
import platform
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tansu_support import TansuBroker, tansu_binary  # noqa: E402

TIMEOUT = 60.0


@dataclasses.dataclass(frozen=True)
class Options:
    records: int = 200_000
    record_size: int = 1024
    acks: str = "all"
    partitions: int = 3
    consume_mode: str = "assign"
    latency_rate: int = 1000
    latency_seconds: float = 10.0


@dataclasses.dataclass(frozen=True)
class Results:
    produce_per_second: float
    consume_per_second: float
    consume_first_record_seconds: float
    latency_ms: dict[str, float]  # p50, p99, max
    latency_records: int

    def rows(self, record_size: int) -> list[tuple[str, str]]:
        megabytes = record_size / 1e6
        return [
            ("produce, records/s", f"{self.produce_per_second:,.0f} ({self.produce_per_second * megabytes:,.1f} MB/s)"),
            ("consume, records/s", f"{self.consume_per_second:,.0f} ({self.consume_per_second * megabytes:,.1f} MB/s)"),
            ("consume, time to the first record", f"{self.consume_first_record_seconds:.2f} s"),
            ("delivery latency p50 (acks=1)", f"{self.latency_ms['p50']:.2f} ms"),
            ("delivery latency p99 (acks=1)", f"{self.latency_ms['p99']:.2f} ms"),
            ("delivery latency max (acks=1)", f"{self.latency_ms['max']:.2f} ms"),
            ("latency records", f"{self.latency_records:,}"),
        ]


def create_topic(bootstrap: str, partitions: int, purpose: str) -> str:
    name = f"bench-{purpose}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT)
    return name


def produce_throughput(bootstrap: str, topic: str, options: Options) -> float:
    """Records per second, from the first produce() until every delivery is confirmed."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": options.acks, "linger.ms": 5})
    failures: list[KafkaError] = []

    def delivered(error, _message):
        if error is not None:
            failures.append(error)

    value = os.urandom(options.record_size)
    started = time.perf_counter()
    for _ in range(options.records):
        while True:
            try:
                producer.produce(topic, value=value, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.01)
        producer.poll(0)
    left = producer.flush(TIMEOUT)
    elapsed = time.perf_counter() - started
    if left or failures:
        raise RuntimeError(f"produce: {left} records undelivered, {len(failures)} failed (first: {failures[:1]})")
    return options.records / elapsed


def consume_throughput(bootstrap: str, topic: str, options: Options) -> tuple[float, float]:
    """(records per second from assign() or subscribe() to the last record, seconds until the first).

    The rate counts the whole read, first fetches and (in a group) the join included: from the
    first record on, librdkafka hands over what it had prefetched meanwhile, which would flatter it.
    """
    config = {"bootstrap.servers": bootstrap, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
              "enable.auto.commit": False, "auto.offset.reset": "earliest", "session.timeout.ms": 6000}
    consumer = Consumer(config)
    started = time.perf_counter()
    if options.consume_mode == "group":
        consumer.subscribe([topic])
    else:
        consumer.assign([TopicPartition(topic, partition, OFFSET_BEGINNING) for partition in range(options.partitions)])
    received, first = 0, None
    deadline = started + TIMEOUT + options.records / 1000
    try:
        while received < options.records:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"consume: {received} of {options.records} records before the deadline")
            for message in consumer.consume(num_messages=10_000, timeout=1.0):
                if message.error() is not None:
                    raise RuntimeError(f"consume: {message.error()}")
                if first is None:
                    first = time.perf_counter()
                received += 1
        finished = time.perf_counter()
    finally:
        consumer.close()
    assert first is not None
    return received / (finished - started), first - started


def delivery_latency(bootstrap: str, topic: str, options: Options) -> tuple[dict[str, float], int]:
    """Milliseconds from produce() to the delivery callback (p50, p99, max) of single records at
    acks=1, produced at a steady rate; poll() waits between sends so callbacks run on time."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    latencies: list[float] = []
    failures: list[KafkaError] = []

    def delivered(sent_at, error, _message):
        if error is not None:
            failures.append(error)
        else:
            latencies.append(time.perf_counter() - sent_at)

    value = os.urandom(options.record_size)
    producer.produce(topic, value=value)  # the connection and metadata, before the clock starts
    producer.flush(TIMEOUT)
    count = int(options.latency_rate * options.latency_seconds)
    interval = 1.0 / options.latency_rate
    started = time.perf_counter()
    for index in range(count):
        due = started + index * interval
        while (wait := due - time.perf_counter()) > 0:
            producer.poll(wait)
        producer.produce(topic, value=value, on_delivery=functools.partial(delivered, time.perf_counter()))
        producer.poll(0)
    if producer.flush(TIMEOUT) or failures:
        raise RuntimeError(f"latency: {len(failures)} failed deliveries (first: {failures[:1]})")
    milliseconds = sorted(latency * 1000 for latency in latencies)
    percentiles = statistics.quantiles(milliseconds, n=100, method="inclusive")
    return {"p50": percentiles[49], "p99": percentiles[98], "max": milliseconds[-1]}, len(milliseconds)


def measure(bootstrap: str, options: Options) -> Results:
    """Produce, consume and latency against ``bootstrap``: a broker, or the gateway in front of one."""
    topic = create_topic(bootstrap, options.partitions, "throughput")
    produce_rate = produce_throughput(bootstrap, topic, options)
    consume_rate, first_record = consume_throughput(bootstrap, topic, options)
    latency_topic = create_topic(bootstrap, options.partitions, "latency")
    latency, latency_records = delivery_latency(bootstrap, latency_topic, options)
    return Results(produce_rate, consume_rate, first_record, latency, latency_records)


# --- the gateway -------------------------------------------------------------------------------


class GatewayUnavailable(RuntimeError):
    """``kafkasec serve --upstream`` did not start (not written yet, or refused these arguments)."""


def start_gateway(upstream: str) -> tuple[subprocess.Popen, str]:
    """``kafkasec serve`` in front of ``upstream``, on a free loopback port: (process, its bootstrap).

    TO BE ADJUSTED when the gateway lands (arguments, state and login settings, how it reports
    its address). Written against the planned command line; ``python -m kafkasec`` needs a
    ``kafkasec/__main__.py`` (today the CLI runs as ``python -m kafkasec.cli``). The address is
    read from the line ``kafkasec serve`` prints today: "kafkasec serve: <listener> listening on
    HOST:PORT".
    """
    command = [sys.executable, "-m", "kafkasec", "serve", "--upstream", upstream,
               "--listeners", "PLAINTEXT://127.0.0.1:0"]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stdout is not None and process.stderr is not None
    for line in process.stdout:
        if found := re.search(r"listening on (\S+:\d+)", line):
            return process, found.group(1)
    process.wait()
    raise GatewayUnavailable(f"{' '.join(command)} exited with status {process.returncode}: {process.stderr.read()[-2000:]}")


def stop_gateway(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- the report --------------------------------------------------------------------------------


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or platform.machine())
    nproc = len(os.sched_getaffinity(0))
    tansu = subprocess.run([str(tansu_binary()), "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{cpu}, nproc {nproc}, Python {platform.python_version()}, "
            f"confluent-kafka {importlib.metadata.version('confluent-kafka')} "
            f"(librdkafka {libversion()[0]}), {tansu}, load {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


def report(results: dict[str, Results], options: Options) -> str:
    labels = list(results)
    lines = [f"| {options.records:,} records of {options.record_size} B, acks={options.acks}, linger.ms=5, "
             f"{options.partitions} partitions, consume by {options.consume_mode}; latency "
             f"{options.latency_rate:,}/s for {options.latency_seconds:g} s | " + " | ".join(labels) + " |",
             "|---|" + "---|" * len(labels)]
    rows = [result.rows(options.record_size) for result in results.values()]
    for index, (name, _value) in enumerate(rows[0]):
        lines.append(f"| {name} | " + " | ".join(row[index][1] for row in rows) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--bootstrap", metavar="HOST:PORT", help="a running broker (or gateway)")
    target.add_argument("--tansu", action="store_true", help="start a Tansu of its own (tests/tansu_support.py)")
    parser.add_argument("--compare-gateway", action="store_true",
                        help="also run through `kafkasec serve --upstream` in front of the broker, side by side")
    parser.add_argument("--records", type=int, default=Options.records)
    parser.add_argument("--record-size", type=int, default=Options.record_size, help="bytes (default: 1024)")
    parser.add_argument("--acks", choices=("all", "1", "0"), default=Options.acks, help="for produce (default: all)")
    parser.add_argument("--partitions", type=int, default=Options.partitions)
    parser.add_argument("--consume-mode", choices=("assign", "group"), default=Options.consume_mode)
    parser.add_argument("--latency-rate", type=int, default=Options.latency_rate, help="records/s (default: 1000)")
    parser.add_argument("--latency-seconds", type=float, default=Options.latency_seconds)
    args = parser.parse_args(argv)
    options = Options(args.records, args.record_size, args.acks, args.partitions, args.consume_mode,
                      args.latency_rate, args.latency_seconds)

    with contextlib.ExitStack() as stack:
        upstream = args.bootstrap or stack.enter_context(TansuBroker()).bootstrap
        results = {("Tansu, directly" if args.tansu else upstream): measure(upstream, options)}
        if args.compare_gateway:
            try:
                process, gateway = start_gateway(upstream)
            except GatewayUnavailable as error:
                print(f"no gateway run: {error}", file=sys.stderr)
            else:
                stack.callback(stop_gateway, process)
                results["through the gateway"] = measure(gateway, options)
    print(report(results, options))
    print(f"\nMachine: {machine()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
