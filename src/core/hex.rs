//! The text form of a fingerprint: exactly 16 hex digits, optionally prefixed by `0x`.
//!
//! The form is strict on purpose: a fingerprint that loses or gains a digit silently is a different
//! fingerprint, and near-duplicate search would then answer wrongly without any error.

use std::fmt;

/// Number of hex digits in the text form of a 64-bit fingerprint.
pub const HEX_DIGITS: usize = 16;

/// Why a text is not a fingerprint; the extension reports it as SQLSTATE 22P02.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParseError {
    /// The text (after an optional `0x`) was empty.
    Empty,
    /// The text had the wrong number of digits (counted in characters after the prefix).
    WrongLength(usize),
    /// A character that is not a hex digit, with its 1-based position in the whole input.
    NotHex { position: usize, found: char },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Empty => write!(f, "Expected {HEX_DIGITS} hexadecimal digits, found none."),
            ParseError::WrongLength(n) => {
                write!(f, "Expected {HEX_DIGITS} hexadecimal digits, found {n} characters.")
            }
            ParseError::NotHex { position, found } => write!(
                f,
                "Character {found:?} at position {position} is not a hexadecimal digit."
            ),
        }
    }
}

impl std::error::Error for ParseError {}

/// Parses `0123456789abcdef`, `0x0123456789ABCDEF` and the like; rejects everything else,
/// including surrounding or inner white space, signs and `_` separators.
pub fn parse(text: &str) -> Result<u64, ParseError> {
    let (prefix_len, digits) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(rest) => (2, rest),
        None => (0, text),
    };
    if digits.is_empty() {
        return Err(ParseError::Empty);
    }
    let mut value: u64 = 0;
    let mut count = 0usize;
    for (offset, ch) in digits.chars().enumerate() {
        let Some(nibble) = ch.to_digit(16) else {
            return Err(ParseError::NotHex { position: prefix_len + offset + 1, found: ch });
        };
        count += 1;
        if count > HEX_DIGITS {
            break;
        }
        value = (value << 4) | u64::from(nibble);
    }
    let chars = digits.chars().count();
    if chars != HEX_DIGITS {
        return Err(ParseError::WrongLength(chars));
    }
    Ok(value)
}

/// Formats as 16 lowercase hex digits, the canonical text form (what `parse` reads back).
pub fn format(value: u64) -> String {
    format!("{value:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edge_values() {
        for v in [0u64, 1, u64::MAX, 0x8000_0000_0000_0000, 0x0123_4567_89ab_cdef] {
            assert_eq!(parse(&format(v)), Ok(v));
        }
        assert_eq!(format(0xff), "00000000000000ff");
    }

    #[test]
    fn accepts_prefix_and_upper_case() {
        assert_eq!(parse("0x00FF00FF00FF00FF"), Ok(0x00ff_00ff_00ff_00ff));
        assert_eq!(parse("0X00ff00ff00ff00ff"), Ok(0x00ff_00ff_00ff_00ff));
        assert_eq!(parse("ABCDEFabcdef0123"), Ok(0xabcd_efab_cdef_0123));
    }

    #[test]
    fn rejects_malformed_text() {
        assert_eq!(parse(""), Err(ParseError::Empty));
        assert_eq!(parse("0x"), Err(ParseError::Empty));
        assert_eq!(parse("abc"), Err(ParseError::WrongLength(3)));
        assert_eq!(parse("00112233445566778"), Err(ParseError::WrongLength(17)));
        assert_eq!(parse("0011223344556677889900"), Err(ParseError::WrongLength(22)));
        assert_eq!(
            parse("0011223g44556677"),
            Err(ParseError::NotHex { position: 8, found: 'g' })
        );
        assert_eq!(
            parse("0x0011 23344556677"),
            Err(ParseError::NotHex { position: 7, found: ' ' })
        );
        assert_eq!(
            parse(" 0011223344556677"),
            Err(ParseError::NotHex { position: 1, found: ' ' })
        );
        assert_eq!(
            parse("0011223344556677 "),
            Err(ParseError::NotHex { position: 17, found: ' ' })
        );
        assert!(matches!(parse("-011223344556677"), Err(ParseError::NotHex { .. })));
        assert!(matches!(parse("0x0x11223344556677"), Err(ParseError::NotHex { .. })));
        assert!(matches!(parse("００11223344556677"), Err(ParseError::NotHex { .. })));
    }
}
