// Decisions: the recent log, filtered, and exported as NDJSON.
import { api } from "../api.js";
import { download, esc, fmt, h } from "../dom.js";

const MADE_ID = /^[0-9a-f]{36}$/;

/** Seconds from the decision to its feedback: an event id the service made begins with
 * the decision's time in milliseconds (12 hex digits); null for an id the caller gave. */
export function toFeedback(row) {
  if (!MADE_ID.test(row.event_id)) return null;
  return Math.max(row.time_seconds - parseInt(row.event_id.slice(0, 12), 16) / 1000, 0);
}

function span(s) {
  if (s === null) return "–";
  return s < 1 ? `${Math.round(s * 1000)} ms` : s < 120 ? `${fmt(s)} s` : `${fmt(s / 60)} min`;
}

export async function renderDecisions(body, model) {
  const all = (await api.recentLog(model.name, 2000)).reverse();
  const text = h("input", { type: "search", id: "decisions-filter", "data-filter": "", placeholder: "context contains…  ( / )", "aria-label": "Filter by context" });
  const action = h("input", { type: "number", id: "decisions-action", min: 0, placeholder: "action", "aria-label": "Action", style: "width:7em" });
  const source = h("select", { id: "decisions-source", "aria-label": "Source" }, ["any source", "feedback", "expired"].map((s) => h("option", { value: s === "any source" ? "" : s }, s)));
  const minLoss = h("input", { type: "number", step: "any", id: "decisions-min-loss", placeholder: "loss ≥", "aria-label": "Smallest loss", style: "width:7em" });
  const count = h("span", { class: "muted", id: "decisions-count" });
  const exportButton = h("button", { type: "button", id: "decisions-export" }, "Export shown (NDJSON)");
  const tbody = h("tbody");
  body.replaceChildren(h("div", { class: "row" }, text, action, source, minLoss, count, exportButton),
    h("div", { class: "scroll" }, h("table", { class: "grid", id: "decisions-table" }, h("thead", {}, h("tr", {},
      ["Offset", "Time", "Context", "Action / value", "Probability", "Loss", "To feedback", "Source"].map((t) => h("th", {}, t)))), tbody)));
  let shown = all;
  const apply = () => {
    const needle = text.value.toLowerCase(), a = action.value === "" ? null : Number(action.value), least = minLoss.value === "" ? null : Number(minLoss.value);
    shown = all.filter((r) => (!needle || JSON.stringify(r.context).toLowerCase().includes(needle)) && (a === null || r.action === a)
      && (!source.value || r.source === source.value) && (least === null || (r.loss ?? -Infinity) >= least));
    tbody.innerHTML = shown.slice(0, 500).map((r) => `<tr><td>${r.offset}</td><td>${new Date(r.time_seconds * 1000).toISOString().replace("T", " ").slice(0, 19)}</td>` +
      `<td><code>${esc(JSON.stringify(r.context)).slice(0, 120)}</code></td><td>${r.action ?? fmt(r.value)}</td><td class="num">${fmt(r.propensity)}</td>` +
      `<td class="num">${fmt(r.loss ?? (r.losses ? (r.losses[0] + r.losses[1]) / 2 : null))}</td>` +
      `<td class="num" title="from the decision (its event id's time) to the feedback joined">${span(toFeedback(r))}</td><td>${esc(r.source)}</td></tr>`).join("");
    count.textContent = `${shown.length} of ${all.length} recent rows${shown.length > 500 ? " (first 500 shown)" : ""}`;
  };
  [text, action, source, minLoss].forEach((el) => el.addEventListener("input", apply));
  exportButton.addEventListener("click", () => download(`${model.name}-decisions.ndjson`, shown.map((r) => JSON.stringify(r)).join("\n") + "\n"));
  apply();
}
