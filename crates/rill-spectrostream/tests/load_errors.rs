//! Loading a checkpoint whose codec tensors are missing or mis-shaped is an error
//! that names the tensor, never a panic.

use rill_checkpoint::Checkpoint;
use rill_spectrostream::{Codec, CodecError};
use safetensors::tensor::TensorView;
use safetensors::Dtype;

fn write(name: &str, tensors: &[(&str, Vec<usize>)]) -> Checkpoint {
    let bufs: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, s)| vec![0u8; 4 * s.iter().product::<usize>()])
        .collect();
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .zip(&bufs)
        .map(|((n, s), b)| {
            (
                n.to_string(),
                TensorView::new(Dtype::F32, s.clone(), b).unwrap(),
            )
        })
        .collect();
    let path = rill_testkit::cache_dir().join(format!("codec_load_errors_{name}.safetensors"));
    safetensors::tensor::serialize_to_file(views, None, &path).unwrap();
    Checkpoint::open(&path).unwrap()
}

const CB: &str = "params/soundstream/quantizer/embedding";
const FIRST: &str = "params/soundstream/decoder/input_layer/conv1x1_first/conv/kernel";

#[test]
fn missing_and_misshaped_tensors_are_named() {
    let e = Codec::load(&write("missing", &[(CB, vec![12, 1024, 256])])).unwrap_err();
    eprintln!("{e}");
    assert!(matches!(e, CodecError::Checkpoint(_)) && e.to_string().contains(FIRST));

    let e = Codec::load(&write("few_levels", &[(CB, vec![8, 1024, 256])])).unwrap_err();
    eprintln!("{e}");
    assert!(matches!(e, CodecError::TensorShape { ref name, .. } if name == CB));

    let e = Codec::load(&write(
        "bad_shape",
        &[(CB, vec![12, 1024, 256]), (FIRST, vec![1, 1, 256, 2048])],
    ))
    .unwrap_err();
    eprintln!("{e}");
    assert!(
        matches!(e, CodecError::TensorShape { ref name, ref found, .. } if name == FIRST && found == &vec![1, 1, 256, 2048])
    );
}
