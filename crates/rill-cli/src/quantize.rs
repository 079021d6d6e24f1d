//! `rill quantize`: a pre-quantised checkpoint that loads without re-quantising.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use rill_checkpoint::Checkpoint;
use rill_mrt2::{prequantized, Precision};

use crate::args::mrt2_precision_parser;
use crate::output::PendingFile;

#[derive(Debug, Args)]
pub struct QuantizeArgs {
    /// Source checkpoint (f32 or bf16, upstream layout).
    #[arg(long, value_name = "IN")]
    pub checkpoint: PathBuf,

    /// Target precision of the language-model matrices.
    #[arg(long, value_parser = mrt2_precision_parser())]
    pub precision: Precision,

    /// Output .safetensors path.
    #[arg(short = 'o', long, value_name = "OUT")]
    pub output: PathBuf,
}

pub fn run(args: QuantizeArgs) -> Result<()> {
    let precision = args.precision;
    let pending = PendingFile::reserve(&args.output)?;
    let start = Instant::now();
    let ckpt = Checkpoint::open(&args.checkpoint)?;
    let written =
        prequantized::write(&ckpt, precision, pending.partial_path()).with_context(|| {
            format!(
                "quantising {} to {}",
                args.checkpoint.display(),
                args.output.display()
            )
        })?;
    pending.commit()?;
    let size = std::fs::metadata(&args.output)
        .map(|m| m.len())
        .unwrap_or(0);
    eprintln!(
        "wrote {} ({}, {precision}, {} matrices pre-quantised, {:.2} GB) in {:.1} s",
        args.output.display(),
        written.model,
        written.matrices,
        size as f64 / 1e9,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
