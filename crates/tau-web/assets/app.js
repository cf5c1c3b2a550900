// TauBar. Uses only tau's JSON API. Everything a model, a tool or a peer wrote arrives in
// the API's display view (escaped by tau's display function on the server) and is set
// with textContent, never as HTML.
//
// Four scripts, run in this order: app.js (the helpers, login, the conversations, the
// transcript and its live events, the start), cards.js (the questions' cards and what waits
// elsewhere), panels.js (notifications, channels, routines, grants, decisions), push.js
// (the service worker, the Push switch, a push's question opened).
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  sessions: [], current: null, source: null, live: null, calls: new Map(), cards: new Map(),
  // The grants and routines' calls last listed: a card whose yes made a grant shows it.
  grants: [],
  // The ids of the questions already announced; null until the first list (what waits when
  // the page opens is listed, not announced).
  seen: null, audio: null,
};

// A count with its noun: "1 message", "2 messages" (never "1 messages").
function counted(count, one, many) {
  return `${count.toLocaleString("en-US")} ${count === 1 ? one : many}`;
}

// A phone's width: the side panel is a drawer, and what waits elsewhere starts folded.
const PHONE = window.matchMedia("(max-width: 720px)");

// On a phone the bar keeps one line: Notify and Sound go into the drawer, and come back
// to the bar on a wider screen (the same buttons, so their state and focus go with them).
function placeToggles() {
  const toggles = $("toggles");
  const home = PHONE.matches ? $("drawer-toggles") : $("new-session").parentElement;
  if (toggles.parentElement === home) return;
  if (PHONE.matches) home.append(toggles);
  else home.insertBefore(toggles, $("new-session"));
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// Rebuilds a list; when the keyboard was on one of its buttons, the same item's new button
// takes focus again, so a refresh never drops the person's place on the page.
function rebuild(list, key, build) {
  const active = document.activeElement;
  const kept = list.contains(active) && active.dataset ? active.dataset[key] : undefined;
  build();
  if (kept === undefined) return;
  const again = [...list.querySelectorAll("button")].find((button) => button.dataset[key] === kept);
  if (again) again.focus({ preventScroll: true });
}

async function api(method, path, body) {
  const init = { method, credentials: "same-origin", headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  const text = await response.text();
  if (text) {
    try { data = JSON.parse(text); } catch (_) { data = null; }
  }
  if (response.status === 401) showLogin();
  return { status: response.status, data };
}

// ---- login ----

async function login(token) {
  const response = await fetch("/api/login", {
    method: "POST",
    credentials: "same-origin",
    headers: { Authorization: "Bearer " + token },
  });
  return response.status === 204;
}

function showLogin(message) {
  $("app").hidden = true;
  $("login").hidden = false;
  const error = $("login-error");
  error.hidden = !message;
  error.textContent = message || "";
}

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const token = $("login-token").value.trim();
  if (!token) return;
  if (await login(token)) {
    $("login-token").value = "";
    start();
  } else {
    showLogin("That is not the token.");
  }
});

// ---- sessions ----

function when(text) {
  const date = new Date(text);
  return isNaN(date) ? text : date.toLocaleString();
}

async function loadSessions() {
  const search = $("session-search").value.trim();
  const query = search ? `&search=${encodeURIComponent(search)}` : "";
  const { status, data } = await api("GET", `/api/sessions?display=true${query}`);
  if (status !== 200) return;
  state.sessions = data;
  updateComposer();
  const list = $("session-list");
  rebuild(list, "session", () => showSessions(list, data));
}

function showSessions(list, data) {
  list.replaceChildren();
  for (const session of data) {
    // A chat nobody wrote in yet is not listed, unless it is the open one.
    if (session.kind === "chat" && session.message_count === 0 && session.id !== state.current) continue;
    const item = el("li", session.id === state.current ? "current" : "");
    const button = el("button");
    button.type = "button";
    button.dataset.session = session.id;
    const routine = session.kind === "routine";
    // Named by its first prompt (as the display view shows it); its id stays on hover.
    const title = el("span", "title", routine ? `⚙ routine ${session.routine}` : (session.title || session.id));
    button.title = session.id;
    if (session.pending_approvals > 0) title.append(el("span", "badge", session.pending_approvals));
    const origin = routine ? `${session.trigger} · ` : "";
    const meta = el("span", "meta", `${origin}${counted(session.message_count, "message", "messages")} · ${when(session.updated_at)}${session.busy ? " · working" : ""}`);
    button.append(title, meta);
    button.addEventListener("click", () => {
      openDrawer(false);
      select(session.id);
    });
    item.append(button);
    if (session.id === state.current && !routine) item.append(sessionActions(session));
    list.append(item);
  }
}

// Rename and Delete for the open chat. A title is the person's text; the page shows it
// through the display view like every other.
function sessionActions(session) {
  const actions = el("div", "session-actions");
  const rename = el("button", "link rename", "Rename");
  rename.type = "button";
  rename.dataset.session = `rename:${session.id}`;
  rename.addEventListener("click", async () => {
    const title = window.prompt("A title for this chat (empty: its first message's)", session.title || "");
    if (title === null) return;
    const body = { title: title.trim() ? title : null };
    const { status, data } = await api("PATCH", `/api/sessions/${encodeURIComponent(session.id)}`, body);
    if (status !== 200) setStatus((data && data.error) || "the chat was not renamed");
    await loadSessions();
  });
  const remove = el("button", "link delete", "Delete");
  remove.type = "button";
  remove.dataset.session = `delete:${session.id}`;
  remove.addEventListener("click", async () => {
    if (!window.confirm("Delete this chat and all its messages?")) return;
    const { status, data } = await api("DELETE", `/api/sessions/${encodeURIComponent(session.id)}`);
    if (status !== 204) {
      setStatus((data && data.error) || "the chat was not deleted");
      return;
    }
    if (state.source) state.source.close();
    state.source = null;
    state.current = null;
    history.replaceState(null, "", "#");
    transcript().replaceChildren();
    await loadSessions();
  });
  actions.append(rename, remove);
  return actions;
}

let searching = null;
$("session-search").addEventListener("input", () => {
  clearTimeout(searching);
  searching = setTimeout(loadSessions, 200);
});

// The routine whose conversation is open, when it is a routine's.
function currentRoutine() {
  const session = state.sessions.find((s) => s.id === state.current);
  return session && session.kind === "routine" ? session : null;
}

// A routine's conversation takes its prompts from its trigger: nobody writes there.
function updateComposer() {
  const routine = currentRoutine();
  $("prompt").disabled = $("send").disabled = !!routine;
  $("prompt").placeholder = routine
    ? `routine ${routine.routine}'s conversation: its prompts come from ${routine.trigger}`
    : "Message tau…";
}

// A prompt: a person's ("you"), or in a routine's conversation the routine's, with what
// fired it, never "you".
function addPrompt(text) {
  const routine = currentRoutine();
  if (!routine) return addMessage("you", text);
  const node = el("div", "msg routine");
  node.append(el("div", "from", `routine ${routine.routine} · ${routine.trigger}`), el("div", "", text));
  transcript().append(node);
  scrollDown();
  return node;
}

$("new-session").addEventListener("click", async () => {
  const { status, data } = await api("POST", "/api/sessions");
  if (status === 201) {
    await select(data.id);
    $("prompt").focus();
  }
});

// The drawer of chats on a phone; the button says whether it is open.
function openDrawer(open) {
  $("sessions").classList.toggle("open", open);
  $("toggle-sessions").setAttribute("aria-expanded", String(open));
}

$("toggle-sessions").addEventListener("click", () => openDrawer(!$("sessions").classList.contains("open")));

// ---- transcript ----

function transcript() {
  return $("transcript");
}

function scrollDown() {
  const box = transcript();
  box.scrollTop = box.scrollHeight;
}

// Whether the end of the transcript is in view: when the transcript then gets shorter (the
// list of what waits elsewhere comes, a phone's keyboard opens), its end stays in view, so
// a card that just came keeps its Approve and Reject on screen.
let atEnd = true;
transcript().addEventListener("scroll", () => {
  const box = transcript();
  atEnd = box.scrollHeight - box.scrollTop - box.clientHeight < 8;
});
new ResizeObserver(() => {
  if (atEnd) scrollDown();
}).observe(transcript());

function addMessage(who, text) {
  const node = el("div", "msg " + who, text);
  transcript().append(node);
  scrollDown();
  return node;
}

function decidedText(decidedBy) {
  if (!decidedBy) return "";
  switch (decidedBy.kind) {
    case "person": return "by " + (decidedBy.user ? decidedBy.user + " on " : "you on ") + decidedBy.channel;
    case "timeout": return "expired";
    case "superseded": return "superseded by a newer message";
    case "policy": return "by tau's rules";
    case "exemption": return "by routine " + decidedBy.name;
    case "cancelled": return "cancelled";
    case "end_of_input": return "input ended";
    case "approver_failed": return "the question failed";
    default: return decidedBy.kind;
  }
}

// One line per tool call: tier, name, arguments, then status and who decided.
function callNode(id, tool, tier, args) {
  let entry = state.calls.get(id);
  if (entry) return entry;
  const node = el("div", "call" + (tier === 2 ? " tier-2" : ""));
  const head = el("div", "head");
  const tierPill = el("span", "pill tier", tier === null || tier === undefined ? "tier ?" : "tier " + tier);
  const name = el("span", "name mono", tool);
  const status = el("span", "pill state", "running");
  const decided = el("span", "decided meta");
  head.append(tierPill, name, status, decided);
  const argsNode = el("div", "args mono", args);
  const result = el("div", "result mono");
  result.hidden = true;
  node.append(head, argsNode, result);
  transcript().append(node);
  entry = { node, tierPill, status, decided, result };
  state.calls.set(id, entry);
  scrollDown();
  return entry;
}

function finishCall(entry, status, decidedBy, summary) {
  entry.finished = status;
  entry.node.classList.add(status);
  entry.status.textContent = status.replace("_", " ");
  entry.decided.textContent = decidedText(decidedBy);
  if (summary) {
    entry.result.hidden = false;
    entry.result.textContent = summary;
  }
}

// The lines of a text block shown before "N more lines" (tau's OUTPUT_LINES).
const OUTPUT_LINES = 8;

// Whether a call's output is shown under it: a success's, and a failure's when it has
// fields (a command that exited non-zero); other texts are tau's own and on the line.
function worthShowing(status, blocks) {
  if (status === "success") return blocks.length > 0;
  if (status === "error") return blocks.some((block) => block.type === "field");
  return false;
}

// What a call gave back, as text: its fields on one line, each text's first lines, and
// "N more lines" that opens the rest. Escaped once, on the server; set as text.
function showOutput(entry, blocks) {
  const box = entry.result;
  box.replaceChildren();
  box.hidden = false;
  box.classList.add("output");
  const fields = blocks.filter((block) => block.type === "field").map((block) => `${block.name} ${block.value}`);
  if (fields.length > 0) box.append(el("div", "fields", fields.join(" · ")));
  for (const block of blocks) {
    if (block.type !== "text") continue;
    if (block.name) box.append(el("div", "block-name", block.name));
    const lines = String(block.text).replace(/\n$/, "").split("\n");
    const text = el("pre", "block", lines.slice(0, OUTPUT_LINES).join("\n"));
    box.append(text);
    if (lines.length > OUTPUT_LINES) {
      const more = el("button", "link more-lines", `${counted(lines.length - OUTPUT_LINES, "more line", "more lines")}`);
      more.type = "button";
      more.addEventListener("click", () => {
        text.textContent = lines.join("\n");
        more.remove();
        // The text the button opened takes its focus.
        text.tabIndex = -1;
        text.focus();
      });
      box.append(more);
    }
  }
}

async function loadTranscript(session) {
  const [messages, rows] = await Promise.all([
    api("GET", `/api/sessions/${encodeURIComponent(session)}/messages?display=true`),
    api("GET", "/api/approvals?display=true"),
  ]);
  if (messages.status !== 200 || state.current !== session) return;
  const asked = new Map();
  for (const row of rows.data || []) if (row.session === session) asked.set(row.call_id, row);
  const box = transcript();
  // This conversation's cards are the same nodes after a reload (a button in hand stays
  // the button that answers).
  const cards = [...state.cards.values()].filter((entry) => entry.session === session);
  // A card taken out and put back loses the keyboard's focus; it is given back below.
  const focused = cards.some((entry) => entry.node.contains(document.activeElement)) ? document.activeElement : null;
  box.replaceChildren();
  state.calls.clear();
  state.live = null;
  if (messages.data.length === 0) box.append(el("p", "empty", "Say something to tau."));
  for (const message of messages.data) {
    for (const block of message.content) {
      if (block.text !== undefined) {
        if (message.role === "user") addPrompt(block.text);
        else addMessage("tau", block.text);
      } else if (block.toolUse) {
        const use = block.toolUse;
        const row = asked.get(use.toolUseId);
        const entry = callNode(use.toolUseId, use.name, row ? row.tier : null, use.input);
        if (row) {
          entry.decided.textContent = row.state === "pending" ? "waiting for you" : decidedText(row.decided_by);
        } else {
          entry.tierPill.textContent = "no question";
        }
        entry.status.textContent = "waiting";
      } else if (block.toolResult) {
        const result = block.toolResult;
        const entry = state.calls.get(result.toolUseId);
        if (entry) {
          const blocks = Array.isArray(result.blocks) ? result.blocks : [];
          if (worthShowing(result.status, blocks)) {
            finishCall(entry, result.status, null, null);
            showOutput(entry, blocks);
          } else {
            const text = blocks.filter((block) => block.type === "text").map((block) => block.text).join("\n");
            finishCall(entry, result.status, null, text.slice(0, 200));
          }
          const row = asked.get(result.toolUseId);
          if (row) entry.decided.textContent = decidedText(row.decided_by);
        }
      }
    }
  }
  // Every question of the conversation is a card below its call, a decided one with its
  // outcome as it was shown live: the same nodes while the page has them, drawn again
  // from the store after a reload.
  const mine = (rows.data || []).filter((row) => row.session === session && row.channel === "web");
  for (const row of mine) {
    if (state.cards.has(row.id)) continue;
    card(row);
    if (row.state !== "pending") closeCard(row.id, row.state, row.decided_by);
  }
  const order = mine.map((row) => state.cards.get(row.id)).filter((entry) => entry);
  for (const entry of cards) if (!order.includes(entry)) order.push(entry);
  for (const entry of order) placeCard(entry.node, entry.callId);
  showReceipts(state.grants);
  if (focused && focused.isConnected) focused.focus({ preventScroll: true });
  scrollDown();
}

// ---- live events ----

function onEvent(event) {
  switch (event.type) {
    case "text_delta":
      if (!state.live) state.live = addMessage("tau", "");
      state.live.textContent += event.text;
      scrollDown();
      return;
    case "tool_call_started": {
      state.live = null;
      callNode(event.call_id, event.tool, event.tier, event.arguments);
      return;
    }
    case "tool_progress": {
      const entry = state.calls.get(event.call_id);
      if (entry) {
        entry.result.hidden = false;
        entry.result.textContent = event.message;
      }
      return;
    }
    case "approval_requested": {
      const entry = state.calls.get(event.call_id);
      if (entry) {
        entry.status.textContent = "waiting";
        entry.decided.textContent = "waiting for you";
      }
      loadApprovals();
      return;
    }
    case "approval_decided": {
      const entry = state.calls.get(event.call_id);
      if (entry) entry.decided.textContent = decidedText(event.decided_by);
      closeCard(event.approval_id, event.decision, event.decided_by);
      loadApprovals();
      loadDecisions();
      return;
    }
    case "tool_call_finished": {
      state.live = null;
      const entry = callNode(event.call_id, event.tool, null, "");
      finishCall(entry, event.status, event.decided_by, event.result_summary);
      // What ran is in the history once the call finished.
      loadDecisions();
      return;
    }
    case "tool_output": {
      const entry = state.calls.get(event.call_id);
      if (entry && Array.isArray(event.blocks) && worthShowing(entry.finished, event.blocks)) showOutput(entry, event.blocks);
      return;
    }
    case "notice":
      state.live = null;
      transcript().append(el("div", "notice", event.text));
      scrollDown();
      return;
    case "turn_ended":
      state.live = null;
      setStatus(event.stop_reason === "interrupt" ? "waiting for your answer" : "");
      loadSessions();
      return;
    default:
      return;
  }
}

function listen(session) {
  if (state.source) state.source.close();
  const source = new EventSource(`/api/sessions/${encodeURIComponent(session)}/events?display=true`);
  source.onmessage = (message) => {
    try { onEvent(JSON.parse(message.data)); } catch (_) { /* a malformed event is skipped */ }
  };
  source.addEventListener("prompt", (message) => {
    try {
      const data = JSON.parse(message.data);
      const empty = transcript().querySelector(".empty");
      if (empty) empty.remove();
      state.live = null;
      addPrompt(data.text);
      setStatus("tau is working…");
    } catch (_) { /* skipped */ }
  });
  source.addEventListener("lagged", async () => {
    await loadTranscript(session);
    loadApprovals();
  });
  let broken = false;
  source.onerror = () => {
    broken = true;
    setStatus("reconnecting…");
  };
  source.onopen = () => {
    setStatus("");
    // Whatever happened while the stream was down is in the store.
    if (broken) {
      broken = false;
      loadTranscript(session);
      loadApprovals();
    }
  };
  state.source = source;
}

function setStatus(text) {
  $("status").textContent = text;
}

async function select(session) {
  state.current = session;
  updateComposer();
  history.replaceState(null, "", "#session=" + encodeURIComponent(session));
  listen(session);
  await loadTranscript(session);
  await Promise.all([loadSessions(), loadApprovals()]);
}

$("composer").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("prompt").value;
  if (!text.trim()) return;
  if (!state.current) {
    const created = await api("POST", "/api/sessions");
    if (created.status !== 201) return;
    await select(created.data.id);
  }
  $("send").disabled = true;
  const { status, data } = await api("POST", `/api/sessions/${encodeURIComponent(state.current)}/messages`, { text });
  $("send").disabled = false;
  if (status === 202) {
    $("prompt").value = "";
  } else {
    setStatus((data && data.error) || "the message was not sent");
  }
});

$("prompt").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    $("composer").requestSubmit();
  }
});

// ---- start ----

async function start() {
  const { status } = await api("GET", "/api/sessions");
  if (status !== 200) return;
  $("login").hidden = true;
  $("app").hidden = false;
  await loadSessions();
  await loadApprovals();
  await loadRoutines();
  await loadGrants();
  await loadDecisions();
  await loadChannels();
  // A push's locator (push.js): the question it points at, in its conversation.
  const question = new URLSearchParams(location.hash.slice(1)).get("q");
  if (question && (await openQuestion(question))) return;
  const wanted = new URLSearchParams(location.hash.slice(1)).get("session");
  if (wanted && state.sessions.some((s) => s.id === wanted)) {
    await select(wanted);
  } else if (state.sessions.length > 0) {
    await select(state.sessions[0].id);
  }
}

async function boot() {
  const params = new URLSearchParams(location.hash.slice(1));
  const token = params.get("token");
  if (token) {
    // The token never stays in the address bar or the history.
    history.replaceState(null, "", location.pathname);
    if (!(await login(token))) {
      showLogin("That link's token is not this tau's.");
      return;
    }
  }
  await start();
}

// cards.js and panels.js come after this file; all three have run by DOMContentLoaded.
document.addEventListener("DOMContentLoaded", () => {
  showToggles();
  placeToggles();
  PHONE.addEventListener("change", () => {
    placeToggles();
    foldElsewhere();
  });
  setInterval(() => { if (!$("app").hidden) loadApprovals(); }, 5000);
  setInterval(() => { if (!$("app").hidden) loadChannels(); }, 10000);
  setInterval(() => { if (!$("app").hidden) loadRoutines(); }, 30000);
  setInterval(() => { if (!$("app").hidden) loadGrants(); }, 30000);
  setInterval(() => { if (!$("app").hidden) loadDecisions(); }, 30000);
  boot();
});
