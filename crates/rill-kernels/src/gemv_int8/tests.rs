use super::*;
use crate::quant::Affine;

/// A small LCG (tests only).
pub(crate) struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    /// ±1 with equal odds.
    pub fn sign(&mut self) -> i64 {
        if self.next() & 1 == 0 {
            1
        } else {
            -1
        }
    }

    /// Uniform in [−0.5, 0.5).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 7) as f32 / (1u64 << 24) as f32 - 0.5
    }
}

/// Owned activation buffers, derived from `xq` as `matrix::with_quantized` does.
pub(crate) struct OwnedAct {
    xq: Vec<i16>,
    hi: Vec<i8>,
    lo: Vec<i8>,
    sums: Vec<f32>,
    scale: f32,
}

impl OwnedAct {
    pub fn new(xq: Vec<i16>, scale: f32) -> OwnedAct {
        let n = xq.len();
        let (mut hi, mut lo) = (vec![0; n], vec![0; n]);
        split_bytes(&xq, &mut hi, &mut lo);
        let sums = xq
            .chunks_exact(GROUP)
            .map(|c| c.iter().map(|&v| v as i32).sum::<i32>() as f32)
            .collect();
        OwnedAct {
            xq,
            hi,
            lo,
            sums,
            scale,
        }
    }

    /// `n` random int16 activations in `[-amp, amp]`, one of them at ±amp (the
    /// quantiser maps the largest |x| to ±32767).
    pub fn random(rng: &mut Rng, n: usize, amp: i64, scale: f32) -> OwnedAct {
        let mut xq: Vec<i16> = (0..n).map(|_| rng.int(-amp, amp) as i16).collect();
        let i = rng.int(0, n as i64 - 1) as usize;
        xq[i] = (rng.sign() * amp) as i16;
        OwnedAct::new(xq, scale)
    }

    pub fn xq(&self) -> &[i16] {
        &self.xq
    }

    pub fn act(&self) -> Act<'_> {
        Act {
            xq: &self.xq,
            hi: &self.hi,
            lo: &self.lo,
            sums: &self.sums,
            scale: self.scale,
        }
    }
}

/// Calls `f` with the blocks of each task when `nblocks` blocks are split into
/// tasks of up to `per` blocks taken far apart (as `matrix::block_tasks` does).
pub(crate) fn for_block_tasks(nblocks: usize, per: usize, mut f: impl FnMut(&[usize])) {
    let tasks = nblocks.div_ceil(per);
    for t in 0..tasks {
        let b: Vec<usize> = (0..per)
            .map(|q| t + q * tasks)
            .filter(|&i| i < nblocks)
            .collect();
        f(&b);
    }
}

/// Shapes `(rows, cols)`: rows a multiple of 16 and not, several widths.
pub(crate) const SHAPES: [(usize, usize); 8] = [
    (16, 64),
    (37, 64),
    (64, 256),
    (7, 256),
    (48, 1024),
    (130, 1024),
    (32, 4096),
    (21, 4096),
];

fn run(m: &Q8, isa: Isa, act: &Act<'_>, per: usize) -> Vec<f32> {
    let mut y = vec![f32::NAN; m.rows];
    let range = 0..m.rows;
    for_block_tasks(m.rows.div_ceil(BLOCK), per, |b| {
        m.run_blocks(isa, b, &range, act, y.as_mut_ptr())
    });
    y
}

/// Exact integer sums `Σ_{i∈g} q[r,i]·xq[i]`, `[rows][groups]`, from row-major data.
fn group_dots(a: &Affine, rows: usize, cols: usize, xq: &[i16]) -> Vec<i64> {
    let groups = cols / GROUP;
    let mut d = vec![0i64; rows * groups];
    for r in 0..rows {
        for c in 0..cols {
            d[r * groups + c / GROUP] += a.q[r * cols + c] as i64 * xq[c] as i64;
        }
    }
    d
}

/// Random affine data; scales of mixed sign and magnitude, biases `−n·scale` with
/// random steps `0 ≤ n ≤ 255` (what MLX's quantiser gives), but every seventh
/// group with a bias of no whole number of steps (one of [`Q8::extras`]).
fn random_affine(rng: &mut Rng, rows: usize, cols: usize) -> Affine {
    let g = rows * cols / GROUP;
    let scales: Vec<f32> = (0..g).map(|_| rng.unit() * 1e-2).collect();
    let biases = scales
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            if i % 7 == 3 {
                0.3 + rng.unit()
            } else {
                -(rng.int(0, 255) as f32) * s
            }
        })
        .collect();
    Affine {
        bits: 8,
        group: GROUP,
        q: (0..rows * cols).map(|_| rng.int(0, 255) as u8).collect(),
        scales,
        biases,
    }
}

#[test]
fn biases_are_stored_as_steps_or_kept_exactly() {
    // Whole-step biases come back as −n·scale (to an ulp), the others bit for bit;
    // bytes and scales are unchanged, and a second round trip changes nothing.
    let mut rng = Rng(11);
    for &(rows, cols) in &SHAPES {
        let a = random_affine(&mut rng, rows, cols);
        let m = Q8::from_affine(&a, rows, cols);
        let folded = a.biases.iter().zip(&a.scales);
        let kept = folded
            .clone()
            .filter(|&(&b, &s)| steps_of(s, b).is_none())
            .count();
        assert_eq!(m.extras.len(), kept, "{rows}x{cols}");
        assert_eq!(kept, (0..a.biases.len()).filter(|i| i % 7 == 3).count());
        let b = m.to_affine();
        assert_eq!(b.q, a.q);
        assert_eq!(b.scales, a.scales);
        for (i, (&want, &got)) in a.biases.iter().zip(&b.biases).enumerate() {
            if i % 7 == 3 {
                assert_eq!(got.to_bits(), want.to_bits());
            }
            assert!(
                (got - want).abs() <= f32::EPSILON * want.abs(),
                "{i}: {got} vs {want}"
            );
        }
        assert_eq!(stored(&Q8::from_affine(&b, rows, cols)), stored(&m));
    }
}

#[test]
fn stacking_moves_the_extras_with_their_blocks() {
    let mut rng = Rng(12);
    let parts: Vec<Affine> = (0..3).map(|_| random_affine(&mut rng, 32, 256)).collect();
    let whole = Affine {
        bits: 8,
        group: GROUP,
        q: parts.iter().flat_map(|p| p.q.clone()).collect(),
        scales: parts.iter().flat_map(|p| p.scales.clone()).collect(),
        biases: parts.iter().flat_map(|p| p.biases.clone()).collect(),
    };
    let stacked = Q8::stack(parts.iter().map(|p| Q8::from_affine(p, 32, 256)).collect());
    assert_eq!(stored(&stacked), stored(&Q8::from_affine(&whole, 96, 256)));
}

/// Everything a [`Q8`] stores for the kernels.
fn stored(m: &Q8) -> (&[u8], &[u32], &[Extra]) {
    (&m.q, &m.meta, &m.extras)
}

/// The row widening walks the blocked layout quad by quad; it must read what
/// `index` addresses, element by element.
#[test]
fn row_into_reads_the_blocked_layout() {
    let mut rng = Rng(7);
    for &(rows, cols) in &SHAPES {
        let a = random_affine(&mut rng, rows, cols);
        let m = Q8::from_affine(&a, rows, cols);
        let mut row = vec![0f32; cols];
        for r in 0..rows {
            m.row_into(r, &mut row);
            for (c, &got) in row.iter().enumerate() {
                let (g, rr) = (c / GROUP, r % BLOCK);
                let at = Q8::meta_at((r / BLOCK) * m.groups() + g);
                let n = m.steps(at)[rr] as i32;
                let mut want = (m.q[m.index(r, c)] as i32 - n) as f32 * m.scale(at, rr);
                if (r * m.groups() + g) % 7 == 3 {
                    // A bias of no whole number of steps (`n` = 0), added as it is.
                    want += a.biases[r * m.groups() + g];
                }
                assert_eq!(
                    got.to_bits(),
                    want.to_bits(),
                    "{rows}x{cols} row {r} col {c}"
                );
            }
        }
    }
}

/// The multi-row product's panels hold `row_into`'s values bit for bit: every tier,
/// every 16-row block (the last one part padding, and one wholly past the rows),
/// column blocks at every group offset, extras included.
#[test]
fn pack16_equals_row_into_on_every_tier() {
    let mut rng = Rng(13);
    for &(rows, cols) in &SHAPES {
        let a = random_affine(&mut rng, rows, cols);
        let m = Q8::from_affine(&a, rows, cols);
        let mut row = vec![0f32; cols];
        let want: Vec<Vec<f32>> = (0..rows)
            .map(|r| {
                m.row_into(r, &mut row);
                row.clone()
            })
            .collect();
        for isa in crate::isa::tiers_under_test("int8 pack16") {
            for r0 in (0..rows.div_ceil(BLOCK) + 1).map(|b| b * BLOCK) {
                for k0 in (0..cols).step_by(GROUP) {
                    for kc in (GROUP..=cols - k0).step_by(GROUP) {
                        let mut out = vec![f32::NAN; kc * BLOCK];
                        m.pack16_into(isa, r0, k0, &mut out);
                        for (i, &got) in out.iter().enumerate() {
                            let (c, r) = (i / BLOCK, r0 + i % BLOCK);
                            let w = want.get(r).map_or(0.0, |row| row[k0 + c]);
                            assert_eq!(
                                got.to_bits(),
                                w.to_bits(),
                                "{isa:?} {rows}x{cols} row {r} col {}",
                                k0 + c
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn integer_sums_are_exact_on_every_tier() {
    let tiers = crate::isa::tiers_under_test("gemv_int8::integer_sums_are_exact_on_every_tier");
    // Unit scales, zero biases and sx = 1 make the output the plain integer sum;
    // small activations keep every partial sum below 2^24, so the f32 result is
    // the exact integer on every tier whatever its accumulation order.
    let mut rng = Rng(1);
    for &(rows, cols) in &SHAPES {
        let mut a = random_affine(&mut rng, rows, cols);
        a.scales.fill(1.0);
        a.biases.fill(0.0);
        let m = Q8::from_affine(&a, rows, cols);
        let x = OwnedAct::random(&mut rng, cols, 60, 1.0);
        let d = group_dots(&a, rows, cols, x.xq());
        let groups = cols / GROUP;
        for &isa in &tiers {
            for per in 1..=4 {
                let y = run(&m, isa, &x.act(), per);
                for r in 0..rows {
                    let row = &d[r * groups..(r + 1) * groups];
                    assert!(row.iter().map(|v| v.abs()).sum::<i64>() < 1 << 24);
                    let want: i64 = row.iter().sum();
                    assert_eq!(y[r], want as f32, "{isa:?} {rows}x{cols} row {r}");
                }
            }
        }
    }
}

#[test]
fn every_tier_matches_row_major_reference() {
    let tiers = crate::isa::tiers_under_test("gemv_int8::every_tier_matches_row_major_reference");
    // The portable kernel keeps the reference's f32 order, so it must agree
    // with it bit for bit. Every tier is also compared with the exact value:
    // measured worst |y − exact| / (sx·Σ_g |scale·d| + |bias·Σxq|) over these
    // shapes: 6.7e-8 on every tier (≈ 2⁻²⁴, the f32 group accumulation and the
    // final roundings); asserted with ~4× margin.
    const TOL: f64 = 2.5e-7;
    let mut rng = Rng(2);
    let mut worst = [0f64; 3];
    for &(rows, cols) in &SHAPES {
        let a = random_affine(&mut rng, rows, cols);
        let m = Q8::from_affine(&a, rows, cols);
        let x = OwnedAct::random(&mut rng, cols, 32767, 3.0 / 32767.0);
        let act = x.act();
        let d = group_dots(&a, rows, cols, x.xq());
        let groups = cols / GROUP;
        // Per row: the f32 value in the portable order, the exact value (f64)
        // and the magnitude the error is measured against.
        let mut want = vec![(0f32, 0f64, 0f64); rows];
        for (r, w) in want.iter_mut().enumerate() {
            let (mut acc, mut exact, mut mag) = (0f32, 0f64, 0f64);
            let mut kept = Vec::new();
            for g in 0..groups {
                let (s, b) = (a.scales[r * groups + g], a.biases[r * groups + g]);
                let (dg, xs) = (d[r * groups + g], act.sums[g] as i64);
                let n = steps_of(s, b).map_or_else(
                    || {
                        kept.push(b * act.sums[g]);
                        0
                    },
                    i64::from,
                );
                acc += s * (dg - n * xs) as f32;
                let t0 = s as f64 * dg as f64;
                let t1 = if n == 0 {
                    b as f64 * xs as f64
                } else {
                    -(s as f64) * (n * xs) as f64
                };
                exact += t0 + t1;
                mag += t0.abs() + t1.abs();
            }
            let mut y = act.scale * acc;
            for t in kept {
                y += act.scale * t;
            }
            let sx = act.scale as f64;
            *w = (y, sx * exact, sx * mag);
        }
        for &isa in &tiers {
            for per in 1..=4 {
                let y = run(&m, isa, &act, per);
                for (r, &(w, exact, mag)) in want.iter().enumerate() {
                    if isa == Isa::PORTABLE {
                        assert_eq!(y[r].to_bits(), w.to_bits(), "{rows}x{cols} row {r}");
                    }
                    let e = (y[r] as f64 - exact).abs() / mag;
                    let k = if isa.vnni() {
                        2
                    } else {
                        usize::from(isa != Isa::PORTABLE)
                    };
                    worst[k] = worst[k].max(e);
                    assert!(
                        e <= TOL,
                        "{isa:?} {rows}x{cols} row {r}: {} vs {exact}",
                        y[r]
                    );
                }
            }
        }
    }
    eprintln!("int8 worst relative error per kernel (portable, avx2, avx512 vnni): {worst:?}");
}

#[test]
fn extreme_values_do_not_overflow() {
    let tiers = crate::isa::tiers_under_test("gemv_int8::extreme_values_do_not_overflow");
    // q = 255 and xq = ±32767 everywhere: the largest per-group sums.
    let (rows, cols) = (32, 4096);
    let g = rows * cols / GROUP;
    let a = Affine {
        bits: 8,
        group: GROUP,
        q: vec![255; rows * cols],
        scales: vec![1.0; g],
        biases: vec![0.0; g],
    };
    let m = Q8::from_affine(&a, rows, cols);
    for sign in [1i16, -1] {
        let x = OwnedAct::new(vec![sign * 32767; cols], 1.0);
        let want = sign as f64 * 255.0 * 32767.0 * cols as f64;
        for &isa in &tiers {
            for v in run(&m, isa, &x.act(), 4) {
                assert!((v as f64 - want).abs() <= 1e-6 * want.abs(), "{isa:?}: {v}");
            }
        }
    }
}
