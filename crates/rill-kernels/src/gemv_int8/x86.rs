//! The x86 kernels of the int8 product (AVX-512 VNNI and AVX2); the module
//! doc of [`super`] describes the layout.
//!
//! The AVX-512 and SDOT kernels take `A` activation vectors: every loaded weight
//! register multiplies each of them, and per vector the operations and their order
//! are those of `A = 1`, so the results do not depend on `A`.

use super::{Act, BLOCK, GROUP, Q8, QUADS};
use crate::simd::prefetch_ahead as prefetch;
use std::arch::x86_64::*;

/// Up to 4 blocks (64 rows, four memory streams) at once; `prefetch_bytes` as
/// [`super::prefetch_bytes`]. The `128·Σq` correction of the low activation byte is
/// summed from the loaded weights by a third `vpdpbusd` (with ones) instead of read
/// from a stored table: one memory stream fewer and 1/16 fewer bytes per weight,
/// for a multiply the memory-bound kernel has time for; integers, so the same bits.
///
/// # Safety
/// The CPU must support AVX-512F, AVX-512BW and AVX-512VNNI.
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn blocks_avx512<const A: usize>(
    m: &Q8,
    blocks: &[usize],
    acts: &[&Act<'_>; A],
    out: &mut [[f32; 4 * BLOCK]; A],
    prefetch_bytes: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let groups = m.groups();
        let ones = _mm512_set1_epi8(1);
        let mut acc = [[_mm512_setzero_ps(); 4]; A];
        for g in 0..groups {
            let mut dh = [[_mm512_setzero_si512(); 4]; A];
            let mut dl = [[_mm512_setzero_si512(); 4]; A];
            let mut qsum = [_mm512_setzero_si512(); 4];
            for j in 0..QUADS {
                let mut h = [_mm512_setzero_si512(); A];
                let mut l = [_mm512_setzero_si512(); A];
                for a in 0..A {
                    let (hp, lp) = (
                        acts[a].hi.as_ptr() as *const i32,
                        acts[a].lo.as_ptr() as *const i32,
                    );
                    h[a] = _mm512_set1_epi32(hp.add(g * QUADS + j).read_unaligned());
                    l[a] = _mm512_set1_epi32(lp.add(g * QUADS + j).read_unaligned());
                }
                for k in 0..blocks.len() {
                    let p =
                        m.q.as_ptr()
                            .add(((blocks[k] * groups + g) * QUADS + j) * BLOCK * 4);
                    prefetch(p, prefetch_bytes);
                    let w = _mm512_loadu_si512(p as *const _);
                    qsum[k] = _mm512_dpbusd_epi32(qsum[k], w, ones);
                    for a in 0..A {
                        dh[a][k] = _mm512_dpbusd_epi32(dh[a][k], w, h[a]);
                        dl[a][k] = _mm512_dpbusd_epi32(dl[a][k], w, l[a]);
                    }
                }
            }
            for k in 0..blocks.len() {
                let meta = m.meta.as_ptr().add(Q8::meta_at(blocks[k] * groups + g));
                // 128·Σq of the low byte's shift, from the weights already in registers.
                let c = _mm512_slli_epi32::<7>(qsum[k]);
                let sc = _mm512_loadu_ps(meta as *const f32);
                let n = _mm512_cvtepu8_epi32(_mm_loadu_si128(meta.add(BLOCK) as *const __m128i));
                for a in 0..A {
                    let d = _mm512_add_epi32(
                        _mm512_add_epi32(_mm512_slli_epi32(dh[a][k], 8), dl[a][k]),
                        c,
                    );
                    // |Σxq| < 2^21, so the f32 group sum is an exact integer.
                    let xs = _mm512_set1_epi32(acts[a].sums[g] as i32);
                    let d = _mm512_sub_epi32(d, _mm512_mullo_epi32(n, xs));
                    acc[a][k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), sc, acc[a][k]);
                }
            }
        }
        for a in 0..A {
            let sx = _mm512_set1_ps(acts[a].scale);
            for k in 0..blocks.len() {
                _mm512_storeu_ps(
                    out[a].as_mut_ptr().add(k * BLOCK),
                    _mm512_mul_ps(sx, acc[a][k]),
                );
            }
        }
    }
}

/// Up to 4 blocks, interleaved group by group (four memory streams in flight,
/// as the AVX-512 kernel; one block at a time left DRAM idle between
/// requests). Per block the operations and their order are unchanged.
///
/// # Safety
/// The CPU must support AVX2 and FMA.
#[target_feature(enable = "avx2,fma")]
pub unsafe fn blocks_avx2(
    m: &Q8,
    blocks: &[usize],
    act: &Act<'_>,
    out: &mut [f32],
    prefetch_bytes: usize,
) {
    // SAFETY: the caller upholds this function's `# Safety` contract, which is what
    // the unsafe operations below rely on.
    unsafe {
        let groups = m.groups();
        let nb = blocks.len();
        // Four rows per register: [r0 p0, r0 p1, r1 p0, …] partial sums.
        let mut acc = [[_mm_setzero_ps(); 4]; 4];
        for g in 0..groups {
            // |Σxq| < 2^21, so the f32 group sum is an exact integer.
            let xs = _mm_set1_epi32(act.sums[g] as i32);
            for k in 0..nb {
                let b = blocks[k];
                let mut d = [_mm256_setzero_si256(); 4];
                for j in 0..QUADS {
                    // The quad's 4 int16 activations, broadcast to every 64-bit lane.
                    let x = _mm256_set1_epi64x(
                        (act.xq.as_ptr().add(g * GROUP + 4 * j) as *const i64).read_unaligned(),
                    );
                    let p = m.q.as_ptr().add(((b * groups + g) * QUADS + j) * BLOCK * 4);
                    prefetch(p, prefetch_bytes);
                    for q4 in 0..4 {
                        let w =
                            _mm256_cvtepu8_epi16(_mm_loadu_si128(p.add(16 * q4) as *const __m128i));
                        d[q4] = _mm256_add_epi32(d[q4], _mm256_madd_epi16(w, x));
                    }
                }
                let meta = m.meta.as_ptr().add(Q8::meta_at(b * groups + g));
                for q4 in 0..4 {
                    // Fold the two partial sums of each row: lanes (0,1)→row 0, …
                    let s = _mm256_hadd_epi32(d[q4], d[q4]);
                    let s = _mm256_permute4x64_epi64(s, 0b1101_1000);
                    let rows = _mm256_castsi256_si128(s);
                    let n =
                        _mm_cvtepu8_epi32(_mm_cvtsi32_si128(meta.add(BLOCK + q4).read() as i32));
                    let rows = _mm_sub_epi32(rows, _mm_mullo_epi32(n, xs));
                    let sc = _mm_loadu_ps(meta.add(4 * q4) as *const f32);
                    acc[k][q4] = _mm_fmadd_ps(_mm_cvtepi32_ps(rows), sc, acc[k][q4]);
                }
            }
        }
        let sx = _mm_set1_ps(act.scale);
        for k in 0..nb {
            for q4 in 0..4 {
                let v = _mm_mul_ps(sx, acc[k][q4]);
                _mm_storeu_ps(out.as_mut_ptr().add(k * BLOCK + 4 * q4), v);
            }
        }
    }
}

/// One 64-column group of [`Q8::pack16_into`]: `o[c·16 + r] = (q − steps[r])·scale[r]`
/// for the group's 16 quads (`q`: `[quad][16 rows][4]`), a 4 × 4 byte transpose per
/// 4 rows, then 16 rows per column widened as the scalar loop does (exact integer,
/// one rounding in the multiply).
///
/// # Safety
/// The CPU must support AVX2; `q.len() == 16·64`, `o.len() == 64·16`.
#[target_feature(enable = "avx2")]
pub unsafe fn pack16_group(q: &[u8], steps: &[i32; BLOCK], scale: &[f32; BLOCK], o: &mut [f32]) {
    assert!(q.len() == QUADS * BLOCK * 4 && o.len() == GROUP * BLOCK);
    // SAFETY: the caller guarantees AVX2; every load and store is inside `q` and `o`
    // (asserted above: quad j reads q[64j .. 64j + 64], writes o[64j .. 64j + 64]).
    unsafe {
        // Byte 4s + t (row s, column t) to byte 4t + s.
        let tr = _mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        let n = [
            _mm256_loadu_si256(steps.as_ptr() as *const __m256i),
            _mm256_loadu_si256(steps.as_ptr().add(8) as *const __m256i),
        ];
        let sc = [
            _mm256_loadu_ps(scale.as_ptr()),
            _mm256_loadu_ps(scale.as_ptr().add(8)),
        ];
        let (qp, op) = (q.as_ptr(), o.as_mut_ptr());
        for j in 0..QUADS {
            // Rows 4i .. 4i + 4, as 4 bytes per column.
            let ch: [__m128i; 4] = std::array::from_fn(|i| {
                _mm_shuffle_epi8(
                    _mm_loadu_si128(qp.add(64 * j + 16 * i) as *const __m128i),
                    tr,
                )
            });
            let lo01 = _mm_unpacklo_epi32(ch[0], ch[1]);
            let lo23 = _mm_unpacklo_epi32(ch[2], ch[3]);
            let hi01 = _mm_unpackhi_epi32(ch[0], ch[1]);
            let hi23 = _mm_unpackhi_epi32(ch[2], ch[3]);
            // Column t's 16 rows.
            let cols = [
                _mm_unpacklo_epi64(lo01, lo23),
                _mm_unpackhi_epi64(lo01, lo23),
                _mm_unpacklo_epi64(hi01, hi23),
                _mm_unpackhi_epi64(hi01, hi23),
            ];
            for (t, col) in cols.into_iter().enumerate() {
                let halves = [col, _mm_srli_si128::<8>(col)];
                for h in 0..2 {
                    let v = _mm256_sub_epi32(_mm256_cvtepu8_epi32(halves[h]), n[h]);
                    let f = _mm256_mul_ps(_mm256_cvtepi32_ps(v), sc[h]);
                    _mm256_storeu_ps(op.add((4 * j + t) * BLOCK + 8 * h), f);
                }
            }
        }
    }
}
