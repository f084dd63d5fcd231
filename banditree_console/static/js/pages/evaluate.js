// Evaluate: candidate configurations estimated on the model's own log, as a background job.
import { api } from "../api.js";
import { esc, fmt, h, showError, toast } from "../dom.js";

const EXAMPLE = [{ explorer: "epsilon_greedy", explorer_parameter: 0.05 }, { height: 5 }];

export async function renderEvaluate(body, model, ctx) {
  const input = h("textarea", { id: "evaluate-candidates", rows: 5, name: "candidates", "aria-label": "Candidates: a JSON list of configuration changes" }, JSON.stringify(EXAMPLE, null, 1));
  const rows = h("input", { type: "number", id: "evaluate-rows", name: "rows", value: 5000, min: 1, "aria-label": "Log rows" });
  const form = h("form", { id: "evaluate-form" },
    h("p", { class: "muted" }, "Each candidate is the model's configuration with these changes, replayed on the model's own log and estimated off-policy (with an interval, and a warning where the log does not support the candidate's choices)."),
    input, h("small", { class: "error-text", "data-error-for": "candidates" }),
    h("div", { class: "row" }, h("label", {}, "Log rows ", rows), h("small", { class: "error-text", "data-error-for": "rows" }),
      h("button", { class: "primary", type: "submit" }, "Run")), h("small", { class: "error-text", "data-error-for": "*" }));
  const progress = h("div", { id: "evaluate-progress", "aria-live": "polite" });
  const results = h("div", { id: "evaluate-results" });
  body.replaceChildren(form, progress, results);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    let candidates;
    try { candidates = JSON.parse(input.value); } catch (err) {
      form.querySelector('[data-error-for="candidates"]').textContent = `not JSON: ${err.message}`;
      return;
    }
    try {
      const job = await api.evaluate(model.name, { candidates, rows: Number(rows.value) });
      await follow(job.id);
    } catch (err) {
      if (err.status === 404 && !err.field) progress.textContent = "This server does not run evaluations (no evaluations route).";
      else showError(err, form);
    }
  });

  async function follow(id) {
    const bar = h("progress", { max: 1, value: 0, id: "evaluate-bar" });
    progress.replaceChildren(h("span", {}, "Running… "), bar);
    for (;;) {
      const job = await api.evaluation(model.name, id);
      bar.value = job.progress;
      if (job.state === "done" || job.state === "failed") {
        progress.replaceChildren(h("span", { class: job.state === "done" ? "good" : "bad" }, job.state === "done" ? "Done." : `Failed: ${job.error}`));
        if (job.state === "done") show(job.results);
        return;
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  }

  function show(list) {
    results.innerHTML = `<table class="grid"><thead><tr><th>Candidate</th><th class="num">Estimated loss</th><th class="num">Interval</th><th>Warnings</th><th></th></tr></thead><tbody>${
      list.map((r, i) => `<tr><td><code>${esc(JSON.stringify(r.changes))}</code></td><td class="num">${fmt(r.estimate)}</td><td class="num">${fmt(r.low)} – ${fmt(r.high)}</td><td>${esc((r.warnings || []).join("; "))}</td>` +
        `<td>${ctx.admin && r.changes ? `<button data-apply="${i}">Apply as new model</button>` : ""}</td></tr>`).join("")}</tbody></table>`;
    results.querySelectorAll("button[data-apply]").forEach((b) => b.addEventListener("click", async () => {
      const r = list[Number(b.dataset.apply)];
      const name = `${model.name}-candidate-${b.dataset.apply}`;
      try { await api.create(name, { ...strip(model.config), ...r.changes }); toast(`Created ${name}`); } catch (err) { showError(err); }
    }));
  }
}

/** The model's config as a create body (fields the create route fills in itself removed). */
export function strip(config) {
  const out = {};
  for (const [k, v] of Object.entries(config)) if (v !== null && !(k === "n_features" && config.features)) out[k] = v;
  return out;
}
