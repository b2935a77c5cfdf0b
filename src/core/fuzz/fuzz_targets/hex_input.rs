//! The simhash64 type's input: text (simhash64_in) and binary (recv, bytea casts).
//! Any input either fails with a ParseError or parses to a value whose canonical text form
//! parses back to the same value; nothing panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use simhash_core::{bytes, hex};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        match hex::parse(text) {
            Ok(v) => {
                let canonical = hex::format(v);
                assert_eq!(hex::parse(&canonical), Ok(v));
                let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")).unwrap_or(text);
                assert_eq!(digits.to_ascii_lowercase(), canonical);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
    match bytes::from_bytes(data) {
        Ok(v) => assert_eq!(&bytes::to_bytes(v)[..], data),
        Err(e) => assert_ne!(e.0, bytes::BYTES),
    }
});
