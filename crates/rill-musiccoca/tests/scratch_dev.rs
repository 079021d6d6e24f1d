// Scratch: the oracle's seed-0 safetensors against dev_seed0.npz (not committed).
use rill_kernels::{Isa, Pool};
use rill_musiccoca::{MusicCoCa, Weights};

fn weights(path: &str) -> Weights {
    let bytes = std::fs::read(path).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let mut w = Weights::new();
    for (name, t) in st.tensors() {
        let data: Vec<f32> = t
            .data()
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        w.insert(name, t.shape().to_vec(), data);
    }
    w
}

fn maxdiff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn dev() {
    let w = weights(&std::env::var("MC_W").unwrap());
    let npz = rill_io::Npz::read(std::env::var("MC_NPZ").unwrap()).unwrap();
    let pool = Pool::new(2);
    let t0 = std::time::Instant::now();
    let m = MusicCoCa::from_weights(w, Isa::detect()).unwrap();
    eprintln!("load {:?}", t0.elapsed());
    let (_, ids) = npz.i64("text_ids").unwrap();
    let (_, nt) = npz.i64("text_num_tokens").unwrap();
    let (_, emb) = npz.f32("text_embedding").unwrap();
    let (_, toks) = npz.i64("text_tokens").unwrap();
    let inter = npz.get("text_layer0").is_ok();
    for p in 0..nt.len() {
        let n = nt[p] as usize;
        let id: Vec<u32> = ids[p * 128..p * 128 + n]
            .iter()
            .map(|&v| v as u32)
            .collect();
        let t0 = std::time::Instant::now();
        let e = m.embed_ids(&id, &pool).unwrap();
        let dt = t0.elapsed();
        let r = &emb[p * 768..(p + 1) * 768];
        let q = m.quantize(&e, &pool).unwrap();
        eprintln!(
            "prompt {p} n={n} {dt:?} maxdiff {:.3e} tokens {:?} want {:?}",
            maxdiff(&e, r),
            q.tokens,
            &toks[p * 12..p * 12 + 12]
        );
        if inter {
            let ctx = m.ctx(&pool);
            let mut s = rill_kernels::matmul::MatmulScratch::new();
            let x0 = m.text.rows_after(ctx, &id, 0, &mut s).unwrap();
            let x1 = m.text.rows_after(ctx, &id, 1, &mut s).unwrap();
            let (_, rx0) = npz.f32("text_x0").unwrap();
            let (_, rx1) = npz.f32("text_layer0").unwrap();
            eprintln!(
                "  x0 {:.3e} layer0 {:.3e}",
                maxdiff(&x0, &rx0[p * 128 * 768..][..n * 768]),
                maxdiff(&x1, &rx1[p * 128 * 768..][..n * 768])
            );
        }
        // mapper
        let (_, noise) = npz.f32("mapper_noise").unwrap();
        let (_, mraw) = npz.f32("mapper_raw").unwrap();
        let (_, memb) = npz.f32("mapper_embedding").unwrap();
        let (_, mtok) = npz.i64("mapper_tokens").unwrap();
        for s in 0..2 {
            let nz = &noise[s * 768..(s + 1) * 768];
            let re = &emb[p * 768..(p + 1) * 768];
            let mut sc = rill_kernels::matmul::MatmulScratch::new();
            let raw = m.mapper.run(m.ctx(&pool), re, nz, 8, &mut sc);
            let me = m.map(re, nz, &pool).unwrap();
            let q = m.quantize(&me, &pool).unwrap();
            let o = (p * 2 + s) * 768;
            eprintln!(
                "  mapper seed {s}: raw {:.3e} emb {:.3e} tokens {:?} want {:?}",
                maxdiff(&raw, &mraw[o..o + 768]),
                maxdiff(&me, &memb[o..o + 768]),
                q.tokens,
                &mtok[(p * 2 + s) * 12..][..12]
            );
        }
    }
}

#[test]
fn dev_audio() {
    let w = weights(&std::env::var("MC_W").unwrap());
    let npz = rill_io::Npz::read(std::env::var("MC_NPZ").unwrap()).unwrap();
    let pool = Pool::new(2);
    let m = MusicCoCa::from_weights(w, Isa::detect()).unwrap();
    let (_, patches) = npz.f32("audio_patches").unwrap();
    let (_, emb) = npz.f32("audio_embedding").unwrap();
    let (_, toks) = npz.i64("audio_tokens").unwrap();
    let t0 = std::time::Instant::now();
    let e = m.embed_patches(&patches, &pool);
    let dt = t0.elapsed();
    let q = m.quantize(&e, &pool).unwrap();
    eprintln!(
        "audio {dt:?} maxdiff {:.3e} tokens {:?} want {:?}",
        maxdiff(&e, &emb),
        q.tokens,
        toks
    );
    let mut s = rill_kernels::matmul::MatmulScratch::new();
    let x1 = m.audio.rows_after(m.ctx(&pool), &patches, 1, &mut s);
    let (_, r1) = npz.f32("audio_layer0").unwrap();
    eprintln!("layer0 {:.3e}", maxdiff(&x1, &r1));
}
