//! Test support: reproducible random strings for the differential tests that compare a fast path
//! with the library it stands in for.

/// `count` strings, the i-th made of `i % max_pieces` pieces drawn from `pieces` by a xorshift
/// generator started at `seed` (fixed seeds keep failures reproducible).
pub fn random_strings(seed: u64, count: usize, max_pieces: usize, pieces: &[&str]) -> Vec<String> {
    let mut state = seed | 1;
    (0..count)
        .map(|i| {
            let mut s = String::new();
            for _ in 0..(i % max_pieces) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                s.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            s
        })
        .collect()
}
