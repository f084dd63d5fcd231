// Evaluate: candidate configurations estimated on the model's own log.  An admin runs
// them on the server (POST .../evaluations, a background job polled for its progress);
// anyone may prepare the same run offline (`banditree evaluate`) from the files below.
import { api } from "../api.js";
import { download, esc, fmt, h, showError, toast } from "../dom.js";

const EXAMPLE = [{ explorer: "epsilon_greedy", explorer_parameter: 0.05 }, { height: 5 }];
const POLL_MS = 400;

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

/** A reward estimate and its interval as a loss (1 - reward), the console's scale. */
export function asLoss(value, ci) {
  if (value === null || value === undefined) return "withheld";
  const loss = fmt(1 - value);
  return ci ? `${loss} [${fmt(1 - ci[1])}, ${fmt(1 - ci[0])}]` : loss;
}

/** Why an entry's figures are withheld or weak: the support refusals and notes. */
export function warnings(entry) {
  const out = [...(entry.refusals || [])];
  for (const r of entry.progressive_refusals || []) out.push(`progressive: ${r}`);
  if (entry.interval_note) out.push(entry.interval_note);
  return [...new Set(out)];
}

/** The candidate with the lowest supported SNIPS loss, or null. */
export function best(candidates) {
  let found = null;
  for (const [name, e] of Object.entries(candidates)) if (e.snips !== null && (found === null || e.snips > candidates[found].snips)) found = name;
  return found;
}

function resultTable(report) {
  const lp = report.logged_policy;
  const top = best(report.candidates);
  const rows = Object.entries(report.candidates).map(([name, e]) => {
    const notes = warnings(e);
    return `<tr data-candidate="${esc(name)}"><th scope="row">${esc(name)}${name === top ? ' <span class="badge good">lowest</span>' : ""}</th>` +
      `<td class="num">${esc(asLoss(e.snips, e.snips_ci95))}</td><td class="num">${esc(asLoss(e.ips, e.ips_ci95))}</td>` +
      `<td class="num">${esc(asLoss(e.dr, e.dr_ci95))}</td><td class="num">${esc(asLoss(e.progressive_value, e.progressive_value_ci95))}</td>` +
      `<td class="num">${fmt(e.effective_rounds)}</td>` +
      `<td>${notes.length ? `<ul class="warn support">${notes.map((n) => `<li>${esc(n)}</li>`).join("")}</ul>` : '<span class="good">supported</span>'}</td>` +
      `<td><button type="button" data-config="${esc(name)}">Config</button>${name === "current" ? "" : ` <button type="button" data-create="${esc(name)}">Create as a model</button>`}</td></tr>`;
  }).join("");
  return `<p>Estimated on ${fmt(report.log.n_rows)} log rows (the candidates learn the first ${fmt(report.log.n_train)}, ` +
    `the estimates are on the last ${fmt(report.log.n_evaluation)}) of version ${fmt(report.model_version)}. ` +
    `Loss = 1 − reward, lower is better, with 95% bootstrap intervals. The logged policy lost ${esc(asLoss(lp.value, lp.value_ci95))} on the same rows.</p>` +
    `<div class="scroll"><table class="grid" id="evaluate-results"><thead><tr><th>candidate</th><th class="num">SNIPS</th><th class="num">IPS</th>` +
    `<th class="num">DR</th><th class="num">progressive</th><th class="num">effective rounds</th><th>support</th><th></th></tr></thead><tbody>${rows}</tbody></table></div>`;
}

/** Show ``job`` in ``out``: its progress while it runs, its report once done. */
function showJob(out, job, model, ctx) {
  const p = job.progress || { stage: job.status, fraction: null };
  const head = `<h2>Evaluation <code>${esc(job.id.slice(0, 8))}</code> · <span id="evaluate-status">${esc(job.status)}</span></h2>`;
  if (job.status === "running") {
    const value = p.fraction === null ? "" : ` value="${p.fraction}"`;
    out.innerHTML = head + `<p><progress id="evaluate-progress" max="1"${value} aria-label="evaluation progress"></progress> ` +
      `<span id="evaluate-stage">${esc(p.stage)}${p.total ? ` · ${fmt(p.done)} of ${fmt(p.total)}` : ""}</span></p>` +
      (ctx.admin ? '<button type="button" id="evaluate-stop">Stop</button>' : "");
    out.querySelector("#evaluate-stop")?.addEventListener("click", async () => {
      try { await api.deleteEvaluation(model.name, job.id); toast("Evaluation stopped"); out.replaceChildren(); } catch (err) { showError(err); }
    });
    return;
  }
  if (job.status === "failed") {
    out.innerHTML = head + `<p class="bad" role="alert" id="evaluate-error">${esc(job.error)}</p>`;
    return;
  }
  out.innerHTML = head + resultTable(job.result);
  const configs = job.result.candidates;
  out.querySelectorAll("button[data-config]").forEach((b) => b.addEventListener("click", () => {
    download(`${model.name}-${b.dataset.config}.json`, JSON.stringify(strip(configs[b.dataset.config].config), null, 1), "application/json");
  }));
  out.querySelectorAll("button[data-create]").forEach((b) => {
    if (!ctx.admin) { b.disabled = true; b.title = "an admin key creates models"; return; }
    b.addEventListener("click", async () => {
      const name = `${model.name}-${b.dataset.create}`;
      try { await api.create(name, strip(configs[b.dataset.create].config)); toast(`Created ${name}`); } catch (err) { showError(err); }
    });
  });
}

/** Poll the job until it is no longer running (or the page is left). */
async function follow(out, id, model, ctx) {
  for (;;) {
    if (!out.isConnected) return;
    let job;
    try { job = await api.evaluation(model.name, id); } catch (err) { showError(err); return; }
    if (!out.isConnected) return;
    showJob(out, job, model, ctx);
    if (job.status !== "running") return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export async function renderEvaluate(body, model, ctx) {
  const input = h("textarea", { id: "evaluate-candidates", rows: 5, name: "candidates", "aria-label": "Candidates: a JSON list of configuration changes" }, JSON.stringify(EXAMPLE, null, 1));
  const rows = h("input", { id: "evaluate-rows", name: "rows", type: "number", min: 20, max: 100000, value: 10000 });
  const boot = h("input", { id: "evaluate-bootstrap", name: "n_bootstrap", type: "number", min: 10, max: 2000, value: 200 });
  const run = h("button", { class: "primary", type: "submit", disabled: !ctx.admin, title: ctx.admin ? null : "an admin key runs evaluations" }, "Run on the server");
  const form = h("form", { id: "evaluate-form" },
    h("p", { class: "muted" }, "Each candidate is this model's configuration with the changes below; ‘current’ is the configuration as served. " +
      "The service replays the model's newest log rows through each one and estimates, off-policy, what it would have lost, with an interval and a warning where the log does not support the candidate's choices."),
    input, h("small", { class: "error-text", "data-error-for": "candidates" }),
    h("div", { class: "row" },
      h("label", {}, "Newest log rows ", rows), h("small", { class: "error-text", "data-error-for": "rows" }),
      h("label", {}, "Bootstrap resamples ", boot), h("small", { class: "error-text", "data-error-for": "n_bootstrap" })),
    h("small", { class: "error-text", "data-error-for": "*" }),
    h("div", { class: "row" }, run,
      h("button", { type: "button", id: "evaluate-prepare" }, "Prepare an offline run"),
      h("button", { type: "button", id: "evaluate-log" }, "Download the log (NDJSON)")));
  const out = h("div", { id: "evaluate-out", "aria-live": "polite" });
  const offline = h("div", { id: "evaluate-offline" });
  const past = h("div", { id: "evaluate-past" });
  body.replaceChildren(form, out, past, offline);
  const changes = () => {
    const list = JSON.parse(input.value);
    if (!Array.isArray(list) || !list.every((c) => c && typeof c === "object" && !Array.isArray(c))) throw new Error("give a list of objects, one per candidate");
    return list;
  };
  const parsed = () => {
    const slot = form.querySelector('[data-error-for="candidates"]');
    form.querySelectorAll("[data-error-for]").forEach((e) => { e.textContent = ""; });
    try { return changes(); } catch (err) { slot.textContent = `not a list of changes: ${err.message}`; return null; }
  };
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const list = parsed();
    if (list === null) return;
    const request = { candidates: list.map((c, i) => ({ name: `candidate-${i}`, changes: c })), rows: Number(rows.value), n_bootstrap: Number(boot.value) };
    try {
      const job = await api.evaluate(model.name, request);
      showJob(out, job, model, ctx);
      follow(out, job.id, model, ctx);
    } catch (err) {
      // a candidate's field (candidates[0].changes.height) is shown beside the candidates
      if (err.field && err.field.startsWith("candidates")) form.querySelector('[data-error-for="candidates"]').textContent = err.message;
      else showError(err, form);
    }
  });
  form.querySelector("#evaluate-prepare").addEventListener("click", () => {
    const list = parsed();
    if (list === null) return;
    const configs = list.map((c) => ({ ...strip(model.config), ...c }));
    offline.innerHTML = `<h2>Run it offline</h2><p>Download the log and each candidate's file, then run (with your key in <code>KEY</code>):</p>` +
      `<pre id="evaluate-commands">${esc(evaluateCommands(model.name, configs.length))}</pre>` +
      `<div class="row">${configs.map((_, i) => `<button type="button" data-file="${i}">${esc(model.name)}-candidate-${i}.json</button>`).join("")}</div>`;
    offline.querySelectorAll("button[data-file]").forEach((b) => b.addEventListener("click", () => {
      const i = Number(b.dataset.file);
      download(`${model.name}-candidate-${i}.json`, JSON.stringify(configs[i], null, 1), "application/json");
    }));
  });
  form.querySelector("#evaluate-log").addEventListener("click", async () => {
    try {
      const logRows = await api.log(model.name, { since: 0, limit: 1000000 });
      download(`${model.name}-log.ndjson`, logRows.map((r) => JSON.stringify(r)).join("\n") + "\n");
    } catch (err) { showError(err); }
  });
  // the evaluations this server holds for the model: the newest is shown, the others listed
  const held = (await api.evaluations(model.name)).evaluations;
  if (held.length) {
    past.innerHTML = `<h2>Held by the service</h2><ul>${held.slice().reverse().map((j) =>
      `<li><button type="button" class="link" data-job="${esc(j.id)}">${esc(j.id.slice(0, 8))}</button> ${esc(j.status)} · ` +
      `${j.request.candidates.length + 1} candidates · ${esc(new Date(j.created_at * 1000).toLocaleString())}</li>`).join("")}</ul>`;
    past.querySelectorAll("button[data-job]").forEach((b) => b.addEventListener("click", () => follow(out, b.dataset.job, model, ctx)));
    follow(out, held[held.length - 1].id, model, ctx);
  }
}
