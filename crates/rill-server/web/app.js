// The instrument page's logic (index.html); served at /app.js.
/* global createPlayer, installNotes, installPrompts, installSpeech */
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

  const $ = (id) => document.getElementById(id);

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
      $("info-rtf").classList.toggle("bad", info.measured_rtf > 1);
      showNotices(info);
      if (prompts) prompts.setAvailable(!!info.style);
      if (speech) speech.setInfo(info);
    } catch (_) { /* the server may be restarting; keep the last values */ }
  }
  // What the page must say before anyone listens: random weights, a CPU too slow.
  function showNotices(i) {
    const notes = [];
    if (i.random_weights) {
      notes.push({ id: "music-random", text: "Random weights: the music model is untrained here (a smoke test), so it plays noise, not music." });
    }
    if (i.measured_rtf > 1) {
      const x = Number(i.measured_rtf);
      notes.push({ id: "music-slow", text: `Measured RTF ${x.toFixed(2)} > 1: this machine generates one music stream at ${(1 / x).toFixed(2)}× real time, so playback will stutter (rill serve printed faster settings at start-up).` });
    }
    const box = $("notices");
    box.replaceChildren(...notes.map((n) => {
      const p = document.createElement("p");
      p.className = "notice";
      p.dataset.testid = `notice-${n.id}`;
      p.textContent = n.text;
      return p;
    }));
    box.hidden = notes.length === 0;
  }
  let prompts = null;  // the prompt box (prompts.js), installed below
  let speech = null;   // the speech card (speech.js), installed below
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

  // A blend waiting for the next start (sent with it instead of style_codes).
  let startPrompts = null;
  function currentControls() {
    const c = { notes: rill.held.slice(), drums: drums(), top_k: topK() };
    if (startPrompts) c.prompts = startPrompts;
    else c.style_codes = style;
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
    startPrompts = null;
    showStyle();
    queueControl({ style_codes: style }, 0);
  }
  // Prompts: sent now while playing (the style switches when the server has encoded
  // them), else with the next start.
  function applyPrompts(list) {
    if (streamOpen) {
      flushControls();
      send({ type: "control", prompts: list });
    } else {
      startPrompts = list;
      styleLabel = prompts.describe();
      $("style-current").textContent = `Next start: ${styleLabel} (encoded when the stream starts)`;
      prompts.styled(null);
    }
  }
  // The server's "style": the blend's codes are playing.
  function onStyled(codes, warning) {
    style = codes.slice();
    startPrompts = null;
    styleLabel = prompts.describe() || "Prompts";
    $("style-codes").value = codesText(style);
    $("style-preset").value = "custom";
    prompts.styled(codes, warning);
    showStyle();
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
  let ctx = null, player = null, gain = null, analyser = null;

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
      player = await createPlayer(ctx, { srcRate: SRC_RATE, targetSamples: targetSamples() }, onPlayerStats);
      player.node.connect(gain);
      rill.audio = { sampleRate: ctx.sampleRate, mode: player.mode, state: ctx.state };
      ctx.onstatechange = () => { rill.audio.state = ctx.state; };
      const rate = ctx.sampleRate === SRC_RATE ? "48 kHz"
        : `${ctx.sampleRate} Hz (resampled from 48 kHz)`;
      $("audio-note").textContent = `Audio: ${rate} · ${player.mode}`;
    }
    await ctx.resume();
  }
  function resetPlayer() {
    if (player) player.reset();
  }
  $("volume").addEventListener("input", () => { if (gain) gain.gain.value = +$("volume").value; });
  $("target").addEventListener("change", () => { if (player) player.setTarget(targetSamples()); });

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
    player.push(buf);
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
    } else if (msg.type === "style") {
      onStyled(msg.codes, msg.warning);
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
    if (code === "style") {
      // The prompts were refused or could not be encoded; the style is unchanged.
      prompts.failed(text);
      if (rill.state === "starting" && rill.framesReceived === 0) {
        closeSocket();
        finish("error");
        showError("The stream did not start: its prompts were refused.", text, { code, retry: true });
        startPrompts = null;
      }
      return;
    }
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
  installNotes({ $, rill, queueControl });
  prompts = installPrompts({ $, rill, apply: applyPrompts });
  if (info) prompts.setAvailable(!!info.style);
  speech = installSpeech({ $ });
  if (info) speech.setInfo(info);

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
