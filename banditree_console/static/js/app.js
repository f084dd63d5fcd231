// The console's entry: theme, key, keyboard shortcuts and the hash router.
import { api, getKey, setKey } from "./api.js";
import { h } from "./dom.js";
import { renderOverview } from "./overview.js";
import { renderModel, TABS } from "./model.js";

const THEME = "banditree.console.theme";
const state = { role: "unknown", stop: null, prefetched: null };

function applyTheme(theme) {
  document.documentElement.dataset.theme = theme;
  const button = document.getElementById("theme-button");
  button.textContent = theme === "dark" ? "Light" : "Dark";
  button.setAttribute("aria-pressed", String(theme === "dark"));
}

function toggleTheme() {
  const next = document.documentElement.dataset.theme === "dark" ? "light" : "dark";
  localStorage.setItem(THEME, next);
  applyTheme(next);
}

/** Whether the key may change things: asks the API which role the key holds. */
async function detectRole() {
  try {
    const who = await api.whoami();
    state.role = who.roles.includes("admin") ? "admin" : "read";
  } catch {
    state.role = "read";
  }
  document.getElementById("role").textContent = state.role === "admin" ? "admin" : "read-only";
  document.body.dataset.role = state.role;
}

function crumbs(parts) {
  const nav = document.getElementById("crumbs");
  nav.replaceChildren(...parts.map(([text, href]) => (href ? h("a", { href }, text) : h("span", { "aria-current": "page" }, text))));
}

async function route() {
  if (state.stop) { state.stop(); state.stop = null; }
  const main = document.getElementById("main");
  const hash = location.hash.replace(/^#\/?/, "");
  const [head, name, tab, ...rest] = hash.split("/").map(decodeURIComponent);
  const ctx = { admin: state.role === "admin", onStop: (f) => { state.stop = f; }, prefetched: state.prefetched };
  state.prefetched = null;
  if (head === "models" && name) {
    crumbs([["Models", "#/"], [name, null]]);
    await renderModel(main, name, TABS.includes(tab) ? tab : "learning", rest, ctx);
  } else {
    crumbs([["Models", null]]);
    await renderOverview(main, ctx);
  }
}

function keyboard(event) {
  const typing = /^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName) || event.target.isContentEditable;
  if (typing || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === "t") toggleTheme();
  else if (event.key === "/") { const f = document.querySelector("[data-filter]"); if (f) { event.preventDefault(); f.focus(); } }
  else if (event.key === "g") location.hash = "#/";
  else if (/^[1-7]$/.test(event.key) && location.hash.startsWith("#/models/")) {
    const link = document.querySelectorAll(".tabs a")[Number(event.key) - 1];
    if (link) link.click();
  }
}

function keyDialog() {
  const dialog = document.getElementById("key-dialog");
  document.getElementById("key-input").value = getKey();
  dialog.showModal();
  dialog.addEventListener("close", async () => {
    if (dialog.returnValue === "save") setKey(document.getElementById("key-input").value.trim());
    else if (dialog.returnValue === "clear") setKey("");
    await detectRole();
    route();
  }, { once: true });
}

async function start() {
  applyTheme(localStorage.getItem(THEME) || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
  document.getElementById("theme-button").addEventListener("click", toggleTheme);
  document.getElementById("key-button").addEventListener("click", keyDialog);
  document.addEventListener("keydown", keyboard);
  window.addEventListener("hashchange", route);
  // the overview's models are asked for while the key's role is (two requests at once)
  if (!location.hash.startsWith("#/models/")) {
    state.prefetched = api.models();
    state.prefetched.catch(() => {}); // handled where the overview awaits it
  }
  await detectRole();
  await route();
  document.body.dataset.ready = "true";
}

start();
