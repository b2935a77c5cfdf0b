//! Which characters are Chinese (Han) for tokenization: runs of them go to jieba, the rest to
//! Unicode word segmentation.

use unicode_script::{Script, UnicodeScript};

/// True for characters of the Han script (Unicode `Scripts.txt`), e.g. `中`, `〇`, `𠀀`.
#[inline]
pub fn is_han(c: char) -> bool {
    !c.is_ascii() && c.script() == Script::Han
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn han_is_han() {
        assert!(is_han('中') && is_han('〇') && is_han('𠀀'));
        assert!(!is_han('a') && !is_han('。') && !is_han('か') && !is_han('한'));
    }
}
