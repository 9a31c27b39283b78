// The admin page client: plain browser JavaScript, no framework, no build step of its own.
// It talks to the same JSON management API as the CLI, through the same generated client
// (./client.js, built from client.ts), with the bearer token kept in
// sessionStorage (this tab only). Every value from the server is inserted as text, never as HTML:
// partner payloads and error excerpts are untrusted.

import { connect, Unauthorized } from "./client.js";

const TOKEN_KEY = "webhooks.adminToken";
const REFRESH_MS = 3000;
const $ = (id) => document.getElementById(id);

let timer = null;
let selectedDelivery = null;
// Who the token is (GET /me): the page shows only what its scope allows. An application key sees
// its own application's subscriptions, deliveries and dead letters, and no operator section; a
// read-only key sees no button that changes something. The server enforces the same on every call.
let scope = { kind: "bootstrap", applicationId: null, access: "write" };
const isOperator = () => scope.applicationId === null;
const canWrite = () => scope.access === "write";

// ---- API ---------------------------------------------------------------------------------

// Where the API is: the folder above this script's (`/admin/app.js` → ``, `/api/admin/app.js` →
// `/api` when an ingress mounts the API under a prefix, as the cloud stacks do).
const API_BASE = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

// Every call is an operation of /openapi.json, typed by the generated client in client.ts
// (bundled as client.js, `npm run generate:client`): `api.listDeadLetters(query)`, named by operationId.
const api = connect(API_BASE, () => sessionStorage.getItem(TOKEN_KEY) ?? undefined);

// An operator may narrow the lists to one application (an application key is confined to its own).
function inApplication(query = {}) {
  const chosen = isOperator() ? $("application").value : "";
  return chosen ? { ...query, applicationId: chosen } : query;
}

// List answers wrap their rows in one named array: { deadLetters: [...] }, { entries: [...] }, …
const items = (answer) => (Array.isArray(answer) ? answer : Object.values(answer ?? {}).find(Array.isArray) ?? []);

// ---- DOM helpers ---------------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== undefined && c !== null) node.append(c instanceof Node ? c : String(c));
  return node;
}

// An id or a URL in monospace, as words (each kept whole, app.css) with a break opportunity after
// each separator: `evt_1:sub_2` may break after ":", a URL after "/", "?", "&", never in the
// middle of a word (nor at its hyphens, where a browser would break plain text).
const code = (value) => el("code", {}, ...String(value).split(/(?<=[:/?&=])/).flatMap((part, i) => [i ? el("wbr") : null, el("span", { class: "w" }, part)]));

const isEmpty = (value) => value === null || value === undefined || value === "";
const td = (value, cls) => (isEmpty(value) ? el("td", { class: "none" }, "–") : el("td", { class: cls }, value));
const badge = (text, kind = text) => el("span", { class: `badge ${kind}` }, text);
const RESULT_KIND = { delivered: "delivered", retryable: "pending", permanent: "dead", gone: "dead" };
const when = (iso) => (iso ? new Date(iso).toLocaleString() : null);

function fill(tbody, rows, columns, empty) {
  tbody.replaceChildren(...(rows.length ? rows.map(columns) : [el("tr", {}, el("td", { class: "empty", colspan: 9 }, empty))]));
  // On a phone each row is a card (app.css): its cells carry their column's name to show.
  const labels = [...tbody.closest("table").querySelectorAll("thead th")].filter((th) => !th.hidden).map((th) => th.textContent);
  for (const tr of tbody.children) [...tr.children].forEach((cell, i) => { if (labels[i] && cell.colSpan === 1) cell.dataset.label = labels[i]; });
}

function showError(error) {
  if (error instanceof Unauthorized) return signOut("The token was refused; enter it again.");
  $("error").textContent = error ? error.message : "";
}

// ---- Paging: each list shows PAGE_SIZE rows and pages on with the API's cursor ------------------

const PAGE_SIZE = 100;
// Per list, the cursors of the pages opened so far (null: the first page); the last one is shown.
const cursors = { dead: [null], quarantine: [null], inbox: [null], delivery: [null], subscription: [null], catalogue: [null] };
const firstPage = (...lists) => { for (const list of lists) cursors[list] = [null]; };
const paged = (list) => {
  const cursor = cursors[list].at(-1);
  return cursor ? { limit: PAGE_SIZE, cursor } : { limit: PAGE_SIZE };
};

/** Below a list: which rows these are, and Previous / Next when there are other pages. */
function pager(list, answer, shown, reload) {
  const stack = cursors[list];
  const go = (change) => () => { change(); reload().catch(showError); };
  const from = (stack.length - 1) * PAGE_SIZE;
  $(`${list}-pager`).hidden = stack.length === 1 && !answer.next;
  $(`${list}-pager`).replaceChildren(
    el("span", {}, shown ? `rows ${from + 1}–${from + shown}` : "no rows on this page"),
    stack.length > 1 ? el("button", { type: "button", onclick: go(() => stack.pop()) }, "‹ Previous") : "",
    answer.next ? el("button", { type: "button", onclick: go(() => stack.push(answer.next)) }, "Next ›") : "",
  );
}

/** A list's page (`fetchPage({ limit, cursor })`): its rows, and the pager drawn; a page emptied meanwhile (replayed) goes back one. */
async function loadPage(list, fetchPage, reload) {
  const answer = await fetchPage(paged(list));
  const rows = items(answer);
  if (rows.length === 0 && cursors[list].length > 1) {
    cursors[list].pop();
    return loadPage(list, fetchPage, reload);
  }
  pager(list, answer, rows.length, reload);
  return rows;
}

// ---- Sections ------------------------------------------------------------------------------

const healthOf = (status) => (status === "active" ? "healthy" : status);

/** One change (`call`, e.g. a replay) from its button, then the page again. */
async function act(call, button) {
  button.disabled = true;
  try {
    await call();
    await refresh();
  } catch (error) {
    showError(error);
    button.disabled = false;
  }
}

// The counts are the true ones (GET …/count), not the length of the page shown.
function showCount(id, count) {
  $(id).textContent = String(count);
  $(id).classList.toggle("alert", count > 0);
}

async function loadDeadLetters() {
  const [rows, { count }] = await Promise.all([
    loadPage("dead", (page) => api.listDeadLetters(inApplication(page)), loadDeadLetters),
    api.countDeadLetters(inApplication()),
  ]);
  showCount("dead-count", count);
  $("dead-replay-all").disabled = count === 0;
  fill($("dead-rows"), rows, (d) => el("tr", { "data-id": d.id },
    td(code(d.id)),
    td(d.eventType),
    td(d.attempts),
    td(when(d.deadAt)),
    td(d.deadReason, "reason"),
    el("td", {}, canWrite() ? el("button", { type: "button", onclick: (e) => act(() => api.replayDeadLetter(d.id), e.currentTarget) }, "Replay") : ""),
  ), "No dead letters.");
}

async function loadQuarantine() {
  const [rows, { count }] = await Promise.all([
    loadPage("quarantine", (page) => api.listInbox({ ...page, status: "quarantined" }), loadQuarantine),
    api.countInbox({ status: "quarantined" }),
  ]);
  showCount("quarantine-count", count);
  $("quarantine-replay-all").disabled = count === 0;
  fill($("quarantine-rows"), rows, (q) => el("tr", { "data-id": q.id },
    td(code(q.id)),
    td(q.partnerName),
    td(code(q.partnerEventId)),
    td(q.eventType),
    td(when(q.receivedAt)),
    td(q.quarantineReason ?? q.lastError, "reason"),
    el("td", {}, canWrite() ? el("button", { type: "button", onclick: (e) => act(() => api.replayInboxEntry(q.id), e.currentTarget) }, "Replay") : ""),
  ), "No quarantined entries.");
}

/** Every inbound webhook, newest first (or those of one status): what partners sent and what became of it. */
async function loadInbox() {
  const status = $("inbox-status").value;
  const rows = await loadPage("inbox", (page) => api.listInbox(status ? { ...page, status } : page), loadInbox);
  fill($("inbox-rows"), rows, (e) => el("tr", { "data-id": e.id },
    td(code(e.id)),
    td(e.partnerName),
    td(code(e.partnerEventId)),
    td(e.eventType),
    td(badge(e.status, { processed: "delivered", quarantined: "dead", failed: "dead" }[e.status] ?? "pending")),
    td(e.deferrals),
    td(when(e.receivedAt)),
  ), status ? `No ${status} inbox entries.` : "No inbox entries.");
}

async function loadDeliveries() {
  const status = $("delivery-status").value;
  const rows = await loadPage("delivery", (page) => api.listDeliveries(inApplication(status ? { ...page, status } : page)), loadDeliveries);
  fill($("delivery-rows"), rows, (d) => el("tr", { "data-id": d.id, class: d.id === selectedDelivery ? "selected" : undefined },
    td(code(d.id)),
    td(d.eventType),
    td(badge(d.status)),
    td(d.attempts),
    td(d.lastStatus ?? d.lastError),
    td(when(d.updatedAt ?? d.deliveredAt ?? d.createdAt)),
    el("td", {}, el("button", { type: "button", onclick: () => showAttempts(d.id) }, "Attempts")),
  ), status ? `No ${status} deliveries.` : "No deliveries.");
  if (selectedDelivery) await loadAttempts();
}

async function showAttempts(id) {
  selectedDelivery = id;
  $("attempts").hidden = false;
  $("attempts-of").textContent = id;
  for (const tr of $("delivery-rows").children) tr.classList.toggle("selected", tr.dataset.id === id);
  await loadAttempts().catch(showError);
}

async function loadAttempts() {
  const rows = items(await api.listAttempts(selectedDelivery));
  fill($("attempt-rows"), rows, (a) => el("tr", {},
    td(a.probe ? `${a.attemptNumber} (probe)` : a.attemptNumber),
    td(badge(a.result, RESULT_KIND[a.result] ?? "dead")),
    td(a.status),
    td(a.latencyMs !== undefined ? `${a.latencyMs} ms` : null),
    a.errorClass
      ? el("td", { class: "reason" }, a.errorClass, a.responseExcerpt ? el("span", { class: "excerpt" }, ` ${a.responseExcerpt}`) : "")
      : td(a.responseExcerpt, "excerpt"),
    td(when(a.createdAt)),
  ), "No attempts yet.");
}

async function loadSubscriptions() {
  const rows = await loadPage("subscription", (page) => api.listSubscriptions(inApplication(page)), loadSubscriptions);
  fill($("subscription-rows"), rows, (s) => el("tr", { "data-id": s.id },
    td(code(s.id)),
    // Operators see whose it is; an application key sees its own only.
    isOperator() ? td(code(s.applicationId)) : null,
    el("td", {}, badge(healthOf(s.status)), s.paused ? badge("paused") : "", s.health?.destinationRefused ? badge("refused", "dead") : ""),
    td(s.health?.consecutiveFailures),
    destinationOf(s),
    typesOf(s),
    // A URL this platform's policy refuses (ALLOWED_DESTINATIONS) says so beside its health.
    td(s.health?.destinationRefused ?? s.health?.disabledReason, "reason"),
    el("td", {}, ...subscriptionActions(s)),
  ), "No subscriptions.");
  await loadOrderingKeys(rows.filter((s) => s.ordered));
}

/** Source text (a transformation, a JSON Schema) folded under its name: opened on demand, shown as text. */
const folded = (summary, text) => el("details", { class: "source" }, el("summary", {}, summary), el("pre", {}, text));

/**
 * A subscription's event types, and under them its content filter and transformation (issue 30)
 * as given: which events of those types it gets, and what is sent instead of each. In the types'
 * cell rather than a column of their own, so a table of subscriptions without them is no wider.
 */
function typesOf(s) {
  const types = (s.eventTypes ?? []).join(", ");
  if (!s.filter && !s.transformation && !s.auth) return td(types);
  return el("td", { class: "content" }, types,
    s.filter ? el("div", { class: "filter" }, "filter ", code(JSON.stringify(s.filter))) : "",
    s.transformation ? folded("transformation", s.transformation) : "",
    s.auth ? el("div", { class: "auth" }, "auth ", authOf(s.auth)) : "");
}

/**
 * Where a subscription delivers (issue 31): an endpoint's URL, or a queue or broker's kind, where
 * it is, its settings, and who the relay sends as; the API answers no secret part of credentials
 * (an access key's id, a connection string's policy name, a service account, a user name at most).
 */
function destinationOf(s) {
  const d = s.destination;
  if (!d || d.kind === "http") return td(code(s.url));
  const where = { sqs: d.queueUrl, sns: d.topicArn, eventbridge: d.eventBus, servicebus: `${d.namespace} ${d.queue != null ? `queue ${d.queue}` : `topic ${d.topic}`}`, pubsub: d.topic, rabbitmq: d.url }[d.kind] ?? s.url;
  const settings = [
    d.region && d.kind !== "sns" ? `region ${d.region}` : "",
    d.fifo ? "FIFO" : "",
    d.kind === "eventbridge" ? `source ${d.source}, detail-type ${d.detailType ?? "the event's type"}` : "",
    d.kind === "rabbitmq" ? `exchange ${JSON.stringify(d.exchange)}, routing key ${JSON.stringify(d.routingKey)}` : "",
    d.endpoint ? `via ${d.endpoint}` : "",
    d.emulator ? "emulator" : "",
  ].filter(Boolean).join(", ");
  return el("td", { class: "destination" }, badge(d.kind, "off"), " ", code(where),
    settings ? el("div", { class: "settings" }, settings) : "",
    el("div", { class: "sends-as" }, "sends as ", sendsAs(d)));
}

/** Who the relay sends to a queue destination as: its own cloud identity, or the readable part of stored credentials. */
function sendsAs(d) {
  const c = d.credentials;
  if (d.kind === "pubsub" && d.emulator) return "no one (emulator)";
  if (!c) return "the relay's own cloud identity";
  if (c.accessKeyId) return `access key ${c.accessKeyId}`;
  if (c.clientEmail) return `service account ${c.clientEmail}`;
  if (c.username) return `user ${c.username}`;
  return `connection string${c.keyName ? ` (policy ${c.keyName})` : ""}`;
}

/**
 * How the relay authenticates to the endpoint (issue 29), as the API answers it: never a secret.
 * A client certificate that has expired or expires within 30 days is flagged.
 */
function authOf(auth) {
  if (auth.kind === "basic") return `basic (user ${auth.username})`;
  if (auth.kind === "oauth2ClientCredentials") return `OAuth 2.0 client ${auth.clientId} at ${auth.tokenUrl}${auth.scope ? `, scope ${auth.scope}` : ""}`;
  const c = auth.certificate;
  return el("span", {}, `mTLS ${c.subject}, until ${c.notAfter} `,
    c.expired ? badge("expired", "dead") : c.expiresSoon ? badge(`expires in ${c.expiresInDays} d`, "pending") : "");
}

/**
 * Inbound forwarding (issue 30): each forwarding partner's destinations, with the filter that
 * chooses their events and the transformation applied; a partner without any says so (its events
 * are stored and processed, not forwarded). Its subscription is listed with the others.
 */
async function loadForwarding() {
  const { partners } = await api.listForwarding();
  const rows = partners.flatMap((f) => (f.destinations.length ? f.destinations.map((d) => ({ f, d })) : [{ f, d: null }]));
  fill($("forwarding-rows"), rows, ({ f, d }) => el("tr", { "data-id": `${f.partner} ${d?.name ?? ""}` },
    td(f.partner),
    d ? td(code(d.name)) : td("no destinations: stored, not forwarded", "none"),
    td(d ? code(d.url) : null),
    d && (d.filter || d.transformation)
      ? el("td", { class: "content" }, d.filter ? el("div", { class: "filter" }, "filter ", code(JSON.stringify(d.filter))) : "", d.transformation ? folded("transformation", d.transformation) : "")
      : td(d ? "every event" : null),
    d ? el("td", {}, badge(healthOf(d.status)), d.paused ? badge("paused") : "", d.source === "config" ? badge("PARTNERS", "off") : "") : td(null),
    td(d ? code(d.subscriptionId) : null),
  ), "No partner forwards (set \"forward\" in PARTNERS).");
}

/** Operational event types, by prefix (shared/operationalEvents.ts, authEvents.ts, encryptionKeyEvents.ts, deliveryExhaustedEvents.ts, alerts.ts). */
const OPERATIONAL_PREFIXES = ["endpoint.", "auth.", "encryption_key.", "delivery.", "inbox.", "alert."];
/** Most operational events shown, each read in full for what it is about. */
const OPERATIONAL_SHOWN = 10;

/**
 * The recent operational events (issue 29): the platform application's own events, newest first,
 * each with what it is about (a subscription, a key id, a delivery) and why. Operators only.
 */
async function loadOperationalEvents() {
  const recent = items(await api.listEvents({ applicationId: "app_platform", limit: 100 }))
    .filter((e) => OPERATIONAL_PREFIXES.some((p) => e.type.startsWith(p)))
    .slice(0, OPERATIONAL_SHOWN);
  const details = await Promise.all(recent.map((e) => api.getEvent(e.id).catch(() => e)));
  fill($("operational-rows"), details, (e) => {
    const d = e.data ?? {};
    return el("tr", { "data-id": e.id },
      td(when(e.createdAt)),
      td(badge(e.type, e.type === "endpoint.recovered" || e.type === "endpoint.enabled" ? "delivered" : "dead")),
      // The most precise subject: a dead letter's delivery, a quarantined entry (`entryId` in
      // alert.inbox_quarantined and inbox.quarantined), else the subscription (with how many dead
      // letters, for delivery.exhausted) or key.
      d.deliveryId ? td(code(d.deliveryId))
        : (d.inboxEntryId ?? d.entryId) ? td(code(`inbox ${d.inboxEntryId ?? d.entryId}`))
        : d.subscriptionId ? el("td", {}, code(d.subscriptionId), typeof d.count === "number" ? ` (${d.count} dead letter${d.count === 1 ? "" : "s"})` : "")
        : td(d.keyId ? `key ${d.keyId}` : null),
      td(d.errorClass ?? d.reason ?? (d.deliveriesWaiting !== undefined ? `${d.deliveriesWaiting} deliveries waiting` : null), "reason"));
  }, "No operational events.");
}

/**
 * The event catalogue (issue 30): the event types of the chosen application (all applications:
 * the default one's; an application key: its own), with version, validation at enqueue,
 * deprecation, and the JSON Schema and examples a subscriber reads.
 */
async function loadCatalogue() {
  const rows = await loadPage("catalogue", (page) => api.listEventTypes(inApplication(page)), loadCatalogue);
  fill($("catalogue-rows"), rows, (t) => el("tr", { "data-id": t.name },
    td(code(t.name)),
    isOperator() ? td(code(t.applicationId)) : null,
    td(`v${t.version}`),
    el("td", {}, badge(t.validation, { off: "off", warn: "pending", enforce: "delivered" }[t.validation]), t.deprecated ? badge("deprecated", "dead") : ""),
    td(t.description),
    t.schema || t.examples.length
      ? el("td", {}, t.schema ? folded("schema", JSON.stringify(t.schema, null, 2)) : "", t.examples.length ? folded(`examples (${t.examples.length})`, t.examples.map((x) => JSON.stringify(x, null, 2)).join("\n\n")) : "")
      : td(null),
  ), "No event types in the catalogue.");
}

/**
 * Ordered subscriptions' keys with work (issue 15): the delivery whose turn it is, how many wait
 * behind it, and, when a dead letter blocks the key, a Skip button (the dead letter stays; the next
 * delivery goes). The skip names the dead letter it saw, so a stale page never skips another one.
 */
async function loadOrderingKeys(ordered) {
  const lists = await Promise.all(ordered.map(async (s) => ({ s, keys: items(await api.listOrderingKeys(s.id, { limit: 100 })) })));
  const rows = lists.flatMap(({ s, keys }) => keys.map((k) => ({ s, k })));
  fill($("ordering-rows"), rows, ({ s, k }) => el("tr", { "data-id": `${s.id} ${k.orderingKey}` },
    td(code(s.id)),
    td(code(k.orderingKey)),
    td(badge(k.blocked ? "blocked" : "moving", k.blocked ? "dead" : "pending")),
    td(k.waiting),
    td(k.head ? code(k.head.id) : "(dead letter purged)"),
    td(k.head?.deadReason, "reason"),
    el("td", {}, k.blocked && canWrite() ? el("button", {
      type: "button",
      onclick: async (e) => {
        e.currentTarget.disabled = true;
        try {
          await api.skipOrderingKey(s.id, k.orderingKey, k.head ? { deliveryId: k.head.id } : {});
        } catch (error) {
          showError(error);
        }
        await refresh();
      },
    }, "Skip") : ""),
  ), ordered.length ? "No ordering key has work." : "No ordered subscriptions.");
}

/** Re-enable (when not healthy), pause or resume, send a test event, delete: each one documented operation. */
function subscriptionActions(s) {
  const button = (label, onclick) => el("button", { type: "button", onclick }, label);
  if (!canWrite()) return [];
  return [
    s.status === "active" ? "" : button("Re-enable", (e) => act(() => api.enableSubscription(s.id), e.currentTarget)),
    s.paused ? button("Resume", (e) => act(() => api.resumeSubscription(s.id), e.currentTarget)) : button("Pause", (e) => act(() => api.pauseSubscription(s.id), e.currentTarget)),
    button("Send test", (e) => act(() => api.sendTestEvent(s.id), e.currentTarget)),
    button("Delete", (e) => {
      if (confirm(`Delete ${s.id}? Its pending deliveries are cancelled (kept as history).`)) act(() => api.deleteSubscription(s.id), e.currentTarget);
    }),
  ];
}

// ---- Chart: deliveries per minute by outcome, as inline SVG (stacked bars) -----------------------

const SERIES = [
  { key: "delivered", label: "delivered", color: "#1a7f37" },
  { key: "retried", label: "failed, will retry", color: "#d4a72c" },
  { key: "failed", label: "failed, not retried", color: "#fa4549" },
  { key: "deadLettered", label: "dead letters (not replayed yet)", color: "#6e2b9e" },
];

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

async function loadChart() {
  const { series } = await api.deliveriesPerMinute(inApplication({ minutes: 60 }));
  const W = 1000, H = 180, left = 36, bottom = 20, top = 8;
  const max = Math.max(1, ...series.map((m) => SERIES.reduce((sum, s) => sum + m[s.key], 0)));
  const step = (W - left) / series.length;
  const y = (v) => top + (H - top - bottom) * (1 - v / max);
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: "none" });
  for (const tick of [0, Math.round(max / 2), max]) {
    root.append(svg("line", { x1: left, x2: W, y1: y(tick), y2: y(tick), stroke: "#d9dee6", "stroke-width": 1 }));
    root.append(svg("text", { x: left - 4, y: y(tick) + 4, "text-anchor": "end", "font-size": 11, fill: "#5b6473" }, String(tick)));
  }
  series.forEach((m, i) => {
    let base = 0;
    for (const s of SERIES) {
      const v = m[s.key];
      if (!v) continue;
      const rect = svg("rect", { x: left + i * step + 1, width: Math.max(1, step - 2), y: y(base + v), height: y(base) - y(base + v), fill: s.color });
      rect.append(svg("title", {}, `${new Date(m.minute).toLocaleTimeString()}: ${v} ${s.label}`));
      root.append(rect);
      base += v;
    }
    if (i % 10 === 0) root.append(svg("text", { x: left + i * step, y: H - 4, "font-size": 11, fill: "#5b6473" }, new Date(m.minute).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })));
  });
  $("chart").replaceChildren(root);
  $("legend").replaceChildren(...SERIES.map((s) => {
    const total = series.reduce((sum, m) => sum + m[s.key], 0);
    const swatch = el("i");
    swatch.style.background = s.color;
    return el("li", {}, swatch, `${s.label}: ${total}`);
  }));
}

// ---- Lifecycle -------------------------------------------------------------------------------

/** The platform's health problems (GET /healthz `problems`), above everything: they say why nothing is sent. */
async function loadProblems() {
  const health = await api.health();
  const problems = health.problems ?? [];
  $("problems").replaceChildren(...problems.map((p) => el("li", {}, p)));
  $("problems").hidden = problems.length === 0;
}

async function refresh() {
  // The chart and the inbox are operators' (an application key is refused them): not even asked for.
  const sections = isOperator() ? [loadProblems(), loadChart(), loadDeadLetters(), loadQuarantine(), loadInbox(), loadForwarding(), loadDeliveries(), loadSubscriptions(), loadCatalogue(), loadOperationalEvents()] : [loadDeadLetters(), loadDeliveries(), loadSubscriptions(), loadCatalogue()];
  const results = await Promise.allSettled(sections);
  const failed = results.find((r) => r.status === "rejected");
  showError(failed?.reason);
  $("refreshed").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

/** Learns the token's scope and shows or hides the sections and buttons by it. */
async function applyScope() {
  scope = await api.whoAmI();
  for (const node of document.querySelectorAll("[data-operator]")) node.hidden = !isOperator();
  for (const node of document.querySelectorAll("[data-write]")) node.hidden = !canWrite();
  const access = canWrite() ? "read-write" : "read-only";
  if (isOperator()) {
    $("scope").textContent = `${scope.kind === "bootstrap" ? "admin token" : `operator key ${scope.keyId}`} · ${access}`;
    const options = items(await api.listApplications({ limit: 1000 })).map((a) => el("option", { value: a.id }, `${a.name} (${a.id})`));
    const chosen = $("application").value;
    $("application").replaceChildren(el("option", { value: "" }, "all applications"), ...options);
    $("application").value = chosen;
  } else {
    const app = await api.getApplication(scope.applicationId);
    $("scope").textContent = `application ${app.name} (${app.id}) · ${access}`;
  }
}

async function signIn() {
  try {
    await applyScope();
  } catch (error) {
    return signOut(error instanceof Unauthorized ? "That token was refused. Use an API key or the ADMIN_TOKEN printed at start." : error.message);
  }
  $("login").hidden = true;
  $("app").hidden = false;
  $("session").hidden = false;
  refresh();
  clearInterval(timer);
  timer = setInterval(() => { if (!document.hidden) refresh(); }, REFRESH_MS);
}

function signOut(message) {
  clearInterval(timer);
  sessionStorage.removeItem(TOKEN_KEY);
  $("app").hidden = true;
  $("session").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = message ?? "";
  $("token").focus();
}

async function bulk(call, noun, button) {
  if (!confirm(`Replay every ${noun}? Each goes through the normal path again.`)) return;
  button.disabled = true;
  try {
    const answer = await call();
    $("error").textContent = "";
    $("refreshed").textContent = `replayed ${answer?.replayed?.length ?? 0}`;
  } catch (error) {
    showError(error);
  }
  await refresh();
}

$("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("token").value.trim());
  $("token").value = "";
  await signIn();
});
$("signout").addEventListener("click", () => signOut());
$("application").addEventListener("change", () => { selectedDelivery = null; $("attempts").hidden = true; firstPage("dead", "delivery", "subscription", "catalogue"); refresh(); });
$("refresh").addEventListener("click", () => refresh());
$("delivery-status").addEventListener("change", () => { selectedDelivery = null; $("attempts").hidden = true; firstPage("delivery"); loadDeliveries().catch(showError); });
$("dead-replay-all").addEventListener("click", (e) => bulk(() => api.replayDeadLetters({ filter: isOperator() && $("application").value ? { applicationId: $("application").value } : {} }), "dead letter", e.currentTarget));
$("inbox-status").addEventListener("change", () => { firstPage("inbox"); loadInbox().catch(showError); });
$("quarantine-replay-all").addEventListener("click", (e) => bulk(() => api.replayInbox({ status: "quarantined" }), "quarantined inbox entry", e.currentTarget));

// Links may preselect the lists (`/admin?deliveries=delivered&inbox=any`, as the demo prints).
for (const [param, select] of [["deliveries", "delivery-status"], ["inbox", "inbox-status"]]) {
  const wanted = new URLSearchParams(location.search).get(param);
  if (wanted !== null) $(select).value = wanted === "any" ? "" : wanted;
}

if (sessionStorage.getItem(TOKEN_KEY)) signIn();
else signOut();
