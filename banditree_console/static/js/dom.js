// Small DOM helpers: escaping, building elements, formatting numbers with units.
export function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

/** An element: h("button", {class: "primary", onclick: f}, "text", child). */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "html") el.innerHTML = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function fmt(x, digits = 3) {
  if (x === null || x === undefined || Number.isNaN(x)) return "–";
  if (typeof x !== "number") return String(x);
  if (Number.isInteger(x) && Math.abs(x) < 1e6) return x.toLocaleString("en");
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(2);
  return x.toPrecision(digits).replace(/\.?0+$/, "");
}

export function seconds(s) {
  if (s === null || s === undefined) return "–";
  if (s < 60) return `${Math.round(s)} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

export function toast(text) {
  const el = document.getElementById("toast");
  el.textContent = text;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.textContent = ""; }, 4000);
}

/** Show an API error: next to the field it names when the form has one, else as a toast. */
export function showError(err, form) {
  const named = form && err.field ? form.querySelector(`[data-error-for="${CSS.escape(err.field)}"]`) : null;
  if (form) form.querySelectorAll("[data-error-for]").forEach((e) => { e.textContent = ""; });
  let placed = false;
  for (const item of err.errors || []) {
    const where = form && item.field ? form.querySelector(`[data-error-for="${CSS.escape(item.field)}"]`) : null;
    if (where) { where.textContent = item.message || err.message; placed = true; }
  }
  if (named) { named.textContent = err.message; placed = true; }
  if (!placed) {
    const general = form ? form.querySelector('[data-error-for="*"]') : null;
    if (general) general.textContent = err.message; else toast(err.message);
  }
}

export function download(name, text, type = "application/x-ndjson") {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h("a", { href: url, download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
