//! The Rust side of the ETL functions in `sql/etl.sql`: the join keys `simhash_pairs` uses and
//! the union-find behind `simhash_clusters`. The maths is in `simhash_core::batch`.

use pgrx::prelude::*;
use simhash_core::batch;

use crate::errors;

/// The masks `simhash_pairs` joins on to find every pair within `k` bits among about `rows`
/// fingerprints: pairs sharing `fp & mask` for some mask are all the candidates (see
/// `simhash_core::batch`). `k` outside 0..63, and `rows` negative or not finite, are SQLSTATE
/// 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_pair_masks(k: i32, rows: f64) -> Vec<i64> {
    if !(rows.is_finite() && rows >= 0.0) {
        errors::invalid_parameter(format!("rows must be a finite number, 0 or more, got {rows}"));
    }
    let plan = u32::try_from(k)
        .ok()
        .and_then(|k| batch::pair_keys(k, rows))
        .unwrap_or_else(|| errors::invalid_parameter(format!("k must be between 0 and 63, got {k}")));
    plan.masks.into_iter().map(|m| m as i64).collect()
}

/// Connected components of the graph with edges `a[i]`-`b[i]`: every node on an edge, with the
/// smallest node (in text order) of its component, which names the component. Arrays of
/// different lengths or with NULLs are SQLSTATE 22023.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash_components(
    a: Array<&str>,
    b: Array<&str>,
) -> TableIterator<'static, (name!(node, String), name!(component, String))> {
    if a.len() != b.len() {
        errors::invalid_parameter(format!("the arrays must have the same length, got {} and {}", a.len(), b.len()));
    }
    let pairs: Vec<(&str, &str)> = a
        .iter()
        .zip(b.iter())
        .map(|pair| match pair {
            (Some(x), Some(y)) => (x, y),
            _ => errors::invalid_parameter("the arrays must not contain NULLs"),
        })
        .collect();
    let groups = batch::components(&pairs, &mut || {
        pgrx::check_for_interrupts!();
    });
    let rows: Vec<(String, String)> = groups.into_iter().map(|(n, c)| (n.to_owned(), c.to_owned())).collect();
    TableIterator::new(rows)
}
