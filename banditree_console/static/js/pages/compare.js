// Versions compared: the served policy against a stored checkpoint's, split by split and
// leaf by leaf (``GET .../checkpoints/{sequence}/tree``).
import { api } from "../api.js";
import { esc, fmt, h, showError } from "../dom.js";
import { treesOf } from "../tree.js";

/** Leaves' values differ when one moved by more than this (relative to its size). */
const VALUE_TOLERANCE = 1e-6;

/** What moved from ``before`` to ``now`` (both as ``treesOf`` gives them), per tree. */
export function policyChanges(before, now) {
  return now.map((tree, t) => {
    const old = before[t];
    if (!old || old.nodes.length !== tree.nodes.length || old.leaves.length !== tree.leaves.length) {
      return { tree: t, reshaped: true, splits: [], leaves: [], nSplits: tree.nodes.length, nLeaves: tree.leaves.length };
    }
    // compared on the whole split (every term), written as its few largest terms
    const splits = tree.nodes.map((n, i) => ({ id: n.id, same: (old.nodes[i].text || old.nodes[i].terms) === (n.text || n.terms), before: old.nodes[i].terms, now: n.terms }))
      .filter((s) => !s.same);
    const leaves = tree.leaves.map((l, i) => {
      const was = old.leaves[i].value, is = l.value;
      const moved = is.reduce((m, v, a) => Math.max(m, Math.abs(v - was[a])), 0);
      return { leaf: l.leaf, before: was, now: is, moved };
    }).filter((l) => l.moved > VALUE_TOLERANCE * Math.max(1, ...l.now.map(Math.abs)));
    return { tree: t, reshaped: false, splits, leaves, nSplits: tree.nodes.length, nLeaves: tree.leaves.length };
  });
}

function changesHtml(changes, checkpoint) {
  const head = `<h2>Since checkpoint ${checkpoint.sequence} (version ${checkpoint.version})</h2>`;
  const parts = changes.map((c) => {
    const label = changes.length > 1 ? `Tree ${c.tree + 1}: ` : "";
    if (c.reshaped) return `<p>${label}the tree's shape changed: compare the drawings.</p>`;
    const summary = `<p class="compare-summary">${label}${c.splits.length} of ${c.nSplits} splits changed · ${c.leaves.length} of ${c.nLeaves} leaves' values changed</p>`;
    const splits = c.splits.length ? `<div class="scroll"><table class="grid compare-splits"><thead><tr><th>Node</th><th>Then</th><th>Now</th></tr></thead><tbody>${
      c.splits.map((s) => `<tr><td>${s.id}</td><td><code>${esc(s.before)}</code></td><td><code>${esc(s.now)}</code></td></tr>`).join("")}</tbody></table></div>` : "";
    const leaves = c.leaves.length ? `<table class="grid compare-leaves"><thead><tr><th>Leaf</th><th>Then</th><th>Now</th><th class="num">Largest move</th></tr></thead><tbody>${
      c.leaves.map((l) => `<tr><td>${l.leaf}</td><td>${l.before.map((v) => fmt(v)).join(", ")}</td><td>${l.now.map((v) => fmt(v)).join(", ")}</td><td class="num">${fmt(l.moved)}</td></tr>`).join("")}</tbody></table>` : "";
    return summary + splits + leaves;
  });
  return head + parts.join("");
}

/** A checkpoint picker and, once one is picked, what moved since it. */
export async function compareControl(model, trees, scaling) {
  const select = h("select", { id: "compare-checkpoint", "aria-label": "Compare with a checkpoint" }, h("option", { value: "" }, "Compare with a checkpoint…"));
  const out = h("div", { id: "compare-out", "aria-live": "polite" });
  const stored = (await api.checkpoints(model.name)).checkpoints;
  for (const c of stored) select.append(h("option", { value: String(c.sequence) }, `#${c.sequence} · version ${c.version} · ${new Date(c.created_at * 1000).toLocaleString()}`));
  select.disabled = !stored.length;
  select.addEventListener("change", async () => {
    const checkpoint = stored.find((c) => String(c.sequence) === select.value);
    if (!checkpoint) { out.replaceChildren(); return; }
    try {
      const then = treesOf(await api.checkpointTree(model.name, checkpoint.sequence), scaling);
      out.innerHTML = changesHtml(policyChanges(then, trees), checkpoint);
    } catch (err) { showError(err); }
  });
  return h("div", { class: "compare" }, h("div", { class: "row" }, select), out);
}
