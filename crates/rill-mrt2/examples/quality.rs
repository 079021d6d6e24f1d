//! Quick quality check: `cargo run --release -p rill-mrt2 --example quality -- CKPT frames precisions...`.
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().collect();
    let ckpt = rill_checkpoint::Checkpoint::open(&a[1])?;
    let frames: usize = a[2].parse()?;
    let pool = rill_kernels::Pool::new(2);
    let reference = Arc::new(rill_mrt2::Mrt2::load(&ckpt, rill_mrt2::Precision::F32)?);
    let cond = rill_mrt2::conditioning::Conditioning {
        style: Some([660, 1016, 295, 206, 857, 841, 391, 857, 619, 70, 401, 22]),
        ..Default::default()
    };
    for p in &a[3..] {
        let prec = rill_mrt2::Precision::from_name(p).unwrap();
        let m = Arc::new(rill_mrt2::Mrt2::load(&ckpt, prec)?);
        let mut r = rill_mrt2::Session::new(reference.clone(), 42, &pool);
        let mut t = rill_mrt2::Session::new(m, 42, &pool);
        let q = rill_mrt2::quality::compare_sessions(
            &mut r,
            &mut t,
            &cond,
            Default::default(),
            frames,
            &pool,
        )
        .expect("valid settings");
        println!(
            "{p}: cos mean {:.6} min {:.6} greedy {:.3} sampling {:.4}",
            q.cosine_mean(),
            q.cosine_min,
            q.greedy(),
            q.sampling()
        );
    }
    Ok(())
}
