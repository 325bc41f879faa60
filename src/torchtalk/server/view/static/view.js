// TorchTalk's web view: one answer drawn as a graph (cytoscape + dagre, left to right), nodes that expand
// with the same tools, the source around a node's path:line, and the answer's Markdown below.
// Everything is served by TorchTalk itself (see routes.py); nothing here reaches the network.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  const READABLE_ZOOM = 0.7;
  const api = (path, params) => "api/" + path + "?" + new URLSearchParams(params).toString();

  const state = {
    tools: [], layers: [], nodes: new Map(), edges: new Map(), groups: new Map(),
    revealed: new Set(), expanded: new Set(), answers: 0, current: null, selected: null,
  };
  const view = { state, cy: null, busy: 0, errors: [], taps: 0, marks: {} };
  const mark = (name) => { view.marks[name] = Math.round(performance.now()); };
  window.torchtalkView = view;  // for the browser tests and for curious users

  function setStatus(text, kind) {
    $("status").textContent = text;
    document.body.dataset.state = kind || (view.busy ? "loading" : "idle");
  }

  async function getJSON(url) {
    const r = await fetch(url, { headers: { Accept: "application/json" } });
    let body;
    try { body = await r.json(); } catch (e) { body = { ok: false, error: "the server sent no JSON (" + r.status + ")" }; }
    if (!r.ok || body.ok === false) {
      const err = new Error(body.error || ("HTTP " + r.status));
      err.retry = !!body.retry;
      throw err;
    }
    return body;
  }

  // ------------------------------------------------------------------ the graph's contents

  function reset() {
    state.nodes.clear(); state.edges.clear(); state.groups.clear();
    state.revealed.clear(); state.expanded.clear(); state.selected = null;
  }

  // Merge one answer's picture: nodes already there keep being shown; groups are per answer.
  function merge(pic, seq) {
    for (const g of pic.groups) state.groups.set(seq + "/" + g.id, { ...g, id: seq + "/" + g.id });
    for (const n of pic.nodes) {
      const group = n.group ? seq + "/" + n.group : "";
      const have = state.nodes.get(n.id);
      if (!have) state.nodes.set(n.id, { ...n, group });
      else {
        if (!group) have.group = "";
        have.root = have.root || (seq === 1 && n.root);
        have.loc = have.loc || n.loc;
        have.expand = have.expand || n.expand;
      }
    }
    for (const e of pic.edges) if (!state.edges.has(e.id)) state.edges.set(e.id, e);
  }

  const shown = (n) => !n.group || state.revealed.has(n.group);
  const rep = (id) => { const n = state.nodes.get(id); return shown(n) ? id : n.group; };

  function short(text, limit) {
    return text.length <= limit ? text : text.slice(0, limit / 2 - 1) + "…" + text.slice(-(limit / 2) + 1);
  }

  function where(loc) {
    if (!loc) return "";
    const i = loc.lastIndexOf("/");
    return i < 0 ? loc : loc.slice(i + 1);
  }

  // Node sizes from the label (monospace, 11px): the layout needs them before anything is drawn.
  function box(id, label, layer) {
    const lines = label.split("\n");
    const w = Math.max(...lines.map((l) => l.length)) * 6.7 + 18;
    return { id, label, layer, w, h: lines.length * 14 + 12 };
  }

  function elements() {
    const els = [];
    const hidden = new Map();
    for (const n of state.nodes.values()) {
      if (shown(n)) {
        const classes = [n.layer, n.root ? "root" : "", state.expanded.has(n.id) ? "expanded" : "",
                         n.expand ? "" : "leaf"].filter(Boolean).join(" ");
        els.push({ group: "nodes", classes, data: box(n.id, short(n.label, 46) + (n.loc ? "\n" + where(n.loc) : ""), n.layer) });
      } else hidden.set(n.group, (hidden.get(n.group) || 0) + 1);
    }
    for (const [gid, count] of hidden) {
      const g = state.groups.get(gid);
      const label = count === g.count ? g.label : "+" + count + " more";
      els.push({ group: "nodes", classes: "collapsed", data: box(gid, label, "collapsed") });
    }
    const merged = new Map();
    for (const e of state.edges.values()) {
      const s = rep(e.source), t = rep(e.target);
      if (s === t) continue;
      const key = s === e.source && t === e.target ? e.key : "";  // into a group: one edge per kind
      const k = s + "\u0000" + t + "\u0000" + e.kind + "\u0000" + key;
      const m = merged.get(k);
      if (m) m.n += 1; else merged.set(k, { s, t, kind: e.kind, key, n: 1 });
    }
    let i = 0;
    for (const m of merged.values()) {
      const label = (m.key ? m.kind + " " + m.key : m.kind) + (m.n > 1 ? " ×" + m.n : "");
      els.push({ group: "edges", classes: m.kind, data: { id: "e" + (i++), source: m.s, target: m.t, label } });
    }
    // A group none of whose members has an edge to a shown node still hangs from its anchor.
    const linked = new Set();
    for (const m of merged.values()) { linked.add(m.s); linked.add(m.t); }
    for (const gid of hidden.keys()) {
      const g = state.groups.get(gid);
      if (!linked.has(gid) && g.anchor && state.nodes.has(g.anchor) && shown(state.nodes.get(g.anchor))) {
        const [s, t] = g.direction === "in" ? [gid, g.anchor] : [g.anchor, gid];
        els.push({ group: "edges", classes: "reaches", data: { id: "e" + (i++), source: s, target: t, label: "" } });
      }
    }
    return els;
  }

  function style() {
    const s = [
      { selector: "node", style: { shape: "round-rectangle", label: "data(label)", "text-wrap": "wrap", "text-valign": "center",
        "font-size": 11, "font-family": "ui-monospace, Menlo, monospace", width: "data(w)", height: "data(h)",
        "border-width": 1.5, "background-color": "#fff", "border-color": "#999" } },
      { selector: "node.root", style: { "border-width": 3.5, "font-weight": "bold" } },
      { selector: "node.expanded", style: { "border-style": "double", "border-width": 4 } },
      { selector: "node.collapsed", style: { shape: "round-hexagon", "border-style": "dashed", "border-width": 2,
        "background-color": "#fff", "border-color": "#555", color: "#222", "font-size": 13, "font-weight": "bold",
        width: (el) => el.data("w") * 1.25 + 24, height: (el) => el.data("h") + 8 } },
      { selector: "node:selected", style: { "overlay-color": "#1f6feb", "overlay-opacity": 0.18, "overlay-padding": 4 } },
      { selector: "edge", style: { width: 1.3, "curve-style": "bezier", "target-arrow-shape": "triangle", "arrow-scale": 0.9,
        "line-color": "#9aa0a6", "target-arrow-color": "#9aa0a6", label: "data(label)", "font-size": 8, color: "#555",
        "text-rotation": "autorotate", "min-zoomed-font-size": 7,
        "text-background-color": "#fff", "text-background-opacity": 0.85, "text-background-padding": 1 } },
      { selector: "edge.reaches", style: { "line-style": "dashed" } },
      { selector: "edge.launch", style: { "line-color": "#b83227", "target-arrow-color": "#b83227" } },
      { selector: "edge.kernel", style: { "line-color": "#b7791f", "target-arrow-color": "#b7791f" } },
    ];
    for (const l of state.layers) {
      s.push({ selector: "node." + l.id, style: { "background-color": l.fill, "border-color": l.stroke } });
    }
    s.push({ selector: "node.stub", style: { shape: "cut-rectangle" } });
    s.push({ selector: "node.gpu", style: { shape: "barrel" } });
    return s;
  }

  function draw(fit) {
    const cy = view.cy;
    cy.startBatch();
    cy.elements().remove();
    cy.add(elements());
    cy.endBatch();
    cy.style(style());
    cy.layout({ name: "dagre", rankDir: "LR", nodeSep: 14, rankSep: 70, edgeSep: 8, animate: false, fit, padding: 20 }).run();
    const focus = state.selected ? cy.getElementById(state.selected) : cy.nodes(".root").first();
    if (state.selected && focus.nonempty()) focus.select();
    if (fit && cy.zoom() < READABLE_ZOOM && focus.nonempty()) {
      // Too big to read whole: readable around the node in question (pan, or Fit, for the rest).
      cy.zoom(READABLE_ZOOM);
      cy.center(focus);
      // What the answer is about is often an end of the graph (impact: the callee, on the right): keep it
      // at its side, so the screen shows what hangs from it.
      const room = cy.width() / 2 - focus.renderedOuterWidth() / 2 - 30;
      if (focus.outgoers("node").empty() && focus.incomers("node").nonempty()) cy.panBy({ x: room, y: 0 });
      else if (focus.incomers("node").empty() && focus.outgoers("node").nonempty()) cy.panBy({ x: -room, y: 0 });
    }
    document.body.dataset.nodes = String(cy.nodes().length);
  }

  // ------------------------------------------------------------------ answers

  function legend() {
    const box = $("legend");
    box.textContent = "";
    for (const l of state.layers) {
      const span = document.createElement("span");
      const i = document.createElement("i");
      i.style.background = l.fill; i.style.borderColor = l.stroke;
      span.append(i, l.name);
      box.append(span);
    }
  }

  function showAnswer(a) {
    $("answer-title").textContent = a.call;
    $("answer").textContent = a.text;
    $("mermaid-text").textContent = a.mermaid || "(this answer has nothing to draw)";
    $("mermaid-svg").textContent = "";
    const next = $("next");
    next.textContent = "";
    for (const c of a.next) {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = a.next_text[a.next.indexOf(c)];
      b.addEventListener("click", () => ask(c.tool, c.args, true));
      next.append(b);
    }
  }

  async function ask(tool, args, pushState) {
    view.busy++;
    setStatus("answering " + tool + " …", "loading");
    try {
      const a = await getJSON(api("answer", { tool, args: JSON.stringify(args) }));
      mark("answered");
      reset();
      state.answers = 1;
      state.current = a;
      if (!state.layers.length) { state.layers = a.picture.layers; legend(); }
      merge(a.picture, 1);
      showAnswer(a);
      syncForm(tool, args);
      if (pushState) history.pushState({ tool, args }, "", "?" + new URLSearchParams({ tool, args: JSON.stringify(args) }));
      view.busy--;
      draw(true);
      mark("drawn");
      panelHint(a);
      setStatus(a.kind === "not_found" ? "not found: see the answer below" : a.picture.nodes.length + " nodes");
    } catch (err) {
      view.busy--;
      fail(err);
      if (err.retry) setTimeout(() => ask(tool, args, false), 5000);  // the index is being built
    }
  }

  async function expand(node) {
    if (!node.expand || state.expanded.has(node.id)) return;
    state.expanded.add(node.id);
    view.busy++;
    setStatus("expanding " + node.label + " …", "loading");
    try {
      const a = await getJSON(api("answer", { tool: node.expand.tool, args: JSON.stringify(node.expand.args) }));
      const seq = ++state.answers;
      const before = state.nodes.size;
      merge(a.picture, seq);
      view.busy--;
      draw(true);
      mark("expanded");
      view.cy.getElementById(node.id).select();
      expansionNote(node, a, state.nodes.size - before);
      setStatus("expanded with " + a.call + ": " + (state.nodes.size - before) + " new nodes");
    } catch (err) {
      view.busy--;
      state.expanded.delete(node.id);
      fail(err);
    }
  }

  function fail(err) {
    view.errors.push(String(err.message || err));
    setStatus(String(err.message || err), "error");
  }

  // ------------------------------------------------------------------ the side panel

  function panelHint(a) {
    const p = $("panel");
    p.textContent = "";
    const hint = document.createElement("p");
    hint.className = "hint";
    hint.textContent = a.picture.nodes.length
      ? "Select a node to read the source around its path:line; selecting it also expands it."
      : "This answer has no graph; the answer is below.";
    p.append(hint);
  }

  function nodeHeader(node) {
    const p = $("panel");
    p.textContent = "";
    const h = document.createElement("h3");
    h.textContent = node.label;
    const kind = document.createElement("div");
    kind.className = "kind";
    const layer = state.layers.find((l) => l.id === node.layer);
    kind.textContent = (layer ? layer.name : node.layer) + " · " + node.kind;
    const loc = document.createElement("div");
    loc.className = "loc";
    loc.textContent = node.loc || "(no location: not found in the index)";
    p.append(h, kind, loc);
    return p;
  }

  async function showSource(node) {
    const p = nodeHeader(node);
    if (!node.loc) return;
    const box = document.createElement("div");
    box.id = "source";
    box.textContent = "reading " + node.loc + " …";
    p.append(box);
    try {
      const s = await getJSON(api("source", { where: node.loc }));
      if (state.selected !== node.id) return;
      const pre = document.createElement("pre");
      pre.className = "source";
      s.lines.forEach((text, i) => {
        const n = s.first + i;
        const line = document.createElement("span");
        if (n === s.line) line.className = "here";
        const num = document.createElement("b");
        num.textContent = String(n);
        line.append(num, text);
        pre.append(line);
      });
      box.textContent = "";
      box.append(pre);
      const here = pre.querySelector(".here");
      if (here) pre.scrollTop = Math.max(0, here.offsetTop - pre.clientHeight / 2);
    } catch (err) {
      box.textContent = String(err.message || err);
      box.className = "error";
    }
  }

  function expansionNote(node, a, added) {
    if (state.selected !== node.id) return;
    const d = document.createElement("details");
    const s = document.createElement("summary");
    s.textContent = "Expanded with " + a.call + " (" + added + " new nodes): its answer";
    const pre = document.createElement("pre");
    pre.textContent = a.text;
    d.append(s, pre);
    $("panel").append(d);
  }

  function select(id) {
    view.taps++;
    mark("tap");
    const g = state.groups.get(id);
    if (g) {  // a collapsed group: show what it holds
      state.revealed.add(id);
      draw(false);
      setStatus("showing " + g.label.replace(/^\+/, ""));
      return;
    }
    const node = state.nodes.get(id);
    if (!node) return;
    state.selected = id;
    showSource(node);
    expand(node);
  }

  // ------------------------------------------------------------------ the form and start-up

  function syncForm(tool, args) {
    $("tool").value = tool;
    renderExtra();
    const t = state.tools.find((x) => x.name === tool);
    if (!t) return;
    $("name").value = args[t.params[0].name] || "";
    for (const p of t.params.slice(1)) {
      const el = document.getElementById("p-" + p.name);
      if (el && args[p.name] !== undefined) el.value = args[p.name];
    }
  }

  function renderExtra() {
    const t = state.tools.find((x) => x.name === $("tool").value);
    const box = $("extra");
    box.textContent = "";
    if (!t) return;
    $("name").required = t.params[0].required;
    for (const p of t.params.slice(1)) {
      const label = document.createElement("label");
      label.title = p.help;
      let el;
      if (p.choices.length) {
        el = document.createElement("select");
        for (const c of p.choices) { const o = document.createElement("option"); o.value = c; o.textContent = c; el.append(o); }
      } else {
        el = document.createElement("input");
        el.type = p.type === "int" ? "number" : "text";
      }
      el.id = "p-" + p.name;
      el.value = p.default === null ? "" : String(p.default);
      label.append(p.name, el);
      box.append(label);
    }
  }

  function formArgs() {
    const t = state.tools.find((x) => x.name === $("tool").value);
    const args = {};
    const name = $("name").value.trim();
    if (name) args[t.params[0].name] = name;
    for (const p of t.params.slice(1)) {
      const v = document.getElementById("p-" + p.name).value;
      if (v !== "") args[p.name] = p.type === "int" ? Number(v) : v;
    }
    return args;
  }

  function fromUrl() {
    const q = new URLSearchParams(location.search);
    const tool = q.get("tool") || "trace";
    if (q.get("args")) {
      try { return { tool, args: JSON.parse(q.get("args")) }; } catch (e) { return null; }
    }
    const t = state.tools.find((x) => x.name === tool);
    if (q.get("q") && t) return { tool, args: { [t.params[0].name]: q.get("q") } };
    return null;
  }

  let mermaidLoading = null;
  function loadMermaid() {
    if (!mermaidLoading) {
      mermaidLoading = new Promise((resolve, reject) => {
        const s = document.createElement("script");
        s.src = "static/vendor/mermaid.min.js";
        s.onload = () => { window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict", maxEdges: 2000 }); resolve(window.mermaid); };
        s.onerror = () => reject(new Error("mermaid.min.js did not load"));
        document.head.append(s);
      });
    }
    return mermaidLoading;
  }
  view.loadMermaid = loadMermaid;

  async function drawMermaid() {
    const a = state.current;
    if (!a || !a.mermaid) return;
    setStatus("drawing with Mermaid …", "loading");
    try {
      const mermaid = await loadMermaid();
      const { svg } = await mermaid.render("mermaid-" + Date.now(), a.mermaid);
      $("mermaid-svg").innerHTML = svg;  // mermaid's own sanitised SVG (securityLevel strict)
      setStatus("drawn with Mermaid");
    } catch (err) {
      fail(err);
    }
  }

  async function start() {
    mark("start");
    view.cy = cytoscape({ container: $("graph"), minZoom: 0.1, maxZoom: 3,
                          boxSelectionEnabled: false, autoungrabify: false });
    view.cy.on("tap", "node", (evt) => select(evt.target.id()));
    $("fit").addEventListener("click", () => view.cy.fit(undefined, 20));
    $("copy").addEventListener("click", () => {
      const text = $("mermaid-text").textContent;
      if (navigator.clipboard) navigator.clipboard.writeText(text).then(() => setStatus("Mermaid copied"), () => setStatus("select the text to copy it"));
    });
    $("draw").addEventListener("click", drawMermaid);
    $("tool").addEventListener("change", renderExtra);
    $("ask").addEventListener("submit", (evt) => { evt.preventDefault(); ask($("tool").value, formArgs(), true); });
    window.addEventListener("popstate", (evt) => { if (evt.state) ask(evt.state.tool, evt.state.args, false); });
    try {
      const t = await getJSON("api/tools");
      mark("tools");
      state.tools = t.tools;
      for (const tool of t.tools) {
        const o = document.createElement("option");
        o.value = tool.name; o.textContent = tool.name; o.title = tool.question;
        $("tool").append(o);
      }
      $("tool").value = "trace";
      renderExtra();
      setStatus("ready");
      const first = fromUrl();
      if (first) await ask(first.tool, first.args, false);
    } catch (err) {
      fail(err);
    }
    view.ready = true;
  }

  start();
})();
