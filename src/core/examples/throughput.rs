//! Single-core throughput of the fingerprint core outside PostgreSQL, and of bare jieba-rs
//! segmentation on the same texts (the yardstick of the Chinese target in BENCHMARKS.md).
//!
//! Usage: cargo run --release -p simhash_core --example throughput -- FILE.jsonl MODES [OPTIONS] [RUNS]
//! FILE.jsonl holds one JSON string per line; MODES is a comma-separated list of `jieba`
//! (jieba-rs `cut`, no HMM, each whole text) and `simhash` (the pipeline with OPTIONS, a JSON
//! object, default `{}`). The modes run interleaved, RUNS rounds (default 5) after a warm-up
//! round, so that a noisy machine slows them alike; prints one line per mode with the median
//! and best MB/s.

use std::time::Instant;

use simhash_core::fingerprint::simhash;
use simhash_core::feature_table::Budget;
use simhash_core::options::Options;
use simhash_core::tokenize::JIEBA;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        return Err("usage: throughput FILE.jsonl jieba|simhash [OPTIONS] [RUNS]".into());
    }
    let texts: Vec<String> = std::fs::read_to_string(&args[1])?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    let bytes: usize = texts.iter().map(String::len).sum();
    let opts = Options::from_json_str(args.get(3).map_or("{}", String::as_str))?;
    let runs: usize = args.get(4).map_or(Ok(5), |r| r.parse())?;
    let modes: Vec<&str> = args[2].split(',').collect();
    let mut sink = 0u64;
    let mut run = |mode: &str| {
        let start = Instant::now();
        for t in &texts {
            sink = sink.wrapping_add(match mode {
                "jieba" => JIEBA.cut(t, false).len() as u64,
                _ => simhash(t, &opts, Budget::default(), &mut || {}).unwrap(),
            });
        }
        start.elapsed().as_secs_f64()
    };
    modes.iter().for_each(|m| {
        run(m);
    });
    let mut secs: Vec<Vec<f64>> = vec![Vec::new(); modes.len()];
    for _ in 0..runs {
        for (i, m) in modes.iter().enumerate() {
            secs[i].push(run(m));
        }
    }
    for (m, s) in modes.iter().zip(&mut secs) {
        s.sort_by(f64::total_cmp);
        let (median, best) = (s[s.len() / 2], s[0]);
        println!(
            "{m}: {:.2} MB/s median, {:.2} MB/s best ({} texts, {:.1} MB, {runs} runs)",
            bytes as f64 / 1e6 / median,
            bytes as f64 / 1e6 / best,
            texts.len(),
            bytes as f64 / 1e6
        );
    }
    std::hint::black_box(sink);
    Ok(())
}
