//! The fingerprint maths of simhash_pg.
//!
//! Everything here is plain Rust with no PostgreSQL types, so it is unit-tested with
//! `cargo test -p simhash_core` in seconds. The extension (`src/*.rs` one level up) only wraps
//! these functions and turns their errors into PostgreSQL errors with SQLSTATEs.
//!
//! Fingerprint type: [`hex`], [`bytes`], [`distance`], [`blocks`], [`hashing`]; lookups through
//! block indexes: [`probe`], and keys of several blocks: [`keys`], the layout a lookup reads: [`layouts`], where a value starts on a
//! leaf page: [`sorted_search`], and nearest first: [`nearest`]; all near pairs and their groups:
//! [`batch`] (SQL joins) and [`memory_pairs`] (in memory); which rows of a batch to keep: [`dedup`], with
//! an in-memory block index, [`near_set`]; the memory their work may take: [`memory`].
//! Text pipeline (docs/ALGORITHM.md): [`normalize`] → [`tokenize`] (with [`script`],
//! [`stopwords`]) → [`fingerprint`] (features, [`idf`] weights, the vote; tables of distinct features within a
//! memory budget: [`feature_table`]), configured by
//! [`options`].

pub mod batch;
pub mod blocks;
pub mod bytes;
pub mod dedup;
pub mod distance;
pub mod feature_table;
pub mod fingerprint;
pub mod hashing;
pub mod hex;
pub mod idf;
pub mod keys;
pub mod layouts;
pub mod markup;
pub mod memory;
pub mod memory_pairs;
pub mod near_index;
pub mod near_set;
pub mod nearest;
pub mod normalize;
pub mod options;
pub mod overlap;
pub mod probe;
pub mod routes;
pub mod script;
pub mod sorted_search;
pub mod stopwords;
pub mod tokenize;

#[cfg(test)]
mod testing;
