// The AudioWorklet processor of the page, served at /worklet.js and loaded twice:
// by the page as a classic script (its JitterBuffer drives the ScriptProcessor
// fallback where AudioWorklet is unavailable, e.g. a page opened over plain http
// from another machine, and its createPlayer builds either) and by
// audioWorklet.addModule (where AudioWorkletProcessor exists and the processor
// registers itself). One player per AudioContext: the music's (48 kHz stereo, a
// live stream that drops what falls more than 1 s behind) and the speech's
// (22.05 kHz mono, kept whole, with an end).
/* exported createPlayer */
"use strict";
class JitterBuffer {
  // opts: channels (1 or 2, default 2: interleaved), keepAll (never drop: the ring
  // grows instead; for speech, which arrives faster than it plays).
  constructor(srcRate, outRate, targetSamples, opts = {}) {
    this.srcRate = srcRate;
    this.step = srcRate / outRate;           // source samples per output sample
    this.channels = opts.channels === 1 ? 1 : 2;
    this.keepAll = !!opts.keepAll;
    this.cap = srcRate * 4;                  // ring capacity per channel (4 s)
    this.maxSamples = srcRate;               // beyond 1 s queued, drop the oldest
    this.L = new Float32Array(this.cap);
    this.R = new Float32Array(this.cap);
    this.target = targetSamples;
    this.littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
    this.reset();
  }
  reset() {
    this.r = 0; this.w = 0; this.n = 0; this.frac = 0; this.ended = false;
    this.playing = false; this.underruns = 0; this.dropped = 0; this.played = 0; this.frames = 0;
  }
  // Room for `more` samples (keepAll): doubles the ring, oldest sample first.
  grow(more) {
    let cap = this.cap;
    while (cap < this.n + more) cap *= 2;
    if (cap === this.cap) return;
    const L = new Float32Array(cap), R = new Float32Array(cap);
    for (let i = 0; i < this.n; i++) {
      const k = (this.r + i) % this.cap;
      L[i] = this.L[k]; R[i] = this.R[k];
    }
    this.L = L; this.R = R; this.cap = cap; this.r = 0; this.w = this.n;
  }
  // One chunk: little-endian int16, interleaved when stereo.
  push(buf) {
    let s;
    if (this.littleEndian) {
      s = new Int16Array(buf, 0, buf.byteLength >> 1);
    } else {
      const dv = new DataView(buf);
      s = new Int16Array(buf.byteLength >> 1);
      for (let i = 0; i < s.length; i++) s[i] = dv.getInt16(2 * i, true);
    }
    const ch = this.channels, frames = Math.floor(s.length / ch);
    if (this.keepAll && this.n + frames > this.cap) this.grow(frames);
    const L = this.L, R = this.R, cap = this.cap;
    let w = this.w;
    for (let i = 0; i < frames; i++) {
      L[w] = s[ch * i] / 32768;
      R[w] = s[ch * i + ch - 1] / 32768;
      if (++w === cap) w = 0;
    }
    this.w = w;
    this.n += frames;
    this.frames++;
    if (!this.keepAll && this.n > this.maxSamples) {
      const drop = this.n - this.target;
      this.r = (this.r + drop) % cap;
      this.n -= drop;
      this.dropped += drop;
    }
  }
  // No more chunks: what is queued plays out, and running dry is the end, not an underrun.
  end() { this.ended = true; }
  // Fills outL/outR (equal length) at the output rate.
  render(outL, outR) {
    const len = outL.length, step = this.step;
    if (!this.playing && this.n > 0 && (this.n >= this.target || this.ended)) this.playing = true;
    if (this.playing) {
      const adv = Math.floor(this.frac + len * step);
      const need = step === 1 ? len : Math.max(adv, Math.floor(this.frac + (len - 1) * step) + 2);
      let last = false;
      if (this.n < need && this.ended) {
        // The tail: pad it with silence, play it, and stop.
        if (this.n + need > this.cap) this.grow(need);
        for (let i = this.n, k = this.w; i < need; i++, k = (k + 1) % this.cap) { this.L[k] = 0; this.R[k] = 0; }
        this.w = (this.w + need - this.n) % this.cap;
        this.n = need;
        last = true;
      }
      if (this.n < need) {
        // Ran dry: count it, play silence and re-buffer up to the target.
        this.playing = false;
        this.underruns++;
      } else {
        const L = this.L, R = this.R, cap = this.cap, r = this.r;
        if (step === 1) {
          for (let i = 0; i < len; i++) {
            const k = (r + i) % cap;
            outL[i] = L[k]; outR[i] = R[k];
          }
        } else {
          let p = this.frac;
          for (let i = 0; i < len; i++, p += step) {
            const j = Math.floor(p), t = p - j;
            const a = (r + j) % cap, b = (a + 1) % cap;
            outL[i] = L[a] + (L[b] - L[a]) * t;
            outR[i] = R[a] + (R[b] - R[a]) * t;
          }
        }
        this.frac = this.frac + len * step - adv;
        this.r = (r + adv) % cap;
        this.n -= adv;
        this.played += len;
        if (last) { this.r = this.w; this.n = 0; this.playing = false; }
        return;
      }
    }
    outL.fill(0); outR.fill(0);
  }
  stats() {
    return {
      type: "stats", bufferedMs: (this.n / this.srcRate) * 1000, underruns: this.underruns,
      playing: this.playing, played: this.played, frames: this.frames, dropped: this.dropped,
      done: this.ended && this.n === 0,
    };
  }
}
// The page's side: a player on ctx (the processor below, else the same buffer on a
// ScriptProcessor) taking `options` (srcRate, targetSamples, channels, keepAll);
// `onStats` gets its stats ~20 times a second. Connect `node` to the output.
async function createPlayer(ctx, options, onStats) {
  if (ctx.audioWorklet && typeof AudioWorkletNode !== "undefined") {
    await ctx.audioWorklet.addModule("worklet.js");
    const node = new AudioWorkletNode(ctx, "rill-player", {
      numberOfInputs: 0, numberOfOutputs: 1, outputChannelCount: [2], processorOptions: options,
    });
    node.port.onmessage = (e) => { if (e.data && e.data.type === "stats") onStats(e.data); };
    const post = (m) => node.port.postMessage(m);
    return {
      node, mode: "AudioWorklet",
      push: (buf) => node.port.postMessage(buf, [buf]),
      reset: () => post({ type: "reset" }),
      end: () => post({ type: "end" }),
      setTarget: (samples) => post({ type: "target", samples }),
    };
  }
  // No AudioWorklet (insecure context): the same buffer on the main thread.
  const jb = new JitterBuffer(options.srcRate, ctx.sampleRate, options.targetSamples, options);
  const node = ctx.createScriptProcessor(2048, 0, 2);
  node.onaudioprocess = (e) => {
    jb.render(e.outputBuffer.getChannelData(0), e.outputBuffer.getChannelData(1));
    onStats(jb.stats());
  };
  return {
    node, mode: "ScriptProcessor (AudioWorklet unavailable: open the page via localhost or https for lower latency)",
    push: (buf) => jb.push(buf),
    reset: () => jb.reset(),
    end: () => jb.end(),
    setTarget: (samples) => { jb.target = samples; },
  };
}
if (typeof AudioWorkletProcessor !== "undefined") {
  class RillPlayer extends AudioWorkletProcessor {
    constructor(options) {
      super();
      const o = options.processorOptions || {};
      this.jb = new JitterBuffer(o.srcRate || 48000, sampleRate, o.targetSamples || 5760, o);
      this.quanta = 0;
      this.port.onmessage = (e) => {
        const d = e.data;
        if (d instanceof ArrayBuffer) this.jb.push(d);
        else if (d && d.type === "reset") this.jb.reset();
        else if (d && d.type === "end") this.jb.end();
        else if (d && d.type === "target") this.jb.target = d.samples;
      };
    }
    process(inputs, outputs) {
      const out = outputs[0];
      this.jb.render(out[0], out[1] || out[0]);
      // About 20 reports per second.
      if (++this.quanta * 128 >= sampleRate / 20) {
        this.quanta = 0;
        this.port.postMessage(this.jb.stats());
      }
      return true;
    }
  }
  registerProcessor("rill-player", RillPlayer);
}
