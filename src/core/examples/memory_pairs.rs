//! Times the two in-memory ways of `simhash_pairs` (`simhash_core::memory_pairs`) on random
//! fingerprints with planted near copies, and on fingerprints crowded around one value, so
//! that the constants of its cost model can be measured again on another machine:
//! `cargo run --release --example memory_pairs`.

use simhash_core::memory_pairs::{self, Method, Rows};
use std::time::Instant;

/// splitmix64: reproducible random fingerprints without a dependency.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn main() {
    let mut state = 1;
    println!("table | rows | width | k | method | keys | candidates (element 1) | pairs | ms");
    // `-- ROWS K`: random fingerprints only, at that size (the scale of issue 53).
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let cases: Vec<(&str, usize, usize, u32)> = match args[..] {
        [rows, k] => vec![("random", rows, 1, k as u32)],
        _ => vec![
        ("random", 5_000usize, 1usize, 10u32),
        ("random", 20_000, 1, 10),
        ("random", 100_000, 1, 3),
        ("random", 1_000_000, 1, 3),
        ("random", 1_000_000, 4, 3),
        ("random", 1_000_000, 1, 6),
        ("crowded", 3_000, 1, 8),
        ("crowded", 20_000, 1, 3),
        ],
    };
    for (name, rows, width, k) in cases {
        let base = next(&mut state);
        let mut fps: Vec<Option<u64>> = Vec::with_capacity(rows * width);
        for r in 0..rows * width {
            let fp = match name {
                "crowded" => base ^ (next(&mut state) & next(&mut state) & next(&mut state)),
                _ if r % 100 == 99 => fps[r - 50].unwrap_or(0) ^ (1 << (next(&mut state) % 64)),
                _ => next(&mut state),
            };
            fps.push(Some(fp));
        }
        let rows_of = || Rows::new(fps.iter().copied(), width);
        let masks = memory_pairs::pass_keys(k, rows as f64).map_or(Vec::new(), |plan| plan.masks);
        // Counted for the tables small enough to be compared pair by pair, as `choose` does.
        let element0: Vec<u64> = fps.iter().step_by(width).filter_map(|fp| *fp).collect();
        let candidates = if rows <= 100_000 { memory_pairs::shared_key_pairs(&element0, &masks) } else { f64::NAN };
        let chosen = memory_pairs::choose(&rows_of(), k);
        for method in [Method::Sort, Method::Compare] {
            if method == Method::Compare && rows > 100_000 {
                continue;
            }
            let started = Instant::now();
            let mut meter = simhash_core::memory::Meter::unlimited("pairs");
            let n = memory_pairs::pairs(rows_of(), k, method, &mut meter, |_| ()).expect("memory").count();
            let ms = started.elapsed().as_secs_f64() * 1e3;
            let mark = if method == chosen { " (chosen)" } else { "" };
            println!("{name} | {rows} | {width} | {k} | {method:?}{mark} | {} | {candidates} | {n} | {ms:.1}", masks.len());
        }
    }
}
