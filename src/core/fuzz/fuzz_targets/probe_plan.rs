//! The exactness of block lookups: for any query, k and block count m that `probe::plan`
//! accepts, every fingerprint within k bits of the query (a fuzzed one, moved at most k bits)
//! has, in some probed block, exactly one of the probed values. Bad k or m must be errors.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use simhash_core::blocks::block_value;
use simhash_core::distance::hamming;
use simhash_core::probe::plan;

#[derive(Debug, Arbitrary)]
struct Input {
    query: u64,
    flip: u64,
    k: i64,
    m: i64,
}

fuzz_target!(|input: Input| {
    // Mostly small k and m, where plans are accepted; sometimes the raw values.
    let (k, m) = if input.k & 1 == 0 { (input.k.rem_euclid(12), input.m.rem_euclid(66)) } else { (input.k, input.m) };
    let Ok(probes) = plan(input.query, k, m) else { return };
    assert!((0..=64).contains(&k) && (1..=64).contains(&m), "plan accepted k={k} m={m}");
    // A neighbour: keep at most k of the flipped bits.
    let mut flip = input.flip;
    while flip.count_ones() as i64 > k {
        flip &= flip - 1;
    }
    let near = input.query ^ flip;
    assert!(hamming(near, input.query) as i64 <= k);
    let found = probes.iter().any(|p| {
        let v = block_value(near, p.index as i64, m).expect("valid block");
        p.values.contains(&v)
    });
    assert!(found, "missed a neighbour: query {:016x} near {near:016x} k={k} m={m}", input.query);
});
