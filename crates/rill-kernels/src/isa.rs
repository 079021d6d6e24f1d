//! Runtime SIMD tier selection.
//!
//! Kernels exist for each tier; the best one the CPU supports is chosen once at
//! first use. `RILL_ISA=portable|avx2|avx512` forces a lower tier (for tests and
//! for comparing paths); asking for a tier the CPU lacks falls back to the best
//! available one.

use std::sync::OnceLock;

/// A SIMD tier. Ordered: a higher tier implies the lower ones are available.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Isa {
    /// Plain Rust, auto-vectorised for the compile target.
    Portable,
    /// x86-64 AVX2 + FMA + F16C.
    Avx2,
    /// x86-64 AVX-512 F/BW/VL + VNNI + BF16.
    Avx512,
}

impl Isa {
    pub fn name(self) -> &'static str {
        match self {
            Isa::Portable => "portable",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }

    /// The best tier this CPU supports, ignoring any override.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bw")
                && std::arch::is_x86_feature_detected!("avx512vl")
                && std::arch::is_x86_feature_detected!("avx512vnni")
                && std::arch::is_x86_feature_detected!("avx512bf16")
            {
                return Isa::Avx512;
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
                && std::arch::is_x86_feature_detected!("f16c")
            {
                return Isa::Avx2;
            }
        }
        Isa::Portable
    }

    /// Every tier this CPU can run, lowest first.
    pub fn available() -> Vec<Isa> {
        let best = Isa::detect();
        [Isa::Portable, Isa::Avx2, Isa::Avx512]
            .into_iter()
            .filter(|&i| i <= best)
            .collect()
    }

    fn from_env() -> Option<Isa> {
        match std::env::var("RILL_ISA")
            .ok()?
            .to_ascii_lowercase()
            .as_str()
        {
            "portable" | "scalar" => Some(Isa::Portable),
            "avx2" => Some(Isa::Avx2),
            "avx512" => Some(Isa::Avx512),
            _ => None,
        }
    }
}

/// The tier kernels use: the detected one, lowered by `RILL_ISA` if set.
pub fn active() -> Isa {
    static ACTIVE: OnceLock<Isa> = OnceLock::new();
    *ACTIVE.get_or_init(|| {
        let best = Isa::detect();
        match Isa::from_env() {
            Some(wanted) if wanted <= best => wanted,
            _ => best,
        }
    })
}
