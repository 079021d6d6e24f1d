//! Start-up and throughput figures (ignored: speed is reported, never asserted).
//!
//!     cargo test --release -p rill-text --test profile -- --ignored --nocapture

use std::sync::Arc;
use std::time::Instant;

use rill_text::{EnglishFrontEnd, Lexicon, TextVocabulary, EMBEDDED_HETERONYMS, EMBEDDED_IPA_DICT};

#[test]
#[ignore]
fn profile_startup_and_encode() {
    let mut parse = f64::INFINITY;
    let mut lexicon = None;
    for _ in 0..5 {
        let t = Instant::now();
        let parsed = Lexicon::from_bytes(EMBEDDED_IPA_DICT, EMBEDDED_HETERONYMS).unwrap();
        parse = parse.min(t.elapsed().as_secs_f64());
        lexicon = Some(parsed);
    }
    let lexicon = Arc::new(lexicon.unwrap());
    println!(
        "dictionary parse: {:.1} ms (best of 5), {} words",
        parse * 1e3,
        lexicon.len()
    );

    let front = EnglishFrontEnd::with_lexicon(lexicon, TextVocabulary::v2602());
    let text = "Hello world, I read the rill docs. The quick brown fox jumps over the lazy dog. \
                It's 5 o'clock; don't you think we're late? Xylophonic words are out of vocabulary.";
    let reps = 2000;
    let t = Instant::now();
    let mut tokens = 0;
    for _ in 0..reps {
        tokens += front
            .encode_utterances(text)
            .unwrap()
            .iter()
            .map(Vec::len)
            .sum::<usize>();
    }
    let per = t.elapsed().as_secs_f64() / reps as f64;
    println!(
        "encode: {:.1} µs per {}-byte text ({} tokens), {:.1} MB/s",
        per * 1e6,
        text.len(),
        tokens / reps,
        text.len() as f64 / per / 1e6
    );
}
