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

#[test]
#[ignore]
fn profile_spanish_and_german() {
    use rill_text::{IpaFrontEnd, GERMAN};
    // Spanish: gunzip + parse of the embedded dictionary (what `spanish()` does once).
    let es = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("data/es_ES_nv230301.dict.gz"),
    )
    .unwrap();
    let gunzip = |bytes: &[u8]| {
        use std::io::Read;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
        out
    };
    let (wall, cpu) = best_of(5, || {
        IpaFrontEnd::spanish_from_bytes(&gunzip(&es)).unwrap();
    });
    println!(
        "Spanish: gunzip + parse of the embedded dictionary (best of 5): wall {:.1} ms, CPU {}",
        wall * 1e3,
        ms(cpu)
    );
    let de = gunzip(
        &std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../testdata/magpie/de_nv221025.dict.gz"),
        )
        .unwrap(),
    );
    let (wall, cpu) = best_of(5, || {
        IpaFrontEnd::with_derived_table(GERMAN, &de, "de_nv221025.dict", None).unwrap();
    });
    println!(
        "German: parse of a 3.95 MB dictionary (best of 5): wall {:.1} ms, CPU {}",
        wall * 1e3,
        ms(cpu)
    );
    let fronts = [
        (
            IpaFrontEnd::spanish().unwrap(),
            "¿Dónde está la biblioteca? El niño comió paella en Valencia con su abuela, \
             y después fueron al mercado a comprar pan, leche y azúcar para la semana.",
        ),
        (
            IpaFrontEnd::with_derived_table(GERMAN, &de, "de_nv221025.dict", None).unwrap(),
            "Guten Morgen, wie geht es Ihnen? Der Bäcker backt frische Brötchen, und über \
             den Wolken muss die Freiheit wohl grenzenlos sein, sagte er im Jahr 2024.",
        ),
    ];
    for (front, text) in &fronts {
        let reps = 2000;
        let mut n = 0;
        let (wall, cpu) = best_of(3, || {
            for _ in 0..reps {
                n = front.encode(text).unwrap().ids.len();
            }
        });
        println!(
            "{}: encode of a {}-char text ({n} ids): wall {:.1} µs, CPU {} µs",
            front.locale().name,
            text.chars().count(),
            wall / reps as f64 * 1e6,
            cpu.map_or("n/a".into(), |c| format!("{:.1}", c / reps as f64 * 1e6))
        );
    }
}
