"""An HTML audit report of a grid: one self-contained page an auditor questions offline.

The summaries are read from the compact grid's class tables (no cell is materialized), so they
cost about what building the compact grid costs:

- the most-privileged principals (most resource x operation grants);
- topics every principal of the grid may READ;
- ALLOW ACLs shadowed by DENY: grants that allow their operation on none of the grid's
  resources they match, because a DENY takes it away.

Below them, the explorer (``report.js`` beside this module, inlined into the page with the data
as JSON): every allowed pair of the most-privileged principals (up to ``max_cells``), searched by
principal or resource, filtered by operation and resource type, sorted by any column, paged,
and exported as CSV; a principal or a resource opens its grants, each operation with the rule
and the ACL (id and source) that grants it; with ``after`` ACLs, the pairs a change would alter,
before and after side by side. The page's state is in its address (``#q=alice&op=READ``), so a
view can be shared, and tested in a headless browser.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Sequence

import numpy as np

from kafkasec.acl import (
    BITFIELD_OPERATIONS,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from kafkasec.authorizer.decision import acl_text
from kafkasec.authorizer.standard import StandardAuthorizer
from kafkasec.context import Action, RequestContext
from spark_udfs.compact import CompactGrid, classes_by_pattern
from spark_udfs.evaluator import CompiledAcls

_READ = 1 << AclOperation.READ


def audit_summaries(authorizer: StandardAuthorizer, principals: Sequence[tuple[str, str]],
                    resources: Sequence[tuple[object, str]], *, top: int = 20) -> dict:
    """The report's numbers, as plain data (also what the HTML shows)."""
    compiled = CompiledAcls.from_authorizer(authorizer)
    compact = CompactGrid.build(compiled, principals, resources)
    grants = compact.grants_per_principal_class()[compact.principal_class]
    order = np.argsort(-grants, kind="stable")
    most_privileged = [(principals[i][0], principals[i][1], int(grants[i])) for i in order[:top]]
    everyone = compact.principals_allowed(_READ)[compact.resource_class] == len(principals)
    readable = [resources[j][1] for j in np.flatnonzero(everyone).tolist()
                if int(compact.resource_types[j]) == ResourceType.TOPIC]
    return {
        "compact": compact,
        "grant_counts": grants,  # per principal: its (resource, operation) grants
        "principal_order": order,
        "most_privileged": most_privileged,
        "readable_by_everyone": sorted(readable),
        "shadowed": shadowed_grants(authorizer, compiled, compact),
    }


def shadowed_grants(authorizer: StandardAuthorizer, compiled: CompiledAcls, compact: CompactGrid) -> list[str]:
    """ALLOW ACLs of named principals that match some of the grid's resources but allow their
    operation on none of them: a DENY shadows them."""
    classes_of = classes_by_pattern(compact.representative, compact.class_ptr, compact.class_patterns)
    rows_pid, rows_hid, rows_rc, rows_acl, bits = [], [], [], [], []
    texts: list[str] = []
    for stored in authorizer.stored_acls():
        binding = stored.binding
        entry, pattern = binding.entry, binding.pattern
        if entry.permission_type is not AclPermissionType.ALLOW or entry.principal == "User:*":
            continue
        pattern_id = compiled.pattern_id(pattern.resource_type, pattern.name, pattern.pattern_type is PatternType.PREFIXED)
        pid = compiled.principal_id(entry.principal)
        candidates = classes_of(np.array([pattern_id], dtype=np.int64)) if pattern_id is not None else []
        if pid < 0 or not len(candidates):
            continue
        hid = compiled.host_id(entry.host)
        for rc in candidates:
            rows_pid.append(pid)
            rows_hid.append(hid)
            rows_rc.append(rc)
            rows_acl.append(len(texts))
        bits.append(1 << entry.operation if entry.operation is not AclOperation.ALL else -1)
        texts.append(f"{entry.principal} {entry.operation.name} on {pattern.resource_type.name} "
                     f"{pattern.pattern_type.name} '{pattern.name}' from {entry.host}")
    if not texts:
        return []
    rc = np.array(rows_rc, dtype=np.int64)
    answers = compiled.evaluate_ids(
        np.array(rows_pid, dtype=np.int64), np.array(rows_hid, dtype=np.int64), np.zeros(len(rc), dtype=bool),
        compact.class_types[rc], compact.representative[rc], compact.class_ptr, compact.class_patterns,
    )
    acl = np.array(rows_acl, dtype=np.int64)
    wanted = np.array(bits, dtype=np.int64)[acl]
    wanted = np.where(wanted == -1, compact.supported[rc], wanted)  # ALL: any of its operations
    allowed_somewhere = np.zeros(len(texts), dtype=bool)
    np.logical_or.at(allowed_somewhere, acl, (answers & wanted) != 0)
    return [text for text, allowed in zip(texts, allowed_somewhere) if not allowed]


MAX_REPORT_CELLS = 50_000
"""The allowed pairs the explorer carries at most (the most-privileged principals' first): each
costs the page about 40 bytes and a few decisions to explain."""
_SCRIPT = Path(__file__).with_name("report.js")


def report_data(authorizer: StandardAuthorizer, principals: Sequence[tuple[str, str]],
                resources: Sequence[tuple[object, str]], *, after: StandardAuthorizer | None = None,
                max_cells: int = MAX_REPORT_CELLS) -> dict:
    """What the page shows, as JSON-ready data: the summaries, the allowed pairs with their
    grants, and (with ``after``) the pairs the change alters."""
    summaries = audit_summaries(authorizer, principals, resources)
    compact = summaries["compact"]
    types = [ResourceType.coerce(resource_type).name for resource_type, _ in resources]
    cells: list[list[int]] = []  # [principal index, resource index, bitfield]
    grants: list[list] = []  # [cell, operation code, rule, ACL index or -1]
    acls: list[list[str]] = []  # [id, source, text]
    acl_index: dict[str, int] = {}
    truncated = False
    for i in summaries["principal_order"].tolist():  # most grants first: the rest have no more
        if summaries["grant_counts"][i] == 0:
            break
        if len(cells) >= max_cells:
            truncated = True  # this principal's pairs, at least, are left out
            break
        principal, host = principals[i]
        row = compact.row(i)
        allowed = np.flatnonzero(row).tolist()
        if len(allowed) > max_cells - len(cells):
            truncated, allowed = True, allowed[: max_cells - len(cells)]
        actions = [Action(op, ResourcePattern(types[j], resources[j][1])) for j in allowed
                   for op in BITFIELD_OPERATIONS if row[j] & (1 << op)]
        decisions = iter(authorizer.decide(RequestContext.for_principal(principal, host), actions))
        for j in allowed:
            cells.append([i, j, int(row[j])])
            for op in BITFIELD_OPERATIONS:
                if row[j] & (1 << op):
                    rule = next(decisions).rule
                    acl = -1
                    if rule.acl is not None:
                        acl = acl_index.setdefault(rule.acl.acl_id, len(acls))
                        if acl == len(acls):
                            acls.append([rule.acl.acl_id, rule.acl.source, acl_text(rule.acl.binding)])
                    grants.append([len(cells) - 1, int(op), rule.kind.value, acl])
    data = {
        "operations": {str(int(op)): op.name for op in BITFIELD_OPERATIONS},
        "principals": [list(p) for p in principals],
        "resources": [[t, name] for t, (_, name) in zip(types, resources)],
        "cells": cells,
        "truncated": truncated,
        "grants": grants,
        "acls": acls,
        "summary": {
            "pairs": compact.cells,
            "acls": len(authorizer.index),
            "most_privileged": summaries["most_privileged"],
            "readable_by_everyone": summaries["readable_by_everyone"],
            "shadowed": summaries["shadowed"],
        },
        "diff": None,
    }
    if after is not None:
        after_grid = CompactGrid.build(CompiledAcls.from_authorizer(after), list(principals), list(resources))
        data["diff"] = [list(cell) for cell in compact.differences(after_grid, max_cells)]
    return {**data, "_summaries": summaries}


def html_report(authorizer: StandardAuthorizer, principals: Sequence[tuple[str, str]],
                resources: Sequence[tuple[object, str]], path: str, *, after: StandardAuthorizer | None = None,
                max_cells: int = MAX_REPORT_CELLS) -> dict:
    """Write the report to ``path`` (one HTML file, no server, works offline); return its summaries."""
    data = report_data(authorizer, principals, resources, after=after, max_cells=max_cells)
    summaries = data.pop("_summaries")
    esc = html.escape
    privileged = "".join(f"<li>{esc(p)} @ {esc(h)}: {n:,} grants</li>" for p, h, n in summaries["most_privileged"])
    readable = "".join(f"<li>{esc(name)}</li>" for name in summaries["readable_by_everyone"]) or "<li>none</li>"
    shadowed = "".join(f"<li>{esc(text)}</li>" for text in summaries["shadowed"]) or "<li>none</li>"
    compact = summaries["compact"]
    # JSON in a script element: only "</" could end it early, so it is escaped.
    payload = json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>kafkasec ACL audit</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{_STYLE}</style></head><body>
<header><h1>ACL audit</h1>
<p>{len(principals):,} principals x {len(resources):,} resources = {compact.cells:,} pairs, {len(authorizer.index):,} ACLs;
{len(compact.class_is_super):,} principal classes, {len(compact.base):,} resource classes, {len(compact.exception_bits):,} exceptions.</p></header>
<section class="summaries">
<div><h2>Most-privileged principals</h2><ol>{privileged}</ol></div>
<div><h2>Topics every principal may read</h2><ul>{readable}</ul></div>
<div><h2>ALLOW grants shadowed by DENY</h2><ul>{shadowed}</ul></div>
</section>
<section id="explorer"><h2>Who can do what</h2>
<form id="filters" onsubmit="return false">
<input id="q" type="search" placeholder="principal, host or resource contains..." aria-label="search">
<select id="op" aria-label="operation"><option value="">any operation</option></select>
<select id="type" aria-label="resource type"><option value="">any resource type</option></select>
<button id="export" type="button">Export CSV</button>
<span id="count"></span></form>
<table id="cells"><thead><tr>
<th data-sort="principal">principal</th><th data-sort="host">host</th><th data-sort="type">resource type</th>
<th data-sort="resource">resource</th><th data-sort="operations">operations</th></tr></thead><tbody></tbody></table>
<nav id="pages"><button id="previous" type="button">previous</button> <span id="page"></span> <button id="next" type="button">next</button></nav>
</section>
<section id="detail" hidden><h2 id="detail-title"></h2><table id="grants"><thead></thead><tbody></tbody></table></section>
<section id="diff" hidden><h2>What the change would alter</h2><table id="changes"><thead><tr>
<th>principal</th><th>host</th><th>resource</th><th>before</th><th>after</th><th>gained</th><th>lost</th></tr></thead><tbody></tbody></table></section>
<script id="data" type="application/json">{payload}</script>
<script>{_SCRIPT.read_text(encoding="utf-8")}</script>
</body></html>
"""
    with open(path, "w", encoding="utf-8") as file:
        file.write(page)
    return summaries


_STYLE = """
body{font-family:system-ui,sans-serif;margin:0 2em 2em;color:#1d2430}
header{border-bottom:2px solid #3b5bdb;margin-bottom:1em}
h1{margin:.6em 0 .2em} h2{font-size:1.1em;margin:.8em 0 .4em}
.summaries{display:grid;grid-template-columns:repeat(auto-fit,minmax(18em,1fr));gap:1em}
.summaries div{background:#f4f6fb;border-radius:6px;padding:.2em 1em;max-height:16em;overflow:auto}
#filters{display:flex;gap:.5em;flex-wrap:wrap;align-items:center;margin-bottom:.5em}
#filters input{flex:1;min-width:16em;padding:.3em}
table{border-collapse:collapse;width:100%;font-size:.9em}
th,td{text-align:left;padding:.25em .5em;border-bottom:1px solid #e3e7ef}
th[data-sort]{cursor:pointer;user-select:none} th.sorted-asc::after{content:" \\25B2"} th.sorted-desc::after{content:" \\25BC"}
tbody tr:hover{background:#f4f6fb} a{color:#3b5bdb;cursor:pointer;text-decoration:none}
.op{display:inline-block;background:#e7ecff;border-radius:3px;padding:0 .3em;margin:1px;font-size:.85em}
.gained{background:#d3f9d8} .lost{background:#ffe3e3}
#pages{margin:.5em 0} #detail{margin-top:1.5em;border-top:2px solid #3b5bdb}
"""
