// Evaluate: candidate configurations estimated on the model's own log.  The service runs
// no evaluation jobs yet, so the page prepares the offline run (`banditree evaluate`):
// the log and one file per candidate, the commands to run, and a copy to apply.
import { api } from "../api.js";
import { download, esc, h, showError, toast } from "../dom.js";

const EXAMPLE = [{ explorer: "epsilon_greedy", explorer_parameter: 0.05 }, { height: 5 }];

/** The model's config as a create body (fields the create route fills in itself removed). */
export function strip(config) {
  const out = {};
  for (const [k, v] of Object.entries(config)) if (v !== null && !(k === "n_features" && config.features)) out[k] = v;
  return out;
}

/** The shell commands that estimate ``candidates`` (config changes) on ``name``'s log. */
export function evaluateCommands(name, count) {
  const origin = location.origin;
  const configs = Array.from({ length: count }, (_, i) => `--config ${name}-candidate-${i}.json`).join(" ");
  return `banditree log export ${name} --server ${origin} --api-key "$KEY" --format ndjson --out ${name}-log.ndjson\n` +
    `banditree evaluate ${name}-log.ndjson ${configs} --out runs/evaluate-${name}`;
}

export async function renderEvaluate(body, model, ctx) {
  const input = h("textarea", { id: "evaluate-candidates", rows: 5, name: "candidates", "aria-label": "Candidates: a JSON list of configuration changes" }, JSON.stringify(EXAMPLE, null, 1));
  const form = h("form", { id: "evaluate-form" },
    h("p", { class: "muted" }, "Each candidate is this model's configuration with the changes below. `banditree evaluate` replays the model's own log through each one and estimates, off-policy, what it would have lost, with an interval and a warning where the log does not support the candidate's choices."),
    input, h("small", { class: "error-text", "data-error-for": "candidates" }),
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Prepare the run"), h("button", { type: "button", id: "evaluate-log" }, "Download the log (NDJSON)")));
  const out = h("div", { id: "evaluate-out", "aria-live": "polite" });
  body.replaceChildren(form, out);
  const candidates = () => {
    const list = JSON.parse(input.value);
    if (!Array.isArray(list) || !list.every((c) => c && typeof c === "object" && !Array.isArray(c))) throw new Error("give a list of objects, one per candidate");
    return list.map((changes) => ({ ...strip(model.config), ...changes }));
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const slot = form.querySelector('[data-error-for="candidates"]');
    slot.textContent = "";
    let list;
    try { list = candidates(); } catch (err) { slot.textContent = `not a list of changes: ${err.message}`; return; }
    out.innerHTML = `<h2>Run it</h2><p>Download the log and each candidate's file, then run (with your key in <code>KEY</code>):</p>` +
      `<pre id="evaluate-commands">${esc(evaluateCommands(model.name, list.length))}</pre>` +
      `<div class="row">${list.map((_, i) => `<button type="button" data-file="${i}">${esc(model.name)}-candidate-${i}.json</button>`).join("")}</div>` +
      (ctx.admin ? `<p>To serve a candidate beside this model: </p><div class="row">${list.map((_, i) => `<button type="button" data-apply="${i}">Create candidate ${i}</button>`).join("")}</div>` : "");
    out.querySelectorAll("button[data-file]").forEach((b) => b.addEventListener("click", () => {
      const i = Number(b.dataset.file);
      download(`${model.name}-candidate-${i}.json`, JSON.stringify(list[i], null, 1), "application/json");
    }));
    out.querySelectorAll("button[data-apply]").forEach((b) => b.addEventListener("click", async () => {
      const name = `${model.name}-candidate-${b.dataset.apply}`;
      try { await api.create(name, list[Number(b.dataset.apply)]); toast(`Created ${name}`); } catch (err) { showError(err); }
    }));
  });
  form.querySelector("#evaluate-log").addEventListener("click", async () => {
    try {
      const rows = await api.log(model.name, { since: 0, limit: 1000000 });
      download(`${model.name}-log.ndjson`, rows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    } catch (err) { showError(err); }
  });
}
