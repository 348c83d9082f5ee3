"""Kafka clients against a broker, and through the gateway in front of it: confluent-kafka's
produce and consume throughput, and its per-record delivery latency.

    python benchmarks/bench_gateway.py --tansu                          # a Tansu of its own, directly
    python benchmarks/bench_gateway.py --bootstrap 127.0.0.1:9092       # any broker (or gateway)
    python benchmarks/bench_gateway.py --tansu --compare-gateway        # directly and through `kafkasec serve --upstream`, 3 rounds
    python benchmarks/bench_gateway.py --tansu --compare-gateway --records 20000 --latency-seconds 3 --rounds 1  # quick
    python benchmarks/bench_gateway.py --tansu --scale-out              # two gateway processes (SO_REUSEPORT) against one
    python benchmarks/bench_gateway.py --tansu --compare-gateway --py-spy /tmp/prof   # and a profiled extra run
    python benchmarks/bench_gateway.py --tansu --omb                    # the OpenMessaging-style workload, direct and gateway
    python benchmarks/bench_gateway.py --tansu --omb --omb-rate 100 --omb-seconds 10 --omb-warmup-seconds 3 --quiet -1  # a 2-core box

Measured, each on a topic of its own (created through the bootstrap given, ``--partitions``):

- produce: ``--records`` records of ``--record-size`` bytes (200,000 of 1 KiB), linger.ms=5,
  ``--acks`` (all), from the first produce() until flush() returns with every delivery confirmed;
- consume: a consumer reading those records back from the beginning, ``--consume-mode assign``
  (all partitions assigned) or ``group`` (subscribed; session.timeout.ms=6000, since Tansu holds
  a JoinGroup for half the session timeout); the rate counts from assign()/subscribe() to the
  last record, and the time to the first record (a group's join, in group mode) is shown beside it;
- latency: single records at acks=1 and linger.ms=0 at a steady ``--latency-rate`` (1,000/s) for
  ``--latency-seconds`` (10 s), each timed from produce() to the broker's acknowledgement
  (librdkafka's ``Message.latency()``; the loop sleeps 50 µs and polls between sends): p50,
  p99, max.

``measure(bootstrap, options)`` runs all three against one bootstrap string, so the gateway run
is the same function on the gateway's address.

``--compare-gateway`` starts one ``kafkasec serve --upstream`` process in front of the broker
(SASL_PLAINTEXT, SCRAM-SHA-256, the user ``bench``: not a super user, allowed by a PREFIXED
ACL on the topics ``bench*`` and READ on the groups ``bench*``, so every request is really
authorized) and alternates direct and gateway runs for ``--rounds`` rounds (the order flips
each round): the ratio of each round, and their median. The direct runs are PLAINTEXT (Tansu has
no SASL). The CPU seconds the gateway, the broker and this process spent are read from /proc
(psutil) around every produce, consume and latency run, and so is what the rest of the machine
spent meanwhile ("others": another job on a shared box). Before each run the script waits until
the machine is quiet (``--quiet``).

``--scale-out`` starts the gateway on fixed ports with ``kafkasec.server.reuse.port=true``, as
one process and as two (alternating, ``--rounds``), and produces from two producer processes at
once (``--scale-records`` each), whose broker connections the kernel spreads over the gateway
processes (a pairing that lands both on one process is started again; the spread is reported):
records/s, and the gateway processes' CPU seconds per record. Two producers straight to the
broker are measured too, as the ceiling.

``--omb``: an OpenMessaging Benchmark-style workload (the shape of Kroxylicious's published
proxy benchmark, so that the two read side by side), through the same gateway process and
compare() as ``--compare-gateway``, alternating direct and gateway runs for ``--rounds``:
``--omb-topics`` (10) topics of one partition, ``--record-size`` (1 KiB) records, one producer
per topic at a fixed ``--omb-rate`` (5,000 records/s per topic: 50,000/s, ~51 MB/s in) with OMB's
Kafka driver settings (acks=all, linger.ms=1, batch.size=131072), and one consumer in a group of
its own (session.timeout.ms=6000) subscribed to every topic, committing after each poll as
OMB's does; it has joined before the producers start. The window of ``--omb-seconds`` (60)
after ``--omb-warmup-seconds`` (5) is measured: the rates achieved, the publish latency
(produce() to the acknowledgement, librdkafka's ``Message.latency()``: avg, p50, p99) and the
end-to-end latency (produce() to the consumer's poll, from the send time written in the first
8 bytes of each value), and the gateway's CPU in millicores per MB/s of traffic in and out
(payload published plus consumed, per second: Kroxylicious's measure). On a machine with few
cores lower the rate: the clients, Tansu and the gateway share them.

The consumer's fetch.wait.max.ms is ``--omb-fetch-wait-ms`` (10), not the clients' and OMB's
500: Kafka answers a waiting Fetch as soon as records arrive, but Tansu 0.6 seemed to hold each for
most of its wait here, so with 500 the end-to-end latency was mostly that wait (directly, 1,000
records/s on the 2-core box: avg 115 ms at 500, 24 ms at 100, 4.6 ms at 10, with Tansu's CPU
0.35, 0.41 and 0.84 cores). A short wait comes closer to Kafka's behaviour, at the price of
more Fetch requests.

``--py-spy DIR``: after the measured rounds, more gateway runs with ``py-spy record`` attached
to the gateway process (not counted in the tables): produce and consume, each repeated for 3 s,
and one latency run; the raw samples go to DIR and the functions with the most samples (on the
stack, and at its top) are printed.

Prints Markdown tables and the machine.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import importlib.metadata
import multiprocessing
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Callable, Mapping, TypeVar

import psutil
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition, libversion
from confluent_kafka.admin import AdminClient, NewTopic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from tansu_support import TansuBroker, tansu_binary  # noqa: E402

TIMEOUT = 60.0
REPOSITORY = Path(__file__).resolve().parent.parent

USER, PASSWORD, MECHANISM = "bench", "bench-secret", "SCRAM-SHA-256"
SASL_CLIENT = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": MECHANISM,
               "sasl.username": USER, "sasl.password": PASSWORD}
"""How the benchmark's clients log in to the gateway."""

TANSU_NODE_ID = 111

Measured = TypeVar("Measured", "Results", "OmbResults")
"""What one run of compare() against one target gives: measure()'s Results or omb_workload()'s."""


@dataclasses.dataclass(frozen=True)
class Options:
    records: int = 200_000
    record_size: int = 1024
    acks: str = "all"
    partitions: int = 3
    consume_mode: str = "assign"
    latency_rate: int = 1000
    latency_seconds: float = 10.0
    linger_ms: int = 5
    omb_topics: int = 10
    omb_rate: int = 5000
    """Records per second per topic in --omb: 50,000/s over 10 topics, ~51 MB/s of 1 KiB records."""
    omb_seconds: float = 60.0
    omb_warmup_seconds: float = 5.0
    omb_fetch_wait_ms: int = 10
    """The consumer's fetch.wait.max.ms in --omb (librdkafka's default is 500): see the module's docstring."""


@dataclasses.dataclass(frozen=True)
class Results:
    produce_per_second: float
    consume_per_second: float
    consume_first_record_seconds: float
    latencies_ms: list[float]  # sorted
    cpu: dict[str, dict[str, float]] = dataclasses.field(default_factory=dict)
    """'produce' / 'consume' -> process name -> CPU seconds spent during it."""

    @property
    def latency_ms(self) -> dict[str, float]:
        return percentiles(self.latencies_ms)

    @property
    def latency_records(self) -> int:
        return len(self.latencies_ms)

    def summary(self) -> str:
        latency = self.latency_ms
        return (f"produce {self.produce_per_second:,.0f}/s, consume {self.consume_per_second:,.0f}/s, "
                f"latency p50 {latency['p50']:.2f} p99 {latency['p99']:.2f} ms")

    def rows(self, record_size: int) -> list[tuple[str, str]]:
        megabytes = record_size / 1e6
        latency = self.latency_ms
        return [
            ("produce, records/s", f"{self.produce_per_second:,.0f} ({self.produce_per_second * megabytes:,.1f} MB/s)"),
            ("consume, records/s", f"{self.consume_per_second:,.0f} ({self.consume_per_second * megabytes:,.1f} MB/s)"),
            ("consume, time to the first record", f"{self.consume_first_record_seconds:.2f} s"),
            ("delivery latency p50 (acks=1)", f"{latency['p50']:.2f} ms"),
            ("delivery latency p99 (acks=1)", f"{latency['p99']:.2f} ms"),
            ("delivery latency max (acks=1)", f"{latency['max']:.2f} ms"),
            ("latency records", f"{self.latency_records:,}"),
        ]


def percentiles(sorted_ms: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(sorted_ms, n=100, method="inclusive")
    return {"avg": statistics.fmean(sorted_ms), "p50": cuts[49], "p99": cuts[98], "max": sorted_ms[-1]}


# --- the clients -------------------------------------------------------------------------------


def create_topic(bootstrap: str, partitions: int, purpose: str, client: Mapping[str, str] = {}) -> str:
    name = f"bench-{purpose}-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap, **client})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(TIMEOUT)
    return name


def delete_topic(bootstrap: str, topic: str) -> None:
    """Drop a topic straight on the broker (Tansu keeps records in memory); best effort."""
    with contextlib.suppress(Exception):
        AdminClient({"bootstrap.servers": bootstrap}).delete_topics([topic])[topic].result(TIMEOUT)


def produce_throughput(bootstrap: str, topic: str, options: Options, client: Mapping[str, str] = {}) -> float:
    """Records per second, from the first produce() until every delivery is confirmed."""
    producer = Producer({"bootstrap.servers": bootstrap, **client, "acks": options.acks, "linger.ms": options.linger_ms})
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


def consume_throughput(bootstrap: str, topic: str, options: Options, client: Mapping[str, str] = {}) -> tuple[float, float]:
    """(records per second from assign() or subscribe() to the last record, seconds until the first).

    The rate counts the whole read, first fetches and (in a group) the join included: from the
    first record on, librdkafka hands over what it had prefetched meanwhile, which would flatter it.
    """
    config = {"bootstrap.servers": bootstrap, **client, "group.id": f"bench-{uuid.uuid4().hex[:8]}",
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


def delivery_latency(bootstrap: str, topic: str, options: Options, client: Mapping[str, str] = {}) -> list[float]:
    """Milliseconds from produce() to the broker's acknowledgement of single records at acks=1,
    produced at a steady rate, sorted (librdkafka's own time, ``Message.latency()``).

    Between sends the loop sleeps 50 µs at a time and polls. The first version polled with the
    time left (``poll(wait)``): poll takes whole milliseconds, so at 1,000 records/s every
    wait was ``poll(0)`` in a loop and the client spun a whole core, which on a 2-core machine
    it took from the broker and the gateway. Sleeping until the next send instead (one long
    wait) delays every record by about one interval: librdkafka hands an acknowledged record
    over only when the application polls (p50 1.0 ms, direct and through the gateway alike).
    Polling every ~50-100 µs gives the spinning loop's p50 within 0.1 ms at 0.15-0.2 core."""
    producer = Producer({"bootstrap.servers": bootstrap, **client, "acks": "1", "linger.ms": 0})
    latencies: list[float] = []
    failures: list[KafkaError] = []

    def delivered(error, message):
        if error is not None:
            failures.append(error)
        else:
            latencies.append(message.latency())

    value = os.urandom(options.record_size)
    producer.produce(topic, value=value)  # the connection and metadata, before the clock starts
    producer.flush(TIMEOUT)
    count = int(options.latency_rate * options.latency_seconds)
    interval = 1.0 / options.latency_rate
    started = time.perf_counter()
    for index in range(count):
        due = started + index * interval
        while (wait := due - time.perf_counter()) > 0:
            time.sleep(min(wait, 0.00005))
            producer.poll(0)
        producer.produce(topic, value=value, on_delivery=delivered)
        producer.poll(0)
    if producer.flush(TIMEOUT) or failures:
        raise RuntimeError(f"latency: {len(failures)} failed deliveries (first: {failures[:1]})")
    return sorted(latency * 1000 for latency in latencies)


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has been busy (every core; not idle, iowait or steal).

    The kernel counts these by sampling at each tick, and a process's own times more exactly,
    so "others" (this less the processes measured) is rough: within about ±0.3 cores here."""
    times = psutil.cpu_times()
    idle = times.idle + sum(getattr(times, name, 0.0) for name in ("iowait", "steal", "guest", "guest_nice"))
    return sum(times) - idle


def wait_for_quiet(cores: float, timeout: float, progress=None) -> float:
    """Wait until the machine was busy less than ``cores`` over one second (nothing of this
    benchmark runs meanwhile: another job on a shared box), at most ``timeout`` seconds; the
    last second's load, in cores."""
    deadline = time.monotonic() + timeout
    told = False
    while True:
        before = machine_busy_seconds()
        time.sleep(1.0)
        load = machine_busy_seconds() - before
        if load < cores or time.monotonic() > deadline:
            return load
        if progress is not None and not told:
            progress(f"waiting for the machine to quieten (busy {load:.2f} cores, at most {timeout:g} s)")
            told = True


class CpuMeter:
    """CPU seconds (user + system, every thread) that named processes spend between two reads,
    and "others": what the rest of the machine spent meanwhile (another job on a shared box)."""

    def __init__(self, processes: Mapping[str, int]):
        self.processes = {name: psutil.Process(pid) for name, pid in processes.items()}

    def read(self) -> dict[str, float]:
        seconds = {name: sum(process.cpu_times()[:2]) for name, process in self.processes.items()}
        seconds["others"] = machine_busy_seconds() - sum(seconds.values())
        return seconds

    @contextlib.contextmanager
    def measuring(self, into: dict[str, float]):
        before = self.read()
        yield
        after = self.read()
        into.update({name: after[name] - before[name] for name in before})


def measure(bootstrap: str, options: Options, client: Mapping[str, str] = {}, *,
            processes: Mapping[str, int] = {}, cleanup: str | None = None, latency: bool = True) -> Results:
    """Produce, consume and latency against ``bootstrap``: a broker, or the gateway in front of one.

    ``client``: the clients' login settings; ``processes``: name -> pid of the processes whose
    CPU time is read around produce and consume (this process is always read, as "clients");
    ``cleanup``: a broker address on which the topics are deleted afterwards."""
    meter = CpuMeter({"clients": os.getpid(), **processes})
    cpu: dict[str, dict[str, float]] = {"produce": {}, "consume": {}, "latency": {}}
    topic = create_topic(bootstrap, options.partitions, "throughput", client)
    with meter.measuring(cpu["produce"]):
        produce_rate = produce_throughput(bootstrap, topic, options, client)
    with meter.measuring(cpu["consume"]):
        consume_rate, first_record = consume_throughput(bootstrap, topic, options, client)
    latencies: list[float] = []
    if latency:
        latency_topic = create_topic(bootstrap, options.partitions, "latency", client)
        with meter.measuring(cpu["latency"]):
            latencies = delivery_latency(bootstrap, latency_topic, options, client)
        if cleanup:
            delete_topic(cleanup, latency_topic)
    if cleanup:
        delete_topic(cleanup, topic)
    return Results(produce_rate, consume_rate, first_record, latencies or [0.0, 0.0], cpu)


# --- the OpenMessaging-style workload ------------------------------------------------------------


OMB_PRODUCER = {"acks": "all", "linger.ms": 1, "batch.size": 131_072}
"""The producer settings of the OpenMessaging Benchmark's Kafka driver (driver-kafka/kafka.yaml)."""
OMB_CONSUMER = {"auto.offset.reset": "earliest", "enable.auto.commit": False}
"""Its consumer settings; its consumer commits asynchronously after each poll (KafkaBenchmarkConsumer)."""
SEND_STAMP = struct.Struct(">q")
"""The first 8 bytes of every record's value: ``time.perf_counter_ns()`` at its produce(). The
consumer runs in this process, on the same clock, so the end-to-end latency needs no clock sync
and has a finer grain than the record's millisecond timestamp (which OMB reads)."""


@dataclasses.dataclass(frozen=True)
class OmbResults:
    """One --omb run against one target: what happened in its measured window."""

    target_per_second: float
    window_seconds: float
    record_size: int
    published: int
    """Records produced in the window and acknowledged."""
    consumed: int
    """Records that reached the consumer in the window (whenever they were produced)."""
    publish_ms: list[float]  # sorted
    end_to_end_ms: list[float]  # sorted
    cpu: dict[str, float]
    """Process name -> CPU seconds spent in the window."""

    @property
    def published_per_second(self) -> float:
        return self.published / self.window_seconds

    @property
    def consumed_per_second(self) -> float:
        return self.consumed / self.window_seconds

    @property
    def traffic_mb_per_second(self) -> float:
        """Payload through the target per second, in and out (Kroxylicious's bidirectional traffic)."""
        return (self.published + self.consumed) * self.record_size / self.window_seconds / 1e6

    def millicores(self, process: str) -> float:
        return self.cpu.get(process, 0.0) / self.window_seconds * 1000

    def millicores_per_mb(self, process: str) -> float:
        return self.millicores(process) / self.traffic_mb_per_second

    def summary(self) -> str:
        publish, end_to_end = percentiles(self.publish_ms), percentiles(self.end_to_end_ms)
        return (f"published {self.published_per_second:,.0f}/s, consumed {self.consumed_per_second:,.0f}/s "
                f"(target {self.target_per_second:,.0f}/s), publish avg {publish['avg']:.2f} p99 {publish['p99']:.2f} ms, "
                f"end to end avg {end_to_end['avg']:.2f} p99 {end_to_end['p99']:.2f} ms")


class GroupReader:
    """One consumer in a group of its own, subscribed to every topic, reading on a thread of its
    own: the send stamp of each record and when it arrived (``time.perf_counter_ns()``)."""

    def __init__(self, bootstrap: str, topics: list[str], fetch_wait_ms: int, client: Mapping[str, str] = {}):
        self.topics = topics
        self.consumer = Consumer({"bootstrap.servers": bootstrap, **client, **OMB_CONSUMER,
                                  "group.id": f"bench-omb-{uuid.uuid4().hex[:8]}", "session.timeout.ms": 6000,
                                  "fetch.wait.max.ms": fetch_wait_ms})
        self.stamps: list[int] = []
        self.arrivals: list[int] = []
        self.failure: BaseException | None = None
        self._assigned = threading.Event()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._read, name="omb-consumer", daemon=True)

    def start(self) -> None:
        """Subscribe, and return once the group has assigned every topic's partition (Tansu holds a
        JoinGroup for half the session timeout), so that no record waits for the join."""

        def assigned(_consumer, partitions):
            if len(partitions) >= len(self.topics):
                self._assigned.set()

        self.consumer.subscribe(self.topics, on_assign=assigned)
        self._thread.start()
        if not self._assigned.wait(TIMEOUT):
            self.stop()
            raise RuntimeError(f"omb: the consumer group was not assigned the {len(self.topics)} topics in {TIMEOUT:g} s")

    def _read(self) -> None:
        try:
            while not self._stopping.is_set():
                # poll() returns at the first record; consume(timeout=0) then takes what else is
                # there. consume() with a timeout would wait for a full batch or the timeout,
                # which would add up to the timeout to the end-to-end latency.
                first = self.consumer.poll(0.1)
                if first is None:
                    continue
                arrived = time.perf_counter_ns()
                messages = [first, *self.consumer.consume(num_messages=10_000, timeout=0)]
                for message in messages:
                    if message.error() is not None:
                        raise RuntimeError(f"omb: consume: {message.error()}")
                    self.stamps.append(SEND_STAMP.unpack_from(message.value())[0])
                    self.arrivals.append(arrived)
                self.consumer.commit(asynchronous=True)
        except BaseException as failure:  # re-raised by stop(), in the benchmark's thread
            self.failure = failure

    def wait_for(self, count: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.stamps) < count and self.failure is None and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(TIMEOUT)
        self.consumer.close()
        if self.failure is not None:
            raise self.failure


def omb_workload(bootstrap: str, options: Options, client: Mapping[str, str] = {}, *,
                 processes: Mapping[str, int] = {}, cleanup: str | None = None) -> OmbResults:
    """The OpenMessaging-style run against ``bootstrap`` (the arguments are measure()'s): a topic
    of one partition per ``omb_topics``, one producer per topic at ``omb_rate`` records/s each,
    one consumer in a group reading them all; the window of ``omb_seconds`` after
    ``omb_warmup_seconds`` is measured."""
    topics = [create_topic(bootstrap, 1, f"omb{index}", client) for index in range(options.omb_topics)]
    reader = GroupReader(bootstrap, topics, options.omb_fetch_wait_ms, client)
    reader.start()
    producers = [Producer({"bootstrap.servers": bootstrap, **client, **OMB_PRODUCER}) for _ in topics]
    deliveries: list[tuple[int, float]] = []  # (send stamp, seconds from produce() to the acknowledgement)
    failures: list[KafkaError] = []

    def delivered(error, message):
        if error is not None:
            failures.append(error)
        else:
            deliveries.append((SEND_STAMP.unpack_from(message.value())[0], message.latency()))

    filler = os.urandom(options.record_size - SEND_STAMP.size)
    for producer, topic in zip(producers, topics):  # connections and metadata, before the clock starts
        producer.produce(topic, value=SEND_STAMP.pack(time.perf_counter_ns()) + filler)
        producer.flush(TIMEOUT)
    meter = CpuMeter({"clients": os.getpid(), **processes})
    per_second = options.omb_rate * len(topics)
    started = time.perf_counter_ns()
    window_from = started + int(options.omb_warmup_seconds * 1e9)
    window_end = window_from + int(options.omb_seconds * 1e9)
    sent, cpu_before = 0, None
    try:
        while (now := time.perf_counter_ns()) < window_end:
            if cpu_before is None and now >= window_from:
                cpu_before = meter.read()
            # A fixed rate, as OMB's rate limiter: whatever is due by now goes, round robin over the
            # topics; a pass that fell behind catches up.
            due = (now - started) * per_second // 1_000_000_000
            while sent < due:
                index = sent % len(topics)
                try:
                    producers[index].produce(topics[index], value=SEND_STAMP.pack(time.perf_counter_ns()) + filler,
                                             on_delivery=delivered)
                except BufferError:  # the local queue is full: the polls below make room
                    break
                sent += 1
            for producer in producers:
                producer.poll(0)
            time.sleep(0.0001)
        cpu_after = meter.read()
        undelivered = sum(producer.flush(TIMEOUT) for producer in producers)
        reader.wait_for(sent + len(producers), TIMEOUT)
    finally:
        reader.stop()
    if undelivered or failures:
        raise RuntimeError(f"omb: {undelivered} records undelivered, {len(failures)} failed (first: {failures[:1]})")
    if len(reader.stamps) < sent + len(producers):
        raise RuntimeError(f"omb: {len(reader.stamps)} of {sent + len(producers)} records consumed")
    if cleanup:
        for topic in topics:
            delete_topic(cleanup, topic)
    assert cpu_before is not None

    def in_window(stamp: int) -> bool:
        return window_from <= stamp < window_end

    return OmbResults(
        target_per_second=per_second,
        window_seconds=(window_end - window_from) / 1e9,
        record_size=options.record_size,
        published=sum(1 for stamp, _ in deliveries if in_window(stamp)),
        consumed=sum(1 for arrival in reader.arrivals if in_window(arrival)),
        publish_ms=sorted(seconds * 1000 for stamp, seconds in deliveries if in_window(stamp)),
        end_to_end_ms=sorted((arrival - stamp) / 1e6 for stamp, arrival in zip(reader.stamps, reader.arrivals)
                             if in_window(stamp)),
        cpu={name: cpu_after[name] - cpu_before[name] for name in cpu_before},
    )


# --- the gateway -------------------------------------------------------------------------------


class GatewayUnavailable(RuntimeError):
    """``kafkasec serve --upstream`` did not start (or refused these arguments)."""


def kafkasec_cli(*arguments: str) -> None:
    subprocess.run([sys.executable, "-m", "kafkasec", *arguments], check=True, capture_output=True, text=True,
                   cwd=REPOSITORY)


@dataclasses.dataclass(frozen=True)
class GatewaySetup:
    """A state file with the benchmark's user and ACLs, and the gateway's properties file."""

    directory: Path
    state: Path
    config: Path

    @classmethod
    def create(cls, directory: Path, *, reuse_port: bool = False, properties: Mapping[str, str] = {}) -> GatewaySetup:
        """``bench``: a SCRAM-SHA-256 user, not a super user, with ALL on the topics ``bench*``
        and READ on the groups ``bench*`` (PREFIXED ACLs: the authorizer's prefix lookup runs)."""
        state, config = directory / "gateway.db", directory / "gateway.properties"
        kafkasec_cli("scram", "--state", str(state), "--alter", "--add-config", f"{MECHANISM}=[password={PASSWORD}]",
                     "--entity-type", "users", "--entity-name", USER)
        for resource, operation in (("--topic", "All"), ("--group", "Read")):
            kafkasec_cli("acls", "--state", str(state), "--add", "--allow-principal", f"User:{USER}",
                         "--operation", operation, resource, "bench", "--resource-pattern-type", "prefixed")
        lines = ["# Tansu lists DeleteRecords but closes the connection of whoever sends it (tests/gateway_support.py)",
                 "kafkasec.upstream.unadvertised.apis=DeleteRecords"]
        if reuse_port:
            lines.append("kafkasec.server.reuse.port=true")
        lines += [f"{key}={value}" for key, value in properties.items()]
        config.write_text("\n".join(lines) + "\n")
        return cls(directory, state, config)


@dataclasses.dataclass
class GatewayProcess:
    process: subprocess.Popen
    bootstrap: str
    """The bootstrap listener, HOST:PORT."""
    brokers: dict[int, str]
    """Upstream node id -> the gateway's listener for it, HOST:PORT."""
    log: Path

    @property
    def pid(self) -> int:
        return self.process.pid


def start_gateway(upstream: str, setup: GatewaySetup, *, port: int = 0, timeout: float = 30.0,
                  launcher: tuple[str, ...] = (sys.executable, "-m", "kafkasec")) -> GatewayProcess:
    """``kafkasec serve --upstream`` in front of ``upstream`` on loopback (``port`` 0: a free
    one), SASL_PLAINTEXT: the process and its listeners, from the lines it prints
    ("kafkasec serve: SASL_PLAINTEXT listening on HOST:PORT", "... upstream broker N at HOST:PORT").
    Its output goes to files in the setup's directory (a pipe nobody reads would block it);
    ``launcher`` runs the ``kafkasec`` command (another one, e.g. under a profiler, for a study)."""
    name = f"gateway-{uuid.uuid4().hex[:6]}"
    out, log = setup.directory / f"{name}.out", setup.directory / f"{name}.log"
    command = [*launcher, "serve", "--state", str(setup.state), "--config", str(setup.config),
               "--upstream", upstream, "--host", "127.0.0.1", "--port", str(port),
               "--security-protocol", "SASL_PLAINTEXT"]
    with open(out, "w") as stdout, open(log, "w") as stderr:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, cwd=REPOSITORY)
    deadline = time.monotonic() + timeout
    bootstrap, brokers = None, {}
    while time.monotonic() < deadline and process.poll() is None:
        text = out.read_text()
        if found := re.search(r"listening on (\S+:\d+)", text):
            bootstrap = found.group(1)
        brokers = {int(node): address for node, address in re.findall(r"upstream broker (\d+) at (\S+:\d+)", text)}
        if bootstrap and brokers:
            return GatewayProcess(process, bootstrap, brokers, log)
        time.sleep(0.05)
    stop_gateway(process)
    raise GatewayUnavailable(f"{' '.join(command)} did not start (status {process.returncode}): {log.read_text()[-2000:]}")


def stop_gateway(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# --- direct against the gateway, alternating ----------------------------------------------------


DIRECT, GATEWAY = "Tansu, directly", "through the gateway"
QUIET_TIMEOUT = 300.0


def compare(upstream: str, gateway: GatewayProcess, options: Options, rounds: int, tansu_pid: int | None,
            progress=print, quiet: float | None = None,
            measurement: Callable[..., Measured] = measure) -> list[dict[str, Measured]]:
    """``rounds`` rounds of ``measurement`` (measure(): produce, consume and latency; or
    omb_workload()), directly and through the gateway (direct first in even rounds, the gateway
    first in odd ones)."""
    targets = {DIRECT: (upstream, {}), GATEWAY: (gateway.bootstrap, SASL_CLIENT)}
    processes = {"gateway": gateway.pid, **({"broker": tansu_pid} if tansu_pid else {})}
    measured = []
    for round_index in range(rounds):
        order = [DIRECT, GATEWAY] if round_index % 2 == 0 else [GATEWAY, DIRECT]
        results = {}
        for label in order:
            bootstrap, client = targets[label]
            if quiet is not None:
                wait_for_quiet(quiet, QUIET_TIMEOUT, progress)
            results[label] = measurement(bootstrap, options, client, processes=processes, cleanup=upstream)
            progress(f"round {round_index + 1}, {label}: {results[label].summary()}")
        measured.append({label: results[label] for label in (DIRECT, GATEWAY)})
    return measured


def compare_report(measured: list[dict[str, Results]], options: Options) -> str:
    lines = [f"Throughput: {options.records:,} records of {options.record_size} B per run, acks={options.acks}, "
             f"linger.ms={options.linger_ms}, {options.partitions} partitions, consume by {options.consume_mode}; the order of the two "
             "runs flips each round.", "",
             "| round | produce direct | produce gateway | ratio | consume direct | consume gateway | ratio |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    produce_ratios, consume_ratios = [], []
    for index, results in enumerate(measured, 1):
        direct, gateway = results[DIRECT], results[GATEWAY]
        produce_ratios.append(gateway.produce_per_second / direct.produce_per_second)
        consume_ratios.append(gateway.consume_per_second / direct.consume_per_second)
        lines.append(f"| {index} | {direct.produce_per_second:,.0f} | {gateway.produce_per_second:,.0f} | "
                     f"{produce_ratios[-1]:.2f} | {direct.consume_per_second:,.0f} | {gateway.consume_per_second:,.0f} | "
                     f"{consume_ratios[-1]:.2f} |")
    median = statistics.median
    lines.append(f"| median | {median(r[DIRECT].produce_per_second for r in measured):,.0f} | "
                 f"{median(r[GATEWAY].produce_per_second for r in measured):,.0f} | **{median(produce_ratios):.2f}** | "
                 f"{median(r[DIRECT].consume_per_second for r in measured):,.0f} | "
                 f"{median(r[GATEWAY].consume_per_second for r in measured):,.0f} | **{median(consume_ratios):.2f}** |")

    lines += ["", "CPU per record, µs (medians over the rounds; the clients are this process, librdkafka's threads "
              "included), and the rest of the machine's load during the runs, in cores (another job on the box; rough, ±0.3):", "",
              "| phase | target | clients | gateway | broker | wall | others, cores (each round) |",
              "|---|---|---:|---:|---:|---:|---|"]
    for phase, rate in (("produce", "produce_per_second"), ("consume", "consume_per_second")):
        for label in (DIRECT, GATEWAY):
            per_record = {name: median(r[label].cpu[phase].get(name, 0.0) for r in measured) / options.records * 1e6
                          for name in ("clients", "gateway", "broker")}
            wall = median(1e6 / getattr(r[label], rate) for r in measured)
            others = ", ".join(f"{r[label].cpu[phase].get('others', 0.0) * getattr(r[label], rate) / options.records:.2f}"
                               for r in measured)
            gateway_cell = f"{per_record['gateway']:.1f}" if label == GATEWAY else "—"
            lines.append(f"| {phase} | {label} | {per_record['clients']:.1f} | {gateway_cell} | "
                         f"{per_record['broker']:.1f} | {wall:.1f} | {others} |")

    lines += ["", f"Latency: single records at acks=1, linger.ms=0, {options.latency_rate:,}/s for "
              f"{options.latency_seconds:g} s per run; ms.", "",
              "| round | direct p50 / p99 / max | gateway p50 / p99 / max | added p50 | added p99 | "
              "gateway CPU µs per record | others, cores (direct / gateway) |",
              "|---|---:|---:|---:|---:|---:|---|"]
    added_p50, added_p99 = [], []
    seconds = options.latency_seconds
    for index, results in enumerate(measured, 1):
        direct, gateway = results[DIRECT].latency_ms, results[GATEWAY].latency_ms
        added_p50.append(gateway["p50"] - direct["p50"])
        added_p99.append(gateway["p99"] - direct["p99"])
        gateway_cpu = results[GATEWAY].cpu["latency"].get("gateway", 0.0) / results[GATEWAY].latency_records * 1e6
        others = " / ".join(f"{results[label].cpu['latency'].get('others', 0.0) / seconds:.2f}" for label in (DIRECT, GATEWAY))
        lines.append(f"| {index} | {direct['p50']:.2f} / {direct['p99']:.2f} / {direct['max']:.2f} | "
                     f"{gateway['p50']:.2f} / {gateway['p99']:.2f} / {gateway['max']:.2f} | "
                     f"{added_p50[-1]:+.2f} | {added_p99[-1]:+.2f} | {gateway_cpu:.0f} | {others} |")
    pooled = {label: percentiles(sorted(ms for r in measured for ms in r[label].latencies_ms)) for label in (DIRECT, GATEWAY)}
    lines.append(f"| all rounds pooled | {pooled[DIRECT]['p50']:.2f} / {pooled[DIRECT]['p99']:.2f} / "
                 f"{pooled[DIRECT]['max']:.2f} | {pooled[GATEWAY]['p50']:.2f} / {pooled[GATEWAY]['p99']:.2f} / "
                 f"{pooled[GATEWAY]['max']:.2f} | {pooled[GATEWAY]['p50'] - pooled[DIRECT]['p50']:+.2f} | "
                 f"{pooled[GATEWAY]['p99'] - pooled[DIRECT]['p99']:+.2f} | | |")
    lines.append(f"| median of the rounds | | | **{median(added_p50):+.2f}** | **{median(added_p99):+.2f}** | | |")
    return "\n".join(lines)


def omb_report(measured: list[dict[str, OmbResults]], options: Options) -> str:
    per_second = options.omb_rate * options.omb_topics
    lines = [f"OpenMessaging-style workload: {options.omb_topics} topics of 1 partition, {options.record_size:,} B records, "
             f"{options.omb_rate:,}/s per topic ({per_second:,}/s, {per_second * options.record_size / 1e6:,.1f} MB/s in); "
             f"one producer per topic ({', '.join(f'{key}={value}' for key, value in OMB_PRODUCER.items())}: "
             "OMB's Kafka driver), one consumer in a group of its own reading every topic (committing after each poll, "
             f"fetch.wait.max.ms={options.omb_fetch_wait_ms}); "
             f"{options.omb_seconds:g} s measured after {options.omb_warmup_seconds:g} s of warm-up, per run; the order of "
             "the two runs flips each round. Latencies in ms: publish is produce() to the acknowledgement "
             "(librdkafka's `Message.latency()`), end to end is produce() to the consumer's poll. CPU in cores over "
             "the window; MB/s is the payload in and out (published + consumed).", "",
             "| round | target | published/s | consumed/s | MB/s in + out | publish avg / p50 / p99 | "
             "end to end avg / p50 / p99 | CPU, cores: clients / gateway / broker | gateway mc per MB/s |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for index, results in enumerate(measured, 1):
        for label in (DIRECT, GATEWAY):
            run = results[label]
            publish, end_to_end = percentiles(run.publish_ms), percentiles(run.end_to_end_ms)
            cores = " / ".join(f"{run.millicores(name) / 1000:.2f}" if name in run.cpu else "—"
                               for name in ("clients", "gateway", "broker"))
            per_mb = f"{run.millicores_per_mb('gateway'):.1f}" if label == GATEWAY else "—"
            lines.append(f"| {index} | {label} | {run.published_per_second:,.0f} | {run.consumed_per_second:,.0f} | "
                         f"{run.traffic_mb_per_second:.1f} | {publish['avg']:.2f} / {publish['p50']:.2f} / "
                         f"{publish['p99']:.2f} | {end_to_end['avg']:.2f} / {end_to_end['p50']:.2f} / "
                         f"{end_to_end['p99']:.2f} | {cores} | {per_mb} |")

    median = statistics.median
    lines += ["", f"Medians of the {len(measured)} round(s); added: the median of each round's gateway less direct.", "",
              "| | directly | through the gateway | added |", "|---|---:|---:|---:|"]
    rate = {label: median(r[label].published_per_second for r in measured) for label in (DIRECT, GATEWAY)}
    lines.append(f"| published/s (target {per_second:,}) | {rate[DIRECT]:,.0f} | {rate[GATEWAY]:,.0f} | "
                 f"{rate[GATEWAY] / rate[DIRECT]:.2f}x |")
    for name, samples in (("publish", "publish_ms"), ("end to end", "end_to_end_ms")):
        for statistic in ("avg", "p50", "p99"):
            value = {label: [percentiles(getattr(r[label], samples))[statistic] for r in measured]
                     for label in (DIRECT, GATEWAY)}
            added = median(gateway - direct for direct, gateway in zip(value[DIRECT], value[GATEWAY]))
            lines.append(f"| {name} {statistic}, ms | {median(value[DIRECT]):.2f} | {median(value[GATEWAY]):.2f} | "
                         f"**{added:+.2f}** |")
    lines.append(f"| gateway CPU, mc per MB/s | — | **{median(r[GATEWAY].millicores_per_mb('gateway') for r in measured):.1f}** | |")
    return "\n".join(lines)


# --- profiling the gateway ---------------------------------------------------------------------


def profiled_run(upstream: str, gateway: GatewayProcess, options: Options, directory: Path) -> str:
    """More gateway runs with py-spy sampling the gateway (--nonblocking: the process is not
    paused to be read): produce and consume, each repeated until 3 s were sampled, and the
    latency run; the top functions of each, from py-spy's raw stacks."""
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        return "no profile: py-spy is not installed (python -m pip install py-spy)"
    directory.mkdir(parents=True, exist_ok=True)
    sections = []
    topic = create_topic(gateway.bootstrap, options.partitions, "profile", SASL_CLIENT)
    latency_topic = create_topic(gateway.bootstrap, options.partitions, "profile-latency", SASL_CLIENT)
    for phase in ("produce", "consume", "latency"):
        output = directory / f"gateway-{phase}.txt"
        recorder = subprocess.Popen([py_spy, "record", "--pid", str(gateway.pid), "--format", "raw", "--rate", "500",
                                     "--nonblocking", "--output", str(output)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # py-spy attaches
        started, rates = time.perf_counter(), []
        while True:
            if phase == "produce":
                rates.append(produce_throughput(gateway.bootstrap, topic, options, SASL_CLIENT))
            elif phase == "consume":
                rates.append(consume_throughput(gateway.bootstrap, topic, options, SASL_CLIENT)[0])
            else:
                latency = percentiles(delivery_latency(gateway.bootstrap, latency_topic, options, SASL_CLIENT))
            if phase == "latency" or time.perf_counter() - started > 3.0:
                break
        recorder.send_signal(signal.SIGINT)  # py-spy writes what it sampled
        recorder.wait(30)
        if phase == "latency":
            what = (f"single records at {options.latency_rate:,}/s for {options.latency_seconds:g} s: p50 "
                    f"{latency['p50']:.2f} ms, p99 {latency['p99']:.2f} ms")
        else:
            what = f"{len(rates)} run(s), {statistics.median(rates):,.0f} records/s"
        sections.append(f"#### {phase} through the gateway under py-spy ({what})\n\n{top_functions(output)}")
    delete_topic(upstream, topic)
    delete_topic(upstream, latency_topic)
    return "\n\n".join(sections)


def top_functions(raw: Path, count: int = 18) -> str:
    """From py-spy's raw format (``frame;frame;... samples`` per line, outermost first): the
    functions with the most samples on the stack (inclusive) and at its top (self)."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    total = follower = 0
    for line in raw.read_text().splitlines():
        stack, _, samples = line.rpartition(" ")
        if not stack or not samples.isdigit():
            continue
        frames = [re.sub(r" \((.*?):\d+\)$", lambda m: f" ({Path(m.group(1)).name})", frame) for frame in stack.split(";")]
        frames = [frame for frame in frames if not frame.startswith(("process ", "thread "))]
        if not frames:
            continue
        if any(frame.startswith("StateFollower._run") for frame in frames):
            # The security log's follower thread, asleep between polls of the state (py-spy
            # does not see that sleep as idle); its CPU is about 1% of a core when idle.
            follower += int(samples)
            continue
        weight = int(samples)
        total += weight
        own[frames[-1]] += weight
        for frame in set(frames):
            inclusive[frame] += weight
    if not total:
        return "(no samples)"
    lines = [f"{total:,} samples of the event loop's thread ({follower:,} of the state follower's thread, asleep "
             "between polls, left out); a thread waiting in epoll is sampled too (`EpollSelector.select`).", "",
             "| function | on the stack | at the top |", "|---|---:|---:|"]
    names = [name for name, _ in inclusive.most_common(count)] + [name for name, _ in own.most_common(count)]
    for name in dict.fromkeys(names):
        lines.append(f"| `{name}` | {inclusive[name] / total:.1%} | {own[name] / total:.1%} |")
    return "\n".join(lines)


# --- scale-out: gateway processes sharing ports -------------------------------------------------


def _free_port_pair(offset: int) -> int:
    """A port P such that P and P + offset are both free on loopback."""
    for _ in range(200):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port + offset > 65535:
            continue
        try:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port + offset))
            return port
        except OSError:
            continue
    raise RuntimeError("no pair of free ports")


def _producer_child(bootstrap: str, client: dict, topic: str, records: int, record_size: int, acks: str,
                    linger_ms: int, barrier, decision, results) -> None:
    """A producer process: connect (one record, flushed), wait for the others and for the
    parent's go (decision 1; 0: stop), then produce ``records`` and report (start, end) on the
    system-wide monotonic clock."""
    producer = Producer({"bootstrap.servers": bootstrap, **client, "acks": acks, "linger.ms": linger_ms})
    producer.produce(topic, value=b"warm-up")
    producer.flush(TIMEOUT)
    barrier.wait(TIMEOUT)  # everybody is connected
    barrier.wait(TIMEOUT)  # the parent has decided
    if not decision.value:
        return
    failures = []
    value = os.urandom(record_size)

    def delivered(error, _message):
        if error is not None:
            failures.append(error)

    cpu_before = sum(os.times()[:2])
    started = time.monotonic()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    left = producer.flush(TIMEOUT)
    results.put((started, time.monotonic(), left, len(failures), sum(os.times()[:2]) - cpu_before))


@dataclasses.dataclass(frozen=True)
class ScaleRun:
    label: str
    records_per_second: float
    gateway_cpu_seconds: float
    broker_cpu_seconds: float
    producer_cpu_seconds: float
    records: int
    spread: list[int]
    """Producer connections per gateway process (on the broker listener)."""
    attempts: int


def produce_in_parallel(bootstrap: str, client: Mapping[str, str], topics: list[str], records: int, options: Options,
                        gateway_pids: list[int], broker_port: int | None, tansu_pid: int, label: str,
                        max_attempts: int = 12) -> ScaleRun:
    """One producer process per topic, all at once; with several gateway processes, started
    again until every gateway process holds one of the producers' broker connections."""
    context = multiprocessing.get_context("spawn")
    for attempt in range(1, max_attempts + 1):
        barrier, decision, results = context.Barrier(len(topics) + 1), context.Value("i", 0), context.Queue()
        children = [context.Process(target=_producer_child, args=(bootstrap, dict(client), topic, records,
                                                                  options.record_size, options.acks, options.linger_ms, barrier, decision, results))
                    for topic in topics]
        for child in children:
            child.start()
        barrier.wait(TIMEOUT)
        spread = [sum(1 for connection in psutil.Process(pid).net_connections("tcp")
                      if connection.status == psutil.CONN_ESTABLISHED and connection.laddr.port == broker_port)
                  for pid in gateway_pids]
        go = len(gateway_pids) < 2 or all(spread) or attempt == max_attempts
        decision.value = int(go)
        meter = CpuMeter({"broker": tansu_pid, **{f"gateway{i}": pid for i, pid in enumerate(gateway_pids)}})
        before = meter.read()
        barrier.wait(TIMEOUT)
        if not go:
            for child in children:
                child.join(TIMEOUT)
            continue
        reports = [results.get(timeout=TIMEOUT + records / 1000) for _ in children]
        after = meter.read()
        for child in children:
            child.join(TIMEOUT)
        if any(report[2] or report[3] for report in reports):
            raise RuntimeError(f"{label}: undelivered or failed records: {reports}")
        elapsed = max(report[1] for report in reports) - min(report[0] for report in reports)
        total = records * len(topics)
        cpu = {name: after[name] - before[name] for name in before}
        gateway_cpu = sum(value for name, value in cpu.items() if name.startswith("gateway"))
        return ScaleRun(label, total / elapsed, gateway_cpu, cpu["broker"], sum(report[4] for report in reports),
                        total, spread, attempt)
    raise AssertionError("unreachable")


def scale_out(tansu: TansuBroker, setup: GatewaySetup, options: Options, rounds: int, records: int,
              progress=print, quiet: float | None = None) -> list[dict[str, ScaleRun]]:
    """Per round: two producers straight to the broker, through one gateway process, through
    two (the two gateway runs alternate in order); the same fixed ports each time."""
    port = _free_port_pair(1 + TANSU_NODE_ID)
    producers = 2
    measured = []
    for round_index in range(rounds):
        results: dict[str, ScaleRun] = {}
        topics = [create_topic(tansu.bootstrap, options.partitions, f"scale{i}") for i in range(producers)]
        if quiet is not None:
            wait_for_quiet(quiet, QUIET_TIMEOUT, progress)
        results["direct"] = produce_in_parallel(tansu.bootstrap, {}, topics, records, options, [], None,
                                                tansu.process.pid, "direct")
        progress(f"round {round_index + 1}, 2 producers directly: {results['direct'].records_per_second:,.0f}/s")
        order = (1, 2) if round_index % 2 == 0 else (2, 1)
        for count in order:
            gateways = [start_gateway(tansu.bootstrap, setup, port=port) for _ in range(count)]
            try:
                if quiet is not None:
                    wait_for_quiet(quiet, QUIET_TIMEOUT, progress)
                bootstrap = gateways[0].bootstrap
                broker_port = int(gateways[0].brokers[TANSU_NODE_ID].rpartition(":")[2])
                label = f"{count} gateway process{'es' if count > 1 else ''}"
                run = produce_in_parallel(bootstrap, SASL_CLIENT, topics, records, options,
                                          [gateway.pid for gateway in gateways], broker_port, tansu.process.pid, label)
                results[label] = run
                progress(f"round {round_index + 1}, {label}: {run.records_per_second:,.0f}/s, gateway CPU "
                         f"{run.gateway_cpu_seconds / run.records * 1e6:.1f} µs/record, spread {run.spread} "
                         f"(attempt {run.attempts})")
            finally:
                for gateway in gateways:
                    stop_gateway(gateway.process)
        for topic in topics:
            delete_topic(tansu.bootstrap, topic)
        measured.append(results)
    return measured


def scale_report(measured: list[dict[str, ScaleRun]], options: Options, records: int) -> str:
    one, two = "1 gateway process", "2 gateway processes"
    lines = [f"Scale-out: two producer processes at once, {records:,} records of {options.record_size} B each, "
             f"acks={options.acks}, linger.ms={options.linger_ms}, a topic of {options.partitions} partitions each; gateway processes "
             "with kafkasec.server.reuse.port=true on the same fixed ports. CPU in µs per record.", "",
             "| round | direct records/s | 1 process records/s | 2 processes records/s | 2 / 1 | "
             "gateway CPU, 1 process | gateway CPU, 2 processes | 2 / 1 | broker CPU 1 / 2 | producers CPU 1 / 2 | "
             "connections per process |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    throughput, cpu = [], []
    for index, results in enumerate(measured, 1):
        a, b, direct = results[one], results[two], results["direct"]
        throughput.append(b.records_per_second / a.records_per_second)
        cpu_a, cpu_b = a.gateway_cpu_seconds / a.records * 1e6, b.gateway_cpu_seconds / b.records * 1e6
        # CPU times come in clock ticks (10 ms): a short run can read 0 for one process.
        cpu.append(cpu_b / cpu_a if cpu_a else float("nan"))
        lines.append(f"| {index} | {direct.records_per_second:,.0f} | {a.records_per_second:,.0f} | "
                     f"{b.records_per_second:,.0f} | {throughput[-1]:.2f} | {cpu_a:.1f} | {cpu_b:.1f} | {cpu[-1]:.2f} | "
                     f"{a.broker_cpu_seconds / a.records * 1e6:.1f} / {b.broker_cpu_seconds / b.records * 1e6:.1f} | "
                     f"{a.producer_cpu_seconds / a.records * 1e6:.1f} / {b.producer_cpu_seconds / b.records * 1e6:.1f} | "
                     f"{b.spread} (attempt {b.attempts}) |")
    median = statistics.median
    lines.append(f"| median | {median(r['direct'].records_per_second for r in measured):,.0f} | "
                 f"{median(r[one].records_per_second for r in measured):,.0f} | "
                 f"{median(r[two].records_per_second for r in measured):,.0f} | **{median(throughput):.2f}** | "
                 f"{median(r[one].gateway_cpu_seconds / r[one].records * 1e6 for r in measured):.1f} | "
                 f"{median(r[two].gateway_cpu_seconds / r[two].records * 1e6 for r in measured):.1f} | "
                 f"**{median(cpu):.2f}** | | | |")
    return "\n".join(lines)


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
    lines = [f"| {options.records:,} records of {options.record_size} B, acks={options.acks}, linger.ms={options.linger_ms}, "
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
                        help="also run through `kafkasec serve --upstream` in front of the broker, alternating")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --compare-gateway, --omb and --scale-out (default: 3)")
    parser.add_argument("--omb", action="store_true",
                        help="the OpenMessaging-style workload, directly and through `kafkasec serve --upstream`, alternating")
    parser.add_argument("--omb-topics", type=int, default=Options.omb_topics, help="topics of one partition (default: 10)")
    parser.add_argument("--omb-rate", type=int, default=Options.omb_rate,
                        help="records/s per topic (default: 5000, i.e. 50,000/s and ~51 MB/s over 10 topics; "
                             "lower it where the clients, Tansu and the gateway share a few cores)")
    parser.add_argument("--omb-seconds", type=float, default=Options.omb_seconds, help="the measured window (default: 60)")
    parser.add_argument("--omb-warmup-seconds", type=float, default=Options.omb_warmup_seconds,
                        help="produced at the rate before the window, not counted (default: 5)")
    parser.add_argument("--omb-fetch-wait-ms", type=int, default=Options.omb_fetch_wait_ms,
                        help="the consumer's fetch.wait.max.ms (default: 10; 500 is the clients' and OMB's default, "
                             "against which Tansu's end-to-end latency is mostly that wait)")
    parser.add_argument("--scale-out", action="store_true",
                        help="two gateway processes sharing the ports against one, two producer processes (needs --tansu)")
    parser.add_argument("--scale-records", type=int, default=100_000, help="records per producer process in --scale-out")
    parser.add_argument("--py-spy", metavar="DIR", type=Path, help="with --compare-gateway: a profiled extra run")
    parser.add_argument("--quiet", metavar="CORES", type=float, default=0.2,
                        help="before each run, wait (up to 5 min) until the machine was busy less than this many cores "
                             "for a second (default: 0.2; a negative value: do not wait)")
    parser.add_argument("--gateway-property", metavar="KEY=VALUE", action="append", default=[],
                        help="one more line of the gateway's properties file (repeatable), e.g. "
                             "kafkasec.state.poll.interval.ms=1000")
    parser.add_argument("--records", type=int, default=Options.records)
    parser.add_argument("--record-size", type=int, default=Options.record_size, help="bytes (default: 1024)")
    parser.add_argument("--acks", choices=("all", "1", "0"), default=Options.acks, help="for produce (default: all)")
    parser.add_argument("--partitions", type=int, default=Options.partitions)
    parser.add_argument("--consume-mode", choices=("assign", "group"), default=Options.consume_mode)
    parser.add_argument("--latency-rate", type=int, default=Options.latency_rate, help="records/s (default: 1000)")
    parser.add_argument("--latency-seconds", type=float, default=Options.latency_seconds)
    parser.add_argument("--linger-ms", type=int, default=Options.linger_ms,
                        help="the producers' linger.ms for throughput and scale-out (default: 5)")
    args = parser.parse_args(argv)
    options = Options(records=args.records, record_size=args.record_size, acks=args.acks, partitions=args.partitions,
                      consume_mode=args.consume_mode, latency_rate=args.latency_rate,
                      latency_seconds=args.latency_seconds, linger_ms=args.linger_ms, omb_topics=args.omb_topics,
                      omb_rate=args.omb_rate, omb_seconds=args.omb_seconds, omb_warmup_seconds=args.omb_warmup_seconds,
                      omb_fetch_wait_ms=args.omb_fetch_wait_ms)
    properties = dict(line.split("=", 1) for line in args.gateway_property)
    if args.quiet is not None and args.quiet < 0:
        args.quiet = None
    if args.scale_out and not args.tansu:
        parser.error("--scale-out needs --tansu (it reads the broker's CPU time)")
    if args.record_size < SEND_STAMP.size:
        parser.error(f"--record-size must be at least {SEND_STAMP.size} (--omb's records carry their send time)")

    def progress(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    # SIGTERM unwinds like Ctrl-C, so the broker and gateway processes started here are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    started = time.monotonic()
    print(f"Machine: {machine()}\n")
    with contextlib.ExitStack() as stack:
        broker = None if args.bootstrap else stack.enter_context(TansuBroker())
        upstream = args.bootstrap or broker.bootstrap
        tansu_pid = broker.process.pid if broker is not None else None
        directory = Path(tempfile.mkdtemp(prefix="kafkasec-bench-gateway-"))
        stack.callback(shutil.rmtree, directory, ignore_errors=True)
        if args.compare_gateway or args.omb:
            setup = GatewaySetup.create(_mkdir(directory / "one"), properties=properties)
            gateway = start_gateway(upstream, setup)
            stack.callback(stop_gateway, gateway.process)
            progress(f"gateway at {gateway.bootstrap} (brokers {gateway.brokers}), upstream {upstream}")
        if args.compare_gateway:
            measured = compare(upstream, gateway, options, args.rounds, tansu_pid, progress, args.quiet)
            print(compare_report(measured, options))
            if args.py_spy:
                print("\n" + profiled_run(upstream, gateway, options, args.py_spy))
        if args.omb:
            measured_omb = compare(upstream, gateway, options, args.rounds, tansu_pid, progress, args.quiet,
                                   measurement=omb_workload)
            print(("\n" if args.compare_gateway else "") + omb_report(measured_omb, options))
        if not (args.compare_gateway or args.omb or args.scale_out):
            results = {("Tansu, directly" if args.tansu else upstream): measure(upstream, options, cleanup=upstream)}
            print(report(results, options))
        if args.scale_out:
            assert broker is not None
            setup = GatewaySetup.create(_mkdir(directory / "scale"), reuse_port=True, properties=properties)
            measured_scale = scale_out(broker, setup, options, args.rounds, args.scale_records, progress, args.quiet)
            print("\n" + scale_report(measured_scale, options, args.scale_records))
    print(f"\nMachine at the end: load {', '.join(f'{v:.1f}' for v in os.getloadavg())}; "
          f"{time.monotonic() - started:.0f} s in all.")
    return 0


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


if __name__ == "__main__":
    sys.exit(main())
