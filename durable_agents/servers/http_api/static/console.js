// The agent console: one page, plain JavaScript, no build step. It talks to `agent serve`'s
// HTTP API only: it sends messages to a session, follows the session's events (SSE, read with
// fetch so the bearer token goes in a header, resumed after the last offset seen), and answers
// what waits for a person through POST /v1/runs/{id}/decisions, each approval bound to the
// args_digest of the arguments the reviewer was shown; a client-side tool's call (the page is
// the client) is answered with its JSON result or an error through POST
// /v1/runs/{id}/tool_results, whose refusal (a result breaking the tool's result_schema) is
// shown and can be fixed in place. The header says who the token signs in as (GET /v1/me:
// name, tenant, roles; nothing on a server without credentials), and Sign out forgets the token.
"use strict";

const SHOWN_PURPOSES = new Set(["turn", "final_answer", "synthesis"]);
const $ = (id) => document.getElementById(id);
const state = {
  session: null, token: "", info: null, by: "console",
  followers: new Map(), // workflow id -> AbortController
  lastIds: new Map(),   // workflow id -> last offset seen
  bubbles: new Map(),   // "wid|turn|call|purpose" -> bubble element
  lastBubble: new Map(),// "wid|turn" -> latest assistant bubble
  tools: new Map(),     // call id -> tool card
  requests: new Map(),  // call id -> request card
};

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  return append(node, ...children);
}

function append(node, ...children) {
  for (const child of children) if (child) node.append(child); // (append(null) adds "null")
  return node;
}

function say(text) { $("status").textContent = text; }
function pretty(value) { return JSON.stringify(value, null, 2); }
function chat(node) { $("chat").append(node); node.scrollIntoView({ block: "end" }); return node; }
function note(text, bad = false) { return chat(el("div", { class: bad ? "note bad" : "note", text })); }

function headers(json) {
  const result = {};
  if (state.token) result.Authorization = `Bearer ${state.token}`;
  if (json) result["Content-Type"] = "application/json";
  return result;
}

async function api(method, path, body) {
  const response = await fetch(path, {
    method, headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw Object.assign(new Error(data.error || response.statusText), { status: response.status });
  return data;
}

function webUi(workflowId) {
  const info = state.info;
  if (!info || !info.web_ui_url) return null;
  return `${info.web_ui_url}/namespaces/${encodeURIComponent(info.namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}

function runLink(workflowId, text) {
  const href = webUi(workflowId);
  return href ? el("a", { href, target: "_blank", rel: "noopener", text }) : el("span", { text });
}

// -- following a stream ------------------------------------------------------------------------

async function follow(workflowId, kind) {
  if (state.followers.has(workflowId)) return;
  const control = new AbortController();
  state.followers.set(workflowId, control);
  const path = `/v1/${kind}/${encodeURIComponent(workflowId)}/events`;
  while (!control.signal.aborted) {
    const extra = headers(false);
    if (state.lastIds.has(workflowId)) extra["Last-Event-ID"] = String(state.lastIds.get(workflowId));
    let ended = false;
    try {
      const response = await fetch(path, { headers: extra, signal: control.signal });
      if (response.status === 404) { // a session that does not exist yet: it starts with a message
        say(`session ${workflowId} is new: send a message to start it`);
        state.followers.delete(workflowId);
        return;
      }
      if (!response.ok) throw new Error((await response.json().catch(() => ({}))).error || response.statusText);
      if (kind === "sessions") say(`following session ${workflowId}`);
      ended = await readEvents(response, workflowId);
    } catch (error) {
      if (control.signal.aborted) return;
      say(`reconnecting to ${workflowId}: ${error.message}`);
    }
    if (ended) break;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  state.followers.delete(workflowId);
}

async function readEvents(response, workflowId) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let finished = false;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return finished;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let cut;
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      const fields = { data: [] };
      for (const line of block.split("\n")) {
        if (!line || line.startsWith(":")) continue;
        const at = line.indexOf(":");
        const name = at < 0 ? line : line.slice(0, at);
        const text = at < 0 ? "" : line.slice(at + 1).replace(/^ /, "");
        if (name === "data") fields.data.push(text); else fields[name] = text;
      }
      if (!fields.data.length) continue;
      const data = JSON.parse(fields.data.join("\n"));
      if (fields.event === "error") { note(`event stream: ${data.error}`, true); continue; }
      if (fields.id !== undefined) state.lastIds.set(workflowId, fields.id); // N, or N/M in a child turn
      show(fields.event, data);
      if (["run_finished", "run_failed", "session_ended"].includes(fields.event) && workflowId !== state.session) finished = true;
      if (fields.event === "session_ended") finished = true;
    }
  }
}

// -- showing events ----------------------------------------------------------------------------

function bubbleKey(e) { return `${e.workflow_id}|${e.turn ?? 0}|${e.model_call}|${e.purpose || "turn"}`; }

function bubble(e) {
  const key = bubbleKey(e);
  let node = state.bubbles.get(key);
  if (!node) {
    node = chat(el("div", { class: "bubble assistant live", "data-key": key }));
    state.bubbles.set(key, node);
  }
  state.lastBubble.set(`${e.workflow_id}|${e.turn ?? 0}`, node);
  return node;
}

function toolCard(e) {
  let card = state.tools.get(e.call_id);
  if (!card) {
    card = chat(el("div", { class: "tool", "data-call": e.call_id },
      el("span", { class: "name", text: e.tool }), el("span", { class: "state" }),
      el("pre", { class: "args" }), el("div", { class: "progress" }), el("pre", { class: "observation", hidden: "" })));
    state.tools.set(e.call_id, card);
  }
  return card;
}

function setTool(card, status, text) {
  card.className = `tool ${status}`;
  card.querySelector(".state").textContent = text;
}

function requestCard(e) {
  const target = e.workflow_id;
  const card = el("div", { class: "request", "data-call": e.call_id });
  const act = async (body, button, route = "decisions") => {
    for (const b of card.querySelectorAll("button")) b.disabled = true;
    try {
      await api("POST", `/v1/runs/${encodeURIComponent(target)}/${route}`, { call_id: e.call_id, by: state.by, ...body });
      card.querySelector(".result").textContent = `${button}: sent`;
      card.classList.remove("refused");
    } catch (error) {
      card.querySelector(".result").textContent = `refused: ${error.message}`;
      card.classList.add("refused");
      for (const b of card.querySelectorAll("button")) b.disabled = false;
    }
  };
  if (e.type === "client_tool_requested") {
    const result = el("textarea", { class: "tool-result", rows: "5", spellcheck: "false",
      placeholder: 'the result, as JSON (a string is quoted: "...")' });
    const failure = el("input", { class: "tool-error", placeholder: "or: why the tool could not run" });
    append(card,
      el("strong", { text: `Run ${e.tool} here` }),
      el("p", { class: "muted", text: "The model called a tool of this client; send what it returns." }),
      el("pre", { class: "args", text: pretty(e.arguments) }),
      e.result_schema ? el("details", {}, el("summary", { text: "result schema" }),
        el("pre", { class: "schema", text: pretty(e.result_schema) })) : null,
      result, failure,
      el("div", { class: "actions" },
        el("button", { class: "send-result", type: "button", text: "Send result",
          onclick: () => {
            let value;
            try { value = JSON.parse(result.value); } catch (error) {
              card.querySelector(".result").textContent = `the result is not JSON: ${error.message}`; return;
            }
            act({ result: value }, "result", "tool_results");
          } }),
        el("button", { class: "send-error danger", type: "button", text: "Send error",
          onclick: () => {
            if (!failure.value.trim()) { card.querySelector(".result").textContent = "say why the tool could not run"; return; }
            act({ error: failure.value.trim() }, "error", "tool_results");
          } })),
      el("div", { class: "result muted" }));
  } else if (e.type === "question_asked") {
    const answer = el("input", { class: "reply", placeholder: "your answer" });
    append(card, el("strong", { text: "Question" }), el("p", { text: e.question }), answer,
      el("div", { class: "actions" }, el("button", { class: "answer", type: "button", text: "Answer",
        onclick: () => answer.value.trim() && act({ decision: "reply", text: answer.value }, "answer") })),
      el("div", { class: "result muted" }));
  } else {
    const args = el("textarea", { class: "edit", rows: "6", spellcheck: "false" });
    args.value = pretty(e.arguments);
    const reason = el("input", { class: "reason", placeholder: "why not (the model reads it)" });
    const shown = pretty(e.arguments);
    append(card,
      el("strong", { text: `Approve ${e.tool}?` }),
      e.reason ? el("p", { class: "muted", text: e.reason }) : null,
      args,
      el("div", { class: "digest", text: `args_digest ${String(e.digest || "").slice(0, 16)}…` }),
      reason,
      el("div", { class: "actions" },
        el("button", { class: "approve", type: "button", text: "Approve",
          onclick: () => act({ decision: "approve", args_digest: e.digest }, "approve") }),
        el("button", { class: "edit-approve secondary", type: "button", text: "Approve edited",
          onclick: () => {
            let edited;
            try { edited = JSON.parse(args.value); } catch (error) {
              card.querySelector(".result").textContent = `the arguments are not JSON: ${error.message}`; return;
            }
            const body = { decision: "approve", args_digest: e.digest };
            if (pretty(edited) !== shown) body.args = edited;
            act(body, "approve edited");
          } }),
        el("button", { class: "reject danger", type: "button", text: "Reject",
          onclick: () => act({ decision: "reject", reason: reason.value || "rejected in the console" }, "reject") })),
      el("div", { class: "result muted" }));
  }
  const waiting = $("waiting");
  if (!state.requests.size) waiting.replaceChildren();
  waiting.append(card);
  state.requests.set(e.call_id, card);
}

function dropRequest(callId) {
  const card = state.requests.get(callId);
  if (card) { card.remove(); state.requests.delete(callId); }
  if (!state.requests.size) $("waiting").replaceChildren(el("p", { class: "muted", text: "nothing" }));
}

function showPlan(steps) {
  const plan = $("plan");
  plan.replaceChildren(...steps.map((step) =>
    el("li", { class: step.status, text: `${step.description} (${step.status})` })));
}

// How a run that did not finish ended: its outcome, and whether the server made the event from
// the workflow's close status (a terminated or timed-out run cannot say so itself).
function failureNote(e) {
  if (e.synthesized) return `${e.error} (from the workflow's close status)`;
  const how = { cancelled: "was cancelled", terminated: "was terminated", timed_out: "timed out" };
  return `the run ${how[e.outcome] || "failed"}: ${e.error}`;
}

function show(type, e) {
  switch (type) {
    case "turn_started":
      chat(el("div", { class: "bubble user", text: e.message }));
      // a child turn's events come on the session's stream, in place (agent serve follows it)
      if (e.child_workflow_id) chat(el("div", { class: "note" }, "this turn runs as ", runLink(e.child_workflow_id, e.child_workflow_id)));
      break;
    case "turn_moved":
      chat(el("div", { class: "note" }, "the turn outgrew the session: it goes on as ", runLink(e.child_workflow_id, e.child_workflow_id)));
      break;
    case "model_call_started": // (attempt > 1: a retry, as workers before model_call_retrying said it)
    case "model_call_retrying":
      if ((type === "model_call_retrying" || e.attempt > 1) && state.bubbles.has(bubbleKey(e))) {
        state.bubbles.get(bubbleKey(e)).textContent = ""; // a call that starts over: its text too
      }
      break;
    case "text_delta":
      if (SHOWN_PURPOSES.has(e.purpose || "turn")) bubble(e).textContent += e.text;
      break;
    case "model_call_finished": {
      const node = state.bubbles.get(bubbleKey(e));
      if (node) {
        if (e.rest) node.textContent += e.rest; // the end of the text no delta carried
        node.classList.remove("live");
      }
      else if (e.text && e.tool_calls > 0 && SHOWN_PURPOSES.has(e.purpose || "turn")) {
        // a quick reply sends no deltas: its text comes whole here (an answer comes with the turn)
        const made = bubble(e);
        made.textContent = e.text;
        made.classList.remove("live");
      }
      break;
    }
    case "tool_call_started": {
      const card = toolCard(e);
      card.querySelector(".args").textContent = pretty(e.arguments);
      setTool(card, "running", "running…");
      break;
    }
    case "tool_progress": {
      const fraction = e.fraction == null ? "" : ` (${Math.round(e.fraction * 100)}%)`;
      toolCard(e).querySelector(".progress").textContent = `${e.message}${fraction}`;
      break;
    }
    case "tool_call_finished": {
      const card = toolCard(e);
      setTool(card, e.status, e.status);
      card.querySelector(".progress").textContent = "";
      const observation = card.querySelector(".observation");
      observation.hidden = false;
      observation.textContent = e.observation;
      dropRequest(e.call_id);
      break;
    }
    case "approval_requested":
    case "client_tool_requested": { // the page is the client of client-side tools
      const card = toolCard(e);
      card.querySelector(".args").textContent = pretty(e.arguments);
      setTool(card, "waiting", type === "approval_requested" ? "waits for your approval" : "waits for this client to run it");
      requestCard(e);
      break;
    }
    case "approval_decided": {
      dropRequest(e.call_id);
      const card = state.tools.get(e.call_id);
      if (card) setTool(card, e.decision === "rejected" ? "rejected" : "running", `${e.decision}${e.by ? ` by ${e.by}` : ""}`);
      break;
    }
    case "question_asked":
      note(`question: ${e.question}`);
      requestCard(e);
      break;
    case "question_answered":
      dropRequest(e.call_id);
      note(`answered: ${e.reply}`);
      break;
    case "plan_updated": showPlan(e.steps); break;
    case "steering_received": note(`steering: ${e.message}`); break;
    case "subagent_started":
      chat(el("div", { class: "note" }, `sub-agent ${e.agent}: `, runLink(e.child_workflow_id, e.child_workflow_id)));
      break;
    case "subagent_finished": note(`sub-agent ${e.agent} finished (${e.stop_reason || "?"})`); break;
    case "limit_reached": note(`limit reached: ${e.limit}${e.detail ? ` (${e.detail})` : ""}`, true); break;
    case "run_finished": {
      const last = state.lastBubble.get(`${e.workflow_id}|${e.turn ?? 0}`);
      if (e.answer && (!last || last.textContent.trim() !== e.answer.trim())) {
        chat(el("div", { class: "bubble assistant", text: e.answer }));
      }
      for (const node of document.querySelectorAll(".assistant.live")) node.classList.remove("live");
      chat(el("div", { class: "note" }, `${e.stop_reason} · `, runLink(e.workflow_id, "open in the Temporal Web UI")));
      break;
    }
    case "run_failed": note(failureNote(e), true); break;
    case "turn_finished": if (e.error) note(`the turn failed: ${e.error}`, true); break;
    case "session_ended": note(`the session ended${e.reason ? `: ${e.reason}` : ""}`); setCompose(false); break;
    default: break; // a newer server's event: nothing to show
  }
}

// -- who is signed in -------------------------------------------------------------------------

function showSignedIn(me) {
  const signedIn = Boolean(me && me.authenticated);
  $("who").hidden = !signedIn;
  $("who-text").textContent = signedIn
    ? `signed in as ${me.name} (${me.tenant}, roles ${me.roles.join(", ") || "none"})` : "";
  state.by = signedIn ? me.name : "console"; // (the server records the principal anyway)
}

async function whoAmI() {
  try { showSignedIn(await api("GET", "/v1/me")); } catch (error) { showSignedIn(null); }
}

function signOut() {
  reset();
  state.token = "";
  $("token").value = "";
  sessionStorage.setItem("agent-console", JSON.stringify({ session: state.session || $("session").value }));
  showSignedIn(null);
  setCompose(false);
  $("webui").hidden = true;
  say("signed out: this page no longer holds the token");
}

// -- the page ----------------------------------------------------------------------------------

function setCompose(enabled) { $("message").disabled = !enabled; $("send").disabled = !enabled; }

// Stop following and forget what the page shows (opening another session, signing out).
function reset() {
  for (const control of state.followers.values()) control.abort();
  state.followers.clear(); state.lastIds.clear(); state.bubbles.clear(); state.lastBubble.clear();
  state.tools.clear(); state.requests.clear();
  $("chat").replaceChildren(); dropRequest(""); $("plan").replaceChildren(el("li", { class: "muted", text: "no plan" }));
}

async function open(event) {
  event.preventDefault();
  reset();
  state.session = $("session").value.trim();
  state.token = $("token").value.trim();
  sessionStorage.setItem("agent-console", JSON.stringify({ session: state.session, token: state.token }));
  try {
    state.info = await api("GET", "/v1/info");
  } catch (error) {
    showSignedIn(null);
    say(`cannot reach the API: ${error.message}`); return;
  }
  await whoAmI();
  const link = $("webui");
  const href = webUi(state.session);
  link.hidden = !href; if (href) link.href = href;
  setCompose(true);
  follow(state.session, "sessions");
}

async function send(event) {
  event.preventDefault();
  const text = $("message").value.trim();
  if (!text || !state.session) return;
  $("send").disabled = true;
  try {
    await api("POST", `/v1/sessions/${encodeURIComponent(state.session)}/messages`, { text, by: state.by });
    $("message").value = "";
    follow(state.session, "sessions");
  } catch (error) {
    say(`message refused: ${error.message}`);
  } finally {
    $("send").disabled = false;
  }
}

$("connect").addEventListener("submit", open);
$("signout").addEventListener("click", signOut);
$("compose").addEventListener("submit", send);
$("message").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) { event.preventDefault(); $("compose").requestSubmit(); }
});
const saved = JSON.parse(sessionStorage.getItem("agent-console") || "{}");
const params = new URLSearchParams(location.search);
$("session").value = params.get("session") || saved.session || `console-${Math.random().toString(36).slice(2, 8)}`;
$("token").value = saved.token || "";
if (saved.token) { state.token = saved.token; whoAmI(); } // still signed in after a reload
