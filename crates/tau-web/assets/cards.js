// TauBar's questions: each one of the open conversation as a card in its transcript (a yes
// counts only for the whole card), and every other one waiting as a line that says where it
// is answered. Loaded after app.js, whose helpers it uses.
"use strict";

// ---- approval cards ----

function remaining(deadline) {
  const ms = new Date(deadline) - new Date();
  if (isNaN(ms)) return "";
  if (ms <= 0) return "expires now";
  const minutes = Math.round(ms / 60000);
  return minutes < 1 ? "expires in under a minute" : `expires in ${minutes} min`;
}

// The same, short, for a line of the list of what waits elsewhere: `30 min left`.
function left(deadline) {
  const ms = new Date(deadline) - new Date();
  if (isNaN(ms)) return "";
  if (ms <= 0) return "expires now";
  const minutes = Math.round(ms / 60000);
  return minutes < 1 ? "<1 min left" : `${minutes} min left`;
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
      more.append(el("span", "", `${counted(rest, "more character", "more characters")} `));
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

// "Yes, and allow this again": offered only where tau offers a grant (never with a second
// step, never on a card that flags a lookalike word), below Approve and Reject and apart
// from them. One line says what it lets through; "what does allow again cover?" opens the
// whole rule, in tau's words, before anything can be pressed.
function grantBox(row) {
  const box = el("div", "grant");
  box.append(el("p", "grant-line", row.grant_line || "Allow again lets exactly this call run without asking."));
  // Measured, never acted on: the person keeps approving exactly this call.
  if (row.grant_suggestion) box.append(el("p", "grant-suggestion", row.grant_suggestion));
  const buttons = el("div", "grant-buttons");
  const always = el("button", "always", "Approve, allow again");
  always.type = "button";
  const everywhere = el("button", "always everywhere", "Approve, allow in all chats");
  everywhere.type = "button";
  buttons.append(always, everywhere);
  const rules = el("details", "grant-rules");
  rules.append(el("summary", "", "what does allow again cover?"));
  rules.append(el("p", "grant-covers", `Approve, allow again: ${row.grant_covers}`));
  if (row.grant_covers_channel) rules.append(el("p", "grant-covers", `Approve, allow in all chats: ${row.grant_covers_channel}`));
  rules.append(el("p", "", "Allowed again (the side panel) lists each grant; its Revoke ends it before the next call."));
  box.append(buttons, rules);
  return { box, always, everywhere };
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
  const decide = el("div", "decide");
  const approve = el("button", "approve", "Approve");
  const reject = el("button", "reject", "Reject");
  approve.type = reject.type = "button";
  // A lock-class device: Approve sends what the person typed, its name or the number.
  const step = row.card && row.card.confirm;
  let typed = null;
  const stepNodes = [];
  if (row.step_up) {
    // Once anyone has a passkey, the second step is the passkey itself.
    stepNodes.push(el("div", "step", "Second step: Approve asks for your passkey. Nothing runs without it."));
  } else if (step) {
    const ask = el("div", "step", `Second step: type ${step.word} or ${step.code} to approve. Approve alone does not run it.`);
    typed = el("input", "confirm mono");
    typed.type = "text";
    typed.autocomplete = "off";
    typed.spellcheck = false;
    typed.maxLength = 64;
    typed.setAttribute("aria-label", "the device's name or the number");
    typed.placeholder = `${step.word} or ${step.code}`;
    stepNodes.push(ask, typed);
  }
  const granted = row.grant_covers && !step && !row.step_up ? grantBox(row) : null;
  const outcome = el("span", "outcome");
  const when = el("span", "when", remaining(row.deadline));
  const granting = granted ? [granted.always, granted.everywhere] : [];
  // A yes counts only for the whole card: while an argument is folded, or opened and not
  // yet read to its end, nothing approves, and the card says why. Reject always works.
  const unread = el("div", "unread");
  unread.id = `unread-${row.id}`;
  for (const button of [approve, ...granting]) button.setAttribute("aria-describedby", unread.id);
  stepNodes.push(unread);
  if (granted) stepNodes.push(granted.box);
  decide.append(approve, reject, outcome);
  // Where a grant this card made says until when it lets the call through, with its Revoke.
  const receipt = el("div", "receipt");
  receipt.hidden = true;
  const footer = el("div", "when");
  footer.append(when);
  node.append(title);
  // A routine's question says whose it is: nobody should take it for their own.
  if (row.routine) node.append(el("div", "asked-by", `asked by routine ${row.routine.name} · ${row.routine.trigger}`));
  // What tau says, the call, why a yes waits (if it does), the second step (if any), the
  // answers, then what allows again.
  node.append(effect, said, args, unread, ...stepNodes.filter((n) => n !== unread && (!granted || n !== granted.box)), decide);
  if (granted) node.append(granted.box);
  node.append(receipt, footer);
  const buttons = [approve, reject, ...granting];
  const approving = [approve, ...granting];
  node.dataset.call = row.call_id;
  const entry = { node, session: row.session, callId: row.call_id, buttons: [...buttons, ...stepNodes], outcome, receipt, when, footer, closed: false };
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
    if (row.step_up && decision === "approve") {
      try {
        body.step_up = await stepUpAssertion(row);
      } catch (error) {
        enable(true);
        outcome.textContent = `The passkey did not confirm it: ${error.message}`;
        return;
      }
    }
    const { status, data } = await api("POST", `/api/approvals/${encodeURIComponent(row.id)}`, body);
    if (status === 200) {
      closeCard(row.id, data.state, data.decided_by);
      loadDecisions();
      // The grant is made when the call goes through: its receipt comes once it is.
      if (grant) awaitReceipt(entry, row.id);
    } else if (status === 409 && data && data.approval) {
      closeCard(row.id, data.approval.state, data.approval.decided_by);
      // Nothing waited for the answer: it was not used, and the server says why.
      outcome.textContent = data.refused === "not_awaited"
        ? data.error
        : "Already " + data.approval.state + ": " + outcomeText(data.approval.state, data.approval.decided_by);
    } else if (status === 422 && data && data.refused === "card_sha256_stale") {
      // The card changed since it was drawn: it is drawn again, to be read again.
      node.remove();
      state.cards.delete(row.id);
      await loadApprovals();
      // Decided meanwhile: it comes back with the transcript, closed.
      if (!state.cards.has(row.id) && state.current === row.session) await loadTranscript(row.session);
      const again = state.cards.get(row.id);
      if (again && !again.closed) again.outcome.textContent = "This card changed while it was open: read it again.";
    } else {
      enable(true);
      entry.pressed = false;
      if (pressed && document.activeElement !== pressed) pressed.focus();
      if (typed) typed.value = "";
      outcome.textContent = (data && data.error) || "Could not answer";
    }
  };
  approve.addEventListener("click", () => answer("approve"));
  if (granted) {
    granted.always.addEventListener("click", () => answer("approve", { scope: "conversation" }));
    granted.everywhere.addEventListener("click", () => answer("approve", { scope: "channel" }));
  }
  reject.addEventListener("click", () => answer("reject"));
  state.cards.set(row.id, entry);
  return node;
}

// ---- receipts: what a card's "allow again" made ----

// `14:30` today, `tomorrow 14:30`, else the date too: when a grant ends, in the browser's
// time.
function clock(text) {
  const date = new Date(text);
  if (isNaN(date)) return text;
  const two = (n) => String(n).padStart(2, "0");
  const time = `${two(date.getHours())}:${two(date.getMinutes())}`;
  const day = (d) => `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`;
  const tomorrow = new Date();
  tomorrow.setDate(tomorrow.getDate() + 1);
  if (day(date) === day(new Date())) return time;
  if (day(date) === day(tomorrow)) return `tomorrow ${time}`;
  return `${day(date)} ${time}`;
}

// The card's receipt for `grant`: until when the call runs without asking, and its Revoke.
function showReceipt(entry, grant) {
  if (entry.receiptFor === grant.id && entry.receiptLive) return;
  entry.receiptFor = grant.id;
  entry.receiptLive = true;
  const receipt = entry.receipt;
  receipt.replaceChildren();
  receipt.hidden = false;
  const where = grant.scope === "channel" ? " in all chats" : "";
  receipt.append(el("span", "", `Allowed again${where} until ${clock(grant.expires_at)} ·`), document.createTextNode(" "));
  const revoke = el("button", "link revoke", "Revoke");
  revoke.type = "button";
  revoke.dataset.grant = grant.id;
  revoke.addEventListener("click", async () => {
    revoke.disabled = true;
    const { status } = await api("DELETE", `/api/grants/${encodeURIComponent(grant.id)}`);
    if (status === 200 || status === 409) {
      entry.receiptLive = false;
      const focused = document.activeElement === revoke;
      receipt.replaceChildren(el("span", "", "Allowed again: revoked. The next such call is asked."));
      if (focused) {
        receipt.tabIndex = -1;
        receipt.focus({ preventScroll: true });
      }
    } else {
      revoke.disabled = false;
    }
    await loadGrants();
  });
  receipt.append(revoke);
}

// Every card whose yes made a live grant shows its receipt (after a reload too); one whose
// grant is no longer live (revoked elsewhere, used up, expired) says it ended.
function showReceipts(grants) {
  const live = new Set();
  for (const grant of grants) {
    if (grant.kind !== "grant" || !grant.approval_id) continue;
    live.add(grant.id);
    const entry = state.cards.get(grant.approval_id);
    if (entry) showReceipt(entry, grant);
  }
  for (const entry of state.cards.values()) {
    if (entry.receiptLive && !live.has(entry.receiptFor)) {
      entry.receiptLive = false;
      entry.receipt.replaceChildren(el("span", "", "Allowed again: ended. The next such call is asked."));
    }
  }
}

// After a yes that asked for a grant: the grants are read again until it is there (it is
// made when the call goes through), for a while at most.
async function awaitReceipt(entry, approvalId) {
  for (let tries = 0; tries < 40 && !entry.receiptFor; tries++) {
    await loadGrants();
    if (entry.receiptFor) return;
    await new Promise((done) => setTimeout(done, 500));
  }
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

// What a conversation is called: its title (from the question, or this page's list of
// chats), else its id.
function conversationName(row) {
  if (row.session_title) return row.session_title;
  const session = state.sessions.find((s) => s.id === row.session);
  return (session && session.title) || row.session;
}

// Whether the person opened or closed the list themselves: then it stays as they left it.
let elsewhereChosen = false;

// Folded on a phone (its count says how many wait), open on a wider screen.
function foldElsewhere() {
  if (!elsewhereChosen) $("elsewhere-fold").open = !PHONE.matches;
}

$("elsewhere-fold").addEventListener("click", (event) => {
  if (event.target.closest("summary")) elsewhereChosen = true;
});

// The questions of other conversations and channels, one line each: what, in which
// conversation (by its title), until when, and a link to the conversation (TauBar's own)
// or where to answer (another channel's).
function showElsewhere(rows) {
  const list = $("elsewhere-list");
  const wanted = new Set(rows.map((row) => row.id));
  const first = $("elsewhere").hidden && rows.length > 0;
  // A line stays the same node while its question waits: only its clock changes.
  for (const item of [...list.children]) if (!wanted.has(item.dataset.approval)) item.remove();
  for (const row of rows) {
    const whose = row.routine ? `asked by routine ${row.routine.name}` : `in “${conversationName(row)}”`;
    const existing = [...list.children].find((item) => item.dataset.approval === row.id);
    if (existing) {
      existing.querySelector(".meta").textContent = left(row.deadline);
      existing.querySelector(".title").textContent = whose;
      continue;
    }
    const item = el("li", "waiting");
    item.dataset.approval = row.id;
    const what = el("span", "what");
    what.append(el("span", "tier", "tier " + row.tier), document.createTextNode(" "), el("span", "mono", row.tool));
    const title = el("span", "title", whose);
    // The whole title, and the conversation's id, on hover.
    title.title = `${whose} (${row.session})`;
    item.append(what, title, el("span", "meta", left(row.deadline)));
    if (row.channel === "web") {
      const open = el("button", "link open", "Open");
      open.type = "button";
      open.setAttribute("aria-label", `Open ${whose} to answer`);
      open.addEventListener("click", () => select(row.session));
      item.append(open);
    } else {
      item.append(el("span", "where", `on ${channelName(row.channel)}`));
    }
    list.append(item);
  }
  $("elsewhere-count").textContent = rows.length;
  $("elsewhere").hidden = rows.length === 0;
  if (first) foldElsewhere();
}
