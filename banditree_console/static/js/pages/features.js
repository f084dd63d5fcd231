// Features: importance (traffic-weighted share of each split's standardised weight), with
// each feature's unique-value count and missing share over the recent log.
import { api } from "../api.js";
import { esc, fmt, h } from "../dom.js";
import { blendOf, blendText, nodeStats } from "../tree.js";

/**
 * Importance per column: sum over nodes of (traffic share of the node) x (|w_j| / sum_k |w_k|),
 * w the node's weights on standardised inputs, normalised to sum 1 over the columns.
 */
export function importance(treesJson, leafStats) {
  let out = null;
  treesJson.forEach((tree, t) => {
    const stats = nodeStats(tree.height, leafStats ? leafStats[t] : null);
    const nInt = tree.nodes.length;
    out = out || new Float64Array(tree.n_features);
    for (let id = 0; id < nInt; id++) {
      const w = tree.nodes[id].weights, total = w.reduce((s, v) => s + Math.abs(v), 0);
      const share = leafStats ? stats(id).share : 2 ** -Math.floor(Math.log2(id + 1)); // no counts: an even split
      if (total > 0) w.forEach((v, j) => { out[j] += share * Math.abs(v) / total; });
    }
  });
  const sum = out ? out.reduce((a, b) => a + b, 0) : 0;
  return out ? Array.from(out, (v) => (sum ? v / sum : 0)) : [];
}

/** Columns grouped into the caller's features: [{name, columns: [indices]}]. */
function features(model, exported) {
  const m = exported.model.online_tree || exported.model;
  if (m.encoding) return m.encoding.map((e, i) => {
    const next = i + 1 < m.encoding.length ? m.encoding[i + 1].offset : m.columns.length;
    return { name: e.name, type: e.type, columns: Array.from({ length: next - e.offset }, (_, k) => e.offset + k) };
  });
  const d = model.config.n_features;
  return Array.from({ length: d }, (_, j) => ({ name: `x${j}`, type: "numeric", columns: [j] }));
}

function valueOf(context, name, j) {
  if (Array.isArray(context)) return context[j];
  let v = context;
  for (const part of name.split(".")) { v = v && typeof v === "object" ? v[part] : undefined; }
  return v;
}

export async function renderFeatures(body, model) {
  const exported = await api.tree(model.name);
  const leaves = await api.leaves(model.name).catch(() => null);
  const m = exported.model.online_tree || exported.model; // a boosted model: its online tree
  const trees = m.format === "banditree.named_tree/v1" ? [m.tree] : m.trees ? m.trees : m.nodes ? [m] : [];
  if (!trees.length) { body.replaceChildren(h("p", { class: "muted" }, "This model has no splits to weigh.")); return; }
  const imp = importance(trees, leaves && leaves.leaf_stats ? leaves.leaf_stats.trees : null);
  const rows = await api.recentLog(model.name, 2000);
  const list = features(model, exported).map((f, j) => {
    const values = rows.map((r) => valueOf(r.context, f.name, j));
    const missing = values.filter((v) => v === undefined || v === null || (typeof v === "number" && Number.isNaN(v))).length;
    const unique = new Set(values.filter((v) => v !== undefined && v !== null).map((v) => JSON.stringify(v))).size;
    return { ...f, importance: f.columns.reduce((s, c) => s + (imp[c] || 0), 0), unique, missing: rows.length ? missing / rows.length : null };
  }).sort((a, b) => b.importance - a.importance);
  const max = Math.max(...list.map((f) => f.importance), 1e-12);
  const blend = blendOf(exported);
  body.replaceChildren(
    blend ? h("p", { id: "blend-note" }, blendText(blend), " The importances below are the online tree's.") : null,
    h("p", { class: "muted" }, "Importance: each split's weights on standardised inputs (so a weight is already times its feature's scale), as shares of the split's total, weighted by the traffic the split sees (per-leaf counts) and summed over every split and tree. It says what the served policy reads, from the policy alone, at no cost; a permutation importance on the log would also say what each feature is worth in loss, but costs a replay per feature. Unique values and missing share: over the last " + rows.length + " log rows."),
    h("table", { class: "grid", id: "features-table" }, h("thead", {}, h("tr", {}, h("th", {}, "Feature"), h("th", {}, "Type"), h("th", { class: "num" }, "Importance"), h("th", {}, ""), h("th", { class: "num" }, "Unique values"), h("th", { class: "num" }, "Missing"))),
      h("tbody", { html: list.map((f) => `<tr><td>${esc(f.name)}</td><td>${esc(f.type)}</td><td class="num">${fmt(100 * f.importance, 3)}%</td><td style="width:30%"><div class="bar" style="width:${(100 * f.importance / max).toFixed(1)}%"></div></td><td class="num">${fmt(f.unique)}</td><td class="num">${f.missing === null ? "–" : `${fmt(100 * f.missing, 3)}%`}</td></tr>`).join("") })));
}
