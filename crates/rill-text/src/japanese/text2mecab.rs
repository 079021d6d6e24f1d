//! OpenJTalk 1.11's `text2mecab` (UTF-8 build): at each position the first entry of the
//! conversion table that matches is replaced (ASCII → full width, half-width katakana →
//! full width, a half-width sound mark joined to its kana); any other ASCII byte is
//! dropped; any other character is copied as it is.
//!
//! OpenJTalk writes into a fixed 8 KiB buffer with no bounds check, so NeMo's result on
//! texts longer than that (about 2,700 ASCII characters) is undefined; rill converts
//! any length.

#[path = "text2mecab_table.rs"]
#[rustfmt::skip]
mod table;

/// `text` as OpenJTalk hands it to MeCab; the ASCII characters it drops go to `dropped`.
pub fn text2mecab(text: &str, dropped: &mut Vec<char>) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some((from, to)) = table::CONV.iter().find(|(f, _)| rest.starts_with(f)) {
            out.push_str(to);
            rest = &rest[from.len()..];
            continue;
        }
        if !c.is_ascii() {
            out.push(c);
        } else if !crate::unicode::is_py_space(c) {
            dropped.push(c);
        }
        rest = &rest[c.len_utf8()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_widens_and_half_width_kana_joins() {
        let mut dropped = Vec::new();
        assert_eq!(text2mecab("Ab1 ｶﾞｷﾞﾟ\u{7}", &mut dropped), "Ａｂ１　ガギ");
        assert_eq!(dropped, ['\u{7}']);
        assert_eq!(table::CONV.len(), 184);
    }
}
