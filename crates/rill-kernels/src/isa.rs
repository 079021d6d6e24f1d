//! Runtime SIMD tier selection.
//!
//! Kernels exist for each tier; the best one the CPU supports is chosen once at
//! first use. `RILL_ISA` forces a lower tier (for tests and for comparing paths).
//! A model fixes its tier when it is loaded ([`crate::Ops`]); no kernel call
//! reads the process's tier.
//!
//! An [`Isa`] is a proof: the only ways to get one are detection
//! ([`Isa::detect`], [`Isa::available`], [`active`], [`from_env`]) and
//! [`Isa::PORTABLE`], so no safe call can run instructions the CPU lacks.
//! Each tier requires only the features its kernels use; optional extensions
//! (AVX-512 VNNI) are detected separately and kernels without them fall back.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

/// A family of kernels. Ordered within one architecture: a higher tier implies
/// the lower ones (NEON and the x86 tiers never meet on one CPU).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Tier {
    /// Plain Rust in fixed-width chunks, auto-vectorised for the compile target.
    Portable,
    /// AArch64 Advanced SIMD (NEON, part of every ARMv8-A CPU), with the optional
    /// dot-product and FP16 extensions detected separately.
    Neon,
    /// x86-64 AVX2 + FMA + F16C.
    Avx2,
    /// x86-64 AVX-512 F + BW (and everything AVX2 needs).
    Avx512,
}

/// A SIMD tier this CPU was detected to support, with its optional extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Isa {
    tier: Tier,
    /// The int8 dot product for the int8 and 4-bit kernels: AVX-512 VNNI
    /// (`vpdpbusd`) with [`Tier::Avx512`], `SDOT` (FEAT_DotProd) with [`Tier::Neon`].
    dot: bool,
    /// Half-precision arithmetic (FEAT_FP16), only with [`Tier::Neon`].
    fp16: bool,
}

/// Every value `RILL_ISA` accepts.
pub const RILL_ISA_VALUES: &str = "portable, avx2, avx512, avx512-novnni, neon, neon-baseline";

/// A bad `RILL_ISA` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IsaError {
    Unknown(String),
    Unsupported { wanted: String, best: Isa },
}

impl fmt::Display for IsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IsaError::Unknown(v) => write!(
                f,
                "RILL_ISA={v:?} is not a SIMD tier; use one of: {RILL_ISA_VALUES} (or unset it)"
            ),
            IsaError::Unsupported { wanted, best } => write!(
                f,
                "RILL_ISA={wanted} asks for instructions this CPU lacks; its best tier is {best} \
                 (use one of: {})",
                Isa::available()
                    .iter()
                    .map(|i| i.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }
}

impl std::error::Error for IsaError {}

impl fmt::Display for Isa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Isa {
    /// The portable tier, valid on every CPU.
    pub const PORTABLE: Isa = Isa {
        tier: Tier::Portable,
        dot: false,
        fp16: false,
    };

    const fn new(tier: Tier, dot: bool, fp16: bool) -> Isa {
        Isa { tier, dot, fp16 }
    }

    pub fn tier(self) -> Tier {
        self.tier
    }

    /// Whether the AVX-512 VNNI int8 dot product is available (and allowed).
    pub fn vnni(self) -> bool {
        self.dot && self.tier == Tier::Avx512
    }

    /// Whether the NEON `SDOT` int8 dot product is available (and allowed).
    pub fn dotprod(self) -> bool {
        self.dot && self.tier == Tier::Neon
    }

    /// Whether NEON half-precision arithmetic is available (and allowed).
    pub fn fp16(self) -> bool {
        self.fp16 && self.tier == Tier::Neon
    }

    /// The name `RILL_ISA` accepts for this tier.
    pub fn name(self) -> &'static str {
        match (self.tier, self.dot, self.fp16) {
            (Tier::Portable, ..) => "portable",
            (Tier::Avx2, ..) => "avx2",
            (Tier::Avx512, true, _) => "avx512",
            (Tier::Avx512, false, _) => "avx512-novnni",
            (Tier::Neon, false, false) => "neon-baseline",
            (Tier::Neon, ..) => "neon",
        }
    }

    /// The best tier this CPU supports, ignoring any override.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            if has!("avx2") && has!("fma") && has!("f16c") {
                if has!("avx512f") && has!("avx512bw") {
                    return Isa::new(Tier::Avx512, has!("avx512vnni"), false);
                }
                return Isa::new(Tier::Avx2, false, false);
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            use std::arch::is_aarch64_feature_detected as has;
            if has!("neon") {
                return Isa::new(Tier::Neon, has!("dotprod"), has!("fp16"));
            }
        }
        Isa::PORTABLE
    }

    /// Every tier this CPU can run, lowest first (including AVX-512 without its
    /// VNNI extension where VNNI exists, and NEON without its extensions where
    /// they exist, so the fallback kernels get tested).
    pub fn available() -> Vec<Isa> {
        let best = Isa::detect();
        let mut v = vec![Isa::PORTABLE];
        match best.tier {
            Tier::Portable => {}
            Tier::Neon => {
                v.push(Isa::new(Tier::Neon, false, false));
                if best.dot || best.fp16 {
                    v.push(best);
                }
            }
            Tier::Avx2 => v.push(best),
            Tier::Avx512 => {
                v.push(Isa::new(Tier::Avx2, false, false));
                v.push(Isa::new(Tier::Avx512, false, false));
                if best.dot {
                    v.push(best);
                }
            }
        }
        v
    }

    /// The tier named `name` if this CPU runs it.
    pub fn parse(name: &str) -> Result<Isa, IsaError> {
        let wanted = name.trim().to_ascii_lowercase();
        let best = Isa::detect();
        // `avx512` and `neon` mean "with whatever extensions this CPU has".
        let want = match wanted.as_str() {
            "portable" | "scalar" => Isa::PORTABLE,
            "avx2" => Isa::new(Tier::Avx2, false, false),
            "avx512" => Isa::new(Tier::Avx512, best.dot, false),
            "avx512-novnni" => Isa::new(Tier::Avx512, false, false),
            "neon" => Isa::new(Tier::Neon, best.dot, best.fp16),
            "neon-baseline" => Isa::new(Tier::Neon, false, false),
            _ => return Err(IsaError::Unknown(name.to_string())),
        };
        Isa::available()
            .into_iter()
            .find(|i| *i == want)
            .ok_or(IsaError::Unsupported { wanted, best })
    }
}

/// Every tier name on every architecture (what `RILL_REQUIRE_ISA` may name).
pub const TIER_NAMES: [&str; 6] = [
    "portable",
    "avx2",
    "avx512-novnni",
    "avx512",
    "neon-baseline",
    "neon",
];

/// The tier names of this build's architecture, lowest first (what
/// [`Isa::name`] returns on a CPU that has them all).
pub const ARCH_TIER_NAMES: &[&str] = if cfg!(target_arch = "x86_64") {
    &["portable", "avx2", "avx512-novnni", "avx512"]
} else if cfg!(target_arch = "aarch64") {
    &["portable", "neon-baseline", "neon"]
} else {
    &["portable"]
};

/// [`Isa::available`] for a test or benchmark that runs every tier: writes one line
/// to stderr naming the tiers `what` runs and the ones this CPU lacks (straight to
/// the stream, past the test harness's output capture, so CI logs show which
/// kernels were really exercised).
pub fn tiers_under_test(what: &str) -> Vec<Isa> {
    use std::io::Write;
    let v = Isa::available();
    let names: Vec<&str> = v.iter().map(|i| i.name()).collect();
    let missing: Vec<&str> = ARCH_TIER_NAMES
        .iter()
        .copied()
        .filter(|n| !names.contains(n))
        .collect();
    let missing = if missing.is_empty() {
        "none".to_string()
    } else {
        missing.join(", ")
    };
    let _ = writeln!(
        std::io::stderr(),
        "{what}: SIMD tiers tested: {}; not available on this CPU: {missing}",
        names.join(", ")
    );
    v
}

/// Whether the CPU says it is an Intel one (CPUID vendor `GenuineIntel`): for
/// tuning that was measured to help on Intel and to hurt elsewhere, never for
/// choosing instructions (that is [`Isa::detect`]'s feature detection).
pub fn vendor_is_intel() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // Leaf 0 (the vendor string) exists on every x86-64 CPU.
        let r = std::arch::x86_64::__cpuid(0);
        let vendor = [r.ebx, r.edx, r.ecx].map(u32::to_le_bytes).concat();
        vendor == b"GenuineIntel"
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// The tier `RILL_ISA` asks for, checked against this CPU; `Ok(None)` when unset.
/// Programs call this at start-up to turn a bad value into a clear error.
pub fn from_env() -> Result<Option<Isa>, IsaError> {
    match std::env::var("RILL_ISA") {
        Ok(v) if v.trim().is_empty() => Ok(None),
        Ok(v) => Isa::parse(&v).map(Some),
        Err(_) => Ok(None),
    }
}

/// The active tier, encoded by [`Isa::code`]; 0 = not chosen yet.
static ACTIVE: AtomicU8 = AtomicU8::new(0);

impl Isa {
    fn code(self) -> u8 {
        1 + 4 * self.tier as u8 + 2 * self.fp16 as u8 + self.dot as u8
    }

    fn from_code(c: u8) -> Isa {
        let tier = match (c - 1) / 4 {
            0 => Tier::Portable,
            1 => Tier::Neon,
            2 => Tier::Avx2,
            _ => Tier::Avx512,
        };
        Isa::new(tier, (c - 1) & 1 == 1, (c - 1) & 2 == 2)
    }
}

/// The process's tier: the detected one, lowered by `RILL_ISA` if set. A bad
/// `RILL_ISA` value is ignored here (check it with [`from_env`] first). Models
/// read it once, at load, into the [`crate::Ops`] their steps run on (to compare
/// tiers in one process, load a model per tier with an explicit [`Isa`]).
pub fn active() -> Isa {
    match ACTIVE.load(Ordering::Relaxed) {
        0 => {
            let isa = match from_env() {
                Ok(Some(isa)) => isa,
                _ => Isa::detect(),
            };
            ACTIVE.store(isa.code(), Ordering::Relaxed);
            isa
        }
        // Only codes of detected tiers are ever stored.
        c => Isa::from_code(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn available_tiers_are_ordered_and_end_at_the_best() {
        let v = Isa::available();
        for isa in &v {
            assert!(ARCH_TIER_NAMES.contains(&isa.name()), "{isa}");
        }
        assert_eq!(v[0], Isa::PORTABLE);
        assert_eq!(*v.last().unwrap(), Isa::detect());
        assert!(v.windows(2).all(|w| w[0] < w[1]));
        for isa in &v {
            assert_eq!(Isa::parse(isa.name()), Ok(*isa), "{isa}");
            assert!(isa.vnni() <= (isa.tier() == Tier::Avx512));
            assert!(isa.dotprod() <= (isa.tier() == Tier::Neon));
            assert!(isa.fp16() <= (isa.tier() == Tier::Neon));
        }
    }

    #[test]
    fn bad_names_are_errors_naming_the_valid_ones() {
        let e = Isa::parse("avx-512").unwrap_err();
        assert_eq!(e, IsaError::Unknown("avx-512".into()));
        assert!(e.to_string().contains(RILL_ISA_VALUES), "{e}");
        if Isa::detect().tier() != Tier::Avx512 {
            let e = Isa::parse("avx512").unwrap_err();
            assert!(matches!(e, IsaError::Unsupported { .. }), "{e}");
        }
        if Isa::detect().tier() != Tier::Neon {
            let e = Isa::parse("neon-baseline").unwrap_err();
            assert!(matches!(e, IsaError::Unsupported { .. }), "{e}");
        }
        assert_eq!(Isa::parse(" Portable "), Ok(Isa::PORTABLE));
    }

    #[test]
    fn codes_round_trip() {
        for isa in tiers_under_test("isa::codes_round_trip") {
            assert_eq!(Isa::from_code(isa.code()), isa);
        }
    }
}
