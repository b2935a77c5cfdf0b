//! The text pipeline on arbitrary UTF-8 with arbitrary options: either raw JSON (as a user may
//! pass it to simhash(body, options)) or an object built from fuzzed values for every key, so
//! that valid option sets are reached often. Checks: no panic, Options errors name a key,
//! fingerprints are deterministic, and `features` lists exactly what `simhash` adds up.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};
use simhash_core::fingerprint::{features, simhash, simhash_weighted};
use simhash_core::feature_table::Budget;
use simhash_core::options::Options;

#[derive(Debug, Arbitrary)]
enum Knob {
    Absent,
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
    Null,
}

impl Knob {
    fn value(&self, names: &[&str]) -> Option<Value> {
        match self {
            Knob::Absent => None,
            Knob::Int(i) => Some(json!(i % 70)),
            Knob::Float(f) => Some(json!(f)),
            Knob::Text(s) if !names.is_empty() => {
                let pick = s.len() % (names.len() + 1);
                Some(json!(names.get(pick).copied().unwrap_or(s.as_str())))
            }
            Knob::Text(s) => Some(json!(s)),
            Knob::Bool(b) => Some(json!(b)),
            Knob::Null => Some(Value::Null),
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Input {
    text: String,
    raw_options: Option<String>,
    tokenizer: Knob,
    ngram: Knob,
    weighting: Knob,
    top_k: Knob,
    case_fold: Knob,
    seed: Knob,
    version: Knob,
    extra_key: Option<(String, Knob)>,
}

fn options_json(input: &Input) -> Value {
    let mut map = Map::new();
    let keys: [(&str, &Knob, &[&str]); 7] = [
        ("tokenizer", &input.tokenizer, &["auto", "words", "jieba", "chars"]),
        ("ngram", &input.ngram, &[]),
        ("weighting", &input.weighting, &["tf", "tfidf", "binary"]),
        ("top_k", &input.top_k, &[]),
        ("case_fold", &input.case_fold, &[]),
        ("seed", &input.seed, &[]),
        ("version", &input.version, &[]),
    ];
    for (key, knob, names) in keys {
        if let Some(v) = knob.value(names) {
            map.insert(key.to_string(), v);
        }
    }
    if let Some((key, knob)) = &input.extra_key {
        if let Some(v) = knob.value(&[]) {
            map.insert(key.clone(), v);
        }
    }
    Value::Object(map)
}

fuzz_target!(|input: Input| {
    let parsed = match &input.raw_options {
        Some(raw) => Options::from_json_str(raw),
        None => Options::from_json(&options_json(&input)),
    };
    let opts = match parsed {
        Ok(opts) => opts,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let fp = simhash(&input.text, &opts, Budget::default(), &mut || {}).unwrap();
    assert_eq!(fp, simhash(&input.text, &opts, Budget::default(), &mut || {}).unwrap(), "not deterministic");
    let feats = features(&input.text, &opts, Budget::default(), &mut || {}).unwrap();
    if feats.is_empty() {
        assert_eq!(fp, 0, "a text without features must give 0");
    }
    // The vote over the listed features (weights are exact multiples of 1/WEIGHT_SCALE, so the
    // f64 sums are exact for texts of this size) gives the same fingerprint.
    if feats.len() < 10_000 {
        let items = || feats.iter().map(|f| (f.text.as_str(), f.weight));
        let again = simhash_weighted(items, opts.seed, &mut || {}).expect("finite weights");
        assert_eq!(fp, again, "features() disagrees with simhash() for {opts:?}");
    }
});
