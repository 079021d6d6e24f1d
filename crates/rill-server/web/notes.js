// The instrument's notes: the on-screen piano, the computer keyboard and Web MIDI
// input. The set of held pitches goes to the server as the `notes` control (through
// app.js's control queue). Loaded before app.js, which calls installNotes.
/* exported installNotes */
"use strict";

function installNotes({ $, rill, queueControl }) {
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

  const noteName = (n) => NAMES[n % 12] + (Math.floor(n / 12) - 1);

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
}
