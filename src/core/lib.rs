//! The fingerprint maths of simhash_pg.
//!
//! Everything here is plain Rust with no PostgreSQL types, so it is unit-tested with
//! `cargo test -p simhash_core` in seconds. The extension (`src/*.rs` one level up) only wraps
//! these functions and turns their errors into PostgreSQL errors with SQLSTATEs.

pub mod blocks;
pub mod bytes;
pub mod distance;
pub mod hashing;
pub mod hex;
