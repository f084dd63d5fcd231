// A hand-written SVG drawer for complete oblique trees (one tree of a model, or each of a forest).
import { esc, fmt } from "./dom.js";

/** The trees of a ``GET .../tree`` answer, each with its nodes' split terms in user units. */
export function treesOf(exported, scaling) {
  const model = exported.model || exported;
  const named = model.format === "banditree.named_tree/v1";
  const columns = model.columns || null;
  const raw = named ? [model.tree] : model.trees ? model.trees : model.nodes ? [model] : [];
  return raw.map((tree, t) => {
    const d = tree.n_features;
    const names = columns || Array.from({ length: d }, (_, j) => `x${j}`);
    const nodes = tree.nodes.map((n) => {
      let w = n.raw_weights, b = n.raw_bias;
      if (!w && scaling && scaling.mean && scaling.scale) { // fold the standardisation back
        w = n.weights.map((v, j) => v / scaling.scale[j]);
        b = n.bias - n.weights.reduce((s, v, j) => s + (v * scaling.mean[j]) / scaling.scale[j], 0);
      }
      const inUserUnits = Boolean(w);
      return { id: n.id, depth: n.depth, terms: splitTerms(w || n.weights, b ?? n.bias, names, 3), userUnits: inUserUnits, text: n.split || null };
    });
    const leaves = tree.leaves.map((l) => ({ leaf: l.leaf, value: l.value }));
    return { index: t, height: tree.height, nodes, leaves, linear: Boolean(tree.linear) };
  });
}

/** ``0.8 × age − 0.3 × price + … > 1.2``: the ``k`` largest terms of a split. */
export function splitTerms(weights, bias, names, k = 3) {
  const order = weights.map((w, j) => [Math.abs(w), j]).filter(([a]) => a > 0).sort((a, b) => b[0] - a[0]);
  if (!order.length) return `${fmt(bias)} > 0`;
  const parts = order.slice(0, k).map(([, j], i) => {
    const w = weights[j], sign = w < 0 ? "− " : i ? "+ " : "";
    return `${sign}${fmt(Math.abs(w), 2)} × ${names[j]}`;
  });
  if (order.length > k) parts.push("+ …");
  return `${parts.join(" ")} > ${fmt(-bias, 3)}`;
}

/** Per node (internal ids then leaves) traffic share and mean loss, summed up from the leaves. */
export function nodeStats(height, leafStats) {
  const nLeaves = 1 << height, nInt = nLeaves - 1;
  const decisions = new Float64Array(nInt + nLeaves), feedbacks = new Float64Array(nInt + nLeaves), loss = new Float64Array(nInt + nLeaves);
  if (leafStats) for (const l of leafStats.leaves) {
    const id = nInt + l.leaf;
    decisions[id] = l.decisions; feedbacks[id] = l.feedbacks; loss[id] = (l.mean_loss ?? 0) * l.feedbacks;
  }
  for (let id = nInt - 1; id >= 0; id--) {
    for (const c of [2 * id + 1, 2 * id + 2]) { decisions[id] += decisions[c]; feedbacks[id] += feedbacks[c]; loss[id] += loss[c]; }
  }
  const total = decisions[0] || 0;
  return (id) => ({ decisions: decisions[id], share: total ? decisions[id] / total : 0, meanLoss: feedbacks[id] ? loss[id] / feedbacks[id] : null });
}

/**
 * Draw ``tree`` into ``container`` (replacing its content): boxes with split terms for
 * small trees, compact marks for tall ones; ``path`` (node ids) highlighted; leaves
 * focusable, Enter or a click calls ``onLeaf(leaf)``.
 */
export function drawTree(container, tree, { stats = null, path = null, onLeaf = null, label = "", actionNames = null } = {}) {
  const h = tree.height, nLeaves = 1 << h, nInt = nLeaves - 1;
  const roomy = h <= 4;
  const cell = roomy ? 168 : 16, rowH = roomy ? 74 : 26, boxW = roomy ? 156 : 10, boxH = roomy ? 46 : 10;
  const width = nLeaves * cell + 8, height = (h + 1) * rowH + 8;
  const of = nodeStats(h, stats);
  const on = new Set(path || []);
  const x = new Float64Array(nInt + nLeaves);
  for (let j = 0; j < nLeaves; j++) x[nInt + j] = 4 + j * cell + cell / 2;
  for (let id = nInt - 1; id >= 0; id--) x[id] = (x[2 * id + 1] + x[2 * id + 2]) / 2;
  const depthOf = (id) => 31 - Math.clz32(id + 1);
  const y = (id) => 4 + depthOf(id) * rowH;
  const out = [];
  for (let id = 0; id < nInt; id++) { // edges, width by traffic
    for (const c of [2 * id + 1, 2 * id + 2]) {
      const share = of(c).share, cls = on.has(id) && on.has(c) ? "edge on" : "edge";
      out.push(`<path class="${cls}" data-edge="${c}" stroke-width="${(1 + share * 6).toFixed(2)}" d="M${x[id]},${y(id) + boxH} L${x[c]},${y(c)}"/>`);
    }
  }
  for (let id = 0; id < nInt; id++) {
    const node = tree.nodes[id], s = of(id);
    const title = `node ${id}: ${node.terms} (right when true); traffic ${fmt(100 * s.share, 3)}%, mean loss ${fmt(s.meanLoss)}`;
    out.push(`<g class="node${on.has(id) ? " on" : ""}" data-node="${id}"><title>${esc(title)}</title>` +
      `<rect x="${x[id] - boxW / 2}" y="${y(id)}" width="${boxW}" height="${boxH}" rx="4"/>` +
      (roomy ? `<text x="${x[id]}" y="${y(id) + 15}" text-anchor="middle">${esc(clip(node.terms, 30))}</text>` +
        `<text x="${x[id]}" y="${y(id) + 30}" text-anchor="middle" class="muted">${fmt(100 * s.share, 3)}% · loss ${fmt(s.meanLoss, 2)}</text>` : "") +
      `</g>`);
  }
  for (let j = 0; j < nLeaves; j++) {
    const id = nInt + j, s = of(id), leaf = tree.leaves[j];
    const best = tree.linear ? null : bestAction(leaf.value); // with a linear term the context decides
    const name = best === null ? "" : actionNames ? actionNames[best] : `action ${best}`;
    const title = `leaf ${j}: traffic ${fmt(100 * s.share, 3)}%, ${s.decisions} decisions, mean loss ${fmt(s.meanLoss)}${name ? `, best ${name}` : ""}`;
    out.push(`<g class="leaf${on.has(id) ? " on" : ""}" data-leaf="${j}" tabindex="0" role="button" aria-label="${esc(title)}"><title>${esc(title)}</title>` +
      `<rect x="${x[id] - boxW / 2}" y="${y(id)}" width="${boxW}" height="${boxH}" rx="4"/>` +
      (roomy ? `<text x="${x[id]}" y="${y(id) + 15}" text-anchor="middle">leaf ${j} · ${esc(name)}</text>` +
        `<text x="${x[id]}" y="${y(id) + 30}" text-anchor="middle">${fmt(100 * s.share, 3)}% · loss ${fmt(s.meanLoss, 2)}</text>` : "") +
      `</g>`);
  }
  container.innerHTML = `<h3>${esc(label)}</h3><svg class="tree" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="group" aria-label="${esc(label)}">${out.join("")}</svg>`;
  if (onLeaf) {
    const svg = container.querySelector("svg");
    const pick = (event) => {
      const g = event.target.closest("g.leaf");
      if (g) onLeaf(Number(g.dataset.leaf));
    };
    svg.addEventListener("click", pick);
    svg.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); pick(event); } });
  }
}

function bestAction(value) {
  if (!Array.isArray(value) || value.length < 2) return null;
  let best = 0;
  value.forEach((v, i) => { if (v > value[best]) best = i; });
  return best;
}

function clip(text, n) { return text.length > n ? `${text.slice(0, n - 1)}…` : text; }

/** Highlight ``path`` (node ids, root first) in a drawn tree, in place (no redraw). */
export function highlight(container, path) {
  container.querySelectorAll(".on").forEach((el) => el.classList.remove("on"));
  const nInt = container.querySelectorAll("g.node").length;
  path.forEach((id, i) => {
    const g = id < nInt ? container.querySelector(`g.node[data-node="${id}"]`) : container.querySelector(`g.leaf[data-leaf="${id - nInt}"]`);
    if (g) g.classList.add("on");
    if (i) { const edge = container.querySelector(`path[data-edge="${id}"]`); if (edge) edge.classList.add("on"); }
  });
}
