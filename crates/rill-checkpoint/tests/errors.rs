//! Every way a checkpoint can be wrong gives an error naming the problem, never a panic.

use std::path::PathBuf;

use rill_checkpoint::writer::Tensor;
use rill_checkpoint::{Checkpoint, CheckpointError};
use safetensors::Dtype;

fn write(name: &str, tensors: Vec<(String, Tensor<'static>)>) -> PathBuf {
    rill_testkit::write_safetensors("ckpt-errors", name, tensors)
}

#[test]
fn missing_file_is_an_io_error() {
    let e = Checkpoint::open("/nonexistent/rill/mrt2_small.safetensors").unwrap_err();
    assert!(matches!(e, CheckpointError::Io { .. }), "{e}");
    assert!(e
        .to_string()
        .contains("/nonexistent/rill/mrt2_small.safetensors"));
}

#[test]
fn truncated_and_corrupt_files_are_rejected() {
    let p = write(
        "small.safetensors",
        vec![("a".into(), Tensor::zeros(Dtype::F32, &[4, 4]))],
    );
    let bytes = std::fs::read(&p).unwrap();
    for cut in [0, 4, 8, 20, bytes.len() - 1] {
        let q = rill_testkit::scratch_dir("ckpt-errors").join(format!("cut{cut}.safetensors"));
        std::fs::write(&q, &bytes[..cut]).unwrap();
        let e = Checkpoint::open(&q).unwrap_err();
        assert!(
            matches!(e, CheckpointError::NotSafetensors { .. }),
            "cut {cut}: {e}"
        );
        // Parsing from memory says the same.
        let m = Checkpoint::from_bytes(&q, bytes[..cut].to_vec()).unwrap_err();
        assert_eq!(m.to_string(), e.to_string());
    }
    let ck = Checkpoint::from_bytes("in-memory", bytes.clone()).unwrap();
    assert_eq!(ck.f32("a").unwrap(), vec![0.0; 16]);
    ck.release("a"); // a no-op for owned bytes
                     // A header length pointing far beyond the file.
    let mut huge = bytes.clone();
    huge[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let q = rill_testkit::scratch_dir("ckpt-errors").join("huge.safetensors");
    std::fs::write(&q, &huge).unwrap();
    assert!(matches!(
        Checkpoint::open(&q),
        Err(CheckpointError::NotSafetensors { .. })
    ));
    // Valid length, garbage JSON.
    let mut garbage = bytes.clone();
    for b in &mut garbage[8..20] {
        *b = b'#';
    }
    let q = rill_testkit::scratch_dir("ckpt-errors").join("garbage.safetensors");
    std::fs::write(&q, &garbage).unwrap();
    let e = Checkpoint::open(&q).unwrap_err();
    assert!(matches!(e, CheckpointError::NotSafetensors { .. }), "{e}");
    assert!(e.to_string().contains("download it again"));
}

#[test]
fn bf16_tensors_widen_exactly() {
    let mut t = Tensor::zeros(Dtype::BF16, &[3]);
    // 1.0, -2.5, 0.15625 in bf16
    for (i, b) in [0x3f80u16, 0xc020, 0x3e20].iter().enumerate() {
        t.bytes.to_mut()[2 * i..2 * i + 2].copy_from_slice(&b.to_le_bytes());
    }
    let p = write("bf16.safetensors", vec![("x".into(), t)]);
    let ck = Checkpoint::open(&p).unwrap();
    assert_eq!(ck.f32("x").unwrap(), vec![1.0, -2.5, 0.15625]);
    assert!(matches!(
        ck.f32("y"),
        Err(CheckpointError::NoSuchTensor { .. })
    ));
}
