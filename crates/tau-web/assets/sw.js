// TauBar's service worker: it shows a push as a notification and opens TauBar at the
// question when the notification is pressed. A push says only that something waits and
// where (`{"type":"waiting","url":"/#q=<id>"}`): the notification names no tool and no
// arguments, and TauBar fetches the card over its authenticated API once opened.
"use strict";

const TEXTS = {"title":"tau is waiting for you","body":"A question waits for your answer. Open TauBar to see it."};

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

// Only a locator of this page is followed; anything else opens TauBar's start.
function locator(data) {
  if (data && data.type === "waiting" && typeof data.url === "string" && /^\/#q=[a-z0-9_]{1,80}$/.test(data.url)) {
    return data.url;
  }
  return "/";
}

self.addEventListener("push", (event) => {
  let data = null;
  try { data = event.data ? event.data.json() : null; } catch (_) { data = null; }
  const url = locator(data);
  event.waitUntil(self.registration.showNotification(TEXTS.title, {
    body: TEXTS.body,
    icon: "/icon.svg",
    tag: url,
    data: { url },
  }));
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = new URL(locator({ type: "waiting", url: event.notification.data && event.notification.data.url }), self.location.origin).href;
  event.waitUntil((async () => {
    const pages = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
    const page = pages.find((client) => new URL(client.url).origin === self.location.origin);
    if (page) {
      await page.focus();
      page.postMessage({ type: "open", url });
      return;
    }
    await self.clients.openWindow(url);
  })());
});
