//! Reads the reference recording written by numpy.

#[test]
fn reads_reference_npz() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/mrt2/D1.npz");
    let z = rill_io::Npz::read(&p).unwrap();
    let (shape, tokens) = z.i64("tokens").unwrap();
    assert_eq!(shape, vec![100, 12]);
    assert!(tokens.iter().all(|&t| (6..12294).contains(&t)));
    let (shape, _) = z.f32("logits_level").unwrap();
    assert_eq!(shape, vec![100, 12, 1024]);
    let (shape, _) = z.i64("audio_int16").unwrap();
    assert_eq!(shape, vec![25, 1920, 2]);
    let (_, m) = z.bool("decoder_stft_mask").unwrap();
    assert!(!m[0]);
    for (k, a) in &z.arrays {
        println!("{k}: {:?}", a.shape);
    }
    println!("unreadable: {:?}", z.unreadable.keys().collect::<Vec<_>>());
}

#[test]
fn reads_fortran_ordered_array() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/mrt2/D1.npz");
    let z = rill_io::Npz::read(&p).unwrap();
    let (shape, w) = z.f32("layer_waveform").unwrap();
    assert_eq!(shape, vec![46080, 2]);
    // Layer-mode waveform equals the step-mode audio shifted by one frame (1920 samples).
    let (_, step) = z.f32("audio_float").unwrap();
    let n = 1920 * 2;
    let max = (0..n)
        .map(|i| (w[i] - step[n + i]).abs())
        .fold(0f32, f32::max);
    assert!(max < 1e-5, "{max}");
}
