//! Loading rejects bad state dicts, naming every problem at once.

mod common;

use std::collections::HashMap;

use rill_nanocodec::state_dict::{self, Values};
use rill_nanocodec::{CodecError, Config, Problem, StateDict, Weights};

fn synthetic() -> StateDict {
    state_dict::synthesize(&Config::nanocodec_22khz(), 0)
}

#[test]
fn every_problem_is_reported_at_once() {
    let cfg = Config::nanocodec_22khz();
    let mut sd = synthetic();
    sd.tensors.remove("audio_decoder.pre_conv.conv.bias");
    sd.insert(
        "audio_decoder.post_conv.conv.bias",
        vec![2],
        Values::F32(vec![0.0; 2]),
    );
    sd.insert(
        "vector_quantizer.fsqs.3.num_levels",
        vec![1, 4, 1],
        Values::I32(vec![8, 5, 5, 5]),
    );
    sd.insert(
        "audio_decoder.activations.0.activation.snake_act.alpha",
        vec![1, 432, 1],
        Values::I32(vec![1; 432]),
    );
    let mut v = vec![0.5f32; 13];
    v[3] = f32::INFINITY;
    sd.insert(
        "audio_decoder.post_activation.activation.snake_act.alpha",
        vec![1, 13, 1],
        Values::F32(v),
    );
    let e = Weights::from_state_dict(&sd, &cfg).unwrap_err();
    let CodecError::Invalid { problems, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(problems.len(), 5, "{e}");
    assert!(
        matches!(&problems[0], Problem::Missing { name, .. } if name == "audio_decoder.pre_conv.conv.bias")
    );
    let text = e.to_string();
    for needle in [
        "5 problem(s)",
        "post_conv.conv.bias: expected shape [1], found [2]",
        "num_levels",
        "expected dtype F32",
        "inf",
    ] {
        assert!(text.contains(needle), "{needle:?} not in:\n{text}");
    }
}

#[test]
fn zero_norm_weight_is_rejected() {
    let cfg = Config::nanocodec_22khz();
    let mut sd = synthetic();
    let name = "audio_decoder.post_conv.conv.parametrizations.weight.original1";
    sd.insert(name, vec![1, 27, 3], Values::F32(vec![0.0; 81]));
    let e = Weights::from_state_dict(&sd, &cfg).unwrap_err();
    assert!(e.to_string().contains("zero norm"), "{e}");
}

#[test]
fn safetensors_problems_are_reported_at_once() {
    let path = rill_testkit::cache_dir().join("nanocodec_bad.safetensors");
    // A file with one right tensor, one wrong shape, one wrong dtype, the rest missing.
    let sd = synthetic();
    let (shape, Values::F32(bias)) = sd.get("audio_decoder.pre_conv.conv.bias").unwrap().clone()
    else {
        panic!()
    };
    let tensors = vec![
        (
            "audio_decoder.pre_conv.conv.bias".to_string(),
            rill_checkpoint::writer::Tensor::f32(shape, &bias),
        ),
        (
            "audio_decoder.post_conv.conv.bias".to_string(),
            rill_checkpoint::writer::Tensor::f32(vec![3], &[0.0; 3]),
        ),
        (
            "vector_quantizer.fsqs.0.num_levels".to_string(),
            rill_checkpoint::writer::Tensor {
                shape: vec![1, 4, 1],
                ..rill_checkpoint::writer::Tensor::u32(&[8, 7, 6, 6])
            },
        ),
    ];
    rill_checkpoint::writer::write(&path, &tensors, HashMap::new()).unwrap();
    let e = Weights::load_safetensors(&path).unwrap_err();
    let CodecError::Invalid { problems, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(problems.len(), 402, "{e}");
    assert!(problems
        .iter()
        .any(|p| matches!(p, Problem::WrongShape { .. })));
    assert!(problems
        .iter()
        .any(|p| matches!(p, Problem::WrongDtype { .. })));
    std::fs::remove_file(&path).ok();
    // Not a safetensors file at all.
    std::fs::write(&path, b"not a checkpoint").unwrap();
    assert!(matches!(
        Weights::load_safetensors(&path),
        Err(CodecError::Checkpoint(_))
    ));
    std::fs::remove_file(&path).ok();
}

#[test]
fn inconsistent_weights_are_refused_not_panicked_on() {
    let good = common::weights();
    let mut w = good.clone();
    w.stages[2].res[1][0].input_conv.weight.pop();
    w.stages[4].up.bias.push(0.0);
    w.post_activation.alpha_inv.clear();
    let e = rill_nanocodec::NanoCodec::new(&w).unwrap_err();
    let CodecError::Invalid { problems, .. } = &e else {
        panic!("{e}")
    };
    assert_eq!(problems.len(), 3, "{e}");
    assert!(
        e.to_string()
            .contains("res_layers.2.res_blocks.1.res_blocks.0.input_conv"),
        "{e}"
    );
    let mut w = good.clone();
    w.config.up_sample_rates = vec![8, 8, 4, 2];
    assert!(rill_nanocodec::NanoCodec::new(&w).is_err());
    let mut w = good.clone();
    w.stages[0].res[0][0].skip_conv.bias[0] = f32::NAN;
    assert!(rill_nanocodec::NanoCodec::new(&w)
        .unwrap_err()
        .to_string()
        .contains("non-finite"));
    assert!(good.problems().is_empty());
}
