// The web app's views beside the chat (loaded after the page's script, whose globals it uses): status,
// settings, memory, rules and watchers, usage. Each asks the device over the WebSocket ({"type":"status"}...)
// and draws the answer; nothing comes from the internet.
"use strict";
(function () {
var TABS = [["chat", "Chat"], ["status", "Status"], ["settings", "Settings"], ["memory", "Memory"], ["rules", "Rules"], ["usage", "Usage"]];
var views = {}, current = "chat", statusTimer = null, openFile = null, tabs = document.createElement("nav");
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
function icon(name) { return '<svg class="i"><use href="#i-' + name + '"/></svg>'; }
function button(text, onclick, cls) { var b = el("button", cls, text); b.type = "button"; b.onclick = onclick; return b; }
TABS.forEach(function (t) {
  var b = el("button");
  b.type = "button"; b.id = "tab-" + t[0]; b.setAttribute("role", "tab");
  b.innerHTML = icon(t[0] == "rules" ? "rules" : t[0]) + "<span>" + t[1] + "</span>";
  b.onclick = function () { show(t[0]); };
  $("tabs").appendChild(b);
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
  clearInterval(statusTimer);
  if (name == "status") statusTimer = setInterval(function () { send({ type: "status" }); }, 5000);
  refresh();
}
function refresh() {
  var ask = { status: "status", settings: "settings", memory: "files", rules: "watchers", usage: "usage" }[current];
  if (ask) send({ type: ask });
  if (current == "memory" && openFile) send({ type: "file", name: openFile });
}
var askChat = askHistory; // the page asks for the chat at every (re)connect: the open view is asked for too
askHistory = function () { askChat(); refresh(); };
function note(view, m) { // the device's answer to a change, in its own words
  var n = view.querySelector(".result") || view.insertBefore(el("p", "result"), view.firstChild);
  n.textContent = m.text;
  n.className = "result " + (m.ok ? "ok" : "bad");
}
// -- status: the console's status lines, live, and the heap over the last hour --
function spark(values) {
  if (values.length < 2) return "<small>heap history: collecting (a sample a minute)</small>";
  var w = 240, h = 40, lo = Math.min.apply(null, values), hi = Math.max.apply(null, values), span = hi - lo || 1;
  var pts = values.map(function (v, i) { return (i * w / (values.length - 1)).toFixed(1) + "," + (h - 2 - (v - lo) * (h - 4) / span).toFixed(1); });
  return '<svg class="spark" viewBox="0 0 ' + w + " " + h + '" width="' + w + '" height="' + h + '" aria-label="free heap, last hour"><polyline fill="none" stroke="#6c5ce7" stroke-width="2" points="' + pts.join(" ") + '"/></svg><small>free heap, last ' + values.length + " min: " + lo + "\u2013" + hi + " KB</small>";
}
function drawStatus(m) {
  var v = views.status, rows = "";
  m.lines.slice(1).forEach(function (line) {
    var at = line.indexOf(":");
    rows += at > 0 ? "<tr><th>" + esc(line.slice(0, at).trim()) + "</th><td>" + esc(line.slice(at + 1).trim()) + "</td></tr>" : '<tr><td colspan="2">' + esc(line.trim()) + "</td></tr>";
  });
  var heap = m.heap_free == null ? "" : "<p><b>Heap</b> " + Math.round(m.heap_free / 1024) + " KB free, " + Math.round(m.heap_used / 1024) + " KB used</p>";
  v.innerHTML = "<h2>" + esc(m.lines[0] || "") + "</h2>" + heap + '<div class="sparkbox">' + spark(m.heap) + '</div><table class="kv">' + rows + "</table><small>refreshed every 5 s</small>";
}
// -- settings: every setting of config_show, by namespace; secrets write-only --
function drawSettings(m) {
  var v = views.settings, keep = v.querySelector(".result"), groups = {};
  v.textContent = "";
  if (keep) v.appendChild(keep);
  m.settings.forEach(function (s) {
    var g = groups[s[0]];
    if (!g) { g = groups[s[0]] = el("fieldset"); g.appendChild(el("legend", null, s[0])); v.appendChild(g); }
    var row = el("form", "set"), label = el("label", null, s[1]), input = el("input");
    row.dataset.name = s[0] + "." + s[1];
    input.name = "value"; input.autocomplete = "off"; input.spellcheck = false;
    if (s[3]) { input.type = "password"; input.placeholder = s[2] + " (write-only: type a new one)"; }
    else { input.value = s[2] == "(not set)" ? "" : s[2]; input.placeholder = s[2]; if (s[4] == "int") input.inputMode = "numeric"; }
    label.appendChild(el("small", null, s[5]));
    row.appendChild(label); row.appendChild(input); row.appendChild(el("button", null, "Save"));
    row.onsubmit = function (ev) {
      ev.preventDefault();
      if (s[3] && !input.value) return;
      send({ type: "set", name: row.dataset.name, value: input.value });
      if (s[3]) input.value = "";
    };
    g.appendChild(row);
  });
}
// -- memory: SOUL.md, USER.md, MEMORY.md, daily notes (editable), skills (read-only) --
function drawFiles(m) {
  var v = views.memory, list = v.querySelector(".files");
  if (!list) { v.appendChild(list = el("div", "files")); v.appendChild(el("div", "editor")); }
  list.textContent = "";
  m.files.forEach(function (f) {
    var b = button(f[0], function () { openFile = f[0]; send({ type: "file", name: f[0] }); }, f[0] == openFile ? "on" : "");
    b.title = f[1] + " bytes" + (f[2] ? ", at most " + f[2] : ", read-only");
    list.appendChild(b);
  });
}
function drawFile(m) {
  var box = views.memory.querySelector(".editor"), area = el("textarea"), count = el("small");
  box.textContent = "";
  box.appendChild(el("h3", null, m.name));
  area.value = m.content; area.readOnly = !m.max_bytes; area.rows = 14; area.spellcheck = false;
  function counted() { count.textContent = new Blob([area.value]).size + (m.max_bytes ? " / " + m.max_bytes + " bytes" : " bytes, read-only"); }
  area.oninput = counted; counted();
  box.appendChild(area); box.appendChild(count);
  if (m.max_bytes) box.appendChild(button("Save", function () { send({ type: "save", name: m.name, content: area.value }); }));
}
// -- rules and watchers: last reading and verdict, pause/resume, check, remove --
function drawWatchers(m) {
  var v = views.rules, keep = v.querySelector(".result");
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
// -- usage: tokens a day for 30 days as bars, the daily budget as a line; the newest audit entries --
function usd(micro) { return micro == null ? "?" : "$" + (micro / 1e6).toFixed(micro < 1e6 ? 4 : 2); }
function drawUsage(m) {
  var w = 300, h = 120, n = m.days.length || 1, bw = w / n, top = m.day_tokens || 0, sum = 0, cost = 0, bars = "";
  m.days.forEach(function (d) { top = Math.max(top, d[1]); sum += d[1]; cost += d[2] || 0; });
  top = top || 1;
  m.days.forEach(function (d, i) {
    if (!d[1]) return;
    var bh = Math.max(1, d[1] * (h - 10) / top);
    bars += '<rect class="bar" x="' + (i * bw + 1).toFixed(1) + '" y="' + (h - bh).toFixed(1) + '" width="' + Math.max(1, bw - 2).toFixed(1) + '" height="' + bh.toFixed(1) + '"><title>' + d[0] + ": " + d[1] + " tokens, about " + usd(d[2]) + "</title></rect>";
  });
  var budget = m.day_tokens ? '<line class="budget" x1="0" x2="' + w + '" y1="' + (h - m.day_tokens * (h - 10) / top).toFixed(1) + '" y2="' + (h - m.day_tokens * (h - 10) / top).toFixed(1) + '" stroke="#d9534f" stroke-dasharray="4 3"/>' : "";
  var first = m.days.length ? m.days[0][0] : "", last = m.days.length ? m.days[m.days.length - 1][0] : "";
  var rows = m.audit.map(function (a) {
    return "<tr><td>" + new Date(a[0] * 1000).toISOString().slice(5, 16).replace("T", " ") + "</td><td>" + esc(a[1]) + "</td><td>" + esc(String(a[2])) + "</td><td>" + (a[3] ? "ok" : "FAILED") + "</td><td>" + a[4] + "</td><td>" + esc(a[5]) + "</td><td>" + esc(a[6]) + "</td></tr>";
  }).join("");
  views.usage.innerHTML = "<h2>Tokens a day, last " + m.days.length + " days</h2>" +
    '<svg class="chart" viewBox="0 0 ' + w + " " + h + '" preserveAspectRatio="none" role="img" aria-label="tokens per day">' + bars + budget + "</svg>" +
    '<div class="axis"><small>' + first + "</small><small>" + last + "</small></div><p>" + sum + " tokens, about " + usd(cost) + " in all" +
    (m.day_tokens ? "; daily budget " + m.day_tokens + " tokens (dashed line)" : "; no daily budget") + "</p>" +
    "<h2>Audit log, newest " + m.audit.length + '</h2><div class="wide"><table class="audit"><tr><th>UTC</th><th>who</th><th>tool</th><th></th><th>ms</th><th>input</th><th>result</th></tr>' + rows + "</table></div>";
}
window.onView = function (m) {
  if (m.type == "tool") { // what Claude is doing meanwhile, as Telegram's draft shows it
    if (!m.chat_id || m.chat_id == chatId()) add("note tool", ({ web_search: "searching the web", web_fetch: "reading a web page" }[m.name] || "running " + m.name) + "\u2026");
    return true;
  }
  var draw = { status: drawStatus, settings: drawSettings, files: drawFiles, file: drawFile, watchers: drawWatchers, usage: drawUsage }[m.type];
  if (draw) { draw(m); return true; }
  var done = { set: "settings", save: "memory", watcher: "rules" }[m.type];
  if (!done) return false;
  note(views[done], m);
  refresh();
  return true;
};
var css = el("style");
css.textContent = "[hidden]{display:none!important}nav{display:flex;background:#4a4163;overflow-x:auto}nav button{flex:1;background:none;border-radius:0;padding:.35em .2em;font-size:.72em;color:#ddd;display:flex;flex-direction:column;align-items:center;gap:.1em;min-width:3.6em}" +
  "nav button[aria-selected=true]{color:#fff;background:#ffffff1f;box-shadow:inset 0 -3px #a99cff}svg.i{width:1.45em;height:1.45em;fill:none;stroke:currentColor;stroke-width:2;stroke-linecap:round;stroke-linejoin:round}.view{flex:1;overflow-y:auto;padding:.8em}.tool{font-style:italic}" +
  "h2{font-size:1em;margin:.2em 0 .5em}table{border-collapse:collapse;width:100%;font-size:.85em}th,td{text-align:left;padding:.25em .4em;border-bottom:1px solid #ddd;vertical-align:top;overflow-wrap:anywhere}" +
  "fieldset{border:1px solid #ccc;border-radius:.5em;margin:0 0 .8em;background:#fff}legend{font-weight:600}form.set{display:grid;grid-template-columns:1fr;gap:.25em;padding:.4em 0;border:0;border-bottom:1px solid #eee;background:none}" +
  "form.set label small{display:block;color:#777}form.set input{font:inherit;padding:.35em;border:1px solid #ccc;border-radius:.4em;min-width:0}form.set button{justify-self:end}" +
  ".result{padding:.4em .6em;border-radius:.4em}.result.ok{background:#ddf3dd}.result.bad{background:#fde2dd;color:#8a2313}" +
  ".files button{margin:0 .3em .3em 0;background:#8a8495;font-size:.85em}.files button.on{background:#6c5ce7}.editor textarea{width:100%;font:13px/1.4 ui-monospace,monospace;border:1px solid #ccc;border-radius:.4em;padding:.4em}" +
  ".card{background:#fff;border-radius:.6em;padding:.6em;margin-bottom:.6em;box-shadow:0 1px 2px #0002}.card.paused{opacity:.7}.card .line{font-size:.8em;color:#555;overflow-wrap:anywhere}.card button{margin:.4em .4em 0 0;font-size:.85em}.card button.deny{background:#8a8495}" +
  ".chart{width:100%;height:160px;background:#fff;border-radius:.4em}.chart .bar{fill:#6c5ce7}.axis{display:flex;justify-content:space-between;color:#777}.wide{overflow-x:auto}.audit{min-width:44em}.kv th{white-space:nowrap;color:#555}.sparkbox{margin:.3em 0 .6em}.sparkbox small{display:block;color:#777}";
document.head.appendChild(css);
show("chat");
})();
