use std::collections::HashMap;

use rill_kernels::{Matrix, WeightFormat};
use safetensors::Dtype;

use super::*;
use crate::writer::{serialize, Tensor};

/// A source checkpoint: one `[in, out]` kernel `k`, a bias and a 14-level codebook.
fn source(rows: usize, cols: usize) -> Checkpoint {
    let kernel: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 512.0)
        .collect();
    let codebook: Vec<f32> = (0..14 * 2 * 3).map(|i| i as f32).collect();
    let tensors = vec![
        ("k".to_string(), Tensor::f32(vec![cols, rows], &kernel)),
        ("b".to_string(), Tensor::f32(vec![3], &[1.0, 2.0, 3.0])),
        (
            RVQ_CODEBOOK.to_string(),
            Tensor::f32(vec![14, 2, 3], &codebook),
        ),
    ];
    let meta = HashMap::from([("origin".to_string(), "test".to_string())]);
    Checkpoint::from_bytes("src.safetensors", serialize(&tensors, meta).unwrap()).unwrap()
}

/// `src` written pre-quantised with `matrices`, read back.
fn round_trip(src: &Checkpoint, matrices: &[(String, Matrix)], tag: &str) -> Checkpoint {
    let path = std::env::temp_dir().join(format!(
        "rill-quantized-{tag}-{}.safetensors",
        std::process::id()
    ));
    write(&path, src, "mrt2_small", "int8", matrices).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    Checkpoint::from_bytes(path, bytes).unwrap()
}

/// The parts a matrix is stored as: name, element type, length.
type ExpectedParts = &'static [(&'static str, Dtype, usize)];

/// Every format round-trips exactly, under the part names and element types the
/// files on disk have (changing them would orphan every file already written).
#[test]
fn every_format_round_trips_under_its_part_names() {
    let (rows, cols) = (48, 64);
    let src = source(rows, cols);
    let kernel = src.f32("k").unwrap();
    let cases: [(WeightFormat, ExpectedParts); 7] = [
        (WeightFormat::F32, &[("f32", Dtype::F32, 3072)]),
        (WeightFormat::Bf16, &[("bf16", Dtype::BF16, 3072)]),
        (WeightFormat::F16, &[("f16", Dtype::F32, 3072)]),
        (
            WeightFormat::Int8,
            &[
                ("q", Dtype::U8, 3072),
                ("scales", Dtype::F32, 48),
                ("biases", Dtype::F32, 48),
            ],
        ),
        (
            WeightFormat::Int4,
            &[
                ("q", Dtype::U8, 1536),
                ("scales", Dtype::F32, 96),
                ("biases", Dtype::F32, 96),
            ],
        ),
        (
            WeightFormat::Lut4,
            &[("q", Dtype::U8, 1536), ("lut", Dtype::F32, 48)],
        ),
        (WeightFormat::MlxInt8, &[("w", Dtype::BF16, 3072)]),
    ];
    for (format, expected_parts) in cases {
        let m = Matrix::from_f32_transposed(rows, cols, &kernel, format);
        let q = round_trip(&src, &[("k".to_string(), m.clone())], format.name());
        let stored = format.name();
        assert_eq!(q.quantized_format("k"), Some(stored));
        assert!(q.entry("k").is_none(), "{stored}: the original stays out");
        let mut names: Vec<&str> = q.names().filter(|n| n.starts_with("k#")).collect();
        names.sort();
        let mut want: Vec<String> = expected_parts
            .iter()
            .map(|(p, _, _)| format!("k#{stored}:{p}"))
            .collect();
        want.sort();
        assert_eq!(names, want, "{stored} part names");
        for (p, dtype, len) in expected_parts {
            let e = q.entry(&format!("k#{stored}:{p}")).unwrap();
            assert_eq!(
                (e.dtype, e.shape.as_slice()),
                (*dtype, &[*len][..]),
                "{stored}:{p}"
            );
        }
        let back = q.quantized_matrix("k", format, rows, cols).unwrap();
        assert_eq!(back.to_arrays(), m.to_arrays(), "{stored} arrays");
    }
}

#[test]
fn other_tensors_are_copied_and_the_codebook_cut_to_the_levels_read() {
    let src = source(48, 64);
    let m = Matrix::from_f32(48, 64, src.f32("k").unwrap(), WeightFormat::Int8);
    let q = round_trip(&src, &[("k".to_string(), m)], "copy");
    assert_eq!(q.tensor("b").unwrap().bytes, src.tensor("b").unwrap().bytes);
    let cb = q.tensor(RVQ_CODEBOOK).unwrap();
    assert_eq!(cb.shape, &[RVQ_LEVELS, 2, 3]);
    assert_eq!(
        cb.bytes,
        &src.tensor(RVQ_CODEBOOK).unwrap().bytes[..RVQ_LEVELS * 6 * 4]
    );
    let meta = q.metadata();
    assert_eq!(meta["origin"], "test", "the source's metadata is kept");
    assert_eq!(meta["rill.format"], "rill-quantized v1");
    assert_eq!(meta["rill.model"], "mrt2_small");
    assert_eq!(q.quantized_precision(), Some("int8"));
    assert_eq!(q.quantized_model(), Some("mrt2_small"));
    assert_eq!(src.quantized_precision(), None);
    assert_eq!(src.quantized_format("k"), None);
}

#[test]
fn damaged_parts_are_errors_that_name_the_part() {
    let src = source(48, 64);
    let m = Matrix::from_f32(48, 64, src.f32("k").unwrap(), WeightFormat::Int8);
    let q = round_trip(&src, &[("k".to_string(), m)], "damaged");
    // Asked for the wrong shape, format or a tensor that is not there.
    let e = q
        .quantized_matrix("k", WeightFormat::Int8, 24, 64)
        .unwrap_err();
    assert!(
        matches!(&e, CheckpointError::QuantizedShape { name, .. } if name == "k"),
        "{e}"
    );
    let e = q
        .quantized_matrix("k", WeightFormat::Lut4, 48, 64)
        .unwrap_err();
    assert!(e.to_string().contains("k#lut4:q"), "{e}");
    let e = q
        .quantized_matrix("k", WeightFormat::Int8, 48, 60)
        .unwrap_err();
    assert!(e.to_string().contains("multiple of 64 columns"), "{e}");
    // A part of the wrong element type.
    let tensors = vec![
        ("k#int8:q".to_string(), Tensor::f32(vec![1], &[0.0])),
        ("k#int8:scales".to_string(), Tensor::f32(vec![1], &[0.0])),
        ("k#int8:biases".to_string(), Tensor::f32(vec![1], &[0.0])),
    ];
    let bytes = serialize(&tensors, HashMap::new()).unwrap();
    let bad = Checkpoint::from_bytes("bad.safetensors", bytes).unwrap();
    let e = bad
        .quantized_matrix("k", WeightFormat::Int8, 1, 64)
        .unwrap_err();
    assert!(
        e.to_string().contains("k#int8:q") && e.to_string().contains("U8"),
        "{e}"
    );
}
