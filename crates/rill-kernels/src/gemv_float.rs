//! Float weights × f32 activations with f32 accumulation:
//! `y[r] = Σ_c w[r, c]·x[c]`, for f32, bf16 and IEEE half weights (widened exactly
//! to f32 in registers). One generic kernel per SIMD tier, parameterised by how a
//! weight element loads.

use crate::isa::Isa;
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
use crate::isa::Tier;

/// A weight element type the float GEMV can widen to f32.
pub(crate) trait FloatWeight: Copy {
    fn to_f32(self) -> f32;
    /// 16 weights as a zmm of f32.
    ///
    /// # Safety
    /// `p` must be valid for reading 16 consecutive weights (no alignment needed), and
    /// the CPU must support AVX-512F (and AVX-512BW for the 16-bit weights).
    #[cfg(target_arch = "x86_64")]
    unsafe fn load16(p: *const Self) -> std::arch::x86_64::__m512;
    /// 8 weights as a ymm of f32.
    ///
    /// # Safety
    /// `p` must be valid for reading 8 consecutive weights (no alignment needed), and
    /// the CPU must support AVX2 (and F16C for f16 weights).
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(p: *const Self) -> std::arch::x86_64::__m256;
    /// 4 weights as a NEON vector of f32.
    ///
    /// # Safety
    /// `p` must be valid for reading 4 consecutive weights (no alignment needed);
    /// NEON is part of every AArch64 CPU.
    #[cfg(target_arch = "aarch64")]
    unsafe fn load4(p: *const Self) -> std::arch::aarch64::float32x4_t;
}

impl FloatWeight for f32 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    /// # Safety
    /// `p` must be valid for reading 16 consecutive weights (no alignment needed), and
    /// the CPU must support AVX-512F (and AVX-512BW for the 16-bit weights).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(p: *const f32) -> std::arch::x86_64::__m512 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe { std::arch::x86_64::_mm512_loadu_ps(p) }
    }
    /// # Safety
    /// `p` must be valid for reading 8 consecutive weights (no alignment needed), and
    /// the CPU must support AVX2 (and F16C for f16 weights).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const f32) -> std::arch::x86_64::__m256 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe { std::arch::x86_64::_mm256_loadu_ps(p) }
    }
    /// # Safety
    /// `p` must be valid for reading 4 consecutive weights (no alignment needed);
    /// NEON is part of every AArch64 CPU.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn load4(p: *const f32) -> std::arch::aarch64::float32x4_t {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe { std::arch::aarch64::vld1q_f32(p) }
    }
}

/// bf16 bit patterns (the high half of an f32).
impl FloatWeight for u16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16_to_f32(self)
    }
    /// # Safety
    /// `p` must be valid for reading 16 consecutive weights (no alignment needed), and
    /// the CPU must support AVX-512F (and AVX-512BW for the 16-bit weights).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(p: *const u16) -> std::arch::x86_64::__m512 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            use std::arch::x86_64::*;
            let h = _mm256_loadu_si256(p as *const __m256i);
            _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16))
        }
    }
    /// # Safety
    /// `p` must be valid for reading 8 consecutive weights (no alignment needed), and
    /// the CPU must support AVX2 (and F16C for f16 weights).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const u16) -> std::arch::x86_64::__m256 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            use std::arch::x86_64::*;
            let h = _mm_loadu_si128(p as *const __m128i);
            _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16))
        }
    }
    /// # Safety
    /// `p` must be valid for reading 4 consecutive weights (no alignment needed);
    /// NEON is part of every AArch64 CPU.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn load4(p: *const u16) -> std::arch::aarch64::float32x4_t {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            use std::arch::aarch64::*;
            vreinterpretq_f32_u32(vshll_n_u16::<16>(vld1_u16(p)))
        }
    }
}

/// IEEE half weights (exact to f32: F16C `vcvtph2ps` on x86, `fcvtl` on ARM).
impl FloatWeight for half::f16 {
    #[inline(always)]
    fn to_f32(self) -> f32 {
        half::f16::to_f32(self)
    }
    /// # Safety
    /// `p` must be valid for reading 16 consecutive weights (no alignment needed), and
    /// the CPU must support AVX-512F (and AVX-512BW for the 16-bit weights).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load16(p: *const half::f16) -> std::arch::x86_64::__m512 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            use std::arch::x86_64::*;
            _mm512_cvtph_ps(_mm256_loadu_si256(p as *const __m256i))
        }
    }
    /// # Safety
    /// `p` must be valid for reading 8 consecutive weights (no alignment needed), and
    /// the CPU must support AVX2 (and F16C for f16 weights).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const half::f16) -> std::arch::x86_64::__m256 {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            use std::arch::x86_64::*;
            _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
        }
    }
    /// # Safety
    /// `p` must be valid for reading 4 consecutive weights (no alignment needed);
    /// NEON is part of every AArch64 CPU.
    #[cfg(target_arch = "aarch64")]
    #[inline(always)]
    unsafe fn load4(p: *const half::f16) -> std::arch::aarch64::float32x4_t {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            use std::arch::aarch64::*;
            let h = vld1_u16(p as *const u16);
            let out: float32x4_t;
            // SAFETY: `fcvtl` (half → single, base ARMv8 FP) only reads and writes
            // registers; the f16 vector types are not stable in Rust, so asm.
            std::arch::asm!(
                "fcvtl {o:v}.4s, {i:v}.4h",
                i = in(vreg) h,
                o = out(vreg) out,
                options(pure, nomem, nostack)
            );
            out
        }
    }
}

#[inline]
pub(crate) fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits((b as u32) << 16)
}

/// Computes `y[i] = dot(w[i*cols..][..cols], x)` for every row of the block.
pub(crate) fn rows<W: FloatWeight>(isa: Isa, w: &[W], cols: usize, x: &[f32], y: &mut [f32]) {
    rows_n::<W, 1>(isa, w, cols, [x], [y]);
}

/// [`rows`] for `V` input vectors at once (each weight is read once for all of them);
/// every `y[v][i]` is computed with exactly the operations of [`rows`] on `x[v]`.
pub(crate) fn rows_n<W: FloatWeight, const V: usize>(
    isa: Isa,
    w: &[W],
    cols: usize,
    x: [&[f32]; V],
    y: [&mut [f32]; V],
) {
    for v in 0..V {
        debug_assert_eq!(w.len(), y[v].len() * cols);
        debug_assert_eq!(x[v].len(), cols);
    }
    match isa.tier() {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX-512 comes only from detecting avx512f/bw.
        Tier::Avx512 => unsafe { x86::rows_avx512::<W, V>(w, cols, x, y) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: an `Isa` of tier AVX2 comes only from detecting avx2, fma and f16c.
        Tier::Avx2 => unsafe { x86::rows_avx2::<W, V>(w, cols, x, y) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: an `Isa` of tier NEON comes only from detecting neon.
        Tier::Neon => unsafe { arm::rows_neon::<W, V>(w, cols, x, y) },
        _ => rows_portable::<W, V>(w, cols, x, y),
    }
}

/// 16 independent lanes per row (vectorises on any target).
fn rows_portable<W: FloatWeight, const V: usize>(
    w: &[W],
    cols: usize,
    x: [&[f32]; V],
    y: [&mut [f32]; V],
) {
    let n16 = cols / 16 * 16;
    for r in 0..y[0].len() {
        let row = &w[r * cols..(r + 1) * cols];
        let mut acc = [[0f32; 16]; V];
        for c in (0..n16).step_by(16) {
            let cw: [f32; 16] = std::array::from_fn(|l| row[c + l].to_f32());
            for v in 0..V {
                let cx = &x[v][c..c + 16];
                for l in 0..16 {
                    acc[v][l] += cw[l] * cx[l];
                }
            }
        }
        for v in 0..V {
            let mut s = 0f32;
            for a in acc[v] {
                s += a;
            }
            for (vw, vx) in row[n16..].iter().zip(&x[v][n16..]) {
                s += vw.to_f32() * vx;
            }
            y[v][r] = s;
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::FloatWeight;
    use crate::simd::hsum256;
    use std::arch::x86_64::*;

    /// A float-weight GEMV kernel of one x86 tier, `$lanes` floats per vector. Four
    /// rows at a time (one x load feeds four FMA chains per vector), taken from the
    /// four quarters of the block: four memory streams in different pages keep more
    /// DRAM requests in flight than adjacent rows (measured: cold f32 25 → 34–42
    /// GB/s, bf16 16 → 31–35 GB/s on 2 threads). The AVX-512 and AVX2 kernels differ
    /// only in vector width and intrinsic names, so they are written once here.
    macro_rules! rows_kernel {
        (
            $(#[$doc:meta])*
            $name:ident, $feature:literal, $lanes:literal, $load:ident,
            $zero:ident, $loadu:ident, $fmadd:ident, $hsum:path
        ) => {
            $(#[$doc])*
            #[target_feature(enable = $feature)]
            pub unsafe fn $name<W: FloatWeight, const V: usize>(
                w: &[W],
                cols: usize,
                x: [&[f32]; V],
                y: [&mut [f32]; V],
            ) {
// SAFETY: the caller upholds this function's `# Safety` contract, which is what
// the unsafe operations below rely on.
unsafe {
                let nv = cols / $lanes * $lanes;
                let tail = |p: *const W, x: &[f32], s: &mut f32| {
                    for c in nv..cols {
                        *s += (*p.add(c)).to_f32() * x[c];
                    }
                };
                // Rows r, r+s, r+2s, r+3s together: four memory streams in different pages.
                let n = y[0].len();
                let s = n / 4;
                for r in 0..s {
                    let rows = [r, r + s, r + 2 * s, r + 3 * s];
                    let mut a = [[$zero(); 4]; V];
                    let mut c = 0;
                    while c < nv {
                        let mut wv = [$zero(); 4];
                        for k in 0..4 {
                            wv[k] = W::$load(w.as_ptr().add(rows[k] * cols + c));
                        }
                        for v in 0..V {
                            let xv = $loadu(x[v].as_ptr().add(c));
                            for k in 0..4 {
                                a[v][k] = $fmadd(wv[k], xv, a[v][k]);
                            }
                        }
                        c += $lanes;
                    }
                    for v in 0..V {
                        for k in 0..4 {
                            let mut sum = $hsum(a[v][k]);
                            tail(w.as_ptr().add(rows[k] * cols), x[v], &mut sum);
                            y[v][rows[k]] = sum;
                        }
                    }
                }
                for r in 4 * s..n {
                    let p = w.as_ptr().add(r * cols);
                    let mut a = [$zero(); V];
                    let mut c = 0;
                    while c < nv {
                        let wv = W::$load(p.add(c));
                        for v in 0..V {
                            a[v] = $fmadd(wv, $loadu(x[v].as_ptr().add(c)), a[v]);
                        }
                        c += $lanes;
                    }
                    for v in 0..V {
                        let mut sum = $hsum(a[v]);
                        tail(p, x[v], &mut sum);
                        y[v][r] = sum;
                    }
                }
            }
}
        };
    }

    rows_kernel!(
        /// # Safety
        /// The CPU must support AVX-512F and AVX-512BW.
        rows_avx512, "avx512f,avx512bw", 16, load16,
        _mm512_setzero_ps, _mm512_loadu_ps, _mm512_fmadd_ps, _mm512_reduce_add_ps
    );

    rows_kernel!(
        /// # Safety
        /// The CPU must support AVX2, FMA and F16C.
        rows_avx2, "avx2,fma,f16c", 8, load8,
        _mm256_setzero_ps, _mm256_loadu_ps, _mm256_fmadd_ps, hsum256
    );
}

#[cfg(target_arch = "aarch64")]
mod arm {
    use super::FloatWeight;
    use std::arch::aarch64::*;

    /// Four distant rows at a time (four memory streams, as the x86 kernels), each
    /// with two accumulators per vector so the FMA latency is hidden.
    ///
    /// # Safety
    /// The CPU must support NEON.
    #[target_feature(enable = "neon")]
    pub unsafe fn rows_neon<W: FloatWeight, const V: usize>(
        w: &[W],
        cols: usize,
        x: [&[f32]; V],
        y: [&mut [f32]; V],
    ) {
        // SAFETY: the caller upholds this function's `# Safety` contract, which is what
        // the unsafe operations below rely on.
        unsafe {
            let n8 = cols / 8 * 8;
            let tail = |p: *const W, x: &[f32], s: &mut f32| {
                for c in n8..cols {
                    *s += (*p.add(c)).to_f32() * x[c];
                }
            };
            let n = y[0].len();
            let s = n / 4;
            for r in 0..s {
                let rows = [r, r + s, r + 2 * s, r + 3 * s];
                let mut a = [[[vdupq_n_f32(0.0); 2]; 4]; V];
                let mut c = 0;
                while c < n8 {
                    let mut wv = [[vdupq_n_f32(0.0); 2]; 4];
                    for k in 0..4 {
                        let p = w.as_ptr().add(rows[k] * cols + c);
                        wv[k] = [W::load4(p), W::load4(p.add(4))];
                    }
                    for v in 0..V {
                        let xp = x[v].as_ptr().add(c);
                        let (x0, x1) = (vld1q_f32(xp), vld1q_f32(xp.add(4)));
                        for k in 0..4 {
                            a[v][k][0] = vfmaq_f32(a[v][k][0], wv[k][0], x0);
                            a[v][k][1] = vfmaq_f32(a[v][k][1], wv[k][1], x1);
                        }
                    }
                    c += 8;
                }
                for v in 0..V {
                    for k in 0..4 {
                        let mut sum = vaddvq_f32(vaddq_f32(a[v][k][0], a[v][k][1]));
                        tail(w.as_ptr().add(rows[k] * cols), x[v], &mut sum);
                        y[v][rows[k]] = sum;
                    }
                }
            }
            for r in 4 * s..n {
                let p = w.as_ptr().add(r * cols);
                let mut a = [[vdupq_n_f32(0.0); 2]; V];
                let mut c = 0;
                while c < n8 {
                    let (w0, w1) = (W::load4(p.add(c)), W::load4(p.add(c + 4)));
                    for v in 0..V {
                        let xp = x[v].as_ptr().add(c);
                        a[v][0] = vfmaq_f32(a[v][0], w0, vld1q_f32(xp));
                        a[v][1] = vfmaq_f32(a[v][1], w1, vld1q_f32(xp.add(4)));
                    }
                    c += 8;
                }
                for v in 0..V {
                    let mut sum = vaddvq_f32(vaddq_f32(a[v][0], a[v][1]));
                    tail(p, x[v], &mut sum);
                    y[v][r] = sum;
                }
            }
        }
    }
}
