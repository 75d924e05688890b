// The sweep page: reads the JSON blob, renders header, figures, charts, the roadmap and a
// virtualised model table (only visible rows exist in the DOM). Every value from records
// goes in through textContent, never innerHTML.
"use strict";
(function () {
  const started = performance.now();
  const D = JSON.parse(document.getElementById("sweep-data").textContent);
  const S = D.strings, R = D.rows, N = R.id.length, ROW_H = 28, ID_MARK = "\u0000";
  const BLK = 5;  // a blocker is (kind, op, message, origin, stage), flattened
  const HUB_ID = /^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/;
  const MARK = { p: "✓", f: "✗", c: "↯", t: "⧖", o: "M", b: "⊘", s: "↷", "-": "—" };  // in common fonts, unlike emoji
  const MARK_WORD = { p: "pass", f: "fail", c: "crash", t: "timeout", o: "out of memory", b: "blocked", s: "skip", "-": "not recorded" };
  const $ = (id) => document.getElementById(id);
  const times = (window.__pageTimes = { started, parsed: performance.now() });

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  const num = (v) => (v === null || v === undefined ? "—" : v.toLocaleString("en-US"));
  const pct = (v) => (v === null || v === undefined ? "—" : (100 * v).toFixed(1) + "%");
  function compact(v) {
    if (v === null || v === undefined) return "—";
    for (const [size, unit] of [[1e9, "B"], [1e6, "M"], [1e3, "k"]]) if (Math.abs(v) >= size) return (v / size).toFixed(1) + unit;
    return String(v);
  }
  function hubUrl(id) {
    if (!D.hub || !HUB_ID.test(id)) return null;
    return D.hub + "/" + id.split("/").map(encodeURIComponent).join("/");
  }
  const repro = (i) => S[R.repro[i]].split(ID_MARK).join(R.id[i]);

  // Per-model ops (blockers and CPU fallbacks), lower-cased text to search in.
  const opsOf = new Array(N), haystack = new Array(N);
  for (let i = 0; i < N; i++) {
    const ops = new Set(), b = R.blockers[i], fb = R.fallbacks[i];
    for (let j = 1; j < b.length; j += BLK) if (b[j]) ops.add(S[b[j]]);
    if (fb) for (let j = 0; j < fb.length; j += 2) ops.add(S[fb[j]]);
    opsOf[i] = ops;
    haystack[i] = (R.id[i] + "\n" + S[R.model_type[i]] + "\n" + Array.from(ops).join("\n")).toLowerCase();
  }
  times.indexed = performance.now();
  const blockOps = (i) => { const b = R.blockers[i], out = []; for (let j = 1; j < b.length; j += BLK) if (b[j]) out.push(S[b[j]]); return out; };
  const fallbackText = (i) => { const fb = R.fallbacks[i]; if (!fb) return ""; const o = []; for (let j = 0; j < fb.length; j += 2) o.push(S[fb[j]]); return o.join(", "); };
  function reasonText(i) {
    if (!R.kind[i]) return "";
    let t = S[R.kind[i]];
    if (R.op[i]) t += " " + S[R.op[i]];
    if (R.message[i]) t += ": " + S[R.message[i]];
    const more = R.blockers[i].length / BLK - 1;
    return more > 0 ? t + " (+" + more + " more)" : t;
  }

  // ---- header, figures, charts ----
  $("title").textContent = D.title;
  document.title = D.title;
  for (const [k, v] of D.header) { const tr = el("tr"); tr.append(el("th", k), el("td", v)); $("header").append(tr); }
  tr(["models", num(D.headline.models)]);
  function tr(pair) { const r = el("tr"); r.append(el("th", pair[0]), el("td", pair[1])); $("header").append(r); }
  for (const n of D.notes) $("notes").append(el("li", n));
  const h = D.headline, figs = [];
  if (h.catalog_share !== null) figs.push([pct(h.catalog_share), "of the catalog's downloads run end to end", "fig wide"]);
  figs.push([pct(h.pass_rate), "device pass rate: " + num(h.passed) + " of " + num(h.tested) + " models that pass or fail for the device's sake", "fig wide"]);
  for (const [label, n] of h.outcomes) figs.push([num(n), label, "fig"]);
  for (const [big, small, cls] of figs) { const f = el("div", null, cls); f.append(el("b", big), el("span", small)); $("headline").append(f); }
  if (!D.charts.length) $("charts-box").hidden = true;
  for (const [file, caption] of D.charts) {
    const fig = el("figure"), img = el("img");
    img.src = "charts/" + encodeURIComponent(file); img.alt = caption; img.loading = "lazy";
    fig.append(img, el("figcaption", caption)); $("charts").append(fig);
  }
  if (D.compare) {
    $("compare-box").hidden = false; $("f-change-box").hidden = false;
    $("compare-name").textContent = D.compare.name;
    for (const [k, v] of Object.entries(D.compare.counts)) { const f = el("div", null, "fig"); f.append(el("b", num(v)), el("span", k)); $("compare-counts").append(f); }
  }

  // ---- columns ----
  const cols = [
    { name: "rank", w: "60px", cls: "num", text: (i) => num(R.rank[i]), key: (i) => (R.rank[i] === null ? Infinity : R.rank[i]) },
    { name: "model", w: "minmax(240px, 3.4fr)", cls: "id", text: (i) => R.id[i] + (R.key[i] && R.arch[i] ? " (" + S[R.arch[i]] + ")" : ""), key: (i) => R.id[i].toLowerCase(), str: true },
    { name: "downloads", w: "84px", cls: "num", text: (i) => compact(R.downloads[i]), key: (i) => (R.downloads[i] === null ? -1 : R.downloads[i]), desc: true },
    { name: "task", w: "minmax(70px, 0.8fr)", text: (i) => S[R.task[i]], key: (i) => S[R.task[i]], str: true },
    { name: "model_type", w: "minmax(70px, 0.6fr)", text: (i) => S[R.model_type[i]], key: (i) => S[R.model_type[i]], str: true },
  ];
  D.stages.forEach((st, k) => cols.push({ name: st, w: "minmax(62px, 0.25fr)", cls: "mark", mark: k,
    text: (i) => MARK[R.stages[i][k] || "-"], key: (i) => "pfctobs-".indexOf(R.stages[i][k] || "-"), title: st }));
  cols.push({ name: "status", w: "70px", text: (i) => S[R.status[i]], key: (i) => S[R.status[i]], str: true, st: true });
  if (R.change) cols.push({ name: "change", w: "84px", text: (i) => S[R.change[i]], key: (i) => S[R.change[i]], str: true, ch: true });
  cols.push({ name: "origin", w: "108px", text: (i) => S[R.origin[i]], key: (i) => S[R.origin[i]], str: true });
  cols.push({ name: "reason", w: "minmax(110px, 2.4fr)", text: reasonText, key: reasonText, str: true });
  cols.push({ name: "fallback ops", w: "minmax(64px, 0.8fr)", text: fallbackText, key: fallbackText, str: true });
  const template = cols.map((c) => c.w).join(" ");
  $("thead").style.gridTemplateColumns = template;
  cols.forEach((c, k) => {
    // A narrow heading wraps after an underscore ("to_ device"), not inside a word.
    const cell = el("div", c.name.replace(/_/g, "_\u200b"), c.cls); cell.setAttribute("role", "columnheader"); cell.dataset.col = k;
    cell.title = "Sort by " + c.name; $("thead").append(cell);
  });

  // ---- filters ----
  const state = { q: "", status: "", origin: "", stage: "", change: "", op: "", sort: 0, desc: false };
  function options(select, values) { for (const [v, label] of values) { const o = el("option", label); o.value = v; select.append(o); } }
  const counted = (col) => { const c = new Map(); for (let i = 0; i < N; i++) c.set(col[i], (c.get(col[i]) || 0) + 1); return c; };
  const choices = (col) => Array.from(counted(col)).filter(([v]) => v).sort((a, b) => b[1] - a[1]).map(([v, n]) => [S[v], S[v] + " (" + num(n) + ")"]);
  options($("f-status"), choices(R.status));
  options($("f-origin"), choices(R.origin));
  if (R.change) options($("f-change"), choices(R.change));
  D.stages.forEach((st, k) => { for (const c of "fctobps") options($("f-stage"), [[k + ":" + c, st + ": " + MARK_WORD[c]]]); });

  let view = [];
  function matches(i) {
    if (state.status && S[R.status[i]] !== state.status) return false;
    if (state.origin && S[R.origin[i]] !== state.origin) return false;
    if (state.change && S[R.change[i]] !== state.change) return false;
    if (state.stage) { const [k, c] = state.stage.split(":"); if ((R.stages[i][+k] || "-") !== c) return false; }
    if (state.op && !blockOps(i).includes(state.op)) return false;
    return !state.q || haystack[i].includes(state.q);
  }
  function applyFilters() {
    const t0 = performance.now();
    const out = [];
    for (let i = 0; i < N; i++) if (matches(i)) out.push(i);
    const c = cols[state.sort], dir = state.desc ? -1 : 1;
    if (state.sort !== 0 || state.desc) {
      const keys = new Map(out.map((i) => [i, c.key(i)]));
      out.sort((a, b) => { const x = keys.get(a), y = keys.get(b); return (x < y ? -1 : x > y ? 1 : a - b) * (x === y ? 1 : dir); });
    }
    view = out;
    $("count").textContent = num(view.length) + " of " + num(N) + " models";
    $("spacer").style.height = Math.max(view.length * ROW_H, 1) + "px";
    $("viewport").scrollTop = 0;
    [...$("thead").children].forEach((h, k) => { h.classList.toggle("sorted", k === state.sort); h.classList.toggle("desc", k === state.sort && state.desc); });
    render(true);
    times.lastFilterMs = performance.now() - t0;
  }

  // ---- virtualised rows: a pool of row elements, re-filled on scroll ----
  const pool = [];
  let empty = null;
  function makeRow() {
    const r = el("div", null, "row"); r.setAttribute("role", "row"); r.style.gridTemplateColumns = template;
    for (const c of cols) r.append(el("div", "", c.cls));
    r.addEventListener("click", () => showDetail(+r.dataset.i));
    $("spacer").append(r); return r;
  }
  function render(force) {
    const vp = $("viewport"), first = Math.max(0, Math.floor(vp.scrollTop / ROW_H) - 5);
    const count = Math.min(view.length - first, Math.ceil(vp.clientHeight / ROW_H) + 10);
    while (pool.length < count) pool.push(makeRow());
    for (let k = 0; k < pool.length; k++) {
      const r = pool[k];
      if (k >= count) { r.hidden = true; continue; }
      const i = view[first + k];
      r.hidden = false; r.style.top = (first + k) * ROW_H + "px";
      if (!force && r.dataset.i === String(i)) continue;
      r.dataset.i = i;
      cols.forEach((c, j) => {
        const cell = r.children[j], t = c.text(i);
        cell.textContent = t; cell.title = c.mark === undefined ? t : c.title + ": " + MARK_WORD[R.stages[i][c.mark] || "-"];
        if (c.mark !== undefined) cell.className = "mark m-" + (R.stages[i][c.mark] || "-").replace("-", "");
        else if (c.st) cell.className = "st-" + t;
        else if (c.ch) cell.className = "ch-" + t;
      });
    }
    if (!view.length && !empty) { empty = el("div", "No model matches.", "empty"); $("spacer").append(empty); }
    if (empty) empty.hidden = view.length > 0;
  }
  let pending = false;
  $("viewport").addEventListener("scroll", () => { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; render(false); }); } });

  // ---- detail panel ----
  function dl(pairs) { const d = el("dl"); for (const [k, v] of pairs) if (v !== "" && v !== null && v !== undefined) d.append(el("dt", k), el("dd", v)); return d; }
  function list(title, items) { if (!items.length) return []; const ul = el("ul"); for (const t of items) ul.append(el("li", t)); return [el("h3", title), ul]; }
  function showDetail(i) {
    $("detail-title").textContent = R.id[i];
    const url = hubUrl(R.id[i]), link = $("detail-link");
    link.hidden = !url; if (url) link.href = url;
    $("detail-repro").textContent = repro(i);
    const body = $("detail-body"); body.replaceChildren();
    body.append(el("h3", "Record"), dl([["key", R.key[i] || R.id[i]], ["rank", num(R.rank[i])], ["downloads", num(R.downloads[i])],
      ["task", S[R.task[i]]], ["model_type", S[R.model_type[i]]], ["architecture", S[R.arch[i]]], ["library", S[R.library[i]]],
      ["status", S[R.status[i]]], ["category", S[R.category[i]]], ["origin", S[R.origin[i]]],
      ["change", R.change ? S[R.change[i]] : ""], ["device", S[R.device[i]]], ["weights", S[R.weights[i]]], ["dtype", S[R.dtype[i]]],
      ["seconds", R.seconds[i]], ["max |device − cpu|", R.diff[i]], ["shapes", R.shapes ? S[R.shapes[i]] : ""],
      ["generate", R.generate ? S[R.generate[i]] : ""],
      ["quantization", R.quant && R.quant[i] !== undefined ? S[R.quant[i]] : ""]]));
    body.append(el("h3", "Stages"), dl(D.stages.map((st, k) => [st, MARK_WORD[R.stages[i][k] || "-"]])));
    const b = R.blockers[i], blockers = [];
    for (let j = 0; j < b.length; j += BLK) {
      const where = [S[b[j + 3]], S[b[j + 4]]].filter(Boolean).join(", ");
      blockers.push(S[b[j]] + (b[j + 1] ? " " + S[b[j + 1]] : "") + (where ? " [" + where + "]" : "") + (b[j + 2] ? ": " + S[b[j + 2]] : ""));
    }
    const fb = R.fallbacks[i] || [], fallbacks = [];
    for (let j = 0; j < fb.length; j += 2) fallbacks.push(S[fb[j]] + " (" + num(fb[j + 1]) + " calls)");
    body.append(...list("Blockers", blockers), ...list("CPU fallbacks", fallbacks),
      ...list("Graph breaks", (R.breaks[i] || []).map((k) => S[k])), ...list("Compile problems", (R.problems[i] || []).map((k) => S[k])));
    $("detail").hidden = false;
  }
  $("detail-close").addEventListener("click", () => { $("detail").hidden = true; });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") $("detail").hidden = true; });
  $("detail-copy").addEventListener("click", () => { if (navigator.clipboard) navigator.clipboard.writeText($("detail-repro").textContent); });

  // ---- roadmap: each op links to the models it blocks ----
  const rm = $("roadmap"), weighted = h.catalog_share !== null;
  const heads = ["#", "op", "kinds", "models blocked"].concat(weighted ? ["downloads blocked"] : [], ["only blocker of"], weighted ? ["downloads freed"] : []);
  const thr = el("tr"); heads.forEach((t, k) => thr.append(el("th", t, k === 0 || k > 2 ? "num" : ""))); rm.append(thr);
  D.roadmap.forEach(([op, kinds, models, dls, freedM, freedD], k) => {
    const r = el("tr"), a = el("a", op);
    a.href = "#op=" + encodeURIComponent(op);
    const cell = el("td"); cell.append(el("code")); cell.firstChild.append(a);
    r.append(el("td", k + 1, "num"), cell, el("td", kinds), el("td", num(models), "num"));
    if (weighted) r.append(el("td", compact(dls), "num"));
    r.append(el("td", num(freedM), "num"));
    if (weighted) r.append(el("td", compact(freedD), "num"));
    rm.append(r);
  });
  if (!D.roadmap.length) rm.append(el("tr", "No op blocks a model."));

  // ---- lowering-tool findings: an op, or a whole graph with its reproducer ----
  const REPRO = /^repros\/[\w.-]+\.py$/;  // a file in the sweep folder, nothing else becomes a link
  const lt = $("lowering-tool");
  const ltHeads = ["kind", "op", "models"].concat(weighted ? ["downloads"] : [], ["sample message", "reproducer", "examples"]);
  const lthr = el("tr"); ltHeads.forEach((t) => lthr.append(el("th", t, t === "models" || t === "downloads" ? "num" : ""))); lt.append(lthr);
  (D.lowering_tool || []).forEach(([kind, subject, whole, graph, models, dls, message, reproPath, ex]) => {
    const r = el("tr"), what = el("td");
    what.append(whole ? el("span", subject) : el("code", subject));
    if (graph) what.append(" ", el("code", graph));
    r.append(el("td", kind), what, el("td", num(models), "num"));
    if (weighted) r.append(el("td", compact(dls), "num"));
    const rp = el("td");
    if (reproPath && REPRO.test(reproPath)) { const a = el("a", reproPath.split("/").pop()); a.href = reproPath; rp.append(a); }
    r.append(el("td", message), rp, el("td", ex.join(", ")));
    lt.append(r);
  });
  if (!(D.lowering_tool || []).length) lt.append(el("tr", "No lowering tool findings."));

  // ---- wiring ----
  function setOp(op) { state.op = op; $("op-chip").hidden = !op; $("op-chip-name").textContent = op; applyFilters(); }
  function fromHash() {
    const m = /^#op=(.*)$/.exec(location.hash);
    if (m) { let op = ""; try { op = decodeURIComponent(m[1]); } catch (e) { op = ""; } setOp(op); $("models").scrollIntoView(); }
  }
  window.addEventListener("hashchange", fromHash);
  $("op-clear").addEventListener("click", () => { if (location.hash.startsWith("#op=")) history.replaceState(null, "", "#models"); setOp(""); });
  $("search").addEventListener("input", (e) => { state.q = e.target.value.trim().toLowerCase(); applyFilters(); });
  for (const [id, key] of [["f-status", "status"], ["f-origin", "origin"], ["f-stage", "stage"], ["f-change", "change"]])
    $(id).addEventListener("change", (e) => { state[key] = e.target.value; applyFilters(); });
  $("thead").addEventListener("click", (e) => {
    const k = +(e.target.dataset.col ?? -1); if (k < 0) return;
    if (state.sort === k) state.desc = !state.desc; else { state.sort = k; state.desc = !!cols[k].desc; }
    applyFilters();
  });
  window.__sweepPage = { total: N, setOp, applyFilters, showDetail, visibleIds: () => view.map((i) => R.id[i]) };
  if (location.hash.startsWith("#op=")) fromHash(); else applyFilters();
  times.firstRender = performance.now();
  performance.mark("first-render");
})();
