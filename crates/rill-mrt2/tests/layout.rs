//! The checkpoint layout derived from the configs (`rill_mrt2::layout`) against the
//! oracle's manifests, and the checks of a checkpoint against it: every way a file
//! can miss the layout is an error naming the problem.

use std::path::PathBuf;

use rill_checkpoint::writer::Tensor;
use rill_checkpoint::{Checkpoint, CheckpointError, Dtype, Problem};
use rill_mrt2::layout::{decoder_embedding_name, detect_model, tensor_specs, validate};
use rill_mrt2::ModelKind;

/// Names, shapes, init kinds and the exact mean/std bits of every tensor.
fn check_manifest(kind: ModelKind, file: &str) {
    let m = rill_testkit::json(file);
    let tensors = m["tensors"].as_array().unwrap();
    let specs = tensor_specs(kind);
    assert_eq!(specs.len(), tensors.len(), "{file}: tensor count");
    for (spec, t) in specs.iter().zip(tensors) {
        rill_testkit::assert_spec_is_manifest_entry(spec, t);
    }
}

#[test]
fn layout_matches_reference_manifest_small() {
    check_manifest(ModelKind::Small, "manifest_mrt2_small.json");
}

#[test]
fn layout_matches_reference_manifest_base() {
    // Shapes and init kinds too (this test once checked only names and mean/std).
    check_manifest(ModelKind::Base, "manifest_mrt2_base.json");
}

fn write(name: &str, tensors: Vec<(String, Tensor<'static>)>) -> PathBuf {
    rill_testkit::write_safetensors("layout-errors", name, tensors)
}

#[test]
fn unknown_model_names_the_embedding() {
    let p = write(
        "other.safetensors",
        vec![("params/foo".into(), Tensor::zeros(Dtype::F32, &[2]))],
    );
    let ck = Checkpoint::open(&p).unwrap();
    let e = validate(&ck).unwrap_err();
    assert!(matches!(e, CheckpointError::UnknownModel { .. }));
    assert!(e.to_string().contains("decoder_embedding"), "{e}");

    let p = write(
        "wrongwidth.safetensors",
        vec![(
            decoder_embedding_name(),
            Tensor::zeros(Dtype::BF16, &[12294, 512]),
        )],
    );
    let e = validate(&Checkpoint::open(&p).unwrap()).unwrap_err();
    assert!(e.to_string().contains("[12294, 512]"), "{e}");
}

#[test]
fn every_problem_is_reported_at_once() {
    let specs = tensor_specs(ModelKind::Small);
    let wrong_shape = specs
        .iter()
        .find(|s| s.name.ends_with("x_layers_3/ffn/ffn_layer1/bias"))
        .unwrap()
        .name
        .clone();
    let wrong_dtype = specs
        .iter()
        .find(|s| s.name.ends_with("depth_body/final_ln/scale"))
        .unwrap()
        .name
        .clone();
    let p = write(
        "partial.safetensors",
        vec![
            (
                decoder_embedding_name(),
                Tensor::zeros(Dtype::BF16, &[12294, 1024]),
            ),
            (wrong_shape.clone(), Tensor::zeros(Dtype::F32, &[4095])),
            (wrong_dtype.clone(), Tensor::zeros(Dtype::I32, &[768])),
        ],
    );
    let ck = Checkpoint::open(&p).unwrap();
    assert_eq!(detect_model(&ck).unwrap(), ModelKind::Small);
    let CheckpointError::Invalid { problems, .. } = validate(&ck).unwrap_err() else {
        panic!("expected Invalid");
    };
    assert_eq!(problems.len(), specs.len() - 3 + 2);
    assert!(problems.contains(&Problem::WrongShape {
        name: wrong_shape.clone(),
        expected: vec![4096],
        found: vec![4095],
    }));
    assert!(problems
        .iter()
        .any(|p| matches!(p, Problem::WrongDtype { name, .. } if *name == wrong_dtype)));
    let missing = problems
        .iter()
        .filter(|p| matches!(p, Problem::Missing { .. }))
        .count();
    assert_eq!(missing, specs.len() - 3);
    let msg = validate(&ck).unwrap_err().to_string();
    assert!(
        msg.contains(&wrong_shape) && msg.contains("expected shape [4096], found [4095]"),
        "{msg}"
    );
}
