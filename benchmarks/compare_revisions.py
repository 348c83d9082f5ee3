"""Ours against an earlier commit, side by side on the same machine in one run.

    python benchmarks/compare_revisions.py --rev a79970a [--resources 50000] [--rounds 3]

The working tree and a git worktree of REV run the same measurements in child processes, in
alternation (current, REV, current, REV, ...), so that a noisy neighbour hurts both alike; the
table keeps each side's best round and the ratio REV / current (above 1: we got faster). The
workload is benchmarks/authorizer_workload.py (Kafka's AuthorizerBenchmark), built by the
current tree's workload code against each side's kafkasec, through the public API only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent

IMPORT_TREE_UNDER_TEST = r"""
import sys
# Import kafkasec from the tree under test, not from the editable install of the working tree.
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in type(f).__module__.lower()]
"""
"""The start of a child script that puts the tree to measure first on sys.path."""


@contextlib.contextmanager
def revision_worktree(revision: str) -> Iterator[Path]:
    """A detached git worktree of ``revision``, removed when the block ends."""
    with tempfile.TemporaryDirectory() as scratch:
        worktree = Path(scratch) / "rev"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), revision],
                       check=True, capture_output=True)
        try:
            yield worktree
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)], check=True)


CHILD = IMPORT_TREE_UNDER_TEST + r"""
import json, time, timeit
sys.path[:0] = [sys.argv[5], sys.argv[1]]  # that tree; benchmarks/ of the current tree (workload)
import kafkasec
import authorizer_workload as w

resources, acl_count, deny = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
workload = w.build_workload(resources, acl_count, deny)
authorizer = kafkasec.StandardAuthorizer(initial_load_complete=False)
started = time.perf_counter()
authorizer.load_snapshot(workload.acls)
authorizer.complete_initial_load()
load_s = time.perf_counter() - started
context, rbt_context = w.context(), w.by_resource_type_context()

def best_us(call, number):
    return min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6

started = time.perf_counter()
authorizer.authorize_by_resource_type(rbt_context, "READ", "TOPIC")
cold_ms = (time.perf_counter() - started) * 1e3
print(json.dumps({
    "kafkasec": kafkasec.__file__,
    "load_s": load_s,
    "authorize_write_us": best_us(lambda: authorizer.authorize(context, [w.WRITE_ACTION]), 20000),
    "authorize_read_us": best_us(lambda: authorizer.authorize(context, [w.READ_ACTION]), 20000),
    "authorized_operations_us": best_us(lambda: authorizer.authorized_operations(context, w.BENCH_RESOURCE), 20000),
    "by_resource_type_first_ms": cold_ms,
    "by_resource_type_us": best_us(lambda: authorizer.authorize_by_resource_type(rbt_context, "READ", "TOPIC"), 200),
}))
"""

METRICS = [
    ("load_s", "load_snapshot, s"),
    ("authorize_write_us", "authorize WRITE (denied), µs"),
    ("authorize_read_us", "authorize READ, µs"),
    ("authorized_operations_us", "authorized_operations, µs"),
    ("by_resource_type_first_ms", "authorize_by_resource_type, first call, ms"),
    ("by_resource_type_us", "authorize_by_resource_type, repeated, µs"),
]


def measure(source_root: Path, args) -> dict:
    env = dict(os.environ, KAFKASEC_LOAD_PLUGINS="")
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT / "benchmarks"), str(args.resources), str(args.acl_count),
         str(args.deny), str(source_root)],
        env=env, capture_output=True, text=True, check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if not result["kafkasec"].startswith(str(source_root)):
        raise SystemExit(f"the child imported {result['kafkasec']}, not the tree under {source_root}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", required=True, help="the earlier commit to compare with")
    parser.add_argument("--resources", type=int, default=50_000)
    parser.add_argument("--acl-count", type=int, default=10)
    parser.add_argument("--deny", type=float, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with revision_worktree(args.rev) as worktree:
        best: dict[str, dict[str, float]] = {"current": {}, "rev": {}}
        for _ in range(args.rounds):
            for side, root in (("current", ROOT), ("rev", worktree)):
                for key, value in measure(root, args).items():
                    if key != "kafkasec":
                        best[side][key] = min(value, best[side].get(key, float("inf")))
    print(f"{args.resources} resources x {args.acl_count} ACLs, deny {args.deny}%; best of {args.rounds} "
          f"alternating rounds; {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}\n")
    print(f"| measurement | {args.rev} | current | {args.rev} / current |")
    print("|---|---:|---:|---:|")
    for key, label in METRICS:
        old, new = best["rev"][key], best["current"][key]
        print(f"| {label} | {old:.3g} | {new:.3g} | {old / new:.2f}x |")


if __name__ == "__main__":
    main()
