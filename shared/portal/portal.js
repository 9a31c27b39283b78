// The customer portal: plain browser JavaScript, no framework, no build step (as the admin page).
// It is opened by a portal link (`/portal?application=…#link=whpl_…`): the token in the fragment
// never reaches a server log; it is exchanged once for an HttpOnly session cookie, then removed
// from the address bar. Every call goes to the documented JSON API with that cookie; each change
// carries the session's CSRF token. Values from the server are inserted as text, never as HTML.

const $ = (id) => document.getElementById(id);

// Where the API is: two folders above this script (`/portal/assets/portal.js` → ``, or under a
// prefix such as `/api` where an ingress mounts the API).
const API_BASE = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

let session = null;
let selected = null; // the endpoint shown
let selectedDelivery = null;
let editing = null; // the endpoint being edited, or null when adding
let catalogue = [];

class Unauthorized extends Error {}

async function api(method, path, body) {
  const res = await fetch(API_BASE + path, {
    method,
    credentials: "same-origin",
    headers: {
      accept: "application/json",
      ...(body !== undefined ? { "content-type": "application/json" } : {}),
      ...(method !== "GET" && session ? { "x-csrf-token": session.csrfToken } : {}),
    },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  if (res.status === 401) throw new Unauthorized("Your portal session has ended. Ask for a new link.");
  const text = await res.text();
  const data = text ? JSON.parse(text) : undefined;
  if (!res.ok) {
    const error = new Error(data?.error?.message ?? `${method} ${path} failed with ${res.status}`);
    error.code = data?.error?.code;
    throw error;
  }
  return data;
}

const enc = encodeURIComponent;
const items = (answer) => Object.values(answer ?? {}).find(Array.isArray) ?? [];

// ---- DOM helpers ---------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(String(child ?? "")));
  return node;
}

function say(text, kind = "info") {
  const m = $("message");
  m.textContent = text;
  m.className = kind;
  m.hidden = !text;
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : "");
const canWrite = () => session?.access === "write";

async function guarded(action) {
  try {
    await action();
  } catch (error) {
    if (error instanceof Unauthorized) return signedOut(error.message);
    say(error.message, "error");
  }
}

// ---- session ---------------------------------------------------------------------------------

async function start() {
  const link = new URLSearchParams(location.hash.slice(1)).get("link");
  if (link) {
    // Out of the address bar (and so of the history) before anything else.
    history.replaceState(null, "", location.pathname + location.search);
    try {
      session = await api("POST", "/portal/sessions", { token: link });
    } catch (error) {
      return signedOut(error.message);
    }
  } else {
    try {
      session = await api("GET", "/portal/session");
    } catch (error) {
      return signedOut(error instanceof Unauthorized ? "Open the portal with the link you were given. Links work once and expire; ask for a new one if yours has." : error.message);
    }
  }
  showSession();
  await guarded(async () => {
    catalogue = items(await api("GET", "/event-types?includeDeprecated=false"));
    await loadEndpoints();
  });
}

function showSession() {
  const theme = session.theme ?? {};
  $("app-name").textContent = theme.name ?? session.applicationName;
  document.title = `${theme.name ?? session.applicationName}: webhooks`;
  if (theme.logoUrl) { $("logo").src = theme.logoUrl; $("logo").hidden = false; }
  // CSSOM, which the page's policy allows (no inline style); the value is validated as #rrggbb.
  if (theme.accentColor) document.documentElement.style.setProperty("--accent", theme.accentColor);
  $("access").textContent = session.access === "write" ? "read-write" : "read-only";
  $("expires").textContent = `session ends ${when(session.expiresAt)}`;
  if (session.returnUrl) { $("return").href = session.returnUrl; $("return").hidden = false; }
  $("session-bar").hidden = false;
  $("portal").hidden = false;
  for (const node of document.querySelectorAll("[data-write]")) node.hidden = !canWrite();
  say("");
}

function signedOut(text) {
  session = null;
  $("portal").hidden = true;
  $("session-bar").hidden = true;
  say(text, "error");
}

$("sign-out").addEventListener("click", () => guarded(async () => {
  const back = session?.returnUrl;
  await api("DELETE", "/portal/session");
  signedOut("Signed out.");
  if (back) window.top.location.href = back;
}));

// ---- endpoints -------------------------------------------------------------------------------

async function loadEndpoints() {
  const subscriptions = items(await api("GET", "/subscriptions?limit=200"));
  const rows = $("endpoint-rows");
  rows.replaceChildren();
  if (subscriptions.length === 0) rows.append(el("tr", {}, el("td", { colspan: 4, class: "empty" }, "No endpoints yet.")));
  for (const s of subscriptions) {
    const rate = el("td", { class: "rate" }, "…");
    const row = el("tr", { "data-id": s.id, class: selected?.id === s.id ? "selected" : "", onclick: () => guarded(() => showEndpoint(s.id)) },
      el("td", {}, el("code", {}, s.url), s.description ? el("div", { class: "muted" }, s.description) : ""),
      el("td", {}, s.eventTypes.join(", ")),
      el("td", {}, statusOf(s)),
      rate);
    rows.append(row);
    api("GET", `/subscriptions/${enc(s.id)}/stats?minutes=1440&bucketMinutes=1440`).then((st) => {
      rate.textContent = st.totals.successRate === null ? "no attempts" : `${(st.totals.successRate * 100).toFixed(1)} % of ${st.totals.attempts}`;
    }, () => { rate.textContent = ""; });
  }
}

const statusOf = (s) => (s.paused ? "paused" : s.status === "disabled" ? `disabled: ${s.health?.disabledReason ?? ""}` : s.status);

function eventTypeChoices(chosen) {
  const list = $("event-type-list");
  list.replaceChildren();
  const names = catalogue.map((t) => t.name);
  for (const t of catalogue) {
    list.append(el("label", { class: "choice" }, el("input", { type: "checkbox", value: t.name, checked: chosen.includes(t.name) }), ` ${t.name}`, t.description ? el("span", { class: "muted" }, ` ${t.description}`) : ""));
  }
  // Without a catalogue (or for patterns beyond it), free text.
  $("event-type-free").value = chosen.filter((c) => !names.includes(c)).join(", ") || (catalogue.length === 0 ? "*" : "");
}

function chosenEventTypes() {
  const checked = [...document.querySelectorAll("#event-type-list input:checked")].map((i) => i.value);
  const free = $("event-type-free").value.split(",").map((s) => s.trim()).filter(Boolean);
  return [...new Set([...checked, ...free])];
}

function openForm(endpoint) {
  editing = endpoint;
  $("endpoint-form-title").textContent = endpoint ? `Edit ${endpoint.id}` : "Add an endpoint";
  $("endpoint-url").value = endpoint?.url ?? "";
  $("endpoint-description").value = endpoint?.description ?? "";
  eventTypeChoices(endpoint?.eventTypes ?? []);
  $("endpoint-error").hidden = true;
  $("endpoint-form").hidden = false;
  $("endpoint-url").focus();
}

$("add-endpoint").addEventListener("click", () => openForm(null));
$("endpoint-cancel").addEventListener("click", () => { $("endpoint-form").hidden = true; });
$("endpoint-form").addEventListener("submit", (e) => {
  e.preventDefault();
  guarded(async () => {
    const body = { url: $("endpoint-url").value.trim(), description: $("endpoint-description").value.trim() || null, eventTypes: chosenEventTypes() };
    try {
      const saved = editing
        ? await api("PATCH", `/subscriptions/${enc(editing.id)}`, body)
        : await api("POST", "/subscriptions", { ...body, description: body.description ?? undefined });
      $("endpoint-form").hidden = true;
      await loadEndpoints();
      await showEndpoint(saved.id);
      if (!editing && saved.secrets?.[0]) showSecret(saved.secrets);
      say(editing ? "Endpoint saved." : "Endpoint added. Its signing secret is shown below.");
    } catch (error) {
      if (error instanceof Unauthorized) throw error;
      // The API's own message: the same validation and destination policy as every caller's.
      $("endpoint-error").textContent = error.message;
      $("endpoint-error").hidden = false;
    }
  });
});

async function showEndpoint(id) {
  selected = await api("GET", `/subscriptions/${enc(id)}`);
  selectedDelivery = null;
  $("delivery").hidden = true;
  $("endpoint").hidden = false;
  $("endpoint-id").textContent = selected.id;
  const facts = $("endpoint-facts");
  facts.replaceChildren(
    el("dt", {}, "URL"), el("dd", {}, el("code", {}, selected.url)),
    el("dt", {}, "Event types"), el("dd", {}, selected.eventTypes.join(", ")),
    el("dt", {}, "Status"), el("dd", { id: "endpoint-status" }, statusOf(selected)),
    el("dt", {}, "Created"), el("dd", {}, when(selected.createdAt)),
  );
  if (selected.description) facts.prepend(el("dt", {}, "Description"), el("dd", {}, selected.description));
  $("pause-endpoint").textContent = selected.paused ? "Resume" : "Pause";
  $("secret").textContent = "••••••••••••••••";
  $("reveal-secret").hidden = !canWrite();
  for (const row of document.querySelectorAll("#endpoint-rows tr")) row.classList.toggle("selected", row.dataset.id === id);
  await Promise.all([loadStats(), loadDeliveries()]);
}

function showSecret(secrets) {
  const node = $("secret");
  node.replaceChildren(...secrets.flatMap((s, i) => [i ? el("br") : "", s]));
  $("reveal-secret").hidden = true;
}

$("edit-endpoint").addEventListener("click", () => openForm(selected));
$("pause-endpoint").addEventListener("click", () => guarded(async () => {
  await api("POST", `/subscriptions/${enc(selected.id)}/${selected.paused ? "resume" : "pause"}`);
  await showEndpoint(selected.id);
  await loadEndpoints();
}));
$("delete-endpoint").addEventListener("click", () => guarded(async () => {
  if (!confirm(`Delete the endpoint ${selected.url}? Its pending deliveries are cancelled.`)) return;
  await api("DELETE", `/subscriptions/${enc(selected.id)}`);
  selected = null;
  $("endpoint").hidden = true;
  $("delivery").hidden = true;
  await loadEndpoints();
  say("Endpoint deleted.");
}));
$("send-test").addEventListener("click", () => guarded(async () => {
  await api("POST", `/subscriptions/${enc(selected.id)}/test`);
  say("Test event sent; it appears under Deliveries.");
  setTimeout(() => guarded(loadDeliveries), 1000);
}));
$("reveal-secret").addEventListener("click", () => guarded(async () => {
  showSecret((await api("GET", `/subscriptions/${enc(selected.id)}/secrets`)).secrets);
}));
$("rotate-secret").addEventListener("click", () => guarded(async () => {
  if (!confirm("Rotate the signing secret? The current one keeps signing beside the new one until the next rotation.")) return;
  const rotated = await api("POST", `/subscriptions/${enc(selected.id)}/secrets`);
  showSecret(rotated.secrets);
  say("Secret rotated: deliveries are now signed with the new secret and the previous one.");
}));

// ---- success rate and latency ----------------------------------------------------------------

async function loadStats() {
  const stats = await api("GET", `/subscriptions/${enc(selected.id)}/stats?minutes=1440&bucketMinutes=60`);
  const t = stats.totals;
  $("stats-totals").textContent = t.attempts === 0 ? "No attempts in the last 24 hours."
    : `${t.attempts} attempts, ${(t.successRate * 100).toFixed(1)} % delivered; latency ${t.latencyMsAvg ?? "–"} ms mean, ${t.latencyMsP95 ?? "–"} ms p95.`;
  const chart = $("chart");
  const most = Math.max(1, ...stats.buckets.map((b) => b.attempts));
  chart.replaceChildren(...stats.buckets.map((b) => {
    const ok = el("span", { class: "ok" });
    const bad = el("span", { class: "bad" });
    // Heights through the CSSOM (the policy forbids inline style attributes, not this).
    ok.style.height = `${(b.delivered / most) * 100}%`;
    bad.style.height = `${(b.failed / most) * 100}%`;
    return el("div", { class: "column", title: `${when(b.start)}: ${b.delivered} delivered, ${b.failed} failed${b.latencyMsP95 !== null ? `, p95 ${b.latencyMsP95} ms` : ""}` }, bad, ok);
  }));
}

// ---- deliveries --------------------------------------------------------------------------------

async function loadDeliveries() {
  const status = $("delivery-status").value;
  const answer = await api("GET", `/deliveries?subscriptionId=${enc(selected.id)}&limit=100${status ? `&status=${status}` : ""}`);
  const deliveries = items(answer).reverse(); // newest first
  const rows = $("delivery-rows");
  rows.replaceChildren();
  if (deliveries.length === 0) rows.append(el("tr", {}, el("td", { colspan: 6, class: "empty" }, "No deliveries.")));
  for (const d of deliveries) {
    const box = el("input", { type: "checkbox", value: d.id, "aria-label": `Select ${d.id}`, onclick: (e) => { e.stopPropagation(); updateReplayButton(); } });
    box.hidden = !canWrite();
    rows.append(el("tr", { "data-id": d.id, class: d.id === selectedDelivery?.id ? "selected" : "", onclick: () => guarded(() => showDelivery(d.id)) },
      el("td", {}, box), el("td", {}, el("code", {}, d.eventId)), el("td", {}, d.eventType),
      el("td", { class: `status ${d.status}` }, d.status === "dead" ? "failed" : d.status), el("td", {}, d.attempts), el("td", {}, when(d.createdAt))));
  }
  $("select-all").checked = false;
  updateReplayButton();
}

function updateReplayButton() {
  $("replay-selected").disabled = document.querySelectorAll("#delivery-rows input:checked").length === 0;
}

$("delivery-status").addEventListener("change", () => guarded(loadDeliveries));
$("select-all").addEventListener("change", () => {
  for (const box of document.querySelectorAll("#delivery-rows input[type=checkbox]")) box.checked = $("select-all").checked;
  updateReplayButton();
});

async function showDelivery(id) {
  const [delivery, attempts] = await Promise.all([api("GET", `/deliveries/${enc(id)}`), api("GET", `/deliveries/${enc(id)}/attempts`)]);
  selectedDelivery = delivery;
  const event = await api("GET", `/events/${enc(delivery.eventId)}`);
  $("delivery").hidden = false;
  $("delivery-id").textContent = delivery.id;
  let pretty = event.body;
  try { pretty = JSON.stringify(JSON.parse(event.body), null, 2); } catch { /* shown as sent */ }
  $("payload").textContent = pretty;
  const list = $("attempts");
  list.replaceChildren();
  const rows = items(attempts);
  if (rows.length === 0) list.append(el("p", { class: "muted" }, delivery.status === "pending" ? "Not attempted yet." : "No attempts."));
  for (const a of rows) {
    const headers = a.requestHeaders ? Object.entries(a.requestHeaders).map(([k, v]) => `${k}: ${v}`).join("\n") : "(not recorded for this attempt)";
    list.append(el("article", { class: `attempt ${a.result}` },
      el("h4", {}, `#${a.attemptNumber} · ${when(a.createdAt)} · `, el("span", { class: "response-status" }, a.status === null ? (a.errorClass ?? "no response") : `HTTP ${a.status}`), ` · ${a.latencyMs} ms · ${a.result}`),
      el("div", { class: "two" },
        el("div", {}, el("h5", {}, "Request headers"), el("pre", { class: "request-headers" }, headers)),
        el("div", {}, el("h5", {}, "Response body (excerpt)"), el("pre", { class: "response-body" }, a.responseExcerpt ?? "(none)")))));
  }
  for (const row of document.querySelectorAll("#delivery-rows tr")) row.classList.toggle("selected", row.dataset.id === id);
}

// A dead letter is replayed (its attempts start again); any other delivery is sent again as a new
// delivery of the same event to this endpoint (a resend).
async function replay(ids) {
  const chosen = items(await api("GET", `/deliveries?subscriptionId=${enc(selected.id)}&limit=1000`)).filter((d) => ids.includes(d.id));
  const dead = chosen.filter((d) => d.status === "dead").map((d) => d.id);
  let replayed = 0;
  if (dead.length) replayed += (await api("POST", "/dead-letters/replay", { ids: dead })).replayed.length;
  for (const d of chosen.filter((x) => x.status !== "dead")) {
    replayed += (await api("POST", `/events/${enc(d.eventId)}/resend`, { subscriptionId: selected.id })).deliveries.length;
  }
  say(`Replayed ${replayed} deliver${replayed === 1 ? "y" : "ies"}.`);
  setTimeout(() => guarded(loadDeliveries), 800);
  return replayed;
}

$("replay-delivery").addEventListener("click", () => guarded(() => replay([selectedDelivery.id])));
$("replay-selected").addEventListener("click", () => guarded(() => replay([...document.querySelectorAll("#delivery-rows input:checked")].map((b) => b.value))));

start();
