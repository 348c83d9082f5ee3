"""An HTML audit report of a grid: a heatmap and the summaries a platform team asks for.

Everything is read from the compact grid's class tables (no cell is materialized), so the
report of a 10^9-cell grid costs about what building the compact grid costs:

- the most-privileged principals (most resource x operation grants);
- topics every principal of the grid may READ;
- ALLOW ACLs shadowed by DENY: grants that allow their operation on none of the grid's
  resources they match, because a DENY takes it away;
- a heatmap of the most-privileged principals x the most widely granted resources, each cell
  shaded by how many operations it allows, the operations in its tooltip.
"""

from __future__ import annotations

import html
from typing import Sequence

import numpy as np

from kafkasec.acl import AclOperation, AclPermissionType, PatternType, ResourceType, bitfield_to_operations
from kafkasec.authorizer.standard import StandardAuthorizer
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


def html_report(authorizer: StandardAuthorizer, principals: Sequence[tuple[str, str]],
                resources: Sequence[tuple[object, str]], path: str, *, heatmap: int = 40) -> dict:
    """Write the report to ``path``; return its summaries."""
    summaries = audit_summaries(authorizer, principals, resources)
    compact = summaries["compact"]
    rows = summaries["principal_order"][:heatmap]
    widest = np.argsort(-np.bitwise_count(compact.base).sum(axis=1)[compact.resource_class], kind="stable")[:heatmap]
    esc = html.escape
    head = "".join(f"<th title='{esc(str(resources[j][0]))}'><div>{esc(resources[j][1])}</div></th>" for j in widest)
    body = []
    for i in rows:
        cells = []
        for j in widest:
            bits = compact.bits(int(i), int(j))
            names = ", ".join(sorted(op.name for op in bitfield_to_operations(bits))) or "nothing"
            shade = 255 - min(int(np.bitwise_count(np.int64(bits))) * 28, 220)
            cells.append(f"<td style='background:rgb({shade},{shade},255)' title='{esc(names)}'></td>")
        body.append(f"<tr><th>{esc(principals[i][0])} @ {esc(principals[i][1])}</th>{''.join(cells)}</tr>")
    privileged = "".join(f"<li>{esc(p)} @ {esc(h)}: {n:,} grants</li>" for p, h, n in summaries["most_privileged"])
    readable = "".join(f"<li>{esc(name)}</li>" for name in summaries["readable_by_everyone"]) or "<li>none</li>"
    shadowed = "".join(f"<li>{esc(text)}</li>" for text in summaries["shadowed"]) or "<li>none</li>"
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>kafkasec ACL audit</title>
<style>body{{font-family:sans-serif;margin:2em}} table{{border-collapse:collapse}}
td{{width:14px;height:14px;border:1px solid #eee}} th{{font-weight:normal;font-size:11px;text-align:left}}
thead th div{{writing-mode:vertical-rl;max-height:12em;overflow:hidden}}</style></head><body>
<h1>ACL audit</h1>
<p>{len(principals):,} principals x {len(resources):,} resources = {compact.cells:,} pairs, {len(authorizer.index):,} ACLs;
{len(compact.class_is_super):,} principal classes, {len(compact.base):,} resource classes, {len(compact.exception_bits):,} exceptions.</p>
<h2>Most-privileged principals</h2><ol>{privileged}</ol>
<h2>Topics every principal may read</h2><ul>{readable}</ul>
<h2>ALLOW grants shadowed by DENY</h2><ul>{shadowed}</ul>
<h2>Heatmap</h2><p>The {len(rows)} most-privileged principals x the {len(widest)} most widely granted resources;
darker cells allow more operations (hover for the names).</p>
<table><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>
</body></html>
"""
    with open(path, "w", encoding="utf-8") as file:
        file.write(page)
    return summaries
