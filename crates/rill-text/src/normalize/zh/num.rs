//! Numbers for the Mandarin normaliser, as NeMo's zh `CardinalFst` writes them
//! ("二十五", "一百一十", "两千零五", "一万两千三百四十五", "二百五十万"), and the small
//! tables of its date and time grammars.

const DIGITS: [&str; 10] = ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"];

/// One digit read alone ("0" → 零).
pub(super) fn digit(b: u8) -> &'static str {
    DIGITS[usize::from(b - b'0')]
}

/// `digit_alt.tsv`: the head of a thousand, ten thousand or hundred million (2 → 两).
fn digit_alt(b: u8) -> &'static str {
    if b == b'2' {
        "两"
    } else {
        digit(b)
    }
}

/// 1..=99 written in one or two digits without a leading zero; `head` reads 10..=19 as
/// "十…" (a number's head), otherwise "一十…" (inside a larger number).
fn all(d: &[u8], head: bool) -> Option<String> {
    match d {
        [b'1'..=b'9'] => Some(digit(d[0]).to_string()),
        [b'1', u] => Some(format!(
            "{}十{}",
            if head { "" } else { "一" },
            if *u == b'0' { "" } else { digit(*u) }
        )),
        [t @ b'2'..=b'9', u] => Some(format!(
            "{}十{}",
            digit(*t),
            if *u == b'0' { "" } else { digit(*u) }
        )),
        _ => None,
    }
}

/// Digits after a head: all zeros vanish; otherwise leading zeros become one 零 before
/// the rest read with `full` (which requires exactly `d.len()` digits) or, when at most
/// two digits remain, with [`all`].
fn rest(d: &[u8], full: impl Fn(&[u8]) -> Option<String>) -> Option<String> {
    let zeros = d.iter().take_while(|&&b| b == b'0').count();
    if zeros == d.len() {
        return Some(String::new());
    }
    if zeros == 0 {
        return full(d);
    }
    let tail = &d[zeros..];
    if tail.len() <= 2 {
        return all(tail, false).map(|s| format!("零{s}"));
    }
    sub(tail).map(|s| format!("零{s}"))
}

/// A group of 3..=8 digits with a non-zero head, read inside a larger number.
fn sub(d: &[u8]) -> Option<String> {
    match d.len() {
        3 => hundred(d),
        4 => thousand(d),
        5..=8 => wan(d),
        _ => None,
    }
}

fn hundred(d: &[u8]) -> Option<String> {
    if d.len() != 3 || d[0] == b'0' {
        return None;
    }
    let tail = &d[1..];
    let rest = if tail == b"00" {
        String::new()
    } else if tail[0] == b'0' {
        format!("零{}", all(&tail[1..], false)?)
    } else {
        all(tail, false)?
    };
    Some(format!("{}百{rest}", digit(d[0])))
}

fn thousand(d: &[u8]) -> Option<String> {
    if d.len() != 4 || d[0] == b'0' {
        return None;
    }
    let r = rest(&d[1..], hundred)?;
    Some(format!("{}千{r}", digit_alt(d[0])))
}

/// 5..=8 digits: the head before 万 (one digit with 两, two digits with 十…, three or
/// four digits), then four digits.
fn wan(d: &[u8]) -> Option<String> {
    if !(5..=8).contains(&d.len()) || d[0] == b'0' {
        return None;
    }
    let (h, t) = d.split_at(d.len() - 4);
    let head = match h.len() {
        1 => digit_alt(h[0]).to_string(),
        2 => all(h, true)?,
        3 => hundred(h)?,
        _ => thousand(h)?,
    };
    Some(format!("{head}万{}", rest(t, thousand)?))
}

/// 9..=12 digits: the head before 亿, then eight digits.
fn yi(d: &[u8]) -> Option<String> {
    let (h, t) = d.split_at(d.len() - 8);
    let head = match h.len() {
        1 => digit_alt(h[0]).to_string(),
        2 => all(h, true)?,
        3 => hundred(h)?,
        _ => thousand(h)?,
    };
    let tail = if t[0] == b'0' {
        rest(t, |_| None)?
    } else {
        // Eight digits without a leading zero: a four-digit head before 万.
        wan(t)?
    };
    Some(format!("{head}亿{tail}"))
}

/// A cardinal as NeMo reads it: "0", or 1..=12 digits without a leading zero. `None`
/// for anything else (longer numbers are read as several).
pub(super) fn cardinal(s: &str) -> Option<String> {
    let d = s.as_bytes();
    if d == b"0" {
        return Some("零".to_string());
    }
    if d.is_empty() || d.len() > 12 || d[0] == b'0' || !d.iter().all(u8::is_ascii_digit) {
        return None;
    }
    match d.len() {
        1 | 2 => all(d, true),
        3 => hundred(d),
        4 => thousand(d),
        5..=8 => wan(d),
        _ => yi(d),
    }
}

/// Digits read one by one ("2024" → 二零二四).
pub(super) fn digit_by_digit(s: &str) -> String {
    s.bytes().map(digit).collect()
}

/// 0..=60 as the time and date tables write them ("10" → 十, "21" → 二十一).
fn small(n: u32) -> String {
    match n {
        0..=9 => DIGITS[n as usize].to_string(),
        10 => "十".to_string(),
        11..=19 => format!("十{}", DIGITS[(n - 10) as usize]),
        _ => format!(
            "{}十{}",
            DIGITS[(n / 10) as usize],
            if n.is_multiple_of(10) {
                ""
            } else {
                DIGITS[(n % 10) as usize]
            }
        ),
    }
}

/// A table key: 1..=`max` without a leading zero, "01".."09", and "0"/"00" when `zero`.
fn table(s: &str, max: u32, zero: bool) -> Option<u32> {
    let b = s.as_bytes();
    let n = match b {
        [a] if a.is_ascii_digit() => u32::from(a - b'0'),
        [a, c] if a.is_ascii_digit() && c.is_ascii_digit() => {
            if *a == b'0' && *c == b'0' {
                0
            } else {
                u32::from(a - b'0') * 10 + u32::from(c - b'0')
            }
        }
        _ => return None,
    };
    if n > max || (n == 0 && !zero) {
        return None;
    }
    Some(n)
}

/// `date/months.tsv`.
pub(super) fn month(s: &str) -> Option<String> {
    table(s, 12, false).map(small)
}

/// `date/day.tsv`.
pub(super) fn day(s: &str) -> Option<String> {
    table(s, 31, false).map(small)
}

/// `time/hour.tsv`: 0..=24, 2 → 两.
pub(super) fn hour(s: &str) -> Option<String> {
    table(s, 24, true).map(|n| if n == 2 { "两".to_string() } else { small(n) })
}

/// `time/minute.tsv` and `second.tsv`: 0..=60, with the tables' slip 32 → 三十三.
pub(super) fn minute(s: &str) -> Option<String> {
    table(s, 60, true).map(|n| if n == 32 { small(33) } else { small(n) })
}
