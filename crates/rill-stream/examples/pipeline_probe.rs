//! Throughput of a two-stage pipeline (LM on one core, codec on the other):
//! `cargo run --release -p rill-stream --example pipeline_probe -- CKPT PRECISION FRAMES [f16]`.
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    let ck = rill_checkpoint::Checkpoint::open(&a[1])?;
    let p = rill_mrt2::Precision::from_name(&a[2]).unwrap();
    let frames: usize = a[3].parse()?;
    let cp = if a.get(4).map(|s| s == "f16").unwrap_or(false) {
        rill_codec::CodecPrecision::F16Weights
    } else {
        rill_codec::CodecPrecision::F32
    };
    let lm = Arc::new(rill_mrt2::Mrt2::load(&ck, p)?);
    let codec = Arc::new(rill_codec::Codec::load_with(
        &ck,
        rill_codec::CodecOptions {
            precision: cp,
            isa: None,
        },
    )?);
    let (tx, rx) = std::sync::mpsc::sync_channel::<[u32; 12]>(4);
    let t0 = Instant::now();
    let lm_thread = std::thread::spawn(move || {
        let pool = rill_kernels::Pool::single();
        let mut s = rill_mrt2::Session::new(lm, 42, &pool);
        for _ in 0..frames {
            let t = s.step(&pool, None);
            if tx.send(t).is_err() {
                break;
            }
        }
    });
    let pool = rill_kernels::Pool::single();
    let mut st = codec.new_state();
    let mut audio = vec![0f32; 3840];
    let mut n = 0;
    let mut first = None;
    while let Ok(t) = rx.recv() {
        codec.step(&mut st, &t, &mut audio, None, &pool);
        n += 1;
        if n == 5 {
            first = Some(Instant::now());
        }
    }
    lm_thread.join().unwrap();
    let steady = first.unwrap().elapsed().as_secs_f64() * 1e3 / (n - 5) as f64;
    println!(
        "{n} frames in {:.2} s; steady throughput {steady:.1} ms/frame",
        t0.elapsed().as_secs_f64()
    );
    Ok(())
}
