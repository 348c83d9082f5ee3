"""An HTML audit report of a grid: one self-contained page an auditor questions offline.

The page carries the whole compact grid (:class:`~spark_udfs.compact.CompactGrid`): the
principals and resources, their classes, the base table, the exceptions, and every ACL with the
patterns it is on. ``report.js`` (beside this module, inlined into the page) answers every
question from those tables, exactly and at any size: who may do what on a resource, what a
principal may do, how many pairs a search holds, page by page; and which ACL grants each answer,
by Kafka's matching rules over the ACLs of the resource's patterns. Nothing is sampled: a grid of
10^9 pairs is a few megabytes of class tables, where its allowed pairs would be gigabytes.

The summaries are read from the class tables too (no cell is materialized):

- the principals by privilege: their grants (resource x operation), how many of them every
  principal from that host has anyway (``User:*`` ACLs, ``allow.everyone.if.no.acl.found``) and
  how many are their own; super users labelled;
- the topics every principal of the grid may READ, and why (a ``User:*`` ACL or no ACL at all);
- ALLOW ACLs shadowed by DENY: grants that allow their operation on none of the grid's
  resources they match, each with the DENY ACLs that take it away; at most
  :data:`MAX_SHADOWED` listed, in a stable order, with the count of all.

With ``after`` (the ACLs after a change), the what-if: the ACLs added and removed, and every pair
whose operations change, compared by joint class (:meth:`CompactGrid.changed_blocks`) and
carried the same way.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Sequence

import attrs
import numpy as np

from kafkasec.acl import (
    BITFIELD_OPERATIONS,
    WILDCARD_PRINCIPAL,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from kafkasec.authorizer.decision import acl_text
from kafkasec.authorizer.index import acl_masks
from spark_udfs.compact import CompactGrid, classes_by_pattern
from spark_udfs.evaluator import CompiledAcls, ranges, string_column
from spark_udfs.rules import standard_authorizer

_READ = 1 << AclOperation.READ
MAX_SHADOWED = 1_000
"""The shadowed grants the page lists at most (all are counted): a state where every grant is
shadowed would otherwise carry every ACL twice."""
MAX_DENIES_NAMED = 3
"""The DENY ACLs named per shadowed grant at most (the count of the rest is given)."""
_SCRIPT = Path(__file__).with_name("report.js")


@attrs.frozen
class ShadowedGrant:
    """An ALLOW ACL that allows its operation on none of the grid's resources it matches."""

    allow: str
    """The ALLOW ACL, as :func:`~kafkasec.authorizer.decision.acl_text` writes it."""
    acl_id: str
    denies: tuple[str, ...]
    """The DENY ACLs that take it away on those resources (at most MAX_DENIES_NAMED)."""
    more_denies: int = 0
    """How many more DENY ACLs do."""


def _grid_of(authorizer, principals, resources, compact: CompactGrid | None) -> CompactGrid:
    if compact is None:
        return CompactGrid.build(CompiledAcls.from_authorizer(authorizer), list(principals), list(resources))
    if compact.principals != list(principals) or compact.resources != list(resources):
        raise ValueError("the compact grid is of other principals or resources than the report's")
    return compact


def audit_summaries(acls, principals: Sequence[tuple[str, str]], resources: Sequence[tuple[object, str]], *,
                    compact: CompactGrid | None = None, top: int = 20) -> dict:
    """The report's numbers, as plain data (also what the page shows). ``acls`` is a
    KafkaSecurity or StandardAuthorizer (see :func:`spark_udfs.rules.standard_authorizer`);
    ``compact``, the grid of exactly these principals and resources under these ACLs, is built
    when not given."""
    authorizer = standard_authorizer(acls)
    compact = _grid_of(authorizer, principals, resources, compact)
    grants, everyone, beyond = _privilege(compact)
    is_super = compact.class_is_super[compact.principal_class]
    # Most privileged: what a principal may do beyond what anyone from its host may; super
    # users apart (they may do everything, which says nothing about the ACLs).
    order = np.lexsort((np.arange(len(principals)), -grants, -beyond))
    ordinary = order[~is_super[order]]
    most_privileged = [(principals[i][0], principals[i][1], int(grants[i])) for i in ordinary[:top].tolist()]
    everyone_reads = compact.principals_allowed(_READ)[compact.resource_class] == len(principals)
    readable = np.flatnonzero(everyone_reads & (compact.resource_types == ResourceType.TOPIC))
    table = acl_table(authorizer, compact.compiled)
    shadowed = shadowed_grants(authorizer, compact, table)
    return {
        "compact": compact,
        "grant_counts": grants,  # per principal: its (resource, operation) grants
        "everyone_counts": everyone,  # per principal: of those, what anyone from its host has
        "beyond_everyone_counts": beyond,  # per principal: grants anyone from its host lacks
        "most_privileged": most_privileged,
        "super_users": sorted({principals[i] for i in np.flatnonzero(is_super).tolist()}),
        "readable_by_everyone": sorted(resources[j][1] for j in readable.tolist()),
        "readable_indices": readable,
        "shadowed": shadowed,
        "acl_table": table,
    }


def _privilege(compact: CompactGrid) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per principal: its grants, the grants anyone from its host has (the base table's), and
    its grants beyond those; from the class tables, never a cell."""
    per_resource_class = compact.resources_per_class()
    popcount = np.bitwise_count
    everyone_per_host = per_resource_class @ popcount(compact.base).astype(np.int64)
    everyone = everyone_per_host[compact.class_host].astype(np.int64)
    beyond = np.zeros(len(compact.class_is_super), dtype=np.int64)
    ordinary = ~compact.class_is_super[compact.exception_pc]
    exception_base = compact.base[compact.exception_rc, compact.class_host[compact.exception_pc]]
    extra = popcount(compact.exception_bits & ~exception_base).astype(np.int64) * per_resource_class[compact.exception_rc]
    np.add.at(beyond, compact.exception_pc[ordinary], extra[ordinary])
    for pc in np.flatnonzero(compact.class_is_super).tolist():
        own = compact.supported & ~compact.base[:, compact.class_host[pc]]
        beyond[pc] = int(per_resource_class @ popcount(own).astype(np.int64))
    grants = compact.grants_per_principal_class()
    cls = compact.principal_class
    return grants[cls], everyone[cls], beyond[cls]


def shadowed_grants(acls, compact: CompactGrid, table: AclTable | None = None) -> list[ShadowedGrant]:
    """ALLOW ACLs of named principals that match some of the grid's resources but allow their
    operation on none of them, each with the DENY ACLs that match it there; sorted by principal,
    resource and operation, so that two reports of the same state list them alike. ``table``:
    the authorizer's :func:`acl_table` for the grid's CompiledAcls, if already made."""
    compiled = compact.compiled
    table = acl_table(acls, compiled) if table is None else table
    wildcard = compiled.principal_id(WILDCARD_PRINCIPAL)
    by_pattern, classes = classes_by_pattern(compiled.pattern_count, compact.representative, compact.class_ptr,
                                             compact.class_patterns)
    named = np.flatnonzero(table.is_allow & (table.principal >= 0) & (table.principal != wildcard) & (table.pattern >= 0))
    which, at = ranges(by_pattern[table.pattern[named]], by_pattern[table.pattern[named] + 1] - by_pattern[table.pattern[named]])
    acl, rc = named[which], classes[at]
    if not len(acl):
        return []
    answers = compiled.evaluate_ids(
        table.principal[acl], table.host[acl], np.zeros(len(rc), dtype=bool),
        compact.class_types[rc], compact.representative[rc], compact.class_ptr, compact.class_patterns,
    )
    wanted = np.where(table.operation[acl] == AclOperation.ALL, compact.supported[rc], 1 << table.operation[acl])
    allowed_somewhere = np.bincount(acl, weights=(answers & wanted) != 0, minlength=len(table.stored)) > 0
    bounds = np.searchsorted(acl, np.arange(len(table.stored) + 1))  # acl ascends: named does
    shadowed = []
    for k in np.unique(acl[~allowed_somewhere[acl]]).tolist():
        candidates = rc[bounds[k]:bounds[k + 1]]
        want = int(np.bitwise_or.reduce(compact.supported[candidates])) if table.operation[k] == AclOperation.ALL else 1 << int(table.operation[k])
        patterns = np.unique(np.concatenate([compact.class_patterns[compact.class_ptr[d]:compact.class_ptr[d + 1]]
                                             for d in compact.representative[candidates].tolist()]))
        denies = sorted(
            table.text[d] for d in table.on_patterns(patterns).tolist()
            if table.deny[d] & want and table.principal[d] in (table.principal[k], wildcard)
            and table.host[d] in (0, table.host[k])
        )
        stored = table.stored[k]
        shadowed.append((_acl_order(stored.binding), ShadowedGrant(
            table.text[k], stored.acl_id, tuple(denies[:MAX_DENIES_NAMED]), max(0, len(denies) - MAX_DENIES_NAMED))))
    return [grant for _, grant in sorted(shadowed, key=lambda item: item[0])]


def _acl_order(binding) -> tuple:
    pattern, entry = binding.pattern, binding.entry
    return (entry.principal, pattern.resource_type.name, pattern.name, pattern.pattern_type.name,
            entry.operation.name, entry.host, entry.permission_type.name)


@attrs.frozen
class AclTable:
    """Every stored ACL of an authorizer, as columns indexed alike, with the ids a CompiledAcls
    gives its pattern, principal and host (-1 where it has none), sorted by pattern: what the
    page matches a cell's answer against to name the ACL behind it."""

    stored: list
    text: list[str]
    pattern: np.ndarray
    principal: np.ndarray
    host: np.ndarray
    operation: np.ndarray
    is_allow: np.ndarray  # ALLOW (else DENY)
    allow: np.ndarray  # the operations it allows (implied ones included), as a bitfield
    deny: np.ndarray  # the operations it denies
    pattern_ptr: np.ndarray  # CSR: the ACLs of pattern p are [pattern_ptr[p], pattern_ptr[p + 1])

    def on_patterns(self, patterns: np.ndarray) -> np.ndarray:
        """The indices of the ACLs on any of ``patterns``."""
        _, at = ranges(self.pattern_ptr[patterns], self.pattern_ptr[patterns + 1] - self.pattern_ptr[patterns])
        return at


def acl_table(authorizer, compiled: CompiledAcls) -> AclTable:
    """The authorizer's ACLs laid out for ``compiled``'s ids (see :class:`AclTable`)."""
    stored = list(standard_authorizer(authorizer).stored_acls())
    ids = []
    for item in stored:
        pattern, entry = item.binding.pattern, item.binding.entry
        found = compiled.pattern_id(pattern.resource_type, pattern.name, pattern.pattern_type is PatternType.PREFIXED)
        ids.append((-1 if found is None else found, compiled.principal_id(entry.principal), compiled.host_id(entry.host),
                    int(entry.operation), entry.permission_type is AclPermissionType.ALLOW, *acl_masks(item.binding)))
    columns = np.array(ids, dtype=np.int64).reshape(-1, 7)
    order = np.lexsort((np.arange(len(stored)), columns[:, 0]))
    columns = columns[order]
    stored = [stored[k] for k in order.tolist()]
    mask = (1 << 16) - 1  # ALL's mask sets bits of UNKNOWN and ANY too: only operations' bits count
    return AclTable(
        stored=stored, text=[acl_text(item.binding) for item in stored],
        pattern=columns[:, 0], principal=columns[:, 1], host=columns[:, 2], operation=columns[:, 3],
        is_allow=columns[:, 4].astype(bool), allow=columns[:, 5] & mask, deny=columns[:, 6] & mask,
        pattern_ptr=np.searchsorted(columns[:, 0], np.arange(compiled.pattern_count + 1)),
    )


def _packed(values: np.ndarray, dtype: str) -> str:
    """An array as base64 of its little-endian bytes: the page reads it as a typed array,
    about 1.4 bytes a byte where JSON numbers cost 2 to 11."""
    return base64.b64encode(np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()).decode("ascii")


def report_data(acls, principals: Sequence[tuple[str, str]], resources: Sequence[tuple[object, str]], *,
                compact: CompactGrid | None = None, after=None) -> dict:
    """What the page carries, as JSON-ready data (arrays packed by :func:`_packed`): the grid's
    class tables, the ACLs, the summaries and, with ``after``, the what-if. Principals and
    resources are in the page's order (sorted), the summaries' numbers in ``_summaries``."""
    authorizer = standard_authorizer(acls)
    summaries = audit_summaries(authorizer, principals, resources, compact=compact)
    compact = summaries["compact"]
    compiled = compact.compiled
    # The page lists principals and resources sorted; every per-principal or per-resource array
    # is permuted alike, class arrays are not.
    by_principal = np.array(sorted(range(len(principals)), key=principals.__getitem__), dtype=np.int64)
    type_name = {value: ResourceType.coerce(value).name for value in {resource_type for resource_type, _ in resources}}
    types = [type_name[resource_type] for resource_type, _ in resources]
    by_resource = np.array(sorted(range(len(resources)), key=lambda j: (types[j], resources[j][1])), dtype=np.int64)
    type_names = sorted(set(types))
    type_index = {name: n for n, name in enumerate(type_names)}
    names = [principals[i][0] for i in by_principal.tolist()]
    hosts = [principals[i][1] for i in by_principal.tolist()]
    principal_ids, _ = compiled.encode_principals(string_column(names, "principals"))
    host_ids = compiled.encode_hosts(string_column(hosts, "hosts"))

    n_pc, n_rc = len(compact.class_is_super), len(compact.base)
    first = compact.class_ptr[compact.representative]
    pattern_counts = compact.class_ptr[compact.representative + 1] - first
    _, at = ranges(first, pattern_counts)
    table = summaries["acl_table"]
    data = {
        "operations": {str(int(op)): op.name for op in BITFIELD_OPERATIONS},
        "types": type_names,
        "principals": names,
        "hosts": hosts,
        "resources": [resources[j][1] for j in by_resource.tolist()],
        "allow_everyone": compiled.allow_everyone_if_no_acl_found,
        "wildcard_principal": compiled.principal_id(WILDCARD_PRINCIPAL),
        "grid": {
            "resource_type": _packed(np.array([type_index[types[j]] for j in by_resource.tolist()]), "u1"),
            "pc": _packed(compact.principal_class[by_principal], "i4"),
            "pid": _packed(principal_ids, "i4"),
            "hid": _packed(host_ids, "i4"),
            "rc": _packed(compact.resource_class[by_resource], "i4"),
            "class_super": _packed(compact.class_is_super, "u1"),
            "class_host": _packed(compact.class_host, "i4"),
            "host_classes": int(compact.base.shape[1]),
            "base": _packed(compact.base.ravel(), "u2"),
            "supported": _packed(compact.supported, "u2"),
            "exception_ptr": _packed(compact.exception_ptr, "i4"),  # the exceptions are sorted by (pc, rc)
            "exception_rc": _packed(compact.exception_rc, "i4"),
            "exception_bits": _packed(compact.exception_bits, "u2"),
            "pattern_ptr": _packed(np.concatenate([[0], np.cumsum(pattern_counts)]), "i4"),
            "patterns": _packed(compact.class_patterns[at] if n_rc else np.zeros(0), "i4"),
        },
        "acls": {
            "pattern_ptr": _packed(table.pattern_ptr, "i4"),
            "principal": _packed(table.principal, "i4"),
            "host": _packed(table.host, "i4"),
            "allow": _packed(table.allow, "u2"),
            "id": [item.acl_id for item in table.stored],
            "source": [item.source for item in table.stored],
            "text": table.text,
        },
        "summary": {
            "pairs": compact.cells,
            "acls": len(authorizer.index),
            "principal_classes": n_pc,
            "resource_classes": n_rc,
            "exceptions": len(compact.exception_bits),
            "super_users": [" @ ".join(p) for p in summaries["super_users"]],
            "grants": _packed(summaries["grant_counts"][by_principal], "f8"),
            "everyone": _packed(summaries["everyone_counts"][by_principal], "f8"),
            "beyond": _packed(summaries["beyond_everyone_counts"][by_principal], "f8"),
            "shadowed_count": len(summaries["shadowed"]),
            "shadowed": [[grant.allow, grant.acl_id, list(grant.denies), grant.more_denies]
                         for grant in summaries["shadowed"][:MAX_SHADOWED]],
            "readable": _packed(np.sort(np.argsort(by_resource)[summaries["readable_indices"]]), "i4"),
        },
        "whatif": None,
    }
    if after is not None:
        data["whatif"] = _what_if(authorizer, compact, after, by_principal, by_resource)
    return {**data, "_summaries": summaries}


def _what_if(authorizer, compact: CompactGrid, after, by_principal: np.ndarray, by_resource: np.ndarray) -> dict:
    """The change to ``after`` (ACLs judged under the authorizer's own settings): the ACLs it
    adds and removes, and the changed pairs as joint class blocks (sorted by joint principal
    class), with their exact count."""
    after_authorizer = standard_authorizer(after, like=authorizer)
    before_acls = {stored.binding for stored in authorizer.stored_acls()}
    after_acls = {stored.binding for stored in after_authorizer.stored_acls()}
    after_grid = CompactGrid.build(CompiledAcls.from_authorizer(after_authorizer), compact.principals, compact.resources)
    changes = compact.changed_blocks(after_grid)
    joint_principals = int(changes.joint_pc.max(initial=-1)) + 1
    principals_per_joint = np.bincount(changes.joint_pc, minlength=joint_principals)
    resources_per_joint = np.bincount(changes.joint_rc, minlength=int(changes.joint_rc.max(initial=-1)) + 1)
    pairs = int((principals_per_joint[changes.jp] * resources_per_joint[changes.jr]).sum()) if len(changes.jp) else 0
    return {
        "added": sorted(acl_text(binding) for binding in after_acls - before_acls),
        "removed": sorted(acl_text(binding) for binding in before_acls - after_acls),
        "pairs": pairs,
        "joint_pc": _packed(changes.joint_pc[by_principal], "i4"),
        "joint_rc": _packed(changes.joint_rc[by_resource], "i4"),
        "ptr": _packed(np.searchsorted(changes.jp, np.arange(joint_principals + 1)), "i4"),
        "jr": _packed(changes.jr, "i4"),
        "before": _packed(changes.before, "u2"),
        "after": _packed(changes.after, "u2"),
    }


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def html_report(acls, principals: Sequence[tuple[str, str]], resources: Sequence[tuple[object, str]], path: str, *,
                compact: CompactGrid | None = None, after=None) -> dict:
    """Write the report to ``path`` (one HTML file, no server, works offline); return its
    summaries. ``acls``: a KafkaSecurity or StandardAuthorizer; ``compact``: the grid of these
    principals and resources under these ACLs, if already built; ``after``: the ACLs after a
    change (AclBindings, judged with ``acls``' super users and allow-everyone setting, or a
    StandardAuthorizer), for the what-if."""
    data = report_data(acls, principals, resources, compact=compact, after=after)
    summaries = data.pop("_summaries")
    compact = summaries["compact"]
    # JSON in a script element: only "</" could end it early, so it is escaped.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    what_if = ""
    if data["whatif"] is not None:
        change = data["whatif"]
        what_if = (f'<p id="whatif-banner" class="banner"><a href="#view=whatif">What-if: {_count(len(change["added"]), "ACL")} added, '
                   f'{len(change["removed"]):,} removed: {_count(change["pairs"], "pair")} change</a></p>')
    summary = data["summary"]
    views = [("grid", "Who can do what"), ("privilege", "Principals by privilege"),
             ("readable", f"Readable by everyone ({len(summaries['readable_by_everyone']):,})"),
             ("shadowed", f"Shadowed grants ({summary['shadowed_count']:,})")]
    if data["whatif"] is not None:
        views.append(("whatif", f"What-if ({data['whatif']['pairs']:,} pairs change)"))
    tabs = " ".join(f'<a href="#view={name}" data-view="{name}">{html.escape(title)}</a>' for name, title in views)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kafkasec ACL audit</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_STYLE}</style></head><body>
<header><h1>ACL audit</h1>
<p>{len(principals):,} principals x {len(resources):,} resources = {compact.cells:,} pairs, {summary["acls"]:,} ACLs;
{summary["principal_classes"]:,} principal classes, {summary["resource_classes"]:,} resource classes, {summary["exceptions"]:,} exceptions.
Every answer on this page is exact: it carries the whole grid, by class, and computes each view from it.</p>
{what_if}<nav id="views">{tabs}</nav></header>
<form id="filters" onsubmit="return false">
<input id="p" type="search" placeholder="principal or host contains..." aria-label="principal or host contains">
<input id="r" type="search" placeholder="resource contains..." aria-label="resource contains">
<input id="q" type="search" placeholder="ACL contains..." aria-label="ACL contains">
<select id="type" aria-label="resource type"><option value="">any resource type</option></select>
<select id="op" aria-label="operation"><option value="">any operation</option></select>
<select id="kind" aria-label="principals"><option value="">all principals</option>
<option value="super">super users only</option><option value="ordinary">without super users</option></select>
<select id="change" aria-label="change"><option value="">gained or lost</option><option value="gained">gained</option><option value="lost">lost</option></select>
<label id="own-label"><input id="own" type="checkbox"> only what anyone from the host may not</label>
<select id="by" aria-label="order"><option value="">by principal</option><option value="resource">by resource</option></select>
<select id="sort" aria-label="sort"><option value="">most grants beyond anyone's first</option><option value="grants">most grants first</option><option value="name">by name</option></select>
<button id="export" type="button">Export CSV</button></form>
<main><h2 id="title"></h2><p id="count"></p><div id="notes"></div>
<table id="rows"><thead></thead><tbody></tbody></table>
<nav id="pages"><button id="previous" type="button">previous</button> <span id="page"></span> <button id="next" type="button">next</button></nav>
</main>
<script id="data" type="application/json">{payload}</script>
<script>{_SCRIPT.read_text(encoding="utf-8")}</script>
</body></html>
"""
    with open(path, "w", encoding="utf-8") as file:
        file.write(page)
    return summaries


_STYLE = """
body{font-family:system-ui,sans-serif;margin:0 2em 2em;color:#1d2430}
header{border-bottom:2px solid #3b5bdb;margin-bottom:.6em}
h1{margin:.6em 0 .2em} h2{font-size:1.1em;margin:.8em 0 .4em}
.banner{background:#fff3bf;border-radius:6px;padding:.4em .8em;font-weight:600}
#views{display:flex;gap:1.2em;flex-wrap:wrap;margin:.6em 0}
#views a.current{font-weight:700;border-bottom:2px solid #3b5bdb}
#filters{display:flex;gap:.5em;flex-wrap:wrap;align-items:center;margin:.5em 0}
#filters input[type=search]{flex:1;min-width:14em;padding:.3em}
#notes p{background:#f4f6fb;border-radius:6px;padding:.3em .8em;margin:.3em 0}
table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{text-align:left;padding:.25em .5em;border-bottom:1px solid #e3e7ef;vertical-align:top;white-space:pre-line}
tbody tr:hover{background:#f4f6fb} a{color:#3b5bdb;cursor:pointer;text-decoration:none}
.op{display:inline-block;background:#e7ecff;border-radius:3px;padding:0 .3em;margin:1px;font-size:.85em}
.op.everyone{background:#eef0f3;color:#5c6370}
.label{display:inline-block;background:#ffe8cc;border-radius:3px;padding:0 .3em;margin-left:.4em;font-size:.8em}
.gained{background:#d3f9d8} .lost{background:#ffe3e3}
code{font-size:.85em;background:#f4f6fb;padding:0 .2em}
#pages{margin:.5em 0}
"""
