//! Japanese cardinals as NeMo's `ja/taggers/cardinal.py` reads them.

const DIGITS: [&str; 10] = ["零", "一", "二", "三", "四", "五", "六", "七", "八", "九"];

/// One ASCII digit (0 → 零).
pub(super) fn digit(c: char) -> &'static str {
    DIGITS[c.to_digit(10).unwrap_or(0) as usize]
}

/// Digits read one by one ("05" → 零五), as after a decimal point.
pub(super) fn digit_by_digit(s: &str) -> String {
    s.chars().map(digit).collect()
}

/// A cardinal of one to twelve ASCII digits ("2024" → 二千二十四, "10000" → 一万,
/// "10000000" → 一千万), or `None` where NeMo's grammar has none: a leading zero
/// ("05"; "0" alone is 零), or more than twelve digits.
pub(super) fn cardinal(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 12 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b == b"0" {
        return Some("零".into());
    }
    if b[0] == b'0' {
        return None;
    }
    let mut out = String::new();
    let n = b.len();
    // Groups of four from the right: 億, 万, units.
    for (g, suffix) in [(2usize, "億"), (1, "万"), (0, "")] {
        let hi = n.saturating_sub(4 * g);
        let lo = n.saturating_sub(4 * (g + 1));
        if hi == 0 {
            continue;
        }
        let group = &b[lo..hi];
        if group.iter().all(|&d| d == b'0') {
            continue;
        }
        four(group, g > 0, &mut out);
        out.push_str(suffix);
    }
    Some(out)
}

/// Up to four digits: a 1 in the thousands reads 一千 before 万 and 億, 千 otherwise; a 1
/// in the tens or hundreds reads 十, 百.
fn four(group: &[u8], big: bool, out: &mut String) {
    let len = group.len();
    for (k, &d) in group.iter().enumerate() {
        let place = len - 1 - k;
        let d = d - b'0';
        if d == 0 {
            continue;
        }
        let unit = ["", "十", "百", "千"][place];
        if d != 1 || place == 0 || (place == 3 && big) {
            out.push_str(DIGITS[d as usize]);
        }
        out.push_str(unit);
    }
}

#[cfg(test)]
mod tests {
    use super::cardinal;

    #[test]
    fn reads_like_nemo() {
        for (n, s) in [
            ("0", "零"),
            ("1", "一"),
            ("10", "十"),
            ("11", "十一"),
            ("100", "百"),
            ("105", "百五"),
            ("1000", "千"),
            ("2024", "二千二十四"),
            ("10000", "一万"),
            ("128000", "十二万八千"),
            ("1000000", "百万"),
            ("14000000", "一千四百万"),
            ("100010000", "一億一万"),
            ("13800000000", "百三十八億"),
            ("110000000", "一億一千万"),
            ("100000000000", "一千億"),
        ] {
            assert_eq!(cardinal(n).as_deref(), Some(s), "{n}");
        }
        assert_eq!(cardinal("05"), None);
        assert_eq!(cardinal("1234567890123"), None);
    }
}
