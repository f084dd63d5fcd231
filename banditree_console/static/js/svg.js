// Hand-written SVG charts: a sparkline and a line chart with a legend and marks.
import { esc, fmt } from "./dom.js";

/** A sparkline of ``values`` (numbers, nulls skipped) as SVG text. */
export function sparkline(values, width = 100, height = 22) {
  const ys = values.filter((v) => v !== null && Number.isFinite(v));
  if (ys.length < 2) return `<svg width="${width}" height="${height}" aria-hidden="true"></svg>`;
  const lo = Math.min(...ys), hi = Math.max(...ys), span = hi - lo || 1;
  const step = width / (values.length - 1);
  const pts = [];
  values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) return;
    pts.push(`${(i * step).toFixed(1)},${(height - 2 - ((v - lo) / span) * (height - 4)).toFixed(1)}`);
  });
  return `<svg width="${width}" height="${height}" role="img" aria-label="loss trend"><polyline class="spark" points="${pts.join(" ")}"/></svg>`;
}

/**
 * A line chart: ``series`` = [{name, points: [[x, y], ...]}], ``marks`` = x positions (or
 * {x, title}) drawn as vertical lines (drift signals).  Returns SVG text.
 */
export function lineChart(series, { width = 720, height = 240, marks = [], xLabel = "", yLabel = "" } = {}) {
  const all = series.flatMap((s) => s.points).filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y));
  if (!all.length) return `<p class="muted">No points yet.</p>`;
  const pad = { l: 48, r: 12, t: 10, b: 30 };
  const xs = all.map((p) => p[0]), ys = all.map((p) => p[1]);
  const x0 = Math.min(...xs), x1 = Math.max(...xs) || 1, y0 = Math.min(0, ...ys), y1 = Math.max(...ys) || 1;
  const sx = (x) => pad.l + ((x - x0) / (x1 - x0 || 1)) * (width - pad.l - pad.r);
  const sy = (y) => height - pad.b - ((y - y0) / (y1 - y0 || 1)) * (height - pad.t - pad.b);
  const lines = series.map((s, i) => {
    const pts = s.points.filter(([x, y]) => Number.isFinite(x) && Number.isFinite(y))
      .map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(" ");
    return `<polyline class="series s${i}" points="${pts}"><title>${esc(s.name)}</title></polyline>`;
  }).join("");
  const ticks = [y0, (y0 + y1) / 2, y1].map((y) => `<text x="4" y="${sy(y) + 4}">${fmt(y)}</text>`).join("");
  const xt = [x0, x1].map((x, i) => `<text x="${sx(x) - (i ? 40 : 0)}" y="${height - 8}">${fmt(x)}</text>`).join("");
  const drift = marks.map((m) => (typeof m === "number" ? { x: m, title: "drift signal" } : m))
    .map(({ x, title }) => `<line class="drift" x1="${sx(x)}" x2="${sx(x)}" y1="${pad.t}" y2="${height - pad.b}"><title>${esc(title)}</title></line>`).join("");
  const legend = series.map((s, i) => `<span><i class="s${i}"></i>${esc(s.name)}</span>`).join("") +
    (marks.length ? '<span><i class="drift"></i>drift signal</span>' : "");
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="${esc(yLabel)} by ${esc(xLabel)}">
    <line class="axis" x1="${pad.l}" x2="${width - pad.r}" y1="${height - pad.b}" y2="${height - pad.b}"/>
    <line class="axis" x1="${pad.l}" x2="${pad.l}" y1="${pad.t}" y2="${height - pad.b}"/>
    ${ticks}${xt}${drift}${lines}
    <text x="${width / 2}" y="${height - 2}">${esc(xLabel)}</text></svg>
    <div class="legend">${legend}</div>`;
}
