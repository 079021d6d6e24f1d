//! Live style changes from standard input (`rill play`): each line a prompt or a blend
//! (`jazz=0.7 | techno=0.3`, `@clip.wav` for a clip, `codes 1,2,…` for raw codes),
//! encoded on a thread of its own so the stream never waits; the new style reaches
//! the stream as a control, applied at the next frame boundary.

use std::io::BufRead;
use std::path::PathBuf;

use anyhow::Result;
use rill_kernels::Pool;
use rill_musiccoca::StyleModel;
use rill_stream::{Control, StreamController};

use crate::args::parse_style_codes;
use crate::style::{check_inputs, codes_line, embed_all, split_weight, Input, StyleModelArgs};

/// One stdin line, parsed.
#[derive(Debug, PartialEq)]
pub enum Line {
    Skip,
    Codes([u16; 12]),
    Blend(Vec<(Input, f32)>),
}

/// Parses one line (see the module doc).
pub fn parse_line(line: &str) -> Result<Line> {
    let t = line.trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(Line::Skip);
    }
    if let Some(rest) = t.strip_prefix("codes ") {
        return Ok(Line::Codes(parse_style_codes(rest)?));
    }
    let mut v = Vec::new();
    for part in t.split('|') {
        let (s, w) = split_weight(part.trim());
        let s = s.trim();
        match s.strip_prefix('@') {
            Some(p) => v.push((Input::Audio(PathBuf::from(p.trim())), w)),
            None => v.push((Input::Text(s.to_string()), w)),
        }
    }
    check_inputs(&v)?;
    Ok(Line::Blend(v))
}

/// Loads MusicCoCa before the stream starts (so loading never competes with it), or
/// says why live text prompts will fail (codes lines still work).
pub fn preload(
    model: &StyleModelArgs,
    checkpoint: &std::path::Path,
    random: Option<u64>,
) -> Option<StyleModel> {
    match model.load(Some(checkpoint), random) {
        Ok(m) => {
            eprintln!(
                "live style: type a prompt and Enter (\"disco funk\", \"jazz=0.7 | techno=0.3\", \"@clip.wav\", \"codes 1,…,12\")"
            );
            Some(m)
        }
        Err(e) => {
            eprintln!("note: live text prompts are off ({e:#}); \"codes …\" lines still work");
            None
        }
    }
}

/// Starts the reader thread (`loaded`: MusicCoCa from [`preload`]; without it a prompt
/// line tries to load it then).
pub fn spawn(
    model: StyleModelArgs,
    checkpoint: PathBuf,
    random: Option<u64>,
    loaded: Option<StyleModel>,
    ctl: StreamController,
) {
    std::thread::Builder::new()
        .name("rill-style".into())
        .spawn(move || {
            // Below the stream's threads: encoding waits, the audio does not.
            rill_kernels::pool::idle_thread_priority();
            let pool = Pool::new(1);
            let mut loaded = loaded;
            for line in std::io::stdin().lock().lines() {
                let t0 = std::time::Instant::now();
                let Ok(line) = line else { break };
                match handle(&line, &model, &checkpoint, random, &mut loaded, &pool) {
                    Ok(Some(codes)) => {
                        eprintln!(
                            "\nstyle → {} ({:.0} ms)",
                            codes_line(&codes),
                            t0.elapsed().as_secs_f64() * 1e3
                        );
                        let _ = ctl.send(Control::Style(Some(codes)));
                    }
                    Ok(None) => {}
                    Err(e) => eprintln!("\nerror: {e:#}"),
                }
            }
        })
        .map(drop)
        .unwrap_or_else(|e| eprintln!("warning: no live style prompts from standard input: {e}"));
}

fn handle(
    line: &str,
    args: &StyleModelArgs,
    checkpoint: &std::path::Path,
    random: Option<u64>,
    loaded: &mut Option<StyleModel>,
    pool: &Pool,
) -> Result<Option<[u16; 12]>> {
    let inputs = match parse_line(line)? {
        Line::Skip => return Ok(None),
        Line::Codes(c) => return Ok(Some(c)),
        Line::Blend(v) => v,
    };
    if loaded.is_none() {
        *loaded = Some(args.load(Some(checkpoint), random)?);
    }
    let m = loaded.as_ref().expect("loaded above");
    let e = embed_all(m, &inputs, args.mapper(), pool)?;
    let members: Vec<(&[f32], f32)> = e
        .iter()
        .zip(&inputs)
        .map(|(e, (_, w))| (e.as_slice(), *w))
        .collect();
    Ok(Some(m.tokenize_blend(&members, pool)?.tokens))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_prompts_blends_clips_or_codes() {
        assert_eq!(parse_line("  ").unwrap(), Line::Skip);
        assert_eq!(parse_line("# a comment").unwrap(), Line::Skip);
        assert_eq!(
            parse_line("disco funk").unwrap(),
            Line::Blend(vec![(Input::Text("disco funk".into()), 1.0)])
        );
        assert_eq!(
            parse_line("jazz=0.7 | @clip.wav=0.3").unwrap(),
            Line::Blend(vec![
                (Input::Text("jazz".into()), 0.7),
                (Input::Audio("clip.wav".into()), 0.3)
            ])
        );
        assert!(matches!(
            parse_line("codes 1,2,3,4,5,6,7,8,9,10,11,12").unwrap(),
            Line::Codes(c) if c[11] == 12
        ));
        assert!(parse_line("codes 1,2").is_err());
        assert!(parse_line("a=0 | b=0").is_err());
        assert!(parse_line("jazz | ").is_err());
    }
}
