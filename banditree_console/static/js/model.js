// A model's page: a header with its state, tabs, and the tab's own module.
import { api } from "./api.js";
import { fmt, h, showError } from "./dom.js";
export const TABS = ["learning", "policy", "trace", "features", "decisions", "evaluate", "settings"];
/** Each tab's module, loaded when the tab is first opened (the overview loads none). */
const PAGES = { learning: "learning", policy: "policy", trace: "trace", features: "features", decisions: "decisions", evaluate: "evaluate", settings: "settings" };

async function pageRenderer(tab) {
  const module = await import(`./pages/${PAGES[tab]}.js`);
  return module[`render${tab[0].toUpperCase()}${tab.slice(1)}`];
}

export async function renderModel(main, name, tab, rest, ctx) {
  let model;
  try { model = await api.model(name); } catch (err) {
    main.replaceChildren(h("h1", {}, name), h("p", { class: "bad", role: "alert" }, err.message));
    return;
  }
  const c = model.config;
  const tabs = h("nav", { class: "tabs", "aria-label": "Model pages" }, TABS.map((t, i) =>
    h("a", { href: `#/models/${encodeURIComponent(name)}/${t}`, "aria-current": t === tab ? "page" : null, title: `${t} (${i + 1})` },
      t[0].toUpperCase() + t.slice(1))));
  const body = h("section", { id: "tab-body", "aria-label": tab });
  main.replaceChildren(
    h("h1", {}, name, " ", h("span", { class: "badge" }, `${c.kind} · ${c.task} · ${model.mode}`)),
    h("p", { class: "muted" }, `version ${fmt(model.version)} · ${fmt(model.counters.predictions)} decisions · ${fmt(model.counters.feedback)} feedbacks · pending updates ${fmt(model.pending_updates)}`),
    tabs, body);
  try { await (await pageRenderer(tab))(body, model, ctx, rest); } catch (err) { showError(err); body.append(h("p", { class: "bad", role: "alert" }, err.message)); }
  main.focus({ preventScroll: true });
}
