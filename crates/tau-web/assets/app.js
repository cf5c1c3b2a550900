// TauBar. Uses only tau's JSON API. Everything a model, a tool or a peer wrote arrives in
// the API's display view (escaped by tau's display function on the server) and is set
// with textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {
  sessions: [], current: null, source: null, live: null, calls: new Map(), cards: new Map(),
  // The ids of the questions already announced; null until the first list (what waits when
  // the page opens is listed, not announced).
  seen: null, audio: null,
};

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
    const meta = el("span", "meta", `${origin}${session.message_count} messages · ${when(session.updated_at)}${session.busy ? " · working" : ""}`);
    button.append(title, meta);
    button.addEventListener("click", () => {
      $("sessions").classList.remove("open");
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

$("toggle-sessions").addEventListener("click", () => $("sessions").classList.toggle("open"));

// ---- transcript ----

function transcript() {
  return $("transcript");
}

function scrollDown() {
  const box = transcript();
  box.scrollTop = box.scrollHeight;
}

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
      const more = el("button", "link more-lines", `${lines.length - OUTPUT_LINES} more lines`);
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

// ---- approval cards ----

function remaining(deadline) {
  const ms = new Date(deadline) - new Date();
  if (isNaN(ms)) return "";
  if (ms <= 0) return "expires now";
  const minutes = Math.round(ms / 60000);
  return minutes < 1 ? "expires in under a minute" : `expires in ${minutes} min`;
}

function outcomeText(decision, decidedBy) {
  if (decision === "approved") return "Approved " + decidedText(decidedBy);
  if (decision === "timeout" || decision === "expired" || (decidedBy && decidedBy.kind === "timeout")) return "Expired: nobody answered in time";
  if (decidedBy && decidedBy.kind === "superseded") return "Superseded by a newer message";
  if (decision === "cancelled" || (decidedBy && decidedBy.kind === "cancelled")) return "Cancelled: its turn was given up";
  return "Rejected " + decidedText(decidedBy);
}

function closeCard(id, decision, decidedBy) {
  const card = state.cards.get(id);
  if (!card) return;
  card.node.classList.add("decided");
  // The button the keyboard pressed goes: the card itself keeps the focus, so the next Tab
  // goes on from here, not from the top of the page.
  const focused = card.pressed || card.buttons.includes(document.activeElement);
  for (const button of card.buttons) button.remove();
  if (focused && card.node.isConnected) {
    card.node.tabIndex = -1;
    card.node.focus({ preventScroll: true });
  }
  card.outcome.textContent = outcomeText(decision, decidedBy);
  card.footer.hidden = true;
  card.closed = true;
}

// What tau itself says about the call: its headline, then each note (a warning marked),
// a note's detail (a file's content) whole below it.
function cardNotes(said) {
  const box = el("div", "said");
  if (!said) return box;
  if (said.headline) box.append(el("div", "headline", said.headline));
  for (const note of said.notes || []) {
    const row = el("div", "note " + (note.level === "warning" ? "warning" : "info"));
    row.append(el("span", "label", (note.level === "warning" ? "⚠ " : "") + note.label), document.createTextNode(" " + note.text));
    box.append(row);
    if (note.detail) box.append(el("pre", "detail mono", note.detail));
  }
  return box;
}

// The most of one argument a card shows before it says how much more there is.
const ARGUMENT_SHOWN = 2000;

function chars(count) {
  return count.toLocaleString("en-US") + (count === 1 ? " char" : " chars");
}

// Every argument on its own row, with its length; one longer than the card shows its
// start, says how many characters more there are, and "Show all" opens it whole, ending
// in a line that says so. Nothing is ever cut without saying so. Each folded argument is
// added to `folds` (when given) as { name, opened }: `opened` is called with its end line
// once "Show all" put it on the page.
function argumentRows(row, folds) {
  const box = el("div", "args mono");
  const rows = Array.isArray(row.argument_rows)
    ? row.argument_rows
    : [{ name: "", value: row.arguments, chars: null }];
  for (const arg of rows) {
    const item = el("div", "arg");
    const head = el("div", "arg-head");
    if (arg.name) head.append(el("span", "arg-name", arg.name));
    if (typeof arg.chars === "number") head.append(el("span", "arg-len", chars(arg.chars)));
    const value = el("div", "arg-value");
    const text = String(arg.value);
    const shown = [...text];
    item.append(head, value);
    if (shown.length <= ARGUMENT_SHOWN) {
      value.textContent = text;
    } else {
      value.textContent = shown.slice(0, ARGUMENT_SHOWN).join("") + "…";
      const fold = { name: arg.name || "the arguments", opened: null };
      if (folds) folds.push(fold);
      const more = el("div", "arg-more");
      const rest = shown.length - ARGUMENT_SHOWN;
      more.append(el("span", "", `${rest.toLocaleString("en-US")} more characters `));
      const all = el("button", "link show-all", "Show all");
      all.type = "button";
      all.addEventListener("click", () => {
        value.textContent = text;
        more.remove();
        const end = el("div", "arg-end");
        end.append(el("span", "", `end of ${fold.name}`));
        item.append(end);
        if (fold.opened) fold.opened(end);
        value.tabIndex = -1;
        value.focus();
      });
      more.append(all);
      item.append(more);
    }
    box.append(item);
  }
  return box;
}

function card(row) {
  const node = el("article", "card");
  node.dataset.approval = row.id;
  const title = el("h2");
  title.append(el("span", "tier", "tier " + row.tier), el("span", "mono", row.tool));
  const effect = el("div", "effect", row.effect);
  const said = cardNotes(row.card);
  const folds = [];
  const args = argumentRows(row, folds);
  const actions = el("div", "actions");
  const approve = el("button", "approve", "Approve");
  const reject = el("button", "reject", "Reject");
  approve.type = reject.type = "button";
  // A lock-class device: Approve sends what the person typed, its name or the number.
  const step = row.card && row.card.confirm;
  let typed = null;
  const stepNodes = [];
  if (step) {
    const ask = el("div", "step", `Second step: type ${step.word} or ${step.code} to approve. Approve alone does not run it.`);
    typed = el("input", "confirm mono");
    typed.type = "text";
    typed.autocomplete = "off";
    typed.spellcheck = false;
    typed.maxLength = 64;
    typed.setAttribute("aria-label", "the device's name or the number");
    typed.placeholder = `${step.word} or ${step.code}`;
    actions.append(ask, typed);
    stepNodes.push(ask, typed);
  }
  // "Yes, and allow this again": offered only where tau offers a grant (never with a
  // second step), and what it covers is stated in tau's words before it can be pressed.
  let always = null;
  let everywhere = null;
  if (row.grant_covers && !step) {
    always = el("button", "always", "Approve, allow again");
    always.type = "button";
    everywhere = el("button", "always everywhere", "Approve, allow in all chats");
    everywhere.type = "button";
    const covers = el("div", "grant-covers", row.grant_covers);
    actions.append(covers);
    stepNodes.push(covers);
    if (row.grant_covers_channel) {
      const wide = el("div", "grant-covers", row.grant_covers_channel);
      actions.append(wide);
      stepNodes.push(wide);
    }
    // Measured, never acted on: the person keeps approving exactly this call.
    if (row.grant_suggestion) {
      const suggestion = el("div", "grant-suggestion", row.grant_suggestion);
      actions.append(suggestion);
      stepNodes.push(suggestion);
    }
  }
  const outcome = el("span", "outcome");
  const when = el("span", "when", remaining(row.deadline));
  const granting = always ? [always, everywhere] : [];
  // A yes counts only for the whole card: while an argument is folded, or opened and not
  // yet read to its end, nothing approves, and the card says why. Reject always works.
  const unread = el("div", "unread");
  unread.id = `unread-${row.id}`;
  for (const button of [approve, ...granting]) button.setAttribute("aria-describedby", unread.id);
  stepNodes.push(unread);
  actions.append(unread, approve, ...granting, reject, outcome);
  const footer = el("div", "when");
  footer.append(when);
  node.append(title);
  // A routine's question says whose it is: nobody should take it for their own.
  if (row.routine) node.append(el("div", "asked-by", `asked by routine ${row.routine.name} · ${row.routine.trigger}`));
  node.append(effect, said, args, actions, footer);
  const buttons = [approve, reject, ...granting];
  const approving = [approve, ...granting];
  node.dataset.call = row.call_id;
  const entry = { node, session: row.session, callId: row.call_id, buttons: [...buttons, ...stepNodes], outcome, when, footer, closed: false };
  let busy = false;
  const enable = (on) => {
    busy = !on;
    const waiting = folds.find((fold) => !fold.read);
    reject.disabled = busy;
    for (const button of approving) button.disabled = busy || waiting !== undefined;
    unread.hidden = waiting === undefined;
    if (waiting) {
      unread.textContent = waiting.end
        ? `Approve waits until you have scrolled to the end of ${waiting.name}.`
        : `Approve waits until you have read all of ${waiting.name}: Show all, then scroll to its end.`;
    }
  };
  for (const fold of folds) {
    fold.read = false;
    fold.opened = (end) => {
      fold.end = end;
      enable(!busy);
      whenOnScreen(end, () => {
        fold.read = true;
        enable(!busy);
      });
    };
  }
  enable(true);
  const answer = async (decision, grant) => {
    // A disabled button may lose the focus; which one was pressed is kept to give it back.
    const pressed = buttons.find((button) => button === document.activeElement) || null;
    entry.pressed = pressed !== null;
    enable(false);
    const body = { decision };
    // A yes names the card it was given to: the server takes it only for the card as it
    // reads now.
    if (decision === "approve") body.card_sha256 = row.card_sha256;
    if (typed && decision === "approve") body.confirm = typed.value;
    if (grant) body.grant = grant;
    const { status, data } = await api("POST", `/api/approvals/${encodeURIComponent(row.id)}`, body);
    if (status === 200) {
      closeCard(row.id, data.state, data.decided_by);
      loadDecisions();
      if (grant) setTimeout(loadGrants, 1000);
    } else if (status === 409 && data && data.approval) {
      closeCard(row.id, data.approval.state, data.approval.decided_by);
      outcome.textContent = "Already " + data.approval.state + ": " + outcomeText(data.approval.state, data.approval.decided_by);
    } else if (status === 422 && data && data.refused === "card_sha256_stale") {
      // The card changed since it was drawn: it is drawn again, to be read again.
      node.remove();
      state.cards.delete(row.id);
      await loadApprovals();
      const again = state.cards.get(row.id);
      if (again) again.outcome.textContent = "This card changed while it was open: read it again.";
    } else {
      enable(true);
      entry.pressed = false;
      if (pressed && document.activeElement !== pressed) pressed.focus();
      if (typed) typed.value = "";
      outcome.textContent = (data && data.error) || "Could not answer";
    }
  };
  approve.addEventListener("click", () => answer("approve"));
  if (always) always.addEventListener("click", () => answer("approve", { scope: "conversation" }));
  if (everywhere) everywhere.addEventListener("click", () => answer("approve", { scope: "channel" }));
  reject.addEventListener("click", () => answer("reject"));
  state.cards.set(row.id, entry);
  return node;
}

// Calls `seen` once `node` has been on screen (scrolled into view, not only on the page).
function whenOnScreen(node, seen) {
  const observer = new IntersectionObserver((entries) => {
    if (entries.some((entry) => entry.isIntersecting && entry.intersectionRatio >= 0.5)) {
      observer.disconnect();
      seen();
    }
  }, { threshold: [0.5, 1] });
  observer.observe(node);
}

// A question of this conversation is a card in its transcript, below its call (after the
// call's earlier questions).
function placeCard(node, callId) {
  const empty = transcript().querySelector(".empty");
  if (empty) empty.remove();
  const call = state.calls.get(callId);
  if (call && call.node.isConnected) {
    let after = call.node;
    while (after.nextElementSibling && after.nextElementSibling !== node && after.nextElementSibling.dataset.call === callId) {
      after = after.nextElementSibling;
    }
    after.after(node);
  } else {
    transcript().append(node);
  }
  scrollDown();
}

// Whether a question is answered on this page, in the conversation that is open.
function isHere(row) {
  return row.channel === "web" && row.session === state.current;
}

// Every question that waits for the person, on every channel: this conversation's as cards
// in its transcript, every other one as a line in a list that says where it is answered.
// Nothing of another conversation has buttons here.
async function loadApprovals() {
  const { status, data } = await api("GET", "/api/approvals?state=pending&channel=all&display=true");
  if (status !== 200 || !Array.isArray(data)) return;
  // Cards of a conversation no longer on screen go with it.
  for (const [id, entry] of state.cards) {
    if (!entry.node.isConnected || entry.session !== state.current) {
      entry.node.remove();
      state.cards.delete(id);
    }
  }
  const pending = new Set(data.filter(isHere).map((row) => row.id));
  // A card whose question was decided elsewhere says how; it stays in the transcript.
  const gone = [...state.cards].filter(([id, entry]) => !pending.has(id) && !entry.closed);
  if (gone.length > 0) {
    const all = await api("GET", "/api/approvals?display=true");
    for (const row of all.data || []) {
      if (gone.some(([id]) => id === row.id)) closeCard(row.id, row.state, row.decided_by);
    }
  }
  for (const row of data.filter(isHere)) {
    const existing = state.cards.get(row.id);
    if (existing) existing.when.textContent = remaining(row.deadline);
    else placeCard(card(row), row.call_id);
  }
  showElsewhere(data.filter((row) => !isHere(row)));
  announce(data);
}

function channelName(channel) {
  return CHANNEL_NAMES[channel] || channel;
}

// The questions of other conversations and channels: what, whose, until when, and a link
// to the conversation (TauBar's own) or where to answer (another channel's).
function showElsewhere(rows) {
  const list = $("elsewhere-list");
  const wanted = new Set(rows.map((row) => row.id));
  // A line stays the same node while its question waits: only its clock changes.
  for (const item of [...list.children]) if (!wanted.has(item.dataset.approval)) item.remove();
  for (const row of rows) {
    const whose = row.routine ? `asked by routine ${row.routine.name}` : `in ${row.session}`;
    const meta = `${whose} · ${remaining(row.deadline)}`;
    const existing = [...list.children].find((item) => item.dataset.approval === row.id);
    if (existing) {
      existing.querySelector(".meta").textContent = meta;
      continue;
    }
    const item = el("li", "waiting");
    item.dataset.approval = row.id;
    const what = el("span", "what");
    what.append(el("span", "tier", "tier " + row.tier), document.createTextNode(" "), el("span", "mono", row.tool));
    item.append(what, el("span", "meta", meta));
    if (row.channel === "web") {
      const open = el("button", "link open", "Open to answer");
      open.type = "button";
      open.addEventListener("click", () => select(row.session));
      item.append(open);
    } else {
      item.append(el("span", "where", `answer on ${channelName(row.channel)}`));
    }
    list.append(item);
  }
  $("elsewhere").hidden = rows.length === 0;
}

// ---- notifications ----

// The title counts what waits; a new question (not one already waiting when the page
// opened) rings and notifies when the person asked for that.
function announce(rows) {
  document.title = rows.length > 0 ? `(${rows.length}) TauBar` : "TauBar";
  const first = state.seen === null;
  const fresh = first ? [] : rows.filter((row) => !state.seen.has(row.id));
  state.seen = new Set(rows.map((row) => row.id));
  if (fresh.length === 0) return;
  if (wants("sound")) chime();
  if (!wants("notify") || !("Notification" in window) || Notification.permission !== "granted") return;
  const looking = document.visibilityState === "visible" && document.hasFocus();
  for (const row of fresh) {
    // A card on the screen the person is looking at needs no notification.
    if (looking && isHere(row)) continue;
    const where = row.channel === "web" ? "" : ` (answer on ${channelName(row.channel)})`;
    const shown = new Notification(`tau asks: ${row.tool}${where}`, { body: row.effect, tag: row.id });
    shown.onclick = () => {
      window.focus();
      if (row.channel === "web") select(row.session);
    };
  }
}

function wants(what) {
  try { return localStorage.getItem("tau." + what) === "on"; } catch (_) { return false; }
}

function setWanted(what, on) {
  try { localStorage.setItem("tau." + what, on ? "on" : "off"); } catch (_) { /* a private window keeps nothing */ }
  showToggles();
}

function showToggles() {
  for (const what of ["notify", "sound"]) {
    const on = wants(what);
    const button = $(what);
    button.setAttribute("aria-pressed", String(on));
    button.textContent = (what === "notify" ? "Notify: " : "Sound: ") + (on ? "on" : "off");
  }
}

// A short tone; the audio context is made on a click, as browsers allow.
function chime() {
  try {
    const audio = state.audio || (state.audio = new AudioContext());
    const tone = audio.createOscillator();
    const gain = audio.createGain();
    tone.frequency.value = 880;
    gain.gain.setValueAtTime(0.15, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.35);
    tone.connect(gain).connect(audio.destination);
    tone.start();
    tone.stop(audio.currentTime + 0.35);
  } catch (_) { /* no audio here: the title and the list still say it */ }
}

$("notify").addEventListener("click", async () => {
  if (wants("notify")) return setWanted("notify", false);
  if (!("Notification" in window)) return setStatus("this browser has no notifications");
  const permission = await Notification.requestPermission();
  if (permission === "granted") setWanted("notify", true);
  else setStatus("notifications are blocked for this page in the browser's settings");
});

$("sound").addEventListener("click", () => {
  const on = !wants("sound");
  setWanted("sound", on);
  if (on) chime();
});

// ---- channels ----

const CHANNEL_NAMES = { web: "TauBar", telegram: "Telegram" };

async function loadChannels() {
  const { status, data } = await api("GET", "/api/channels?display=true");
  if (status !== 200 || !Array.isArray(data)) return;
  const box = $("channels-down");
  box.replaceChildren();
  for (const channel of data.filter((c) => c.state === "stopped")) {
    const name = CHANNEL_NAMES[channel.name] || channel.name;
    const row = el("p", "down-row");
    row.append(el("strong", "", `${name} is down.`), document.createTextNode(" " + (channel.error || "")));
    box.append(row);
  }
  box.hidden = box.childElementCount === 0;
}

// ---- routines ----

const TRIGGERS = ["every", "cron", "at", "mqtt"];

function routineTrigger(routine) {
  for (const key of TRIGGERS) {
    if (typeof routine[key] === "string") return `${key} ${routine[key]}`;
  }
  return routine.webhook ? `webhook ${routine.webhook}` : "";
}

async function loadRoutines() {
  const { status, data } = await api("GET", "/api/routines?display=true");
  if (status !== 200 || !Array.isArray(data)) return;
  $("routines").hidden = data.length === 0;
  const list = $("routine-list");
  list.replaceChildren();
  for (const routine of data) {
    const item = el("li", routine.enabled === false ? "off" : "");
    item.append(el("span", "title", routine.name));
    if (routine.problem) {
      item.append(el("span", "meta", `left out: ${routine.problem}`));
    } else {
      const action = routine.tool ? `calls ${routine.tool}` : "runs a prompt";
      const last = routine.last_run ? `${routine.last_run.outcome} ${when(routine.last_run.at)}` : "never ran";
      const off = routine.enabled === false ? " · off" : "";
      item.append(el("span", "meta", `${routineTrigger(routine)} · ${action} · ${last}${off}`));
    }
    list.append(item);
  }
}

// What runs without a question: the live grants made on this page, each with what it
// covers, its uses and a Revoke; then the routines' own calls, marked as theirs (disabling
// the routine is their revoke).
async function loadGrants() {
  const { status, data } = await api("GET", "/api/grants?display=true");
  if (status !== 200 || !Array.isArray(data)) return;
  $("grants").hidden = data.length === 0;
  const list = $("grant-list");
  rebuild(list, "grant", () => showGrants(list, data));
}

function showGrants(list, data) {
  list.replaceChildren();
  for (const allowance of data) {
    // With display=true the arguments come as their canonical JSON, already shown.
    const args = typeof allowance.arguments === "string" ? allowance.arguments : JSON.stringify(allowance.arguments);
    if (allowance.kind === "routine") {
      const item = el("li", "grant routine-allowance");
      item.dataset.routine = allowance.routine;
      item.append(el("span", "title mono", allowance.tool));
      item.append(el("span", "mono grant-args", args));
      const off = allowance.enabled ? "" : " · disabled";
      item.append(el("span", "meta", `routine ${allowance.routine} (${allowance.trigger})${off} · tau routines disable ${allowance.routine}`));
      list.append(item);
      continue;
    }
    const grant = allowance;
    const item = el("li", "grant");
    item.dataset.grant = grant.id;
    item.append(el("span", "title mono", grant.tool));
    item.append(el("span", "mono grant-args", args));
    const uses = grant.max_uses ? `${grant.uses} of ${grant.max_uses} uses` : `${grant.uses} uses`;
    const last = grant.last_used_at ? `, last ${when(grant.last_used_at)}` : "";
    item.append(el("span", "meta", `${uses}${last} · until ${when(grant.expires_at)}`));
    const revoke = el("button", "link revoke", "Revoke");
    revoke.type = "button";
    revoke.dataset.grant = grant.id;
    revoke.addEventListener("click", async () => {
      revoke.disabled = true;
      await api("DELETE", `/api/grants/${encodeURIComponent(grant.id)}`);
      await loadGrants();
    });
    item.append(revoke);
    list.append(item);
  }
}

// ---- decisions ----

// The last 30 days of decided tier-2 calls from the audit log, newest first: what was
// called, who decided where and when, and what ran. Filtered by the API, so the list of
// tools to pick from is kept from the last unfiltered list.
const OUTCOME_WORDS = {
  approved: "Approved", rejected: "Rejected", timeout: "Expired", cancelled: "Cancelled",
  granted: "Allowed", exempt: "Allowed", refused: "Refused",
};

function decisionWho(decision) {
  const by = decision.decided_by || {};
  const where = decision.channel ? channelName(decision.channel) : "";
  switch (by.kind) {
    case "person": return `by ${by.user || "you"} on ${channelName(by.channel || where)}`;
    case "grant": return where ? `by a grant made on ${where}` : "by a grant";
    case "timeout": return where ? `nobody answered on ${where}` : "nobody answered";
    default: return decidedText(by);
  }
}

function ranText(ran) {
  if (!ran) return "nothing ran";
  switch (ran.status) {
    case "success": return "ran: ok";
    case "error": return "ran: failed";
    case "refused": return "did not run";
    case "cancelled": return "stopped before it finished";
    default: return `did not run (${ran.status})`;
  }
}

let decisionsAsked = 0;

async function loadDecisions() {
  const tool = $("decision-tool").value;
  const outcome = $("decision-outcome").value;
  const query = new URLSearchParams({ display: "true" });
  if (tool) query.set("tool", tool);
  if (outcome) query.set("outcome", outcome);
  const asked = ++decisionsAsked;
  const { status, data } = await api("GET", `/api/decisions?${query}`);
  // An older answer arriving after a newer one is dropped: the filters moved on.
  if (asked !== decisionsAsked || status !== 200 || !Array.isArray(data)) return;
  const filtered = tool !== "" || outcome !== "";
  $("decisions").hidden = !filtered && data.length === 0;
  if (!filtered) showDecisionTools(data);
  $("decision-none").hidden = data.length > 0;
  showDecisions($("decision-list"), data);
}

function showDecisionTools(data) {
  const select = $("decision-tool");
  const tools = [...new Set(data.map((decision) => decision.tool))].sort();
  const have = [...select.options].slice(1).map((option) => option.value);
  if (have.join("\n") === tools.join("\n")) return;
  const chosen = select.value;
  select.replaceChildren(el("option", "", "all tools"));
  select.options[0].value = "";
  for (const tool of tools) {
    const option = el("option", "", tool);
    option.value = tool;
    select.append(option);
  }
  select.value = tools.includes(chosen) ? chosen : "";
}

// The list as last drawn: drawn again only when it changed, so an argument opened with
// "Show all" stays open across the refreshes.
let decisionsDrawn = null;

function showDecisions(list, data) {
  const drawn = JSON.stringify(data);
  if (drawn === decisionsDrawn && list.childElementCount === data.length) return;
  decisionsDrawn = drawn;
  list.replaceChildren();
  for (const decision of data) {
    const item = el("li", `decision ${decision.outcome}`);
    const head = el("span", "title");
    head.append(el("span", "mono", decision.tool), " ", el("strong", "outcome", OUTCOME_WORDS[decision.outcome] || decision.outcome));
    item.append(head);
    // A word a reader could take for another is flagged, as on the question's card.
    if (Array.isArray(decision.lookalikes) && decision.lookalikes.length > 0) {
      item.append(cardNotes({ notes: decision.lookalikes }));
    }
    // Every argument on its own row with its length, a long one folded, as on a card.
    item.append(argumentRows(decision));
    item.append(el("span", "meta", `${decisionWho(decision)} · ${when(decision.at)}`));
    item.append(el("span", "meta ran", ranText(decision.ran)));
    list.append(item);
  }
}

$("decision-tool").addEventListener("change", loadDecisions);
$("decision-outcome").addEventListener("change", loadDecisions);

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

showToggles();
setInterval(() => { if (!$("app").hidden) loadApprovals(); }, 5000);
setInterval(() => { if (!$("app").hidden) loadChannels(); }, 10000);
setInterval(() => { if (!$("app").hidden) loadRoutines(); }, 30000);
setInterval(() => { if (!$("app").hidden) loadGrants(); }, 30000);
setInterval(() => { if (!$("app").hidden) loadDecisions(); }, 30000);
boot();
