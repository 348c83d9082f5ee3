"""The example broker's CPU per request through SecureConnection, against the same broker with no
security, side by side in one run.

    python benchmarks/bench_embedded_broker.py                  # 2,000 produces and 2,000 fetches a round, 5 rounds
    python benchmarks/bench_embedded_broker.py --requests 500 --rounds 3 --records 1

examples/embedded_broker.py runs on its event loop in a background thread of this process, as
the tests run it: once with ``security=None`` (PLAINTEXT, every request decoded and answered, nothing
checked) and once with a KafkaSecurity (SASL_PLAINTEXT; the client logs in with SCRAM-SHA-256 as
``alice``, who may WRITE and READ ``orders``; ``--acls`` other users' ACLs beside hers, not a
super user). A client on the main thread sends, one at a time and waiting for each answer:

- produce: ``--requests`` Produce v10 (what librdkafka 2.16 sends), acks=1, one record batch of
  ``--records`` records of ``--record-bytes`` each (built as a producer builds it, CRC included);
- consume: as many Fetch v16 (librdkafka's: topics by id, which SecureConnection reads through
  the broker's ``topic_names``), each from the next batch's offset, at most one batch each.

The figure is the broker thread's own CPU time (its POSIX thread clock) divided by the requests:
the client's work, on another thread, is not in it. Both brokers decode every request and encode
every answer the same way, so the difference is SecureConnection's: the request context, Kafka's
rules (one batched ``authorize``), the checks of the records, and the response made from the answer.
The rounds alternate the two brokers, so a change in the machine's load touches both; the table
shows each one's median over the rounds, and the ratio of the medians (the target is <= 1.2).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "examples"), str(ROOT / "tests")]

from kafkasec import AclBinding, KafkaSecurity, ScramCredentialInfo, UserScramCredentialUpsertion  # noqa: E402
from kafkasec.protocol import wire  # noqa: E402
from kafkasec.protocol.api_keys import ApiKey  # noqa: E402
from kafkasec.server import KafkaConnection  # noqa: E402

from embedded_broker import EmbeddedBroker  # noqa: E402
from record_batches import record_batch  # noqa: E402

TARGET_RATIO = 1.2
TOPIC = "orders"
PRODUCE_VERSION, FETCH_VERSION = 10, 16


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor() or platform.machine())
    return (f"{cpu}, nproc {len(os.sched_getaffinity(0))}, {platform.python_implementation()} "
            f"{platform.python_version()}, load {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


def open_security(acl_count: int) -> KafkaSecurity:
    security = KafkaSecurity.from_config({"kafkasec.state.path": ":memory:"})
    security.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("alice", ScramCredentialInfo("SCRAM-SHA-256", 4096), "alice-secret")]
    )
    security.create_acls([
        *(AclBinding.of("TOPIC", TOPIC, "LITERAL", "User:alice", "*", operation, "ALLOW") for operation in ("WRITE", "READ")),
        *(AclBinding.of("TOPIC", f"topic-{number}", "LITERAL", f"User:user-{number}", "*", "WRITE", "ALLOW")
          for number in range(acl_count)),
    ])
    return security


def produce_frame(batch: bytes, correlation_id: int) -> bytes:
    schema = wire.request_schema(ApiKey.PRODUCE, PRODUCE_VERSION)
    topic_type = wire.item_type(schema, "topic_data")
    partition = wire.build(wire.item_type(topic_type, "partition_data"), index=0, records=batch)
    body = wire.build(schema, acks=1, timeout=datetime.timedelta(seconds=30),
                      topic_data=(wire.build(topic_type, name=TOPIC, partition_data=(partition,)),))
    return wire.encode_request(body, correlation_id=correlation_id, client_id="bench")


def fetch_frame(broker: EmbeddedBroker, offset: int, max_bytes: int, correlation_id: int) -> bytes:
    schema = wire.request_schema(ApiKey.FETCH, FETCH_VERSION)
    topic_type = wire.item_type(schema, "topics")
    partition = wire.build(wire.item_type(topic_type, "partitions"), partition=0, fetch_offset=offset,
                           partition_max_bytes=max_bytes, current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1)
    body = wire.build(schema, max_wait=datetime.timedelta(0), min_bytes=1, max_bytes=max_bytes, session_epoch=-1,
                      topics=(wire.build(topic_type, topic_id=broker.logs[TOPIC].topic_id, partitions=(partition,)),))
    return wire.encode_request(body, correlation_id=correlation_id, client_id="bench")


def broker_thread_clock() -> int:
    """The CPU clock of the thread the example broker runs in (EmbeddedBroker.running_in_thread names it)."""
    thread = next(thread for thread in threading.enumerate() if thread.name == "embedded-broker")
    assert thread.ident is not None
    return time.pthread_getcpuclockid(thread.ident)


async def exchange_all(connection: KafkaConnection, frames: list[bytes]) -> None:
    for frame in frames:
        answer = await connection.exchange(frame)
        assert len(answer) > 8, "an answer with nothing in it"


def one_round(security: KafkaSecurity | None, args) -> dict[str, float]:
    """Broker CPU µs per request for produce and consume, on a fresh broker."""
    batch = record_batch([(None, bytes(args.record_bytes))] * args.records)
    with EmbeddedBroker(security, topics=(TOPIC,)).running_in_thread() as broker:
        clock = broker_thread_clock()

        async def run() -> dict[str, float]:
            connection = await KafkaConnection.open(broker.host, broker.port, client_id="bench")
            async with connection:
                if security is not None:
                    await connection.login("SCRAM-SHA-256", "alice", "alice-secret")
                # Warm-up: the first request of each kind decodes and encodes through schemas not yet cached.
                await exchange_all(connection, [produce_frame(batch, number) for number in range(args.warmup)])
                await exchange_all(connection, [fetch_frame(broker, number * args.records, len(batch), number)
                                                for number in range(args.warmup)])
                produced = [produce_frame(batch, number) for number in range(args.requests)]
                started = time.clock_gettime(clock)
                await exchange_all(connection, produced)
                produce_s = time.clock_gettime(clock) - started
                first = broker.logs[TOPIC].end_offset - args.requests * args.records
                fetches = [fetch_frame(broker, first + number * args.records, len(batch), number) for number in range(args.requests)]
                started = time.clock_gettime(clock)
                await exchange_all(connection, fetches)
                consume_s = time.clock_gettime(clock) - started
            return {"produce": produce_s * 1e6 / args.requests, "consume": consume_s * 1e6 / args.requests}

        return asyncio.run(run())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000, help="produces, then as many fetches, per round")
    parser.add_argument("--warmup", type=int, default=200, help="produces and fetches before the timed ones")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=10, help="records per batch")
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--acls", type=int, default=1000, help="other users' ACLs beside alice's")
    args = parser.parse_args(argv)

    security = open_security(args.acls)
    samples: dict[str, dict[str, list[float]]] = {"off": {"produce": [], "consume": []}, "kafkasec": {"produce": [], "consume": []}}
    try:
        one_round(None, args)  # the process's first requests of each kind fill kio's and kafkasec's caches
        one_round(security, args)
        for _ in range(args.rounds):
            for mode, mode_security in (("off", None), ("kafkasec", security)):
                for kind, microseconds in one_round(mode_security, args).items():
                    samples[mode][kind].append(microseconds)
    finally:
        security.close()

    print(f"machine: {machine()}")
    print(f"{args.rounds} rounds of {args.requests} produces (Produce v{PRODUCE_VERSION}, {args.records} x "
          f"{args.record_bytes}-byte records) and {args.requests} fetches (Fetch v{FETCH_VERSION}), one at a time; "
          f"{args.acls} other ACLs\n")
    print("| request | security off: CPU µs/request | SecureConnection: CPU µs/request | ratio |")
    print("|---|---:|---:|---:|")
    worst = 0.0
    for kind in ("produce", "consume"):
        off, secured = statistics.median(samples["off"][kind]), statistics.median(samples["kafkasec"][kind])
        worst = max(worst, secured / off)
        print(f"| {kind} | {off:.0f} | {secured:.0f} | {secured / off:.2f}x |")
    print(f"\nworst ratio {worst:.2f}x (target <= {TARGET_RATIO}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
