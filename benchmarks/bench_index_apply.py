"""One ACL change applied to a large index, and authorize on it, against an earlier commit's
index, side by side in one process.

    python benchmarks/bench_index_apply.py --acls 1000000 --rev a69ec9d

The index module of ``--rev`` is loaded from git beside the working tree's; both index the
same ACLs (Kafka's AuthorizerBenchmark shape: many topics, 20 principals each). Measured: µs
per single-ACL add and remove (``AclIndex.apply`` with one ACL), and ns per authorize of a
READ on a topic with its own ACLs, through the same StandardAuthorizer given either index.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

from kafkasec import AclBinding, Action, RequestContext, ResourcePattern
from kafkasec.authorizer import index as current_index
from kafkasec.authorizer.standard import StandardAuthorizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def index_module_at(revision: str):
    source = subprocess.run(["git", "show", f"{revision}:kafkasec/authorizer/index.py"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    path = os.path.join(tempfile.mkdtemp(), "index_at_revision.py")
    with open(path, "w") as file:
        file.write(source)
    spec = importlib.util.spec_from_file_location("index_at_revision", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def acl(number: int) -> AclBinding:
    return AclBinding.of("TOPIC", f"topic-{number // 20}", "LITERAL", f"User:u{number % 20}", "*", "READ", "ALLOW")


def measure(module, acls: int, changes: int) -> dict:
    stored = [module.StoredAcl(f"id-{n}", acl(n)) for n in range(acls)]
    with current_index.gc_paused():
        index = module.AclIndex.build(stored)
    adds, removes = [], []
    for n in range(changes):
        new = module.StoredAcl(f"new-{n}", acl(acls + n))
        started = time.perf_counter()
        index = index.apply([new], ())
        adds.append(time.perf_counter() - started)
        started = time.perf_counter()
        index = index.apply((), [stored[n * 7]])
        removes.append(time.perf_counter() - started)
    authorizer = StandardAuthorizer()
    authorizer._index = index  # the same rules over either index
    context = RequestContext.for_principal("User:u3", "10.0.0.1")
    actions = [Action("READ", ResourcePattern("TOPIC", f"topic-{(acls // 40)}"))]
    authorize = authorizer.authorize
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        for _ in range(5000):
            authorize(context, actions)
        timings.append((time.perf_counter() - started) / 5000)
    return {
        "add_us": statistics.mean(adds) * 1e6,
        "remove_us": statistics.mean(removes) * 1e6,
        "add_p99_us": sorted(adds)[int(len(adds) * 0.99)] * 1e6,
        "authorize_ns": statistics.median(timings) * 1e9,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--acls", type=int, default=1_000_000)
    parser.add_argument("--changes", type=int, default=500)
    parser.add_argument("--rev", default="HEAD", help="the commit whose index to compare with")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}, {time.strftime('%Y-%m-%d')}; "
          f"{args.acls:,} ACLs, {args.changes} changes")
    baseline = measure(index_module_at(args.rev), args.acls, args.changes)
    ours = measure(current_index, args.acls, args.changes)
    print(f"| | {args.rev} | working tree | ratio |\n|---|---:|---:|---:|")
    for key, label in (("add_us", "add one ACL, µs (mean)"), ("add_p99_us", "add one ACL, µs (p99)"),
                       ("remove_us", "remove one ACL, µs (mean)"), ("authorize_ns", "authorize READ, ns")):
        print(f"| {label} | {baseline[key]:.1f} | {ours[key]:.1f} | {ours[key] / baseline[key]:.2f}x |")


if __name__ == "__main__":
    main()
