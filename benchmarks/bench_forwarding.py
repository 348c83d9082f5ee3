"""KIP-590 hot paths, side by side with a baseline in one run: the principal serde and one
forwarded request (screening, envelope, controller side, answer).

    python benchmarks/bench_forwarding.py [--quick]

Baselines: for the serde, kio's generic reader and writer of the same generated schema
(DefaultPrincipalData); for the broker side, the same exchange with the controller's answer
decoded and encoded again instead of passed through. The controller side (open_envelope: the
checks, the principal, the inner request) has no baseline.
Prints a Markdown table with ratios and the machine.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.default_principal_data.v0 import DefaultPrincipalData
from kio.serial import entity_reader

from kafkasec import DefaultPrincipalSerde, KafkaPrincipal, KafkaSecurity, RequestContext
from kafkasec.protocol import wire
from kafkasec.protocol.acl_apis import HANDLERS
from kafkasec.protocol.forwarding import ForwardingExchange, open_envelope


def per_call_us(function, samples: int, target_s: float) -> float:
    """Median µs per call over ``samples`` timed loops of ~``target_s`` each."""
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            function()
        if time.perf_counter() - start >= target_s / 4:
            break
        calls *= 2
    calls = max(1, int(calls * target_s / max(time.perf_counter() - start, 1e-9)))
    timings = []
    for _ in range(samples):
        start = time.perf_counter_ns()
        for _ in range(calls):
            function()
        timings.append((time.perf_counter_ns() - start) / calls / 1000)
    return statistics.median(timings)


def serde_cases():
    serde = DefaultPrincipalSerde()
    principal = KafkaPrincipal("User", "alice-with-a-longer-name", False)
    data = serde.serialize(principal)
    reader = entity_reader(DefaultPrincipalData)

    def kio_serialize():
        return b"\x00\x00" + wire.encode(DefaultPrincipalData(type_="User", name=principal.name, token_authenticated=False))

    def kio_deserialize():
        body, _ = reader(data, 2)
        return KafkaPrincipal(body.type_, body.name, body.token_authenticated)

    return [
        ("serialize a principal", lambda: serde.serialize(principal), kio_serialize),
        ("deserialize a principal", lambda: serde.deserialize(data), kio_deserialize),
    ]


def forwarding_cases():
    settings = {"super.users": "User:admin;User:broker"}
    broker, controller = KafkaSecurity.from_config(settings), KafkaSecurity.from_config(settings)
    creation = AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a",
                           host="*", operation=3, permission_type=3)
    frame = wire.encode_request(CreateAclsRequest(creations=(creation,)), correlation_id=1, client_id="c")
    admin = RequestContext.for_principal("User:admin", "10.0.0.5", client_id="c")
    from_broker = RequestContext.for_principal("User:broker", "10.0.0.1")
    envelope = ForwardingExchange(broker, admin, frame, now_ms=0).send_envelope(now_ms=0)
    opened = open_envelope(controller, from_broker, envelope, is_active_controller=True)
    request = opened.request
    body = HANDLERS[request.api_key](controller, opened.context, request.body, request.api_version)
    answer = opened.respond(wire.encode_response(body, correlation_id=opened.context.correlation_id))

    def broker_side(decode_answer: bool):
        forwarding = ForwardingExchange(broker, admin, frame, now_ms=0)
        forwarding.send_envelope(now_ms=0)
        forwarding.receive_envelope_response(answer, now_ms=1)
        if decode_answer:
            correlation_id, response = wire.decode_response(forwarding.client_response, 30, 3)
            return wire.encode_response(response, correlation_id=correlation_id)
        return forwarding.client_response

    def controller_side():
        return open_envelope(controller, from_broker, envelope, is_active_controller=True)

    return [
        ("broker: screen, envelope, answer (CreateAcls)", lambda: broker_side(False), lambda: broker_side(True)),
        ("controller: open_envelope", controller_side, None),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter samples")
    args = parser.parse_args()
    samples, target = (5, 0.02) if args.quick else (11, 0.1)
    print(f"machine: {platform.platform()}, {os.cpu_count()} CPUs, {sys.version.split()[0]}\n")
    print("| path | kafkasec µs | baseline µs | baseline / kafkasec |")
    print("|---|---|---|---|")
    for name, ours, baseline in [*serde_cases(), *forwarding_cases()]:
        mine = per_call_us(ours, samples, target)
        if baseline is None:
            print(f"| {name} | {mine:.2f} | — | — |")
            continue
        theirs = per_call_us(baseline, samples, target)
        print(f"| {name} | {mine:.2f} | {theirs:.2f} | {theirs / mine:.2f}x |")


if __name__ == "__main__":
    main()
