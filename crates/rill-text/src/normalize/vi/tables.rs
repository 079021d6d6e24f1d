//! Vietnamese number words and the tables of NeMo's Vietnamese grammars (units, currencies,
//! per-unit suffixes, time zones, Roman numeral key words), for `vi.rs`.

use crate::normalize::scan::{group_value, is_digits};

const DIGITS: [&str; 10] = [
    "không", "một", "hai", "ba", "bốn", "năm", "sáu", "bảy", "tám", "chín",
];

/// A digit word ("không", "một", …, "chín").
pub(super) fn digit(d: u8) -> &'static str {
    DIGITS[usize::from(d - b'0')]
}

/// Digits read one by one ("303" → "ba không ba").
pub(super) fn digit_words(d: &str) -> String {
    d.bytes().map(digit).collect::<Vec<_>>().join(" ")
}

/// 10..=99: "mười", "mười lăm", "hai mươi", "hai mươi mốt", "hai mươi tư", "ba mươi lăm".
fn two(n: u32) -> String {
    let (t, u) = (n / 10, n % 10);
    if t == 1 {
        return match u {
            0 => "mười".to_string(),
            5 => "mười lăm".to_string(),
            u => format!("mười {}", DIGITS[u as usize]),
        };
    }
    let ties = format!("{} mươi", DIGITS[t as usize]);
    match u {
        0 => ties,
        1 => format!("{ties} mốt"),
        4 => format!("{ties} tư"),
        5 => format!("{ties} lăm"),
        u => format!("{ties} {}", DIGITS[u as usize]),
    }
}

/// A group of up to three digits as NeMo reads it: "X00" → "X trăm", "X0Y" → "X trăm linh
/// Y", "0YZ" → two digits, "00Z" → one digit ("linh Z" when `linh`, as after a magnitude).
fn group(d: &[u8], linh: bool) -> String {
    let v = group_value(d);
    let (h, rest) = (v / 100, v % 100);
    let low = match rest {
        0 => String::new(),
        1..=9 if h > 0 || linh => format!("linh {}", DIGITS[rest as usize]),
        1..=9 => DIGITS[rest as usize].to_string(),
        r => two(r),
    };
    match (h, low.is_empty()) {
        (0, _) => low,
        (h, true) => format!("{} trăm", DIGITS[h as usize]),
        (h, false) => format!("{} trăm {low}", DIGITS[h as usize]),
    }
}

/// Whether NeMo's cardinal grammar reads these digits (1..=21 of them): a lone "0", or a
/// leading group that is not zero ("05" and "000" are not numbers; "087" is).
pub(super) fn is_cardinal(d: &str) -> bool {
    if !is_digits(d) || d.len() > 21 {
        return false;
    }
    if d == "0" {
        return true;
    }
    let b = d.as_bytes();
    let lead = match b.len() % 3 {
        0 => 3,
        r => r,
    };
    let lead = if b.len() > 12 {
        // front part of the "X tỷ + nine digits" reading
        let front = b.len() - 9;
        match front % 3 {
            0 => 3,
            r => r,
        }
    } else {
        lead
    };
    match lead {
        3 => &b[..3] != b"000",
        _ => b[0] != b'0',
    }
}

const MAGNITUDES: [&str; 4] = ["", "nghìn", "triệu", "tỷ"];

/// Up to 12 digits by groups of three with "nghìn", "triệu", "tỷ".
fn upto12(b: &[u8]) -> String {
    let first = match b.len() % 3 {
        0 => 3,
        r => r,
    };
    let mut chunks = vec![&b[..first]];
    chunks.extend(b[first..].chunks(3));
    let n = chunks.len();
    let mut words: Vec<String> = Vec::new();
    for (i, c) in chunks.iter().enumerate() {
        if group_value(c) == 0 {
            continue;
        }
        let k = n - 1 - i;
        let g = group(c, i > 0 && k == 0);
        words.push(if k == 0 {
            g
        } else {
            format!("{g} {}", MAGNITUDES[k])
        });
    }
    words.join(" ")
}

/// A cardinal from digits NeMo reads (see [`is_cardinal`]): "25" → "hai mươi lăm", "105" →
/// "một trăm linh năm", "1005" → "một nghìn linh năm"; 13..=21 digits as "… tỷ" and the
/// last nine digits.
pub(super) fn cardinal(d: &str) -> String {
    if d == "0" {
        return "không".to_string();
    }
    let b = d.as_bytes();
    if b.len() <= 12 {
        return upto12(b);
    }
    let (front, back) = b.split_at(b.len() - 9);
    let back = if back.iter().all(|&c| c == b'0') {
        String::new()
    } else {
        format!(" {}", upto12(back))
    };
    format!("{} tỷ{back}", upto12(front))
}

/// Day of the month (NeMo's days.tsv: "24" → "hai mươi bốn", "01" → "một").
pub(super) fn day(d: &str) -> Option<String> {
    let v: u32 = d.parse().ok()?;
    if !(1..=31).contains(&v) || d.len() > 2 || (d.len() == 2 && d.starts_with('0') && v > 9) {
        return None;
    }
    Some(match v {
        1..=9 => DIGITS[v as usize].to_string(),
        10..=19 => two(v),
        v => {
            let t = format!("{} mươi", DIGITS[(v / 10) as usize]);
            match v % 10 {
                0 => t,
                1 => format!("{t} mốt"),
                5 => format!("{t} lăm"),
                u => format!("{t} {}", DIGITS[u as usize]),
            }
        }
    })
}

/// Month (NeMo's months.tsv: "4" → "tư").
pub(super) fn month(d: &str) -> Option<String> {
    let v: u32 = d.parse().ok()?;
    if !(1..=12).contains(&v) || d.len() > 2 || (d.len() == 2 && d.starts_with('0') && v > 9) {
        return None;
    }
    Some(match v {
        4 => "tư".to_string(),
        1..=9 => DIGITS[v as usize].to_string(),
        v => two(v),
    })
}

/// Metric prefixes (prefixes.tsv).
pub(super) const PREFIXES: &[(&str, &str)] = &[
    ("k", "ki lô"),
    ("M", "mê ga"),
    ("G", "gi ga"),
    ("T", "tê ra"),
    ("P", "pê ta"),
    ("E", "ex xa"),
    ("h", "hếc tô"),
    ("da", "đề ca"),
    ("d", "đề xi"),
    ("c", "xăng ti"),
    ("m", "mi li"),
    ("µ", "mi crô"),
    ("μ", "mi cờ rô"),
    ("n", "na nô"),
    ("p", "pi cô"),
    ("f", "fem tô"),
    ("a", "át tô"),
];

/// Base units (base_units.tsv).
pub(super) const BASES: &[(&str, &str)] = &[
    ("m", "mét"),
    ("m2", "mét vuông"),
    ("m3", "mét khối"),
    ("m²", "mét vuông"),
    ("m³", "mét khối"),
    ("g", "gam"),
    ("l", "lít"),
    ("s", "giây"),
    ("v", "vôn"),
    ("w", "oát"),
    ("hz", "hẹc"),
    ("A", "am pe"),
    ("b", "bai"),
    ("B", "byte"),
    ("pa", "pascal"),
    ("ω", "ohm"),
    ("Ω", "ôm"),
    ("h", "giờ"),
    ("min", "phút"),
    ("hr", "giờ"),
];

/// Other units (measurements_minimal.tsv).
pub(super) const SPECIAL_UNITS: &[(&str, &str)] = &[
    ("°f", "độ f"),
    ("°F", "độ F"),
    ("°c", "độ c"),
    ("°C", "độ C"),
    ("°k", "độ k"),
    ("°K", "độ K"),
    ("°", "độ"),
    ("°E", "độ đông"),
    ("°N", "độ bắc"),
    ("°S", "độ nam"),
    ("°W", "độ tây"),
    ("ha", "héc ta"),
    ("mi", "mile"),
    ("ft", "foot"),
    ("inch", "inch"),
    ("yd", "yard"),
    ("%", "phần trăm"),
    ("hp", "mã lực"),
    ("rad", "radian"),
    ("kwh", "ki lô oát giờ"),
    ("kbps", "kilobit trên giây"),
    ("mbps", "megabit trên giây"),
    ("ghz", "gi ga hẹc"),
    ("mhz", "mê ga hẹc"),
    ("tw", "tê ra oát"),
    ("kcal", "ki lô calo"),
    ("gb", "gi ga bai"),
    ("mb", "mê ga bai"),
    ("mV", "mi li vôn"),
    ("MV", "mê ga vôn"),
    ("tb", "terabyte"),
    ("pb", "petabyte"),
    ("g", "gam"),
];

/// Currencies (currency.tsv): written form → spoken form.
pub(super) const CURRENCIES: &[(&str, &str)] = &[
    ("$", "đô la"),
    ("đô la", "đô la"),
    ("€", "ơ rô"),
    ("¥", "yên nhật"),
    ("₩", "won"),
    ("₫", "đồng"),
    ("đ", "đồng"),
    ("đồng", "đồng"),
    ("£", "bảng anh"),
    ("₹", "rupee"),
    ("¢", "xu"),
    ("₣", "franc pháp"),
    ("cent", "xu"),
    ("cents", "xu"),
    ("CHF", "franc thụy sĩ"),
    ("FF", "franc pháp"),
    ("JPY", "yên nhật"),
    ("KRW", "won hàn quốc"),
    ("CNY", "nhân dân tệ"),
    ("USD", "đô la"),
    ("usd", "đô la"),
    ("SGD", "đô la singapore"),
    ("MYR", "ringgit malaysia"),
    ("THB", "baht thái lan"),
    ("IDR", "rupiah indonesia"),
    ("PHP", "peso philippines"),
    ("AUD", "đô la úc"),
    ("CAD", "đô la canada"),
    ("NZD", "đô la new zealand"),
    ("HKD", "đô la hồng kông"),
    ("TWD", "đô la đài loan"),
    ("ff", "franc pháp"),
    ("chf", "franc thụy sĩ"),
    ("jpy", "yên nhật"),
    ("krw", "won hàn quốc"),
    ("cny", "nhân dân tệ"),
    ("vnd", "đồng"),
    ("vnđ", "đồng"),
    ("sgd", "đô la singapore"),
    ("myr", "ringgit malaysia"),
    ("thb", "baht thái lan"),
    ("idr", "rupiah indonesia"),
    ("php", "peso philippines"),
    ("aud", "đô la úc"),
    ("cad", "đô la canada"),
    ("nzd", "đô la new zealand"),
    ("hkd", "đô la hồng kông"),
    ("twd", "đô la đài loan"),
    ("VND", "đồng"),
    ("VNĐ", "đồng"),
];

/// Currencies with a minor unit (currency_minor.tsv).
pub(super) const MINOR: &[(&str, &str)] = &[
    ("$", "xu"),
    ("€", "xu"),
    ("£", "penny"),
    ("¢", "xu"),
    ("cent", "xu"),
    ("cents", "xu"),
    ("pence", "penny"),
];

/// Quantity abbreviations after 1..=3 digits (quantity_abbr.tsv).
pub(super) const QUANTITY_ABBR: &[(&str, &str)] = &[
    ("k", "nghìn"),
    ("K", "nghìn"),
    ("tr", "triệu"),
    ("TR", "triệu"),
    ("Tr", "triệu"),
    ("t", "tỷ"),
    ("T", "tỷ"),
];

/// Magnitude words a decimal may be followed by (magnitudes.tsv).
pub(super) const QUANTITY_WORDS: &[&str] = &[
    "nghìn tỷ",
    "triệu tỷ",
    "tỷ tỷ",
    "nghìn",
    "triệu",
    "tỷ",
    "trăm",
    "linh",
];

/// Per-unit suffixes after money (per_unit_non_metric.tsv).
pub(super) const PER_UNIT: &[(&str, &str)] = &[
    ("/giờ", "trên giờ"),
    ("/h", "trên giờ"),
    ("/ngày", "trên ngày"),
    ("/d", "trên ngày"),
    ("/tuần", "trên tuần"),
    ("/tháng", "trên tháng"),
    ("/năm", "trên năm"),
    ("/phút", "trên phút"),
    ("/p", "trên phút"),
    ("/giây", "trên giây"),
    ("/s", "trên giây"),
    ("/lần", "một lần"),
    ("/cái", "một cái"),
    ("/chiếc", "một chiếc"),
    ("/người", "một người"),
    ("/chỗ", "một chỗ"),
    ("/bài", "một bài"),
    ("/trang", "một trang"),
    ("/từ", "một từ"),
    ("/đồng", "một đồng"),
    ("/đêm", "một đêm"),
    ("/buổi", "một buổi"),
    ("/ca", "một ca"),
    ("/dự án", "một dự án"),
    ("/lớp", "một lớp"),
    ("/khóa", "một khóa"),
    ("/suất", "một suất"),
    ("/tấn", "một tấn"),
];

/// Prefixes and bases of metric per-unit suffixes after money ("/kg" → "một ki lô gam").
pub(super) const PER_PREFIXES: &[(&str, &str)] = &[
    ("k", "ki lô"),
    ("M", "mê ga"),
    ("G", "gi ga"),
    ("c", "xăng ti"),
    ("m", "mi li"),
    ("T", "tê ra"),
];
pub(super) const PER_BASES: &[(&str, &str)] = &[
    ("g", "gam"),
    ("m", "mét"),
    ("m²", "mét vuông"),
    ("m2", "mét vuông"),
    ("m³", "mét khối"),
    ("m3", "mét khối"),
    ("l", "lít"),
    ("B", "bai"),
];

/// Time zones (time_zones.tsv), written upper or lower case, spoken upper case.
pub(super) const ZONES: &[&str] = &["GMT", "UTC", "CST", "PST", "EST", "JST", "PT", "ET", "CET"];

/// Words a Roman numeral is read after (key_word.tsv), as written (case matters).
pub(super) const ROMAN_KEYS: &[&str] = &[
    "thế kỉ",
    "thế kỷ",
    "thứ",
    "chương",
    "phần",
    "mục",
    "đoạn",
    "năm",
    "khoản",
    "phụ lục",
    "khóa",
    "số",
    "điều",
    "tiểu mục",
    "bài",
    "khối",
];

/// Era abbreviations after a year (year_suffix.tsv).
pub(super) const ERAS: &[(&str, &str)] = &[
    ("tcn", "trước công nguyên"),
    ("scn", "sau công nguyên"),
    ("TCN", "trước công nguyên"),
    ("SCN", "sau công nguyên"),
];

/// The value of a Roman numeral written the canonical way (1..=3999, all upper or all
/// lower case), as NeMo's list of them.
pub(super) fn roman(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 15 {
        return None;
    }
    let upper = s.to_ascii_uppercase();
    if s != upper && s != s.to_ascii_lowercase() {
        return None;
    }
    let value = |c: u8| match c {
        b'I' => Some(1),
        b'V' => Some(5),
        b'X' => Some(10),
        b'L' => Some(50),
        b'C' => Some(100),
        b'D' => Some(500),
        b'M' => Some(1000),
        _ => None,
    };
    let b = upper.as_bytes();
    let mut total = 0i64;
    for (i, &c) in b.iter().enumerate() {
        let v = value(c)?;
        match b.get(i + 1).map(|&n| value(n)) {
            Some(Some(n)) if n > v => total -= v,
            Some(None) => return None,
            _ => total += v,
        }
    }
    let total = u32::try_from(total)
        .ok()
        .filter(|t| (1..4000).contains(t))?;
    (to_roman(total) == upper).then_some(total)
}

fn to_roman(mut n: u32) -> String {
    const TABLE: [(u32, &str); 13] = [
        (1000, "M"),
        (900, "CM"),
        (500, "D"),
        (400, "CD"),
        (100, "C"),
        (90, "XC"),
        (50, "L"),
        (40, "XL"),
        (10, "X"),
        (9, "IX"),
        (5, "V"),
        (4, "IV"),
        (1, "I"),
    ];
    let mut out = String::new();
    for (v, s) in TABLE {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}
