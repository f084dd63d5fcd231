// Policy: every tree drawn with its splits in user units, traffic and loss per node,
// per-leaf values and probabilities; a leaf's recent decisions on a click.
import { api } from "../api.js";
import { esc, fmt, h } from "../dom.js";
import { blendOf, blendText, drawTree, treesOf } from "../tree.js";
import { compareControl } from "./compare.js";

/** The tree export and the per-leaf answer of a model (the latter null where not offered). */
export async function policyData(name) {
  const [exported, leaves] = await Promise.all([api.tree(name), api.leaves(name).catch((err) => (err.status === 404 ? null : Promise.reject(err)))]);
  return { exported, leaves, trees: treesOf(exported, leaves && leaves.scaling) };
}

export async function renderPolicy(body, model) {
  performance.mark("policy-start");
  const { exported, leaves, trees } = await policyData(model.name);
  if (!trees.length) {
    body.replaceChildren(h("p", { class: "muted" }, `A ${model.config.kind} model has no tree to draw.`));
    return;
  }
  const compare = await compareControl(model, trees, leaves && leaves.scaling);
  const stats = leaves && leaves.leaf_stats ? leaves.leaf_stats.trees : [];
  const detail = h("aside", { id: "leaf-detail", "aria-live": "polite" }, h("p", { class: "muted" }, "Click a leaf (or focus it and press Enter) to see its values and recent decisions."));
  const drawn = h("div", { id: "trees" });
  const blend = blendOf(exported);
  body.replaceChildren(
    blend ? h("p", { id: "blend-note" }, blendText(blend), " Trace a context for the blended answer; the leaves' probabilities are the blend's, not shown per leaf.") : null,
    h("p", { class: "muted" }, `Splits: the few largest terms of each node, in the units the caller sends${trees[0].nodes[0] && !trees[0].nodes[0].userUnits ? " (standardised: this server gave no scaling)" : ""}; go right when true. Edge width: traffic share.`),
    compare, h("div", { class: "split" }, drawn, detail));
  performance.mark("policy-draw-start");
  trees.forEach((tree, t) => {
    const wrap = h("div", { class: "tree-wrap", "data-tree": t });
    drawn.append(wrap);
    drawTree(wrap, tree, { stats: stats[t] || null, label: trees.length > 1 ? `tree ${t + 1} of ${trees.length}` : "tree",
      onLeaf: (leaf) => showLeaf(detail, model, tree, t, leaf, leaves) });
  });
  drawn.getBoundingClientRect(); // the layout of the drawn trees, inside the measure
  performance.mark("policy-drawn");
  performance.measure("policy-draw", "policy-draw-start", "policy-drawn");
  performance.measure("policy", "policy-start", "policy-drawn");
}

async function showLeaf(detail, model, tree, t, leaf, leaves) {
  const stat = leaves && leaves.leaf_stats ? leaves.leaf_stats.trees[t].leaves[leaf] : null;
  const values = tree.leaves[leaf].value;
  const probs = leaves && leaves.probabilities ? leaves.probabilities[t][leaf] : null;
  const rows = values.map((v, a) => `<tr><td>${a}</td><td class="num">${fmt(v)}</td><td class="num">${probs ? fmt(probs[a]) : "–"}</td><td class="num">${stat && stat.action_counts ? fmt(stat.action_counts[a]) : "–"}</td></tr>`).join("");
  detail.innerHTML = `<h2>Leaf ${leaf}${t ? ` of tree ${t + 1}` : ""}</h2>` +
    (stat ? `<p>${fmt(stat.decisions)} decisions · ${fmt(stat.feedbacks)} feedbacks · mean loss ${fmt(stat.mean_loss)} · ${fmt(100 * stat.share, 3)}% of traffic</p>` : "") +
    (tree.linear ? `<p class="muted">Values at the mean context: a per-action linear term in the context is added to them.</p>` : "") +
    `<table class="grid" id="leaf-values"><thead><tr><th>${values.length > 1 ? "Action" : "Output"}</th><th class="num">Value</th><th class="num">Probability</th><th class="num">Played</th></tr></thead><tbody>${rows}</tbody></table>` +
    `<h3>Recent decisions reaching it</h3><div id="leaf-decisions" class="muted">loading…</div>`;
  const where = detail.querySelector("#leaf-decisions");
  try {
    const recent = await api.recentLog(model.name, 256); // one trace request (at most max_batch contexts)
    if (!recent.length) { where.textContent = "The log holds no decisions yet."; return; }
    const traced = await api.trace(model.name, recent.map((r) => r.context));
    const hits = recent.filter((_, i) => traced.traces[i].trees[t].leaf === leaf).reverse().slice(0, 25);
    where.classList.remove("muted");
    where.innerHTML = hits.length ? `<table class="grid"><thead><tr><th>Offset</th><th>Context</th><th>Action</th><th class="num">Prob.</th><th class="num">Loss</th></tr></thead><tbody>${
      hits.map((r) => `<tr><td>${r.offset}</td><td><code>${esc(JSON.stringify(r.context)).slice(0, 80)}</code></td><td>${r.action ?? fmt(r.value)}</td><td class="num">${fmt(r.propensity)}</td><td class="num">${fmt(r.loss)}</td></tr>`).join("")
    }</tbody></table><p class="muted">Of the last ${recent.length} log rows, routed by the served tree.</p>` : `None of the last ${recent.length} log rows reach this leaf.`;
  } catch (err) { where.textContent = err.message; }
}
