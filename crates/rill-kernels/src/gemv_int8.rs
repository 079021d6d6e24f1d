//! Affine int8 weights (MLX layout: groups of 64 along the input, per-group scale
//! and bias) × activations quantised to int16 with one scale per vector.
//!
//! `y[r] = sx · Σ_g scale[r,g] · (Σ_{i∈g} q[r,i]·xq[i] − n[r,g] · Σ_{i∈g} xq[i])`.
//!
//! The bias is stored as an integer number of steps, `bias = −n·scale` with
//! `0 ≤ n ≤ 255`, and folded into the exact integer sum (|sum| < 2^31). That is one
//! byte per row-group instead of a 4-byte float (69 bytes per 64 weights instead of
//! 72, for a product that streams its weights from memory) and one FMA instead of
//! two. MLX's quantiser makes every group with values of both signs so: its bias is
//! the edge value, an integer number of steps from zero ([`crate::quant`]). Any other
//! group (one whose values all have one sign, or from a foreign file) keeps its float
//! bias exactly, in a sparse list applied after the kernel ([`Q8::extras`]).
//!
//! Storage is blocked for the kernels: rows in blocks of 16, and within a block and
//! group, 16 "quads" of 4 consecutive inputs × 16 rows (64 bytes), so one AVX-512
//! VNNI `vpdpbusd` multiplies a quad for 16 rows at once and the per-group scales
//! apply to 16 rows with one vector FMA. The int16 activations are split into a
//! high and a low signed byte (`xq = 256·hi + lo' + 128`), so two `vpdpbusd` give
//! the exact int16 dot product; the `+128` term is a per-row constant (stored for
//! NEON, summed from the loaded weights on AVX-512). Integer sums are exact on every
//! path (AVX-512, AVX2, portable); only the order of the f32 group accumulation
//! differs.
//!
//! Why int16 activations: their error (≈ 1/65534 of the largest entry) stays far
//! below the int8 weight error, so quality matches MLX's float-activation int8.

use crate::isa::Isa;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::isa::Tier;
use crate::quant::Affine;

pub(crate) const GROUP: usize = 64;
/// Rows per block.
pub(crate) const BLOCK: usize = 16;
const QUADS: usize = GROUP / 4;
/// f32 slots of metadata per block-group: 16 scales, then 16 bytes `n`.
const META: usize = BLOCK + BLOCK / 4;

/// The `n` of a group whose `bias` is `−n·scale` to within a few ulps, with
/// `0 ≤ n ≤ 255` (MLX's quantiser gives `bias = edge` and `scale = edge / q0`
/// with an integer `q0 = −n`, so `n·scale` is `−bias` to an ulp or two).
fn steps_of(scale: f32, bias: f32) -> Option<u8> {
    if bias == 0.0 {
        return Some(0);
    }
    let n = (-bias / scale).round_ties_even();
    if !(0.0..=255.0).contains(&n) {
        return None;
    }
    let err = (n * scale + bias).abs();
    (err <= bias.abs() * f32::EPSILON * 8.0).then_some(n as u8)
}

/// How far ahead (bytes) the x86 kernels prefetch each block's weight stream; 0 = no
/// software prefetch. On Intel the hardware streamer left the four block streams
/// short of the core's bandwidth (Xeon with AVX-512 and AMX, two-stage int8 frame,
/// alternated runs: the AVX2 tier's LM 31 → 23 ms, AVX-512's 23.9 → 21.7 ms; 512 to
/// 1536 bytes ahead did about equally). On AMD the variant tried on Zen 3 made the LM
/// slower (26 → 30–35 ms), so other vendors keep the hardware prefetch alone.
#[cfg(target_arch = "x86_64")]
pub(crate) fn prefetch_bytes() -> usize {
    static BYTES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        if crate::isa::vendor_is_intel() {
            1024
        } else {
            0
        }
    })
}

/// An int8 matrix in the blocked layout.
#[derive(Debug, Clone)]
pub(crate) struct Q8 {
    rows: usize,
    cols: usize,
    /// `[blocks][groups][16 quads][16 rows][4]`, rows padded to a multiple of 16.
    q: Vec<u8>,
    /// `[blocks][groups][16 f32 scales (bits), then the 16 bytes n]`
    /// ([`Q8::meta_at`], [`Q8::steps`]): one metadata stream per block beside its
    /// weights.
    meta: Vec<u32>,
    /// The groups whose bias is not a whole number of steps (their `n` is 0), by
    /// block: `y[r] += sx · bias · Σ_{i∈g} xq[i]`. Empty for almost every matrix.
    extras: Vec<Extra>,
    /// `128·Σ_{i∈g} q[r,i]`: the correction of the shifted low activation byte
    /// (the SDOT kernel's; the AVX-512 one sums it from the weights it loads).
    #[cfg(target_arch = "aarch64")]
    qsum128: Vec<i32>,
}

/// A group's float bias that [`Q8`] could not fold into steps.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Extra {
    block: u32,
    /// Row within the block.
    row: u32,
    group: u32,
    bias: f32,
}

impl Q8 {
    fn groups(&self) -> usize {
        self.cols / GROUP
    }

    /// Where the 16 scales of block-group `bg = block·groups + group` start in
    /// `meta`; the 16 bytes `n` (bias = −n·scale) follow them, in 4 slots.
    #[inline(always)]
    fn meta_at(bg: usize) -> usize {
        bg * META
    }

    /// The scale of row `rr` of the block-group whose metadata starts at `at`.
    #[inline(always)]
    fn scale(&self, at: usize, rr: usize) -> f32 {
        f32::from_bits(self.meta[at + rr])
    }

    /// The 16 `n` of the block-group whose metadata starts at `at`.
    #[inline(always)]
    fn steps(&self, at: usize) -> [u8; BLOCK] {
        let mut n = [0u8; BLOCK];
        for (d, s) in n
            .as_chunks_mut::<4>()
            .0
            .iter_mut()
            .zip(&self.meta[at + BLOCK..at + META])
        {
            *d = s.to_ne_bytes();
        }
        n
    }

    /// From MLX-layout affine data (`q` row-major `[rows][cols]`, scales/biases
    /// `[rows][groups]`). A group whose bias is not `−n·scale` (to a few ulps, with
    /// an integer `0 ≤ n ≤ 255`) keeps it in [`Q8::extras`].
    pub fn from_affine(a: &Affine, rows: usize, cols: usize) -> Q8 {
        assert_eq!(a.group, GROUP);
        let groups = cols / GROUP;
        let blocks = rows.div_ceil(BLOCK);
        let mut q = vec![0u8; blocks * BLOCK * cols];
        let mut meta = vec![0u32; blocks * groups * META];
        #[cfg(target_arch = "aarch64")]
        let mut qsum128 = vec![0i32; blocks * groups * BLOCK];
        let mut extras = Vec::new();
        for r in 0..rows {
            let (b, rr) = (r / BLOCK, r % BLOCK);
            for g in 0..groups {
                let at = Q8::meta_at(b * groups + g);
                let src = &a.q[r * cols + g * GROUP..][..GROUP];
                let (scale, bias) = (a.scales[r * groups + g], a.biases[r * groups + g]);
                let n = steps_of(scale, bias).unwrap_or_else(|| {
                    extras.push(Extra {
                        block: b as u32,
                        row: rr as u32,
                        group: g as u32,
                        bias,
                    });
                    0
                });
                meta[at + rr] = scale.to_bits();
                let slot = &mut meta[at + BLOCK + rr / 4];
                let mut bytes = slot.to_ne_bytes();
                bytes[rr % 4] = n;
                *slot = u32::from_ne_bytes(bytes);
                for j in 0..QUADS {
                    for t in 0..4 {
                        q[(((b * groups + g) * QUADS + j) * BLOCK + rr) * 4 + t] = src[4 * j + t];
                    }
                }
                #[cfg(target_arch = "aarch64")]
                {
                    qsum128[(b * groups + g) * BLOCK + rr] =
                        128 * src.iter().map(|&v| v as i32).sum::<i32>();
                }
            }
        }
        Q8 {
            rows,
            cols,
            q,
            meta,
            extras,
            #[cfg(target_arch = "aarch64")]
            qsum128,
        }
    }

    /// The extras of block `b` (the list is sorted by block).
    fn extras(&self, b: usize) -> &[Extra] {
        if self.extras.is_empty() {
            return &[];
        }
        let lo = self.extras.partition_point(|e| (e.block as usize) < b);
        let n = self.extras[lo..].partition_point(|e| e.block as usize == b);
        &self.extras[lo..lo + n]
    }

    /// Back to MLX layout (for pre-quantised files).
    pub fn to_affine(&self) -> Affine {
        let (rows, cols, groups) = (self.rows, self.cols, self.groups());
        let mut a = Affine {
            bits: 8,
            group: GROUP,
            q: vec![0; rows * cols],
            scales: vec![0.0; rows * groups],
            biases: vec![0.0; rows * groups],
        };
        for r in 0..rows {
            for g in 0..groups {
                let at = Q8::meta_at((r / BLOCK) * groups + g);
                let scale = self.scale(at, r % BLOCK);
                a.scales[r * groups + g] = scale;
                a.biases[r * groups + g] = -(self.steps(at)[r % BLOCK] as f32) * scale;
            }
            for c in 0..cols {
                a.q[r * cols + c] = self.q[self.index(r, c)];
            }
        }
        for e in &self.extras {
            let r = e.block as usize * BLOCK + e.row as usize;
            a.biases[r * groups + e.group as usize] = e.bias;
        }
        a
    }

    #[inline]
    fn index(&self, r: usize, c: usize) -> usize {
        let (b, rr, g, j, t) = (r / BLOCK, r % BLOCK, c / GROUP, (c % GROUP) / 4, c % 4);
        (((b * self.groups() + g) * QUADS + j) * BLOCK + rr) * 4 + t
    }

    /// Stacks matrices with row counts that are multiples of 16 (whole blocks).
    pub fn stack(parts: Vec<Q8>) -> Q8 {
        assert!(
            parts.iter().all(|p| p.rows % BLOCK == 0),
            "int8 stacking needs whole 16-row blocks"
        );
        let cols = parts[0].cols;
        let mut out = Q8 {
            rows: 0,
            cols,
            q: Vec::new(),
            meta: Vec::new(),
            extras: Vec::new(),
            #[cfg(target_arch = "aarch64")]
            qsum128: Vec::new(),
        };
        for p in parts {
            let first = (out.rows / BLOCK) as u32;
            out.extras.extend(p.extras.iter().map(|e| Extra {
                block: first + e.block,
                ..*e
            }));
            out.rows += p.rows;
            out.q.extend(p.q);
            out.meta.extend(p.meta);
            #[cfg(target_arch = "aarch64")]
            out.qsum128.extend(p.qsum128);
        }
        out
    }

    pub fn bytes(&self) -> usize {
        self.q.len() + 4 * self.meta.len() + std::mem::size_of_val(&self.extras[..])
    }

    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let groups = self.groups();
        let (b, rr) = (r / BLOCK, r % BLOCK);
        // Group by group, a quad (4 inputs) at a time: the layout of `index`.
        for (g, og) in out.chunks_exact_mut(GROUP).enumerate().take(groups) {
            let at = Q8::meta_at(b * groups + g);
            let (scale, n) = (self.scale(at, rr), self.steps(at)[rr] as i32);
            for (j, oq) in og.chunks_exact_mut(4).enumerate() {
                let base = (((b * groups + g) * QUADS + j) * BLOCK + rr) * 4;
                for (o, &q) in oq.iter_mut().zip(&self.q[base..base + 4]) {
                    *o = (q as i32 - n) as f32 * scale;
                }
            }
        }
        for e in self.extras(b).iter().filter(|e| e.row as usize == rr) {
            let g = e.group as usize;
            for o in &mut out[g * GROUP..(g + 1) * GROUP] {
                *o += e.bias;
            }
        }
    }

    /// Rows `r0 .. r0 + 16` (`r0` a multiple of 16; zero past the last row), columns
    /// `k0 .. k0 + kc` (`kc = out.len() / 16`; `k0` and `kc` multiples of 64) widened
    /// into `out` as `[c][16]`: the conv kernels' panel layout, which the multi-row
    /// product ([`crate::matmul`]) packs. The values are [`Q8::row_into`]'s, bit for
    /// bit; read in storage order (a row at a time took a quarter of a 111-row product).
    pub fn pack16_into(&self, isa: Isa, r0: usize, k0: usize, out: &mut [f32]) {
        let kc = out.len() / BLOCK;
        assert!(
            r0.is_multiple_of(BLOCK)
                && k0.is_multiple_of(GROUP)
                && kc.is_multiple_of(GROUP)
                && out.len() == kc * BLOCK
                && k0 + kc <= self.cols,
            "int8 panel bounds"
        );
        if r0 >= self.rows {
            out.fill(0.0);
            return;
        }
        let (b, groups) = (r0 / BLOCK, self.groups());
        for (gi, o) in out.chunks_exact_mut(GROUP * BLOCK).enumerate() {
            let g = k0 / GROUP + gi;
            let at = Q8::meta_at(b * groups + g);
            let steps = self.steps(at).map(i32::from);
            let scale: [f32; BLOCK] = std::array::from_fn(|r| self.scale(at, r));
            let q = &self.q[(b * groups + g) * QUADS * BLOCK * 4..][..QUADS * BLOCK * 4];
            match isa.tier() {
                #[cfg(target_arch = "x86_64")]
                // SAFETY: both tiers exist only if the CPU has AVX2 (AVX-512 is
                // detected only beside it); `q` and `o` hold one group each.
                Tier::Avx2 | Tier::Avx512 => unsafe { x86::pack16_group(q, &steps, &scale, o) },
                _ => {
                    for (j, quad) in q.chunks_exact(BLOCK * 4).enumerate() {
                        for (r, w) in quad.chunks_exact(4).enumerate() {
                            for (t, &v) in w.iter().enumerate() {
                                o[(4 * j + t) * BLOCK + r] =
                                    (v as i32 - steps[r]) as f32 * scale[r];
                            }
                        }
                    }
                }
            }
        }
        for e in self.extras(b) {
            let g = e.group as usize * GROUP;
            if (k0..k0 + kc).contains(&g) {
                for c in g - k0..g - k0 + GROUP {
                    out[c * BLOCK + e.row as usize] += e.bias;
                }
            }
        }
    }

    /// Computes the rows of `range` that fall in `blocks` (at most 4, typically far
    /// apart: four memory streams) into `y`, indexed relative to `range.start`.
    pub fn run_blocks(
        &self,
        isa: Isa,
        blocks: &[usize],
        range: &std::ops::Range<usize>,
        act: &Act<'_>,
        y: *mut f32,
    ) {
        self.run_blocks_n(isa, blocks, range, [act], [y]);
    }

    /// [`Q8::run_blocks`] for `A` activation vectors at once (`y[a]` gets the rows
    /// of `acts[a]`): each weight is loaded once for all of them (the two CFG rows
    /// of Magpie's decoder), and each output has the bits of its one-vector call.
    pub fn run_blocks_n<const A: usize>(
        &self,
        isa: Isa,
        blocks: &[usize],
        range: &std::ops::Range<usize>,
        acts: [&Act<'_>; A],
        y: [*mut f32; A],
    ) {
        debug_assert!(blocks.len() <= 4);
        let mut out = [[0f32; 4 * BLOCK]; A];
        match isa.tier() {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` with VNNI comes only from detecting avx512f/bw/vnni.
            Tier::Avx512 if isa.vnni() => unsafe {
                x86::blocks_avx512(self, blocks, &acts, &mut out, prefetch_bytes())
            },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: an `Isa` of tier AVX2 or above comes only from detecting avx2 and fma.
            // One vector at a time: this kernel is bound by its multiplies, not by
            // memory, and a second pass over the (cached) weights measured faster
            // than a two-vector kernel (5.6 vs 6.5 ms for 57 M weights, Zen 5).
            Tier::Avx2 | Tier::Avx512 => {
                for (act, o) in acts.iter().zip(out.iter_mut()) {
                    // SAFETY: as above.
                    unsafe { x86::blocks_avx2(self, blocks, act, o, prefetch_bytes()) }
                }
            }
            #[cfg(target_arch = "aarch64")]
            // SAFETY: an `Isa` with dotprod comes only from detecting neon and dotprod.
            Tier::Neon if isa.dotprod() => unsafe {
                arm::blocks_sdot(self, blocks, &acts, &mut out)
            },
            #[cfg(target_arch = "aarch64")]
            // SAFETY: an `Isa` of tier NEON comes only from detecting neon.
            Tier::Neon => {
                for (act, o) in acts.iter().zip(out.iter_mut()) {
                    // SAFETY: as above.
                    unsafe { arm::blocks_neon(self, blocks, act, o) }
                }
            }
            _ => {
                for (act, o) in acts.iter().zip(out.iter_mut()) {
                    blocks_portable(self, blocks, act, o);
                }
            }
        }
        if !self.extras.is_empty() {
            for (k, &b) in blocks.iter().enumerate() {
                for e in self.extras(b) {
                    for (o, act) in out.iter_mut().zip(&acts) {
                        let t = act.scale * (e.bias * act.sums[e.group as usize]);
                        o[k * BLOCK + e.row as usize] += t;
                    }
                }
            }
        }
        for (o, y) in out.iter().zip(y) {
            scatter(blocks, range, &o[..blocks.len() * BLOCK], y);
        }
    }
}

/// Writes the outputs of `blocks` (16 per block, in `out`) that fall inside `range`
/// to `y[r - range.start]`.
pub(crate) fn scatter(blocks: &[usize], range: &std::ops::Range<usize>, out: &[f32], y: *mut f32) {
    for (k, &b) in blocks.iter().enumerate() {
        // The block's rows inside `range` (all 16 but at the range's two ends).
        let r0 = (b * BLOCK).max(range.start);
        let r1 = ((b + 1) * BLOCK).min(range.end);
        let src = &out.as_chunks::<BLOCK>().0[k];
        let n = r1.saturating_sub(r0);
        if n == BLOCK {
            // A whole block: a fixed-size copy (vector moves, no `memcpy` call).
            // SAFETY: callers hand each task a disjoint set of blocks and `y`
            // holds `range.len()` outputs, of which `r0..r1` is a part.
            unsafe {
                y.add(r0 - range.start)
                    .cast::<[f32; BLOCK]>()
                    .write_unaligned(*src)
            };
        } else if n > 0 {
            let part = &src[r0 - b * BLOCK..r1 - b * BLOCK];
            // SAFETY: as above.
            unsafe { std::ptr::copy_nonoverlapping(part.as_ptr(), y.add(r0 - range.start), n) };
        }
    }
}

/// An activation vector quantised for the int8 kernels.
pub(crate) struct Act<'a> {
    /// int16 values.
    pub xq: &'a [i16],
    /// High bytes `xq >> 8` (signed).
    pub hi: &'a [i8],
    /// Low bytes minus 128 (signed).
    pub lo: &'a [i8],
    /// Per-group sums of `xq` as f32 (bias terms).
    pub sums: &'a [f32],
    /// `x ≈ xq · scale`.
    pub scale: f32,
}

/// Splits int16 activations into the two signed bytes the VNNI kernel multiplies.
#[inline(always)]
pub(crate) fn split_bytes(xq: &[i16], hi: &mut [i8], lo: &mut [i8]) {
    for ((&v, h), l) in xq.iter().zip(hi.iter_mut()).zip(lo.iter_mut()) {
        *h = (v >> 8) as i8;
        *l = ((v & 0xff) - 128) as i8;
    }
}

/// Per block and group: the 16 quads' 64 bytes (16 rows × 4 inputs) multiply the
/// quad's activations in 64 fixed i32 lanes (element `rr·4 + t`, |sum| ≤
/// 16·255·32767), folded into rows per group with the bias steps (`d − n·Σxq`);
/// the f32 accumulation per row is in group order: `acc += scale·d`, then `sx·acc`.
fn blocks_portable(m: &Q8, blocks: &[usize], act: &Act<'_>, out: &mut [f32]) {
    let groups = m.groups();
    for (bi, &b) in blocks.iter().enumerate() {
        let mut acc = [0f32; BLOCK];
        for g in 0..groups {
            let base = (b * groups + g) * GROUP * BLOCK;
            let q = m.q[base..base + GROUP * BLOCK]
                .as_chunks::<{ BLOCK * 4 }>()
                .0;
            let x = act.xq[g * GROUP..(g + 1) * GROUP].as_chunks::<4>().0;
            let mut lanes = [0i32; BLOCK * 4];
            for (qj, xj) in q.iter().zip(x) {
                let xr = [*xj; BLOCK];
                let xr = xr.as_flattened();
                for e in 0..BLOCK * 4 {
                    lanes[e] += qj[e] as i32 * xr[e] as i32;
                }
            }
            let at = Q8::meta_at(b * groups + g);
            let n = m.steps(at);
            // |Σxq| < 2^21, so the f32 group sum is an exact integer.
            let xs = act.sums[g] as i32;
            for rr in 0..BLOCK {
                let l = &lanes[4 * rr..4 * rr + 4];
                let d = l[0] + l[1] + l[2] + l[3] - n[rr] as i32 * xs;
                acc[rr] += m.scale(at, rr) * d as f32;
            }
        }
        for rr in 0..BLOCK {
            out[bi * BLOCK + rr] = act.scale * acc[rr];
        }
    }
}

#[cfg(target_arch = "aarch64")]
mod arm;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(test)]
pub(crate) mod tests;
