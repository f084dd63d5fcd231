// Trace: a context's path through every tree, highlighted, with the answer predict would give.
import { api } from "../api.js";
import { esc, fmt, h, showError } from "../dom.js";
import { blendOf, blendText, drawTree, highlight } from "../tree.js";
import { policyData } from "./policy.js";

export async function renderTrace(body, model) {
  const data = await policyData(model.name);
  const recent = await api.recentLog(model.name, 20);
  const example = recent.length ? recent[recent.length - 1].context : model.config.features ? {} : Array(model.config.n_features).fill(0);
  const input = h("textarea", { id: "trace-input", rows: 4, "aria-label": "Context (JSON object or list)", name: "context" }, JSON.stringify(example));
  const pick = h("select", { id: "trace-pick", "aria-label": "Pick a logged context" }, h("option", { value: "" }, "pick a recent logged context…"),
    recent.map((r, i) => h("option", { value: i }, `offset ${r.offset}: ${JSON.stringify(r.context).slice(0, 60)}`)));
  const form = h("form", { id: "trace-form" }, input, h("small", { class: "error-text", "data-error-for": "context" }), h("small", { class: "error-text", "data-error-for": "*" }),
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Trace"), pick, h("span", { class: "muted" }, "Ctrl+Enter traces")));
  const answer = h("div", { id: "trace-answer", "aria-live": "polite" });
  const drawn = h("div", { id: "trace-trees" });
  const blend = blendOf(data.exported);
  body.replaceChildren(form, blend ? h("p", { id: "blend-note" }, blendText(blend)) : null, h("div", { class: "split" }, drawn, answer));
  const draw = () => {
    drawn.replaceChildren();
    data.trees.forEach((tree, t) => {
      const wrap = h("div", { class: "tree-wrap" });
      drawn.append(wrap);
      const stats = data.leaves && data.leaves.leaf_stats ? data.leaves.leaf_stats.trees[t] : null;
      drawTree(wrap, tree, { stats, label: data.trees.length > 1 ? `tree ${t + 1}` : "tree" });
    });
  };
  draw();
  pick.addEventListener("change", () => { if (pick.value !== "") { input.value = JSON.stringify(recent[Number(pick.value)].context); form.requestSubmit(); } });
  input.addEventListener("keydown", (e) => { if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); form.requestSubmit(); } });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    form.querySelectorAll("[data-error-for]").forEach((e) => { e.textContent = ""; });
    let context;
    try { context = JSON.parse(input.value); } catch (err) {
      form.querySelector('[data-error-for="context"]').textContent = `not JSON: ${err.message}`;
      return;
    }
    const t0 = performance.now();
    try {
      const result = await api.trace(model.name, [context]);
      const trace = result.traces[0];
      [...drawn.children].forEach((wrap, t) => highlight(wrap, trace.trees[t] ? trace.trees[t].path : []));
      answer.innerHTML = answerHtml(trace, model, result.version);
      answer.getBoundingClientRect(); // the answer laid out, inside the measure
      performance.measure("trace", { start: t0, end: performance.now() });
    } catch (err) { showError(err, form); }
  });
}

function answerHtml(trace, model, version) {
  const d = trace.decision;
  const rows = (d.probabilities || []).map((p, a) => `<tr${a === d.greedy_action ? ' class="selected"' : ""}><td>${a}</td><td class="num">${fmt(p)}</td><td class="num">${d.scores ? fmt(d.scores[a]) : "–"}</td></tr>`).join("");
  return `<h2>Answer</h2>` +
    (model.config.task === "classification"
      ? `<p id="trace-greedy">predict would play action <strong>${d.greedy_action}</strong> greedily (it samples from the probabilities below).</p>` +
        `<table class="grid" id="trace-probabilities"><thead><tr><th>Action</th><th class="num">Probability</th><th class="num">Estimate</th></tr></thead><tbody>${rows}</tbody></table>`
      : `<p id="trace-greedy">greedy value <strong>${fmt(d.greedy_value)}</strong></p>`) +
    `<p>leaf ${trace.trees.map((t) => t.leaf).join(", ")} · version ${version}</p>` +
    (trace.blend ? `<p id="trace-blend">The estimates are the blend's: the online tree's (its leaf above) weighted ${fmt(1 - trace.blend.ensemble_weight, 3)}, the ensemble's ${fmt(trace.blend.ensemble_weight, 3)}; the tree alone would play action ${trace.online_tree.greedy_action}.</p>` : "") +
    (trace.explanation ? `<h3>${trace.blend ? "Why, in the online tree" : "Why"}</h3><ol id="trace-explanation">${trace.explanation.map((s) => `<li><code>${esc(s)}</code></li>`).join("")}</ol>` : "");
}
