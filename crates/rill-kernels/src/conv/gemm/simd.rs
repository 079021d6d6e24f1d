//! What the SIMD panel kernels (AVX-512, AVX2, NEON) share: the ELU's constants,
//! the weight-format tags of their `tile::<W, …>` and the x86 kernels' weight
//! prefetch distance (the row blocking is [`crate::conv::by_row_groups`]). The
//! kernels themselves stay one per tier: their intrinsics and register widths differ.

/// The ELU's `exp(min(x, 0))` of every SIMD tier (Cephes `expf`: degree-6
/// polynomial on `[-ln2/2, ln2/2]`, ≤ 2 ulp), written once: inputs clamped to
/// `[EXP_MIN, 0]` so `2^n` stays a normal number (for x < −87 the ELU is −1 exactly
/// either way), `n = round(x·log2 e)`, `r = x − n·LN2_HI − n·LN2_LO` (two FMAs),
/// `p` by Horner over [`EXP_POLY`] (FMAs), `exp = (p·r² + r + 1)·2^n`. Each tier
/// performs this sequence operation for operation, so all agree bit for bit.
pub(super) const EXP_MIN: f32 = -87.0;
/// `ln 2` split in two for the range reduction (high part exact in few bits).
pub(super) const EXP_LN2_HI: f32 = 0.693_359_4;
pub(super) const EXP_LN2_LO: f32 = -2.121_944_4e-4;
/// Horner coefficients of the polynomial, highest degree first.
pub(super) const EXP_POLY: [f32; 6] = [
    1.987_569_1e-4,
    1.398_199_9e-3,
    8.333_452e-3,
    4.166_579_6e-2,
    0.166_666_65,
    0.5,
];

/// Weight format of `tile::<W, …>`: f32 panels.
pub(super) const W_F32: u8 = 0;
/// Weight format of `tile::<W, …>`: IEEE half panels, widened with `vcvtph2ps`
/// (exact; x86 only, NEON is given f32 panels).
#[cfg(target_arch = "x86_64")]
pub(super) const W_F16: u8 = 1;
/// Weight format of `tile::<W, …>`: int16 panels, widened exactly to f32 in the
/// FMA chain, each column's sum multiplied once by its scale (one multiply per
/// output instead of one per weight).
pub(super) const W_I16: u8 = 2;

/// How far ahead (bytes) the x86 panel kernels (AVX2, AVX-512: one stream per
/// 16-column panel) prefetch their weights, for weight format `W` and blocking `B`
/// (`Blocking as u8`).
///
/// [`Blocking::Grid`](super::Blocking::Grid): 2 KB. A task's first row group reads
/// each weight panel from L3 or DRAM (the early layers' two-byte weights stream from
/// DRAM once per frame for a handful of rows; the Winograd products' panels are
/// re-read only by the task's later row groups), and one sequential stream did not
/// keep enough misses in flight on its own. Zen 3, alternated runs: the int16 early
/// layers ≈ 10 % faster, the f32 Winograd layers ≈ 4 %; of 1, 1.5, 2 and 4 KB ahead,
/// 1.5–2 KB did best. Intel Xeon (AVX-512 kernel): the int16 codec on one thread
/// 21.9–22.9 → 20.4–20.5 ms; 1 and 4 KB did as well as 2 KB.
///
/// [`Blocking::Causal`](super::Blocking::Causal): 1024 weights ahead (4 KB of f32,
/// 2 KB of half): with few rows (stage 0 of a one-frame step) the kernel streams
/// the weights from memory. Prefetching past a panel's end is harmless (no fault,
/// no effect).
#[cfg(target_arch = "x86_64")]
pub(super) const fn prefetch_bytes(w: u8, b: u8) -> usize {
    if b == super::Blocking::Causal as u8 {
        1024 * if w == W_F32 { 4 } else { 2 }
    } else {
        2048
    }
}

/// Prefetches the line [`prefetch_bytes`]`(W, B)` past `p`
/// ([`crate::simd::prefetch_ahead`]).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn prefetch_ahead<const W: u8, const B: u8, T>(p: *const T) {
    crate::simd::prefetch_ahead(p as *const u8, const { prefetch_bytes(W, B) });
}
