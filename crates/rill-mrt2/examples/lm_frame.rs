//! Quick LM timing: `cargo run --release -p rill-mrt2 --example lm_frame -- CKPT [f32|bf16] [frames] [threads]`.
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    let ckpt = rill_checkpoint::Checkpoint::open(&a[1])?;
    let p = rill_mrt2::Precision::from_name(a.get(2).map(|s| s.as_str()).unwrap_or("f32")).unwrap();
    let frames: usize = a.get(3).map(|s| s.parse().unwrap()).unwrap_or(30);
    let threads: usize = a.get(4).map(|s| s.parse().unwrap()).unwrap_or(2);
    let t = Instant::now();
    let m = Arc::new(rill_mrt2::Mrt2::load(&ckpt, p)?);
    eprintln!("load {:.2}s", t.elapsed().as_secs_f64());
    let pool = rill_kernels::Pool::new(threads);
    let mut s = rill_mrt2::Session::new(m, 42, &pool);
    let mut ms = Vec::new();
    for _ in 0..frames {
        let t = Instant::now();
        s.step(&pool, None);
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    ms.sort_by(|a, b| a.total_cmp(b));
    eprintln!(
        "median {:.1} ms  min {:.1}  max {:.1}",
        ms[ms.len() / 2],
        ms[0],
        ms[ms.len() - 1]
    );
    Ok(())
}
