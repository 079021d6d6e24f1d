//! Which SIMD tiers this machine's tests exercise. Every test that loops over the
//! tiers says so on stderr; this one turns a missing tier into a failure when CI
//! names the tiers it must cover: `RILL_REQUIRE_ISA=avx512,avx2,portable`
//! (names as `RILL_ISA` takes them; `avx512` means AVX-512 with VNNI). `.ci/run`
//! sets it to every tier the CPU's feature flags (`/proc/cpuinfo`) allow, so a
//! tier that detection misses fails CI instead of going untested.

use rill_kernels::isa::{self, Isa, TIER_NAMES};

/// The tiers named in a `RILL_REQUIRE_ISA` value that are not in `available`,
/// or an error for a name that is no tier at all.
fn missing_required(value: &str, available: &[Isa]) -> Result<Vec<String>, String> {
    let mut missing = Vec::new();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let name = name.to_ascii_lowercase();
        if !TIER_NAMES.contains(&name.as_str()) {
            return Err(format!(
                "RILL_REQUIRE_ISA names {name:?}, which is not a SIMD tier (use: {})",
                TIER_NAMES.join(", ")
            ));
        }
        if !available.iter().any(|i| i.name() == name) {
            missing.push(name);
        }
    }
    Ok(missing)
}

#[test]
fn required_tiers_are_available() {
    let tiers = isa::tiers_under_test("RILL_REQUIRE_ISA check");
    let Ok(value) = std::env::var("RILL_REQUIRE_ISA") else {
        return;
    };
    match missing_required(&value, &tiers) {
        Ok(missing) => assert!(
            missing.is_empty(),
            "RILL_REQUIRE_ISA={value} but this CPU lacks {}; its tiers: {}",
            missing.join(", "),
            tiers
                .iter()
                .map(|i| i.name())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn require_list_parsing() {
    let portable_only = [Isa::PORTABLE];
    assert_eq!(missing_required("portable", &portable_only), Ok(vec![]));
    assert_eq!(missing_required("", &portable_only), Ok(vec![]));
    assert_eq!(
        missing_required(" AVX512 , portable,avx2", &portable_only),
        Ok(vec!["avx512".to_string(), "avx2".to_string()])
    );
    assert!(missing_required("avx-512", &portable_only)
        .unwrap_err()
        .contains("avx512-novnni"));
    // Whatever this CPU detects is never missing.
    let all = Isa::available();
    let names: Vec<&str> = all.iter().map(|i| i.name()).collect();
    assert_eq!(missing_required(&names.join(","), &all), Ok(vec![]));
}
