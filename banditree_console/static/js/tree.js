// A hand-written SVG drawer for complete oblique trees (one tree of a model, or each of a forest).
import { esc, fmt } from "./dom.js";

/** What a boosted model's export blends its drawn online tree with (null for others). */
export function blendOf(exported) {
  return (exported.model || exported).blend || null;
}

/** One line on a boosted model's drawn tree: the online tree, and the ensemble's weight. */
export function blendText(blend) {
  const weight = blend.ensemble_decides ? `the ensemble's weight in the blend is now ${fmt(blend.ensemble_weight, 3)}`
    : "the tree decides alone until the ensemble is fitted and scored (weight 0)";
  return `A boosted model: the tree drawn is its online tree, whose predicted rewards every decision blends with an ensemble of ${fmt(blend.n_trees)} trees refitted from recent rounds (${fmt(blend.fits)} fits so far); ${weight}.`;
}

/** The trees of a ``GET .../tree`` answer, each with its nodes' split terms in user units
 * (a boosted model's: its online tree). */
export function treesOf(exported, scaling) {
  const top = exported.model || exported;
  const model = top.online_tree || top;
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
 * small trees, compact marks for tall ones (their details in a status line on hover or
 * focus); edges as wide as their traffic, drawn as a few paths (one per width); ``path``
 * (node ids) highlighted; leaves focusable, Enter or a click calls ``onLeaf(leaf)``.
 */
export function drawTree(container, tree, { stats = null, path = null, onLeaf = null, label = "", actionNames = null } = {}) {
  const h = tree.height, nLeaves = 1 << h, nInt = nLeaves - 1;
  const roomy = h <= 4;
  const cell = roomy ? 168 : 16, rowH = roomy ? 74 : 26, boxW = roomy ? 156 : 10, boxH = roomy ? 46 : 10;
  const width = nLeaves * cell + 8, height = (h + 1) * rowH + 8;
  const of = nodeStats(h, stats);
  const x = new Float64Array(nInt + nLeaves);
  for (let j = 0; j < nLeaves; j++) x[nInt + j] = 4 + j * cell + cell / 2;
  for (let id = nInt - 1; id >= 0; id--) x[id] = (x[2 * id + 1] + x[2 * id + 2]) / 2;
  const y = (id) => 4 + (31 - Math.clz32(id + 1)) * rowH;
  const edges = Array.from({ length: 8 }, () => []); // by width: 1 + share x 6, in 8 steps
  for (let c = 1; c < nInt + nLeaves; c++) {
    const p = (c - 1) >> 1;
    edges[Math.min(7, Math.round(of(c).share * 7))].push(`M${x[p]},${y(p) + boxH}L${x[c]},${y(c)}`);
  }
  const out = edges.map((d, k) => (d.length ? `<path class="edge" stroke-width="${(1 + (k * 6) / 7).toFixed(2)}" d="${d.join("")}"/>` : ""));
  out.push('<path class="edge on" data-highlight d=""/>');
  const describe = (id) => {
    const s = of(id);
    if (id < nInt) return `node ${id}: ${tree.nodes[id].terms} (right when true); traffic ${fmt(100 * s.share, 3)}%, mean loss ${fmt(s.meanLoss)}`;
    const j = id - nInt, best = tree.linear ? null : bestAction(tree.leaves[j].value);
    const name = best === null ? "" : actionNames ? actionNames[best] : `action ${best}`;
    return `leaf ${j}: traffic ${fmt(100 * s.share, 3)}%, ${s.decisions} decisions, mean loss ${fmt(s.meanLoss)}${name ? `, best ${name}` : ""}`;
  };
  for (let id = 0; id < nInt + nLeaves; id++) {
    const leaf = id >= nInt, cls = leaf ? "leaf" : "node", s = of(id);
    const rect = `<rect x="${x[id] - boxW / 2}" y="${y(id)}" width="${boxW}" height="${boxH}" rx="${roomy ? 4 : 2}"/>`;
    const data = leaf ? `data-node="${id}" data-leaf="${id - nInt}" tabindex="0" role="button"` : `data-node="${id}"`;
    if (!roomy) { // one element a node: its text comes from describe() on hover or focus
      out.push(`<g class="${cls}" ${data}${leaf ? ` aria-label="leaf ${id - nInt}"` : ""}>${rect}</g>`);
      continue;
    }
    const text = describe(id);
    const head = leaf ? `leaf ${id - nInt}${text.includes(", best ") ? ` · ${text.split(", best ")[1]}` : ""}` : clip(tree.nodes[id].terms, 30);
    out.push(`<g class="${cls}" ${data}${leaf ? ` aria-label="${esc(text)}"` : ""}><title>${esc(text)}</title>${rect}` +
      `<text x="${x[id]}" y="${y(id) + 15}" text-anchor="middle">${esc(head)}</text>` +
      `<text x="${x[id]}" y="${y(id) + 30}" text-anchor="middle">${fmt(100 * s.share, 3)}% · loss ${fmt(s.meanLoss, 2)}</text></g>`);
  }
  container.innerHTML = `<h3>${esc(label)}</h3><svg class="tree" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="group" aria-label="${esc(label)}">${out.join("")}</svg>` +
    (roomy ? "" : '<p class="muted tree-status" aria-live="polite">Point at or focus a node for its split, traffic and loss.</p>');
  container._tree = { x, y, boxH, nInt };
  const svg = container.querySelector("svg");
  if (!roomy) {
    const status = container.querySelector(".tree-status");
    const show = (event) => { const g = event.target.closest("[data-node]"); if (g) status.textContent = describe(Number(g.dataset.node)); };
    svg.addEventListener("mouseover", show);
    svg.addEventListener("focusin", show);
  }
  if (path) highlight(container, path);
  if (onLeaf) {
    const pick = (event) => {
      const g = event.target.closest("g.leaf");
      if (g) onLeaf(Number(g.dataset.leaf));
    };
    svg.addEventListener("click", pick);
    svg.addEventListener("keydown", (event) => { if (event.key === "Enter" || event.key === " ") { event.preventDefault(); pick(event); } });
  }
}

/** Highlight ``path`` (node ids, root first) in a tree drawn by :func:`drawTree`, in place. */
export function highlight(container, path) {
  container.querySelectorAll("g.on").forEach((el) => el.classList.remove("on"));
  const { x, y, boxH } = container._tree;
  const d = [];
  path.forEach((id, i) => {
    const g = container.querySelector(`g[data-node="${id}"]`);
    if (g) g.classList.add("on");
    if (i) d.push(`M${x[path[i - 1]]},${y(path[i - 1]) + boxH}L${x[id]},${y(id)}`);
  });
  container.querySelector("path[data-highlight]").setAttribute("d", d.join(""));
}

function bestAction(value) {
  if (!Array.isArray(value) || value.length < 2) return null;
  let best = 0;
  value.forEach((v, i) => { if (v > value[best]) best = i; });
  return best;
}

function clip(text, n) { return text.length > n ? `${text.slice(0, n - 1)}…` : text; }

