//! Times and dates as NeMo's Vietnamese taggers read them at one position: (length in
//! bytes, spoken form), for `vi.rs`.

use super::forms::run_digits;
use super::tables::{cardinal, day, is_cardinal, month, ERAS, ZONES};
/// 1..=2 digits up to `max`, "07" as 7: (length, value).
fn clock_number(s: &str, max: u32) -> Vec<(usize, u32)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    if b.first().is_some_and(u8::is_ascii_digit) {
        out.push((1, u32::from(b[0] - b'0')));
        if b.get(1).is_some_and(u8::is_ascii_digit) {
            out.push((2, u32::from(b[0] - b'0') * 10 + u32::from(b[1] - b'0')));
        }
    }
    out.retain(|&(_, v)| v <= max);
    out
}

fn zone_at(s: &str) -> Option<(usize, &'static str)> {
    ZONES
        .iter()
        .filter(|z| s.starts_with(*z) || s.starts_with(&z.to_ascii_lowercase()))
        .max_by_key(|z| z.len())
        .map(|z| (z.len(), *z))
}

/// Spoken time from hours, minutes, seconds; " không phút" / " không giây" dropped as
/// NeMo's verbalizer does.
fn time_words(h: Option<u32>, m: Option<u32>, sec: Option<u32>, zone: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(h) = h {
        parts.push(format!("{} giờ", cardinal(&h.to_string())));
    }
    if let Some(m) = m {
        parts.push(format!("{} phút", cardinal(&m.to_string())));
    }
    if let Some(s) = sec {
        parts.push(format!("{} giây", cardinal(&s.to_string())));
    }
    let mut t = parts
        .join(" ")
        .replace(" không phút", "")
        .replace(" không giây", "");
    if let Some(z) = zone {
        t = format!("{t} {z}");
    }
    t
}

pub(super) fn time_at(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let with_zone =
        |out: &mut Vec<(usize, String)>, end: usize, spaced: bool, t: [Option<u32>; 3]| {
            out.push((end, time_words(t[0], t[1], t[2], None)));
            let sp = usize::from(spaced && s[end..].starts_with(' '));
            if spaced && sp == 0 {
                return;
            }
            if let Some((zl, z)) = zone_at(&s[end + sp..]) {
                out.push((end + sp + zl, time_words(t[0], t[1], t[2], Some(z))));
            }
        };
    for (hl, h) in clock_number(s, 24) {
        let r = &s[hl..];
        if let Some(r2) = r.strip_prefix(':') {
            for (ml, m) in clock_number(r2, 59) {
                let e = hl + 1 + ml;
                with_zone(&mut out, e, true, [Some(h), Some(m), None]);
                if let Some(r3) = s[e..].strip_prefix(':') {
                    for (sl, sec) in clock_number(r3, 59) {
                        with_zone(&mut out, e + 1 + sl, true, [Some(h), Some(m), Some(sec)]);
                    }
                }
            }
        }
        if r.starts_with(['h', 'g']) {
            with_zone(&mut out, hl + 1, true, [Some(h), None, None]);
            if let Some((zl, z)) = zone_at(&r[1..]) {
                out.push((hl + 1 + zl, time_words(Some(h), None, None, Some(z))));
            }
            for (ml, m) in clock_number(&r[1..], 59) {
                with_zone(&mut out, hl + 1 + ml, false, [Some(h), Some(m), None]);
            }
        }
        if let Some(r2) = r.strip_prefix(" giờ") {
            let e = hl + " giờ".len();
            with_zone(&mut out, e, true, [Some(h), None, None]);
            if let Some(r3) = r2.strip_prefix(' ') {
                for (ml, m) in clock_number(r3, 59) {
                    if let Some(r4) = r3[ml..].strip_prefix(" phút") {
                        let e2 = e + 1 + ml + " phút".len();
                        with_zone(&mut out, e2, true, [Some(h), Some(m), None]);
                        if let Some(r5) = r4.strip_prefix(' ') {
                            for (sl, sec) in clock_number(r5, 59) {
                                if r5[sl..].starts_with(" giây") {
                                    let e3 = e2 + 1 + sl + " giây".len();
                                    with_zone(&mut out, e3, true, [Some(h), Some(m), Some(sec)]);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for (ml, m) in clock_number(s, 59) {
        let r = &s[ml..];
        if let Some(r2) = r.strip_prefix('p') {
            out.push((ml + 1, time_words(None, Some(m), None, None)));
            for (sl, sec) in clock_number(r2, 59) {
                if r2[sl..].starts_with('s') {
                    out.push((ml + 2 + sl, time_words(None, Some(m), Some(sec), None)));
                }
            }
        }
        if r.starts_with('s') {
            out.push((ml + 1, time_words(None, None, Some(m), None)));
        }
        if r.starts_with(" giây") {
            out.push((ml + " giây".len(), time_words(None, None, Some(m), None)));
        }
        if let Some(r2) = r.strip_prefix(" phút") {
            let e = ml + " phút".len();
            out.push((e, time_words(None, Some(m), None, None)));
            if let Some(r3) = r2.strip_prefix(' ') {
                for (sl, sec) in clock_number(r3, 59) {
                    if r3[sl..].starts_with(" giây") {
                        let e2 = e + 1 + sl + " giây".len();
                        out.push((e2, time_words(None, Some(m), Some(sec), None)));
                    }
                }
            }
        }
    }
    out
}

/// 1..=2 digits read by `table` (days or months): (length, spoken).
fn day_month(s: &str, table: fn(&str) -> Option<String>) -> Vec<(usize, String)> {
    let r = run_digits(s).min(2);
    (1..=r)
        .filter_map(|l| table(&s[..l]).map(|w| (l, w)))
        .collect()
}

/// Years: 1..=4 digits read as a cardinal.
fn years(s: &str) -> Vec<(usize, String)> {
    let r = run_digits(s).min(4);
    (1..=r)
        .filter(|&l| is_cardinal(&s[..l]))
        .map(|l| (l, cardinal(&s[..l])))
        .collect()
}

fn sep(s: &str) -> bool {
    s.starts_with(['/', '-', '.'])
}

/// D/M/Y, read "ngày D tháng M năm Y".
fn day_month_year(s: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (dl, d) in day_month(s, day) {
        if !sep(&s[dl..]) {
            continue;
        }
        for (ml, m) in day_month(&s[dl + 1..], month) {
            let e = dl + 1 + ml;
            if !sep(&s[e..]) {
                continue;
            }
            for (yl, y) in years(&s[e + 1..]) {
                out.push((e + 1 + yl, format!("ngày {d} tháng {m} năm {y}")));
            }
        }
    }
    out
}

/// Numeric dates: D/M/Y and the ISO order Y-M-D, both read "ngày D tháng M năm Y".
fn numeric_dates(s: &str) -> Vec<(usize, String)> {
    let mut out = day_month_year(s);
    for (yl, y) in years(s) {
        if !sep(&s[yl..]) {
            continue;
        }
        for (ml, m) in day_month(&s[yl + 1..], month) {
            let e = yl + 1 + ml;
            if !sep(&s[e..]) {
                continue;
            }
            for (dl, d) in day_month(&s[e + 1..], day) {
                out.push((e + 1 + dl, format!("ngày {d} tháng {m} năm {y}")));
            }
        }
    }
    out
}

pub(super) fn date_at(s: &str) -> Vec<(usize, String)> {
    let mut out = numeric_dates(s);
    if let Some(r) = s.strip_prefix("ngày ") {
        let o = "ngày ".len();
        out.extend(day_month_year(r).into_iter().map(|(l, w)| (o + l, w)));
        for (dl, d) in day_month(r, day) {
            let rest = &r[dl..];
            if sep(rest) {
                for (ml, m) in day_month(&rest[1..], month) {
                    out.push((o + dl + 1 + ml, format!("ngày {d} tháng {m}")));
                }
            }
            if let Some(r2) = rest.strip_prefix(" tháng ") {
                let e = o + dl + " tháng ".len();
                for (ml, m) in day_month(r2, month) {
                    out.push((e + ml, format!("ngày {d} tháng {m}")));
                    if let Some(r3) = r2[ml..].strip_prefix(" năm ") {
                        for (yl, y) in years(r3) {
                            let end = e + ml + " năm ".len() + yl;
                            out.push((end, format!("ngày {d} tháng {m} năm {y}")));
                        }
                    }
                }
            }
        }
    }
    if let Some(r) = s.strip_prefix("tháng ") {
        let o = "tháng ".len();
        for (ml, m) in day_month(r, month) {
            let rest = &r[ml..];
            if sep(rest) || rest.starts_with(' ') {
                for (yl, y) in years(&rest[1..]) {
                    out.push((o + ml + 1 + yl, format!("tháng {m} năm {y}")));
                }
            }
        }
    }
    for (prefix, spoken) in [("năm ", "năm"), ("năm thứ ", "năm thứ")] {
        let Some(r) = s.strip_prefix(prefix) else {
            continue;
        };
        for (yl, y) in years(r) {
            if prefix == "năm " {
                out.push((prefix.len() + yl, format!("năm {y}")));
            }
            if let Some(r2) = r[yl..].strip_prefix(' ') {
                for (era, e) in ERAS {
                    if r2.starts_with(era) {
                        let end = prefix.len() + yl + 1 + era.len();
                        out.push((end, format!("{spoken} {y} {e}")));
                    }
                }
            }
        }
    }
    out
}
