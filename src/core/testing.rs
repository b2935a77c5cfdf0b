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

/// `n` fingerprints of a batch: random ones, near-copies of earlier ones (1 to 8 bits flipped),
/// and NULLs (None), for the tests of the rules that keep a batch's first of near rows.
pub fn near_batch(n: usize, seed: u64) -> Vec<Option<u64>> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<Option<u64>> = Vec::new();
    for i in 0..n {
        let r = rng.next();
        out.push(match r % 10 {
            0 => None,
            1..=5 if i > 0 => {
                let mut fp = out[(r as usize / 16) % i].unwrap_or(r);
                for _ in 0..(1 + (r >> 8) % 8) {
                    fp ^= 1 << (rng.next() % 64);
                }
                Some(fp)
            }
            _ => Some(r),
        });
    }
    out
}

/// `count` strings, the i-th made of `i % max_pieces` pieces drawn from `pieces`.
pub fn random_strings(seed: u64, count: usize, max_pieces: usize, pieces: &[&str]) -> Vec<String> {
    let mut rng = Rng::new(seed);
    (0..count)
        .map(|i| (0..i % max_pieces).map(|_| pieces[(rng.next() % pieces.len() as u64) as usize]).collect())
        .collect()
}
