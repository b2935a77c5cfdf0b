//! Which characters are Chinese (Han) for tokenization: runs of them go to jieba, the rest to
//! Unicode word segmentation.

use unicode_script::{Script, UnicodeScript};

/// True for characters of the Han script (Unicode `Scripts.txt`), e.g. `中`, `〇`, `𠀀`.
#[inline]
pub fn is_han(c: char) -> bool {
    // The CJK Unified Ideographs block is all Han and holds nearly every Chinese character of
    // real text; nothing below U+2E80 is Han. Only the rest needs the script table.
    match c as u32 {
        0x4E00..=0x9FFF => true,
        0..=0x2E7F => false,
        // CJK symbols and punctuation (。、《》…): Han only for 々 〇 〡-〩 〸-〻.
        0x3000..=0x303F => matches!(c as u32, 0x3005 | 0x3007 | 0x3021..=0x3029 | 0x3038..=0x303B),
        // Half- and full-width forms (，（）１Ａ): no Han.
        0xFF00..=0xFFEF => false,
        _ => c.script() == Script::Han,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_path_agrees_with_the_script_table() {
        for c in (0..=0x10FFFFu32).filter_map(char::from_u32) {
            assert_eq!(is_han(c), c.script() == Script::Han, "U+{:04X}", c as u32);
        }
    }

    #[test]
    fn han_is_han() {
        assert!(is_han('中') && is_han('〇') && is_han('𠀀'));
        assert!(!is_han('a') && !is_han('。') && !is_han('か') && !is_han('한'));
    }
}
