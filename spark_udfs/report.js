// The audit report's explorer (spark_udfs/report.py inlines this file into each page).
// Everything comes from the JSON in #data; the view's state lives in the address's hash
// (q, op, type, sort, dir, page, principal, resource) so that a view can be shared or tested.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  const PAGE_ROWS = 100;
  const opNames = data.operations; // code -> name
  const opCodes = Object.keys(opNames).map(Number).sort((a, b) => a - b);
  const names = (bits) => opCodes.filter((code) => bits & (1 << code)).map((code) => opNames[code]);
  const rows = data.cells.map(([p, r, bits], index) => ({
    index, p, r, bits,
    principal: data.principals[p][0], host: data.principals[p][1],
    type: data.resources[r][0], resource: data.resources[r][1], operations: names(bits),
  }));
  const grantsOf = new Map(); // cell index -> [[op code, rule, acl index]]
  for (const [cell, op, rule, acl] of data.grants) {
    if (!grantsOf.has(cell)) grantsOf.set(cell, []);
    grantsOf.get(cell).push([op, rule, acl]);
  }
  const $ = (id) => document.getElementById(id);
  const element = (tag, text, attributes) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    return node;
  };

  // ---------------------------------------------------------------- state in the hash
  function readState() {
    const params = new URLSearchParams(location.hash.slice(1));
    return {
      q: params.get("q") || "", op: params.get("op") || "", type: params.get("type") || "",
      sort: params.get("sort") || "", dir: params.get("dir") === "desc" ? "desc" : "asc",
      page: Math.max(0, parseInt(params.get("page") || "0", 10) || 0),
      principal: params.get("principal"), resource: params.get("resource"),
    };
  }
  function writeState(changes) {
    const state = Object.assign(readState(), changes);
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(state)) {
      if (value !== "" && value !== null && value !== undefined && !(key === "page" && value === 0) && !(key === "dir" && value === "asc")) {
        params.set(key, value);
      }
    }
    history.replaceState(null, "", "#" + params.toString());
    render();
  }

  // ---------------------------------------------------------------- the table
  function filtered(state) {
    const needle = state.q.toLowerCase();
    const opCode = state.op === "" ? null : Number(state.op);
    let chosen = rows.filter((row) =>
      (!needle || row.principal.toLowerCase().includes(needle) || row.host.toLowerCase().includes(needle)
        || row.resource.toLowerCase().includes(needle))
      && (opCode === null || (row.bits & (1 << opCode)))
      && (!state.type || row.type === state.type));
    if (state.sort) {
      const key = state.sort === "operations" ? (row) => row.operations.length : (row) => row[state.sort];
      const sign = state.dir === "desc" ? -1 : 1;
      chosen = chosen.slice().sort((a, b) => {
        const x = key(a), y = key(b);
        return (x < y ? -1 : x > y ? 1 : 0) * sign;
      });
    }
    return chosen;
  }

  function link(text, changes) {
    const anchor = element("a", text, { href: "#" });
    anchor.addEventListener("click", (event) => { event.preventDefault(); writeState(changes); });
    return anchor;
  }

  function operationBadges(list, className) {
    const cell = element("td");
    for (const name of list) cell.appendChild(element("span", name, { class: "op" + (className ? " " + className : "") }));
    return cell;
  }

  function renderTable(state) {
    const chosen = filtered(state);
    const pages = Math.max(1, Math.ceil(chosen.length / PAGE_ROWS));
    const page = Math.min(state.page, pages - 1);
    const body = $("cells").querySelector("tbody");
    body.replaceChildren();
    for (const row of chosen.slice(page * PAGE_ROWS, (page + 1) * PAGE_ROWS)) {
      const line = element("tr", undefined, { "data-cell": row.index });
      const principal = element("td"); principal.appendChild(link(row.principal, { principal: row.p, resource: null }));
      const resource = element("td"); resource.appendChild(link(row.resource, { resource: row.r, principal: null }));
      line.append(principal, element("td", row.host), element("td", row.type), resource, operationBadges(row.operations));
      body.appendChild(line);
    }
    $("count").textContent = `${chosen.length} of ${rows.length} allowed pairs` + (data.truncated ? " (the most-privileged principals' first; the report is capped)" : "");
    $("page").textContent = `page ${page + 1} of ${pages}`;
    $("previous").disabled = page === 0;
    $("next").disabled = page >= pages - 1;
    for (const header of document.querySelectorAll("th[data-sort]")) {
      header.classList.toggle("sorted-asc", header.dataset.sort === state.sort && state.dir === "asc");
      header.classList.toggle("sorted-desc", header.dataset.sort === state.sort && state.dir === "desc");
    }
    return chosen;
  }

  // ---------------------------------------------------------------- drill-down
  function renderDetail(state) {
    const detail = $("detail");
    const byPrincipal = state.principal !== null && data.principals[state.principal];
    const byResource = state.resource !== null && data.resources[state.resource];
    detail.hidden = !(byPrincipal || byResource);
    if (detail.hidden) return;
    const mine = rows.filter((row) => byPrincipal ? row.p === Number(state.principal) : row.r === Number(state.resource));
    $("detail-title").textContent = byPrincipal
      ? `What ${byPrincipal[0]} from ${byPrincipal[1]} may do, and which ACL grants it`
      : `Who may do what on ${byResource[0]} ${byResource[1]}, and which ACL grants it`;
    const head = $("grants").querySelector("thead");
    head.replaceChildren();
    const titles = [byPrincipal ? "resource" : "principal", byPrincipal ? "resource type" : "host", "operation", "rule", "ACL id", "source", "ACL"];
    const headRow = element("tr");
    for (const title of titles) headRow.appendChild(element("th", title));
    head.appendChild(headRow);
    const body = $("grants").querySelector("tbody");
    body.replaceChildren();
    for (const row of mine) {
      for (const [op, rule, acl] of grantsOf.get(row.index) || []) {
        const [id, source, text] = acl >= 0 ? data.acls[acl] : ["", "", rule === "super_user" ? "super.users" : ""];
        const line = element("tr", undefined, { "data-grant": `${row.index}:${opNames[op]}` });
        line.append(
          element("td", byPrincipal ? row.resource : row.principal), element("td", byPrincipal ? row.type : row.host),
          element("td", opNames[op]), element("td", rule), element("td", id), element("td", source), element("td", text));
        body.appendChild(line);
      }
    }
  }

  // ---------------------------------------------------------------- what-if
  function renderDiff() {
    if (!data.diff) return;
    $("diff").hidden = false;
    const body = $("changes").querySelector("tbody");
    body.replaceChildren();
    for (const [p, r, before, after] of data.diff) {
      const gained = names(after & ~before), lost = names(before & ~after);
      const line = element("tr");
      line.append(element("td", data.principals[p][0]), element("td", data.principals[p][1]),
        element("td", `${data.resources[r][0]} ${data.resources[r][1]}`),
        operationBadges(names(before)), operationBadges(names(after)),
        operationBadges(gained, "gained"), operationBadges(lost, "lost"));
      body.appendChild(line);
    }
  }

  // ---------------------------------------------------------------- export
  function exportCsv() {
    const quote = (value) => /[",\n]/.test(value) ? `"${String(value).replace(/"/g, '""')}"` : String(value);
    const lines = ["principal,host,resource_type,resource_name,operations,bitfield"];
    for (const row of filtered(readState())) {
      lines.push([row.principal, row.host, row.type, row.resource, row.operations.join(" "), row.bits].map(quote).join(","));
    }
    const url = URL.createObjectURL(new Blob([lines.join("\n") + "\n"], { type: "text/csv" }));
    const anchor = element("a", "", { href: url, download: "acl-grid.csv" });
    document.body.appendChild(anchor);
    anchor.click();
    anchor.remove();
    URL.revokeObjectURL(url);
  }

  // ---------------------------------------------------------------- wiring
  function render() {
    const state = readState();
    $("q").value = state.q;
    $("op").value = state.op;
    $("type").value = state.type;
    renderTable(state);
    renderDetail(state);
  }

  for (const code of opCodes) $("op").appendChild(element("option", opNames[code], { value: code }));
  for (const type of [...new Set(data.resources.map(([type]) => type))].sort()) $("type").appendChild(element("option", type, { value: type }));
  $("q").addEventListener("input", () => writeState({ q: $("q").value, page: 0 }));
  $("op").addEventListener("change", () => writeState({ op: $("op").value, page: 0 }));
  $("type").addEventListener("change", () => writeState({ type: $("type").value, page: 0 }));
  $("previous").addEventListener("click", () => writeState({ page: Math.max(0, readState().page - 1) }));
  $("next").addEventListener("click", () => writeState({ page: readState().page + 1 }));
  $("export").addEventListener("click", exportCsv);
  for (const header of document.querySelectorAll("th[data-sort]")) {
    header.addEventListener("click", () => {
      const state = readState();
      const dir = state.sort === header.dataset.sort && state.dir === "asc" ? "desc" : "asc";
      writeState({ sort: header.dataset.sort, dir });
    });
  }
  window.addEventListener("hashchange", render);
  renderDiff();
  render();
  document.body.dataset.ready = "true";
})();
