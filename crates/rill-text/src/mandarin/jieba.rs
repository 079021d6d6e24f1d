//! Python jieba 0.42.1's `jieba.cut(text)` (accurate mode, `HMM=True`), re-written:
//! the `re_han_default` / `re_skip_default` block split, the prefix DAG over `dict.txt`,
//! the log-frequency route (ties go to the longer word, as Python's `max` over
//! `(logprob, end)` tuples does), and `finalseg`'s Viterbi for runs of single
//! characters that are not a dictionary word, with its own block regexes.
//!
//! Floating point is done in the same order as Python's, on the same `f64` values (the
//! tables keep Python's shortest round-trip reprs), so every comparison comes out the
//! same.

use super::FastMap;

/// `finalseg.MIN_FLOAT`: the log-probability of anything the HMM tables lack.
const MIN_FLOAT: f64 = -3.14e100;

/// HMM states in jieba's letters; the index order is the letters' order, which is what
/// Python's tuple `max` compares on ties.
const STATES: [char; 4] = ['B', 'E', 'M', 'S'];
const B: usize = 0;
const E: usize = 1;
const M: usize = 2;
const S: usize = 3;

/// `finalseg.PrevStatus`: the states that may precede each state.
const PREV: [[usize; 2]; 4] = [[E, S], [B, M], [M, B], [S, E]];

/// The dictionary and the HMM of one jieba `Tokenizer`.
#[derive(Debug)]
pub struct Jieba {
    /// `Tokenizer.FREQ`: every dictionary word with its count, and every prefix of one
    /// with 0 (unless it is a word itself).
    freq: FastMap<String, u64>,
    /// `log(Tokenizer.total)`.
    log_total: f64,
    start: [f64; 4],
    /// `trans[from][to]`, `MIN_FLOAT` where jieba has no entry.
    trans: [[f64; 4]; 4],
    emit: [FastMap<char, f64>; 4],
}

/// Characters of `re_han_default`: `[\u4E00-\u9FD5a-zA-Z0-9+#&\._%\-]`.
fn is_block_char(c: char) -> bool {
    matches!(
        c,
        '\u{4E00}'..='\u{9FD5}' | '+' | '#' | '&' | '.' | '_' | '%' | '-'
    ) || c.is_ascii_alphanumeric()
}

/// `finalseg.re_han`: `[\u4E00-\u9FD5]`.
fn is_han(c: char) -> bool {
    matches!(c, '\u{4E00}'..='\u{9FD5}')
}

fn parse_f64(s: Option<&str>) -> Result<f64, String> {
    s.and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad number {s:?}"))
}

fn state(s: Option<&str>) -> Result<usize, String> {
    let s = s.unwrap_or("");
    STATES
        .iter()
        .position(|c| s.len() == 1 && s.starts_with(*c))
        .ok_or_else(|| format!("bad HMM state {s:?}"))
}

impl Jieba {
    /// From the generated tables: `dict` is `total N` then `word count` lines, `hmm`
    /// the `start` / `trans` / `emit` lines (`testdata/magpie/make_mandarin_tables.py`).
    pub fn from_tables(dict: &str, hmm: &str) -> Result<Self, String> {
        let mut lines = dict.lines();
        let total: u64 = lines
            .next()
            .and_then(|l| l.strip_prefix("total "))
            .and_then(|t| t.parse().ok())
            .ok_or("the jieba dictionary lacks its total")?;
        let mut freq = FastMap::with_capacity_and_hasher(600_000, Default::default());
        for line in lines {
            let (word, count) = line
                .rsplit_once(' ')
                .ok_or_else(|| format!("bad jieba line {line:?}"))?;
            let count: u64 = count
                .parse()
                .map_err(|_| format!("bad jieba count {line:?}"))?;
            // A word's count replaces the 0 of it as a prefix, in either order.
            freq.insert(word.to_string(), count);
            for (i, _) in word.char_indices().skip(1) {
                if !freq.contains_key(&word[..i]) {
                    freq.insert(word[..i].to_string(), 0);
                }
            }
        }
        let mut start = [MIN_FLOAT; 4];
        let mut trans = [[MIN_FLOAT; 4]; 4];
        let mut emit: [FastMap<char, f64>; 4] = Default::default();
        for line in hmm.lines() {
            let mut f = line.split(' ');
            match f.next() {
                Some("start") => {
                    let s = state(f.next())?;
                    start[s] = parse_f64(f.next())?;
                }
                Some("trans") => {
                    let from = state(f.next())?;
                    let to = state(f.next())?;
                    trans[from][to] = parse_f64(f.next())?;
                }
                Some("emit") => {
                    let s = state(f.next())?;
                    let c = f
                        .next()
                        .and_then(|h| u32::from_str_radix(h, 16).ok())
                        .and_then(char::from_u32)
                        .ok_or_else(|| format!("bad HMM line {line:?}"))?;
                    emit[s].insert(c, parse_f64(f.next())?);
                }
                _ => return Err(format!("bad HMM line {line:?}")),
            }
        }
        Ok(Jieba {
            freq,
            log_total: (total as f64).ln(),
            start,
            trans,
            emit,
        })
    }

    /// `jieba.cut(text)` (`cut_all=False, HMM=True`) as a list.
    pub fn cut(&self, text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        let mut out = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            let block = is_block_char(chars[i]);
            let mut j = i + 1;
            while j < chars.len() && is_block_char(chars[j]) == block {
                j += 1;
            }
            if block {
                self.cut_block(&chars[i..j], &mut out);
            } else {
                // `re_skip_default.split`: "\r\n" stays one word, every other
                // character (whitespace or not) is a word of its own.
                let mut k = i;
                while k < j {
                    if chars[k] == '\r' && k + 1 < j && chars[k + 1] == '\n' {
                        out.push("\r\n".to_string());
                        k += 2;
                    } else {
                        out.push(chars[k].to_string());
                        k += 1;
                    }
                }
            }
            i = j;
        }
        out
    }

    /// `FREQ.get(word)`, 0 when absent.
    fn count(&self, word: &str) -> u64 {
        self.freq.get(word).copied().unwrap_or(0)
    }

    /// `Tokenizer.get_DAG`: for each start, the ends of the dictionary words there.
    fn dag(&self, s: &[char]) -> Vec<Vec<usize>> {
        let mut dag = Vec::with_capacity(s.len());
        let mut frag = String::new();
        for k in 0..s.len() {
            let mut ends = Vec::new();
            frag.clear();
            frag.push(s[k]);
            let mut i = k;
            while let Some(&count) = self.freq.get(frag.as_str()) {
                if count > 0 {
                    ends.push(i);
                }
                i += 1;
                match s.get(i) {
                    Some(&c) => frag.push(c),
                    None => break,
                }
            }
            if ends.is_empty() {
                ends.push(k);
            }
            dag.push(ends);
        }
        dag
    }

    /// `Tokenizer.calc`: the best route's next word end from each position.
    fn route(&self, s: &[char], dag: &[Vec<usize>]) -> Vec<usize> {
        let n = s.len();
        let mut best = vec![(0.0f64, 0usize); n + 1];
        let mut word = String::new();
        for idx in (0..n).rev() {
            let mut top: Option<(f64, usize)> = None;
            for &x in &dag[idx] {
                word.clear();
                word.extend(&s[idx..=x]);
                let count = self.count(&word).max(1);
                let p = (count as f64).ln() - self.log_total + best[x + 1].0;
                // Python's max over (p, x) tuples: the higher p, then the later end.
                if top.is_none_or(|(tp, tx)| p > tp || (p == tp && x > tx)) {
                    top = Some((p, x));
                }
            }
            best[idx] = top.unwrap_or((0.0, idx));
        }
        best.into_iter().take(n).map(|(_, x)| x).collect()
    }

    /// `Tokenizer.__cut_DAG` on one `re_han_default` block.
    fn cut_block(&self, s: &[char], out: &mut Vec<String>) {
        let dag = self.dag(s);
        let route = self.route(s, &dag);
        let mut buf: Vec<char> = Vec::new();
        let mut x = 0;
        while x < s.len() {
            let y = route[x] + 1;
            if y - x == 1 {
                buf.push(s[x]);
            } else {
                self.flush(&mut buf, out);
                out.push(s[x..y].iter().collect());
            }
            x = y;
        }
        self.flush(&mut buf, out);
    }

    /// A run of single-character route words: one word, the HMM's words (not a
    /// dictionary word) or its characters (a dictionary word).
    fn flush(&self, buf: &mut Vec<char>, out: &mut Vec<String>) {
        match buf.len() {
            0 => {}
            1 => out.push(buf[0].to_string()),
            _ => {
                let word: String = buf.iter().collect();
                if self.count(&word) == 0 {
                    self.finalseg(buf, out);
                } else {
                    out.extend(buf.iter().map(|c| c.to_string()));
                }
            }
        }
        buf.clear();
    }

    /// `finalseg.cut`: Han runs through the Viterbi; the rest split by
    /// `([a-zA-Z0-9]+(?:\.\d+)?%?)`, keeping the non-empty pieces.
    fn finalseg(&self, s: &[char], out: &mut Vec<String>) {
        let mut i = 0;
        while i < s.len() {
            let mut j = i + 1;
            while j < s.len() && is_han(s[j]) == is_han(s[i]) {
                j += 1;
            }
            if is_han(s[i]) {
                self.viterbi_cut(&s[i..j], out);
            } else {
                skip_split(&s[i..j], out);
            }
            i = j;
        }
    }

    /// `finalseg.__cut`: B/M/E/S tags by `viterbi`, then words from them.
    fn viterbi_cut(&self, s: &[char], out: &mut Vec<String>) {
        let tags = self.viterbi(s);
        let (mut begin, mut next) = (0, 0);
        for (i, &tag) in tags.iter().enumerate() {
            match tag {
                B => begin = i,
                E => {
                    out.push(s[begin.min(i)..=i].iter().collect());
                    next = i + 1;
                }
                S => {
                    out.push(s[i].to_string());
                    next = i + 1;
                }
                _ => {}
            }
        }
        if next < s.len() {
            out.push(s[next..].iter().collect());
        }
    }

    /// `finalseg.viterbi` with jieba's tie-breaking (the later state letter wins).
    fn viterbi(&self, s: &[char]) -> Vec<usize> {
        let Some(&first) = s.first() else {
            return Vec::new();
        };
        let emit = |y: usize, c: char| self.emit[y].get(&c).copied().unwrap_or(MIN_FLOAT);
        let mut v = [0.0f64; 4];
        for y in 0..4 {
            v[y] = self.start[y] + emit(y, first);
        }
        // back[t][y]: the state before y at t.
        let mut back: Vec<[usize; 4]> = Vec::with_capacity(s.len());
        for &c in &s[1..] {
            let mut nv = [0.0f64; 4];
            let mut from = [0usize; 4];
            for y in 0..4 {
                let em = emit(y, c);
                let mut top: Option<(f64, usize)> = None;
                for &y0 in &PREV[y] {
                    let p = v[y0] + self.trans[y0][y] + em;
                    if top.is_none_or(|(tp, ty)| p > tp || (p == tp && y0 > ty)) {
                        top = Some((p, y0));
                    }
                }
                let (p, y0) = top.unwrap_or((MIN_FLOAT, y));
                nv[y] = p;
                from[y] = y0;
            }
            v = nv;
            back.push(from);
        }
        let mut last = if v[S] >= v[E] { S } else { E };
        let mut tags = vec![last; s.len()];
        for t in (0..back.len()).rev() {
            last = back[t][last];
            tags[t] = last;
        }
        tags
    }
}

/// `finalseg.re_skip.split(x)` with the empty pieces left out.
fn skip_split(s: &[char], out: &mut Vec<String>) {
    let mut piece = String::new();
    let mut i = 0;
    while i < s.len() {
        if !s[i].is_ascii_alphanumeric() {
            piece.push(s[i]);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < s.len() && s[j].is_ascii_alphanumeric() {
            j += 1;
        }
        // `(?:\.\d+)?`: only ASCII digits can be in a jieba block.
        if j + 1 < s.len() && s[j] == '.' && s[j + 1].is_ascii_digit() {
            j += 1;
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j < s.len() && s[j] == '%' {
            j += 1;
        }
        if !piece.is_empty() {
            out.push(std::mem::take(&mut piece));
        }
        out.push(s[i..j].iter().collect());
        i = j;
    }
    if !piece.is_empty() {
        out.push(piece);
    }
}
