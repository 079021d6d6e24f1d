//! `rill batch`'s input: the prompts CSV (one row per clip) and the shard this
//! process takes. Everything here is checked before any weights load, and every
//! error is a usage error (exit status 2) naming the row and column.

use anyhow::Result;

use crate::usage::usage_bail;

/// Style codes per clip (MusicCoCa RVQ levels).
pub const CODES: usize = 12;

/// One clip to generate: a data row of the CSV.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// 0-based data row (the header is not counted): the WAV is `{index}.wav`.
    pub index: usize,
    /// The text prompt, if the row has one (not empty).
    pub prompt: Option<String>,
    /// The row's style codes; when given they are used and the prompt is a label.
    pub codes: Option<[u16; CODES]>,
    /// The row's sampler seed, if it names one.
    pub seed: Option<u64>,
}

impl Row {
    /// Whether the row needs MusicCoCa (a prompt without codes).
    pub fn needs_musiccoca(&self) -> bool {
        self.codes.is_none() && self.prompt.is_some()
    }

    /// The sampler seed: the `seed` column, else `base + index` (wrapping), so a
    /// row's audio depends on the row alone, never on the shard or on other rows.
    pub fn seed(&self, base: u64) -> u64 {
        self.seed.unwrap_or(base.wrapping_add(self.index as u64))
    }
}

/// Where a row is in the file, for messages: `row 3 (line 5)`.
fn place(index: usize, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("row {index} (line {l})"),
        None => format!("row {index}"),
    }
}

/// The header's name of a column, compared without case, spaces or a BOM.
fn normalise(h: &str) -> String {
    h.trim_start_matches('\u{feff}').trim().to_ascii_lowercase()
}

/// Parses the prompts CSV (`name` is how messages call it): a header with a
/// `prompt` column and optional `seed` and `style_codes` columns (other columns
/// are ignored, as upstream's `prompt_id`), then one row per clip.
pub fn parse(name: &str, bytes: &[u8]) -> Result<Vec<Row>> {
    if bytes.iter().all(|b| b.is_ascii_whitespace()) {
        usage_bail!(
            "{name} is empty: it needs a header line with a `prompt` column and one row per clip"
        );
    }
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .from_reader(bytes);
    let headers = match reader.headers() {
        Ok(h) => h.iter().map(normalise).collect::<Vec<_>>(),
        Err(e) => usage_bail!("{name}: cannot read the header line: {}", csv_error(&e)),
    };
    let col = |want: &[&str]| headers.iter().position(|h| want.contains(&h.as_str()));
    let prompt_col = col(&["prompt"]);
    let codes_col = col(&["style_codes", "style-codes"]);
    let seed_col = col(&["seed"]);
    if prompt_col.is_none() && codes_col.is_none() {
        usage_bail!(
            "{name} has no `prompt` column (its header is {:?}); the first line must name the \
             columns, e.g. `prompt` (text) and optionally `seed` and `style_codes`",
            headers.join(",")
        );
    }
    let mut rows = Vec::new();
    for (index, record) in reader.records().enumerate() {
        let record = match record {
            Ok(r) => r,
            Err(e) => usage_bail!("{name} {}: {}", place(index, None), csv_error(&e)),
        };
        let line = record.position().map(|p| p.line());
        let at = |c: Option<usize>| c.and_then(|c| record.get(c)).map(str::trim);
        let prompt = at(prompt_col).filter(|p| !p.is_empty()).map(str::to_string);
        let codes = match at(codes_col).filter(|c| !c.is_empty()) {
            Some(c) => Some(parse_codes(c).map_err(|e| {
                crate::usage::usage(format!(
                    "{name} {}, column style_codes: {e}",
                    place(index, line)
                ))
            })?),
            None => None,
        };
        let seed = match at(seed_col).filter(|s| !s.is_empty()) {
            Some(s) => match s.parse::<u64>() {
                Ok(v) => Some(v),
                Err(_) => usage_bail!(
                    "{name} {}, column seed: {s:?} is not a seed (a whole number 0..{}); \
                     leave it empty for the default (--seed plus the row index)",
                    place(index, line),
                    u64::MAX
                ),
            },
            None => None,
        };
        if prompt.is_none() && codes.is_none() {
            usage_bail!(
                "{name} {}, column prompt: the row has no prompt{}; give it some words \
                 (\"disco funk\") or 12 style codes, or delete the row",
                place(index, line),
                if codes_col.is_some() {
                    " and no style_codes"
                } else {
                    ""
                }
            );
        }
        rows.push(Row {
            index,
            prompt,
            codes,
            seed,
        });
    }
    if rows.is_empty() {
        usage_bail!("{name} has a header but no rows: add one row per clip");
    }
    Ok(rows)
}

/// The csv crate's error, said for a user (not UTF-8, a row of the wrong length).
fn csv_error(e: &csv::Error) -> String {
    let line = e.position().map(|p| format!("line {}: ", p.line()));
    let line = line.unwrap_or_default();
    match e.kind() {
        csv::ErrorKind::Utf8 { .. } => {
            format!("{line}the text is not UTF-8; save the CSV as UTF-8")
        }
        csv::ErrorKind::UnequalLengths {
            expected_len, len, ..
        } => format!(
            "{line}{len} fields where the header has {expected_len}; quote fields that hold \
             commas (\"1,2,3\")"
        ),
        _ => format!("{line}{e}"),
    }
}

/// 12 style codes 0..1023 separated by commas and/or spaces (`[...]` allowed).
pub fn parse_codes(s: &str) -> std::result::Result<[u16; CODES], String> {
    let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
    let parts: Vec<&str> = inner
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .collect();
    if parts.len() != CODES {
        return Err(format!(
            "needs exactly 12 codes 0..1023 separated by commas or spaces (as `rill style` \
             prints them), got {}",
            parts.len()
        ));
    }
    let mut out = [0u16; CODES];
    for (i, p) in parts.iter().enumerate() {
        match p.parse::<u16>() {
            Ok(v) if v <= 1023 => out[i] = v,
            _ => {
                return Err(format!(
                    "code {i} is {p:?}, but codes are whole numbers 0..1023"
                ))
            }
        }
    }
    Ok(out)
}

/// This process's part of the rows: those whose index % `count` == `index`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    pub const ALL: Shard = Shard { index: 0, count: 1 };

    pub fn takes(&self, row: usize) -> bool {
        row as u64 % self.count == self.index
    }
}

/// `--shard I/N` or `--shard auto` (with `--shards N`), reading the scheduler's
/// variables through `env`.
pub fn shard(
    spec: Option<&str>,
    shards: Option<u64>,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Shard> {
    let Some(spec) = spec.map(str::trim) else {
        if shards.is_some() {
            usage_bail!("--shards N goes with --shard auto (or say --shard I/N)");
        }
        return Ok(Shard::ALL);
    };
    if shards == Some(0) {
        usage_bail!("--shards must be at least 1");
    }
    let (index, count) = if spec == "auto" {
        auto(shards, &env)?
    } else {
        let Some((i, n)) = spec.split_once('/') else {
            usage_bail!("--shard takes I/N (this machine's 0-based index I of N, e.g. 0/4) or auto, got {spec:?}");
        };
        let (Ok(i), Ok(n)) = (i.trim().parse::<u64>(), n.trim().parse::<u64>()) else {
            usage_bail!("--shard {spec:?}: I and N of I/N must be whole numbers, e.g. 0/4");
        };
        if shards.is_some_and(|s| s != n) {
            usage_bail!("--shard {spec} and --shards disagree; give one of them");
        }
        (i, n)
    };
    if count == 0 {
        usage_bail!("--shard: the number of shards must be at least 1");
    }
    if index >= count {
        usage_bail!("--shard {index}/{count}: the index must be in 0..{count} (0-based)");
    }
    Ok(Shard { index, count })
}

/// The shard from a Slurm array or a Kubernetes indexed Job.
fn auto(shards: Option<u64>, env: &impl Fn(&str) -> Option<String>) -> Result<(u64, u64)> {
    let num = |var: &str| -> Result<Option<u64>> {
        match env(var) {
            None => Ok(None),
            Some(v) => match v.trim().parse::<u64>() {
                Ok(n) => Ok(Some(n)),
                Err(_) => usage_bail!("--shard auto: ${var} is {v:?}, not a whole number"),
            },
        }
    };
    if let Some(id) = num("SLURM_ARRAY_TASK_ID")? {
        // The task id is the shard index. With --shards N any ids do (a single task
        // resubmitted as --array=3 is shard 3/N); without, the array must be 0..N-1.
        if let Some(n) = shards {
            return Ok((id, n));
        }
        let Some(count) = num("SLURM_ARRAY_TASK_COUNT")? else {
            usage_bail!(
                "--shard auto: $SLURM_ARRAY_TASK_ID is set but $SLURM_ARRAY_TASK_COUNT is not; \
                 add --shards N (the number of shards)"
            );
        };
        let min = num("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
        let max = num("SLURM_ARRAY_TASK_MAX")?.unwrap_or(count.saturating_sub(1));
        if min != 0 || max.checked_add(1) != Some(count) {
            usage_bail!(
                "--shard auto reads the shard from a Slurm array numbered 0..N-1, but this \
                 array is {min}-{max} ({count} tasks): submit it with --array=0-{}, or add \
                 --shards N to take the task id as the shard index of N",
                count.saturating_sub(1)
            );
        }
        return Ok((id, count));
    }
    if let Some(index) = num("JOB_COMPLETION_INDEX")? {
        let Some(count) = shards else {
            usage_bail!(
                "--shard auto in a Kubernetes indexed Job needs --shards N, the Job's \
                 `completions` ($JOB_COMPLETION_INDEX is {index})"
            );
        };
        return Ok((index, count));
    }
    usage_bail!(
        "--shard auto found neither $SLURM_ARRAY_TASK_ID (a Slurm array job: sbatch --array=0-3) \
         nor $JOB_COMPLETION_INDEX (a Kubernetes indexed Job, with --shards N); outside them \
         say --shard I/N"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(csv: &str) -> String {
        format!("{:#}", parse("p.csv", csv.as_bytes()).unwrap_err())
    }

    #[test]
    fn rows_and_columns() {
        let rows = parse(
            "p.csv",
            b"\xef\xbb\xbfprompt_id,Prompt,seed,style_codes\n0,disco funk,,\n1,,7,\"1,2,3,4,5,6,7,8,9,10,11,12\"\n2,jazz,,1 2 3 4 5 6 7 8 9 10 11 1023\n",
        )
        .unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].prompt.as_deref(), Some("disco funk"));
        assert!(rows[0].needs_musiccoca());
        assert_eq!(rows[0].seed(42), 42);
        assert_eq!(rows[1].seed(42), 7);
        assert_eq!(rows[1].codes.unwrap()[11], 12);
        assert!(!rows[2].needs_musiccoca());
        assert_eq!(rows[2].seed(42), 44);
    }

    #[test]
    fn bad_inputs_name_the_row_and_column() {
        assert!(err("").contains("empty"));
        assert!(err("prompt\n").contains("no rows"));
        assert!(err("text,seed\nx,1\n").contains("no `prompt` column"));
        let e = err("prompt,seed\na,1\nb,x\n");
        assert!(e.contains("row 1 (line 3), column seed"), "{e}");
        let e = err("prompt,style_codes\na,\n,1 2 3\n");
        assert!(e.contains("row 1 (line 3), column style_codes"), "{e}");
        let e = err("prompt,seed\na,1\n ,\n");
        assert!(e.contains("row 1 (line 3), column prompt"), "{e}");
        assert!(err("prompt\na,b\n").contains("2 fields where the header has 1"));
        let e = format!("{:#}", parse("p.csv", b"prompt\n\xff\xfe\n").unwrap_err());
        assert!(e.contains("not UTF-8"), "{e}");
        assert!(parse_codes("1,2,3,4,5,6,7,8,9,10,11,1024").is_err());
        assert!(parse_codes("[1,2,3,4,5,6,7,8,9,10,11,-1]").is_err());
        assert!(parse_codes("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0]").is_ok());
    }

    #[test]
    fn shards() {
        let none = |_: &str| None;
        assert_eq!(shard(None, None, none).unwrap(), Shard::ALL);
        assert_eq!(
            shard(Some("1/3"), None, none).unwrap(),
            Shard { index: 1, count: 3 }
        );
        for bad in ["3/3", "0/0", "a/2", "1", "-1/2"] {
            assert!(shard(Some(bad), None, none).is_err(), "{bad}");
        }
        assert!(shard(Some("auto"), None, none).is_err());
        assert!(shard(None, Some(2), none).is_err());
        let slurm = |v: &str| match v {
            "SLURM_ARRAY_TASK_ID" => Some("1".into()),
            "SLURM_ARRAY_TASK_MIN" => Some("0".into()),
            "SLURM_ARRAY_TASK_MAX" => Some("2".into()),
            "SLURM_ARRAY_TASK_COUNT" => Some("3".into()),
            _ => None,
        };
        assert_eq!(
            shard(Some("auto"), None, slurm).unwrap(),
            Shard { index: 1, count: 3 }
        );
        // A one-task array resubmitted for shard 3: right with --shards, refused without.
        let one = |v: &str| match v {
            "SLURM_ARRAY_TASK_ID" | "SLURM_ARRAY_TASK_MIN" | "SLURM_ARRAY_TASK_MAX" => {
                Some("3".into())
            }
            "SLURM_ARRAY_TASK_COUNT" => Some("1".into()),
            _ => None,
        };
        let e = format!("{:#}", shard(Some("auto"), None, one).unwrap_err());
        assert!(e.contains("--array=0-0"), "{e}");
        assert_eq!(
            shard(Some("auto"), Some(8), one).unwrap(),
            Shard { index: 3, count: 8 }
        );
        let bad = |v: &str| (v == "SLURM_ARRAY_TASK_ID").then(|| "x".to_string());
        assert!(shard(Some("auto"), Some(2), bad).is_err());
        let k8s = |v: &str| (v == "JOB_COMPLETION_INDEX").then(|| "2".to_string());
        assert!(shard(Some("auto"), None, k8s).is_err());
        assert_eq!(
            shard(Some("auto"), Some(4), k8s).unwrap(),
            Shard { index: 2, count: 4 }
        );
        assert!(shard(Some("auto"), Some(2), k8s).is_err());
    }
}
