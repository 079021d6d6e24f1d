//! `rill quantize`: a pre-quantised checkpoint that loads without re-quantising.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use rill_checkpoint::quantized::{self, part_name};
use rill_checkpoint::writer::Tensor;
use rill_checkpoint::Checkpoint;
use rill_kernels::Part;
use rill_mrt2::{Mrt2, Precision};

use crate::args::PrecisionArg;
use crate::output::PendingFile;

#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// Source checkpoint (f32 or bf16, upstream layout).
    #[arg(long, value_name = "IN")]
    pub checkpoint: PathBuf,

    /// Target precision of the language-model matrices.
    #[arg(long, value_enum)]
    pub precision: PrecisionArg,

    /// Output .safetensors path.
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: PathBuf,
}

fn part_tensor(p: Part) -> Tensor<'static> {
    match p {
        Part::U8(v) => Tensor::u8(v),
        Part::Bf16(v) => Tensor::bf16(&v),
        Part::F32(v) => Tensor::f32(vec![v.len()], &v),
    }
}

pub fn run(args: QuantizeArgs) -> Result<()> {
    let precision: Precision = args.precision.try_into()?;
    if precision == Precision::F32 {
        bail!("--precision f32 is the source format; pick bf16, int8, int4, lut4 or mixed");
    }
    let pending = PendingFile::reserve(&args.output)?;
    let start = Instant::now();
    let ckpt = Checkpoint::open(&args.checkpoint)?;
    let kind = ckpt.validate()?;
    if let Some(p) = ckpt.quantized_precision() {
        bail!(
            "{} is already pre-quantised ({p}); quantise the original checkpoint",
            args.checkpoint.display()
        );
    }
    let (_, matrices) = Mrt2::load_recording(&ckpt, precision)?;
    let recorded: HashSet<&str> = matrices.iter().map(|(n, _)| n.as_str()).collect();

    let mut blobs: Vec<(String, Tensor<'_>)> = Vec::new();
    for (name, m) in &matrices {
        let format = m.format().name();
        for (part, data) in m.parts() {
            blobs.push((part_name(name, format, part), part_tensor(data)));
        }
    }
    let rvq = "params/soundstream/quantizer/embedding";
    for name in ckpt.names() {
        if recorded.contains(name) {
            continue;
        }
        let t = ckpt.tensor(name)?;
        let (shape, bytes) = if name == rvq && t.shape.len() == 3 && t.shape[0] > 12 {
            // Only the first 12 of the stored RVQ levels are ever read.
            let level = t.bytes.len() / t.shape[0];
            (vec![12, t.shape[1], t.shape[2]], &t.bytes[..12 * level])
        } else {
            (t.shape.to_vec(), t.bytes)
        };
        blobs.push((
            name.to_string(),
            Tensor {
                dtype: t.dtype,
                shape,
                bytes: Cow::Borrowed(bytes),
            },
        ));
    }
    let mut meta: HashMap<String, String> = ckpt.metadata().clone();
    meta.insert(quantized::FORMAT_KEY.into(), quantized::FORMAT.into());
    meta.insert(quantized::PRECISION_KEY.into(), precision.name().into());
    meta.insert(quantized::MODEL_KEY.into(), kind.name().into());
    rill_checkpoint::writer::write(pending.partial_path(), &blobs, meta)
        .with_context(|| format!("writing {}", args.output.display()))?;
    pending.commit()?;
    let size = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!(
        "wrote {} ({kind}, {precision}, {} matrices pre-quantised, {:.2} GB) in {:.1} s",
        args.output.display(),
        matrices.len(),
        size as f64 / 1e9,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
