//! `rill style`: each prompt's or clip's 12 MusicCoCa tokens (one line each, as
//! `--style-codes` takes them), their weighted blend with `--blend`, or everything
//! with the 768-float embeddings as JSON.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use rill_kernels::Pool;

use crate::style::{check_inputs, codes_line, embed_all, split_weight, Input, StyleModelArgs};
use crate::usage::usage_bail;

#[derive(Debug, Args)]
pub struct StyleArgs {
    /// Text prompts, e.g. "disco funk" (TEXT=WEIGHT weighs it in a --blend).
    #[arg(value_name = "PROMPT")]
    pub prompts: Vec<String>,

    /// An audio clip as an input (WAV, FLAC, MP3 or Ogg; any rate; repeatable;
    /// FILE=WEIGHT weighs it in a --blend).
    #[arg(long, value_name = "FILE[=WEIGHT]")]
    pub audio: Vec<String>,

    #[command(flatten)]
    pub model: StyleModelArgs,

    /// The MRT2 checkpoint whose download holds MusicCoCa (looked for in
    /// ROOT/resources/musiccoca beside ROOT/checkpoints/FILE).
    #[arg(long, value_name = "PATH")]
    pub checkpoint: Option<PathBuf>,

    /// A random-weight MusicCoCa of this seed with a tiny tokenizer (a smoke test:
    /// the codes mean nothing), as `rill generate --random-weights` uses.
    #[arg(long, value_name = "SEED", num_args = 0..=1, default_missing_value = "0", conflicts_with_all = ["musiccoca", "checkpoint"])]
    pub random_weights: Option<u64>,

    /// Print only the weighted blend of all inputs (what `rill generate` with the
    /// same --prompt / --style-audio flags uses).
    #[arg(long)]
    pub blend: bool,

    /// Print a JSON array: per input `input`, `weight`, `tokens` and `embedding` (the
    /// 768 floats quantised: the mapper's output for a text, the text embedding with
    /// --no-mapper, the audio embedding for a clip); with --blend, the blend's.
    #[arg(long)]
    pub json: bool,

    /// Worker threads (default: $RILL_THREADS or the number of cores).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
}

pub fn run(args: StyleArgs) -> Result<()> {
    let mut inputs: Vec<(Input, f32)> = args
        .prompts
        .iter()
        .map(|p| {
            let (t, w) = split_weight(p);
            (Input::Text(t), w)
        })
        .collect();
    for a in &args.audio {
        let (p, w) = split_weight(a);
        inputs.push((Input::Audio(PathBuf::from(p)), w));
    }
    if inputs.is_empty() {
        usage_bail!("give a prompt (rill style \"disco funk\") or --audio FILE");
    }
    if args.blend {
        check_inputs(&inputs)?;
    } else {
        for (i, _) in &inputs {
            if matches!(i, Input::Text(t) if t.trim().is_empty()) {
                usage_bail!("an empty prompt has no style; give some words (\"disco funk\")");
            }
        }
    }
    let model = args
        .model
        .load(args.checkpoint.as_deref(), args.random_weights)?;
    let pool = Pool::new(rill_kernels::pool::thread_count(args.threads)?);
    let embeddings = embed_all(&model, &inputs, args.model.mapper(), &pool)?;
    let mut rows = Vec::new();
    if args.blend {
        let members: Vec<(&[f32], f32)> = embeddings
            .iter()
            .zip(&inputs)
            .map(|(e, (_, w))| (e.as_slice(), *w))
            .collect();
        let e = rill_musiccoca::blend::blend(&members)?;
        let q = model.tokenize(&e, &pool)?;
        let weights = rill_musiccoca::blend::normalised_weights(
            &inputs.iter().map(|x| x.1).collect::<Vec<_>>(),
        )?;
        let members: Vec<_> = inputs
            .iter()
            .zip(weights)
            .map(|((i, _), w)| serde_json::json!({"input": i.label(), "weight": w}))
            .collect();
        rows.push((
            serde_json::json!({"input": "blend", "members": members, "tokens": q.tokens, "embedding": e}),
            q.tokens,
        ));
    } else {
        for ((i, w), e) in inputs.iter().zip(&embeddings) {
            let q = model.tokenize(e, &pool)?;
            rows.push((
                serde_json::json!({"input": i.label(), "weight": w, "tokens": q.tokens, "embedding": e}),
                q.tokens,
            ));
        }
    }
    if args.json {
        let all: Vec<_> = rows.into_iter().map(|r| r.0).collect();
        println!("{}", serde_json::to_string(&all)?);
    } else {
        for (_, t) in rows {
            println!("{}", codes_line(&t));
        }
    }
    Ok(())
}
