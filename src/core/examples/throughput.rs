//! Single-core throughput of the fingerprint core outside PostgreSQL, and of bare jieba-rs
//! segmentation on the same texts (the yardstick of the Chinese target in BENCHMARKS.md).
//!
//! Usage: cargo run --release -p simhash_core --example throughput -- FILE.jsonl MODE [OPTIONS] [RUNS]
//! FILE.jsonl holds one JSON string per line; MODE is `jieba` (jieba-rs `cut`, no HMM, the
//! whole text) or `simhash` (the pipeline with OPTIONS, a JSON object, default `{}`).
//! Prints the median MB/s over RUNS runs (default 5), after one warm-up run.

use std::time::Instant;

use simhash_core::fingerprint::simhash;
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
    let mut sink = 0u64;
    let mut run = || {
        let start = Instant::now();
        for t in &texts {
            sink = sink.wrapping_add(match args[2].as_str() {
                "jieba" => JIEBA.cut(t, false).len() as u64,
                _ => simhash(t, &opts, &mut || {}),
            });
        }
        start.elapsed().as_secs_f64()
    };
    run();
    let mut secs: Vec<f64> = (0..runs).map(|_| run()).collect();
    secs.sort_by(f64::total_cmp);
    let median = secs[secs.len() / 2];
    println!("{:.2} MB/s ({} texts, {:.1} MB, median of {runs} runs: {median:.3} s; checksum {sink:x})",
        bytes as f64 / 1e6 / median, texts.len(), bytes as f64 / 1e6);
    Ok(())
}
