"""The vectorized evaluator (spark_udfs.evaluator.CompiledAcls) against the row-at-a-time
baseline (StandardAuthorizer.authorized_operations per pair), side by side in one run.

    python benchmarks/bench_grid.py [--quick] [--acls 10000,100000] [--pairs 1000000]

Workload: N ACLs over TOPIC and GROUP resources, a mix of LITERAL and PREFIXED patterns, ALLOW
and DENY, principals User:u0..u{N/10}, hosts mostly '*' and some specific, plus a few User:*
ACLs. Pairs: random principals (half named in ACLs, half not) x resource names drawn from 10,000
distinct resources (half covered by ACLs), as in a grid, on one core. The evaluator's time includes classifying the distinct
resources; the compile of the index is timed apart. Prints a Markdown table and the machine.

Then the compact grid of 20,000 principals x 50,000 resources, and (issue 42) the same grid's
driver-side build with its principals expanded by the groupfile plugin, each principal in 5 of 100
groups that have ACLs of their own, against the same build from the same ACLs without the plugin.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import sys
import time

import numpy as np

from kafkasec import AclBinding, KafkaPrincipal, RequestContext, ResourcePattern, StandardAuthorizer
from kafkasec.acl import operations_to_bitfield
from spark_udfs.compact import CompactGrid
from spark_udfs.evaluator import CompiledAcls

OPERATIONS = ["READ", "WRITE", "DESCRIBE", "ALTER", "ALL", "CREATE"]


def workload(acl_count: int, seed: int = 7) -> StandardAuthorizer:
    rng = random.Random(seed)
    principals = max(acl_count // 10, 1)
    bindings = []
    for i in range(acl_count):
        resource_type = "TOPIC" if i % 5 else "GROUP"
        prefixed = i % 7 == 0
        name = f"app{i % (acl_count // 3 + 1)}-" if prefixed else f"app{i % (acl_count // 3 + 1)}-topic{i}"
        principal = "User:*" if i % 97 == 0 else f"User:u{rng.randrange(principals)}"
        host = "*" if i % 11 else f"10.0.{i % 3}.{i % 200}"
        bindings.append(AclBinding.of(resource_type, name, "PREFIXED" if prefixed else "LITERAL", principal, host,
                                      rng.choice(OPERATIONS), "DENY" if i % 13 == 0 else "ALLOW"))
    authorizer = StandardAuthorizer("User:admin")
    authorizer.create_acls(bindings)
    return authorizer


def pairs(acl_count: int, count: int, seed: int = 11):
    rng = np.random.default_rng(seed)
    principals = max(acl_count // 10, 1)
    named = rng.integers(0, principals, count)
    principal = np.where(rng.random(count) < 0.5, np.char.add("User:u", named.astype(str)), np.char.add("User:x", named.astype(str)))
    host = np.char.add("10.0.0.", rng.integers(0, 255, count).astype(str))
    resource_type = np.where(rng.random(count) < 0.8, 2, 3)
    # Pairs of a grid: drawn from 10,000 distinct resources, as an estate's topics and groups.
    index = rng.integers(0, acl_count, 10_000)[rng.integers(0, 10_000, count)]
    covered = np.char.add(np.char.add(np.char.add("app", (index % (acl_count // 3 + 1)).astype(str)), "-topic"), index.astype(str))
    name = np.where(rng.random(count) < 0.5, covered, np.char.add("other-", index.astype(str)))
    return principal.tolist(), host.tolist(), resource_type, name.tolist()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--acls", default="10000,100000")
    parser.add_argument("--pairs", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    pair_count = 200_000 if args.quick else args.pairs
    baseline_count = 20_000 if args.quick else 100_000
    print(f"machine: {platform.platform()}, cpus {os.cpu_count()}, python {sys.version.split()[0]}, "
          f"numpy {np.__version__}, load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print("| ACLs | compile | evaluator | row-at-a-time authorized_operations | evaluator / baseline speed |")
    print("|---|---|---|---|---|")
    for acl_count in (int(n) for n in args.acls.split(",")):
        authorizer = workload(acl_count)
        start = time.perf_counter()
        compiled = CompiledAcls.from_authorizer(authorizer)
        compile_s = time.perf_counter() - start
        principals, hosts, types, names = pairs(acl_count, pair_count)
        start = time.perf_counter()
        bits = compiled.authorized_operations(principals, hosts, types, names)
        ours = pair_count / (time.perf_counter() - start)
        contexts = [RequestContext(KafkaPrincipal.parse(p), h) for p, h in zip(principals[:baseline_count], hosts[:baseline_count])]
        patterns = [ResourcePattern(int(t), n) for t, n in zip(types[:baseline_count], names[:baseline_count])]
        start = time.perf_counter()
        expected = [operations_to_bitfield(authorizer.authorized_operations(c, p)) for c, p in zip(contexts, patterns)]
        theirs = baseline_count / (time.perf_counter() - start)
        assert bits[:baseline_count].tolist() == expected, "the evaluator disagrees with authorized_operations"
        print(f"| {acl_count:,} | {compile_s:.2f} s | {ours / 1e6:.2f} M pairs/s | {theirs / 1e6:.3f} M pairs/s "
              f"| {ours / theirs:.1f}x |")
    compact_grid(10_000, 2_000 if args.quick else 20_000, 5_000 if args.quick else 50_000)
    group_expansion(10_000, 2_000 if args.quick else 20_000, 5_000 if args.quick else 50_000)
    worker_memory(100_000)
    return 0


def worker_memory(acl_count: int) -> None:
    """What a Spark Python worker holds for the evaluator at ``acl_count`` ACLs: the broadcast's
    pickled size, and the peak Python allocation (tracemalloc) of unpickling it and evaluating
    one 100,000-row Arrow batch, with the process's peak RSS for the whole run."""
    import pickle
    import resource
    import tracemalloc

    data = pickle.dumps(CompiledAcls.from_authorizer(workload(acl_count)))
    principals, hosts, types, names = pairs(acl_count, 100_000)
    tracemalloc.start()
    compiled = pickle.loads(data)
    compiled.authorized_operations(principals, hosts, types, names)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nWorker memory, {acl_count:,} ACLs: broadcast {len(data) / 2**20:.1f} MiB pickled; unpickle + one "
          f"100,000-row batch peaks at {peak / 2**20:.0f} MiB traced; this whole benchmark process peaked at "
          f"{rss:.0f} MiB RSS (target: no Python worker above 2 GB)")


def grid_pairs(acl_count: int, principal_count: int, resource_count: int, rng: random.Random) -> tuple[list, list]:
    """The compact grid's principals (the ACLs' named principals first, then unnamed ones, on
    random hosts) and resources (half named like the ACLs' topics)."""
    named = max(acl_count // 10, 1)
    principals = [(f"User:u{i % named}" if i < named else f"User:x{i}", f"10.0.{rng.randrange(3)}.{rng.randrange(200)}")
                  for i in range(principal_count)]
    resources = [("TOPIC" if i % 5 else "GROUP",
                  f"app{i % (acl_count // 3 + 1)}-topic{i}" if i % 2 else f"other-{i}") for i in range(resource_count)]
    return principals, resources


def compact_grid(acl_count: int, principal_count: int, resource_count: int) -> None:
    """The issue's grid: principals x resources in compact form, in process, timed whole
    (compile, classification, base blocks, exceptions); then spot checks against the authorizer."""
    authorizer = workload(acl_count)
    rng = random.Random(3)
    principals, resources = grid_pairs(acl_count, principal_count, resource_count, rng)
    start = time.perf_counter()
    compact = CompactGrid.build(CompiledAcls.from_authorizer(authorizer), principals, resources)
    elapsed = time.perf_counter() - start
    for _ in range(2000):
        i, j = rng.randrange(principal_count), rng.randrange(resource_count)
        p, h = principals[i]
        rt, n = resources[j]
        want = operations_to_bitfield(authorizer.authorized_operations(RequestContext(KafkaPrincipal.parse(p), h), ResourcePattern(rt, n)))
        assert compact.bits(i, j) == want, (p, h, rt, n)
    print(f"\nCompact grid, {acl_count:,} ACLs: {principal_count:,} principals x {resource_count:,} resources = "
          f"{compact.cells:,} cells in {elapsed:.2f} s ({compact.cells / elapsed / 1e6:,.0f} M cells/s); "
          f"{len(compact.class_is_super):,} principal classes, {len(compact.base):,} resource classes, "
          f"{compact.base.size:,} base values, {len(compact.exception_bits):,} exceptions; 2,000 random cells checked")


GROUPS = 100
GROUPS_PER_PRINCIPAL = 5


def group_expansion(acl_count: int, principal_count: int, resource_count: int) -> None:
    """The compact grid's driver-side build (compile with the principals' expansion, then
    CompactGrid.build) of a KafkaSecurity whose groupfile plugin puts each principal in
    GROUPS_PER_PRINCIPAL of GROUPS groups, each group with three ACLs of its own, against the same
    build from the same ACLs without the plugin (its groups then apply to nobody); best of three
    each; then spot checks of the expanded grid against the security's KIP-430 answers."""
    import tempfile

    import kafkasec_groupfile
    from kafkasec import KafkaSecurity
    from spark_udfs.rules import compile_acls

    rng = random.Random(5)
    principals, resources = grid_pairs(acl_count, principal_count, resource_count, rng)
    bindings = [stored.binding for stored in workload(acl_count).stored_acls()]
    for group in range(GROUPS):  # a prefix of the ACLs' topics, one of their topics, one of the other names
        bindings += [AclBinding.of("TOPIC", f"app{group}-", "PREFIXED", f"Group:g{group}", "*", "READ", "ALLOW"),
                     AclBinding.of("TOPIC", f"app{group * 7}-topic{group * 7}", "LITERAL", f"Group:g{group}", "*", "WRITE", "ALLOW"),
                     AclBinding.of("GROUP", f"other-{group * 10}", "LITERAL", f"Group:g{group}", "*", "READ", "ALLOW")]
    members: dict[int, list[str]] = {group: [] for group in range(GROUPS)}
    for name in dict.fromkeys(name for name, _ in principals):
        for group in rng.sample(range(GROUPS), GROUPS_PER_PRINCIPAL):
            members[group].append(name)
    names = [name for name, _ in principals]

    def best_build(security) -> tuple[float, CompactGrid]:
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            compact = CompactGrid.build(compile_acls(security, principals=names), principals, resources)
            runs.append(time.perf_counter() - start)
        return min(runs), compact

    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "groups.txt")
        with open(path, "w", encoding="utf-8") as file:
            file.writelines(f"g{group}: {', '.join(names)}\n" for group, names in members.items() if names)
        with KafkaSecurity.from_config({"kafkasec.state.path": ":memory:"}) as plain:
            plain.create_acls(bindings)
            without, _ = best_build(plain)
        config = {"kafkasec.state.path": ":memory:", kafkasec_groupfile.PATH_SETTING: path}
        with KafkaSecurity.from_config(config, plugins=[kafkasec_groupfile]) as security:
            security.create_acls(bindings)
            start = time.perf_counter()
            compile_acls(security, principals=names)
            expansion = time.perf_counter() - start
            expanded, compact = best_build(security)
            for _ in range(500):  # KIP-430 through the security's plugins: authorize, principals expanded
                i, j = rng.randrange(principal_count), rng.randrange(resource_count)
                context = RequestContext(KafkaPrincipal.parse(principals[i][0]), principals[i][1])
                want = operations_to_bitfield(security.authorized_operations(context, ResourcePattern(*resources[j])))
                assert compact.bits(i, j) == want, (principals[i], resources[j])
    print(f"\nGroup expansion (groupfile), {len(bindings):,} ACLs: {principal_count:,} principals, each in "
          f"{GROUPS_PER_PRINCIPAL} of {GROUPS} groups, x {resource_count:,} resources: driver-side build "
          f"{expanded:.2f} s expanded against {without:.2f} s without the plugin (+{expanded - without:.2f} s; "
          f"compile with the expansion {expansion:.2f} s); {len(compact.class_is_super):,} principal classes, "
          f"{len(compact.exception_bits):,} exceptions; 500 random cells checked against KafkaSecurity.authorized_operations")


if __name__ == "__main__":
    sys.exit(main())
