"""An HTML audit report of a grid: one self-contained page an auditor questions offline.

The page carries the whole compact grid (:class:`~spark_udfs.compact.CompactGrid`): the
principals and resources, their classes, the base table, the exceptions, and every ACL with the
patterns it is on. ``report.js`` (beside this module, inlined into the page) answers every
question from those tables, exactly and at any size: who may do what on a resource, what a
principal may do, how many pairs a search holds, page by page; and which ACL grants each answer,
by Kafka's matching rules over the ACLs of the resource's patterns. Nothing is sampled: a grid of
10^9 pairs is a few megabytes of class tables, where its allowed pairs would be gigabytes.

The page opens on its provenance (:mod:`spark_udfs.provenance`: what was audited, how, and a
digest of the ACLs) and its findings (:mod:`spark_udfs.findings`: what an auditor checks first,
each with its count and its rows). The summaries are read from the class tables too (no cell is
materialized):

- the principals by privilege: their grants (resource x operation), how many of them every
  principal from that host has anyway (``User:*`` ACLs, ``allow.everyone.if.no.acl.found``) and
  how many are their own; super users labelled;
- what every principal of the grid may do, per resource and operation, and why;
- ALLOW ACLs shadowed by DENY: grants that allow their operation on none of the grid's
  resources they match, each with the DENY ACLs that take it away; at most
  :data:`MAX_SHADOWED` listed, in a stable order, with the count of all.

With ``after`` (the ACLs after a change), the what-if (:mod:`spark_udfs.whatif`): the ACLs added
and removed, each marked with what it changes or why it changes nothing, and every pair whose
operations change, compared by joint class (:meth:`CompactGrid.changed_blocks`) and carried the
same way.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Sequence

import attrs
import numpy as np

from kafkasec.acl import BITFIELD_OPERATIONS, WILDCARD_PRINCIPAL, AclOperation, ResourceType
from kafkasec.authorizer.index import gc_paused
from spark_udfs.acl_table import AclTable, acl_table
from spark_udfs.compact import CompactGrid, classes_by_pattern
from spark_udfs.evaluator import CompiledAcls, ranges
from spark_udfs.findings import findings
from spark_udfs.provenance import Provenance
from spark_udfs.rules import standard_authorizer
from spark_udfs.whatif import what_if

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
        compiled = CompiledAcls.from_authorizer(authorizer, [principal for principal, _ in principals])
        return CompactGrid.build(compiled, list(principals), list(resources))
    if compact.principals != list(principals) or compact.resources != list(resources):
        raise ValueError("the compact grid is of other principals or resources than the report's")
    return compact


# Building a report allocates hundreds of thousands of small acyclic objects (per ACL, principal
# and resource): the cyclic collector is paused, as for an index snapshot, rather than walk every
# object in memory several times a report.
@gc_paused()
def audit_summaries(acls, principals: Sequence[tuple[str, str]], resources: Sequence[tuple[object, str]], *,
                    compact: CompactGrid | None = None, provenance: Provenance | None = None, top: int = 20) -> dict:
    """The report's numbers, as plain data (also what the page shows). ``acls`` is a
    KafkaSecurity or StandardAuthorizer (see :func:`spark_udfs.rules.standard_authorizer`);
    ``compact``, the grid of exactly these principals and resources under these ACLs, is built
    when not given; ``provenance`` (what was audited), read from ``acls`` when not given."""
    authorizer = standard_authorizer(acls)
    compact = _grid_of(authorizer, principals, resources, compact)
    grants, everyone, beyond = _privilege(compact)
    is_super = compact.class_is_super[compact.principal_class]
    # Most privileged: what a principal may do beyond what anyone from its host may; super
    # users apart (they may do everything, which says nothing about the ACLs).
    order = np.lexsort((np.arange(len(principals)), -grants, -beyond))
    ordinary = order[~is_super[order]]
    most_privileged = [(principals[i][0], principals[i][1], int(grants[i])) for i in ordinary[:top].tolist()]
    everyone_may = compact.everyone_class_bits()[compact.resource_class]
    table = acl_table(authorizer, compact.compiled)
    shadowed = shadowed_grants(authorizer, compact, table)
    provenance = Provenance.of(acls, len(principals), len(resources)) if provenance is None else provenance
    return {
        "compact": compact,
        "grant_counts": grants,  # per principal: its (resource, operation) grants
        "everyone_counts": everyone,  # per principal: of those, what anyone from its host has
        "beyond_everyone_counts": beyond,  # per principal: grants anyone from its host lacks
        "most_privileged": most_privileged,
        "super_users": sorted({principals[i] for i in np.flatnonzero(is_super).tolist()}),
        "everyone_may": everyone_may,  # per resource: the operations every principal of the grid may do
        "shadowed": shadowed,
        "acl_table": table,
        "provenance": provenance,
        "findings": findings(compact, table, provenance, len(shadowed), everyone_may),
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
        denies = sorted(table.text(d) for d in table.applying(patterns, [table.principal[k]], table.host[k], wildcard).tolist()
                        if table.deny[d] & want)
        stored = table.stored[k]
        shadowed.append((_acl_order(stored.binding), ShadowedGrant(
            table.text(k), stored.acl_id, tuple(denies[:MAX_DENIES_NAMED]), max(0, len(denies) - MAX_DENIES_NAMED))))
    return [grant for _, grant in sorted(shadowed, key=lambda item: item[0])]


def _acl_order(binding) -> tuple:
    pattern, entry = binding.pattern, binding.entry
    return (entry.principal, pattern.resource_type.name, pattern.name, pattern.pattern_type.name,
            entry.operation.name, entry.host, entry.permission_type.name)


def _packed(values: np.ndarray, dtype: str) -> str:
    """An array as base64 of its little-endian bytes: the page reads it as a typed array,
    about 1.4 bytes a byte where JSON numbers cost 2 to 11."""
    return base64.b64encode(np.ascontiguousarray(values, dtype=np.dtype(dtype).newbyteorder("<")).tobytes()).decode("ascii")


@gc_paused()
def report_data(acls, principals: Sequence[tuple[str, str]], resources: Sequence[tuple[object, str]], *,
                compact: CompactGrid | None = None, after=None, provenance: Provenance | None = None) -> dict:
    """What the page carries, as JSON-ready data (arrays packed by :func:`_packed`): the
    provenance, the findings, the grid's class tables, the ACLs, the summaries and, with
    ``after``, the what-if. Principals and resources are in the page's order (sorted), the
    summaries' numbers in ``_summaries``."""
    authorizer = standard_authorizer(acls)
    summaries = audit_summaries(acls, principals, resources, compact=compact, provenance=provenance)
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
    page_class = compact.principal_class[by_principal]
    members = compact.class_members[page_class]

    n_pc, n_rc = len(compact.class_is_super), len(compact.base)
    first = compact.class_ptr[compact.representative]
    pattern_counts = compact.class_ptr[compact.representative + 1] - first
    _, at = ranges(first, pattern_counts)
    table = summaries["acl_table"]
    page_of = {"principal": np.argsort(by_principal), "resource": np.argsort(by_resource)}
    patterns = compiled.patterns()
    data = {
        "provenance": attrs.asdict(summaries["provenance"]),
        "findings": [_finding_data(finding, page_of) for finding in summaries["findings"]],
        "operations": {str(int(op)): op.name for op in BITFIELD_OPERATIONS},
        "types": type_names,
        "principals": [principals[i][0] for i in by_principal.tolist()],
        "hosts": [principals[i][1] for i in by_principal.tolist()],
        "resources": [resources[j][1] for j in by_resource.tolist()],
        "allow_everyone": compiled.allow_everyone_if_no_acl_found,
        "wildcard_principal": compiled.principal_id(WILDCARD_PRINCIPAL),
        # What the ACLs name, by the compiled ids the columns hold: the page writes each ACL's text
        # from them (as kafkasec.authorizer.decision.acl_text does), and names a principal's groups.
        "acl_principals": compiled.principal_names(),
        "acl_hosts": compiled.host_names(),
        "acl_patterns": dict(zip(("type", "prefixed", "name"), (*(_packed(np.array(column), "u1") for column in patterns[:2]),
                                                                 patterns[2]))),
        "names": {"operation": {str(int(op)): op.name for op in AclOperation},
                  "resource_type": {str(int(rt)): rt.name for rt in ResourceType}},
        "grid": {
            "resource_type": _packed(np.array([type_index[types[j]] for j in by_resource.tolist()]), "u1"),
            "pc": _packed(page_class, "i4"),
            # Per principal, the ids of the ACL principals that apply to it: its own, then its groups'.
            "members": _packed(members, "i4"),
            "member_width": int(members.shape[1]),
            "hid": _packed(compact.class_host_id[page_class], "i4"),
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
            "operation": _packed(table.operation, "u1"),
            "is_allow": _packed(table.is_allow, "u1"),
            "id": [item.acl_id for item in table.stored],
            "source": [item.source for item in table.stored],
        },
        "summary": {
            "pairs": compact.cells,
            "acls": len(authorizer.index),
            "principal_classes": n_pc,
            "resource_classes": n_rc,
            "exceptions": len(compact.exception_bits),
            "super_users": sorted({principal for principal, _ in summaries["super_users"]}),
            "grants": _packed(summaries["grant_counts"][by_principal], "f8"),
            "everyone": _packed(summaries["everyone_counts"][by_principal], "f8"),
            "beyond": _packed(summaries["beyond_everyone_counts"][by_principal], "f8"),
            "shadowed_count": len(summaries["shadowed"]),
            "shadowed": [[grant.allow, grant.acl_id, list(grant.denies), grant.more_denies]
                         for grant in summaries["shadowed"][:MAX_SHADOWED]],
            "everyone_may": _packed(summaries["everyone_may"][by_resource], "u2"),
        },
        "whatif": None,
    }
    if after is not None:
        data["whatif"] = _what_if_data(authorizer, compact, table, after, by_principal, by_resource)
    return {**data, "_summaries": summaries}


def _finding_data(finding, page_of: dict[str, np.ndarray]) -> dict:
    """A finding as the page reads it: its links name principals and resources by their index
    in the page (``page_of``: per kind, grid index -> page index)."""
    def on_page(rows) -> dict:
        return {key: str(page_of[key][int(value)]) if key in page_of else value for key, value in rows.items()}

    return {"key": finding.key, "title": finding.title, "count": finding.count, "noun": finding.noun,
            "rule": finding.rule, "note": finding.note, "rows": on_page(finding.rows), "columns": list(finding.columns),
            "items": [[list(item.cells), on_page(item.rows)] for item in finding.items],
            # ACLs by their index in the page's ACL table (the AclTable's), resources by page index.
            "acls": _packed(finding.acls, "i4"), "resources": _packed(np.sort(page_of["resource"][finding.resources]), "i4")}


def _what_if_data(authorizer, compact: CompactGrid, table: AclTable, after, by_principal: np.ndarray,
                  by_resource: np.ndarray) -> dict:
    """The change to ``after`` (:func:`spark_udfs.whatif.what_if`): the ACLs it adds and
    removes with their marks, and the changed pairs as joint class blocks (sorted by joint
    principal class), with their exact count."""
    change = what_if(authorizer, compact, table, after)
    changes = compact.changed_blocks(change.after)
    joint_principals = int(changes.joint_pc.max(initial=-1)) + 1
    return {
        "added": list(change.added),
        "removed": list(change.removed),
        "marks": [attrs.asdict(mark) for mark in change.marks],
        "pairs": compact.count_changed(change.after),
        "joint_pc": _packed(changes.joint_pc[by_principal], "i4"),
        "joint_rc": _packed(changes.joint_rc[by_resource], "i4"),
        "ptr": _packed(np.searchsorted(changes.jp, np.arange(joint_principals + 1)), "i4"),
        "jr": _packed(changes.jr, "i4"),
        "before": _packed(changes.before, "u2"),
        "after": _packed(changes.after, "u2"),
    }


def _count(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless ``n`` is 1: "1 pair", "2 pairs"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def html_report(acls, principals: Sequence[tuple[str, str]], resources: Sequence[tuple[object, str]], path: str, *,
                compact: CompactGrid | None = None, after=None, provenance: Provenance | None = None) -> dict:
    """Write the report to ``path`` (one HTML file, no server, works offline); return its
    summaries. ``acls``: a KafkaSecurity or StandardAuthorizer; ``compact``: the grid of these
    principals and resources under these ACLs, if already built; ``after``: the ACLs after a
    change (AclBindings, judged with ``acls``' super users, allow-everyone setting and
    principal expansion, or a StandardAuthorizer), for the what-if; ``provenance``: what was
    audited, when ``acls`` cannot say it all (ACLs read from a cluster)."""
    data = report_data(acls, principals, resources, compact=compact, after=after, provenance=provenance)
    summaries = data.pop("_summaries")
    compact = summaries["compact"]
    # JSON in a script element: only "</" could end it early, so it is escaped.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    provenance_json = json.dumps(data["provenance"], indent=1).replace("</", "<\\/")
    what_if = ""
    if data["whatif"] is not None:
        change = data["whatif"]
        what_if = (f'<p id="whatif-banner" class="banner"><a href="#view=whatif">What-if: {_count(len(change["added"]), "ACL")} '
                   f'added, {len(change["removed"]):,} removed: {_count(change["pairs"], "pair")} '
                   f'{"changes" if change["pairs"] == 1 else "change"}</a></p>')
    summary = data["summary"]
    views = [("findings", "Findings"), ("grid", "Who can do what"), ("privilege", "Principals by privilege"),
             ("everyone", "What everyone may do"), ("shadowed", f"Shadowed grants ({summary['shadowed_count']:,})")]
    if data["whatif"] is not None:
        views.append(("whatif", f"What-if ({_count(data['whatif']['pairs'], 'pair')} change)"))
    tabs = " ".join(f'<a href="#view={name}" data-view="{name}">{html.escape(title)}</a>' for name, title in views)
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kafkasec ACL audit</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_STYLE}</style></head><body>
<header><h1>ACL audit</h1>
{_provenance_html(summaries["provenance"], compact, summary)}
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
<script id="provenance" type="application/json">{provenance_json}</script>
<script id="data" type="application/json">{payload}</script>
<script>{_SCRIPT.read_text(encoding="utf-8")}</script>
</body></html>
"""
    with open(path, "w", encoding="utf-8") as file:
        file.write(page)
    return summaries


def _provenance_html(provenance: Provenance, compact: CompactGrid, summary: dict) -> str:
    """The header's account of what was audited and how (the same as the page's
    ``<script id="provenance">``, for people)."""
    supers = provenance.super_users
    position = "not read from a security log" if provenance.log_position is None else f"offset {provenance.log_position:,}"
    expansion = ", ".join(provenance.principal_expansion) or "none"
    rows = [
        ("Source", provenance.source),
        ("Security log", position),
        ("super.users", f"{_count(len(supers), 'super user')}" + (f": {', '.join(supers)}" if supers else "")),
        ("allow.everyone.if.no.acl.found", str(provenance.allow_everyone_if_no_acl_found).lower()),
        ("Principal expansion", expansion),
        ("ACLs", f"{_count(provenance.acl_count, 'ACL')}, {provenance.acl_digest}"),
        ("Grid", f"{_count(len(compact.principals), 'principal')} x {_count(len(compact.resources), 'resource')} = "
                 f"{_count(compact.cells, 'pair')}; {_count(summary['principal_classes'], 'principal class')}, "
                 f"{_count(summary['resource_classes'], 'resource class')}, {_count(summary['exceptions'], 'exception')}"),
        ("Written", f"{provenance.written_at} by kafkasec {provenance.kafkasec_version}"),
    ]
    items = "".join(f'<div><dt>{html.escape(name)}</dt><dd data-field="{html.escape(name)}">{html.escape(value)}</dd></div>'
                    for name, value in rows)
    return (f'<dl id="audited">{items}</dl>\n<p>Every answer on this page is exact: it carries the whole grid, by class, '
            "and computes each view from it.</p>")


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
#audited{display:grid;grid-template-columns:repeat(auto-fill,minmax(22em,1fr));gap:.2em 1.5em;margin:.4em 0;font-size:.9em}
#audited dt{font-weight:600;color:#5c6370} #audited dd{margin:0;overflow-wrap:anywhere}
.finding-count{font-weight:700} .finding-count.zero{color:#5c6370;font-weight:400}
.mark{border-left:3px solid #3b5bdb} .mark.nothing{border-left-color:#e8590c}
"""
