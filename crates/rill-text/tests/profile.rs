//! Start-up and throughput figures (ignored: speed is reported, never asserted).
//!
//!     cargo test --release -p rill-text --test profile -- --ignored --nocapture
//!
//! Besides wall time it prints the thread's CPU time (Linux `/proc/thread-self/schedstat`),
//! which a machine shared with other jobs does not inflate.

use std::sync::Arc;
use std::time::Instant;

use rill_text::{EnglishFrontEnd, Lexicon, TextVocabulary, EMBEDDED_HETERONYMS, EMBEDDED_IPA_DICT};

/// CPU time of this thread in seconds, if the kernel reports it.
fn thread_cpu_seconds() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let ns: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some(ns * 1e-9)
}

/// Best wall time and best CPU time of `reps` runs of `f`.
fn best_of(reps: usize, mut f: impl FnMut()) -> (f64, Option<f64>) {
    let (mut wall, mut cpu) = (f64::INFINITY, None::<f64>);
    for _ in 0..reps {
        let (t, c) = (Instant::now(), thread_cpu_seconds());
        f();
        wall = wall.min(t.elapsed().as_secs_f64());
        if let (Some(c0), Some(c1)) = (c, thread_cpu_seconds()) {
            cpu = Some(cpu.map_or(c1 - c0, |best: f64| best.min(c1 - c0)));
        }
    }
    (wall, cpu)
}

fn ms(seconds: Option<f64>) -> String {
    seconds.map_or("n/a".into(), |s| format!("{:.1} ms", s * 1e3))
}

#[test]
#[ignore]
fn profile_startup_and_encode() {
    let mut lexicon = None;
    let (wall, cpu) = best_of(7, || {
        lexicon = Some(
            Lexicon::from_bytes(EMBEDDED_IPA_DICT.as_bytes(), EMBEDDED_HETERONYMS.as_bytes())
                .unwrap(),
        );
    });
    let lexicon = Arc::new(lexicon.unwrap());
    println!(
        "dictionary parse from bytes (best of 7): wall {:.1} ms, CPU {}; {} words",
        wall * 1e3,
        ms(cpu),
        lexicon.len()
    );
    let (wall, cpu) = best_of(7, || {
        Lexicon::from_text(EMBEDDED_IPA_DICT, EMBEDDED_HETERONYMS).unwrap();
    });
    println!(
        "embedded dictionary parse (no UTF-8 check): wall {:.1} ms, CPU {}",
        wall * 1e3,
        ms(cpu)
    );

    let front = EnglishFrontEnd::with_lexicon(lexicon, TextVocabulary::v2602());
    let text = "Hello world, I read the rill docs. The quick brown fox jumps over the lazy dog. \
                It's 5 o'clock; don't you think we're late? Xylophonic words are out of vocabulary.";
    let reps = 2000;
    let mut tokens = 0;
    let (wall, cpu) = best_of(3, || {
        for _ in 0..reps {
            tokens = front
                .encode_utterances(text)
                .unwrap()
                .iter()
                .map(Vec::len)
                .sum::<usize>();
        }
    });
    println!(
        "encode_utterances of a {}-byte text ({tokens} tokens): wall {:.1} µs, CPU {} µs",
        text.len(),
        wall / reps as f64 * 1e6,
        cpu.map_or("n/a".into(), |c| format!("{:.1}", c / reps as f64 * 1e6))
    );
}
