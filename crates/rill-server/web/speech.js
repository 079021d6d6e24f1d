// The Speech card: text to speech through POST /api/tts with the server's voice
// (when it has one). The WAV body is read chunk by chunk as the server makes it and
// each chunk goes to a player (worklet.js) on the card's own AudioContext, so the
// speech plays as it streams; Stop ends the request (the server stops generating)
// and Download saves what arrived as a WAV. Server refusals are shown with their
// reason. Loaded after worklet.js and before app.js, which calls installSpeech and
// hands it each /api/info.
/* global createPlayer */
/* exported installSpeech */
"use strict";

function installSpeech({ $ }) {
  const WAV_HEADER = 44;
  const PREBUFFER_S = 0.3;   // audio queued before playback starts (and after a stutter)
  const RTF_MIN_AUDIO_S = 0.5; // the page's RTF once this much audio followed the first chunk
  const TITLES = {
    400: "The server refused the request.", 403: "The server refused this page.",
    404: "This server has no voice.", 413: "The text is too long.", 503: "The voice is busy.",
  };

  // The test / automation hook.
  const st = (window.rill.speech = {
    state: "idle",          // idle | speaking | done | stopped | error
    requests: 0, chunks: 0, samples: 0, samplesAtFirstChunk: 0, firstAudioMs: null,
    totalMs: null, rtf: null, played: 0, underruns: 0, playedOut: false,
    language: null, dropped: [], lastError: null, audio: null, queued: 0,
  });
  let tts = null;           // /api/info's "tts"
  let rate = 22050;
  let ctx = null, player = null;
  let abort = null;         // the running request's AbortController
  let parts = [];           // this speech's PCM (Uint8Array, 16-bit little-endian)
  let tFirst = 0;           // when the first audio arrived (performance.now)
  let download = null;      // the download's object URL

  const msgOf = (e) => String((e && e.message) || e);

  function setState(s, text) {
    st.state = s;
    $("speech-status").textContent = text;
    $("speech-dot").dataset.state = s === "speaking" ? "playing" : s === "error" ? "error" : "idle";
    $("speech-speak").disabled = s === "speaking";
    $("speech-stop").disabled = s !== "speaking" && !(player && s === "done" && !st.playedOut);
  }
  function showError(title, text, status) {
    st.lastError = { title, text, status: status || null };
    $("speech-error-title").textContent = title;
    $("speech-error-msg").textContent = text ? " " + text : "";
    $("speech-error").classList.toggle("busy", status === 503);
    $("speech-error").hidden = false;
  }
  function clearError() {
    st.lastError = null;
    $("speech-error").hidden = true;
  }

  // ------------------------------------------------------------ server info
  function fill(select, options, keep) {
    select.replaceChildren(...options.map(([value, label]) => new Option(label, value)));
    if (options.some(([v]) => v === keep)) select.value = keep;
  }
  function setInfo(info) {
    const t = info && info.tts;
    $("speech-unavailable").hidden = !!t;
    $("speech-form").hidden = !t;
    if (!t) { tts = null; return; }
    $("speech-random").hidden = !t.random_weights;
    const key = (x) => JSON.stringify([x.speakers, x.speaker_names, x.languages, x.language_names]);
    const changed = !tts || key(tts) !== key(t);
    tts = t;
    rate = t.sample_rate || rate;
    if (t.max_text_chars) $("speech-text").maxLength = t.max_text_chars;
    if (!changed) return;
    const names = t.speaker_names || [];
    fill($("speech-voice"), Array.from({ length: t.speakers || 1 }, (_, i) =>
      [String(i), names[i] ? `${names[i]} (${i})` : `Speaker ${i}`]), $("speech-voice").value || "0");
    const langNames = t.language_names || {};
    fill($("speech-language"), (t.languages || ["en"]).map((c) =>
      [c, langNames[c] ? `${langNames[c]} (${c})` : c]), $("speech-language").value || t.default_language);
  }

  // ------------------------------------------------------------------ audio
  function onStats(s) {
    st.played = s.played;
    st.underruns = s.underruns;
    showStats();
    if (s.done && !st.playedOut && st.state === "done") {
      st.playedOut = true;
      setState("done", `Done: ${seconds(st.samples)} of speech.`);
      if (ctx) ctx.suspend().catch(() => {});
    }
  }
  // Must run inside the Speak click (a user gesture) up to its first await.
  async function ensureAudio() {
    if (!ctx) {
      let c;
      try {
        c = new AudioContext({ sampleRate: rate, latencyHint: "interactive" });
      } catch (_) {
        c = new AudioContext({ latencyHint: "interactive" });
      }
      const p = await createPlayer(c, {
        srcRate: rate, targetSamples: Math.round(rate * PREBUFFER_S), channels: 1, keepAll: true,
      }, onStats);
      p.node.connect(c.destination);
      ctx = c;
      player = p;
      st.audio = { sampleRate: ctx.sampleRate, mode: player.mode };
    }
    await ctx.resume();
  }

  // ----------------------------------------------------------------- result
  const seconds = (samples) => `${(samples / rate).toFixed(1)} s`;
  function showStats() {
    const facts = [];
    if (st.language) facts.push(`spoken as ${((tts && tts.language_names) || {})[st.language] || st.language}`);
    if (st.firstAudioMs !== null) facts.push(`first audio after ${Math.round(st.firstAudioMs)} ms`);
    if (st.samples) facts.push(`${seconds(st.samples)} received`);
    if (st.rtf !== null) facts.push(`RTF ${st.rtf.toFixed(2)} (measured by this page)`);
    if (st.requests) facts.push(`stutters heard: ${st.underruns}`);
    $("speech-stats").textContent = facts.join(" · ");
    const slow = st.rtf !== null && st.rtf > 1;
    $("speech-slow").hidden = !slow;
    if (slow) {
      $("speech-slow").textContent = `RTF ${st.rtf.toFixed(2)} > 1: this machine makes speech slower than ` +
        "real time, so playback stutters while it streams. The download is whole.";
    }
  }
  function showDropped(header) {
    st.dropped = header ? header.trim().split(/\s+/) : [];
    const el = $("speech-dropped");
    el.hidden = st.dropped.length === 0;
    if (!st.dropped.length) return;
    const chars = st.dropped.map((u) => {
      const cp = parseInt(u.replace(/^U\+/i, ""), 16);
      return Number.isFinite(cp) ? `“${String.fromCodePoint(cp)}” (${u})` : u;
    });
    const names = (tts && tts.language_names) || {};
    const lang = names[st.language] || st.language || "language's";
    el.textContent = `Not spoken: the ${lang} front end cannot read ${chars.join(", ")}.`;
  }
  function wavHeader(dataBytes) {
    const h = new DataView(new ArrayBuffer(WAV_HEADER));
    const text = (at, s) => { for (let i = 0; i < s.length; i++) h.setUint8(at + i, s.charCodeAt(i)); };
    text(0, "RIFF"); h.setUint32(4, 36 + dataBytes, true); text(8, "WAVEfmt ");
    h.setUint32(16, 16, true); h.setUint16(20, 1, true); h.setUint16(22, 1, true);
    h.setUint32(24, rate, true); h.setUint32(28, rate * 2, true); h.setUint16(32, 2, true);
    h.setUint16(34, 16, true); text(36, "data"); h.setUint32(40, dataBytes, true);
    return h.buffer;
  }
  function offerDownload(partial) {
    const link = $("speech-download");
    const bytes = parts.reduce((n, p) => n + p.length, 0);
    if (!bytes) return;
    if (download) URL.revokeObjectURL(download);
    download = URL.createObjectURL(new Blob([wavHeader(bytes), ...parts], { type: "audio/wav" }));
    link.href = download;
    link.download = `rill-speech-${st.language || "speech"}.wav`;
    link.textContent = `⤓ Download WAV (${seconds(bytes / 2)}${partial ? ", partial" : ""})`;
    link.hidden = false;
  }
  function resetResult() {
    parts = [];
    Object.assign(st, {
      chunks: 0, samples: 0, samplesAtFirstChunk: 0, firstAudioMs: null, totalMs: null, rtf: null,
      played: 0, underruns: 0, playedOut: false, language: null, dropped: [],
    });
    $("speech-download").hidden = true;
    $("speech-dropped").hidden = true;
    showStats();
  }

  // ---------------------------------------------------------------- request
  function concat(a, b) {
    const c = new Uint8Array(a.length + b.length);
    c.set(a); c.set(b, a.length);
    return c;
  }
  function checkHeader(h) {
    const dv = new DataView(h.buffer, h.byteOffset, WAV_HEADER);
    const tag = (at) => String.fromCharCode(...h.subarray(at, at + 4));
    if (tag(0) !== "RIFF" || tag(8) !== "WAVE" || tag(36) !== "data") throw new Error("the reply is not a WAV stream");
    const channels = dv.getUint16(22, true), r = dv.getUint32(24, true), bits = dv.getUint16(34, true);
    if (channels !== 1 || bits !== 16 || r !== rate) {
      throw new Error(`the WAV is ${channels} channel(s), ${bits} bits at ${r} Hz; this page plays 16-bit mono at ${rate} Hz`);
    }
  }
  function onPcm(bytes, t0) {
    const now = performance.now();
    if (st.chunks === 0) {
      st.firstAudioMs = now - t0;
      st.samplesAtFirstChunk = bytes.length / 2;
      tFirst = now;
    }
    parts.push(bytes);
    st.chunks++;
    st.samples += bytes.length / 2;
    player.push(bytes.slice().buffer);  // a copy: the original stays for the download
    const after = (st.samples - st.samplesAtFirstChunk) / rate;
    if (after >= RTF_MIN_AUDIO_S) st.rtf = (now - tFirst) / 1000 / after;
    setState("speaking", `Speaking: ${seconds(st.samples)} received…`);
    showStats();
  }

  async function speak() {
    if (abort) return;
    const ac = new AbortController();
    abort = ac;
    clearError();
    resetResult();
    st.requests++;
    setState("speaking", "Starting…");
    const end = (state, text) => {
      abort = null;
      setState(state, text);
    };
    const fail = (title, text, status) => {
      if (player) player.reset();
      offerDownload(true);
      end("error", "Stopped (error)");
      showError(title, text, status);
    };
    try {
      await ensureAudio();
    } catch (e) {
      fail("Audio could not start.", msgOf(e));
      return;
    }
    player.reset();
    const body = { text: $("speech-text").value, speaker: +$("speech-voice").value, language: $("speech-language").value };
    const t0 = performance.now();
    let reader;
    try {
      if (ac.signal.aborted) throw new DOMException("stopped", "AbortError");
      const resp = await fetch("/api/tts", {
        method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
        signal: ac.signal,
      });
      if (!resp.ok) {
        const text = (await resp.text().catch(() => "")).trim();
        const retry = resp.headers.get("retry-after");
        fail(TITLES[resp.status] || `The server answered HTTP ${resp.status}.`,
          text + (retry ? ` (retry in ${retry} s)` : ""), resp.status);
        return;
      }
      st.language = resp.headers.get("x-rill-language");
      showDropped(resp.headers.get("x-rill-dropped-characters"));
      st.queued = +resp.headers.get("x-rill-queue-position") || 0;
      if (st.queued > 0) setState("speaking", `Waiting: ${st.queued} request(s) ahead in the server's queue…`);
      reader = resp.body.getReader();
    } catch (e) {
      if (ac.signal.aborted) { player.reset(); end("stopped", "Stopped."); return; }
      fail("Cannot reach the server.", msgOf(e));
      return;
    }
    let head = new Uint8Array(0);   // until the WAV header is in
    let odd = null;                 // the first byte of a sample split across chunks
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        let bytes = value;
        if (head) {
          const h = concat(head, bytes);
          if (h.length < WAV_HEADER) { head = h; continue; }
          checkHeader(h);
          head = null;
          bytes = h.subarray(WAV_HEADER);
        }
        if (odd) { bytes = concat(odd, bytes); odd = null; }
        if (bytes.length & 1) { odd = bytes.slice(-1); bytes = bytes.subarray(0, bytes.length - 1); }
        if (bytes.length) onPcm(bytes.slice(), t0);
      }
    } catch (e) {
      if (ac.signal.aborted) {
        player.reset();
        offerDownload(true);
        end("stopped", `Stopped after ${seconds(st.samples)}.`);
      } else {
        fail("The speech was cut short.", msgOf(e));
      }
      return;
    }
    if (head) { fail("The server sent no audio.", "The reply ended before its WAV header."); return; }
    st.totalMs = performance.now() - t0;
    player.end();
    offerDownload(false);
    end("done", `Received ${seconds(st.samples)} of speech; playing…`);
    showStats();
  }
  function stop() {
    if (abort) { abort.abort(); return; }
    // Received in full but still playing: silence it.
    if (player && st.state === "done" && !st.playedOut) {
      player.reset();
      st.playedOut = true;
      setState("stopped", "Stopped.");
      if (ctx) ctx.suspend().catch(() => {});
    }
  }

  $("speech-speak").addEventListener("click", () => speak());
  $("speech-stop").addEventListener("click", stop);
  $("speech-text").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); speak(); }
  });
  $("speech-error-close").addEventListener("click", clearError);
  setState("idle", "Type some text and press Speak.");
  return { setInfo };
}
