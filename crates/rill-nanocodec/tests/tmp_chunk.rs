mod common;
use common::*;
use rill_kernels::Pool;
use rill_nanocodec::NanoCodec;
#[test]
#[ignore]
fn chunk_cost() {
    let frames = frames();
    let codec = NanoCodec::new(weights()).unwrap();
    let pool = Pool::new(1);
    let n = frames.len().min(16);
    for round in 0..4 {
        for chunk in [1usize, 2, 4] {
            let t = std::time::Instant::now();
            let _ = codec
                .decode_probed(&frames[..n], chunk, &pool, &mut |_, _, _| {})
                .unwrap();
            eprintln!(
                "round {round} chunk {chunk}: {:.2} ms/frame",
                t.elapsed().as_secs_f64() * 1e3 / n as f64
            );
        }
    }
}
