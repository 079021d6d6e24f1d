//! MusicCoCa's weights from upstream's five `.tflite` files, by the exact rules of
//! DBraun's `convert.py` (which tensor, which transform), into DBraun's keys and
//! layouts ([`Weights`]).
//!
//! `convert.py`'s patterns use one construct the `regex` crate lacks, the negative
//! look-ahead `X(?!1)`; for a search (match anywhere) it is equivalent to
//! `X(?:[^1]|$)`, which is what [`NOT_1`] spells.

use std::path::Path;

use crate::tflite::{builtin, SubgraphView, TfliteModel};
use crate::{Error, Weights};

/// The log-mel frontend's constants.
pub const FRONTEND: &str = "audio_preprocessor.tflite";
/// The audio tower.
pub const MUSIC_ENCODER: &str = "music_encoder.tflite";
/// The text tower.
pub const TEXT_ENCODER: &str = "text_encoder.tflite";
/// The 12-level residual vector quantiser.
pub const QUANTIZER: &str = "pretrained_vector_quantizer.tflite";
/// The text-to-music embedding mapper.
pub const MAPPER: &str = "mapper.tflite";
/// The five `.tflite` files of upstream's `resources/musiccoca/`, in loading order.
pub const ASSET_FILES: [&str; 5] = [FRONTEND, MUSIC_ENCODER, TEXT_ENCODER, QUANTIZER, MAPPER];

/// Where the assets come from, for [`Error::MissingAsset`].
pub const HF_HINT: &str = "MusicCoCa's files (spm.model and five .tflite files) come from the \
Hugging Face repository google/magenta-realtime-2, folder resources/musiccoca/: e.g. \
`huggingface-cli download google/magenta-realtime-2 --include \"resources/musiccoca/*\" \
--local-dir DIR`, then use DIR/resources/musiccoca";

/// `(?!1)` of Python's `re`, for a search: not followed by `1`.
pub const NOT_1: &str = "(?:[^1]|$)";

const D: usize = 768;

/// The music tower's stacked layer weights: DBraun key under `audio.layers.`,
/// `jax2tf_arg_N` of the WHILE body, shape.
pub const MUSIC_LAYER_ARGS: [(&str, usize, &[usize]); 16] = [
    ("ffn1.bias", 46, &[12, 3072]),
    ("ffn1.kernel", 47, &[12, D, 3072]),
    ("ffn2.bias", 48, &[12, D]),
    ("ffn2.kernel", 49, &[12, 3072, D]),
    ("ln2.bias", 50, &[12, D]),
    ("ln2.scale", 51, &[12, D]),
    ("ln1.bias", 52, &[12, D]),
    ("ln1.scale", 53, &[12, D]),
    ("k.bias", 54, &[12, 12, 64]),
    ("k.kernel", 55, &[12, D, 12, 64]),
    ("post.bias", 56, &[12, D]),
    ("post.kernel", 57, &[12, D, 12, 64]),
    ("q.bias", 58, &[12, 12, 64]),
    ("q.kernel", 59, &[12, D, 12, 64]),
    ("v.bias", 60, &[12, 12, 64]),
    ("v.kernel", 61, &[12, D, 12, 64]),
];

/// The mapper's stacked layer weights: DBraun key under `mapper.layers.`,
/// `jax2tf_arg_N` of the WHILE body, shape.
pub const MAPPER_LAYER_ARGS: [(&str, usize, &[usize]); 14] = [
    ("cond1.bias", 2, &[8, 2, 256]),
    ("cond1.kernel", 3, &[8, 1024, 2, 256]),
    ("norm1.scale", 4, &[8, 256]),
    ("qkv.kernel", 5, &[8, 256, 3, 8, 64]),
    ("k_sink", 6, &[8, 1, 8, 64]),
    ("v_sink", 7, &[8, 1, 8, 64]),
    ("post.kernel", 8, &[8, 256, 8, 64]),
    ("cond2.bias", 9, &[8, 2, 256]),
    ("cond2.kernel", 10, &[8, 1024, 2, 256]),
    ("ffn1.bias", 11, &[8, 1024]),
    ("ffn1.kernel", 12, &[8, 256, 1024]),
    ("ffn2.bias", 13, &[8, 256]),
    ("ffn2.kernel", 14, &[8, 1024, 256]),
    ("norm2.scale", 15, &[8, 256]),
];

/// Opens `dir/name` ([`Error::MissingAsset`] with [`HF_HINT`] when absent).
pub fn open(dir: &Path, name: &str) -> Result<TfliteModel, Error> {
    TfliteModel::open(&dir.join(name), HF_HINT)
}

impl Weights {
    /// All of MusicCoCa's weights from the five `.tflite` files in `dir`
    /// (upstream's `resources/musiccoca/`), converted as `convert.py` does.
    pub fn from_tflite_dir(dir: &Path) -> Result<Weights, Error> {
        let mut w = Weights::new();
        load_frontend(&open(dir, FRONTEND)?, &mut w)?;
        load_music_encoder(&open(dir, MUSIC_ENCODER)?, &mut w)?;
        load_text_encoder(&open(dir, TEXT_ENCODER)?, &mut w)?;
        load_quantizer(&open(dir, QUANTIZER)?, &mut w)?;
        load_mapper(&open(dir, MAPPER)?, &mut w)?;
        Ok(w)
    }
}

/// `[rows, cols]` → `[cols, rows]`.
pub fn transpose(data: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    assert_eq!(data.len(), rows * cols);
    let mut out = vec![0f32; data.len()];
    const B: usize = 32;
    for r0 in (0..rows).step_by(B) {
        for c0 in (0..cols).step_by(B) {
            for r in r0..(r0 + B).min(rows) {
                for c in c0..(c0 + B).min(cols) {
                    out[c * rows + r] = data[r * cols + c];
                }
            }
        }
    }
    out
}

/// `find`, keeping only the data.
fn find(sg: &SubgraphView<'_>, pattern: &str, shape: &[usize]) -> Result<Vec<f32>, Error> {
    Ok(sg.find(pattern, shape)?.data)
}

/// An FC weight `[out, in]` found by `pattern`, transposed to `[in, out]`.
fn find_t(sg: &SubgraphView<'_>, pattern: &str, out: usize, inp: usize) -> Result<Vec<f32>, Error> {
    Ok(transpose(&find(sg, pattern, &[out, inp])?, out, inp))
}

/// `audio_preprocessor.tflite` → `frontend.mel_matrix` `[1025,128]` (a zero DC row
/// prepended) and `frontend.window` `[400]`.
pub fn load_frontend(m: &TfliteModel, w: &mut Weights) -> Result<(), Error> {
    let main = m.subgraph(0)?;
    let mut mel = vec![0f32; 128];
    mel.extend(find(
        &main,
        "linear_to_mel_weight_matrix/Maximum",
        &[1024, 128],
    )?);
    w.insert("frontend.mel_matrix", vec![1025, 128], mel);
    w.insert(
        "frontend.window",
        vec![400],
        find(&main, "hann_window", &[400])?,
    );
    Ok(())
}

/// A CoCa attentional pooler under `scope` (main subgraph) → `{prefix}.pooler.*`.
fn load_pooler(
    main: &SubgraphView<'_>,
    scope: &str,
    prefix: &str,
    w: &mut Weights,
) -> Result<(), Error> {
    let s = |tail: &str| format!("{scope}/{tail}");
    let k = |name: &str| format!("{prefix}.pooler.{name}");
    w.insert(
        k("query"),
        vec![12, 256],
        find(main, &s("pool_attn/.*qk_einsum"), &[1, 12, 1, 256])?,
    );
    for (name, tail) in [("key", "key"), ("value", "value")] {
        let kernel = find_t(main, &s(&format!("pool_attn/{tail}/einsum")), 3072, D)?;
        w.insert(k(&format!("{name}.kernel")), vec![D, 12, 256], kernel);
        let bias = find(main, &s(&format!("pool_attn/{tail}/add")), &[3072])?;
        w.insert(k(&format!("{name}.bias")), vec![12, 256], bias);
    }
    w.insert(
        k("post.kernel"),
        vec![D, 12, 256],
        find(main, &s("pool_attn/post/einsum"), &[D, 3072])?,
    );
    w.insert(
        k("post.bias"),
        vec![D],
        find(main, &s("pool_attn/post/add"), &[D])?,
    );
    let ln = s("pool_attn_ln/broadcast_in_dim");
    w.insert(
        k("ln.scale"),
        vec![D],
        find(main, &format!("{ln}1"), &[1, 1, D])?,
    );
    w.insert(
        k("ln.bias"),
        vec![D],
        find(main, &format!("{ln}{NOT_1}"), &[1, 1, D])?,
    );
    Ok(())
}

/// The final LayerNorm of a tower (`exit_stack/ln`) → `{prefix}.final_ln.*`.
fn load_final_ln(main: &SubgraphView<'_>, prefix: &str, w: &mut Weights) -> Result<(), Error> {
    let ln = "exit_stack/ln/broadcast_in_dim";
    w.insert(
        format!("{prefix}.final_ln.scale"),
        vec![D],
        find(main, &format!("{ln}1"), &[1, 1, D])?,
    );
    w.insert(
        format!("{prefix}.final_ln.bias"),
        vec![D],
        find(main, &format!("{ln}{NOT_1}"), &[1, 1, D])?,
    );
    Ok(())
}

/// `text_encoder.tflite` → `text.*`: the 12 unrolled layers stacked on a new axis 0.
pub fn load_text_encoder(m: &TfliteModel, w: &mut Weights) -> Result<(), Error> {
    let main = m.subgraph(0)?;
    w.insert(
        "text.token_emb",
        vec![16000, D],
        find(&main, "emb", &[16000, D])?,
    );
    w.insert(
        "text.pos_emb",
        vec![128, D],
        find(&main, "position_emb", &[1, 128, D])?,
    );
    load_final_ln(&main, "text", w)?;
    // (DBraun key, per-layer shape, values of layer i)
    type Get = fn(&SubgraphView<'_>, &str) -> Result<Vec<f32>, Error>;
    let fields: [(&str, &[usize], Get); 16] = [
        ("q.kernel", &[D, 12, 64], |s, l| {
            find_t(s, &format!("{l}self_attention/.*_scale_query/mul"), D, D)
        }),
        ("q.bias", &[12, 64], |s, l| {
            find(s, &format!("{l}self_attention/.*_scale_query/mul"), &[D])
        }),
        ("k.kernel", &[D, 12, 64], |s, l| {
            find_t(s, &format!("{l}self_attention/key/einsum"), D, D)
        }),
        ("k.bias", &[12, 64], |s, l| {
            find(s, &format!("{l}self_attention/key/add"), &[D])
        }),
        ("v.kernel", &[D, 12, 64], |s, l| {
            find_t(s, &format!("{l}self_attention/value/einsum"), D, D)
        }),
        ("v.bias", &[12, 64], |s, l| {
            find(s, &format!("{l}self_attention/value/add"), &[D])
        }),
        ("post.kernel", &[D, 12, 64], |s, l| {
            find(s, &format!("{l}self_attention/post/einsum"), &[D, D])
        }),
        ("post.bias", &[D], |s, l| {
            find(s, &format!("{l}self_attention/post/add"), &[D])
        }),
        ("ln1.scale", &[D], |s, l| {
            find(s, &format!("{l}layer_norm/broadcast_in_dim1"), &[1, 1, D])
        }),
        ("ln1.bias", &[D], |s, l| {
            find(
                s,
                &format!("{l}layer_norm/broadcast_in_dim{NOT_1}"),
                &[1, 1, D],
            )
        }),
        ("ln2.scale", &[D], |s, l| {
            find(
                s,
                &format!("{l}ff_layer/layer_norm/broadcast_in_dim1"),
                &[1, 1, D],
            )
        }),
        ("ln2.bias", &[D], |s, l| {
            find(
                s,
                &format!("{l}ff_layer/layer_norm/broadcast_in_dim{NOT_1}"),
                &[1, 1, D],
            )
        }),
        ("ffn1.kernel", &[D, 3072], |s, l| {
            find_t(s, &format!("{l}.*ffn_layer1/linear"), 3072, D)
        }),
        ("ffn1.bias", &[3072], |s, l| {
            find(s, &format!("{l}.*ffn_layer1/bias"), &[3072])
        }),
        ("ffn2.kernel", &[3072, D], |s, l| {
            find_t(s, &format!("{l}.*ffn_layer2/linear"), D, 3072)
        }),
        ("ffn2.bias", &[D], |s, l| {
            find(s, &format!("{l}.*ffn_layer2/bias"), &[D])
        }),
    ];
    for (key, shape, get) in fields {
        let mut stacked = Vec::new();
        for i in 0..12 {
            let layer = get(&main, &format!("x_layers_{i}/"))?;
            if i == 0 {
                // Sized by data found in the file, never before.
                stacked.reserve_exact(12 * layer.len());
            }
            stacked.extend(layer);
        }
        let mut full = vec![12];
        full.extend_from_slice(shape);
        w.insert(format!("text.layers.{key}"), full, stacked);
    }
    load_pooler(&main, "contrastive_txt_pooler", "text", w)
}

/// `music_encoder.tflite` → `audio.*`; the stacked layers are the WHILE body's
/// (subgraph 2) `jax2tf_arg_46…61`, with Praxis' LayerNorm `+1` and the runtime
/// query scale `×0.125` folded in.
pub fn load_music_encoder(m: &TfliteModel, w: &mut Weights) -> Result<(), Error> {
    let main = m.subgraph(0)?;
    let body = m.subgraph(2)?;
    w.insert(
        "audio.patch_proj.kernel",
        vec![256, D],
        find_t(&main, "patch_projection/linear", D, 256)?,
    );
    w.insert(
        "audio.pos_emb",
        vec![496, D],
        find(&main, "entry_stack/add", &[1, 496, D])?,
    );
    load_final_ln(&main, "audio", w)?;
    load_pooler(&main, "contrastive_music_pooler", "audio", w)?;
    for (key, arg, shape) in MUSIC_LAYER_ARGS {
        let mut data = body.arg_shaped(arg, shape)?.data;
        match key {
            // Praxis' LayerNorm scale is an offset from 1.
            "ln1.scale" | "ln2.scale" => data.iter_mut().for_each(|x| *x += 1.0),
            // Fold the runtime query scale in.
            "q.bias" | "q.kernel" => data.iter_mut().for_each(|x| *x *= 0.125),
            _ => {}
        }
        w.insert(format!("audio.layers.{key}"), shape.to_vec(), data);
    }
    Ok(())
}

/// `mapper.tflite` → `mapper.*`; the 8 stacked layers are the WHILE body's
/// (subgraph 2) `jax2tf_arg_2…15`.
pub fn load_mapper(m: &TfliteModel, w: &mut Weights) -> Result<(), Error> {
    let main = m.subgraph(0)?;
    let body = m.subgraph(2)?;
    w.insert(
        "mapper.context",
        vec![128],
        find(&main, "arith.constant1$", &[1, 1, 128])?,
    );
    w.insert(
        "mapper.input_proj.kernel",
        vec![D, 3072],
        find_t(&main, "input_projection", 3072, D)?,
    );
    w.insert(
        "mapper.input_proj.bias",
        vec![3072],
        find(&main, "input_projection", &[3072])?,
    );
    w.insert(
        "mapper.output_proj.kernel",
        vec![3072, D],
        find_t(&main, "output_projection", D, 3072)?,
    );
    w.insert(
        "mapper.output_proj.bias",
        vec![D],
        find(&main, "output_projection", &[D])?,
    );
    for (key, arg, shape) in MAPPER_LAYER_ARGS {
        w.insert(
            format!("mapper.layers.{key}"),
            shape.to_vec(),
            body.arg_shaped(arg, shape)?.data,
        );
    }
    Ok(())
}

/// `|a − b| ≤ atol + rtol·|b|` elementwise (numpy's `allclose`, no NaN equality).
fn allclose(a: &[f32], b: &[f64], rtol: f64, atol: f64) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(&a, &b)| ((a as f64) - b).abs() <= atol + rtol * b.abs())
}

/// `pretrained_vector_quantizer.tflite` → `quantizer.codebooks` `[12,1024,768]`:
/// levels 0…10 are the `[1024,768]` tables of the 11 GATHER ops in operator order,
/// level 11 is −½ × the 12th FULLY_CONNECTED op's weight; every FC op q must have
/// weight ≈ −2·codebook_q and bias ≈ ‖codebook_q‖² (`convert.py`'s tolerances).
pub fn load_quantizer(m: &TfliteModel, w: &mut Weights) -> Result<(), Error> {
    const CB: [usize; 2] = [1024, D];
    let main = m.subgraph(0)?;
    let input = |op: &crate::tflite::Operator, k: usize| {
        op.inputs.get(k).copied().ok_or_else(|| {
            m.bad(format!(
                "a quantizer op has {} inputs, expected > {k}",
                op.inputs.len()
            ))
        })
    };
    let mut codebooks: Vec<Vec<f32>> = Vec::new();
    let mut fcs = Vec::new();
    for op in &main.sg.operators {
        let code = m.op_code(op)?;
        if code == builtin::GATHER {
            let t = main.tensor(input(op, 0)?)?;
            if t.shape == [1024, 768] {
                codebooks.push(main.f32_data(input(op, 0)?)?.data);
            }
        } else if code == builtin::FULLY_CONNECTED {
            fcs.push(op);
        }
    }
    if codebooks.len() != 11 || fcs.len() != 12 {
        return Err(m.bad(format!(
            "unexpected quantizer structure: {} gathers of [1024,768] tables, {} fully \
             connected ops (expected 11 and 12)",
            codebooks.len(),
            fcs.len()
        )));
    }
    let last = main.f32_data(input(fcs[11], 1)?)?;
    if last.shape != CB {
        return Err(m.bad(format!(
            "the last distance weight has shape {:?}",
            last.shape
        )));
    }
    codebooks.push(last.data.iter().map(|&x| -0.5 * x).collect());
    for (q, op) in fcs.iter().enumerate() {
        let c = &codebooks[q];
        let bias = main.f32_data(input(op, 2)?)?;
        let norms: Vec<f64> = c
            .chunks_exact(D)
            .map(|row| row.iter().map(|&x| x as f64 * x as f64).sum())
            .collect();
        if bias.shape != [1024] || !allclose(&bias.data, &norms, 1e-3, 1e-5) {
            return Err(m.bad(format!("stage {q}: bias != ||codebook||^2")));
        }
        let weight = main.f32_data(input(op, 1)?)?;
        let minus2: Vec<f64> = c.iter().map(|&x| -2.0 * x as f64).collect();
        if weight.shape != CB || !allclose(&weight.data, &minus2, 1e-5, 1e-7) {
            return Err(m.bad(format!("stage {q}: weight != -2 * codebook")));
        }
    }
    w.insert("quantizer.codebooks", vec![12, 1024, D], codebooks.concat());
    Ok(())
}
