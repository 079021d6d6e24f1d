// The AudioWorklet processor of the instrument page, served at /worklet.js and
// loaded twice: by the page as a classic script (its JitterBuffer drives the
// ScriptProcessor fallback where AudioWorklet is unavailable, e.g. a page opened
// over plain http from another machine) and by audioWorklet.addModule (where
// AudioWorkletProcessor exists and the processor registers itself).
"use strict";
class JitterBuffer {
  constructor(srcRate, outRate, targetSamples) {
    this.srcRate = srcRate;
    this.step = srcRate / outRate;           // source samples per output sample
    this.cap = srcRate * 4;                  // ring capacity per channel (4 s)
    this.maxSamples = srcRate;               // beyond 1 s queued, drop the oldest
    this.L = new Float32Array(this.cap);
    this.R = new Float32Array(this.cap);
    this.target = targetSamples;
    this.littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
    this.reset();
  }
  reset() {
    this.r = 0; this.w = 0; this.n = 0; this.frac = 0;
    this.playing = false; this.underruns = 0; this.dropped = 0; this.played = 0; this.frames = 0;
  }
  // One server frame: interleaved little-endian int16 stereo.
  push(buf) {
    let s;
    if (this.littleEndian) {
      s = new Int16Array(buf, 0, buf.byteLength >> 1);
    } else {
      const dv = new DataView(buf);
      s = new Int16Array(buf.byteLength >> 1);
      for (let i = 0; i < s.length; i++) s[i] = dv.getInt16(2 * i, true);
    }
    const frames = s.length >> 1;
    const L = this.L, R = this.R, cap = this.cap;
    let w = this.w;
    for (let i = 0; i < frames; i++) {
      L[w] = s[2 * i] / 32768;
      R[w] = s[2 * i + 1] / 32768;
      if (++w === cap) w = 0;
    }
    this.w = w;
    this.n += frames;
    this.frames++;
    if (this.n > this.maxSamples) {
      const drop = this.n - this.target;
      this.r = (this.r + drop) % cap;
      this.n -= drop;
      this.dropped += drop;
    }
  }
  // Fills outL/outR (equal length) at the output rate.
  render(outL, outR) {
    const len = outL.length, step = this.step;
    if (!this.playing && this.n >= this.target) this.playing = true;
    if (this.playing) {
      const adv = Math.floor(this.frac + len * step);
      const need = step === 1 ? len : Math.max(adv, Math.floor(this.frac + (len - 1) * step) + 2);
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
        return;
      }
    }
    outL.fill(0); outR.fill(0);
  }
  stats() {
    return {
      type: "stats", bufferedMs: (this.n / this.srcRate) * 1000, underruns: this.underruns,
      playing: this.playing, played: this.played, frames: this.frames, dropped: this.dropped,
    };
  }
}
if (typeof AudioWorkletProcessor !== "undefined") {
  class RillPlayer extends AudioWorkletProcessor {
    constructor(options) {
      super();
      const o = options.processorOptions || {};
      this.jb = new JitterBuffer(o.srcRate || 48000, sampleRate, o.targetSamples || 5760);
      this.quanta = 0;
      this.port.onmessage = (e) => {
        const d = e.data;
        if (d instanceof ArrayBuffer) this.jb.push(d);
        else if (d && d.type === "reset") this.jb.reset();
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
