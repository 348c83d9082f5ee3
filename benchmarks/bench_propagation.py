"""How fast a change reaches every node, what applying one costs, and whether authorizing
slows down while changes flow.

    python benchmarks/bench_propagation.py                       # SQLite, 1/100/1000 changes/s
    python benchmarks/bench_propagation.py --url postgresql://... # PostgreSQL
    python benchmarks/bench_propagation.py --apply --acls 1000000 # apply cost at 1M ACLs

Propagation: three follower processes (each a KafkaSecurity on the state) note the wall-clock
time at which each offset is applied, while this process writes one ACL per change at a fixed
rate and notes when each commit returned; latency = applied - committed, per record and node.
Meanwhile each follower authorizes in a loop; the median authorize latency before the writes
and during them is reported side by side. Apply cost: a follower with N ACLs loaded applies
single-ACL records one at a time (read + check + index change), timed per change.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

from kafkasec import AclBinding, KafkaSecurity

FOLLOWER = r"""
import json, sys, threading, time
from kafkasec import Action, KafkaSecurity, RequestContext, ResourcePattern
location, expected, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
security = KafkaSecurity.from_config({"kafkasec.state.url": location})
follower = security.follower
applied, samples = {}, []
def watch():
    seen = follower.applied_offset
    while seen < expected:
        follower.wait_for(seen + 1, 30)
        now, reached = time.time(), follower.applied_offset
        for offset in range(seen + 1, reached + 1):
            applied[offset] = now
        seen = reached
watcher = threading.Thread(target=watch, daemon=True)
watcher.start()
print("ready", follower.applied_offset, flush=True)
context = RequestContext.for_principal("User:alice", "10.0.0.1")
actions = [Action("READ", ResourcePattern("TOPIC", "bench-topic-17"))]
while watcher.is_alive():
    started = time.perf_counter()
    for _ in range(100):
        security.authorize(context, actions)
    samples.append((time.time(), (time.perf_counter() - started) / 100))
    time.sleep(0.001)
json.dump({"applied": applied, "samples": samples}, open(out, "w"))
security.close()
"""


def acl(number: int) -> AclBinding:
    # Kafka's AuthorizerBenchmark shape: many resources, a few principals each.
    return AclBinding.of("TOPIC", f"bench-topic-{number // 20}", "LITERAL", f"User:u{number % 20}", "*", "READ", "ALLOW")


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(int(len(ordered) * fraction), len(ordered) - 1)]


def propagation(location: str, rate: int, changes: int, followers: int) -> dict:
    writer = KafkaSecurity.from_config({"kafkasec.state.url": location})
    start_offset = writer.store.latest_offset()
    expected = start_offset + changes
    outputs = [tempfile.mktemp(suffix=".json") for _ in range(followers)]
    processes = [
        subprocess.Popen([sys.executable, "-c", FOLLOWER, location, str(expected), out], stdout=subprocess.PIPE, text=True)
        for out in outputs
    ]
    for process in processes:
        assert process.stdout.readline().startswith("ready")
    time.sleep(1.0)  # idle authorize samples first
    committed, writes_started = {}, time.time()
    interval, next_at = 1 / rate, time.perf_counter()
    for number in range(changes):
        next_at += interval
        writer.create_acls([acl(start_offset + number)])
        committed[writer.applied_offset] = time.time()
        delay = next_at - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    writes_ended = time.time()
    for process in processes:
        process.wait(120)
    latencies, idle, busy = [], [], []
    for out in outputs:
        with open(out) as file:
            result = json.load(file)
        os.unlink(out)
        latencies += [(result["applied"][str(offset)] - at) * 1000 for offset, at in committed.items()]
        idle += [s for t, s in result["samples"] if t < writes_started]
        busy += [s for t, s in result["samples"] if writes_started <= t <= writes_ended]
    writer.close()
    return {
        "rate": rate,
        "achieved": changes / (writes_ended - writes_started),
        "p50_ms": percentile(latencies, 0.5),
        "p99_ms": percentile(latencies, 0.99),
        "authorize_idle_us": statistics.median(idle) * 1e6,
        "authorize_busy_us": statistics.median(busy) * 1e6,
    }


def apply_cost(acls: int, changes: int) -> dict:
    """µs per single-ACL change applied by a follower whose authorizer holds ``acls`` ACLs."""
    from kafkasec.authorizer.standard import StandardAuthorizer
    from kafkasec.store import MemoryStateStore
    from kafkasec.store.follower import StateFollower
    from kafkasec.store.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

    store = MemoryStateStore()
    with store.write() as transaction:
        transaction.append([AccessControlEntryRecord(f"id-{n}", acl(n)) for n in range(acls)])
    authorizer = StandardAuthorizer(initial_load_complete=False)
    follower = StateFollower(store, authorizer)
    follower.catch_up()
    timings = []
    for n in range(changes):
        record = AccessControlEntryRecord(f"new-{n}", acl(acls + n)) if n % 2 == 0 else RemoveAccessControlEntryRecord(f"id-{n}")
        with store.write() as transaction:
            transaction.append([record])
        started = time.perf_counter()
        follower.catch_up()
        timings.append(time.perf_counter() - started)
    return {"acls": acls, "mean_us": statistics.mean(timings) * 1e6, "p99_us": percentile(timings, 0.99) * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="the state (default: a SQLite file in a temp dir)")
    parser.add_argument("--rates", default="1,100,1000", help="changes per second to try")
    parser.add_argument("--seconds", type=float, default=5, help="how long each rate runs")
    parser.add_argument("--followers", type=int, default=3)
    parser.add_argument("--apply", action="store_true", help="measure apply cost instead")
    parser.add_argument("--acls", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=2000)
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}")
    if args.apply:
        result = apply_cost(args.acls, args.changes)
        print("| ACLs loaded | apply µs/change (mean) | p99 |\n|---:|---:|---:|")
        print(f"| {result['acls']:,} | {result['mean_us']:.1f} | {result['p99_us']:.1f} |")
        return
    location = args.url or os.path.join(tempfile.mkdtemp(), "state.db")
    backend = "PostgreSQL" if location.startswith("postgres") else "SQLite"
    print("| backend | changes/s asked | achieved | p50 ms | p99 ms | authorize µs idle | while changes flow | ratio |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for rate in (int(r) for r in args.rates.split(",")):
        result = propagation(location, rate, max(int(rate * args.seconds), 5), args.followers)
        print(
            f"| {backend} | {rate} | {result['achieved']:.0f} | {result['p50_ms']:.1f} | {result['p99_ms']:.1f} | "
            f"{result['authorize_idle_us']:.2f} | {result['authorize_busy_us']:.2f} | "
            f"{result['authorize_busy_us'] / result['authorize_idle_us']:.2f}x |",
            flush=True,
        )


if __name__ == "__main__":
    main()
