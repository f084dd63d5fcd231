// Learning: progressive loss from the model's own log (windowed and cumulative) against
// uniform play and the best constant action (self-normalised inverse-propensity estimates
// on the same rows), exploration share, and the change detector's signals marked where the
// feedback that set each one off sits in the log.
import { api } from "../api.js";
import { fmt, h } from "../dom.js";
import { lineChart } from "../svg.js";

const ROWS = 5000, WINDOW = 200;

/** Running figures over the log rows: x = the row's place in the log. */
export function learningSeries(rows, nActions) {
  const windowed = [], cumulative = [], uniform = [], explored = [];
  let sum = 0, uniformSum = 0, n = 0, weightSum = 0, weightSquares = 0, win = [], ex = [];
  const perAction = new Float64Array(Math.max(nActions, 1)), perActionWeight = new Float64Array(Math.max(nActions, 1));
  const losses = rows.map((r) => (r.loss ?? (r.losses ? (r.losses[0] + r.losses[1]) / 2 : null)));
  rows.forEach((r, i) => {
    const loss = losses[i];
    if (loss === null) return;
    sum += loss; n += 1; win.push(loss); if (win.length > WINDOW) win.shift();
    const x = r.offset;
    cumulative.push([x, sum / n]);
    if (win.length === WINDOW || i === rows.length - 1) windowed.push([x, win.reduce((a, b) => a + b, 0) / win.length]);
    if (nActions && r.action !== null && r.propensity > 0) {
      const w = 1 / nActions / r.propensity; // uniform play's probability over the logged one
      uniformSum += w * loss; weightSum += w; weightSquares += w * w;
      perAction[r.action] += loss / r.propensity; perActionWeight[r.action] += 1 / r.propensity;
      uniform.push([x, uniformSum / weightSum]);
      ex.push(r.action !== r.greedy_action ? 1 : 0); if (ex.length > WINDOW) ex.shift();
      explored.push([x, ex.reduce((a, b) => a + b, 0) / ex.length]);
    }
  });
  // each action's loss where it was played, weighted by 1 / propensity (actions never played: none)
  const constants = Array.from(perAction, (s, a) => (perActionWeight[a] ? s / perActionWeight[a] : Infinity));
  const bestConstant = nActions && n && Number.isFinite(Math.min(...constants)) ? Math.min(...constants) : null;
  // the effective share of rows behind the uniform-play estimate (1: as many as logged)
  const support = weightSquares ? (weightSum * weightSum) / weightSquares / n : null;
  return { windowed, cumulative, uniform, explored, bestConstant, n, support };
}

/** Drift signals (``GET .../drift`` events) as chart marks at their rows' offsets; the
 * signals older than the rows shown are counted in ``older``. */
export function driftMarks(events, rows) {
  const at = new Map(rows.map((r) => [r.event_id, r.offset]));
  const marks = [];
  let older = 0;
  for (const e of events) {
    const x = at.get(e.event_id);
    if (x === undefined) { older += 1; continue; }
    marks.push({ x, title: `drift signal ${e.signal} (${e.test} test) at feedback ${e.feedback}, version ${e.version}` });
  }
  return { marks, older };
}

export async function renderLearning(body, model) {
  const [rows, drift] = await Promise.all([api.recentLog(model.name, ROWS), api.drift(model.name)]);
  const { marks, older } = driftMarks(drift.events, rows);
  const nActions = model.config.task === "classification" ? model.config.n_actions || 0 : 0;
  const s = learningSeries(rows, nActions);
  const series = [{ name: `windowed loss (${WINDOW} rows)`, points: s.windowed }, { name: "cumulative loss", points: s.cumulative }];
  if (s.uniform.length) series.push({ name: "uniform play (SNIPS)", points: s.uniform });
  if (s.bestConstant !== null && s.cumulative.length) {
    const xs = s.cumulative.map((p) => p[0]);
    series.push({ name: "best constant action (SNIPS)", points: [[xs[0], s.bestConstant], [xs[xs.length - 1], s.bestConstant]] });
  }
  const a = model.apprentice;
  const last = (list) => (list.length ? list[list.length - 1][1] : null);
  body.replaceChildren(
    h("div", { class: "cards" },
      card("Progressive loss", fmt(model.counters.progressive_mean_loss), "every feedback learned"),
      card("Windowed loss", fmt(last(s.windowed)), `last ${WINDOW} log rows; first ${WINDOW}: ${fmt(s.windowed.length ? s.windowed[0][1] : null)}`),
      card("Uniform play", fmt(last(s.uniform)), s.support !== null && s.support < 0.1
        ? `SNIPS, unreliable: the log explored little (effective rows ${fmt(100 * s.support, 2)}%)` : "SNIPS estimate on the same rows"),
      card("Best constant", fmt(s.bestConstant), "SNIPS, the best single action played"),
      card("Exploration share", s.explored.length ? `${fmt(100 * last(s.explored), 3)}%` : "–", "played ≠ greedy, windowed"),
      a ? card("Apprentice agreement", a.agreement_rate === null ? "–" : `${fmt(100 * a.agreement_rate, 3)}%`, `${fmt(a.decisions_compared)} compared`) : null),
    h("h2", {}, "Loss over the log"),
    h("p", { class: "muted", id: "drift-note" }, `${fmt(rows.length)} most recent log rows (x: log offset). ` +
      (drift.signals ? `Drift signals: ${fmt(drift.signals)} in all; ${fmt(marks.length)} marked by a vertical line` +
        (older ? `, ${fmt(older)} before these rows` : "") +
        (drift.signals > drift.events.length ? ` (the newest ${fmt(drift.events.length)} are kept)` : "") + "."
        : "No drift signal: the change detector has not seen the loss rise.")),
    h("div", { id: "loss-chart", html: lineChart(series, { xLabel: "log offset", yLabel: "loss", marks }) }),
    s.explored.length ? h("h2", {}, "Exploration share") : null,
    s.explored.length ? h("div", { id: "explore-chart", html: lineChart([{ name: "played ≠ greedy", points: s.explored }], { height: 160, xLabel: "log offset", yLabel: "share", marks }) }) : null);
}

export function card(title, value, note) {
  return h("div", { class: "card" }, h("div", { class: "muted" }, title), h("div", { class: "value" }, value), h("small", { class: "muted" }, note));
}
