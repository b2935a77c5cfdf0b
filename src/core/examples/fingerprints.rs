//! Fingerprints of many texts under several seeds, outside PostgreSQL: lets quality benchmarks
//! (bench/short_text.py) compare tokenizers, seeds and k without a database.
//!
//! Usage: cargo run --release -p simhash_core --example fingerprints -- FILE.jsonl OPTIONS SEEDS
//! FILE.jsonl holds one JSON string per line; OPTIONS is a JSON object as `simhash(text, options)`
//! takes it (`{}` for the defaults); SEEDS is a comma-separated list of seeds, e.g. `0,1,2,3`.
//! Prints one line per text: its fingerprints as 16-digit hexadecimal numbers separated by
//! spaces, one per seed in the order given; the one for seed s is simhash(text, OPTIONS with
//! "seed": s).

use std::error::Error;
use std::io::{BufWriter, Write};

use simhash_core::fingerprint::simhash;
use simhash_core::feature_table::Budget;
use simhash_core::options::Options;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        return Err(
            "usage: fingerprints FILE.jsonl OPTIONS SEEDS (e.g. data.jsonl '{}' 0,1,2,3)".into(),
        );
    }
    let input = std::fs::read_to_string(&args[1]).map_err(|e| format!("{}: {e}", args[1]))?;
    let texts: Vec<String> = input
        .lines()
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line)
                .map_err(|e| format!("{} line {}: not a JSON string: {e}", args[1], i + 1))
        })
        .collect::<Result<_, _>>()?;
    let options = Options::from_json_str(&args[2])?;
    let seeds: Vec<u64> = args[3]
        .split(',')
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|e| format!("bad seed {s:?} in {:?}: {e}", args[3]))
        })
        .collect::<Result<_, _>>()?;
    let per_seed: Vec<Options> = seeds
        .iter()
        .map(|&seed| Options { seed, ..options })
        .collect();
    let mut out = BufWriter::new(std::io::stdout().lock());
    for text in &texts {
        let line: Vec<String> = per_seed
            .iter()
            .map(|o| format!("{:016x}", simhash(text, o, Budget::default(), &mut || {}).unwrap()))
            .collect();
        writeln!(out, "{}", line.join(" "))?;
    }
    out.flush()?;
    Ok(())
}
