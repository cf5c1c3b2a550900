// TauBar as an installed web app: its service worker (sw.js) and the Push switch, which
// subscribes this device to pushes when a question waits for the person (off until they
// turn it on), and opening the question a push points at (`#q=<id>`). Loaded after
// app.js, cards.js and panels.js, whose helpers it uses.
"use strict";

const PUSH_TEXTS = {"off":"Push: off","on":"Push: on","unavailable":"Push: unavailable","title":"a push to this device when a question waits, even with TauBar closed","needs_https":"push needs TauBar opened over https (or on this machine)","blocked":"notifications are blocked for this page in the browser's settings","failed":"this device could not be subscribed to pushes","gone":"that question is no longer waiting"};

function pushSupported() {
  return window.isSecureContext && "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;
}

// The service worker, registered once per page; null where there is none.
async function pushRegistration() {
  if (!pushSupported()) return null;
  try {
    await navigator.serviceWorker.register("/sw.js", { scope: "/" });
    return await navigator.serviceWorker.ready;
  } catch (_) {
    return null;
  }
}

async function pushSubscription() {
  const registration = await pushRegistration();
  if (!registration) return null;
  try { return await registration.pushManager.getSubscription(); } catch (_) { return null; }
}

async function showPush() {
  const button = $("push");
  if (!pushSupported()) {
    button.disabled = true;
    button.textContent = PUSH_TEXTS.unavailable;
    button.title = PUSH_TEXTS.needs_https;
    button.setAttribute("aria-pressed", "false");
    return;
  }
  const on = (await pushSubscription()) !== null;
  button.disabled = false;
  button.title = PUSH_TEXTS.title;
  button.textContent = on ? PUSH_TEXTS.on : PUSH_TEXTS.off;
  button.setAttribute("aria-pressed", String(on));
}

// The base64url public key as the bytes `subscribe` takes.
function keyBytes(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

async function turnPushOn() {
  if ((await Notification.requestPermission()) !== "granted") return setStatus(PUSH_TEXTS.blocked);
  const registration = await pushRegistration();
  const key = await api("GET", "/api/push/key");
  if (!registration || key.status !== 200) return setStatus(PUSH_TEXTS.failed);
  let subscription = null;
  try {
    subscription = await registration.pushManager.getSubscription()
      || await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key.data.public_key) });
  } catch (_) {
    return setStatus(PUSH_TEXTS.failed);
  }
  const kept = await api("POST", "/api/push/subscriptions", subscription.toJSON());
  if (kept.status !== 204) {
    await subscription.unsubscribe().catch(() => {});
    setStatus((kept.data && kept.data.error) || PUSH_TEXTS.failed);
  }
}

async function turnPushOff() {
  const subscription = await pushSubscription();
  if (!subscription) return;
  await api("DELETE", "/api/push/subscriptions", { endpoint: subscription.endpoint });
  await subscription.unsubscribe().catch(() => {});
}

$("push").addEventListener("click", async () => {
  $("push").disabled = true;
  if ((await pushSubscription()) !== null) await turnPushOff();
  else await turnPushOn();
  await showPush();
});

// Opens the conversation of question `id` at its card; false when it waits nowhere here.
async function openQuestion(id) {
  const { status, data } = await api("GET", "/api/approvals?channel=all");
  const row = status === 200 && Array.isArray(data) ? data.find((r) => r.id === id) : undefined;
  if (!row || row.channel !== "web") {
    setStatus(PUSH_TEXTS.gone);
    return false;
  }
  await select(row.session);
  const entry = state.cards.get(id);
  if (entry && entry.node) entry.node.scrollIntoView({ block: "center" });
  return true;
}

function questionInHash() {
  return new URLSearchParams(location.hash.slice(1)).get("q");
}

window.addEventListener("hashchange", () => {
  const id = questionInHash();
  if (id && !$("app").hidden) openQuestion(id);
});

// The service worker asks an open TauBar to show the question a push pointed at.
if ("serviceWorker" in navigator) {
  navigator.serviceWorker.addEventListener("message", (event) => {
    const data = event.data || {};
    if (data.type !== "open" || typeof data.url !== "string") return;
    const url = new URL(data.url, location.origin);
    if (url.origin === location.origin) location.hash = url.hash;
  });
}

document.addEventListener("DOMContentLoaded", () => { showPush(); });
