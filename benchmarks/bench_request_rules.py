"""Kafka's per-request rules on a large Produce: ``authorize_request`` against one
``security.authorize`` per partition, in one process.

    python benchmarks/bench_request_rules.py                 # 100 partitions over 10 topics, Produce v10
    python benchmarks/bench_request_rules.py --topics 50 --partitions-per-topic 2 --repeats 15

The request: a Produce (``--version``, 10 by default: what librdkafka 2.16 sends to Tansu and
to the gateway; v13 names topics by id) of ``--topics`` topics ``bench-0`` ... with
``--partitions-per-topic`` partitions each (10 x 10 = 100), 1 KiB of records per partition, no
transactional id. The security: ``KafkaSecurity.from_config`` on a ``:memory:`` state with one
PREFIXED ACL, ``User:bench`` WRITE on the topics ``bench`` (``User:bench`` is not a super user,
and no plugins: the authorizer's prefix lookup answers every question).

Rows:

- ``authorize_request``: the whole decision the gateway makes per Produce (the rule, one
  batched ``security.authorize`` of one Action per *topic*, with the number of its partitions as
  reference count, and the RequestAuthorization); the target is <= 50 µs per request;
- naive: one ``security.authorize`` call per *partition*, each building its Action
  (``Action(WRITE, ResourcePattern(TOPIC, name))``), the way a handler written partition by
  partition would ask; the ratio naive / ``authorize_request`` is reported;
- for context: ``authorize_request`` with its Action cache cleared before each call (the first
  request naming these topics), the one batched ``authorize`` alone (the floor under the rule),
  the rule's scan of every partition's batch header for transactional records, Kafka's checks of
  every partition's records (one v2 batch, not control: validation.py),
  a request where half the topics are refused (the request is copied without them and a
  response maker is built), the v13 request (topic ids mapped to names), and what the gateway
  does around the decision: ``wire.decode_request`` of the request's bytes and
  ``wire.request_context``.

A second table takes a single-record Produce (what the latency run sends, 1,000 a second)
through the gateway's own steps one by one: decoding, the context, the rule, the bytes that go
upstream, decoding the answer (Produce answers may name brokers, KIP-951, so the gateway reads
every one), and the bytes that go back.

Timing: ``time.perf_counter``; each row is ``--repeats`` samples (11) of enough back-to-back
calls to last ``--sample-ms`` (20 ms) each, after a warm-up, the rows taking turns sample by
sample; the table shows the best sample (µs per call) and the median. Prints Markdown and the machine.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import struct
import sys
import time
import uuid
from typing import Callable

from kafkasec import KafkaPrincipal, KafkaSecurity
from kafkasec.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkasec.context import Action, AuthorizationResult
from kafkasec.protocol import wire
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.protocol.request_rules import authorize_request, core as rules_core, data as rules_data
from kafkasec.protocol.request_rules.validation import invalid_produce_partitions
from kafkasec.server.broker_addresses import brokers_in
from kafkasec.server.upstream import framed

TARGET_US = 50.0
USER = "bench"


def record_batch(size: int) -> bytes:
    """``size`` bytes that start like a magic-2, non-transactional record batch (what the
    Produce rule reads of the records: the magic byte and the attributes)."""
    header = struct.pack(">qiibIh", 0, size - 12, 0, 2, 0, 0)
    return header + bytes(size - len(header))


def produce_request(version: int, topics: list[str], partitions: int, record_bytes: int,
                    topic_ids: dict[str, uuid.UUID]):
    schema = wire.request_schema(ApiKey.PRODUCE, version)
    topic_type = wire.item_type(schema, "topic_data")
    partition_type = wire.item_type(topic_type, "partition_data")
    records = record_batch(record_bytes)
    topic_data = tuple(
        wire.build(topic_type, name=name, topic_id=topic_ids[name],
                   partition_data=tuple(wire.build(partition_type, index=index, records=records) for index in range(partitions)))
        for name in topics
    )
    return wire.build(schema, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=30), topic_data=topic_data)


def time_calls(calls: dict[str, Callable[[], object]], repeats: int, sample_s: float) -> dict[str, tuple[float, float]]:
    """Name -> (best, median) seconds per call over ``repeats`` samples of ~``sample_s`` each.
    The rows take turns sample by sample, so a change of the machine's load touches them alike."""
    sizes = {}
    for name, call in calls.items():
        for _ in range(3):
            call()  # warm-up: caches, the first decode of a schema
        count, started = 0, time.perf_counter()
        while time.perf_counter() - started < sample_s / 4:
            call()
            count += 1
        sizes[name] = max(1, count * 4)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            size = sizes[name]
            started = time.perf_counter()
            for _ in range(size):
                call()
            samples[name].append((time.perf_counter() - started) / size)
    return {name: (min(values), statistics.median(values)) for name, values in samples.items()}


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor() or platform.machine())
    return (f"{cpu}, nproc {len(os.sched_getaffinity(0))}, {platform.python_implementation()} "
            f"{platform.python_version()}, load {', '.join(f'{v:.1f}' for v in os.getloadavg())}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions-per-topic", type=int, default=10)
    parser.add_argument("--record-bytes", type=int, default=1024, help="records per partition (default: 1024)")
    parser.add_argument("--version", type=int, default=10, help="the Produce version (default: 10; 13 names topics by id)")
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--sample-ms", type=float, default=20.0)
    args = parser.parse_args(argv)
    repeats, sample_s = args.repeats, args.sample_ms / 1000

    security = KafkaSecurity.from_config({"kafkasec.state.path": ":memory:"})
    try:
        security.create_acls([AclBinding(
            ResourcePattern(ResourceType.TOPIC, USER, PatternType.PREFIXED),
            AccessControlEntry(f"User:{USER}", "*", AclOperation.WRITE, AclPermissionType.ALLOW),
        )])
        principal = KafkaPrincipal("User", USER)
        topics = [f"{USER}-{index}" for index in range(args.topics)]
        refused_half = topics[: args.topics // 2] + [f"other-{index}" for index in range(args.topics - args.topics // 2)]
        ids = {name: uuid.uuid4() for name in topics + refused_half}
        names_by_id = {topic_id: name for name, topic_id in ids.items()}
        partitions = args.partitions_per_topic
        request = produce_request(args.version, topics, partitions, args.record_bytes, ids)
        partly = produce_request(args.version, refused_half, partitions, args.record_bytes, ids)
        by_id = produce_request(13, topics, partitions, args.record_bytes, ids)
        frame = wire.encode_request(request, correlation_id=7, client_id="rdkafka")
        decoded = wire.decode_request(frame)
        context = wire.request_context(decoded, principal, "127.0.0.1", listener_name="SASL_PLAINTEXT",
                                       security_protocol="SASL_PLAINTEXT")
        version = args.version
        total_partitions = args.topics * partitions

        # Sanity: the rule allows the whole request (so it forwards the client's bytes), and
        # refuses exactly the other half; the naive loop says the same.
        decision = authorize_request(security, context, request, version)
        assert decision.unchanged and not decision.refusals, decision
        partial = authorize_request(security, context, partly, version)
        assert partial.forward is not None and len(partial.refusals) == len(refused_half) - args.topics // 2, partial
        assert authorize_request(security, context, by_id, 13, topic_names=names_by_id).unchanged

        def naive() -> list[AuthorizationResult]:
            results = []
            for topic in request.topic_data:
                for _partition in topic.partition_data:
                    action = Action(AclOperation.WRITE, ResourcePattern(ResourceType.TOPIC, topic.name))
                    results.extend(security.authorize(context, [action]))
            return results

        assert all(result is AuthorizationResult.ALLOWED for result in naive())
        assert len(naive()) == total_partitions
        batched_actions = [rules_core.action(AclOperation.WRITE, ResourceType.TOPIC, name, partitions, True) for name in topics]

        incoming = rules_core.Incoming(security, context, ApiKey.PRODUCE, version, request, {})

        def cold() -> object:
            rules_core.action.cache_clear()
            return authorize_request(security, context, request, version)

        rows: list[tuple[str, Callable[[], object]]] = [
            (f"authorize_request, Produce v{version}, {total_partitions} partitions / {args.topics} topics, all allowed",
             lambda: authorize_request(security, context, request, version)),
            (f"naive: one security.authorize per partition ({total_partitions} calls, an Action built for each)", naive),
            ("authorize_request, its Action cache cleared before each call", cold),
            (f"security.authorize of the {args.topics} per-topic Actions alone (one batched call)",
             lambda: security.authorize(context, batched_actions)),
            (f"authorize_request, half the topics refused ({len(refused_half) - args.topics // 2} of {args.topics})",
             lambda: authorize_request(security, context, partly, version)),
            ("authorize_request, Produce v13 (topic ids mapped to names)",
             lambda: authorize_request(security, context, by_id, 13, topic_names=names_by_id)),
            (f"inside it: ProduceRule.transactional_producers (the batch header of each of the {total_partitions} "
             "partitions)", lambda: rules_data.ProduceRule.transactional_producers(incoming)),
            (f"inside it: Kafka's record checks of the {total_partitions} partitions (validation.invalid_produce_partitions)",
             lambda: [invalid_produce_partitions(version, t.name, t.partition_data) for t in request.topic_data]),
            (f"for context: wire.decode_request of the request ({len(frame):,} bytes)", lambda: wire.decode_request(frame)),
            ("for context: wire.request_context", lambda: wire.request_context(
                decoded, principal, "127.0.0.1", listener_name="SASL_PLAINTEXT", security_protocol="SASL_PLAINTEXT")),
        ]
        measured = time_calls(dict(rows), repeats, sample_s)
        steps = gateway_steps(security, principal, topics[0], args.record_bytes)
        measured_steps = time_calls(dict(steps), repeats, sample_s)
    finally:
        security.close()

    names = [name for name, _ in rows]
    rule_best = measured[names[0]][0]
    naive_best = measured[names[1]][0]
    print(f"Machine: {machine()}; {repeats} samples of ~{args.sample_ms:g} ms per row.\n")
    print("| what | best µs | median µs | note |")
    print("|---|---:|---:|---|")
    for index, name in enumerate(names):
        best, median = measured[name]
        if index == 0:
            note = f"target <= {TARGET_US:g} µs: {'met' if best * 1e6 <= TARGET_US else 'NOT met'}"
        elif index == 1:
            note = f"naive / authorize_request = {naive_best / rule_best:.1f}x"
        else:
            note = f"{best / rule_best:.2f}x authorize_request"
        print(f"| {name} | {best * 1e6:,.1f} | {median * 1e6:,.1f} | {note} |")
    print(f"\nThe gateway's own steps for one single-record Produce v{SINGLE_VERSION} (one partition, "
          f"{args.record_bytes} B of records), as GatewayEndpoint._forward and _client_answer take them (the "
          "event loop, its tasks and futures, and the socket calls are not in these):\n")
    print("| step | best µs | median µs |")
    print("|---|---:|---:|")
    total = 0.0
    for name, _ in steps:
        best, median = measured_steps[name]
        total += best
        print(f"| {name} | {best * 1e6:,.1f} | {median * 1e6:,.1f} |")
    print(f"| sum of the steps | {total * 1e6:,.1f} | |")
    return 0


SINGLE_VERSION = 10


def gateway_steps(security, principal, topic: str, record_bytes: int) -> list[tuple[str, Callable[[], object]]]:
    """What the gateway does to one single-record Produce and its answer, step by step."""
    version = SINGLE_VERSION
    request = produce_request(version, [topic], 1, record_bytes, {topic: uuid.uuid4()})
    frame = wire.encode_request(request, correlation_id=7, client_id="rdkafka")
    decoded = wire.decode_request(frame)
    context = wire.request_context(decoded, principal, "127.0.0.1", listener_name="SASL_PLAINTEXT",
                                   security_protocol="SASL_PLAINTEXT")
    assert authorize_request(security, context, decoded.body, version).passes_response
    schema = wire.response_schema(ApiKey.PRODUCE, version)
    topic_type = wire.item_type(schema, "responses")
    partition_type = wire.item_type(topic_type, "partition_responses")
    answer = wire.build(schema, responses=(wire.build(
        topic_type, name=topic, partition_responses=(wire.build(partition_type, index=0, base_offset=42),)),))
    answer_frame = wire.encode_response(answer, correlation_id=3)

    def decode_answer():
        _, body = wire.decode_response(answer_frame, ApiKey.PRODUCE, version)
        return brokers_in(ApiKey.PRODUCE, body)

    return [
        (f"wire.decode_request ({len(frame):,}-byte frame)", lambda: wire.decode_request(frame)),
        ("wire.request_context", lambda: wire.request_context(
            decoded, principal, "127.0.0.1", listener_name="SASL_PLAINTEXT", security_protocol="SASL_PLAINTEXT")),
        ("authorize_request (1 partition)", lambda: authorize_request(security, context, decoded.body, version)),
        ("the request upstream: framed (size and correlation id)", lambda: framed(frame, 9, 4)),
        ("the answer: wire.decode_response + brokers_in (Produce answers may name brokers, KIP-951)", decode_answer),
        ("the answer to the client: framed (size and correlation id)", lambda: framed(answer_frame, 7, 0)),
    ]


if __name__ == "__main__":
    sys.exit(main())
