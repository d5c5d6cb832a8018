// cranimem inspector: the knowledge graph as SVG with a small force layout (no library).
// Loads the best-supported entities of a scope; clicking a node lists its facts with their
// source memories and adds its neighbours. Drag the background to pan, use the wheel to zoom.
// Every text from the store is set with textContent, never parsed as HTML.
"use strict";

const NS = "http://www.w3.org/2000/svg";
const root = document.getElementById("graph");
const svg = document.getElementById("graph-svg");
const panel = document.getElementById("facts");
const scope = root.dataset.scope;
const nodes = new Map(); // id -> {id, label, support, x, y, vx, vy, el}
const edges = new Map(); // "s|p|t" -> {source, target, predicate, el}
const view = { x: 0, y: 0, k: 1 };
const viewport = el("g", { class: "viewport" }, svg);
const edgeLayer = el("g", {}, viewport);
const nodeLayer = el("g", {}, viewport);
let heat = 0;
let running = false;

function el(tag, attrs, parent) {
  const node = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function api(path, params) {
  const query = new URLSearchParams({ scope, ...params });
  return fetch(`/ui/api/${path}?${query}`, { credentials: "same-origin" }).then((r) =>
    r.ok ? r.json() : r.json().then((e) => Promise.reject(new Error(e.error))));
}

function addNode(n, near) {
  if (nodes.has(n.id)) return;
  // A golden-angle spiral: deterministic, evenly spread, so the layout is repeatable.
  const angle = nodes.size * 2.39996;
  const base = near || { x: 0, y: 0 };
  const r = near ? 70 : 40 * Math.sqrt(nodes.size + 1);
  const node = { ...n, x: base.x + r * Math.cos(angle), y: base.y + r * Math.sin(angle),
                 vx: 0, vy: 0 };
  node.el = el("g", { class: "node", "data-id": n.id }, nodeLayer);
  el("circle", { r: 6 + 3 * Math.min(6, n.support || 1) }, node.el);
  const label = el("text", { x: 12, y: 4 }, node.el);
  label.textContent = n.label;
  node.el.addEventListener("click", () => select(node));
  nodes.set(n.id, node);
}

function addEdge(e) {
  const key = `${e.source}|${e.predicate}|${e.target}`;
  if (edges.has(key) || !nodes.has(e.source) || !nodes.has(e.target)) return;
  const g = el("g", { class: "edge" }, edgeLayer);
  const edge = { ...e, el: g, line: el("line", {}, g), text: el("text", {}, g) };
  edge.text.textContent = e.predicate.replace(/_/g, " ");
  edges.set(key, edge);
}

function tick() {
  const list = [...nodes.values()];
  for (let i = 0; i < list.length; i++) {          // repulsion between every pair
    for (let j = i + 1; j < list.length; j++) {
      const a = list[i], b = list[j];
      let dx = b.x - a.x, dy = b.y - a.y;
      const d2 = Math.max(dx * dx + dy * dy, 25);
      const f = 5000 / d2;
      const d = Math.sqrt(d2);
      dx /= d; dy /= d;
      a.vx -= f * dx; a.vy -= f * dy; b.vx += f * dx; b.vy += f * dy;
    }
  }
  for (const e of edges.values()) {               // springs along the edges
    const a = nodes.get(e.source), b = nodes.get(e.target);
    const dx = b.x - a.x, dy = b.y - a.y;
    const d = Math.max(Math.sqrt(dx * dx + dy * dy), 1);
    const f = (d - 140) * 0.02;
    a.vx += f * dx / d; a.vy += f * dy / d; b.vx -= f * dx / d; b.vy -= f * dy / d;
  }
  for (const n of list) {                          // gravity to the centre, damping, move
    n.vx = (n.vx - n.x * 0.003) * 0.6;
    n.vy = (n.vy - n.y * 0.003) * 0.6;
    n.x += Math.max(-20, Math.min(20, n.vx)) * heat;
    n.y += Math.max(-20, Math.min(20, n.vy)) * heat;
  }
}

function draw() {
  for (const n of nodes.values()) n.el.setAttribute("transform", `translate(${n.x},${n.y})`);
  for (const e of edges.values()) {
    const a = nodes.get(e.source), b = nodes.get(e.target);
    e.line.setAttribute("x1", a.x); e.line.setAttribute("y1", a.y);
    e.line.setAttribute("x2", b.x); e.line.setAttribute("y2", b.y);
    e.text.setAttribute("x", (a.x + b.x) / 2); e.text.setAttribute("y", (a.y + b.y) / 2);
  }
}

function heatUp() {
  heat = 1;
  root.dataset.state = "moving";
  if (running) return;
  running = true;
  requestAnimationFrame(function frame() {
    for (let i = 0; i < 3; i++) tick();
    draw();
    heat *= 0.96;
    if (heat > 0.02) return requestAnimationFrame(frame);
    running = false;
    root.dataset.state = "settled";
  });
}

function setView() {
  viewport.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
}

async function select(node) {
  for (const n of nodes.values()) n.el.classList.toggle("selected", n === node);
  panel.replaceChildren(Object.assign(document.createElement("p"), { textContent: "Loading…" }));
  try {
    const data = await api("entity", { name: node.label });
    for (const n of data.nodes) addNode(n, node);
    for (const e of data.edges) addEdge(e);
    heatUp();
    showFacts(data);
  } catch (err) {
    panel.replaceChildren(Object.assign(document.createElement("p"),
      { textContent: `Could not load: ${err.message}` }));
  }
}

function showFacts(data) {
  const title = document.createElement("h3");
  title.textContent = data.entity;
  const list = document.createElement("ul");
  for (const f of data.facts) {
    const li = document.createElement("li");
    li.className = "fact";
    const triple = li.appendChild(document.createElement("span"));
    triple.className = "triple";
    triple.textContent = `${f.subject} ${f.predicate.replace(/_/g, " ")} ${f.object}`;
    for (const s of f.sources) {
      const src = document.createElement("a");
      src.className = "source";
      src.href = `/ui/memories?${new URLSearchParams({ scope, id: s.id })}`;
      src.textContent = `${s.tier} ${s.id}: ${s.content}`;
      li.appendChild(src);
    }
    list.appendChild(li);
  }
  const none = Object.assign(document.createElement("p"), { textContent: "No facts." });
  panel.replaceChildren(title, data.facts.length ? list : none);
}

// Pan with the background drag, zoom with the wheel around the pointer.
let drag = null;
svg.addEventListener("pointerdown", (e) => {
  if (e.target.closest(".node")) return;
  drag = { x: e.clientX - view.x, y: e.clientY - view.y };
  svg.classList.add("panning");
});
window.addEventListener("pointermove", (e) => {
  if (!drag) return;
  view.x = e.clientX - drag.x; view.y = e.clientY - drag.y; setView();
});
window.addEventListener("pointerup", () => { drag = null; svg.classList.remove("panning"); });
svg.addEventListener("wheel", (e) => {
  e.preventDefault();
  const box = svg.getBoundingClientRect();
  const px = e.clientX - box.left, py = e.clientY - box.top;
  const k = Math.min(4, Math.max(0.2, view.k * Math.exp(-e.deltaY * 0.0015)));
  view.x = px - (px - view.x) * k / view.k; view.y = py - (py - view.y) * k / view.k;
  view.k = k; setView();
}, { passive: false });

api("graph", {}).then((data) => {
  const box = svg.getBoundingClientRect();
  view.x = box.width / 2; view.y = box.height / 2; setView();
  for (const n of data.nodes) addNode(n);
  for (const e of data.edges) addEdge(e);
  const note = document.createElement("p");
  note.className = "meta";
  note.textContent = data.nodes.length
    ? `${data.nodes.length} of ${data.total} entities shown. Click a node.`
    : "No entities in this scope yet (memories are linked when consolidated).";
  panel.replaceChildren(note);
  heatUp();
}).catch((err) => { panel.textContent = `Could not load the graph: ${err.message}`; });
