//! English number words as NeMo's English normaliser writes them: cardinals ("two hundred
//! and fifty", "and" only in the last three digits), ordinals, years ("twenty ten",
//! "nineteen oh five", "two thousand one"), digit strings and fractions.
//!
//! Every function takes ASCII digits and returns `None` for what it cannot read (empty
//! input, non-digits, more digits than [`MAX_CARDINAL_DIGITS`]); nothing recurses on input.

/// Longest digit string read as a cardinal (up to the quintillions); longer ones are read
/// digit by digit.
pub const MAX_CARDINAL_DIGITS: usize = 21;

const ONES: [&str; 20] = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
];

const TENS: [&str; 10] = [
    "", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
];

const SCALES: [&str; 7] = [
    "",
    "thousand",
    "million",
    "billion",
    "trillion",
    "quadrillion",
    "quintillion",
];

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// 0..=99 in words ("forty two").
pub fn two_digit(n: u32) -> String {
    let n = n % 100;
    if n < 20 {
        ONES[n as usize].to_string()
    } else if n.is_multiple_of(10) {
        TENS[(n / 10) as usize].to_string()
    } else {
        format!("{} {}", TENS[(n / 10) as usize], ONES[(n % 10) as usize])
    }
}

/// 1..=999 in words, "and" after the hundreds when `and` is set.
fn three_digit(n: u32, and: bool) -> String {
    let (h, rest) = (n / 100, n % 100);
    match (h, rest) {
        (0, r) => two_digit(r),
        (h, 0) => format!("{} hundred", ONES[h as usize]),
        (h, r) if and => format!("{} hundred and {}", ONES[h as usize], two_digit(r)),
        (h, r) => format!("{} hundred {}", ONES[h as usize], two_digit(r)),
    }
}

/// A cardinal from ASCII digits ("2345678" → "two million three hundred forty five
/// thousand six hundred and seventy eight"). Leading zeros are ignored.
pub fn cardinal(digits: &str) -> Option<String> {
    if !all_digits(digits) {
        return None;
    }
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some("zero".to_string());
    }
    if digits.len() > MAX_CARDINAL_DIGITS {
        return None;
    }
    let bytes = digits.as_bytes();
    let groups = bytes.len().div_ceil(3);
    let first = bytes.len() - (groups - 1) * 3;
    let mut words: Vec<String> = Vec::new();
    let mut start = 0;
    for g in 0..groups {
        let end = if g == 0 { first } else { start + 3 };
        let value = bytes[start..end]
            .iter()
            .fold(0u32, |v, b| v * 10 + u32::from(b - b'0'));
        let scale = groups - 1 - g;
        if value > 0 {
            let mut part = three_digit(value, scale == 0);
            if scale == 0 && value < 100 && groups > 1 {
                part = format!("and {part}");
            }
            if scale == 0 {
                words.push(part);
            } else {
                words.push(format!("{part} {}", SCALES[scale]));
            }
        }
        start = end;
    }
    Some(words.join(" "))
}

/// Each digit in words ("0199" → "zero one nine nine").
pub fn digits(digits: &str) -> Option<String> {
    if !all_digits(digits) {
        return None;
    }
    let words: Vec<&str> = digits
        .bytes()
        .map(|b| ONES[usize::from(b - b'0')])
        .collect();
    Some(words.join(" "))
}

/// A whole number as NeMo reads one without separators: up to three digits as a cardinal,
/// four as a year ("twenty forty eight"), longer ones or ones with a leading zero digit by
/// digit.
pub fn plain_integer(d: &str) -> Option<String> {
    if !all_digits(d) {
        return None;
    }
    if d.len() > 1 && d.starts_with('0') {
        return digits(d);
    }
    match d.len() {
        1..=3 => cardinal(d),
        4 => year(d),
        _ => digits(d),
    }
}

/// A four-digit year ("1887" → "eighteen eighty seven", "2001" → "two thousand one",
/// "1900" → "nineteen hundred", "2000" → "two thousand"); other lengths as cardinals.
pub fn year(d: &str) -> Option<String> {
    if !all_digits(d) {
        return None;
    }
    if d.len() != 4 || d.starts_with('0') {
        return cardinal(d);
    }
    let n: u32 = d.parse().ok()?;
    let (hi, lo) = (n / 100, n % 100);
    if n.is_multiple_of(1000) {
        return cardinal(d);
    }
    if hi.is_multiple_of(10) && lo < 10 {
        let thousands = ONES[(hi / 10) as usize];
        return Some(match lo {
            0 => format!("{thousands} thousand"),
            _ => format!("{thousands} thousand {}", ONES[lo as usize]),
        });
    }
    let hi_words = two_digit(hi);
    Some(match lo {
        0 => format!("{hi_words} hundred"),
        1..=9 => format!("{hi_words} oh {}", ONES[lo as usize]),
        _ => format!("{hi_words} {}", two_digit(lo)),
    })
}

/// The ordinal of the last word of a cardinal ("twenty two" → "twenty second").
pub fn ordinal_words(cardinal_words: &str) -> String {
    let (head, last) = match cardinal_words.rsplit_once(' ') {
        Some((h, l)) => (format!("{h} "), l),
        None => (String::new(), cardinal_words),
    };
    let last = match last {
        "one" => "first".to_string(),
        "two" => "second".to_string(),
        "three" => "third".to_string(),
        "five" => "fifth".to_string(),
        "eight" => "eighth".to_string(),
        "nine" => "ninth".to_string(),
        "twelve" => "twelfth".to_string(),
        w if w.ends_with('y') => format!("{}ieth", &w[..w.len() - 1]),
        w => format!("{w}th"),
    };
    format!("{head}{last}")
}

/// An ordinal from digits ("22" → "twenty second").
pub fn ordinal(d: &str) -> Option<String> {
    cardinal(d).map(|c| ordinal_words(&c))
}

/// The plural of the last word ("nineteen ninety" → "nineteen nineties").
pub fn plural_last(words: &str) -> String {
    if let Some(stem) = words.strip_suffix('y') {
        format!("{stem}ies")
    } else {
        format!("{words}s")
    }
}

/// A fraction `numerator/denominator` ("3", "4" → "three quarters").
pub fn fraction(num: &str, den: &str) -> Option<String> {
    let n = cardinal(num)?;
    let one = n == "one";
    let d = match den.trim_start_matches('0') {
        "" | "1" => return None,
        "2" => (if one { "half" } else { "halves" }).to_string(),
        "4" => (if one { "quarter" } else { "quarters" }).to_string(),
        other => {
            let o = ordinal(other)?;
            if one {
                o
            } else {
                format!("{o}s")
            }
        }
    };
    Some(format!("{n} {d}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cardinals() {
        assert_eq!(cardinal("0").unwrap(), "zero");
        assert_eq!(cardinal("101").unwrap(), "one hundred and one");
        assert_eq!(cardinal("350000").unwrap(), "three hundred fifty thousand");
        assert_eq!(cardinal("1024").unwrap(), "one thousand and twenty four");
        assert_eq!(
            cardinal("2345678").unwrap(),
            "two million three hundred forty five thousand six hundred and seventy eight"
        );
        assert!(cardinal(&"9".repeat(22)).is_none());
        assert!(cardinal(&"9".repeat(21)).is_some());
        assert!(cardinal("").is_none());
    }

    #[test]
    fn years_and_ordinals() {
        assert_eq!(year("2048").unwrap(), "twenty forty eight");
        assert_eq!(year("2001").unwrap(), "two thousand one");
        assert_eq!(year("1066").unwrap(), "ten sixty six");
        assert_eq!(year("1905").unwrap(), "nineteen oh five");
        assert_eq!(year("1900").unwrap(), "nineteen hundred");
        assert_eq!(ordinal("100").unwrap(), "one hundredth");
        assert_eq!(ordinal("22").unwrap(), "twenty second");
        assert_eq!(ordinal("20").unwrap(), "twentieth");
        assert_eq!(fraction("2", "3").unwrap(), "two thirds");
    }
}
