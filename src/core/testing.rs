//! Test support: reproducible pseudo-random numbers and strings for the differential and
//! property tests (fixed seeds keep failures reproducible).

/// A xorshift64 generator.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// `count` strings, the i-th made of `i % max_pieces` pieces drawn from `pieces`.
pub fn random_strings(seed: u64, count: usize, max_pieces: usize, pieces: &[&str]) -> Vec<String> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|i| (0..i % max_pieces).map(|_| pieces[(rng.next() % pieces.len() as u64) as usize]).collect())
        .collect()
}
