// The public HTTP API, as the console calls it: same origin, the key in a header.
const KEY = "banditree.console.key";

export function getKey() { return sessionStorage.getItem(KEY) || ""; }
export function setKey(key) { key ? sessionStorage.setItem(KEY, key) : sessionStorage.removeItem(KEY); }

/** An API answer other than success: status, detail, the field at fault, per-field errors. */
export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.detail ? String(body.detail) : `HTTP ${status}`);
    this.status = status;
    this.field = body && body.field ? body.field : null;
    this.errors = body && Array.isArray(body.errors) ? body.errors : [];
  }
}

function headers(extra) {
  const out = { Accept: "application/json", ...extra };
  const key = getKey();
  if (key) out.Authorization = `Bearer ${key}`;
  return out;
}

async function answer(response) {
  if (response.status === 204) return null;
  const text = await response.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch { body = { detail: text }; }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

export async function call(method, path, body) {
  const init = { method, headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  return answer(await fetch(path, init));
}

export const get = (path) => call("GET", path);
const m = (name) => `/v1/models/${encodeURIComponent(name)}`;

export const api = {
  models: () => get("/v1/models?view=summary"),
  model: (name) => get(m(name)),
  create: (name, body) => call("PUT", m(name), body),
  remove: (name) => call("DELETE", m(name)),
  setMode: (name, mode) => call("PATCH", m(name), { mode }),
  tree: (name) => get(`${m(name)}/tree`),
  leaves: (name) => get(`${m(name)}/leaves`),
  drift: (name) => get(`${m(name)}/drift`),
  trace: (name, contexts) => call("POST", `${m(name)}/trace`, { contexts }),
  checkpoints: (name) => get(`${m(name)}/checkpoints`),
  checkpointTree: (name, sequence) => get(`${m(name)}/checkpoints/${encodeURIComponent(sequence)}/tree`),
  checkpointNow: (name) => call("POST", `${m(name)}/checkpoints`),
  rollback: (name, version) => call("POST", `${m(name)}/rollback`, { version }),
  whoami: () => get("/v1/whoami"),
  series: () => get("/v1/series"),
  evaluate: (name, body) => call("POST", `${m(name)}/evaluations`, body),
  evaluations: (name) => get(`${m(name)}/evaluations`),
  evaluation: (name, id) => get(`${m(name)}/evaluations/${encodeURIComponent(id)}`),
  deleteEvaluation: (name, id) => call("DELETE", `${m(name)}/evaluations/${encodeURIComponent(id)}`),
  /** The joined log as rows (NDJSON), oldest first: rows with offset above ``since``. */
  async log(name, { since = 0, limit = 1000 } = {}) {
    const response = await fetch(`${m(name)}/log?since=${since}&limit=${limit}`, { headers: headers({ Accept: "application/x-ndjson" }) });
    if (!response.ok) return answer(response);
    const text = await response.text();
    return text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
  },
  /** The newest rows of the log: those among its last ``count`` entries. */
  async recentLog(name, count = 500) {
    const response = await fetch(`${m(name)}/log?last=${count}&limit=${count}`, { headers: headers({ Accept: "application/x-ndjson" }) });
    if (!response.ok) return answer(response);
    const text = await response.text();
    return text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
  },
};
