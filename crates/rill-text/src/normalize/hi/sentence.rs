//! The sentence pass of the Hindi normaliser: words read alone or with their neighbours
//! (units, years, fractions, phone numbers and their context words, address windows).

use std::ops::Range;

use super::electronic::electronic;
use super::{
    digits, framed, measure, mixed_fraction, no_space_before, one_by_one, opens, ordinal, post,
    read_core, split, year, ABBREVIATIONS, ADDRESS_ENGLISH, ADDRESS_WORDS, CURRENCIES, LETTERS,
    PLACES, YEAR_PREFIXES, YEAR_SUFFIXES,
};

/// Spoken forms with how many words each reads.
type Pieces = Vec<(usize, String)>;

const MOBILE: &[&str] = &["नंबर", "मोबाइल", "फोन", "कॉल"];
const LANDLINE: &[&str] = &["नंबर", "मोबाइल", "फोन", "लैंडलाइन", "कॉल"];
const CREDIT: &[&str] = &["नंबर", "कार्ड", "क्रेडिट"];
const PINCODE: &[&str] = &["नंबर", "पिन", "कोड", "पिनकोड"];

fn has_digit(w: &str) -> bool {
    w.chars()
        .any(|c| c.is_ascii_digit() || ('०'..='९').contains(&c))
}

/// Runs of characters between address word boundaries (",", "।", ".").
fn chunks(w: &str) -> usize {
    w.split([',', '।', '.']).filter(|p| !p.is_empty()).count()
}

/// A word in an address window: ordinals read, digits one by one, "-" and "/" spoken,
/// Latin letters spelt, anything else set off as it is.
fn address_word(w: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut rest = w;
    while let Some(c) = rest.chars().next() {
        let digit = c.is_ascii_digit() || ('०'..='९').contains(&c);
        if digit {
            let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
            let found = (1..=end)
                .rev()
                .filter(|e| rest.is_char_boundary(*e))
                .find_map(|e| ordinal(&rest[..e]).map(|o| (e, o)));
            if let Some((e, o)) = found {
                out.push(o);
                rest = &rest[e..];
                continue;
            }
            let d = digits(&rest[..c.len_utf8()]).unwrap_or_default();
            out.push(one_by_one(&d));
        } else if c == '-' {
            out.push("हाइफ़न".to_string());
        } else if c == '/' {
            out.push("बटा".to_string());
        } else if c == ',' {
            out.push(",".to_string());
        } else if c.is_ascii_alphabetic() {
            let english = ADDRESS_ENGLISH.iter().find(|(k, _)| {
                rest.len() >= k.len()
                    && rest.is_char_boundary(k.len())
                    && rest[..1].eq_ignore_ascii_case(&k[..1])
                    && rest[1..k.len()] == k[1..]
            });
            if let Some((k, v)) = english {
                out.push((*v).to_string());
                rest = &rest[k.len()..];
                continue;
            }
            let lower = c.to_ascii_lowercase().to_string();
            let letter = LETTERS
                .iter()
                .find(|(k, _)| *k == lower)
                .map_or(lower.as_str(), |l| l.1);
            out.push(letter.to_string());
        } else {
            let end = rest
                .find(|c: char| {
                    c.is_ascii_digit()
                        || ('०'..='९').contains(&c)
                        || c.is_ascii_alphabetic()
                        || matches!(c, '-' | '/' | ',')
                })
                .unwrap_or(rest.len());
            out.push(rest[..end].to_string());
            rest = &rest[end..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
    }
    let refs: Vec<&str> = out.iter().map(String::as_str).collect();
    post(&refs)
}

/// A word alone: abbreviations, numbers, electronic forms, punctuation set off as NeMo's
/// tokens are; with its cost (a word no rule reads costs 100).
fn word_alone(w: &str) -> (String, f32) {
    let (lead, core, trail) = split(w);
    let rest = &w[lead.len()..];
    for (k, v) in ABBREVIATIONS.iter().chain([("ई.", "ईसवी")].iter()) {
        if let Some(after) = rest.strip_prefix(k) {
            if after.chars().all(super::is_punct) {
                return (framed(lead, v, after), 1.1);
            }
        }
    }
    let emphasis = w.len() > 2
        && w.starts_with('<')
        && w.ends_with('>')
        && !w[1..w.len() - 1].contains(['<', '>']);
    if core.is_empty() || emphasis {
        return (w.to_string(), 2.1);
    }
    if w.len() > 1 && w.starts_with('/') {
        if let Some(e) = electronic(w) {
            return (e, 2.3);
        }
    }
    let web = rest.contains("://") || rest.starts_with("www.") || rest.contains('@');
    let ip = core.split('.').count() == 4 && core.bytes().all(|b| b == b'.' || b.is_ascii_digit());
    if let Some(e) = web.then(|| electronic(rest)).flatten() {
        return (framed(lead, &e, ""), 2.3);
    }
    if let Some(e) = ip.then(|| electronic(core)).flatten() {
        return (framed(lead, &e, trail), 2.3);
    }
    if let Some((spoken, cost)) = read_core(core) {
        return (framed(lead, &spoken, trail), cost);
    }
    (framed(lead, core, trail), 100.0)
}

/// A landline number in one string with an optional separator after the area code:
/// the digits after a leading zero.
pub(super) fn landline(s: &str) -> Option<String> {
    let s = s.strip_prefix(['0', '०']).unwrap_or(s);
    let (std, number) = match s.split_once(['-', '.']) {
        Some((a, b)) => (digits(a)?, digits(b)?),
        None => {
            let d = digits(s)?;
            let cut = (2..=7)
                .find(|n| d.len() == 10 && matches!(d.as_bytes()[*n], b'2' | b'3' | b'4' | b'6'))?;
            (d[..cut].to_string(), d[cut..].to_string())
        }
    };
    let ok = (2..=7).contains(&std.len())
        && std.len() + number.len() == 10
        && matches!(number.as_bytes().first(), Some(b'2' | b'3' | b'4' | b'6'));
    ok.then(|| format!("{std}{number}"))
}

/// A phone number, card number or pin code at the start of `w`, without its context
/// words: (words read, spoken form, the weight NeMo gives its kind).
fn phone_number(w: &[&str], keys: Option<&[&str]>) -> Option<(usize, String, f32)> {
    let (lead, core, trail) = split(w[0]);
    let next = w.get(1).map(|x| split(x)).filter(|(l, _, _)| l.is_empty());
    let spoken = |d: &str| format!("शून्य {}", one_by_one(d));
    // "+91 9876543210"
    if let Some(cc) = core
        .strip_prefix('+')
        .and_then(digits)
        .filter(|_| lead.is_empty())
    {
        let (rest, used, trail) = match next {
            Some((_, n, t)) if cc.len() <= 3 && trail.is_empty() && digits(n).is_some() => {
                (digits(n)?, 2, t)
            }
            _ => (String::new(), 1, trail),
        };
        let all = format!("{cc}{rest}");
        let mobile =
            (1..=3).any(|n| all.len() >= n + 10 && matches!(all.as_bytes()[n], b'6'..=b'9'));
        return mobile.then(|| {
            (
                used,
                framed("", &format!("प्लस {}", one_by_one(&all)), trail),
                0.7,
            )
        });
    }
    // "011 23456789", "(011) 23456789"
    if let Some((_, n, t)) = next {
        let area = match (lead, trail) {
            ("(", ")") | ("", "") => Some(core),
            _ => None,
        };
        if let Some(d) = area.and_then(|a| landline(&format!("{a}-{n}"))) {
            return Some((2, framed("", &spoken(&d), t), 0.8));
        }
    }
    if !lead.is_empty() {
        return None;
    }
    if let Some(d) = landline(core).filter(|_| core.contains(['-', '.'])) {
        return Some((1, framed("", &spoken(&d), trail), 0.8));
    }
    let keys = keys?;
    // the digits up to a mark: the rest read on its own ("1800-180-1551")
    let end = core
        .find(|c: char| !super::is_digit(c))
        .unwrap_or(core.len());
    let (core, rest) = core.split_at(end);
    let rest = match rest {
        "" => String::new(),
        r if r.starts_with(super::is_punct) => read_core(r).map_or_else(|| r.to_string(), |r| r.0),
        _ => return None,
    };
    let trail = &*format!("{rest}{trail}");
    let d = digits(core)?;
    let body = d.strip_prefix('0').unwrap_or(&d);
    let has = |set: &[&str]| keys.iter().any(|k| set.contains(k));
    if body.len() >= 10 && matches!(body.as_bytes()[0], b'6'..=b'9') && has(MOBILE) {
        return Some((1, framed("", &spoken(body), trail), 0.7));
    }
    if let Some(l) = landline(&d).filter(|_| has(LANDLINE)) {
        return Some((1, framed("", &spoken(&l), trail), 0.8));
    }
    let card = d.len() >= 4 && has(CREDIT);
    let pin = d.len() >= 6 && has(PINCODE);
    (card || pin).then(|| (1, framed("", &one_by_one(&d), trail), 0.9))
}

/// Phone numbers with their context words: a context word then at most five digitless
/// words then the number, or the number then at most five words then a context word.
fn phone(w: &[&str]) -> Option<(Pieces, f32)> {
    if let Some((used, spoken, cost)) = phone_number(w, None) {
        return Some((vec![(used, spoken)], cost));
    }
    let key = |x: &str| {
        [MOBILE, LANDLINE, CREDIT, PINCODE]
            .iter()
            .any(|s| s.contains(&x))
    };
    if key(w[0]) {
        let n = (1..w.len().min(7)).find(|j| has_digit(w[*j]))?;
        let (used, spoken, cost) = phone_number(&w[n..], Some(&[w[0]]))?;
        let mut pieces: Pieces = w[..n].iter().map(|x| (1, x.to_string())).collect();
        pieces.push((used, spoken));
        return Some((pieces, cost));
    }
    if !split(w[0]).2.is_empty() {
        return None;
    }
    let k = (1..w.len().min(7))
        .take_while(|j| !has_digit(w[*j]))
        .find(|j| key(split(w[*j]).1))?;
    let (_, kc, kt) = split(w[k]);
    let (used, spoken, cost) = phone_number(&w[..1], Some(&[kc]))?;
    let mut pieces: Pieces = vec![(1, spoken)];
    pieces.extend(w[1..k].iter().map(|x| (1, x.to_string())));
    pieces.push((1, framed("", kc, kt)));
    (used == 1).then_some((pieces, cost))
}

/// How many words from `ws[at]` make a state or city name (one or two words).
fn place(ws: &[&str], at: usize) -> Option<usize> {
    let one = split(ws.get(at)?).1;
    if PLACES.contains(&one) {
        return Some(1);
    }
    let two = format!("{} {}", ws.get(at)?, split(ws.get(at + 1)?).1);
    PLACES.contains(&two.as_str()).then_some(2)
}

/// NeMo's short addresses: at most five words ending in a state or city, after an
/// optional house number and before an optional pin code, which are read digit by digit
/// ("12 गांधी मार्ग, दिल्ली 110001").
fn short_address(ws: &[&str]) -> Option<Pieces> {
    let mut out = Vec::new();
    let (lead, core, trail) = split(ws[0]);
    if let Some(d) = digits(core)
        .filter(|d| lead.is_empty() && d.len() <= 4 && (trail.is_empty() || trail == ","))
    {
        out.push(one_by_one(&d) + trail);
    }
    let start = out.len();
    let mut k = start;
    while k < ws.len() {
        if let Some(n) = place(ws, k) {
            out.extend(ws[k..k + n].iter().map(|w| w.to_string()));
            k += n;
            let pin = ws
                .get(k)
                .map(|w| split(w))
                .filter(|(l, c, _)| l.is_empty() && c.chars().count() == 6)
                .filter(|_| split(ws[k - 1]).2.is_empty());
            if let Some((p, t)) = pin.and_then(|(_, c, t)| Some((digits(c)?, t))) {
                out.push(framed("", &one_by_one(&p), t));
            }
            return Some(out.into_iter().map(|x| (1, x)).collect());
        }
        let w = ws[k].strip_suffix(',').unwrap_or(ws[k]);
        if k - start == 5 || w.is_empty() || w.contains(['.', '।', ',']) || has_digit(w) {
            return None;
        }
        out.push(ws[k].to_string());
        k += 1;
    }
    None
}

/// The multi-word rules at the start of `w`: (words read, spoken form).
fn rule(w: &[&str]) -> Option<(usize, String)> {
    let next = w.get(1).map(|x| split(x));
    if w[0] == "ई." && next.is_some_and(|(l, c, _)| l.is_empty() && c == "पू") {
        let t = &w[1]["पू".len()..];
        return Some((2, framed("", "ईसा पूर्व", t.strip_prefix('.').unwrap_or(t))));
    }
    let (lead, core, trail) = split(w[0]);
    let (_, ncore, ntrail) = next.filter(|(l, _, _)| l.is_empty())?;
    if YEAR_PREFIXES.contains(&w[0]) {
        let y = year(ncore)?;
        return Some((2, framed("", &format!("{} {y}", w[0]), ntrail)));
    }
    if !trail.is_empty() {
        return None;
    }
    if YEAR_SUFFIXES.contains(&ncore) {
        if let Some(y) = year(core) {
            return Some((2, framed(lead, &format!("{y} {ncore}"), ntrail)));
        }
    }
    if let Some(m) = measure(core, ncore) {
        return Some((2, framed(lead, &m, ntrail)));
    }
    if ncore.contains('/') {
        if let Some(f) = mixed_fraction(core, ncore) {
            return Some((2, framed(lead, &f, ntrail)));
        }
    }
    let third = w
        .get(2)
        .map(|x| split(x))
        .filter(|(l, _, _)| l.is_empty())?;
    if w[1] == "/" {
        let f = super::fraction(&format!("{core}/{}", third.1))?;
        return Some((3, framed(lead, &f, third.2)));
    }
    None
}

/// How many runs of marks a word's core has.
fn marks_in(core: &str) -> usize {
    core.char_indices()
        .filter(|(i, c)| super::is_punct(*c) && !core[..*i].ends_with(super::is_punct))
        .count()
}

/// The longest stretch NeMo's address windows look at, in words.
const WINDOW: usize = 40;

/// Every reading of the words at the start of `w`: (words read, spoken form, cost). The
/// costs follow NeMo's weights: a word no rule reads costs 100, so the cheapest path reads
/// as many words as it can inside address windows and multi-word forms.
fn options(
    w: &[&str],
    keyword: &[bool],
    head: &[Option<usize>],
    chunk: &[usize],
) -> Vec<(Pieces, f32, bool)> {
    let mut out = Vec::new();
    // NeMo keeps the words of these in one quoted field: a '"' among them breaks its
    // verbaliser
    let quoted = |used: usize| w[..used].iter().any(|x| x.contains('"'));
    let (alone, cost) = word_alone(w[0]);
    out.push((vec![(1, alone)], cost, false));
    if let Some((used, spoken)) = rule(w) {
        out.push((vec![(used, spoken)], 1.1, false));
    }
    // "01/01/2025 से": the number after the last mark read with the next word
    let (lead, core, trail) = split(w[0]);
    let last_mark = core.char_indices().rev().find(|(_, c)| super::is_punct(*c));
    if let Some(cut) = last_mark
        .map(|(i, c)| i + c.len_utf8())
        .filter(|_| trail.is_empty())
    {
        let mark = core[..cut].trim_end_matches(super::is_punct);
        let (head, marks, tail) = (mark, &core[mark.len()..cut], &core[cut..]);
        let mut rest: Vec<&str> = vec![tail];
        rest.extend(&w[1..]);
        let head = read_core(head)
            .map(|r| r.0)
            .or_else(|| head.is_empty().then(String::new));
        if let (Some(head), Some((used, spoken))) = (head, rule(&rest).filter(|r| r.0 > 1)) {
            let cost = 2.2 + 3.2 * marks_in(core) as f32;
            out.push((
                vec![(used, post(&[lead, &head, marks, &spoken]))],
                cost,
                false,
            ));
        }
    }
    if let Some((pieces, c)) = phone(w) {
        let used: usize = pieces.iter().map(|p| p.0).sum();
        out.push((pieces, 1.1 + c, used > 1 && quoted(used)));
    }
    if let Some(pieces) = short_address(w) {
        let used = pieces.len();
        out.push((pieces, 2.1, quoted(used)));
    }
    // address windows: five chunks either side of an address word
    let last = w.len().min(WINDOW);
    let windows = (0..last).filter(|k| keyword[*k]).map(|k| (k, None));
    // an address word after a mark starts a window ("पास-पास 5 घर")
    let (_, core, trail) = split(w[0]);
    let inner = core
        .char_indices()
        .filter(|(i, c)| super::is_punct(*c) && *i > 0)
        .map(|(i, c)| i + c.len_utf8())
        .find(|i| {
            let kw = &w[0][i + (w[0].len() - core.len() - trail.len())..];
            ADDRESS_WORDS.contains(&kw.trim_end_matches([',', '।', '.']))
        });
    let inner = inner.map(|i| {
        let at = i + (w[0].len() - core.len() - trail.len());
        let head = w[0][..at].trim_end_matches(super::is_punct);
        let (spoken, cost) = word_alone(head);
        let marks = &w[0][head.len()..at];
        (
            0,
            Some((
                post(&[&spoken, marks, &address_word(&w[0][at..])]),
                cost + 2.1,
            )),
        )
    });
    // a window can end at an address word followed by a mark ("सेक्टर-62,")
    let ending = (0..last).filter_map(|k| {
        let at = head[k]?;
        let (kw, rest) = w[k].split_at(at);
        let marks = &rest[..rest.len() - rest.trim_start_matches(super::is_punct).len()];
        let (spoken, cost) = word_alone(&rest[marks.len()..]);
        let said = post(&[&address_word(kw), marks, &spoken]);
        Some((k, Some((said, cost + 2.1)), true))
    });
    let windows = windows.map(|(k, h)| (k, h, false));
    let inner = inner.map(|(k, h)| (k, h, false));
    for (k, first, ends) in windows.chain(inner).chain(ending) {
        if chunk[..k].iter().sum::<usize>() > 5 {
            continue;
        }
        let mut after = 0;
        for j in k..last {
            if j > k {
                after += chunk[j];
            }
            if after > 5 {
                break;
            }
            if ends && j > k {
                break;
            }
            let mut spoken: Vec<String> = w[..=j].iter().map(|x| address_word(x)).collect();
            let mut extra = 0.0;
            if let Some((said, cost)) = &first {
                spoken[k] = said.clone();
                extra = *cost;
            }
            let plain = w[..=j].iter().filter(|x| !has_digit(x)).count() as f32;
            let pieces = spoken.into_iter().map(|x| (1, x)).collect();
            out.push((pieces, 2.15 + 0.1 * plain + extra, quoted(j + 1)));
        }
    }
    out
}

pub(super) fn normalize(text: &str, changes: &mut Vec<(Range<usize>, String)>) -> String {
    let ws: Vec<&str> = text.split_whitespace().collect();
    // NeMo tags "-₹5" as negative money its verbalizer cannot say: the whole text comes
    // back as written
    let negative_money = |w: &&str| {
        let mut c = w
            .trim_start_matches(|c| c != '-' && super::is_punct(c))
            .chars();
        c.next() == Some('-')
            && c.next()
                .is_some_and(|m| CURRENCIES.iter().any(|(k, _, _)| *k == m))
            && c.next().is_some_and(super::is_digit)
    };
    if ws.iter().any(negative_money) {
        return ws.join(" ");
    }
    let at = |w: &str| w.as_ptr() as usize - text.as_ptr() as usize;
    let keyword: Vec<bool> = ws
        .iter()
        .map(|w| ADDRESS_WORDS.contains(&w.trim_end_matches([',', '।', '.'])))
        .collect();
    let chunk: Vec<usize> = ws.iter().map(|w| chunks(w)).collect();
    // an address word, a mark and more: where the address word ends
    let head: Vec<Option<usize>> = ws
        .iter()
        .map(|w| {
            let at = w.find(super::is_punct)?;
            let rest = w[at..].trim_start_matches(super::is_punct);
            (!rest.is_empty() && ADDRESS_WORDS.contains(&&w[..at])).then_some(at)
        })
        .collect();
    // cheapest reading of the words from i on, computed from the end (no recursion)
    let n = ws.len();
    let mut best: Vec<(f32, Pieces, bool)> = vec![(0.0, Vec::new(), false); n + 1];
    for i in (0..n).rev() {
        let mut pick = (f32::INFINITY, Vec::new(), false);
        for (pieces, cost, fragile) in options(&ws[i..], &keyword[i..], &head[i..], &chunk[i..]) {
            let used: usize = pieces.iter().map(|p| p.0).sum();
            let total = cost + best[i + used].0;
            if total < pick.0 {
                pick = (total, pieces, fragile);
            }
        }
        best[i] = pick;
    }
    let mut i = 0;
    while i < n {
        if best[i].2 {
            return ws.join(" ");
        }
        i += best[i].1.iter().map(|p| p.0).sum::<usize>().max(1);
    }
    let mut segs: Vec<(Range<usize>, String)> = Vec::new();
    let mut i = 0;
    while i < n {
        let pieces = std::mem::take(&mut best[i].1);
        let start = i;
        for (used, spoken) in pieces {
            let last = ws[i + used - 1];
            let range = at(ws[i])..at(last) + last.len();
            match segs.last_mut() {
                Some(prev) if spoken.starts_with(no_space_before) || prev.1.ends_with(opens) => {
                    prev.0.end = range.end;
                    prev.1.push_str(&spoken);
                }
                _ => segs.push((range, spoken)),
            }
            i += used;
        }
        if i == start {
            i += 1;
        }
    }
    let mut out: Vec<String> = Vec::with_capacity(segs.len());
    for (range, spoken) in segs {
        if text[range.clone()] != spoken {
            changes.push((range, spoken.clone()));
        }
        out.push(spoken);
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::super::WORDS;
    use super::*;

    #[test]
    fn words() {
        assert_eq!(WORDS[99], "निन्यानबे");
        let mut c = Vec::new();
        assert_eq!(normalize("मेरे पास 25 kg", &mut c), "मेरे पास दो पाँच के जी");
    }
}
