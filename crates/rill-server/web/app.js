// The instrument page's logic (index.html); served at /app.js.
/* global JitterBuffer */
"use strict";
(() => {
  // ---------------------------------------------------------------- constants
  const SRC_RATE = 48000;
  const FRAME_SAMPLES = 1920;               // stereo samples per 40 ms frame
  const FRAME_BYTES = FRAME_SAMPLES * 2 * 2;
  const VOCAB = 12294;                      // top_k "all"
  const PRESETS = {
    piano: { name: "Piano (upstream default)", codes: [325, 98, 979, 657, 802, 453, 475, 622, 729, 934, 567, 782] },
    export: { name: "Export example", codes: [660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22] },
    none: { name: "No style (masked)", codes: null },
  };
  const DEFAULTS = { temperature: 1.3, top_k: 40, cfg_musiccoca: 3, cfg_notes: 1, cfg_drums: 1, drums: "masked" };
  const NAMES = ["C", "C♯", "D", "D♯", "E", "F", "F♯", "G", "G♯", "A", "A♯", "B"];
  const BLACK = new Set([1, 3, 6, 8, 10]);
  // Computer keyboard (physical key codes): semitone offsets from the base note.
  const KEYMAP = {
    KeyA: 0, KeyW: 1, KeyS: 2, KeyE: 3, KeyD: 4, KeyF: 5, KeyT: 6, KeyG: 7, KeyY: 8, KeyH: 9,
    KeyU: 10, KeyJ: 11, KeyK: 12, KeyO: 13, KeyL: 14, KeyP: 15, Semicolon: 16, Quote: 17,
  };
  const KEYCAP = {
    KeyA: "A", KeyW: "W", KeyS: "S", KeyE: "E", KeyD: "D", KeyF: "F", KeyT: "T", KeyG: "G", KeyY: "Y",
    KeyH: "H", KeyU: "U", KeyJ: "J", KeyK: "K", KeyO: "O", KeyL: "L", KeyP: "P", Semicolon: ";", Quote: "'",
  };

  const $ = (id) => document.getElementById(id);
  const noteName = (n) => NAMES[n % 12] + (Math.floor(n / 12) - 1);

  // ------------------------------------------------- test / automation hook
  const rill = (window.rill = {
    state: "idle",            // idle | connecting | starting | playing | stopped | busy | error
    connected: false,
    framesReceived: 0,
    badFrames: 0,
    statusCount: 0,
    lastStatus: null,
    lastError: null,
    controlsSent: [],         // every {"type":"control"} message sent (objects)
    messagesSent: [],         // every message sent (objects)
    held: [],
    jitterMs: 0,
    clientUnderruns: 0,
    samplesPlayed: 0,
    audio: null,              // {sampleRate, mode, state}
  });
  const LOG_CAP = 1000;
  const logPush = (arr, v) => { arr.push(v); if (arr.length > LOG_CAP) arr.splice(0, arr.length - LOG_CAP); };

  // ------------------------------------------------------------ UI helpers
  function setState(s, text) {
    rill.state = s;
    const labels = {
      idle: "Press Start to play", connecting: "Connecting…", starting: "Starting the stream…",
      playing: "Playing", stopped: "Stopped", busy: "Server busy", error: "Stopped (error)",
    };
    $("status").textContent = text || labels[s] || s;
    $("dot").dataset.state = s;
    const live = s === "connecting" || s === "starting" || s === "playing";
    $("start").disabled = live;
    $("stop").disabled = !live;
    $("restart").disabled = !(s === "starting" || s === "playing");
  }
  function setConnection(c) {
    rill.connected = c === "connected";
    $("connection").textContent = c;
  }
  function showError(title, msg, opts = {}) {
    rill.lastError = { title, message: msg, code: opts.code || null };
    $("error-title").textContent = title;
    $("error-msg").textContent = msg ? " " + msg : "";
    $("error").classList.toggle("busy", opts.code === "busy");
    $("retry").hidden = !opts.retry;
    $("error").hidden = false;
  }
  function clearError() {
    rill.lastError = null;
    $("error").hidden = true;
  }
  $("error-close").addEventListener("click", clearError);
  $("retry").addEventListener("click", () => start());

  // ----------------------------------------------------------- server info
  let info = null;
  async function refreshInfo() {
    try {
      const r = await fetch("/api/info", { cache: "no-store" });
      if (!r.ok) return;
      info = await r.json();
      $("info-model").textContent = info.model ?? "—";
      $("info-precision").textContent = info.precision ?? "—";
      $("info-streams").textContent = `${info.active ?? "?"} / ${info.capacity ?? "?"}`;
      $("info-rtf").textContent = info.measured_rtf > 0 ? Number(info.measured_rtf).toFixed(2) : "—";
    } catch (_) { /* the server may be restarting; keep the last values */ }
  }
  refreshInfo();
  setInterval(refreshInfo, 5000);

  // -------------------------------------------------------------- controls
  let style = PRESETS.piano.codes.slice();
  let styleLabel = PRESETS.piano.name;

  function fmt(x, d) { return Number(x).toFixed(d); }
  function topKFromPos(p) { return Math.max(1, Math.min(1024, Math.round(Math.exp((p / 1000) * Math.log(1024))))); }
  function posFromTopK(k) { return Math.round((Math.log(k) / Math.log(1024)) * 1000); }

  const sliders = {
    temperature: { el: $("temperature"), out: $("temperature-val"), read: (el) => +fmt(el.value, 2), show: (v) => fmt(v, 2) },
    cfg_musiccoca: { el: $("cfg-musiccoca"), out: $("cfg-musiccoca-val"), read: (el) => +fmt(el.value, 1), show: (v) => fmt(v, 1) },
    cfg_notes: { el: $("cfg-notes"), out: $("cfg-notes-val"), read: (el) => +fmt(el.value, 1), show: (v) => fmt(v, 1) },
    cfg_drums: { el: $("cfg-drums"), out: $("cfg-drums-val"), read: (el) => Math.round(+el.value), show: (v) => String(v) },
  };
  function topK() { return $("top-k-all").checked ? VOCAB : topKFromPos(+$("top-k").value); }
  function showTopK() {
    const all = $("top-k-all").checked;
    $("top-k").disabled = all;
    $("top-k-val").textContent = all ? "all" : String(topK());
  }
  function drums() { const v = $("drums").value; return v === "masked" ? null : v; }

  function currentControls() {
    const c = { style_codes: style, notes: rill.held.slice(), drums: drums(), top_k: topK() };
    for (const [k, s] of Object.entries(sliders)) c[k] = s.read(s.el);
    return c;
  }

  for (const [key, s] of Object.entries(sliders)) {
    const update = () => { s.out.textContent = s.show(s.read(s.el)); };
    update();
    s.el.addEventListener("input", () => { update(); queueControl({ [key]: s.read(s.el) }, 80); });
  }
  $("top-k").value = posFromTopK(DEFAULTS.top_k);
  showTopK();
  $("top-k").addEventListener("input", () => { showTopK(); queueControl({ top_k: topK() }, 80); });
  $("top-k-all").addEventListener("change", () => { showTopK(); queueControl({ top_k: topK() }, 0); });
  $("drums").addEventListener("change", () => queueControl({ drums: drums() }, 0));
  $("defaults").addEventListener("click", () => {
    $("temperature").value = DEFAULTS.temperature;
    $("cfg-musiccoca").value = DEFAULTS.cfg_musiccoca;
    $("cfg-notes").value = DEFAULTS.cfg_notes;
    $("cfg-drums").value = DEFAULTS.cfg_drums;
    $("top-k").value = posFromTopK(DEFAULTS.top_k);
    $("top-k-all").checked = false;
    $("drums").value = DEFAULTS.drums;
    for (const s of Object.values(sliders)) s.out.textContent = s.show(s.read(s.el));
    showTopK();
    const c = currentControls();
    queueControl({ temperature: c.temperature, top_k: c.top_k, cfg_musiccoca: c.cfg_musiccoca,
      cfg_notes: c.cfg_notes, cfg_drums: c.cfg_drums, drums: c.drums }, 0);
  });

  // Seed
  function readSeed() {
    const t = $("seed").value.trim();
    if (t === "") return { ok: true, seed: null };
    if (!/^\d+$/.test(t) || !Number.isSafeInteger(+t)) return { ok: false, msg: "The seed must be a whole number ≥ 0." };
    return { ok: true, seed: +t };
  }
  function applySeed() {
    const r = readSeed();
    $("seed").classList.toggle("invalid", !r.ok);
    $("seed-error").textContent = r.ok ? "" : r.msg;
    if (r.ok && r.seed !== null) queueControl({ seed: r.seed }, 0);
  }
  $("seed").addEventListener("change", applySeed);
  $("seed-dice").addEventListener("click", () => { $("seed").value = Math.floor(Math.random() * 2 ** 31); applySeed(); });

  // Style
  function codesText(codes) { return codes ? codes.join(", ") : ""; }
  function randomCodes() { return Array.from({ length: 12 }, () => Math.floor(Math.random() * 1024)); }
  function parseCodes(text) {
    const t = text.trim();
    if (t === "" || /^(masked|null|none)$/i.test(t)) return { ok: true, codes: null };
    const parts = t.split(/[\s,;]+/).filter(Boolean);
    if (parts.length !== 12) return { ok: false, msg: `Need exactly 12 codes, got ${parts.length}.` };
    const codes = [];
    for (let i = 0; i < 12; i++) {
      const p = parts[i];
      if (!/^\d+$/.test(p) || +p > 1023) return { ok: false, msg: `Code ${i + 1} ("${p}") is not an integer 0–1023.` };
      codes.push(+p);
    }
    return { ok: true, codes };
  }
  function showStyle() {
    $("style-current").textContent = "In use: " + (style ? `${styleLabel} — [${style.join(", ")}]` : "no style (masked)");
  }
  function setStyle(codes, label) {
    style = codes ? codes.slice() : null;
    styleLabel = label;
    showStyle();
    queueControl({ style_codes: style }, 0);
  }
  function setStyleError(msg) {
    $("style-error").textContent = msg;
    $("style-codes").classList.toggle("invalid", !!msg);
    $("style-codes").setAttribute("aria-invalid", msg ? "true" : "false");
  }
  function choosePreset(v) {
    setStyleError("");
    if (v === "custom") { $("style-codes").focus(); return; }
    const codes = v === "random" ? randomCodes() : PRESETS[v].codes;
    $("style-codes").value = codesText(codes);
    setStyle(codes, v === "random" ? "Random" : PRESETS[v].name);
  }
  function applyStyleText() {
    const r = parseCodes($("style-codes").value);
    if (!r.ok) { setStyleError(r.msg); return; }
    setStyleError("");
    const match = Object.entries(PRESETS).find(([, p]) => codesText(p.codes) === codesText(r.codes));
    $("style-preset").value = match ? match[0] : "custom";
    setStyle(r.codes, match ? match[1].name : "Custom");
  }
  $("style-preset").addEventListener("change", (e) => choosePreset(e.target.value));
  $("style-dice").addEventListener("click", () => { $("style-preset").value = "random"; choosePreset("random"); });
  $("style-apply").addEventListener("click", applyStyleText);
  $("style-codes").addEventListener("keydown", (e) => { if (e.key === "Enter") applyStyleText(); });
  $("style-codes").addEventListener("input", () => { setStyleError(""); $("style-preset").value = "custom"; });
  $("style-codes").value = codesText(style);
  showStyle();

  // ------------------------------------------------------ control sending
  let sock = null;            // the current WebSocket
  let streamOpen = false;     // "start" sent on sock
  let pending = {};
  let pendingTimer = 0;

  function send(msg) {
    if (!sock || sock.readyState !== WebSocket.OPEN) return false;
    sock.send(JSON.stringify(msg));
    logPush(rill.messagesSent, msg);
    if (msg.type === "control") logPush(rill.controlsSent, msg);
    return true;
  }
  function flushControls() {
    clearTimeout(pendingTimer);
    pendingTimer = 0;
    const fields = pending;
    pending = {};
    if (streamOpen && Object.keys(fields).length) send({ type: "control", ...fields });
  }
  // Merges fields into the next control message; sends after `delay` ms (0 = now).
  function queueControl(fields, delay) {
    if (!streamOpen) return;  // not playing: the values go into the next "start"
    Object.assign(pending, fields);
    if (delay <= 0) flushControls();
    else if (!pendingTimer) pendingTimer = setTimeout(flushControls, delay);
  }

  // ------------------------------------------------------------------ audio
  let ctx = null, player = null, fallbackJb = null, gain = null, analyser = null;

  function targetSamples() { return +$("target").value * FRAME_SAMPLES; }

  function onPlayerStats(st) {
    rill.jitterMs = st.bufferedMs;
    rill.clientUnderruns = st.underruns;
    rill.samplesPlayed = st.played;
    $("m-jitter").textContent = Math.round(st.bufferedMs);
    const cu = $("m-cunder");
    cu.textContent = st.underruns;
    cu.className = "val" + (st.underruns > 0 ? " warn" : "");
    if (rill.state === "playing") {
      const t = st.playing ? "Playing" : "Playing — buffering…";
      if ($("status").textContent !== t) $("status").textContent = t;
    }
  }

  // Must run inside the Start click (a user gesture) up to its first await.
  async function ensureAudio() {
    if (!ctx) {
      try {
        ctx = new AudioContext({ sampleRate: SRC_RATE, latencyHint: "interactive" });
      } catch (_) {
        ctx = new AudioContext({ latencyHint: "interactive" });
      }
      gain = ctx.createGain();
      gain.gain.value = +$("volume").value;
      analyser = ctx.createAnalyser();
      analyser.fftSize = 2048;
      gain.connect(analyser);
      gain.connect(ctx.destination);
      let mode;
      if (ctx.audioWorklet && typeof AudioWorkletNode !== "undefined") {
        await ctx.audioWorklet.addModule("worklet.js");
        player = new AudioWorkletNode(ctx, "rill-player", {
          numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [2],
          processorOptions: { srcRate: SRC_RATE, targetSamples: targetSamples() },
        });
        player.port.onmessage = (e) => { if (e.data && e.data.type === "stats") onPlayerStats(e.data); };
        player.connect(gain);
        mode = "AudioWorklet";
      } else {
        // No AudioWorklet (insecure context): same jitter buffer on the main thread.
        fallbackJb = new JitterBuffer(SRC_RATE, ctx.sampleRate, targetSamples());
        const sp = ctx.createScriptProcessor(2048, 0, 2);
        sp.onaudioprocess = (e) => {
          fallbackJb.render(e.outputBuffer.getChannelData(0), e.outputBuffer.getChannelData(1));
          onPlayerStats(fallbackJb.stats());
        };
        sp.connect(gain);
        player = sp;
        mode = "ScriptProcessor (AudioWorklet unavailable: open the page via localhost or https for lower latency)";
      }
      rill.audio = { sampleRate: ctx.sampleRate, mode, state: ctx.state };
      ctx.onstatechange = () => { rill.audio.state = ctx.state; };
      const rate = ctx.sampleRate === SRC_RATE ? "48 kHz"
        : `${ctx.sampleRate} Hz (resampled from 48 kHz)`;
      $("audio-note").textContent = `Audio: ${rate} · ${mode}`;
    }
    await ctx.resume();
  }
  function resetPlayer() {
    if (fallbackJb) fallbackJb.reset();
    else if (player) player.port.postMessage({ type: "reset" });
  }
  $("volume").addEventListener("input", () => { if (gain) gain.gain.value = +$("volume").value; });
  $("target").addEventListener("change", () => {
    if (fallbackJb) fallbackJb.target = targetSamples();
    else if (player) player.port.postMessage({ type: "target", samples: targetSamples() });
  });

  // ---------------------------------------------------------------- stream
  function resetMeters() {
    rill.framesReceived = 0;
    rill.badFrames = 0;
    rill.lastStatus = null;
    for (const id of ["m-rtf", "m-buffer", "m-underruns", "m-jitter"]) $(id).textContent = "—";
    $("m-rtf").className = "val";
    $("m-underruns").className = "val";
    $("m-frames").textContent = "0";
    $("m-cunder").textContent = "0";
    $("m-cunder").className = "val";
  }

  async function start() {
    if (rill.state === "connecting" || rill.state === "starting" || rill.state === "playing") return;
    clearError();
    setState("connecting");
    try {
      await ensureAudio();
    } catch (e) {
      setState("error");
      showError("Audio could not start.", String(e && e.message || e));
      return;
    }
    if (rill.state !== "connecting") return;  // Stop was pressed meanwhile
    resetPlayer();
    resetMeters();
    openSocket();
  }

  function openSocket() {
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws";
    let ws;
    try {
      ws = new WebSocket(url);
    } catch (e) {
      setState("error");
      showError("Cannot connect.", String(e && e.message || e), { retry: true });
      return;
    }
    ws.binaryType = "arraybuffer";
    sock = ws;
    streamOpen = false;
    ws.onopen = () => {
      if (sock !== ws) return;
      setConnection("connected");
      const msg = { type: "start", ...currentControls() };
      const seed = readSeed();
      if (seed.ok && seed.seed !== null) msg.seed = seed.seed;
      pending = {};
      send(msg);
      streamOpen = true;
      setState("starting", "Starting the stream (the server fills its buffer)…");
    };
    ws.onmessage = (e) => {
      if (sock !== ws) return;
      if (typeof e.data === "string") onText(e.data);
      else onFrame(e.data);
    };
    ws.onclose = (e) => {
      if (sock !== ws) return;
      sock = null;
      streamOpen = false;
      setConnection("not connected");
      if (rill.state === "connecting") {
        finish("error");
        showError("Cannot connect to the server.", `No WebSocket at ${url} (code ${e.code}). Is rill serve running? It also refuses pages from other origins (see --allow-origin) and connections beyond --max-connections.`, { retry: true });
      } else if (rill.state === "starting" || rill.state === "playing") {
        finish("error");
        showError("The connection was lost.", `The server closed the stream (code ${e.code}${e.reason ? ": " + e.reason : ""}).`, { retry: true });
      }
    };
  }

  function onFrame(buf) {
    if (buf.byteLength !== FRAME_BYTES) { rill.badFrames++; return; }
    rill.framesReceived++;
    $("m-frames").textContent = rill.framesReceived;
    if (rill.state === "starting") { setState("playing"); refreshInfo(); }
    if (fallbackJb) fallbackJb.push(buf);
    else player.port.postMessage(buf, [buf]);
  }

  function onText(text) {
    let msg;
    try { msg = JSON.parse(text); } catch (_) { return; }
    if (msg.type === "status") {
      rill.lastStatus = msg;
      rill.statusCount++;
      const rtf = $("m-rtf");
      rtf.textContent = Number(msg.rtf).toFixed(2);
      rtf.className = "val " + (msg.rtf < 0.8 ? "good" : msg.rtf < 1 ? "warn" : "bad");
      $("m-buffer").textContent = Math.round(msg.buffer_ms);
      const u = $("m-underruns");
      u.textContent = msg.underruns;
      u.className = "val" + (msg.underruns > 0 ? " warn" : "");
    } else if (msg.type === "started") {
      rill.seed = msg.seed;
      refreshInfo();
    } else if (msg.type === "error") {
      onServerError(msg);
    }
  }

  function onServerError(msg) {
    const code = msg.code || "error";
    const text = msg.message || "";
    if (code === "busy") {
      closeSocket();
      finish("busy");
      const body = (text ? text[0].toUpperCase() + text.slice(1).replace(/\.?$/, ". ") : "All the streams this machine can generate in real time are in use. ") +
        "Press Retry when a listener leaves.";
      const title = msg.capacity != null
        ? `The server is busy (${msg.active} of ${msg.capacity} streams in use).`
        : "The server is busy.";
      showError(title, body, { code, retry: true });
      refreshInfo();
      return;
    }
    if (rill.state === "starting" && rill.framesReceived === 0 && code !== "overloaded") {
      // The stream did not open.
      closeSocket();
      finish("error");
      showError(`The server refused the stream (${code}).`, text, { code, retry: true });
      return;
    }
    // The stream keeps playing (e.g. a rejected control).
    const title = code === "overloaded" ? "Controls are arriving too fast; one was dropped." : `Server error (${code}).`;
    showError(title, text, { code });
  }

  function closeSocket() {
    const ws = sock;
    sock = null;
    streamOpen = false;
    clearTimeout(pendingTimer);
    pendingTimer = 0;
    pending = {};
    if (ws) {
      try { ws.close(1000, "stop"); } catch (_) { /* already closing */ }
    }
    setConnection("not connected");
  }

  function finish(state) {
    resetPlayer();
    if (ctx) ctx.suspend().catch(() => {});
    setState(state);
    setTimeout(refreshInfo, 300);
  }

  function stop() {
    if (sock && sock.readyState === WebSocket.OPEN) send({ type: "stop" });
    closeSocket();
    finish("stopped");
  }

  $("start").addEventListener("click", () => start());
  $("stop").addEventListener("click", () => stop());
  $("restart").addEventListener("click", () => { if (streamOpen) send({ type: "reset" }); });

  // ----------------------------------------------------------------- notes
  const holders = new Map();  // MIDI note -> Set of sources holding it
  const keyEls = new Map();

  function notesChanged() {
    const held = [...holders.keys()].sort((a, b) => a - b);
    rill.held = held;
    for (const [n, el] of keyEls) {
      const down = holders.has(n);
      if (el.classList.contains("down") !== down) {
        el.classList.toggle("down", down);
        el.setAttribute("aria-pressed", String(down));
      }
    }
    $("held").textContent = held.length ? held.map(noteName).join(" ") : "—";
    queueControl({ notes: held }, 0);
  }
  function press(note, src) {
    if (!(note >= 0 && note <= 127)) return;
    let s = holders.get(note);
    if (!s) { s = new Set(); holders.set(note, s); }
    const had = s.size > 0;
    s.add(src);
    if (!had) notesChanged();
  }
  function release(note, src) {
    const s = holders.get(note);
    if (!s || !s.delete(src)) return;
    if (s.size === 0) { holders.delete(note); notesChanged(); }
  }
  function releaseWhere(pred) {
    let changed = false;
    for (const [n, s] of holders) {
      for (const src of [...s]) if (pred(src)) s.delete(src);
      if (s.size === 0) { holders.delete(n); changed = true; }
    }
    if (changed) notesChanged();
  }
  function releaseAll() {
    if (holders.size) { holders.clear(); notesChanged(); }
    kbdHeld.clear();
  }
  $("panic").addEventListener("click", releaseAll);

  // On-screen piano
  const piano = $("piano");
  // Builds the keys low..high (MIDI), keeping the pressed state.
  function buildPiano(low, high) {
    piano.textContent = "";
    keyEls.clear();
    let nw = 0;
    for (let n = low; n <= high; n++) if (!BLACK.has(n % 12)) nw++;
    let wi = 0;
    for (let n = low; n <= high; n++) {
      const el = document.createElement("div");
      const black = BLACK.has(n % 12);
      el.className = "key " + (black ? "black" : "white");
      el.dataset.note = String(n);
      el.setAttribute("role", "button");
      el.setAttribute("aria-pressed", "false");
      el.setAttribute("aria-label", noteName(n));
      el.innerHTML = '<span class="kl"><b></b><i></i></span>';
      if (black) {
        el.style.width = `${(100 / nw) * 0.6}%`;
        el.style.left = `calc(${(100 * wi) / nw}% - ${(100 / nw) * 0.3}%)`;
      } else {
        wi++;
      }
      if (n % 12 === 0 && !black) el.querySelector("i").textContent = noteName(n);
      if (holders.has(n)) { el.classList.add("down"); el.setAttribute("aria-pressed", "true"); }
      keyEls.set(n, el);
      piano.appendChild(el);
    }
    showKeyboardMap();
  }

  const pointers = new Map();  // pointerId -> note
  function keyAt(x, y) {
    const el = document.elementFromPoint(x, y);
    const k = el && el.closest && el.closest(".piano [data-note]");
    return k ? +k.dataset.note : null;
  }
  piano.addEventListener("pointerdown", (e) => {
    const k = e.target.closest("[data-note]");
    if (!k || (e.pointerType === "mouse" && e.button !== 0)) return;
    e.preventDefault();
    try { piano.setPointerCapture(e.pointerId); } catch (_) { /* synthetic pointer */ }
    const note = +k.dataset.note;
    pointers.set(e.pointerId, note);
    press(note, "ptr" + e.pointerId);
  });
  piano.addEventListener("pointermove", (e) => {
    if (!pointers.has(e.pointerId)) return;
    const note = keyAt(e.clientX, e.clientY);
    const old = pointers.get(e.pointerId);
    if (note === old) return;
    if (old !== null) release(old, "ptr" + e.pointerId);
    pointers.set(e.pointerId, note);
    if (note !== null) press(note, "ptr" + e.pointerId);
  });
  function pointerEnd(e) {
    if (!pointers.has(e.pointerId)) return;
    const note = pointers.get(e.pointerId);
    pointers.delete(e.pointerId);
    if (note !== null) release(note, "ptr" + e.pointerId);
  }
  piano.addEventListener("pointerup", pointerEnd);
  piano.addEventListener("pointercancel", pointerEnd);
  piano.addEventListener("lostpointercapture", pointerEnd);
  piano.addEventListener("contextmenu", (e) => e.preventDefault());

  // Computer keyboard
  let kbdBase = 60;
  const kbdHeld = new Map();   // event.code -> note
  function showKeyboardMap() {
    const byNote = new Map(Object.entries(KEYMAP).map(([code, off]) => [kbdBase + off, KEYCAP[code]]));
    for (const [n, el] of keyEls) el.querySelector("b").textContent = byNote.get(n) || "";
    $("oct-label").textContent = `keys ${noteName(kbdBase)}–${noteName(kbdBase + 17)}`;
  }
  function shiftOctave(d) {
    kbdBase = Math.max(12, Math.min(96, kbdBase + 12 * d));
    showKeyboardMap();
  }
  $("oct-down").addEventListener("click", () => shiftOctave(-1));
  $("oct-up").addEventListener("click", () => shiftOctave(1));
  // Three octaves (C3–B5); two (C4–B5) on narrow screens.
  const narrow = window.matchMedia("(max-width: 700px)");
  const layoutPiano = () => (narrow.matches ? buildPiano(60, 83) : buildPiano(48, 83));
  narrow.addEventListener("change", layoutPiano);
  layoutPiano();
  function typing(t) {
    if (!t) return false;
    if (t.isContentEditable || t.tagName === "TEXTAREA" || t.tagName === "SELECT") return true;
    return t.tagName === "INPUT" && !["range", "checkbox", "radio", "button"].includes(t.type);
  }
  window.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    if (e.code === "Escape") { releaseAll(); return; }
    if (e.code === "KeyZ" || e.code === "KeyX") { if (!e.repeat) shiftOctave(e.code === "KeyZ" ? -1 : 1); e.preventDefault(); return; }
    if (!(e.code in KEYMAP)) return;
    e.preventDefault();
    if (e.repeat || kbdHeld.has(e.code)) return;
    const note = kbdBase + KEYMAP[e.code];
    kbdHeld.set(e.code, note);
    press(note, "kbd:" + e.code);
  });
  window.addEventListener("keyup", (e) => {
    const note = kbdHeld.get(e.code);
    if (note === undefined) return;
    kbdHeld.delete(e.code);
    release(note, "kbd:" + e.code);
  });
  window.addEventListener("blur", () => {
    kbdHeld.clear();
    releaseWhere((s) => s.startsWith("kbd:") || s.startsWith("ptr"));
    pointers.clear();
  });

  // Web MIDI
  let midi = null;
  function describeMidi() {
    const names = [...midi.inputs.values()].map((i) => i.name || "input");
    $("midi-status").textContent = names.length ? `MIDI: ${names.join(", ")}` : "MIDI: no input connected";
  }
  function onMidiMessage(input, e) {
    const [st, d1, d2] = e.data;
    const kind = st & 0xf0, ch = st & 0x0f;
    const src = `midi:${input.id}:${ch}:`;
    if (kind === 0x90 && d2 > 0) press(d1, src + d1);
    else if (kind === 0x80 || (kind === 0x90 && d2 === 0)) release(d1, src + d1);
    else if (kind === 0xb0 && (d1 === 123 || d1 === 120)) releaseWhere((s) => s.startsWith(`midi:${input.id}:${ch}:`));
  }
  function attachMidi() {
    for (const input of midi.inputs.values()) input.onmidimessage = (e) => onMidiMessage(input, e);
    describeMidi();
  }
  async function enableMidi() {
    try {
      midi = await navigator.requestMIDIAccess({ sysex: false });
    } catch (_) {
      $("midi-status").textContent = "MIDI: access denied";
      return;
    }
    $("midi-enable").hidden = true;
    attachMidi();
    midi.onstatechange = (e) => {
      if (e.port.type === "input" && e.port.state === "disconnected") releaseWhere((s) => s.startsWith(`midi:${e.port.id}:`));
      attachMidi();
    };
  }
  if (typeof navigator.requestMIDIAccess === "function") {
    $("midi-enable").hidden = false;
    $("midi-enable").addEventListener("click", enableMidi);
    // Connect without a prompt when permission was granted before.
    if (navigator.permissions && navigator.permissions.query) {
      navigator.permissions.query({ name: "midi" })
        .then((p) => { if (p.state === "granted") enableMidi(); })
        .catch(() => {});
    }
  } else {
    $("midi-status").textContent = "Web MIDI is not available in this browser";
  }

  // ---------------------------------------------------------------- scope
  const scope = $("scope");
  const g = scope.getContext("2d");
  let scopeData = null;
  function drawScope() {
    const w = scope.clientWidth | 0, h = scope.clientHeight | 0;
    if (w && (scope.width !== w * devicePixelRatio)) { scope.width = w * devicePixelRatio; scope.height = h * devicePixelRatio; }
    const W = scope.width, H = scope.height;
    g.clearRect(0, 0, W, H);
    g.strokeStyle = "#263042"; g.lineWidth = 1;
    g.beginPath(); g.moveTo(0, H / 2); g.lineTo(W, H / 2); g.stroke();
    if (analyser && rill.state === "playing") {
      if (!scopeData) scopeData = new Float32Array(analyser.fftSize);
      analyser.getFloatTimeDomainData(scopeData);
      g.strokeStyle = "#45d6b4"; g.lineWidth = 1.5 * devicePixelRatio;
      g.beginPath();
      for (let i = 0; i < scopeData.length; i++) {
        const x = (i / (scopeData.length - 1)) * W;
        const y = H / 2 - scopeData[i] * (H / 2) * 0.95;
        if (i) g.lineTo(x, y); else g.moveTo(x, y);
      }
      g.stroke();
    }
    requestAnimationFrame(drawScope);
  }
  requestAnimationFrame(drawScope);

  setState("idle");
})();
