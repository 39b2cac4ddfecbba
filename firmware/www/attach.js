// The web chat's attachments (loaded after the page's script, whose globals it uses): a photo, PDF or
// text file is made to fit the device's limits here (photos scaled down), POSTed to /upload, then sent
// to Claude with the typed text in an "attach" frame.
"use strict";
(function () {
var form = $("send"), pick = document.createElement("input"), button = document.createElement("button");
pick.type = "file"; pick.hidden = true; pick.id = "file";
pick.accept = "image/*,application/pdf,text/*,.md,.csv,.json,.txt";
button.type = "button"; button.id = "attach"; button.innerHTML = '<svg viewBox="0 0 24 24" width="22" height="22" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"><path d="M20 11l-8 8a5 5 0 0 1-7-7l9-9a3.5 3.5 0 0 1 5 5l-9 9a2 2 0 0 1-3-3l8-8"/></svg>';
button.title = "Attach a photo, PDF or text file"; button.setAttribute("aria-label", "Attach a file");
button.style.background = "#8a8495";
form.insertBefore(pick, form.firstChild); form.insertBefore(button, $("text"));
// Attachments: photos are made to fit the device's limits here (long side, bytes), then POSTed to
// /upload; the "attach" frame then sends them to Claude with the text.
var attached = null, limits = { photo_max_bytes: 204800, photo_max_px: 1568, file_max_bytes: 1048576 };
function mark(on) { button.style.background = on ? "#2e8b57" : "#8a8495"; button.title = on ? attached.name + " (click to remove)" : "Attach a photo, PDF or text file"; }
button.onclick = function () { if (attached) { attached = null; mark(false); } else pick.click(); };
pick.onchange = function () {
  attached = pick.files[0] || null;
  pick.value = "";
  if (attached) { mark(true); add("note", "attached: " + attached.name); }
};
function shrink(file) {
  if (!/^image\/(jpeg|png|webp|gif)$/.test(file.type) || !window.createImageBitmap) return Promise.resolve(file);
  return createImageBitmap(file).then(function (img) {
    var side = Math.max(img.width, img.height);
    if (side <= limits.photo_max_px && file.size <= limits.photo_max_bytes) return file;
    var scale = Math.min(1, limits.photo_max_px / side), quality = 0.85;
    function attempt() {
      var c = document.createElement("canvas");
      c.width = Math.max(1, Math.round(img.width * scale)); c.height = Math.max(1, Math.round(img.height * scale));
      c.getContext("2d").drawImage(img, 0, 0, c.width, c.height);
      return new Promise(function (done) { c.toBlob(done, "image/jpeg", quality); }).then(function (blob) {
        if (blob.size <= limits.photo_max_bytes || scale < 0.1) return blob;
        if (quality > 0.6) quality -= 0.15; else scale *= 0.75;
        return attempt();
      });
    }
    return attempt();
  });
}
function upload(file, text, retried) {
  return shrink(file).then(function (blob) {
    var name = file.name.replace(/\.[^.]*$/, "") + (blob === file ? file.name.replace(/^[^.]*/, "") : ".jpg");
    var key = "key=" + encodeURIComponent(hello ? hello.upload_key : ""); // the upload is this connection's
    return fetch("/upload" + (query() ? query() + "&" : "?") + key + "&name=" + encodeURIComponent(name),
                 { method: "POST", body: blob, headers: { "Content-Type": blob.type || "application/octet-stream" } });
  }).then(function (r) {
    return r.json().then(function (j) {
      if (r.status == 413 && j.photo_max_bytes && !retried && /^image\//.test(file.type)) {
        limits = j; return upload(file, text, true);
      }
      if (r.status != 200) throw new Error(j.error || ("upload failed (" + r.status + ")"));
      ws.send(JSON.stringify({ type: "attach", attachment: j.id, content: text, chat_id: chatId() }));
      add("user", (j.kind == "image" ? "[photo" : "[file " + j.name) + (text ? ": " + text : "") + "]");
      bubble = null;
    });
  });
}
// Runs before the page's own submit handler (capture at the target comes first) and takes over when a
// file is attached.
form.addEventListener("submit", function (ev) {
  if (!attached) return;
  ev.preventDefault();
  ev.stopImmediatePropagation();
  var text = $("text").value.trim(), file = attached;
  if (!ws || ws.readyState != 1) { add("err", "Not connected yet; your file was not sent."); return; }
  attached = null; mark(false);
  if (!/^image\//.test(file.type) && file.size > limits.file_max_bytes) {
    add("err", file.name + " is over the device's limit of " + Math.round(limits.file_max_bytes / 1024) + " KB for files.");
    return;
  }
  $("text").value = "";
  upload(file, text).catch(function (e) { add("err", e.message); });
}, true);
})();
