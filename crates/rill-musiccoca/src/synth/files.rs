//! The five files' contents from DBraun-layout weights: `convert.py`'s transforms
//! inverted, under names its patterns find (with a few `;`-fused names and
//! look-alike decoys, as real exports have, so the look-up rules are exercised).

use crate::assets::{transpose, MAPPER_LAYER_ARGS, MUSIC_LAYER_ARGS};
use crate::tflite::write::{ModelSpec, SubgraphSpec};
use crate::tflite::{builtin, tensor_type};
use crate::{Error, Weights};

const D: usize = 768;

fn model(description: &str, subgraphs: Vec<SubgraphSpec>) -> ModelSpec {
    ModelSpec {
        description: format!("rill synthetic MusicCoCa asset: {description}"),
        subgraphs,
    }
}

/// The WHILE loop's condition subgraph (subgraph 1), a placeholder.
fn cond_subgraph() -> SubgraphSpec {
    let mut sg = SubgraphSpec::new("while_cond");
    let i = sg.activation("jax2tf_arg_0/counter", &[], tensor_type::INT32);
    let b = sg.activation("while/cond/less", &[], tensor_type::BOOL);
    sg.inputs = vec![i];
    sg.outputs = vec![b];
    sg
}

/// `frontend.*` → `audio_preprocessor.tflite` (mel matrix without its DC row).
pub fn frontend_spec(w: &mut Weights) -> Result<ModelSpec, Error> {
    let mut sg = SubgraphSpec::new("main");
    let x = sg.activation(
        "serving_default_waveform:0",
        &[1, 160000],
        tensor_type::FLOAT32,
    );
    let mel = w.take("frontend.mel_matrix", &[1025, 128])?;
    sg.constant(
        "jit(preprocess)/hann_window/sub",
        &[400],
        w.take("frontend.window", &[400])?,
    );
    sg.constant(
        "jit(preprocess)/linear_to_mel_weight_matrix/Maximum",
        &[1024, 128],
        mel[128..].to_vec(),
    );
    let y = sg.activation(
        "StatefulPartitionedCall:0",
        &[1, 992, 128],
        tensor_type::FLOAT32,
    );
    sg.inputs = vec![x];
    sg.outputs = vec![y];
    Ok(model("audio_preprocessor", vec![sg]))
}

/// A tower's final LayerNorm.
fn final_ln(sg: &mut SubgraphSpec, w: &mut Weights, prefix: &str) -> Result<(), Error> {
    let scale = w.take(&format!("{prefix}.final_ln.scale"), &[D])?;
    let bias = w.take(&format!("{prefix}.final_ln.bias"), &[D])?;
    sg.constant(
        "jit(infer)/exit_stack/ln/broadcast_in_dim1",
        &[1, 1, D],
        scale,
    );
    sg.constant(
        "jit(infer)/exit_stack/ln/broadcast_in_dim;jit(infer)/exit_stack/ln/add1",
        &[1, 1, D],
        bias,
    );
    Ok(())
}

/// A CoCa pooler under `scope`.
fn pooler(sg: &mut SubgraphSpec, w: &mut Weights, scope: &str, prefix: &str) -> Result<(), Error> {
    let k = |n: &str| format!("{prefix}.pooler.{n}");
    let s = |n: &str| format!("jit(infer)/{scope}/{n}");
    sg.constant(
        &s("pool_attn/query_qk_einsum"),
        &[1, 12, 1, 256],
        w.take(&k("query"), &[12, 256])?,
    );
    let key = w.take(&k("key.kernel"), &[D, 12, 256])?;
    // The key kernel carries the value op in its fused tail: the first segment decides.
    sg.constant(
        &format!(
            "{};{}",
            s("pool_attn/key/einsum/MatMul"),
            s("pool_attn/value/einsum/MatMul")
        ),
        &[3072, D],
        transpose(&key, D, 3072),
    );
    let value = w.take(&k("value.kernel"), &[D, 12, 256])?;
    sg.constant(
        &s("pool_attn/value/einsum/MatMul"),
        &[3072, D],
        transpose(&value, D, 3072),
    );
    sg.constant(
        &s("pool_attn/key/add"),
        &[3072],
        w.take(&k("key.bias"), &[12, 256])?,
    );
    sg.constant(
        &s("pool_attn/value/add"),
        &[3072],
        w.take(&k("value.bias"), &[12, 256])?,
    );
    sg.constant(
        &s("pool_attn/post/einsum"),
        &[D, 3072],
        w.take(&k("post.kernel"), &[D, 12, 256])?,
    );
    sg.constant(
        &s("pool_attn/post/add"),
        &[D],
        w.take(&k("post.bias"), &[D])?,
    );
    sg.constant(
        &s("pool_attn_ln/broadcast_in_dim1"),
        &[1, 1, D],
        w.take(&k("ln.scale"), &[D])?,
    );
    sg.constant(
        &s("pool_attn_ln/broadcast_in_dim"),
        &[1, 1, D],
        w.take(&k("ln.bias"), &[D])?,
    );
    Ok(())
}

/// `audio.*` → `music_encoder.tflite`: main (subgraph 0), WHILE condition (1) and
/// body (2) with the stacked layers as `jax2tf_arg_46…61` (LayerNorm scales −1,
/// query ×8).
pub fn music_encoder_spec(w: &mut Weights) -> Result<ModelSpec, Error> {
    let mut main = SubgraphSpec::new("main");
    let x = main.activation(
        "serving_default_mel:0",
        &[1, 992, 128],
        tensor_type::FLOAT32,
    );
    let patch = w.take("audio.patch_proj.kernel", &[256, D])?;
    main.constant(
        "jit(infer)/patch_projection/linear/MatMul",
        &[D, 256],
        transpose(&patch, 256, D),
    );
    main.constant(
        "jit(infer)/entry_stack/add",
        &[1, 496, D],
        w.take("audio.pos_emb", &[496, D])?,
    );
    final_ln(&mut main, w, "audio")?;
    pooler(&mut main, w, "contrastive_music_pooler", "audio")?;
    let h = main.activation("while/hidden", &[1, 496, D], tensor_type::FLOAT32);
    main.op(builtin::WHILE, &[h], &[h]);
    let y = main.activation("StatefulPartitionedCall:0", &[1, D], tensor_type::FLOAT32);
    main.inputs = vec![x];
    main.outputs = vec![y];

    let mut body = SubgraphSpec::new("while_body");
    body.activation("jax2tf_arg_0/counter", &[], tensor_type::INT32);
    body.activation("jax2tf_arg_1/hidden", &[1, 496, D], tensor_type::FLOAT32);
    for (key, arg, shape) in MUSIC_LAYER_ARGS {
        let mut data = w.take(&format!("audio.layers.{key}"), shape)?;
        match key {
            // Praxis stores LayerNorm scales as offsets from 1.
            "ln1.scale" | "ln2.scale" => data.iter_mut().for_each(|x| *x -= 1.0),
            // The exporter leaves the query scale 0.125 to run time.
            "q.bias" | "q.kernel" => data.iter_mut().for_each(|x| *x *= 8.0),
            _ => {}
        }
        body.constant(&format!("jax2tf_arg_{arg}/while/body/{key}"), shape, data);
    }
    Ok(model("music_encoder", vec![main, cond_subgraph(), body]))
}

/// `text.*` → `text_encoder.tflite`: one subgraph, the 12 layers unrolled.
pub fn text_encoder_spec(w: &mut Weights) -> Result<ModelSpec, Error> {
    let mut sg = SubgraphSpec::new("main");
    let ids = sg.activation("serving_default_ids:0", &[1, 128], tensor_type::INT32);
    let pad = sg.activation(
        "serving_default_paddings:0",
        &[1, 128],
        tensor_type::FLOAT32,
    );
    sg.constant(
        "jit(infer)/token_emb/emb",
        &[16000, D],
        w.take("text.token_emb", &[16000, D])?,
    );
    sg.constant(
        "jit(infer)/position_emb/pos",
        &[1, 128, D],
        w.take("text.pos_emb", &[128, D])?,
    );
    final_ln(&mut sg, w, "text")?;
    let mut layers = std::collections::BTreeMap::new();
    for key in [
        "q.kernel",
        "q.bias",
        "k.kernel",
        "k.bias",
        "v.kernel",
        "v.bias",
        "post.kernel",
        "post.bias",
        "ln1.scale",
        "ln1.bias",
        "ln2.scale",
        "ln2.bias",
        "ffn1.kernel",
        "ffn1.bias",
        "ffn2.kernel",
        "ffn2.bias",
    ] {
        let name = format!("text.layers.{key}");
        let shape = match key {
            "q.kernel" | "k.kernel" | "v.kernel" | "post.kernel" => vec![12, D, 12, 64],
            "q.bias" | "k.bias" | "v.bias" => vec![12, 12, 64],
            "ffn1.kernel" => vec![12, D, 3072],
            "ffn1.bias" => vec![12, 3072],
            "ffn2.kernel" => vec![12, 3072, D],
            _ => vec![12, D],
        };
        layers.insert(key, w.take(&name, &shape)?);
    }
    let slice = |key: &str, i: usize| -> &[f32] {
        let v = &layers[key];
        let n = v.len() / 12;
        &v[i * n..(i + 1) * n]
    };
    for i in 0..12 {
        let l = format!("jit(infer)/x_layers_{i}/");
        let a = format!("{l}self_attention/");
        sg.constant(
            &format!("{a}query_scale_query/mul"),
            &[D, D],
            transpose(slice("q.kernel", i), D, D),
        );
        sg.constant(
            &format!("{a}query_scale_query/mul_1"),
            &[D],
            slice("q.bias", i).to_vec(),
        );
        sg.constant(
            &format!("{a}key/einsum/MatMul;{a}value/einsum/MatMul"),
            &[D, D],
            transpose(slice("k.kernel", i), D, D),
        );
        sg.constant(&format!("{a}key/add"), &[D], slice("k.bias", i).to_vec());
        sg.constant(
            &format!("{a}value/einsum/MatMul"),
            &[D, D],
            transpose(slice("v.kernel", i), D, D),
        );
        sg.constant(&format!("{a}value/add"), &[D], slice("v.bias", i).to_vec());
        sg.constant(
            &format!("{a}post/einsum/MatMul"),
            &[D, D],
            slice("post.kernel", i).to_vec(),
        );
        sg.constant(
            &format!("{a}post/add"),
            &[D],
            slice("post.bias", i).to_vec(),
        );
        sg.constant(
            &format!("{l}layer_norm/broadcast_in_dim1"),
            &[1, 1, D],
            slice("ln1.scale", i).to_vec(),
        );
        sg.constant(
            &format!("{l}layer_norm/broadcast_in_dim"),
            &[1, 1, D],
            slice("ln1.bias", i).to_vec(),
        );
        let f = format!("{l}ff_layer/");
        sg.constant(
            &format!("{f}layer_norm/broadcast_in_dim1"),
            &[1, 1, D],
            slice("ln2.scale", i).to_vec(),
        );
        sg.constant(
            &format!("{f}layer_norm/broadcast_in_dim"),
            &[1, 1, D],
            slice("ln2.bias", i).to_vec(),
        );
        sg.constant(
            &format!("{f}ffn_layer1/linear/einsum"),
            &[3072, D],
            transpose(slice("ffn1.kernel", i), D, 3072),
        );
        sg.constant(
            &format!("{f}ffn_layer1/bias/add"),
            &[3072],
            slice("ffn1.bias", i).to_vec(),
        );
        sg.constant(
            &format!("{f}ffn_layer2/linear/einsum"),
            &[D, 3072],
            transpose(slice("ffn2.kernel", i), 3072, D),
        );
        sg.constant(
            &format!("{f}ffn_layer2/bias/add"),
            &[D],
            slice("ffn2.bias", i).to_vec(),
        );
    }
    drop(layers);
    pooler(&mut sg, w, "contrastive_txt_pooler", "text")?;
    let y = sg.activation("StatefulPartitionedCall:0", &[1, D], tensor_type::FLOAT32);
    sg.inputs = vec![ids, pad];
    sg.outputs = vec![y];
    Ok(model("text_encoder", vec![sg]))
}

/// `quantizer.codebooks` → `pretrained_vector_quantizer.tflite`: per level q a
/// FULLY_CONNECTED distance op (weight −2·c_q, bias ‖c_q‖² summed in f64), an ARG_MIN,
/// and for levels 0…10 a GATHER of the codebook and the residual update.
pub fn quantizer_spec(w: &mut Weights) -> Result<ModelSpec, Error> {
    let cb = w.take("quantizer.codebooks", &[12, 1024, D])?;
    let mut sg = SubgraphSpec::new("main");
    let x = sg.activation("serving_default_embedding:0", &[1, D], tensor_type::FLOAT32);
    let mut residual = x;
    let mut tokens = Vec::new();
    for (q, c) in cb.chunks_exact(1024 * D).enumerate() {
        let p = format!("jit(quantize)/rvq/level_{q}/");
        let weight = sg.constant(
            &format!("{p}distance/mul"),
            &[1024, D],
            c.iter().map(|&v| -2.0 * v).collect(),
        );
        let norms = c
            .chunks_exact(D)
            .map(|row| row.iter().map(|&v| v as f64 * v as f64).sum::<f64>() as f32)
            .collect();
        let bias = sg.constant(&format!("{p}distance/sq_norm"), &[1024], norms);
        let scores = sg.activation(
            &format!("{p}distance/add"),
            &[1, 1024],
            tensor_type::FLOAT32,
        );
        sg.op(
            builtin::FULLY_CONNECTED,
            &[residual, weight, bias],
            &[scores],
        );
        let token = sg.activation(&format!("{p}argmin"), &[1], tensor_type::INT32);
        sg.op(builtin::ARG_MIN, &[scores], &[token]);
        tokens.push(token);
        if q < 11 {
            let table = sg.constant(&format!("{p}codebook"), &[1024, D], c.to_vec());
            let entry = sg.activation(&format!("{p}gather"), &[1, D], tensor_type::FLOAT32);
            sg.op(builtin::GATHER, &[table, token], &[entry]);
            let next = sg.activation(&format!("{p}residual"), &[1, D], tensor_type::FLOAT32);
            sg.op(builtin::SUB, &[residual, entry], &[next]);
            residual = next;
        }
    }
    sg.inputs = vec![x];
    sg.outputs = tokens;
    Ok(model("pretrained_vector_quantizer", vec![sg]))
}

/// `mapper.*` → `mapper.tflite`: main (subgraph 0), WHILE condition (1) and body (2)
/// with the 8 stacked layers as `jax2tf_arg_2…15`.
pub fn mapper_spec(w: &mut Weights) -> Result<ModelSpec, Error> {
    let mut main = SubgraphSpec::new("main");
    let e = main.activation("serving_default_embedding:0", &[1, D], tensor_type::FLOAT32);
    let n = main.activation("serving_default_noise:0", &[1, D], tensor_type::FLOAT32);
    // Look-alikes that `arith.constant1$` must not match.
    main.constant("arith.constant", &[1, 1, 128], vec![0.0; 128]);
    main.constant("arith.constant10", &[1, 1, 128], vec![0.0; 128]);
    main.constant(
        "arith.constant1",
        &[1, 1, 128],
        w.take("mapper.context", &[128])?,
    );
    let k = w.take("mapper.input_proj.kernel", &[D, 3072])?;
    main.constant(
        "jit(map)/input_projection/MatMul",
        &[3072, D],
        transpose(&k, D, 3072),
    );
    main.constant(
        "jit(map)/input_projection/BiasAdd",
        &[3072],
        w.take("mapper.input_proj.bias", &[3072])?,
    );
    let k = w.take("mapper.output_proj.kernel", &[3072, D])?;
    main.constant(
        "jit(map)/output_projection/MatMul",
        &[D, 3072],
        transpose(&k, 3072, D),
    );
    main.constant(
        "jit(map)/output_projection/BiasAdd",
        &[D],
        w.take("mapper.output_proj.bias", &[D])?,
    );
    let h = main.activation("while/hidden", &[1, 12, 256], tensor_type::FLOAT32);
    main.op(builtin::WHILE, &[h], &[h]);
    let y = main.activation("StatefulPartitionedCall:0", &[1, D], tensor_type::FLOAT32);
    main.inputs = vec![e, n];
    main.outputs = vec![y];

    let mut body = SubgraphSpec::new("while_body");
    body.activation("jax2tf_arg_0/counter", &[], tensor_type::INT32);
    body.activation("jax2tf_arg_1/hidden", &[1, 12, 256], tensor_type::FLOAT32);
    for (key, arg, shape) in MAPPER_LAYER_ARGS {
        let data = w.take(&format!("mapper.layers.{key}"), shape)?;
        body.constant(&format!("jax2tf_arg_{arg}/while/body/{key}"), shape, data);
    }
    Ok(model("mapper", vec![main, cond_subgraph(), body]))
}
