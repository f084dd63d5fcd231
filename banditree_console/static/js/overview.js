// Models overview: every model the key reaches, with rates, windowed loss and state.
import { api } from "./api.js";
import { esc, fmt, h, seconds, showError, toast } from "./dom.js";
import { sparkline } from "./svg.js";

/** Per model, the service's recent figures (GET /v1/series: sampled every few seconds). */
let recent = {};
const POLL_MS = 2000;
const COLUMNS = [
  ["name", "Model"], ["kind", "Kind"], ["task", "Task"], ["mode", "Mode"], ["version", "Version", true],
  ["decisionsPerSecond", "Decisions/s", true], ["feedbackPerSecond", "Feedbacks/s", true],
  ["windowLoss", "Loss (window)", true], ["trend", "Trend"], ["pending", "Pending", true],
  ["learner", "Learner"], ["checkpointAge", "Checkpoint age", true], ["actions", ""],
];

/** The columns /v1/series fills in (their cells: FIGURE_CELLS in a row), and the trend's. */
const FIGURE_KEYS = ["decisionsPerSecond", "feedbackPerSecond", "windowLoss"];
const FIGURE_CELLS = [5, 6, 7];
const TREND_CELL = 8;

/** One row's figures: the service's rates over the last minute and the loss of the
 * feedback learned in it (the progressive loss until the service has two samples). */
export function figures(model, r) {
  const status = model.status || {};
  return {
    name: model.name, kind: model.config.kind, task: model.config.task, mode: model.mode, version: model.version,
    decisionsPerSecond: r ? r.decisions_per_second : null,
    feedbackPerSecond: r ? r.feedback_per_second : null,
    windowLoss: r && r.window_loss !== null ? r.window_loss : model.counters.progressive_mean_loss,
    trend: r ? r.loss_trend : [],
    pending: status.pending_decisions ?? null,
    learner: `${status.learner_holder || "no lease"} · lag ${model.pending_updates}`,
    checkpointAge: status.checkpoint_age_seconds ?? null,
  };
}

function rowHtml(r, admin, trend) {
  const link = `#/models/${encodeURIComponent(r.name)}/learning`;
  return `<tr data-name="${esc(r.name)}"><td><a href="${link}">${esc(r.name)}</a></td><td>${esc(r.kind)}</td><td>${esc(r.task)}</td>` +
    `<td>${esc(r.mode)}</td><td class="num">${fmt(r.version)}</td><td class="num">${fmt(r.decisionsPerSecond)}</td>` +
    `<td class="num">${fmt(r.feedbackPerSecond)}</td><td class="num">${fmt(r.windowLoss)}</td><td>${trend}</td>` +
    `<td class="num">${fmt(r.pending)}</td><td>${esc(r.learner)}</td><td class="num">${seconds(r.checkpointAge)}</td>` +
    `<td>${admin ? `<button class="danger" data-delete="${esc(r.name)}" aria-label="Delete ${esc(r.name)}">Delete</button>` : ""}</td></tr>`;
}

export async function renderOverview(main, ctx) {
  performance.mark("overview-start");
  const view = { sort: "name", desc: false, filter: "", rows: [] };
  const trends = new Map(); // each drawn row's sparkline (its markup), by model name
  const filter = h("input", { type: "search", placeholder: "Filter by name, kind, task, mode  ( / )", "data-filter": "", "aria-label": "Filter models", size: 40 });
  const count = h("span", { class: "muted", id: "model-count" });
  const head = h("tr", {}, COLUMNS.map(([key, label, num]) => h("th", { class: num ? "num" : null, scope: "col", "aria-sort": "none" },
    key === "actions" || key === "trend" ? label : h("button", { type: "button", "data-sort": key }, label))));
  const body = h("tbody", { id: "models-body" });
  const table = h("table", { class: "grid", id: "models" }, h("thead", {}, head), body);
  main.replaceChildren(h("h1", {}, "Models"), h("div", { class: "row" }, filter, count, ctx.admin ? createButton(main, refresh) : null),
    h("div", { class: "scroll" }, table));

  function render() {
    const needle = view.filter.toLowerCase();
    const shown = view.rows.filter((r) => !needle || [r.name, r.kind, r.task, r.mode].some((v) => String(v).toLowerCase().includes(needle)));
    const k = view.sort, sign = view.desc ? -1 : 1;
    shown.sort((a, b) => {
      const x = a[k], y = b[k];
      if (x === y) return 0;
      if (x === null || x === undefined) return 1;
      if (y === null || y === undefined) return -1;
      return (x < y ? -1 : 1) * sign;
    });
    trends.clear();
    body.innerHTML = shown.map((r) => {
      const trend = sparkline(r.trend);
      trends.set(r.name, trend);
      return rowHtml(r, ctx.admin, trend);
    }).join("");
    count.textContent = `${shown.length} of ${view.rows.length} models`;
    head.querySelectorAll("th").forEach((th) => {
      const b = th.querySelector("button");
      th.setAttribute("aria-sort", b && b.dataset.sort === k ? (view.desc ? "descending" : "ascending") : "none");
    });
  }

  /** The figure cells of the rows drawn, set in place (the rows, their links and
   * buttons are kept): a thousand rows redrawn for new rates took over a second. */
  function refigure() {
    if (FIGURE_KEYS.includes(view.sort)) { render(); return; } // the order may change
    const byName = new Map(view.rows.map((r) => [r.name, r]));
    for (const tr of body.rows) {
      const r = byName.get(tr.dataset.name);
      if (!r) continue;
      FIGURE_KEYS.forEach((key, i) => {
        const cell = tr.cells[FIGURE_CELLS[i]], text = fmt(r[key]);
        if (cell.textContent !== text) cell.textContent = text;
      });
      const trend = sparkline(r.trend);
      if (trends.get(r.name) !== trend) { tr.cells[TREND_CELL].innerHTML = trend; trends.set(r.name, trend); }
    }
  }

  let models = [];
  const withFigures = () => { view.rows = models.map((m) => figures(m, recent[m.name])); };
  const rows = () => { withFigures(); render(); };
  // "overview-figures": the first moment rows are drawn with the series' figures in them
  let seriesCame = false, listDrawn = false, figuresShown = false;
  const markFigures = () => {
    if (seriesCame && listDrawn && !figuresShown) { figuresShown = true; performance.mark("overview-figures"); }
  };
  async function refresh(prefetched = null) {
    // the list is drawn as soon as it comes; the figures when they follow (either first)
    api.series().then((a) => {
      recent = a.models;
      if (!table.isConnected) return;
      withFigures();
      refigure();
      seriesCame = true;
      markFigures();
    }, () => {});
    try {
      models = (await (prefetched || api.models())).models;
      rows();
      listDrawn = true;
      markFigures();
    } catch (err) { showError(err); }
  }

  head.addEventListener("click", (event) => {
    const b = event.target.closest("button[data-sort]");
    if (!b) return;
    view.desc = view.sort === b.dataset.sort ? !view.desc : false;
    view.sort = b.dataset.sort;
    render();
  });
  filter.addEventListener("input", () => { view.filter = filter.value; render(); });
  body.addEventListener("click", async (event) => {
    const b = event.target.closest("button[data-delete]");
    if (!b) return;
    const name = b.dataset.delete;
    if (!(await confirmDialog(`Delete model ${name} and its checkpoints?`))) return;
    try { await api.remove(name); toast(`Deleted ${name}`); await refresh(); } catch (err) { showError(err); }
  });
  await refresh(ctx.prefetched);
  performance.mark("overview-interactive");
  performance.measure("overview", "overview-start", "overview-interactive");
  const timer = setInterval(() => refresh(), POLL_MS);
  ctx.onStop(() => clearInterval(timer));
}

export function confirmDialog(text) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-label": "Confirm" },
      h("form", { method: "dialog" }, h("p", {}, text),
        h("div", { class: "row" }, h("button", { value: "yes", class: "danger" }, "Confirm"), h("button", { value: "no", autofocus: true }, "Cancel"))));
    document.body.append(dialog);
    dialog.addEventListener("close", () => { resolve(dialog.returnValue === "yes"); dialog.remove(); });
    dialog.showModal();
  });
}

const KINDS = ["dgt", "dgt_forest", "linear", "tel", "hinge", "random"];

function createButton(main, refresh) {
  return h("button", { type: "button", class: "primary", id: "create-button", onclick: () => createDialog(refresh) }, "New model");
}

function field(name, label, input) {
  return h("label", {}, h("span", {}, label), input, h("small", { class: "error-text", "data-error-for": name }));
}

function createDialog(refresh) {
  const form = h("form", { class: "stack", id: "create-form" },
    h("h2", {}, "New model"),
    field("name", "Name", h("input", { name: "name", required: true, pattern: "[A-Za-z0-9_.\\-]+" })),
    field("kind", "Kind", h("select", { name: "kind" }, KINDS.map((k) => h("option", { value: k }, k)))),
    field("task", "Task", h("select", { name: "task" }, h("option", { value: "classification" }, "classification"), h("option", { value: "regression" }, "regression"))),
    field("n_features", "Features (numbers)", h("input", { name: "n_features", type: "number", value: "4" })),
    field("n_actions", "Actions", h("input", { name: "n_actions", type: "number", value: "3" })),
    field("height", "Height", h("input", { name: "height", type: "number", value: "3" })),
    field("extra", "More settings (JSON)", h("textarea", { name: "extra", rows: 3, placeholder: '{"explorer": "epsilon_greedy", "features": {"age": "numeric"}}' })),
    h("small", { class: "error-text", "data-error-for": "*" }),
    h("div", { class: "row" }, h("button", { class: "primary", type: "submit" }, "Create"), h("button", { type: "button", value: "cancel", onclick: () => dialog.close() }, "Cancel")));
  const dialog = h("dialog", { "aria-label": "New model" }, form);
  document.body.append(dialog);
  dialog.addEventListener("close", () => dialog.remove());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const body = { kind: data.get("kind"), task: data.get("task") };
    for (const k of ["n_features", "n_actions", "height"]) if (data.get(k) !== "") body[k] = Number(data.get(k));
    if (body.task === "regression") delete body.n_actions;
    try {
      const extra = String(data.get("extra") || "").trim();
      if (extra) Object.assign(body, JSON.parse(extra));
      if (body.features) delete body.n_features;
    } catch (err) {
      form.querySelector('[data-error-for="extra"]').textContent = `not JSON: ${err.message}`;
      return;
    }
    try {
      await api.create(String(data.get("name")), body);
      dialog.close();
      toast(`Created ${data.get("name")}`);
      await refresh();
    } catch (err) { showError(err, form); }
  });
  dialog.showModal();
}
