"""Benchmarks for KafkaSecurity's decisions (and the bare StandardAuthorizer index beside them) on the
workload of Kafka's jmh AuthorizerBenchmark.

Run on demand (pytest does not collect this directory)::

    python benchmarks/bench_authorizer.py                      # the default grid, ~6-7 min on a quiet machine
    python benchmarks/bench_authorizer.py --quick              # a smoke run, under a minute
    python benchmarks/bench_authorizer.py --sizes 10000,50000 --acl-counts 10 --deny 0,50
    python benchmarks/bench_authorizer.py --markdown benchmarks/README.md

Every size runs kafkasec's StandardAuthorizer and the naive scan-every-ACL authorizer of
``kafkasec/authorizer/reference.py`` side by side in this one process, on the same ACLs,
and checks that they give the same answers. See benchmarks/README.md for what each number means.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime
import functools
import gc
import io
import json
import os
import platform
import pstats
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from kafkasec import KafkaSecurity  # noqa: E402
from kafkasec.acl import (  # noqa: E402
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    supported_operations,
)
from kafkasec.authorizer import StandardAuthorizer  # noqa: E402
from kafkasec.authorizer.reference import ReferenceAuthorizer  # noqa: E402
from kafkasec.context import Action, RequestContext  # noqa: E402
from kafkasec.principals.principal import KafkaPrincipal  # noqa: E402

from authorizer_workload import (  # noqa: E402
    BENCH_RESOURCE,
    KAFKA_DENY_PERCENTAGES,
    READ_ACTION,
    WRITE_ACTION,
    build_workload,
    by_resource_type_context,
    context,
    sanity_actions,
)

MARK_START = "<!-- bench:results:start -->"
MARK_END = "<!-- bench:results:end -->"

# The targets (on a 2-core machine).
TARGET_AUTHORIZE_US = 5.0
TARGET_FLATNESS = 2.0
TARGET_BY_TYPE_US = 100.0
TARGET_OPERATIONS_US = 10.0
TARGET_BUILD_S = 10.0

# Kafka's published StandardAuthorizer figures on this workload (10k..200k resources).
KAFKA_AUTHORIZE = "0.3-17 ms"
KAFKA_BY_TYPE = "36-920 ms"

CHURN_BINDING = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "bench-churn-topic", PatternType.LITERAL),
    AccessControlEntry("User:bench-churn", "*", AclOperation.READ, AclPermissionType.ALLOW),
)
# A change to the asking principal's own (principal, "*") group: it invalidates that group's
# by-type summary, so the next question walks the type's patterns again (the worst case).
OWN_CHURN_BINDING = AclBinding(
    ResourcePattern(ResourceType.TOPIC, "bench-churn-topic", PatternType.LITERAL),
    AccessControlEntry("User:test-user", "*", AclOperation.READ, AclPermissionType.ALLOW),
)


# ----------------------------------------------------------------------------- timing

class Timing:
    """Per-call times in ns of repeated samples; ``median`` is what the tables show."""

    def __init__(self, per_call_ns: list[float], calls_per_sample: int, result=None):
        self.samples = per_call_ns
        self.calls_per_sample = calls_per_sample
        self.result = result  # what the last call returned

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def minimum(self) -> float:
        return min(self.samples)

    def as_dict(self) -> dict:
        return {
            "median_ns": self.median,
            "min_ns": self.minimum,
            "samples": len(self.samples),
            "calls_per_sample": self.calls_per_sample,
        }


def measure(fn: Callable[[], object], *, sample_ns: float, samples: int, slow_samples: int,
            warm_up: bool = True) -> Timing:
    """Median of ``samples`` samples, each timing enough back-to-back calls of ``fn`` to last
    about ``sample_ns``; the calibration calls are the warm-up. A call slower than 50 ms is
    timed alone, ``slow_samples`` times, after one untimed warm-up call unless ``warm_up`` is
    False (for the naive scans, which cache nothing: their first call counts as a sample)."""
    perf = time.perf_counter_ns
    gc.collect()
    if warm_up:
        fn()
    start = perf()
    result = fn()
    first = perf() - start
    if first > 50e6:
        times = [first]
        for _ in range(slow_samples - 1):
            start = perf()
            result = fn()
            times.append(perf() - start)
        return Timing(times, 1, result)
    # Calibrate (and warm up): double the batch until it lasts >= sample_ns / 4.
    calls = 1
    while True:
        start = perf()
        for _ in range(calls):
            fn()
        elapsed = perf() - start
        if elapsed >= sample_ns / 4 or calls >= 1 << 22:
            break
        calls *= 2
    calls = max(1, int(calls * sample_ns / max(elapsed, 1)))
    times = []
    for _ in range(samples):
        start = perf()
        for _ in range(calls):
            fn()
        times.append((perf() - start) / calls)
    return Timing(times, calls, fn())


# ----------------------------------------------------------------------------- machine

def machine_info() -> dict:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    try:
        nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        nproc = str(len(os.sched_getaffinity(0)))
    return {
        "platform": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "cpu": cpu,
        "nproc": nproc,
        "memory": mem,
        "load_average": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "kafkasec": _git_state(),
    }


def _git_state() -> str:
    root = HERE.parent

    def git(*args):
        # rstrip, not strip: a porcelain status line starts with a space (" M path").
        return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10).stdout.rstrip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--", "kafkasec")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if not commit:
        return "unknown"
    if dirty:
        changed = ", ".join(line[3:] for line in dirty.splitlines())
        return f"{commit} + uncommitted changes in {changed}"
    return commit


def rss_kib() -> dict:
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            key, value = line.split(":", 1)
            values[key] = int(value.split()[0])
    return values


# ----------------------------------------------------------------------------- sanity

def random_differential_check(trials: int, seed: int) -> list[str]:
    """kafkasec vs the naive scan on small random ACL sets (wildcards, User:*, hosts, ALL,
    implied DESCRIBE...). Returns descriptions of the disagreements, if any."""
    rand = random.Random(seed)
    names = ["a", "ab", "abc", "b", "*"]
    ops = [
        AclOperation.ALL, AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE,
        AclOperation.ALTER, AclOperation.DELETE, AclOperation.ALTER_CONFIGS,
        AclOperation.DESCRIBE_CONFIGS, AclOperation.CREATE,
    ]
    principals = ["User:alice", "User:bob", "User:*"]
    hosts = ["*", "10.0.0.1", "10.0.0.2"]
    types = [ResourceType.TOPIC, ResourceType.GROUP]
    contexts = [
        RequestContext(KafkaPrincipal("User", "alice"), "10.0.0.1"),
        RequestContext(KafkaPrincipal("User", "carol"), "10.0.0.2"),
    ]
    problems = []
    for _ in range(trials):
        bindings = {
            AclBinding.of(
                rand.choice(types), rand.choice(names),
                rand.choice([PatternType.LITERAL, PatternType.PREFIXED]),
                rand.choice(principals), rand.choice(hosts), rand.choice(ops),
                rand.choice([AclPermissionType.ALLOW, AclPermissionType.DENY]),
            )
            for _ in range(rand.randint(1, 8))
        }
        ours = StandardAuthorizer()
        ours.create_acls(bindings)
        naive = ReferenceAuthorizer(bindings)
        for ctx in contexts:
            for resource_type in types:
                for name in names + ["abcd", "zz"]:
                    pattern = ResourcePattern(resource_type, name)
                    actions = [Action(op, pattern) for op in sorted(supported_operations(resource_type))]
                    a, b = ours.authorize(ctx, actions), naive.authorize(ctx, actions)
                    if a != b:
                        problems.append(f"authorize {ctx.principal}@{ctx.client_address} {pattern}: {a} != {b} with {sorted(map(str, bindings))}")
                    a, b = ours.authorized_operations(ctx, pattern), naive.authorized_operations(ctx, pattern)
                    if a != b:
                        problems.append(f"authorized_operations {pattern}: {sorted(a)} != {sorted(b)} with {sorted(map(str, bindings))}")
                for op in ops[1:]:
                    a = ours.authorize_by_resource_type(ctx, op, resource_type)
                    b = naive.authorize_by_resource_type(ctx, op, resource_type)
                    if a != b:
                        problems.append(f"authorize_by_resource_type {op.name} {resource_type.name}: {a} != {b} with {sorted(map(str, bindings))}")
        if len(problems) > 20:
            break
    return problems


# ----------------------------------------------------------------------------- one size

def run_point(resource_count: int, acl_count: int, deny: float, args, log) -> dict:
    """Every measurement for one (resourceCount, aclCount, denyPercentage)."""
    quick = args.quick
    sample_ns = 5e6 if quick else 20e6
    samples = 5 if quick else 11
    timed = functools.partial(measure, sample_ns=sample_ns, samples=samples, slow_samples=3)

    gc.disable()  # building the workload is not measured; spare it the collector
    t0 = time.perf_counter()
    workload = build_workload(resource_count, acl_count, deny, seed=args.seed)
    bindings = list(workload.acls.values())
    gc.enable()
    gc.collect()
    n_acls = len(bindings)
    n_deny = sum(1 for b in bindings if b.entry.permission_type is AclPermissionType.DENY)
    log(f"  workload: {n_acls:,} ACLs ({n_deny:,} DENY), generated in {time.perf_counter() - t0:.1f}s")

    profiler = cProfile.Profile() if args.profile else None
    # What users run is the facade: its authorizer is the bare index, timed beside it.
    facade = KafkaSecurity()
    ours = facade.authorizer
    ours.lose_readiness()  # as a node that has not loaded its snapshot yet
    start = time.perf_counter_ns()
    if profiler:
        profiler.enable()
    ours.load_snapshot(workload.acls)
    ours.complete_initial_load()
    if profiler:
        profiler.disable()
    load_s = (time.perf_counter_ns() - start) / 1e9
    log(f"  load_snapshot: {load_s:.2f}s")
    del workload
    naive = ReferenceAuthorizer(bindings)
    del bindings

    ctx, ctx2 = context(), by_resource_type_context()
    row = {
        "resources": resource_count, "acl_count": acl_count, "deny": deny,
        "n_acls": n_acls, "deny_acls": n_deny, "load_s": load_s,
    }
    run_naive = n_acls <= args.naive_max_acls

    def compare(name, fn_ours, fn_naive, key, fn_facade=None):
        timing = timed(fn_ours)
        row[key] = {"ours": timing.as_dict()}
        answer = timing.result
        if fn_facade is not None:
            facade_timing = timed(fn_facade)
            row[key]["facade"] = facade_timing.as_dict()
            assert facade_timing.result == answer, f"{name}: the facade says {facade_timing.result}, the index {answer}"
        if run_naive:
            naive_timing = measure(fn_naive, sample_ns=sample_ns, samples=samples,
                                   slow_samples=args.naive_samples, warm_up=False)
            row[key]["naive"] = naive_timing.as_dict()
            naive_answer = naive_timing.result
            assert answer == naive_answer, f"{name}: kafkasec says {answer}, naive says {naive_answer}"
        if fn_facade is not None:
            log(f"  {name} through KafkaSecurity: {row[key]['facade']['median_ns'] / 1e3:.2f} us")
        log(f"  {name}: {timing.median / 1e3:.2f} us" + (
            f" (naive {row[key]['naive']['median_ns'] / 1e6:.1f} ms)" if run_naive else "") + f" -> {answer}")
        row[key]["answer"] = str(answer)

    write_actions, read_actions = [WRITE_ACTION], [READ_ACTION]
    compare("authorize WRITE", functools.partial(ours.authorize, ctx, write_actions),
            functools.partial(naive.authorize, ctx, write_actions), "authorize_write",
            functools.partial(facade.authorize, ctx, write_actions))
    compare("authorize READ", functools.partial(ours.authorize, ctx, read_actions),
            functools.partial(naive.authorize, ctx, read_actions), "authorize_read",
            functools.partial(facade.authorize, ctx, read_actions))
    compare("authorized_operations", functools.partial(ours.authorized_operations, ctx, BENCH_RESOURCE),
            functools.partial(naive.authorized_operations, ctx, BENCH_RESOURCE), "operations",
            functools.partial(facade.authorized_operations, ctx, BENCH_RESOURCE))
    by_type_ours = functools.partial(ours.authorize_by_resource_type, ctx2, AclOperation.READ, ResourceType.TOPIC)
    by_type_naive = functools.partial(naive.authorize_by_resource_type, ctx2, AclOperation.READ, ResourceType.TOPIC)
    compare("authorize_by_resource_type (warm)", by_type_ours, by_type_naive, "by_type_warm",
            functools.partial(facade.authorize_by_resource_type, ctx2, AclOperation.READ, ResourceType.TOPIC))

    # A client host the snapshot has not answered for yet: the (principal, *) summaries are
    # cached, the (principal, new host) group is not. Every call uses a fresh address.
    new_hosts = iter(f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}" for n in range(1, 1 << 24))
    new_host_calls = 3 if (quick or n_acls > 1_000_000) else 5
    new_host = []
    for _ in range(new_host_calls):
        ctx_new = RequestContext(ctx2.principal, next(new_hosts))
        start = time.perf_counter_ns()
        answer_new = ours.authorize_by_resource_type(ctx_new, AclOperation.READ, ResourceType.TOPIC)
        new_host.append(time.perf_counter_ns() - start)
    row["by_type_new_host"] = {"ours": Timing(new_host, 1).as_dict(), "answer": str(answer_new)}
    if run_naive and n_acls <= args.sanity_max_acls:
        assert answer_new == naive.authorize_by_resource_type(ctx_new, AclOperation.READ, ResourceType.TOPIC)
    log(f"  authorize_by_resource_type (new client host): {statistics.median(new_host) / 1e6:.2f} ms -> {answer_new}")

    # Cold: the first call after an ACL change; the per-type summary is rebuilt lazily on the
    # new snapshot. The change is an add_acl / remove_acl of an unrelated TOPIC ACL; timing it
    # here gives the cost of a change when the previous snapshot had its summary built (the
    # old snapshot, cache included, is freed in the writer's call).
    cold_samples = 2 if (quick or n_acls > 1_000_000) else 3
    cold, adds_cached, removes_cached = [], [], []
    perf = time.perf_counter_ns
    by_type_ours()  # the current snapshot has its summary: the first change frees one too
    for i in range(cold_samples):
        gc.collect()
        start = perf()
        ours.add_acl("bench-churn", CHURN_BINDING)
        adds_cached.append(perf() - start)
        if profiler and i == 0:
            profiler.enable()
        start = perf()
        first = by_type_ours()
        cold.append(perf() - start)
        if profiler and i == 0:
            profiler.disable()
        assert by_type_ours() == first
        gc.collect()
        start = perf()
        ours.remove_acl("bench-churn")
        removes_cached.append(perf() - start)
        start = perf()
        by_type_ours()
        cold.append(perf() - start)
    row["by_type_cold"] = {"ours": Timing(cold, 1).as_dict()}
    cold_own, before = [], by_type_ours()
    for _ in range(cold_samples):
        ours.add_acl("bench-churn-own", OWN_CHURN_BINDING)
        start = perf()
        by_type_ours()  # the added ALLOW may change the answer (at deny 100% it does)
        cold_own.append(perf() - start)
        ours.remove_acl("bench-churn-own")
        start = perf()
        assert by_type_ours() == before
        cold_own.append(perf() - start)
    row["by_type_cold_own"] = {"ours": Timing(cold_own, 1).as_dict()}
    log(f"  authorize_by_resource_type (cold, own ACLs changed): {statistics.median(cold_own) / 1e6:.1f} ms")
    row["add_acl_cached"] = {"ours": Timing(adds_cached, 1).as_dict()}
    row["remove_acl_cached"] = {"ours": Timing(removes_cached, 1).as_dict()}
    log(f"  authorize_by_resource_type (cold): {statistics.median(cold) / 1e6:.1f} ms")

    # Pure copy-on-write: changes to a snapshot nobody asked a by-type question of (one
    # untimed change first, to drop the snapshot queried above).
    ours.add_acl("bench-churn", CHURN_BINDING)
    ours.remove_acl("bench-churn")
    adds, removes, creates = [], [], []
    for _ in range(cold_samples):
        gc.collect()
        start = perf()
        ours.add_acl("bench-churn", CHURN_BINDING)
        adds.append(perf() - start)
        gc.collect()
        start = perf()
        ours.remove_acl("bench-churn")
        removes.append(perf() - start)
        gc.collect()
        start = perf()
        (result,) = ours.create_acls([CHURN_BINDING])
        creates.append(perf() - start)
        ours.remove_acl(result.acl_id)
    row["add_acl"] = {"ours": Timing(adds, 1).as_dict()}
    row["remove_acl"] = {"ours": Timing(removes, 1).as_dict()}
    row["create_acls"] = {"ours": Timing(creates, 1).as_dict()}
    log(f"  add_acl {statistics.median(adds) / 1e6:.2f} ms, remove_acl {statistics.median(removes) / 1e6:.2f} ms,"
        f" create_acls {statistics.median(creates) / 1e6:.2f} ms; after a by-type query: add_acl"
        f" {statistics.median(adds_cached) / 1e6:.2f} ms, remove_acl {statistics.median(removes_cached) / 1e6:.2f} ms")

    # acls(): every binding, as a list.
    acls_timing = measure(ours.acls, sample_ns=sample_ns, samples=samples, slow_samples=3, warm_up=False)
    row["acls"] = {"ours": acls_timing.as_dict()}
    if run_naive:
        row["acls"]["naive"] = measure(naive.acls, sample_ns=sample_ns, samples=samples, slow_samples=3,
                                       warm_up=False).as_dict()
        assert len(ours.acls()) == len(naive.acls()) == n_acls
    log(f"  acls(): {acls_timing.median / 1e6:.1f} ms")

    # Extra sanity: more actions and the other context, where a full naive scan per action is
    # affordable.
    if run_naive and n_acls <= args.sanity_max_acls:
        actions = sanity_actions()
        for c in (ctx, ctx2):
            assert ours.authorize(c, actions) == naive.authorize(c, actions), "sanity actions disagree"
        for op in (AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE):
            for rt in (ResourceType.TOPIC, ResourceType.GROUP):
                assert ours.authorize_by_resource_type(ctx, op, rt) == naive.authorize_by_resource_type(ctx, op, rt)
        row["sanity"] = f"{len(actions) * 2 + 6} extra answers agree"
        log(f"  sanity: {row['sanity']}")

    if profiler:
        stream = io.StringIO()
        profiler.disable()
        stats = pstats.Stats(profiler, stream=stream).sort_stats("tottime")
        stats.print_stats(15)
        log("  cProfile (load_snapshot + first cold authorize_by_resource_type), by tottime:\n" + stream.getvalue())

    facade.close()
    del ours, naive, facade
    gc.collect()
    return row


# ----------------------------------------------------------------------------- 1M build

def build_child(resource_count: int, acl_count: int, seed: int, use_tracemalloc: bool) -> dict:
    """Runs in a fresh process: generate the workload, then load it and measure."""
    import tracemalloc

    gc.disable()
    workload = build_workload(resource_count, acl_count, 0, seed=seed)
    gc.enable()
    gc.collect()
    n_acls = len(workload.acls)
    out = {"resources": resource_count, "acl_count": acl_count, "acls": n_acls, "tracemalloc": use_tracemalloc}
    if use_tracemalloc:
        tracemalloc.start()
    before = rss_kib()
    base = tracemalloc.get_traced_memory()[0] if use_tracemalloc else 0
    # What users run is the facade: its authorizer is the bare index, timed beside it.
    facade = KafkaSecurity()
    ours = facade.authorizer
    ours.lose_readiness()  # as a node that has not loaded its snapshot yet
    start = time.perf_counter_ns()
    ours.load_snapshot(workload.acls)
    ours.complete_initial_load()
    out["load_s"] = (time.perf_counter_ns() - start) / 1e9
    gc.collect()
    after = rss_kib()
    out["rss_delta_kib"] = after["VmRSS"] - before["VmRSS"]
    out["hwm_delta_kib"] = after["VmHWM"] - before["VmHWM"]
    if use_tracemalloc:
        current, peak = tracemalloc.get_traced_memory()
        out["traced_current_bytes"] = current - base
        out["traced_peak_bytes"] = peak - base
        # The same, without the authorizer's id maps: the index (with its StoredAcls) alone.
        index = ours.index
        del ours
        gc.collect()
        out["traced_index_bytes"] = tracemalloc.get_traced_memory()[0] - base
        del index
        tracemalloc.stop()
    return out


def run_build(args, log) -> dict:
    """Time and RSS in one fresh process; with --tracemalloc, traced memory in a second one
    (tracemalloc slows the load down and adds its own memory, so it never shares a run)."""
    def child(use_tracemalloc):
        cmd = [sys.executable, __file__, "--_build-child", f"{args.build_resources},10,{args.seed}"]
        if use_tracemalloc:
            cmd.append("--tracemalloc")
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])

    log(f"index build: {args.build_resources:,} resources x aclCount 10, {args.build_repeats} fresh process(es)")
    runs = []
    for _ in range(args.build_repeats):
        runs.append(child(False))
        log(f"  {runs[-1]['acls']:,} ACLs loaded in {runs[-1]['load_s']:.2f}s;"
            f" RSS +{runs[-1]['rss_delta_kib'] / 1024:.0f} MiB")
    result = sorted(runs, key=lambda r: r["load_s"])[len(runs) // 2]  # the median run
    result["load_s_all"] = [r["load_s"] for r in runs]
    result["rss_delta_kib_all"] = [r["rss_delta_kib"] for r in runs]
    if args.tracemalloc:
        log("  again under tracemalloc, for memory only")
        traced = child(True)
        for key in ("traced_current_bytes", "traced_peak_bytes", "traced_index_bytes"):
            result[key] = traced[key]
        result["tracemalloc"] = True
        log(f"  traced: {traced['traced_current_bytes'] / 2**20:.0f} MiB after the load")
    return result


# ----------------------------------------------------------------------------- report

def _us(ns):
    return f"{ns / 1e3:.2f} µs"


def _ms(ns):
    return f"{ns / 1e6:.1f} ms" if ns >= 1e6 else f"{ns / 1e6:.3f} ms"


def _auto(ns):
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.1f} ms"
    return f"{ns / 1e3:.2f} µs"


def _deny(value):
    return f"{value:g}"


def render(rows: list[dict], build: dict | None, info: dict, args, problems: list[str], elapsed_s: float) -> str:
    out = []
    w = out.append
    w(f"Run of {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}: `python benchmarks/bench_authorizer.py {' '.join(args.argv)}`"
      f" ({elapsed_s / 60:.1f} min).")
    w("")
    w("| machine | |")
    w("|---|---|")
    for key in ("platform", "python", "cpu", "nproc", "memory", "load_average", "kafkasec"):
        w(f"| {key.replace('_', ' ')} | {info.get(key)} |")
    w("")
    if problems:
        w(f"**Correctness sanity FAILED**: kafkasec and the naive authorizer disagree on {len(problems)}"
          " answers of the random differential check; first ones:")
        w("")
        for p in problems[:5]:
            w(f"- `{p}`")
        w("")
    else:
        w(f"Sanity: kafkasec and the naive authorizer gave the same answers on every benchmark action"
          f" (and on {args.random_trials} random small ACL sets).")
        w("")

    def table(title, key, fmt, target_ns=None, naive=True, note=""):
        w(f"#### {title}")
        w("")
        if note:
            w(note)
            w("")
        facade = any("facade" in row.get(key, {}) for row in rows)
        head = "| resources | aclCount | deny % | ACLs |" + (" KafkaSecurity | bare index | facade / index |" if facade else " kafkasec |")
        line = "|---:|---:|---:|---:|" + ("---:|---:|---:|" if facade else "---:|")
        if naive:
            head += " naive | naive / kafkasec |"
            line += "---:|---:|"
        if target_ns is not None:
            head += " target met? |"
            line += ":---:|"
        w(head)
        w(line)
        for row in rows:
            cell = row.get(key)
            if cell is None:
                continue
            ours = cell["ours"]["median_ns"]
            text = f"| {row['resources']:,} | {row['acl_count']} | {_deny(row['deny'])} | {row['n_acls']:,} |"
            if facade:
                through = cell["facade"]["median_ns"]
                text += f" {fmt(through)} | {fmt(ours)} | {through / ours:.2f}x |"
                ours = through  # the targets and the naive ratio are about what users run
            else:
                text += f" {fmt(ours)} |"
            if naive:
                if "naive" in cell:
                    theirs = cell["naive"]["median_ns"]
                    ratio = theirs / ours
                    text += f" {_auto(theirs)} | {ratio:,.0f}x |" if ratio >= 10 else f" {_auto(theirs)} | {ratio:.2g}x |"
                else:
                    text += " (skipped) | |"
            if target_ns is not None:
                text += f" {'yes' if ours <= target_ns else '**no**'} |"
            w(text)
        w("")

    w("All times are medians of repeated samples (see *What is measured*); naive / kafkasec is"
      " the speed-up over the scan-every-ACL baseline measured in the same process.")
    w("")
    table("authorize, WRITE on TOPIC foo-bar35_resource-95 (Kafka's benchmark action; denied)",
          "authorize_write", _us, TARGET_AUTHORIZE_US * 1e3)
    table("authorize, READ on TOPIC foo-bar35_resource-95 (allowed unless a READ DENY applies)",
          "authorize_read", _us, TARGET_AUTHORIZE_US * 1e3)
    table("authorized_operations, TOPIC foo-bar35_resource-95", "operations", _us, TARGET_OPERATIONS_US * 1e3)
    table("authorize_by_resource_type(User:test-user@127.0.0.2, READ, TOPIC), warm (steady state)",
          "by_type_warm", _auto, TARGET_BY_TYPE_US * 1e3)
    table("authorize_by_resource_type, first call from a new client host (same snapshot)", "by_type_new_host",
          _auto, TARGET_BY_TYPE_US * 1e3, naive=False,
          note="Each call comes from an address the snapshot has not answered for: the summaries of"
               " the (principal, `*`) groups are cached, the (principal, new host) group is built.")
    table("authorize_by_resource_type, cold (first call after an unrelated ACL change)", "by_type_cold", _auto,
          TARGET_BY_TYPE_US * 1e3, naive=False,
          note="The change is to another principal's ACLs: the new snapshot keeps every summary and"
               " answer whose (principal, host) groups it did not touch. The naive authorizer has no"
               " cache: every call costs what its warm column shows.")
    table("authorize_by_resource_type, cold (first call after a change to the asking principal's ACLs)",
          "by_type_cold_own", _auto, TARGET_BY_TYPE_US * 1e3, naive=False,
          note="The change touches User:test-user's own group, so its summary is rebuilt by one pass"
               " over the type's patterns: the worst case, paid once per change, where Kafka's"
               " algorithm pays a full scan on every call (warm naive column).")
    table("acls(): every ACL as a list", "acls", _ms)
    w("#### One ACL change (copy-on-write of the touched resource type)")
    w("")
    w("`add_acl` / `remove_acl` / `create_acls([one binding])` of an unrelated TOPIC ACL; the last two"
      " columns are the same changes right after an `authorize_by_resource_type` call, when the"
      " replaced snapshot carries a built by-type summary that the change frees. The naive"
      " authorizer's change is a list append / remove.")
    w("")
    w("| resources | aclCount | deny % | ACLs | add_acl | remove_acl | create_acls | add_acl after by-type | remove_acl after by-type |")
    w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        if "add_acl" not in row:
            continue
        cells = " | ".join(_ms(row[k]["ours"]["median_ns"]) for k in
                           ("add_acl", "remove_acl", "create_acls", "add_acl_cached", "remove_acl_cached"))
        w(f"| {row['resources']:,} | {row['acl_count']} | {_deny(row['deny'])} | {row['n_acls']:,} | {cells} |")
    w("")
    w("#### load_snapshot of the whole workload (GC on)")
    w("")
    w("| resources | aclCount | deny % | ACLs | load_snapshot | per million ACLs |")
    w("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        w(f"| {row['resources']:,} | {row['acl_count']} | {_deny(row['deny'])} | {row['n_acls']:,} | "
          f"{row['load_s']:.2f} s | {row['load_s'] / row['n_acls'] * 1e6:.2f} s |")
    w("")

    w("#### Targets")
    w("")
    w("| target | result | met? |")
    w("|---|---|:---:|")

    def worst(key):
        # Through KafkaSecurity where measured: the targets are about what users run.
        values = [(row[key].get("facade", row[key]["ours"])["median_ns"], row) for row in rows if key in row]
        return max(values, key=lambda v: v[0]) if values else (None, None)

    def where(row):
        return f"{row['resources']:,} × {row['acl_count']} × {_deny(row['deny'])}%"

    for label, keys, limit in (
        ("authorize ≤ 5 µs per action", ("authorize_write", "authorize_read"), TARGET_AUTHORIZE_US * 1e3),
        ("authorized_operations ≤ 10 µs", ("operations",), TARGET_OPERATIONS_US * 1e3),
        ("authorize_by_resource_type ≤ 100 µs (warm)", ("by_type_warm",), TARGET_BY_TYPE_US * 1e3),
        ("authorize_by_resource_type ≤ 100 µs (new client host)", ("by_type_new_host",), TARGET_BY_TYPE_US * 1e3),
        ("authorize_by_resource_type ≤ 100 µs (cold, after an unrelated change)", ("by_type_cold",), TARGET_BY_TYPE_US * 1e3),
        ("authorize_by_resource_type ≤ 100 µs (cold, after a change to the principal's ACLs)", ("by_type_cold_own",), TARGET_BY_TYPE_US * 1e3),
    ):
        candidates = [worst(k) for k in keys]
        candidates = [c for c in candidates if c[0] is not None]
        if not candidates:
            continue
        value, row = max(candidates, key=lambda c: c[0])
        w(f"| {label} | worst {_auto(value)} ({where(row)}) | {'yes' if value <= limit else '**no**'} |")
    # Flatness, per (aclCount, deny, action) across sizes: the growth from the smallest to the
    # largest size (medians), and the spread max/min over all sizes of the medians and of the
    # best samples (the best sample is the least disturbed by other jobs on the machine).
    growths, spreads, best_spreads = [], [], []
    for key in ("authorize_write", "authorize_read"):
        groups = {}
        for row in rows:
            if key in row:
                groups.setdefault((row["acl_count"], row["deny"]), []).append(
                    (row["resources"], row[key]["ours"]["median_ns"], row[key]["ours"]["min_ns"]))
        for values in groups.values():
            if len(values) > 1:
                values.sort()
                medians = [v[1] for v in values]
                bests = [v[2] for v in values]
                growths.append(medians[-1] / medians[0])
                spreads.append(max(medians) / min(medians))
                best_spreads.append(max(bests) / min(bests))
    if growths:
        ok = max(growths) <= TARGET_FLATNESS and max(best_spreads) <= TARGET_FLATNESS
        w(f"| authorize flat within {TARGET_FLATNESS:g}x across sizes | largest / smallest size: worst"
          f" {max(growths):.2f}x; max / min over sizes: {max(spreads):.2f}x of medians, {max(best_spreads):.2f}x"
          f" of best samples | {'yes' if ok else '**no**'} |")
    if build:
        per_million = build["load_s"] / build["acls"] * 1e6
        runs = ", ".join(f"{x:.2f}" for x in build.get("load_s_all", [build["load_s"]]))
        w(f"| index build for 1M ACLs ≤ {TARGET_BUILD_S:g} s | {build['acls']:,} ACLs in {build['load_s']:.2f} s"
          f" (median of {runs} s; {per_million:.2f} s per million) | {'yes' if per_million <= TARGET_BUILD_S else '**no**'} |")
        rss = build["rss_delta_kib"] / 1024 / (build["acls"] / 1e6)
        memory = f"RSS delta {rss:,.0f} MiB per million ACLs"
        if build.get("tracemalloc"):
            memory += (f"; tracemalloc: authorizer {build['traced_current_bytes'] / 2**20 / (build['acls'] / 1e6):,.0f} MiB"
                       f" (of which the index and its StoredAcls {build['traced_index_bytes'] / 2**20 / (build['acls'] / 1e6):,.0f} MiB),"
                       f" peak during load {build['traced_peak_bytes'] / 2**20 / (build['acls'] / 1e6):,.0f} MiB per million")
        w(f"| memory per million ACLs (reported) | {memory} | — |")
    w("")
    w(f"Kafka's published StandardAuthorizer figures on this workload: {KAFKA_AUTHORIZE} per authorize,"
      f" {KAFKA_BY_TYPE} per authorize_by_resource_type (10k-200k resources; JMH, other hardware).")
    if build:
        w("")
        w(f"Index build: `load_snapshot` of {build['resources']:,} resources × aclCount 10 × deny 0%"
          f" = {build['acls']:,} ACLs into an empty `StandardAuthorizer(initial_load_complete=False)`, each in a"
          f" fresh process (the harness leaves the GC on; kafkasec pauses it during builds itself). Memory: the growth"
          f" of the process's resident set (VmRSS) over the load, after a `gc.collect()`; it includes the"
          f" authorizer's id map and StoredAcl records but not the AclBinding objects handed in (they exist"
          f" before the load).")
    return "\n".join(out) + "\n"


def write_markdown(path: Path, body: str) -> None:
    block = f"{MARK_START}\n{body}{MARK_END}\n"
    if path.exists():
        text = path.read_text()
        if MARK_START in text and MARK_END in text:
            head, rest = text.split(MARK_START, 1)
            _, tail = rest.split(MARK_END, 1)
            path.write_text(head + block + "\n" + tail.lstrip("\n"))
            return
    path.write_text("# StandardAuthorizer benchmark results\n\n" + block)


# ----------------------------------------------------------------------------- main

def _floats(text):
    return [float(x) for x in text.split(",") if x.strip()]


def _ints(text):
    return [int(x) for x in text.split(",") if x.strip()]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=_ints, default=None,
                        help="resourceCount values (default 10000,50000,200000; --quick: 10000)")
    parser.add_argument("--acl-counts", type=_ints, default=None, help="aclCount values (default 10,50; --quick: 10)")
    parser.add_argument("--deny", type=_floats, default=None,
                        help="denyPercentage values (default 0,50,100; --all-deny for Kafka's eight)")
    parser.add_argument("--all-deny", action="store_true", help=f"Kafka's deny grid {KAFKA_DENY_PERCENTAGES}")
    parser.add_argument("--extra-deny", type=_floats, default=None,
                        help="more deny values, run only with the first aclCount at sizes <= --extra-deny-max-resources"
                             " (default 20,90; --quick: none)")
    parser.add_argument("--extra-deny-max-resources", type=int, default=10_000)
    parser.add_argument("--acl50-max-resources", type=int, default=10_000,
                        help="run aclCount > 10 only up to this resourceCount (200k x 50 is 10-20M ACLs)")
    parser.add_argument("--quick", action="store_true", help="small grid, fewer samples, 200k-ACL build")
    parser.add_argument("--naive-max-acls", type=int, default=5_000_000, help="skip the naive run above this")
    parser.add_argument("--naive-samples", type=int, default=3, help="samples per naive measurement when slow")
    parser.add_argument("--sanity-max-acls", type=int, default=400_000)
    parser.add_argument("--build-resources", type=int, default=None,
                        help="resourceCount of the index-build test, aclCount 10 (default 100000 = 1.01M ACLs)")
    parser.add_argument("--build-repeats", type=int, default=None,
                        help="fresh processes for the index-build test; the median is reported (default 3; --quick: 1)")
    parser.add_argument("--no-build", action="store_true", help="skip the index-build / memory test")
    parser.add_argument("--tracemalloc", action="store_true", help="also measure the build's memory with tracemalloc")
    parser.add_argument("--random-trials", type=int, default=300, help="random differential sanity trials")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--profile", action="store_true", help="print cProfile of load + cold by-type per size")
    parser.add_argument("--markdown", type=Path, help="write the results there (between the bench:results markers if present)")
    parser.add_argument("--json", type=Path, help="write raw results as JSON")
    parser.add_argument("--_build-child", dest="build_child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.argv = argv

    if args.build_child:
        resources, acl_count, seed = _ints(args.build_child)
        print(json.dumps(build_child(resources, acl_count, seed, args.tracemalloc)))
        return 0

    sizes = args.sizes or ([10_000] if args.quick else [10_000, 50_000, 200_000])
    acl_counts = args.acl_counts or ([10] if args.quick else [10, 50])
    denies = list(KAFKA_DENY_PERCENTAGES) if args.all_deny else (args.deny or [0, 50, 100])
    extra = [] if (args.deny or args.all_deny) else (args.extra_deny if args.extra_deny is not None else ([] if args.quick else [20, 90]))
    build_resources = args.build_resources or (20_000 if args.quick else 100_000)

    def log(message):
        print(message, file=sys.stderr, flush=True)

    started = time.perf_counter()
    info = machine_info()
    log(f"machine: {info}")
    log(f"random differential check ({args.random_trials} trials)...")
    problems = random_differential_check(args.random_trials, args.seed)
    if problems:
        log(f"WARNING: kafkasec and the naive authorizer disagree ({len(problems)}+):")
        for p in problems[:5]:
            log(f"  {p}")
    rows = []
    for acl_count in acl_counts:
        for size in sizes:
            if acl_count > 10 and size > args.acl50_max_resources:
                log(f"skipping resourceCount {size:,} x aclCount {acl_count} (see --acl50-max-resources)")
                continue
            with_extra = size <= args.extra_deny_max_resources and acl_count == acl_counts[0]
            point_denies = sorted(set(denies) | (set(extra) if with_extra else set()))
            for deny in point_denies:
                log(f"resourceCount {size:,} x aclCount {acl_count} x deny {deny:g}%")
                rows.append(run_point(size, acl_count, deny, args, log))
    build = None if args.no_build else run_build(argparse.Namespace(
        build_resources=build_resources, seed=args.seed, tracemalloc=args.tracemalloc,
        build_repeats=args.build_repeats or (1 if args.quick else 3)), log)
    info["load_average"] += " (start); " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + " (end)"
    body = render(rows, build, info, args, problems, time.perf_counter() - started)
    print(body)
    if args.markdown:
        write_markdown(args.markdown, body)
        log(f"wrote {args.markdown}")
    if args.json:
        args.json.write_text(json.dumps({"argv": argv, "elapsed_s": time.perf_counter() - started, "machine": info,
                                         "rows": rows, "build": build, "problems": problems}, indent=1, default=str))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
