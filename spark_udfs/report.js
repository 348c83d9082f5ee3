// The audit report's explorer (spark_udfs/report.py inlines this file into each page).
// The page carries the whole compact grid (class tables, base, exceptions) and every ACL with
// its pattern; each view is computed from them, exactly: counts by class, rows only for the
// page shown. It opens on the findings (computed on the driver, with links to their rows). The
// view's state lives in the address's hash so that it can be shared or tested.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("data").textContent);
  function unpack(text, Type) {
    const binary = atob(text);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return new Type(bytes.buffer);
  }
  const g = data.grid;
  const P = data.principals.length, R = data.resources.length;
  // Per principal, the ids of the ACL principals that apply to it (its own, then its groups'), W a row.
  const pc = unpack(g.pc, Int32Array), members = unpack(g.members, Int32Array), hid = unpack(g.hid, Int32Array);
  const W = g.member_width;
  const rc = unpack(g.rc, Int32Array), rtype = unpack(g.resource_type, Uint8Array);
  const classSuper = unpack(g.class_super, Uint8Array), classHost = unpack(g.class_host, Int32Array);
  const H = g.host_classes, base = unpack(g.base, Uint16Array), supported = unpack(g.supported, Uint16Array);
  const excPtr = unpack(g.exception_ptr, Int32Array), excRc = unpack(g.exception_rc, Int32Array);
  const excBits = unpack(g.exception_bits, Uint16Array);
  const patPtr = unpack(g.pattern_ptr, Int32Array), patterns = unpack(g.patterns, Int32Array);
  const nPc = classSuper.length, nRc = supported.length, nExc = excRc.length;
  const acl = {
    ptr: unpack(data.acls.pattern_ptr, Int32Array), principal: unpack(data.acls.principal, Int32Array),
    host: unpack(data.acls.host, Int32Array), allow: unpack(data.acls.allow, Uint16Array),
  };
  // Each ACL's pattern (the ACLs are listed by pattern; -1: none), for the pairs one ACL bears on.
  acl.pattern = new Int32Array(acl.principal.length).fill(-1);
  for (let t = 0; t + 1 < acl.ptr.length; t++) acl.pattern.fill(t, acl.ptr[t], acl.ptr[t + 1]);
  acl.operation = unpack(data.acls.operation, Uint8Array);
  acl.isAllow = unpack(data.acls.is_allow, Uint8Array);
  const aclPatterns = { type: unpack(data.acl_patterns.type, Uint8Array), prefixed: unpack(data.acl_patterns.prefixed, Uint8Array) };
  // An ACL as one line, as kafkasec.authorizer.decision.acl_text writes it (the tests hold the two alike).
  function aclText(a) {
    const t = acl.pattern[a];
    return `${acl.isAllow[a] ? "ALLOW" : "DENY"} ${data.acl_principals[acl.principal[a]]} from host ${data.acl_hosts[acl.host[a]]} ` +
      `${data.names.operation[acl.operation[a]]} on ${data.names.resource_type[aclPatterns.type[t]]} ` +
      `${aclPatterns.prefixed[t] ? "PREFIXED" : "LITERAL"} '${data.acl_patterns.name[t]}'`;
  }
  const summary = data.summary;
  const grants = unpack(summary.grants, Float64Array), everyone = unpack(summary.everyone, Float64Array);
  const beyond = unpack(summary.beyond, Float64Array), everyoneMay = unpack(summary.everyone_may, Uint16Array);
  // The exceptions by resource class too (a column's), and each one's principal class.
  const excPc = new Int32Array(nExc);
  for (let p = 0; p < nPc; p++) excPc.fill(p, excPtr[p], excPtr[p + 1]);
  const colPtr = new Int32Array(nRc + 1);
  for (let k = 0; k < nExc; k++) colPtr[excRc[k] + 1]++;
  for (let r = 0; r < nRc; r++) colPtr[r + 1] += colPtr[r];
  const colPc = new Int32Array(nExc), colBits = new Uint16Array(nExc), cursor = colPtr.slice(0, nRc);
  for (let k = 0; k < nExc; k++) { const at = cursor[excRc[k]]++; colPc[at] = excPc[k]; colBits[at] = excBits[k]; }

  const opNames = data.operations; // code -> name
  const opCodes = Object.keys(opNames).map(Number).sort((a, b) => a - b);
  const ALL_OPS = opCodes.reduce((mask, code) => mask | (1 << code), 0);
  const opsOf = (bits) => opCodes.filter((code) => bits & (1 << code));
  const lowerPrincipals = data.principals.map((name, i) => (name + " " + data.hosts[i]).toLowerCase());
  const lowerResources = data.resources.map((name) => name.toLowerCase());
  const everyIndex = (n) => Int32Array.from({ length: n }, (_, i) => i);
  const allPrincipals = everyIndex(P), allResources = everyIndex(R);
  const fmt = (n) => Number(n).toLocaleString("en-US");
  // "1 pair", "2 pairs"; nouns ending in s, x or ss take "es", "class" too.
  const plural = (n, noun) => `${fmt(n)} ${noun}${n === 1 ? "" : /(s|x)$/.test(noun) ? "es" : "s"}`;
  const PAGE_ROWS = 100, MAX_PAGE_ROWS = 5000, EXPORT_LIMIT = 1000000;
  const $ = (id) => document.getElementById(id);
  const element = (tag, text, attributes) => {
    const node = document.createElement(tag);
    if (text !== undefined) node.textContent = text;
    for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, value);
    return node;
  };

  // ---------------------------------------------------------------- the grid, by class
  // A cell's shown operations: its bits, less what anyone from its host may (with "own"),
  // within the operations asked for. A cell is a row when any is left.
  function shown(bits, baseBits, q) { return (q.own ? bits & ~baseBits : bits) & q.mask; }

  function classCounts(indices, classOf, size) {
    const counts = new Float64Array(size);
    for (let k = 0; k < indices.length; k++) counts[classOf[indices[k]]]++;
    return counts;
  }

  // Per principal class: its cells shown over resources weighted cR (per resource class).
  function rowCounts(cR, q) {
    const perHost = new Float64Array(H), superPerHost = new Float64Array(H);
    for (let r = 0; r < nRc; r++) {
      const w = cR[r];
      if (!w) continue;
      for (let h = 0; h < H; h++) {
        const b = base[r * H + h];
        if (shown(b, b, q)) perHost[h] += w;
        if (shown(supported[r], b, q)) superPerHost[h] += w;
      }
    }
    const counts = new Float64Array(nPc);
    for (let p = 0; p < nPc; p++) {
      const h = classHost[p];
      if (classSuper[p]) { counts[p] = superPerHost[h]; continue; }
      let n = perHost[h];
      for (let k = excPtr[p]; k < excPtr[p + 1]; k++) {
        const r = excRc[k], w = cR[r];
        if (!w) continue;
        const b = base[r * H + h];
        n += w * ((shown(excBits[k], b, q) ? 1 : 0) - (shown(b, b, q) ? 1 : 0));
      }
      counts[p] = n;
    }
    return counts;
  }

  // Per resource class: its cells shown over principals weighted cP (per principal class).
  function columnCounts(cP, q) {
    const perHost = new Float64Array(H), superPerHost = new Float64Array(H);
    for (let p = 0; p < nPc; p++) if (cP[p]) (classSuper[p] ? superPerHost : perHost)[classHost[p]] += cP[p];
    const counts = new Float64Array(nRc);
    for (let r = 0; r < nRc; r++) {
      let n = 0;
      for (let h = 0; h < H; h++) {
        const b = base[r * H + h];
        if (perHost[h] && shown(b, b, q)) n += perHost[h];
        if (superPerHost[h] && shown(supported[r], b, q)) n += superPerHost[h];
      }
      counts[r] = n;
    }
    for (let k = 0; k < nExc; k++) {
      const p = excPc[k], w = cP[p];
      if (!w || classSuper[p]) continue;
      const r = excRc[k], b = base[r * H + classHost[p]];
      counts[r] += w * ((shown(excBits[k], b, q) ? 1 : 0) - (shown(b, b, q) ? 1 : 0));
    }
    return counts;
  }

  // One principal class's bits and base bits per resource class.
  function classRow(p) {
    const bits = new Uint16Array(nRc), baseBits = new Uint16Array(nRc), h = classHost[p];
    for (let r = 0; r < nRc; r++) baseBits[r] = base[r * H + h];
    if (classSuper[p]) bits.set(supported);
    else {
      bits.set(baseBits);
      for (let k = excPtr[p]; k < excPtr[p + 1]; k++) bits[excRc[k]] = excBits[k];
    }
    return { bits, baseBits };
  }

  // One resource class's bits and base bits per principal class.
  function classColumn(r) {
    const bits = new Uint16Array(nPc), baseBits = new Uint16Array(nPc);
    for (let p = 0; p < nPc; p++) {
      const b = base[r * H + classHost[p]];
      baseBits[p] = b;
      bits[p] = classSuper[p] ? supported[r] : b;
    }
    for (let k = colPtr[r]; k < colPtr[r + 1]; k++) if (!classSuper[colPc[k]]) bits[colPc[k]] = colBits[k];
    return { bits, baseBits };
  }

  // The rows [principal, resource, bits, base bits] of principals x resources that q shows,
  // from offset on (at most limit), and how many there are in all.
  function gridRows(principals, resources, q, offset, limit, byResource) {
    // Walk the outer list (principals, or resources with byResource), skipping whole
    // principals (resources) by their counts, and expand only those the page reaches.
    const counts = byResource ? columnCounts(classCounts(principals, pc, nPc), q) : rowCounts(classCounts(resources, rc, nRc), q);
    const [outer, inner, outerClass, innerClass, expand] = byResource
      ? [resources, principals, rc, pc, classColumn] : [principals, resources, pc, rc, classRow];
    let total = 0;
    for (let k = 0; k < outer.length; k++) total += counts[outerClass[outer[k]]];
    const rows = [];
    let skip = offset;
    for (let k = 0; k < outer.length && rows.length < limit; k++) {
      const o = outer[k], n = counts[outerClass[o]];
      if (skip >= n) { skip -= n; continue; }
      const { bits, baseBits } = expand(outerClass[o]);
      for (let m = 0; m < inner.length && rows.length < limit; m++) {
        const x = inner[m], c = innerClass[x];
        if (!shown(bits[c], baseBits[c], q)) continue;
        if (skip > 0) { skip--; continue; }
        rows.push(byResource ? [x, o, bits[c], baseBits[c]] : [o, x, bits[c], baseBits[c]]);
      }
    }
    return { rows, total };
  }

  // ---------------------------------------------------------------- why: the ACL behind a grant
  // Kafka's rules over the ACLs of the resource's patterns (its class's): a super user is
  // allowed by super.users; a resource no ACL matches by allow.everyone.if.no.acl.found; else
  // by the ALLOW ACLs whose principal is the principal's, one of its groups' (principal
  // expansion) or User:*, whose host is * or the principal's, and whose operation implies this
  // one (the cell's answer already says no DENY takes it away).
  function appliesTo(i, principal) {
    if (principal === data.wildcard_principal) return true;
    for (let k = i * W; k < (i + 1) * W; k++) if (members[k] >= 0 && members[k] === principal) return true;
    return false;
  }
  // The group through which an ACL of principal applies to principal i ("" for its own or User:*'s).
  function through(i, principal) {
    return principal !== members[i * W] && principal !== data.wildcard_principal ? data.acl_principals[principal] : "";
  }
  function groupsOf(i) {
    const names = [];
    for (let k = i * W + 1; k < (i + 1) * W; k++) if (members[k] >= 0) names.push(data.acl_principals[members[k]]);
    return names;
  }
  function explain(i, j, op) {
    if (classSuper[pc[i]]) return { rule: "super_user", acls: [] };
    const r = rc[j];
    if (patPtr[r] === patPtr[r + 1]) return { rule: "no_acl_found", acls: [] };
    const found = [];
    for (let t = patPtr[r]; t < patPtr[r + 1]; t++) {
      const pattern = patterns[t];
      for (let a = acl.ptr[pattern]; a < acl.ptr[pattern + 1]; a++) {
        if (!((acl.allow[a] >> op) & 1)) continue;
        const principal = acl.principal[a], host = acl.host[a];
        if (!appliesTo(i, principal)) continue;
        if (!(host === 0 || (hid[i] >= 0 && host === hid[i]))) continue;
        found.push(a);
      }
    }
    return { rule: "allow_acl", acls: found };
  }

  const TYPE_OPTION = { TOPIC: "--topic", GROUP: "--group", CLUSTER: "--cluster", TRANSACTIONAL_ID: "--transactional-id",
    DELEGATION_TOKEN: "--delegation-token", USER: "--user-principal" };
  function checkCommand(i, j, op) {
    const type = data.types[rtype[j]];
    const resource = type === "CLUSTER" ? "--cluster" : `${TYPE_OPTION[type] || "--" + type.toLowerCase()} '${data.resources[j]}'`;
    return `kafkasec acls check --principal '${data.principals[i]}' --host ${data.hosts[i]} --operation ${opNames[op]} ${resource} --explain`;
  }

  // ---------------------------------------------------------------- the what-if, by joint class
  const change = data.whatif && {
    jpOf: unpack(data.whatif.joint_pc, Int32Array), jrOf: unpack(data.whatif.joint_rc, Int32Array),
    ptr: unpack(data.whatif.ptr, Int32Array), jr: unpack(data.whatif.jr, Int32Array),
    before: unpack(data.whatif.before, Uint16Array), after: unpack(data.whatif.after, Uint16Array),
  };
  if (change) change.nJr = change.jrOf.reduce((most, value) => Math.max(most, value + 1), 0);
  function changed(before, after, q) {
    const moved = q.change === "gained" ? after & ~before : q.change === "lost" ? before & ~after : before ^ after;
    return moved & q.mask;
  }
  function changeRows(principals, resources, q, offset, limit) {
    const nJr = change.nJr;
    const cJr = new Float64Array(nJr);
    for (let m = 0; m < resources.length; m++) cJr[change.jrOf[resources[m]]]++;
    const nJp = change.ptr.length - 1, counts = new Float64Array(nJp);
    for (let jp = 0; jp < nJp; jp++) {
      for (let k = change.ptr[jp]; k < change.ptr[jp + 1]; k++) {
        if (changed(change.before[k], change.after[k], q)) counts[jp] += cJr[change.jr[k]];
      }
    }
    let total = 0;
    for (let k = 0; k < principals.length; k++) total += counts[change.jpOf[principals[k]]];
    const rows = [], block = new Int32Array(nJr).fill(-1);
    let skip = offset;
    for (let k = 0; k < principals.length && rows.length < limit; k++) {
      const i = principals[k], jp = change.jpOf[i], n = counts[jp];
      if (skip >= n) { skip -= n; continue; }
      for (let b = change.ptr[jp]; b < change.ptr[jp + 1]; b++) block[change.jr[b]] = b;
      for (let m = 0; m < resources.length && rows.length < limit; m++) {
        const j = resources[m], b = block[change.jrOf[j]];
        if (b < 0 || !changed(change.before[b], change.after[b], q)) continue;
        if (skip > 0) { skip--; continue; }
        rows.push([i, j, change.before[b], change.after[b]]);
      }
      for (let b = change.ptr[jp]; b < change.ptr[jp + 1]; b++) block[change.jr[b]] = -1;
    }
    return { rows, total };
  }

  // ---------------------------------------------------------------- state in the hash
  const KEYS = ["view", "p", "r", "q", "type", "op", "kind", "change", "own", "by", "sort", "page", "size", "principal", "resource",
    "finding", "acl"];
  function readState() {
    const params = new URLSearchParams(location.hash.slice(1));
    const state = {};
    for (const key of KEYS) state[key] = params.get(key) || "";
    state.page = Math.max(0, parseInt(state.page, 10) || 0);
    state.size = Math.min(MAX_PAGE_ROWS, Math.max(1, parseInt(state.size, 10) || PAGE_ROWS));
    // Without a view: a principal's or resource's drill-down, the grid's rows for its filters,
    // else the findings (the page opens on them).
    const filtered = KEYS.some((key) => key !== "view" && params.get(key));
    if (!state.view) state.view = state.principal ? "principal" : state.resource ? "resource" : filtered ? "grid" : "findings";
    return state;
  }
  function writeState(changes) {
    const state = Object.assign(readState(), changes);
    const params = new URLSearchParams();
    for (const key of KEYS) {
      const value = state[key];
      if (value === "" || value === null || value === undefined) continue;
      if ((key === "page" && value === 0) || (key === "size" && value === PAGE_ROWS)) continue;
      params.set(key, value);
    }
    history.replaceState(null, "", "#" + params.toString());
    render();
  }
  function query(state) {
    return { mask: state.op === "" ? ALL_OPS : 1 << Number(state.op), own: state.own === "1", change: state.change };
  }
  // With acl=k: only the principals ACL k applies to (its own, through a group, or all for
  // User:*; from its host) and the resources its pattern matches.
  const aclOf = (state) => state.acl === "" ? -1 : Number(state.acl);
  function chosenPrincipals(state) {
    const needle = state.p.toLowerCase(), a = aclOf(state);
    if (!needle && !state.kind && a < 0) return allPrincipals;
    const wantSuper = state.kind === "super";
    const chosen = [];
    for (let i = 0; i < P; i++) {
      if (state.kind && Boolean(classSuper[pc[i]]) !== wantSuper) continue;
      if (needle && !lowerPrincipals[i].includes(needle)) continue;
      if (a >= 0 && !(appliesTo(i, acl.principal[a]) && (acl.host[a] === 0 || acl.host[a] === hid[i]))) continue;
      chosen.push(i);
    }
    return Int32Array.from(chosen);
  }
  function matchesPattern(j, pattern) {
    for (let t = patPtr[rc[j]]; t < patPtr[rc[j] + 1]; t++) if (patterns[t] === pattern) return true;
    return false;
  }
  function chosenResources(state, among) {
    const needle = state.r.toLowerCase(), a = aclOf(state);
    const type = state.type === "" ? -1 : data.types.indexOf(state.type);
    if (!needle && type < 0 && !among && a < 0) return allResources;
    const chosen = [];
    for (const j of among || allResources) {
      if (type >= 0 && rtype[j] !== type) continue;
      if (needle && !lowerResources[j].includes(needle)) continue;
      if (a >= 0 && !matchesPattern(j, acl.pattern[a])) continue;
      chosen.push(j);
    }
    return Int32Array.from(chosen);
  }

  // ---------------------------------------------------------------- rendering
  function link(text, changes) {
    const anchor = element("a", text, { href: "#" });
    anchor.addEventListener("click", (event) => { event.preventDefault(); writeState(Object.assign({ page: 0 }, changes)); });
    return anchor;
  }
  // A link to a view as a finding names it: every other filter cleared.
  function rowsLink(text, rows) {
    return link(text, Object.assign(Object.fromEntries(KEYS.map((key) => [key, ""])), rows));
  }
  function badges(bits, everyoneBits, className) {
    const cell = element("td");
    for (const code of opsOf(bits)) {
      const inBase = everyoneBits & (1 << code);
      cell.appendChild(element("span", opNames[code], inBase
        ? { class: "op everyone", title: "anyone from this host may (User:* ACLs or allow.everyone.if.no.acl.found)" }
        : { class: "op" + (className ? " " + className : "") }));
    }
    return cell;
  }
  function principalCell(i) {
    const cell = element("td");
    cell.appendChild(link(data.principals[i], { view: "principal", principal: String(i), resource: "" }));
    if (classSuper[pc[i]]) cell.append(" "), cell.appendChild(element("span", "super user", { class: "label", title: "in super.users: allowed everything" }));
    return cell;
  }
  function resourceCell(j) {
    const cell = element("td");
    cell.appendChild(link(data.resources[j], { view: "resource", resource: String(j), principal: "" }));
    return cell;
  }
  function note(text) { $("notes").appendChild(element("p", text)); }
  function table(headers, rows) {
    const head = $("rows").querySelector("thead"), body = $("rows").querySelector("tbody");
    head.replaceChildren();
    body.replaceChildren();
    const line = element("tr");
    for (const title of headers) line.appendChild(element("th", title));
    head.appendChild(line);
    for (const cells of rows) {
      const row = element("tr");
      for (const cell of cells) row.appendChild(cell instanceof Node ? cell : element("td", cell === undefined ? "" : String(cell)));
      body.appendChild(row);
    }
  }
  function pager(state, total) {
    const pages = Math.max(1, Math.ceil(total / state.size));
    const page = Math.min(state.page, pages - 1);
    $("page").textContent = `page ${fmt(page + 1)} of ${fmt(pages)}`;
    $("previous").disabled = page === 0;
    $("next").disabled = page >= pages - 1;
    return page * state.size;
  }
  // Which controls each view reads.
  const CONTROLS = {
    grid: ["p", "r", "type", "op", "kind", "own", "by", "export"], principal: ["r", "type", "op", "own", "export"],
    resource: ["p", "op", "kind", "own", "export"], privilege: ["p", "kind", "sort"], everyone: ["r", "type", "op"],
    shadowed: ["q"], whatif: ["p", "r", "type", "op", "kind", "change", "export"], findings: [], finding: [],
  };

  let current = null; // the view's rows producer, for the export
  // What Export CSV writes of grid cells: each row's shown operations by name and as a bitfield.
  function cellExport(total, produce, q) {
    return { total, produce, header: ["principal", "host", "resource_type", "resource_name", "operations", "bitfield"],
      line: ([i, j, bits, b]) => {
        const ops = shown(bits, b, q);
        return [data.principals[i], data.hosts[i], data.types[rtype[j]], data.resources[j], opsOf(ops).map((c) => opNames[c]).join(" "), ops];
      } };
  }
  const views = {
    grid(state) {
      const q = query(state), byResource = state.by === "resource";
      const principals = chosenPrincipals(state), resources = chosenResources(state);
      $("title").textContent = "Who can do what" + (aclOf(state) >= 0 ? `, where ${aclText(aclOf(state))} applies` : "");
      const produce = (offset, limit) => gridRows(principals, resources, q, offset, limit, byResource);
      const { total } = produce(0, 0);
      const { rows } = produce(pager(state, total), state.size);
      $("count").textContent = `${fmt(total)} of ${plural(gridTotal, "allowed pair")}` + (q.own ? " with operations beyond anyone's" : "");
      table(["principal", "host", "resource type", "resource", "operations"], rows.map(([i, j, bits, b]) =>
        [principalCell(i), data.hosts[i], data.types[rtype[j]], resourceCell(j), badges(shown(bits, b, q), b)]));
      current = cellExport(total, produce, q);
    },
    principal(state) { drill(state, true); },
    resource(state) { drill(state, false); },
    privilege(state) {
      $("title").textContent = "Principals by privilege";
      const chosen = Array.from(chosenPrincipals(state));
      const key = state.sort === "grants" ? (i) => -grants[i] : state.sort === "name" ? null : (i) => -beyond[i];
      if (key) chosen.sort((a, b) => key(a) - key(b) || a - b);
      const offset = pager(state, chosen.length);
      const inGrid = summary.super_users.length, configured = data.provenance.super_users.length;
      $("count").textContent = `${plural(chosen.length, "principal")}; ${plural(configured, "super user")} in super.users` +
        (inGrid === configured ? "" : `, ${fmt(inGrid)} of them among these principals`);
      note("Grants: resource x operation pairs allowed. \"Anyone's\": what any principal from the same host may do (User:* ACLs, allow.everyone.if.no.acl.found). \"Beyond anyone's\": the rest, the principal's own privilege. Super users are labelled: they may do everything, whatever the ACLs say.");
      table(["principal", "host", "grants", "anyone's", "beyond anyone's"], chosen.slice(offset, offset + state.size).map((i) =>
        [principalCell(i), data.hosts[i], fmt(grants[i]), fmt(everyone[i]), fmt(beyond[i])]));
      current = null;
    },
    everyone(state) {
      $("title").textContent = "What every principal of the grid may do";
      const mask = query(state).mask;
      const chosen = chosenResources(state, allResources.filter((j) => everyoneMay[j] & mask));
      const offset = pager(state, chosen.length);
      $("count").textContent = plural(chosen.length, "resource");
      note("Every principal of this grid may do these operations on these resources: User:* ACLs, or no ACL at all with allow.everyone.if.no.acl.found=true (or ACLs of every principal, rarely).");
      table(["resource type", "resource", "operations", "why"], Array.from(chosen.slice(offset, offset + state.size)).map((j) => [
        data.types[rtype[j]], resourceCell(j), badges(everyoneMay[j] & mask, 0),
        patPtr[rc[j]] === patPtr[rc[j] + 1] ? "no ACL matches it: allow.everyone.if.no.acl.found=true" : "ACLs for User:* (open it to see which)"]));
      current = null;
    },
    findings() {
      $("title").textContent = "Findings: what an auditor checks first";
      $("count").textContent = plural(data.findings.filter((finding) => finding.count).length, "finding") + " with something to look at";
      table(["finding", "count", "Kafka's rule, and why it matters"], data.findings.map((finding) => {
        const cell = element("td");
        cell.appendChild(rowsLink(finding.title, finding.rows));
        cell.dataset.finding = finding.key;
        const count = element("td", plural(finding.count, finding.noun), { class: "finding-count" + (finding.count ? "" : " zero") });
        return [cell, count, finding.rule + (finding.note ? " " + finding.note : "")];
      }));
      current = null;
    },
    finding(state) {
      const finding = data.findings.find((candidate) => candidate.key === state.finding);
      if (!finding) { $("title").textContent = "No such finding"; table([], []); current = null; return; }
      $("title").textContent = finding.title;
      $("count").textContent = plural(finding.count, finding.noun);
      note(finding.rule);
      if (finding.note) note(finding.note);
      if (finding.count > finding.items.length && finding.items.length) note(`The first ${fmt(finding.items.length)} are listed.`);
      const acls = unpack(finding.acls, Int32Array), resources = unpack(finding.resources, Int32Array);
      if (acls.length) {
        const offset = pager(state, acls.length);
        table(["ACL", "ACL id", "source", "rows"], Array.from(acls.slice(offset, offset + state.size)).map((a) =>
          [aclText(a), data.acls.id[a], data.acls.source[a], rowsLink("show", { view: "grid", acl: String(a) })]));
      } else if (resources.length) {
        const offset = pager(state, resources.length);
        table(["resource type", "resource"], Array.from(resources.slice(offset, offset + state.size)).map((j) =>
          [data.types[rtype[j]], resourceCell(j)]));
      } else {
        const offset = pager(state, finding.items.length);
        table([...finding.columns, "rows"], finding.items.slice(offset, offset + state.size).map(([cells, rows]) =>
          [...cells, rowsLink("show", rows)]));
      }
      current = null;
    },
    shadowed(state) {
      $("title").textContent = "ALLOW grants shadowed by DENY";
      const needle = state.q.toLowerCase();
      const chosen = summary.shadowed.filter(([allow, , denies]) => !needle || [allow, ...denies].some((text) => text.toLowerCase().includes(needle)));
      const offset = pager(state, chosen.length);
      $("count").textContent = `${plural(summary.shadowed_count, "ALLOW ACL")} ${summary.shadowed_count === 1 ? "allows its" : "allow their"} operation on none of the grid's resources ${summary.shadowed_count === 1 ? "it matches" : "they match"}`;
      if (summary.shadowed_count > summary.shadowed.length) {
        note(`This page lists the first ${fmt(summary.shadowed.length)} (by principal, resource and operation); spark_udfs.report.audit_summaries() returns all ${fmt(summary.shadowed_count)}.`);
      }
      table(["ALLOW ACL", "ACL id", "shadowed by DENY"], chosen.slice(offset, offset + state.size).map(([allow, id, denies, more]) =>
        [allow, id, denies.join("\n") + (more ? `\n(and ${fmt(more)} more)` : "")]));
      current = null;
    },
    whatif(state) {
      $("title").textContent = "What the change would alter";
      if (!change) { $("count").textContent = "This report has no what-if."; table([], []); current = null; return; }
      const added = data.whatif.added, removed = data.whatif.removed;
      note(`ACLs added (${fmt(added.length)}): ` + (added.join("; ") || "none"));
      note(`ACLs removed (${fmt(removed.length)}): ` + (removed.join("; ") || "none"));
      // Each added or removed ACL, marked with what it changes or why it changes nothing.
      for (const mark of data.whatif.marks) {
        const what = mark.pairs ? `changes ${plural(mark.pairs, "pair")}` : `changes nothing: ${mark.reason}`;
        const line = element("p", `${mark.change} ${mark.acl}: ${what}`, { class: "mark" + (mark.pairs ? "" : " nothing") });
        line.dataset.change = mark.change;
        line.dataset.pairs = String(mark.pairs);
        $("notes").appendChild(line);
      }
      const unmarked = added.length + removed.length - data.whatif.marks.length;
      if (unmarked > 0) note(`${plural(unmarked, "more ACL")} not marked one by one (the first ${fmt(data.whatif.marks.length)} are: each costs two grids of its pairs).`);
      const q = query(state), principals = chosenPrincipals(state), resources = chosenResources(state);
      const produce = (offset, limit) => changeRows(principals, resources, q, offset, limit);
      const { total } = produce(0, 0);
      const { rows } = produce(pager(state, total), state.size);
      $("count").textContent = `${fmt(total)} of ${plural(data.whatif.pairs, "changed pair")}`;
      table(["principal", "host", "resource", "before", "after", "gained", "lost"], rows.map(([i, j, before, after]) =>
        [principalCell(i), data.hosts[i], `${data.types[rtype[j]]} ${data.resources[j]}`, badges(before, 0), badges(after, 0),
          badges(after & ~before, 0, "gained"), badges(before & ~after, 0, "lost")]));
      current = { total, produce, header: ["principal", "host", "resource_type", "resource_name", "before", "after"],
        line: ([i, j, before, after]) => [data.principals[i], data.hosts[i], data.types[rtype[j]], data.resources[j], before, after] };
    },
  };

  function drill(state, byPrincipal) {
    const index = Number(byPrincipal ? state.principal : state.resource);
    const valid = Number.isInteger(index) && index >= 0 && index < (byPrincipal ? P : R);
    if (!valid) { $("title").textContent = "No such " + (byPrincipal ? "principal" : "resource"); table([], []); current = null; return; }
    const q = query(state);
    const principals = byPrincipal ? Int32Array.of(index) : chosenPrincipals(state);
    const resources = byPrincipal ? chosenResources(state) : Int32Array.of(index);
    const groups = byPrincipal ? groupsOf(index) : [];
    $("title").textContent = byPrincipal
      ? `What ${data.principals[index]} from ${data.hosts[index]} may do, and which ACL grants it`
      : `Who may do what on ${data.types[rtype[index]]} ${data.resources[index]}, and which ACL grants it`;
    const expanders = data.provenance.principal_expansion.join(", ");
    if (groups.length) note(`${data.principals[index]} is a member of ${groups.join(", ")} (principal expansion${expanders ? " by " + expanders : ""}): their ACLs apply to it.`);
    const produce = (offset, limit) => gridRows(principals, resources, q, offset, limit, !byPrincipal);
    const { total } = produce(0, 0);
    const { rows } = produce(pager(state, total), state.size);
    $("count").textContent = `${plural(total, byPrincipal ? "resource" : "principal")} with grants` +
      (byPrincipal && classSuper[pc[index]] ? ": a super user, allowed everything by super.users" : "");
    const lines = [];
    for (const [i, j, bits, b] of rows) {
      for (const op of opsOf(shown(bits, b, q))) {
        const why = explain(i, j, op);
        const found = why.acls;
        const texts = found.map(aclText).join("\n") || (why.rule === "super_user" ? "super.users"
          : why.rule === "no_acl_found" ? "allow.everyone.if.no.acl.found=true" : "not found here: " + checkCommand(i, j, op));
        const via = [...new Set(found.map((a) => through(i, acl.principal[a])).filter(Boolean))];
        lines.push([byPrincipal ? resourceCell(j) : principalCell(i), byPrincipal ? data.types[rtype[j]] : data.hosts[i],
          opNames[op] + (b & (1 << op) ? " (anyone's)" : ""), why.rule, found.map((a) => data.acls.id[a]).join("\n"),
          found.map((a) => data.acls.source[a]).join("\n"), texts, via.join("\n")]);
      }
    }
    table([byPrincipal ? "resource" : "principal", byPrincipal ? "resource type" : "host", "operation", "rule", "ACL id", "source", "ACL",
      "through"], lines);
    current = cellExport(total, produce, q);
  }

  // ---------------------------------------------------------------- export
  function exportCsv() {
    if (!current) return;
    const quote = (value) => /[",\n]/.test(String(value)) ? `"${String(value).replace(/"/g, '""')}"` : String(value);
    const limit = Math.min(current.total, EXPORT_LIMIT);
    const chunks = [current.header.join(",") + "\n"];
    for (let offset = 0; offset < limit; offset += 100000) {
      const { rows } = current.produce(offset, Math.min(100000, limit - offset));
      chunks.push(rows.map((row) => current.line(row).map(quote).join(",")).join("\n") + "\n");
    }
    const url = URL.createObjectURL(new Blob(chunks, { type: "text/csv" }));
    const anchor = element("a", "", { href: url, download: "acl-grid.csv" });
    document.body.appendChild(anchor);
    anchor.click();
    anchor.remove();
    URL.revokeObjectURL(url);
  }

  // ---------------------------------------------------------------- wiring
  const gridTotal = gridRows(allPrincipals, allResources, { mask: ALL_OPS, own: false }, 0, 0, false).total;
  function render() {
    const state = readState();
    const view = views[state.view] ? state.view : "findings";
    for (const key of ["p", "r", "q", "type", "op", "kind", "change", "by", "sort"]) $(key).value = state[key];
    $("own").checked = state.own === "1";
    const wanted = new Set(CONTROLS[view]);
    for (const key of ["p", "r", "q", "type", "op", "kind", "change", "by", "sort", "export"]) $(key).hidden = !wanted.has(key);
    $("own-label").hidden = !wanted.has("own");
    for (const tab of document.querySelectorAll("#views a")) tab.classList.toggle("current", tab.dataset.view === view);
    $("notes").replaceChildren();
    views[view](state);
    if (current && current.total > EXPORT_LIMIT) {
      note(`Export CSV writes the first ${fmt(EXPORT_LIMIT)} of these ${fmt(current.total)} rows; for all of them: kafkasec grid --output DIR (or --output-type allowed --operation OP).`);
    }
  }

  for (const code of opCodes) $("op").appendChild(element("option", opNames[code], { value: code }));
  for (const type of data.types) $("type").appendChild(element("option", type, { value: type }));
  for (const key of ["p", "r", "q"]) $(key).addEventListener("input", () => writeState({ [key]: $(key).value, page: 0 }));
  for (const key of ["type", "op", "kind", "change", "by", "sort"]) $(key).addEventListener("change", () => writeState({ [key]: $(key).value, page: 0 }));
  $("own").addEventListener("change", () => writeState({ own: $("own").checked ? "1" : "", page: 0 }));
  $("previous").addEventListener("click", () => writeState({ page: Math.max(0, readState().page - 1) }));
  $("next").addEventListener("click", () => writeState({ page: readState().page + 1 }));
  $("export").addEventListener("click", exportCsv);
  for (const tab of document.querySelectorAll("#views a")) {
    tab.addEventListener("click", (event) => { event.preventDefault(); writeState({ view: tab.dataset.view, page: 0 }); });
  }
  window.addEventListener("hashchange", render);
  window.auditReport = { state: readState, set: writeState }; // for scripts driving the page
  render();
  document.body.dataset.ready = "true";
})();
