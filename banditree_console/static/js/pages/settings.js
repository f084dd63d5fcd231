// Settings: the configuration, a copy with changes (validated by the API), the mode switch,
// checkpoints and rollback.
import { api } from "../api.js";
import { esc, fmt, h, showError, toast } from "../dom.js";
import { strip } from "./evaluate.js";

export async function renderSettings(body, model, ctx) {
  const config = h("table", { class: "grid", id: "config-table", html: Object.entries({ ...model.config, ...model.policy })
    .map(([k, v]) => `<tr><th scope="row">${esc(k)}</th><td><code>${esc(JSON.stringify(v))}</code></td></tr>`).join("") });
  const checkpoints = h("div", { id: "checkpoints" });
  const switchable = Boolean(model.apprentice); // created with mode apprentice: it may switch
  const mode = h("fieldset", { id: "mode" }, h("legend", {}, "Mode"),
    ["online", "apprentice"].map((m) => h("label", {}, h("input", { type: "radio", name: "mode", value: m, checked: model.mode === m, disabled: !ctx.admin || !switchable }), ` ${m} `)),
    h("small", { class: "muted" }, switchable
      ? "online: the model decides; apprentice: it learns while the caller's default action is played."
      : "This model was created online; a model created with mode apprentice can switch between the two."));
  const copy = h("form", { id: "copy-form", class: "stack" },
    h("h2", {}, "A copy with changes"),
    h("label", {}, h("span", {}, "New name"), h("input", { name: "name", value: `${model.name}-copy` }), h("small", { class: "error-text", "data-error-for": "name" })),
    h("label", {}, h("span", {}, "Changes (JSON)"), h("textarea", { name: "changes", rows: 3 }, '{"height": 4}'), h("small", { class: "error-text", "data-error-for": "changes" })),
    h("small", { class: "error-text", "data-error-for": "*", id: "copy-error" }),
    h("button", { class: "primary", type: "submit", disabled: !ctx.admin }, "Create copy"));
  body.replaceChildren(h("div", { class: "split" }, h("div", {}, h("h2", {}, "Configuration"), config), h("div", {}, mode, h("h2", {}, "Checkpoints"), checkpoints, copy)));

  mode.addEventListener("change", async (event) => {
    try { await api.setMode(model.name, event.target.value); toast(`Mode: ${event.target.value}`); } catch (err) { showError(err); }
  });
  copy.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(copy);
    let changes;
    try { changes = JSON.parse(String(data.get("changes") || "{}")); } catch (err) {
      copy.querySelector('[data-error-for="changes"]').textContent = `not JSON: ${err.message}`;
      return;
    }
    copy.querySelectorAll("[data-error-for]").forEach((e) => { e.textContent = ""; });
    try {
      await api.create(String(data.get("name")), { ...strip(model.config), ...changes });
      toast(`Created ${data.get("name")}`);
    } catch (err) {
      const named = err.field && copy.querySelector(`[data-error-for="${CSS.escape(err.field)}"]`);
      copy.querySelector(named ? `[data-error-for="${CSS.escape(err.field)}"]` : "#copy-error").textContent = err.field && !named ? `${err.field}: ${err.message.replace(`${err.field}: `, "")}` : err.message;
    }
  });

  async function loadCheckpoints() {
    const list = (await api.checkpoints(model.name)).checkpoints;
    const now = Date.now() / 1000;
    checkpoints.innerHTML = `<div class="row">${ctx.admin ? '<button id="checkpoint-now" type="button">Checkpoint now</button>' : ""}</div>` +
      (list.length ? `<table class="grid" id="checkpoints-table"><thead><tr><th>Version</th><th>Written</th><th class="num">Size</th><th></th></tr></thead><tbody>${
        list.map((c) => `<tr><td>${c.version}</td><td>${fmt(Math.round(now - c.created_at))} s ago</td><td class="num">${fmt(c.size_bytes)} B</td><td>${ctx.admin ? `<button data-rollback="${c.version}">Roll back</button>` : ""}</td></tr>`).join("")
      }</tbody></table>` : '<p class="muted">No checkpoint yet.</p>');
  }
  checkpoints.addEventListener("click", async (event) => {
    const b = event.target.closest("button");
    if (!b) return;
    try {
      if (b.id === "checkpoint-now") { await api.checkpointNow(model.name); toast("Checkpoint written"); }
      else if (b.dataset.rollback) { await api.rollback(model.name, Number(b.dataset.rollback)); toast(`Rolled back to version ${b.dataset.rollback}`); }
      await loadCheckpoints();
    } catch (err) { showError(err); }
  });
  await loadCheckpoints();
}
