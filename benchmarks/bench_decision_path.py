"""What users run against what the index can do: KafkaSecurity's decisions beside the bare index.

    python benchmarks/bench_decision_path.py                 # 10k, 50k and 200k resources
    python benchmarks/bench_decision_path.py --sizes 10000   # one size
    python benchmarks/bench_decision_path.py --markdown benchmarks/README.md

For each size of Kafka's AuthorizerBenchmark workload (benchmarks/authorizer_workload.py,
aclCount 10, denyPercentage 20) the same ACLs are loaded into a bare StandardAuthorizer, into a
KafkaSecurity without plugins, and into a KafkaSecurity with the JSON-lines audit plugin on.
Each question is timed on each of them in alternation, round after round, so that a noisy
neighbour slows all alike; the table keeps each one's median and the ratios. Every answer is
checked against the reference authorizer (a plain scan of Kafka's rules) before timing.

The questions: Kafka's benchmark actions (WRITE and READ on its resource, under the giant
wildcard section), the ordinary question (READ on a GROUP with its own literal ACL, asked again
and again by the same client), KIP-430's authorized operations, and a Metadata-sized batch
(authorized operations of 50 topics).
"""

from __future__ import annotations

import argparse
import functools
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["KAFKASEC_LOAD_PLUGINS"] = ""  # only the plugins each KafkaSecurity here is given

import kafkasec_audit_jsonl  # noqa: E402
from kafkasec import AclBinding, KafkaSecurity, StandardAuthorizer  # noqa: E402
from kafkasec.acl import ResourcePattern, ResourceType  # noqa: E402
from kafkasec.authorizer.reference import ReferenceAuthorizer  # noqa: E402
from kafkasec.context import Action  # noqa: E402

from authorizer_workload import BENCH_RESOURCE, READ_ACTION, WRITE_ACTION, build_workload, context  # noqa: E402

ORDINARY_GROUP = ResourcePattern(ResourceType.GROUP, "billing")
ORDINARY_ACL = AclBinding.of("GROUP", "billing", "LITERAL", "User:test-user", "*", "READ", "ALLOW")
ORDINARY_ACTION = Action("READ", ORDINARY_GROUP)
METADATA_TOPICS = [ResourcePattern(ResourceType.TOPIC, f"foo-bar35_resource-{n}") for n in range(1, 51)]


def per_call_ns(function, calls: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(calls):
        function()
    return (time.perf_counter_ns() - start) / calls


def measure(candidates: dict, calls: int, rounds: int) -> dict[str, float]:
    """Median ns per call of each candidate, timed in alternation round after round."""
    for function in candidates.values():
        per_call_ns(function, max(1, calls // 10))  # warm caches and the memo
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    for _ in range(rounds):
        for name, function in candidates.items():
            samples[name].append(per_call_ns(function, calls))
    return {name: statistics.median(values) for name, values in samples.items()}


def run_size(resources: int, rounds: int, audit_path: str) -> list[dict]:
    workload = build_workload(resources, 10, 20)
    acls = {**workload.acls, "ordinary": ORDINARY_ACL}
    bare = StandardAuthorizer()
    bare.load_snapshot(acls)
    plain = KafkaSecurity()
    plain.authorizer.load_snapshot(acls)  # the follower's feed, as a node applies a snapshot
    audited = KafkaSecurity(
        config={kafkasec_audit_jsonl.PATH_SETTING: audit_path}, plugins=[kafkasec_audit_jsonl]
    )
    audited.authorizer.load_snapshot(acls)
    reference = ReferenceAuthorizer(acls.values())
    del workload
    gc.collect()
    ctx = context()
    rows = []
    questions = [
        ("authorize WRITE (Kafka's action)", "authorize", [WRITE_ACTION]),
        ("authorize READ (Kafka's action)", "authorize", [READ_ACTION]),
        ("ordinary question (READ, own ACL)", "authorize", [ORDINARY_ACTION]),
        ("authorized_operations (KIP-430)", "authorized_operations", BENCH_RESOURCE),
        ("authorized operations of 50 topics", "authorized_operations_many", METADATA_TOPICS),
    ]
    for label, method, argument in questions:
        expected = getattr(reference, method)(ctx, argument)
        for name, authorizer in (("bare", bare), ("facade", plain), ("audited", audited)):
            answer = getattr(authorizer, method)(ctx, argument)
            assert answer == expected, f"{label}: {name} says {answer}, the reference {expected}"
        calls = 2_000 if method == "authorized_operations_many" else 20_000
        medians = measure(
            {name: functools.partial(getattr(authorizer, method), ctx, argument)
             for name, authorizer in (("bare", bare), ("facade", plain), ("audited", audited))},
            calls, rounds,
        )
        rows.append({"resources": resources, "question": label, **medians})
        print(f"{resources:>7,} {label:<38} bare {medians['bare'] / 1e3:6.2f} us  facade {medians['facade'] / 1e3:6.2f} us"
              f" ({medians['facade'] / medians['bare']:.2f}x)  audited {medians['audited'] / 1e3:6.2f} us"
              f" ({medians['audited'] / medians['facade']:.2f}x facade)", flush=True)
    plain.close()
    audited.close()
    return rows


def render(rows: list[dict]) -> str:
    lines = [
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d')}; medians of alternating rounds in one process.",
        "",
        "| resources | question | bare index | KafkaSecurity | facade / bare | with JSON-lines audit | audit / facade |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['resources']:,} | {row['question']} | {row['bare'] / 1e3:.2f} µs | {row['facade'] / 1e3:.2f} µs | "
            f"{row['facade'] / row['bare']:.2f}x | {row['audited'] / 1e3:.2f} µs | {row['audited'] / row['facade']:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,50000,200000", help="resourceCount values")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--markdown", type=Path, help="write the table between the bench:decision-path markers there")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for size in (int(s) for s in args.sizes.split(",")):
            rows += run_size(size, args.rounds, os.path.join(scratch, "audit.jsonl"))
    table = render(rows)
    print(table)
    if args.markdown:
        text = args.markdown.read_text(encoding="utf-8")
        start, end = "<!-- bench:decision-path -->", "<!-- /bench:decision-path -->"
        if start in text and end in text:
            before, rest = text.split(start, 1)
            text = before + start + "\n" + table + rest[rest.index(end):]
        else:
            text += f"\n{start}\n{table}{end}\n"
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
