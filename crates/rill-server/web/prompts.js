// Style prompts: up to 6 weighted words or audio clips, blended by the server's
// MusicCoCa into the stream's style (the protocol's `prompts`). Clips are uploaded
// over HTTP (POST /api/clips) and referred to by the id it returns; the WebSocket
// only carries the small prompt list. Loaded before app.js, which calls
// installPrompts with `apply(prompts)` (send now, or keep for the next start).
/* exported installPrompts */
"use strict";

function installPrompts({ $, rill, apply }) {
  const MAX = 6;
  const rows = [];  // {kind: "text"|"clip", el, input?, id?, label?, weight}
  rill.prompts = { rows: () => rows.length, uploads: 0, lastStyle: null };

  const error = (msg) => { $("prompt-error").textContent = msg || ""; };

  function refresh() {
    const full = rows.length >= MAX;
    $("prompt-add").disabled = full || !available;
    $("prompt-clip-btn").classList.toggle("disabled", full || !available);
    $("prompt-clip").disabled = full || !available;
    $("prompt-apply").disabled = rows.length === 0 || !available;
    rows.forEach((r, i) => { r.el.dataset.testid = `prompt-row-${i}`; });
  }

  function addRow(kind, opts = {}) {
    if (rows.length >= MAX) { error(`At most ${MAX} prompts are blended.`); return null; }
    const el = document.createElement("div");
    el.className = "prompt-row";
    const r = { kind, el, weight: 1 };
    if (kind === "text") {
      const input = document.createElement("input");
      input.type = "text";
      input.maxLength = 1000;
      input.placeholder = "e.g. disco funk, 124 BPM";
      input.value = opts.text || "";
      input.setAttribute("aria-label", "Prompt text");
      input.dataset.testid = "prompt-text";
      input.addEventListener("keydown", (e) => { if (e.key === "Enter") submit(); });
      input.addEventListener("input", () => error(""));
      r.input = input;
      el.append(input);
    } else {
      const span = document.createElement("span");
      span.className = "clip-label";
      span.textContent = `♪ ${opts.label}`;
      span.title = `clip ${opts.id}`;
      r.id = opts.id;
      r.label = opts.label;
      el.append(span);
    }
    const w = document.createElement("input");
    w.type = "range"; w.min = "0"; w.max = "1"; w.step = "0.05"; w.value = "1";
    w.setAttribute("aria-label", "Weight");
    const out = document.createElement("output");
    out.textContent = "1.00";
    w.addEventListener("input", () => { r.weight = +w.value; out.textContent = (+w.value).toFixed(2); });
    const del = document.createElement("button");
    del.type = "button"; del.className = "btn icon-btn"; del.textContent = "×";
    del.setAttribute("aria-label", "Remove this prompt");
    del.addEventListener("click", () => {
      rows.splice(rows.indexOf(r), 1);
      el.remove();
      refresh();
    });
    el.append(w, out, del);
    $("prompt-rows").append(el);
    rows.push(r);
    refresh();
    if (r.input) r.input.focus();
    return r;
  }

  async function upload(file) {
    error("");
    if (!file) return;
    $("prompt-status").textContent = `Encoding ${file.name}…`;
    try {
      const resp = await fetch("/api/clips", {
        method: "POST",
        body: file,
        headers: { "Content-Type": file.type || "application/octet-stream" },
      });
      const text = await resp.text();
      if (!resp.ok) { error(text.trim() || `Upload failed (HTTP ${resp.status}).`); return; }
      const clip = JSON.parse(text);
      rill.prompts.uploads++;
      addRow("clip", { id: clip.id, label: `${file.name} (${Number(clip.seconds).toFixed(1)} s)` });
    } catch (e) {
      error(`Upload failed: ${e && e.message || e}`);
    } finally {
      $("prompt-status").textContent = "";
    }
  }

  // The prompt list as the protocol takes it, or an error message.
  function collect() {
    const out = [];
    for (const r of rows) {
      if (r.kind === "text") {
        const t = r.input.value.trim();
        if (!t) return { msg: "A prompt is empty: type some words or remove it." };
        out.push({ text: t, weight: r.weight });
      } else {
        out.push({ clip: r.id, weight: r.weight });
      }
    }
    if (!out.length) return { msg: "Add a prompt first." };
    if (!out.some((p) => p.weight > 0)) return { msg: "At least one weight must be above 0." };
    return { prompts: out };
  }

  function submit() {
    const c = collect();
    if (c.msg) { error(c.msg); return; }
    error("");
    $("prompt-status").textContent = "Encoding…";
    apply(c.prompts);
  }

  let available = false;
  // Whether the server has MusicCoCa (from /api/info).
  function setAvailable(on) {
    available = on;
    $("prompt-unavailable").hidden = on;
    refresh();
  }

  // The server's answer: the blend's codes took over (or an error).
  function styled(codes, warning) {
    rill.prompts.lastStyle = codes;
    $("prompt-status").textContent = "";
    error(warning ? `Note: ${warning}.` : "");
  }
  function failed(msg) {
    $("prompt-status").textContent = "";
    error(msg);
  }

  $("prompt-add").addEventListener("click", () => addRow("text"));
  $("prompt-clip").addEventListener("change", (e) => { upload(e.target.files[0]); e.target.value = ""; });
  $("prompt-apply").addEventListener("click", submit);
  addRow("text");
  setAvailable(false);
  const describe = () => rows.map((r) => (r.kind === "text" ? r.input.value.trim() : r.label)).join(" + ");
  return { setAvailable, styled, failed, describe };
}
