//! `rill batch`: shards give the same bytes as one run, an interrupted run
//! resumes without redoing finished rows, bad CSVs are one clear usage error.

use std::path::Path;
use std::process::Output;

mod common;
use common::{ckpt, rill, rill_env, stderr, tmp};

/// Six rows: style codes in both spellings, some with their own seed.
const CSV: &str = "prompt_id,prompt,seed,style_codes\n\
0,first,,\"1,2,3,4,5,6,7,8,9,10,11,12\"\n\
1,second,7,\"1,2,3,4,5,6,7,8,9,10,11,12\"\n\
2,,,100 200 300 400 500 600 700 800 900 1000 1023 0\n\
3,fourth,9,\"[5, 4, 3, 2, 1, 0, 5, 4, 3, 2, 1, 0]\"\n\
4,,,\"1,2,3,4,5,6,7,8,9,10,11,12\"\n\
5,sixth,,100 200 300 400 500 600 700 800 900 1000 1023 0\n";

/// `rill batch CSV --out OUT --checkpoint (seed 0) --seconds 0.4 extra…` with `env`.
fn batch(csv: &Path, out: &Path, extra: &[&str], env: &[(&str, &str)], home: &Path) -> Output {
    let ck = ckpt(0);
    let mut args = vec![
        "batch",
        csv.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--checkpoint",
        ck.as_str(),
        "--seconds",
        "0.4",
    ];
    args.extend_from_slice(extra);
    rill_env(&args, home, env)
}

fn ok(o: &Output) -> String {
    let e = stderr(o);
    assert!(o.status.success(), "rill batch failed: {e}");
    e
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn shards_equal_one_run_and_a_rerun_resumes() {
    let d = tmp("batch-shards");
    let csv = d.join("prompts.csv");
    std::fs::write(&csv, CSV).unwrap();
    let (one, split) = (d.join("one"), d.join("split"));

    let t = std::time::Instant::now();
    let e = ok(&batch(&csv, &one, &[], &[], &d));
    assert!(e.contains("6 generated, 0 skipped"), "{e}");
    eprintln!(
        "unsharded run of 6 rows: {:.1} s",
        t.elapsed().as_secs_f64()
    );

    // Shard 0/2 as a Kubernetes indexed Job, 1/2 as a Slurm array task (--array=0-1).
    let e = ok(&batch(
        &csv,
        &split,
        &["--shard", "auto", "--shards", "2"],
        &[("JOB_COMPLETION_INDEX", "0")],
        &d,
    ));
    assert!(e.contains("shard 0/2") && e.contains("3 generated"), "{e}");
    let slurm = [
        ("SLURM_ARRAY_TASK_ID", "1"),
        ("SLURM_ARRAY_TASK_MIN", "0"),
        ("SLURM_ARRAY_TASK_MAX", "1"),
        ("SLURM_ARRAY_TASK_COUNT", "2"),
    ];
    let e = ok(&batch(&csv, &split, &["--shard", "auto"], &slurm, &d));
    assert!(e.contains("shard 1/2") && e.contains("3 generated"), "{e}");
    for i in 0..6 {
        let (a, b) = (one.join(format!("{i}.wav")), split.join(format!("{i}.wav")));
        assert!(read(&a).len() > 44, "row {i} has no audio");
        assert_eq!(read(&a), read(&b), "row {i}: sharded output differs");
    }
    // Different seeds and styles give different clips.
    assert_ne!(read(&one.join("0.wav")), read(&one.join("4.wav")));

    // An interrupted run: row 3's WAV missing, a half-written partial file left.
    let mtime = |i: usize| {
        std::fs::metadata(one.join(format!("{i}.wav")))
            .unwrap()
            .modified()
            .unwrap()
    };
    let before: Vec<_> = (0..6).map(mtime).collect();
    std::fs::remove_file(one.join("3.wav")).unwrap();
    std::fs::write(one.join("3.wav.partial"), b"RIFF").unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    let e = ok(&batch(&csv, &one, &[], &[], &d));
    assert!(e.contains("1 generated, 5 skipped"), "{e}");
    for i in [0, 1, 2, 4, 5] {
        assert_eq!(mtime(i), before[i], "row {i} was redone");
    }
    assert_eq!(read(&one.join("3.wav")), read(&split.join("3.wav")));
    assert!(!one.join("3.wav.partial").exists());
    let e = ok(&batch(&csv, &one, &[], &[], &d));
    assert!(e.contains("nothing to do"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}

/// Exit status 2, `needle` in the error, nothing written.
fn assert_usage(o: &Output, out: &Path, needle: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains(needle), "expected {needle:?} in: {e}");
    assert!(!e.contains("panicked"), "{e}");
    assert!(!out.exists(), "{} was created", out.display());
}

#[test]
fn bad_csvs_and_flags_are_usage_errors() {
    let d = tmp("batch-bad");
    let out = d.join("out");
    let cases: [(&[u8], &str); 9] = [
        (b"", "is empty"),
        (b"prompt,seed\n", "no rows"),
        (b"text,seed\ndisco,1\n", "no `prompt` column"),
        (
            b"prompt,seed\ndisco,1\njazz,-3\n",
            "row 1 (line 3), column seed",
        ),
        (
            b"prompt,style_codes\ndisco,\"1,2,3\"\n",
            "row 0 (line 2), column style_codes: needs exactly 12",
        ),
        (
            b"prompt,style_codes\ndisco,1 2 3 4 5 6 7 8 9 10 11 1024\n",
            "code 11 is \"1024\"",
        ),
        (
            b"prompt,seed\ndisco,1\n,2\n",
            "row 1 (line 3), column prompt",
        ),
        (b"prompt\ndisco\n\xff\xfe bad\n", "not UTF-8"),
        (b"prompt\ndisco,funk\n", "2 fields where the header has 1"),
    ];
    for (i, (text, needle)) in cases.iter().enumerate() {
        let csv = d.join(format!("bad{i}.csv"));
        std::fs::write(&csv, text).unwrap();
        assert_usage(&batch(&csv, &out, &[], &[], &d), &out, needle);
    }
    let csv = d.join("good.csv");
    std::fs::write(&csv, CSV).unwrap();
    let flags: [(&[&str], &str); 6] = [
        (&["--shard", "2/2"], "0..2"),
        (&["--shard", "x"], "I/N"),
        (&["--shard", "auto"], "SLURM_ARRAY_TASK_ID"),
        (&["--shards", "2"], "--shard auto"),
        (&["--top-k", "0"], "--top-k"),
        (&["--temperature", "-1"], "--temperature"),
    ];
    for (extra, needle) in flags {
        assert_usage(&batch(&csv, &out, extra, &[], &d), &out, needle);
    }
    let k8s = [("JOB_COMPLETION_INDEX", "1")];
    let o = batch(&csv, &out, &["--shard", "auto"], &k8s, &d);
    assert_usage(&o, &out, "--shards N");
    let o = rill(&["batch", "missing.csv", "--out", "o"], &d);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("cannot read the prompts CSV"));
    let _ = std::fs::remove_dir_all(&d);
}

/// A text prompt row is the clip `rill generate --prompt` makes with the same
/// settings (random-weight MusicCoCa, 0.9 GB in the shared cache once).
#[test]
fn a_prompt_row_is_rill_generate_with_that_prompt() {
    let d = tmp("batch-prompt");
    let csv = d.join("prompts.csv");
    std::fs::write(&csv, "prompt\n\"jazz, smooth\"\n").unwrap();
    let out = d.join("out");
    let e = ok(&rill(
        &[
            "batch",
            csv.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--random-weights",
            "--seconds",
            "0.4",
        ],
        &d,
    ));
    assert!(e.contains("1 generated"), "{e}");
    let single = d.join("single.wav");
    let o = rill(
        &[
            "generate",
            "--random-weights",
            "--prompt",
            "jazz, smooth",
            "--temperature",
            "1.1",
            "--top-k",
            "128",
            "--seconds",
            "0.4",
            "-o",
            single.to_str().unwrap(),
        ],
        &d,
    );
    ok(&o);
    assert_eq!(read(&out.join("0.wav")), read(&single));
    let _ = std::fs::remove_dir_all(&d);
}
