// The web app's views beside the chat (loaded after the page's script, whose globals it uses): status,
// settings, memory, rules and watchers, usage. Each asks the device over the WebSocket ({"type":"status"}...)
// and draws the answer; nothing comes from the internet.
"use strict";
(function () {
var TABS = [["chat", "Chat"], ["status", "Status"], ["settings", "Settings"], ["memory", "Memory"], ["rules", "Rules"], ["usage", "Usage"]];
var views = {}, current = "chat", liveTimer = null, owner = true, tabs = document.createElement("nav");
var ICONS = '<svg hidden><symbol id="i-chat" viewBox="0 0 24 24"><path d="M4 5h16v11H9l-5 4z"/></symbol><symbol id="i-status" viewBox="0 0 24 24"><path d="M3 12h4l3-7 4 14 3-7h4"/></symbol><symbol id="i-settings" viewBox="0 0 24 24"><path d="M4 6h10M18 6h2M4 12h4M12 12h8M4 18h12M20 18h0"/><circle cx="16" cy="6" r="2"/><circle cx="10" cy="12" r="2"/><circle cx="18" cy="18" r="2"/></symbol><symbol id="i-memory" viewBox="0 0 24 24"><path d="M6 3h9l4 4v14H6zM14 3v5h5M9 13h7M9 17h7"/></symbol><symbol id="i-rules" viewBox="0 0 24 24"><circle cx="12" cy="12" r="3"/><path d="M2 12s4-7 10-7 10 7 10 7-4 7-10 7S2 12 2 12z"/></symbol><symbol id="i-usage" viewBox="0 0 24 24"><path d="M4 20V10M10 20V4M16 20v-7M22 20H2"/></symbol></svg>';
document.body.insertAdjacentHTML("afterbegin", ICONS);
tabs.id = "tabs"; tabs.setAttribute("role", "tablist");
document.body.insertBefore(tabs, $("log"));
function send(m) { if (ws && ws.readyState == 1) ws.send(JSON.stringify(m)); }
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}
function button(text, onclick, cls) { var b = el("button", cls, text); b.type = "button"; b.onclick = onclick; return b; }
function num(n) { return Number(n).toLocaleString("en-US"); }
function short(n) { return n >= 1e6 ? +(n / 1e6).toFixed(1) + "M" : n >= 1e3 ? +(n / 1e3).toFixed(n < 1e4 ? 1 : 0) + "k" : String(n); }
function kb(bytes) { return Math.floor(bytes / 1024); } // as the board samples its heap: whole KB
TABS.forEach(function (t) {
  var b = el("button");
  b.type = "button"; b.id = "tab-" + t[0]; b.setAttribute("role", "tab");
  b.innerHTML = '<svg class="i"><use href="#i-' + t[0] + '"/></svg><span>' + t[1] + "</span>";
  b.onclick = function () { show(t[0]); };
  tabs.appendChild(b);
  if (t[0] != "chat") {
    var v = el("section", "view"); v.id = "v-" + t[0]; v.hidden = true;
    document.body.insertBefore(v, $("send"));
    views[t[0]] = v;
  }
});
function show(name) {
  current = name;
  TABS.forEach(function (t) { $("tab-" + t[0]).setAttribute("aria-selected", t[0] == name); });
  $("log").hidden = $("send").hidden = $("new").hidden = name != "chat";
  for (var k in views) views[k].hidden = k != name;
  clearInterval(liveTimer);
  if (name == "status" || name == "rules") liveTimer = setInterval(refresh, 5000); // live: a verdict shows as it comes
  refresh();
}
function refresh() {
  var ask = { status: "status", settings: "settings", memory: "files", rules: "watchers", usage: "usage" }[current];
  if (ask && owner) send({ type: ask });
  if (current == "memory" && edit && owner) send({ type: "file", name: edit.name });
}
var askChat = askHistory; // the page asks for the chat at every (re)connect: the open view is asked for too
askHistory = function () { askChat(); refresh(); };
function say(n, m) { // the device's answer to a change, in its own words, where the change was asked
  n.textContent = m.text;
  n.classList.toggle("ok", !!m.ok); // its other classes kept: a view's answer on top stays on top when redrawn
  n.classList.toggle("bad", !m.ok);
  n.scrollIntoView({ block: "nearest" }); // in sight, however far down the field is
}
function said(view) { return view.querySelector(".said.top") || view.insertBefore(el("p", "said top"), view.firstChild); }

// -- status: the console's status lines, live, and the heap over the last hour (KB throughout) --
function spark(samples, now) { // a sample a minute, then now: the line ends where the figure beside it says
  if (samples.length < 2) return "<small>heap history: collecting (a sample a minute)</small>";
  var values = now == null ? samples : samples.concat([now]);
  var w = 240, h = 40, lo = Math.min.apply(null, values), hi = Math.max.apply(null, values), span = hi - lo || 1;
  var pts = values.map(function (v, i) { return (i * w / (values.length - 1)).toFixed(1) + "," + (h - 2 - (v - lo) * (h - 4) / span).toFixed(1); });
  return '<svg class="spark" viewBox="0 0 ' + w + " " + h + '" width="' + w + '" height="' + h + '" aria-label="free heap, last hour"><polyline fill="none" stroke="#6c5ce7" stroke-width="2" points="' + pts.join(" ") + '"/></svg><small>free heap, last ' + samples.length + " min: " + num(lo) + "\u2013" + num(hi) + " KB" + (now == null ? "" : "; now " + num(now) + " KB") + "</small>";
}
function drawStatus(m) {
  var rows = "", free = m.heap_free == null ? null : kb(m.heap_free);
  m.lines.slice(1).forEach(function (line) {
    var at = line.indexOf(":"), head = at > 0 ? line.slice(0, at).trim() : "";
    if (head == "Heap") return; // shown above, in KB
    rows += at > 0 ? "<tr><th>" + esc(head) + "</th><td>" + esc(line.slice(at + 1).trim()) + "</td></tr>" : '<tr><td colspan="2">' + esc(line.trim()) + "</td></tr>";
  });
  var heap = free == null ? "" : '<p class="heap"><b>Heap</b> ' + num(free) + " KB free, " + num(kb(m.heap_used)) + " KB used</p>" + '<div class="sparkbox">' + spark(m.heap, free) + "</div>";
  views.status.innerHTML = "<h2>" + esc(m.lines[0] || "") + "</h2>" + heap + '<table class="kv">' + rows + "</table><small>refreshed every 5 s</small>";
}

// -- settings: every setting of config_show under a human heading; a save answered at its field; secrets write-only --
var GROUPS = [["WiFi", "wifi_config", 1], ["Telegram", "tg_config", 1], ["Models", "llm_config llm_profiles", 1], ["Matrix", "mx_config"], ["Discord", "dc_config"],
  ["Web chat and MCP", "gw_config mcp_config"], ["Web search and web services", "web_config"], ["MQTT and Home Assistant", "mqtt_config"],
  ["Voice", "voice_config"], ["Safety, budgets and limits", "safety_config"], ["Tools and heartbeat", "tool_config agent_config"],
  ["Photos and files", "media_config"], ["Board", "system"]];
var SUBS = { llm_profiles: "Profiles p1\u2013p6 and their API keys (llm_add, llm_key)" }; // closed inside their section
var fields = {}, OTHER = ["Other", "", 0]; // Other: a namespace this page does not know yet
function group(ns) {
  var found = OTHER, v = views.settings;
  GROUPS.forEach(function (g) { if ((" " + g[1] + " ").indexOf(" " + ns + " ") >= 0) found = g; });
  if (!found.box) GROUPS.concat([OTHER]).forEach(function (g) { // every heading at once, in this order
    var box = g.box = el("details"), sum = el("summary", null, g[0]);
    box.open = !!g[2]; box.hidden = true; box.dataset.group = g[0]; g.n = 0;
    sum.appendChild(g.count = el("small", "count"));
    box.appendChild(sum); box.appendChild(g.list = el("div")); box.appendChild(g.subs = el("div"));
    v.appendChild(box);
  });
  found.box.hidden = false;
  found.n++;
  found.count.textContent = found.n + (found.n == 1 ? " setting" : " settings");
  if (!SUBS[ns]) return found.list;
  if (!found[ns]) { found[ns] = found.subs.appendChild(el("details", "sub")); found[ns].appendChild(el("summary", null, SUBS[ns])); }
  return found[ns];
}
function field(s) {
  var name = s[0] + "." + s[1], row = el("form", "set"), label = el("label"), input = el("input");
  var reset = button(s[6] === "" ? "Clear" : "Reset", function () {
    if (s[3] && !confirm("Clear " + name + "?")) return;
    send({ type: "set", name: name, value: "" });
    say(f.said, { ok: true, text: "resetting\u2026" });
  }, "reset");
  var f = fields[name] = { row: row, input: input, reset: reset, said: el("small", "said") };
  row.dataset.name = name;
  input.name = "value"; input.id = "set-" + s[0] + "-" + s[1]; input.autocomplete = "off"; input.spellcheck = false;
  label.htmlFor = input.id;
  label.appendChild(el("code", null, s[1]));
  label.appendChild(el("small", null, s[5] + (s[3] ? "; write-only: type a new one to replace it" : s[6] !== "" ? " (default " + s[6] + ")" : "")));
  if (s[3]) input.type = "password";
  if (s[4] == "int") input.inputMode = "numeric";
  reset.title = s[6] === "" ? "leave it unset" : "back to the default, " + s[6];
  [label, input, el("button", null, "Save"), reset, f.said].forEach(function (x) { row.appendChild(x); });
  row.onsubmit = function (ev) {
    ev.preventDefault();
    if (s[3] && !input.value) return;
    send({ type: "set", name: name, value: input.value });
    say(f.said, { ok: true, text: "saving\u2026" });
    if (s[3]) input.value = "";
  };
  group(s[0]).appendChild(row);
  return f;
}
function drawSettings(m) {
  var v = views.settings;
  if (!v.querySelector(".intro")) v.insertBefore(el("p", "intro", "Each Save runs config_set, as on the console; secrets are write-only."), v.firstChild);
  m.settings.forEach(function (s) { // fields are made once and kept: open sections and answers stay as they are
    var f = fields[s[0] + "." + s[1]] || field(s), input = f.input, value = s[2] == "(not set)" ? "" : s[2];
    if (s[3]) input.placeholder = s[2];
    else {
      input.placeholder = s[6] !== "" ? s[6] : "(not set)";
      if (document.activeElement != input && input.value == (input.dataset.was || "")) input.value = value;
      input.dataset.was = value;
    }
    f.reset.hidden = !s[7];
  });
}

// -- memory: SOUL.md, USER.md, MEMORY.md, daily notes (editable), skills (read-only) --
var edit = null; // the open file: {name, saved (its text on the device), max}
function bytes(text) { return new Blob([text]).size; }
function drawFiles(m) {
  var v = views.memory, list = v.querySelector(".files");
  if (!list) { v.appendChild(list = el("div", "files")); v.appendChild(el("div", "editor")); }
  list.textContent = "";
  m.files.forEach(function (f) {
    var b = button(f[0], function () {
      if (edit && edit.dirty() && edit.name != f[0] && !confirm("Leave " + edit.name + " without saving your changes?")) return;
      send({ type: "file", name: f[0] });
    }, edit && f[0] == edit.name ? "on" : "");
    b.appendChild(el("small", null, num(f[1]) + " B"));
    b.title = num(f[1]) + " bytes" + (f[2] ? ", at most " + num(f[2]) : ", read-only");
    list.appendChild(b);
  });
}
function fit(area) { // as tall as the screen allows (at least 12 lines), longer with a longer text
  var v = views.memory, line = parseFloat(getComputedStyle(area).lineHeight) || 18, bar = area.nextSibling;
  var top = area.getBoundingClientRect().top - v.getBoundingClientRect().top + v.scrollTop;
  area.style.height = "auto";
  area.style.height = Math.max(area.scrollHeight + 2, v.clientHeight - top - bar.offsetHeight - 14, 12 * line + 12) + "px";
}
function drawFile(m) {
  var box = views.memory.querySelector(".editor"), area, size, state, save, bar, out;
  if (edit && edit.name == m.name && edit.dirty()) { edit.saved = m.content; edit.area.oninput(); return; } // keep what is typed
  box.textContent = "";
  views.memory.querySelectorAll(".files button").forEach(function (b) { b.className = b.firstChild.nodeValue == m.name ? "on" : ""; });
  box.appendChild(el("h3", null, m.name));
  box.appendChild(area = el("textarea"));
  box.appendChild(bar = el("div", "savebar"));
  bar.appendChild(state = el("span", "state"));
  bar.appendChild(size = el("small", "size"));
  area.value = m.content; area.readOnly = !m.max_bytes; area.spellcheck = false; area.setAttribute("aria-label", m.name);
  edit = { name: m.name, saved: m.content, max: m.max_bytes, area: area, dirty: function () { return area.value != edit.saved; } };
  if (m.max_bytes) {
    bar.appendChild(save = button("Save", function () { edit.sent = area.value; send({ type: "save", name: m.name, content: area.value }); say(out, { ok: true, text: "saving\u2026" }); }));
    bar.appendChild(out = el("small", "said"));
  }
  edit.said = out;
  area.oninput = function () {
    var n = bytes(area.value), over = m.max_bytes && n > m.max_bytes, dirty = edit.dirty();
    size.textContent = num(n) + (m.max_bytes ? " of " + num(m.max_bytes) + " bytes" : " bytes, read-only");
    size.className = "size" + (over ? " over" : "");
    state.textContent = !m.max_bytes ? "" : dirty ? "unsaved changes" : "saved";
    state.className = "state " + (dirty ? "dirty" : "clean");
    if (save) save.disabled = !dirty;
    fit(area);
  };
  area.oninput();
}
function saved(m) {
  if (!edit || edit.name != m.name || !edit.said) return say(said(views.memory), m);
  if (m.ok) edit.saved = edit.sent;
  say(edit.said, m);
  edit.area.oninput();
  send({ type: "files" }); // the sizes
}
addEventListener("resize", function () { if (edit && current == "memory") fit(edit.area); });

// -- rules and watchers: last reading and verdict, pause/resume, check, remove --
var drawn = ""; // the watchers as last drawn: a refresh that changes nothing leaves the cards alone
function drawWatchers(m) {
  var v = views.rules, keep = v.querySelector(".said.top"), now = JSON.stringify(m.watchers);
  if (now == drawn) return;
  drawn = now;
  v.textContent = "";
  if (keep) v.appendChild(keep);
  if (!m.watchers.length) v.appendChild(el("p", null, "No watchers yet: ask Mimi to watch something, or use watch_add on the console."));
  m.watchers.forEach(function (w) {
    var card = el("div", "card" + (w.paused ? " paused" : ""));
    card.dataset.name = w.name;
    card.appendChild(el("b", null, w.name + (w.paused ? " (paused)" : "")));
    card.appendChild(el("div", "line", w.line));
    if (w.rule) card.appendChild(el("div", null, "rule: " + w.rule));
    card.appendChild(el("div", null, w.reading == null ? "no reading yet" : "last: " + w.reading + " \u2192 " + w.verdict));
    function act(a) { return function () { if (a != "remove" || confirm("Remove the watcher " + w.name + "?")) send({ type: "watcher", name: w.name, action: a }); }; }
    card.appendChild(button(w.paused ? "Resume" : "Pause", act(w.paused ? "resume" : "pause")));
    card.appendChild(button("Check now", act("check")));
    card.appendChild(button("Remove", act("remove"), "deny"));
    v.appendChild(card);
  });
}

// -- usage: tokens a day for 30 days, scaled to the largest day; the budget line when in range; the audit log --
var DEMO = "offline demo (make sim's stand-in: not billed)";
function usd(micro) { return micro == null ? "price unknown" : micro ? "about $" + (micro / 1e6).toFixed(micro < 1e6 ? 4 : 2) : "$0"; }
var DAYS_LEAST = 7; // the chart starts at the board's first day of use, but shows a week at least
function drawUsage(m) {
  var first = m.days.findIndex(function (d) { return d[1] > 0; });
  var w = 300, h = 160, days = m.days.slice(Math.max(0, Math.min(first < 0 ? m.days.length : first, m.days.length - DAYS_LEAST))), n = days.length || 1, bw = w / n, top = 0, sum = 0, cost = 0, known = true, bars = "";
  days.forEach(function (d) { top = Math.max(top, d[1]); sum += d[1]; if (d[2] == null) known = false; else cost += d[2]; });
  var scale = top * 1.08 || 1, fits = top && m.day_tokens && m.day_tokens <= scale, y = function (t) { return (h - t * (h - 2) / scale).toFixed(1); };
  function about(i) {
    var d = days[i], demo = i == days.length - 1 ? m.demo : 0;
    return d[0] + ": " + num(d[1]) + " tokens, " + (demo ? num(demo) + " of them the " + DEMO + ", " : "") + usd(d[2]);
  }
  days.forEach(function (d, i) {
    var x = (i * bw + 1).toFixed(1), bh = d[1] ? Math.max(4, d[1] * (h - 2) / scale) : 0, dh = i == days.length - 1 && m.demo && bh ? Math.min(bh, Math.max(4, bh * m.demo / d[1])) : 0;
    bars += '<g data-i="' + i + '"><title>' + about(i) + '</title><rect class="hit" x="' + x + '" y="0" width="' + Math.max(1, bw - 2).toFixed(1) + '" height="' + h + '"/>';
    if (bh) bars += '<rect class="bar" x="' + x + '" y="' + (h - bh).toFixed(1) + '" width="' + Math.max(1, bw - 2).toFixed(1) + '" height="' + bh.toFixed(1) + '"/>';
    if (dh) bars += '<rect class="bar demo" x="' + x + '" y="' + (h - dh).toFixed(1) + '" width="' + Math.max(1, bw - 2).toFixed(1) + '" height="' + dh.toFixed(1) + '"/>';
    bars += "</g>";
  });
  var budget = fits ? '<line class="budget" x1="0" x2="' + w + '" y1="' + y(m.day_tokens) + '" y2="' + y(m.day_tokens) + '"/>' : "";
  var rows = m.audit.map(function (a) {
    return '<tr><td class="t">' + esc(String(a[2])) + '</td><td class="o ' + (a[3] ? "ok" : "bad") + '">' + (a[3] ? "ok" : "failed") + '</td><td class="w">' + esc(a[1]) + '</td><td class="u">' + new Date(a[0] * 1000).toISOString().slice(5, 16).replace("T", " ") + " UTC, " + a[4] + ' ms</td><td class="in">' + esc(a[5]) + '</td><td class="out">' + esc(a[6]) + "</td></tr>";
  }).join("");
  views.usage.innerHTML = (m.demo_answers ? '<p class="demo">The offline demo answers on this board (make sim without an API key): its tokens are counted here and never billed ($0).</p>' : "") +
    "<h2>Tokens a day, last " + days.length + " days</h2>" +
    '<svg class="chart" viewBox="0 0 ' + w + " " + h + '" preserveAspectRatio="none" role="img" aria-label="tokens per day">' + bars + budget + "</svg>" +
    '<div class="axis"><small>' + (days.length ? days[0][0] : "") + "</small><small>top " + short(top) + " a day</small><small>" + (days.length ? days[days.length - 1][0] : "") + "</small></div>" +
    '<p class="pick">' + (top ? "Tap or point at a bar for its day." : "No tokens used in these days.") + "</p>" +
    "<p>" + num(sum) + " tokens, " + usd(known ? cost : null) + (m.demo ? " (today " + num(m.demo) + " of them the " + DEMO + ", $0)" : "") +
    (!m.day_tokens ? "; no daily budget" : fits || !top ? "; daily budget " + short(m.day_tokens) + (top ? " (the dashed line)" : "") : '; <span class="off">budget ' + short(m.day_tokens) + ": off the scale</span>") + "</p>" +
    "<h2>Audit log, newest " + m.audit.length + '</h2><table class="audit"><thead><tr><th>tool</th><th></th><th>who</th><th>when</th><th>input</th><th>result</th></tr></thead><tbody>' + rows + "</tbody></table>";
  var chart = views.usage.querySelector(".chart"), pick = views.usage.querySelector(".pick");
  chart.onclick = chart.onmouseover = function (ev) {
    var g = ev.target.closest("g");
    if (!g) return;
    chart.querySelectorAll("g.on").forEach(function (x) { x.classList.remove("on"); });
    g.classList.add("on");
    pick.textContent = about(+g.dataset.i);
  };
}

window.onView = function (m) {
  if (m.type == "hello") { // the views are the owner's: another role's page offers the chat alone
    owner = !m.role || m.role == "owner";
    tabs.hidden = !owner;
    if (!owner && current != "chat") show("chat");
    return true;
  }
  var draw = { status: drawStatus, settings: drawSettings, files: drawFiles, file: drawFile, watchers: drawWatchers, usage: drawUsage }[m.type];
  if (draw) { draw(m); return true; }
  if (m.type == "save") { saved(m); return true; }
  if (m.type == "set") {
    var f = fields[m.name];
    say(f ? f.said : said(views.settings), m);
    send({ type: "settings" });
    return true;
  }
  if (m.type != "watcher") return false;
  say(said(views.rules), m);
  refresh();
  return true;
};
var wide = "padding-left:max(.8em,calc(50% - 400px));padding-right:max(.8em,calc(50% - 400px))";
var css = el("style");
css.textContent = "[hidden]{display:none!important}nav{display:flex;background:#4a4163;overflow-x:auto;padding:0 max(0px,calc(50% - 400px))}nav button{flex:1;background:none;border-radius:0;padding:.35em .2em;font-size:.72em;color:#ddd;display:flex;flex-direction:column;align-items:center;gap:.1em;min-width:3.6em}" +
  "nav button[aria-selected=true]{color:#fff;background:#ffffff1f;box-shadow:inset 0 -3px #a99cff}svg.i{width:1.45em;height:1.45em;fill:none;stroke:currentColor;stroke-width:2;stroke-linecap:round;stroke-linejoin:round}.view{flex:1;overflow-y:auto;padding:.8em;" + wide + "}" +
  "h2{font-size:1em;margin:.2em 0 .5em}table{border-collapse:collapse;width:100%;font-size:.85em}th,td{text-align:left;padding:.25em .4em;border-bottom:1px solid #ddd;vertical-align:top;overflow-wrap:break-word}" +
  "details{background:#fff;border-radius:.6em;margin:0 0 .6em;box-shadow:0 1px 2px #0002}summary{padding:.6em .8em;font-weight:600;cursor:pointer}summary .count{font-weight:400;color:#777;margin-left:.5em}details>div{padding:0 .8em .3em}details.sub{box-shadow:none;border-top:1px solid #eee;border-radius:0;margin:0}details.sub summary{padding:.5em 0;font-weight:400;color:#444}.intro{color:#555;font-size:.85em;margin:0 0 .6em}" +
  "form.set{display:grid;grid-template-columns:minmax(0,1fr) auto auto;gap:.3em .4em;align-items:center;padding:.5em 0;border:0;border-top:1px solid #eee;background:none}form.set label{grid-column:1/-1}form.set code{font-weight:600}" +
  "form.set label small{display:block;color:#666;font-size:.85em}@media(min-width:700px){form.set{grid-template-columns:14em minmax(0,1fr) auto auto}form.set label{grid-column:auto}form.set .said{grid-column:2/-1}}form.set input{font:inherit;padding:.35em;border:1px solid #ccc;border-radius:.4em;min-width:0}.reset{background:#8a8495}.said{grid-column:1/-1}.said:empty{display:none}" +
  ".said{padding:.3em .6em;border-radius:.4em;font-size:.85em;overflow-wrap:anywhere}.said.ok{background:#ddf3dd}.said.bad{background:#fde2dd;color:#8a2313}p.said{margin:0 0 .6em}" +
  ".files button{margin:0 .3em .3em 0;background:#8a8495;font-size:.85em}.files button small{margin-left:.4em;opacity:.8}.files button.on{background:#6c5ce7}.editor h3{margin:.3em 0;font-size:1em}.editor textarea{display:block;width:100%;height:auto;resize:vertical;font:13px/1.4 ui-monospace,monospace;border:1px solid #ccc;border-radius:.4em;padding:.4em}" +
  ".savebar{position:sticky;bottom:-.8em;display:flex;flex-wrap:wrap;align-items:center;gap:.3em .6em;padding:.4em 0 1.2em;background:#f4f1ec}.savebar .size{flex:1;color:#555}.size.over{color:#b52a13;font-weight:600}.state{font-size:.85em;font-weight:600;padding:.1em .5em;border-radius:1em}.state.clean{background:#ddf3dd;color:#23632a}.state.dirty{background:#fff0c2;color:#7a5300}.state:empty{display:none}.savebar .said{flex-basis:100%}" +
  ".card{background:#fff;border-radius:.6em;padding:.6em;margin-bottom:.6em;box-shadow:0 1px 2px #0002}.card.paused{opacity:.7}.card .line{font-size:.8em;color:#555;overflow-wrap:anywhere}.card button{margin:.4em .4em 0 0;font-size:.85em}.card button.deny{background:#8a8495}" +
  ".chart{display:block;width:100%;height:160px;background:#fff;border-radius:.4em}.chart .hit{fill:transparent}.chart .bar{fill:#6c5ce7}.chart .bar.demo{fill:#b9b4c4}.chart g.on .hit{fill:#6c5ce71a}.chart .budget{stroke:#d9534f;stroke-dasharray:4 3;vector-effect:non-scaling-stroke}.axis{display:flex;justify-content:space-between;color:#777}" +
  ".pick{min-height:1.45em;margin:.3em 0;font-size:.9em}.off,.demo{color:#7a5300}p.demo{background:#fff0c2;padding:.4em .6em;border-radius:.4em}.audit .o.ok{color:#23632a}.audit .o.bad{color:#b52a13;font-weight:600}.audit .in,.audit .out{font-size:.92em;color:#444}.audit .w,.audit .u{white-space:nowrap}" +
  "@media(max-width:640px){.audit thead{display:none}.audit,.audit tbody{display:block}.audit tr{display:flex;flex-wrap:wrap;gap:0 .6em;background:#fff;border-radius:.5em;margin-bottom:.5em;padding:.45em .7em;box-shadow:0 1px 2px #0002}.audit td{border:0;padding:.1em 0;min-width:0}.audit .t{flex:1 1 calc(100% - 5em);font-weight:600}.audit .w{flex:1 1 auto;white-space:normal}.audit .o,.audit .u{margin-left:auto}.audit .in,.audit .out{flex-basis:100%}}" +
  ".kv th{white-space:nowrap;color:#555}.sparkbox{margin:.3em 0 .6em}.sparkbox small{display:block;color:#777}";
document.head.appendChild(css);
show("chat");
if (hello) onView(hello); // the connection's role, when it came before this file ran
})();
