// TauBar's side panels and notices: notifications, the channels that are down, routines,
// what runs without a question (grants) and the history of decisions. Loaded after app.js
// and cards.js, whose helpers it uses.
"use strict";

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
  state.grants = data;
  showReceipts(data);
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
    const uses = grant.max_uses
      ? `${grant.uses} of ${counted(grant.max_uses, "use", "uses")}`
      : counted(grant.uses, "use", "uses");
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
    // Asked because the chat had read text from outside, and where each value came
    // from, as the question's card said.
    if (Array.isArray(decision.sources) && decision.sources.length > 0) {
      const escalated = decision.provenance && decision.provenance.escalated;
      const headline = escalated ? "asked because of outside text" : null;
      item.append(cardNotes({ headline, notes: decision.sources }));
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
