//! All near pairs of a table at once, and the groups they form: the batch side of the block
//! layout, as Manku, Jain and Das Sarma (WWW 2007) run it over billions of pages.
//!
//! Cut into m blocks, two fingerprints within k < m bits agree exactly on at least t = m - k
//! blocks, so they agree on every bit of at least one t-subset of the blocks. Joining the table
//! with itself on `fp & mask`, once per t-subset mask, finds every such pair by equality (a hash
//! join), and a pair found through several subsets is kept only for the first one whose key it
//! shares. Longer keys (larger t) mean fewer chance candidates but more joins; [`pair_keys`]
//! picks the layout with the least expected work for the table's size.

use crate::blocks::Block;
use crate::distance::BITS;
use rustc_hash::FxHashMap;
use std::hash::Hash;

/// The largest k all-pairs work takes (`simhash_pairs`, `simhash_chained_groups`, `simhash_representative_groups`,
/// `simhash_pairs_between`): at 64 every pair is near, and no key can narrow the search.
pub const MAX_PAIR_K: u32 = BITS - 1;

/// Checks a k for all-pairs work: 0..=`MAX_PAIR_K`.
pub fn check_pair_threshold(k: i64) -> Result<u32, String> {
    u32::try_from(k)
        .ok()
        .filter(|&k| k <= MAX_PAIR_K)
        .ok_or_else(|| format!("k must be between 0 and {MAX_PAIR_K}, got {k}"))
}

/// Most subset keys one run may use: past this the joins, not the candidates, dominate.
pub const MAX_KEYS: u64 = 512;

/// How [`pair_keys`] cuts the fingerprint: into m blocks, with one key per subset of m - k of
/// them.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyPlan {
    /// One mask per subset of the blocks, in lexicographic order of the subsets.
    pub masks: Vec<u64>,
    /// Expected pairs of random fingerprints that share some key (each is rechecked).
    pub expected_candidates: f64,
}

/// The subset keys that find every pair within `k` bits among `rows` fingerprints with the
/// least expected work (one hash join per key, plus the chance candidates they produce), or
/// `None` for `k` >= 64, where every pair is within `k` and no key can narrow the search.
pub fn pair_keys(k: u32, rows: f64) -> Option<KeyPlan> {
    let rows = rows.max(1.0);
    best_keys(k, rows, rows * rows / 2.0)
}

/// The same for the pairs across two tables of `a` and `b` rows (`simhash_pairs_between`, and
/// `simhash_ingest` joining a batch with its target): each join reads both, and the pairs a key
/// may produce are the `a * b` cross pairs.
pub fn cross_keys(k: u32, a: f64, b: f64) -> Option<KeyPlan> {
    let (a, b) = (a.max(1.0), b.max(1.0));
    best_keys(k, a + b, a * b)
}

/// The layout with the least `keys * scanned + candidates`, where a key of `bits` bits lets
/// `pairs / 2^bits` chance pairs through.
pub(crate) fn best_keys(k: u32, scanned: f64, pairs: f64) -> Option<KeyPlan> {
    if k >= BITS {
        return None;
    }
    let mut best: Option<(f64, u32, u32, f64)> = None;
    for m in (k + 1).max(2)..=BITS {
        let t = m - k;
        let keys = binomial(m, t);
        if keys > MAX_KEYS {
            continue;
        }
        // Each key of t blocks has at least floor(64 t / m) bits.
        let bits = f64::from(BITS * t / m);
        let candidates = keys as f64 * pairs / bits.exp2();
        let cost = keys as f64 * scanned + candidates;
        if best.is_none_or(|(c, ..)| cost < c) {
            best = Some((cost, m, t, candidates));
        }
    }
    let (_, m, t, expected_candidates) = best?;
    let block_masks: Vec<u64> = (0..m)
        .map(|i| {
            let b = Block::new(i64::from(i), i64::from(m)).expect("1 < m <= 64 and i < m");
            let ones = if b.width == BITS { u64::MAX } else { (1u64 << b.width) - 1 };
            ones << (BITS - b.start - b.width)
        })
        .collect();
    let masks = subsets(m, t).into_iter().map(|s| s.iter().fold(0u64, |acc, &i| acc | block_masks[i as usize])).collect();
    Some(KeyPlan { masks, expected_candidates })
}

/// Index entries read off a leaf page (about 16 ns each, popcount included) that one B-tree
/// descent costs (about 3.3 µs with its page locks): measured on 1M fingerprints as one
/// `simhash_ingest` lookup per row through 4 covering blocks (4 descents and 61 entries: 14 µs)
/// against 8 (4 descents and 15,600 entries: 260 µs) (BENCHMARKS.md, *The queries users write*).
pub const DESCENT_IN_ENTRIES: f64 = 200.0;

/// What one descent costs in an index of `rows` entries: [`DESCENT_IN_ENTRIES`] up to 1M, and
/// that again for every tenfold beyond (its pages are colder, each level a cache miss): a
/// lookup per row through 4 covering blocks took 14 µs at 1M rows and 39 µs at 10M, where the
/// pages it reads beside the descents stay at 16 ns an entry (BENCHMARKS.md, *The queries
/// users write*).
pub fn descent_in_entries(rows: f64) -> f64 {
    DESCENT_IN_ENTRIES * descent_scale(rows)
}

/// How much dearer a descent is in an index of `rows` entries than in one of up to 1M: once more
/// for every tenfold beyond (its pages colder, each level a cache miss).
pub fn descent_scale(rows: f64) -> f64 {
    1.0 + (rows / 1e6).max(1.0).log10()
}

/// Entries one row of a masked-key hash join costs, the scan, the hash probe and the candidate
/// check together (about 190 ns): the same measurement, 50,000 rows against 1M.
pub const JOIN_ROW_IN_ENTRIES: f64 = 12.0;

/// Entries one query of a pass costs per unit of `near_set::query_cost` (a bucket probe or a
/// member compared, about 16 ns like a leaf entry): the pass of `simhash_ingest` over a whole
/// covering block index asks its batch's `NearSet` once per entry it reads.
pub const PASS_QUERY_UNIT_IN_ENTRIES: f64 = 1.0;

/// How `simhash_ingest` finds which rows of its batch lie within k bits of a target table's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchMethod {
    /// One lookup per batch row through the target's block indexes.
    Lookups,
    /// One pass over one of the target's covering block indexes, each entry checked against an
    /// in-memory block index of the batch (`near_set`).
    Pass,
    /// The hash joins of [`cross_keys`], each reading batch and target once.
    Joins,
}

/// The cheapest way for `batch` fingerprints against a `target` of that many rows: `lookup` is
/// one lookup's cost in entries (descents times [`DESCENT_IN_ENTRIES`] plus entries read), None
/// without block indexes; `pass` says whether the target has a covering block index to read
/// whole. The joins cost [`JOIN_ROW_IN_ENTRIES`] per row read and candidate; the pass one entry
/// per target row plus its query of the batch.
pub fn batch_method(k: u32, batch: f64, target: f64, lookup: Option<f64>, pass: bool) -> BatchMethod {
    let Some(plan) = cross_keys(k, batch, target) else {
        return BatchMethod::Lookups; // k = 64: every row is near any row, one lookup answers
    };
    let (batch, target) = (batch.max(1.0), target.max(1.0));
    let joins = JOIN_ROW_IN_ENTRIES * (plan.masks.len() as f64 * (batch + target) + plan.expected_candidates);
    let lookups = lookup.map(|per_row| batch * per_row);
    let pass = pass.then(|| target * (1.0 + PASS_QUERY_UNIT_IN_ENTRIES * crate::near_set::query_cost(k, batch)));
    [(BatchMethod::Lookups, lookups), (BatchMethod::Pass, pass), (BatchMethod::Joins, Some(joins))]
        .into_iter()
        .filter_map(|(method, cost)| Some((method, cost?)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(BatchMethod::Joins, |(method, _)| method)
}

/// Whether the hash joins beat one lookup per batch row ([`batch_method`] without a pass):
/// `simhash_pairs_between` asks it of each side.
pub fn batch_prefers_joins(k: u32, batch: f64, target: f64, lookup: Option<f64>) -> bool {
    batch_method(k, batch, target, lookup, false) == BatchMethod::Joins
}

/// Bytes `stars` and `components` take per edge, generously (two keys of a text array and
/// their copies in the result, the dense ids, the adjacency, the union-find): the extension
/// checks a graph against its memory limit with it before building anything.
pub const GRAPH_BYTES_PER_EDGE: usize = 400;

/// Groups that do not chain: every member is near its group's representative. Nodes are taken
/// in `order` (the caller's "keep" rule: earliest, longest...; nodes on an edge but not in
/// `order` come after, in their own order); a node in no group yet opens one as its
/// representative and takes in each of its neighbours that is in no group yet. Returns
/// `(node, representative)` for every node on an edge, in the order nodes were taken.
/// Connected components (`components`) join two unrelated rows through a chain of near ones,
/// which templated pages and mails make long; here no member is further than one edge from its
/// representative, and no two representatives are near each other.
pub fn stars<K: Ord + Clone + Hash>(order: &[K], pairs: &[(K, K)], check: &mut dyn FnMut()) -> Vec<(K, K)> {
    let (ids, nodes, edges) = dense_ids(pairs, check);
    // Adjacency lists, compressed: the neighbours of node v are adjacent[start[v]..start[v + 1]].
    let mut degree = vec![0usize; nodes.len() + 1];
    for &(a, b) in &edges {
        degree[a] += 1;
        degree[b] += 1;
    }
    let mut start = vec![0usize; nodes.len() + 1];
    for v in 0..nodes.len() {
        start[v + 1] = start[v] + degree[v];
    }
    let mut fill = start.clone();
    let mut adjacent = vec![0usize; start[nodes.len()]];
    for &(a, b) in &edges {
        adjacent[fill[a]] = b;
        fill[a] += 1;
        adjacent[fill[b]] = a;
        fill[b] += 1;
    }
    drop(edges);
    // The order to take nodes in: those of `order` first, then the rest sorted.
    let mut taken: Vec<usize> = Vec::with_capacity(nodes.len());
    let mut listed = vec![false; nodes.len()];
    for k in order {
        if let Some(&v) = ids.get(k) {
            if !listed[v] {
                listed[v] = true;
                taken.push(v);
            }
        }
    }
    let mut rest: Vec<usize> = (0..nodes.len()).filter(|&v| !listed[v]).collect();
    rest.sort_unstable_by(|&x, &y| nodes[x].cmp(nodes[y]));
    taken.extend(rest);
    let mut group: Vec<Option<usize>> = vec![None; nodes.len()];
    let mut out: Vec<(K, K)> = Vec::with_capacity(nodes.len());
    for (i, &v) in taken.iter().enumerate() {
        if i % CHECK_EVERY == 0 {
            check();
        }
        if group[v].is_some() {
            continue;
        }
        group[v] = Some(v);
        out.push((nodes[v].clone(), nodes[v].clone()));
        for &w in &adjacent[start[v]..start[v + 1]] {
            if group[w].is_none() {
                group[w] = Some(v);
                out.push((nodes[w].clone(), nodes[v].clone()));
            }
        }
    }
    out
}

fn binomial(n: u32, r: u32) -> u64 {
    let r = r.min(n - r);
    (0..r).fold(1u64, |acc, i| acc.saturating_mul(u64::from(n - i)) / u64::from(i + 1))
}

/// Every `t`-subset of `0..m`, lexicographically.
fn subsets(m: u32, t: u32) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    let mut current: Vec<u32> = (0..t).collect();
    loop {
        out.push(current.clone());
        // Advance the rightmost position that can move.
        let Some(pos) = (0..t as usize).rev().find(|&p| current[p] < m - t + p as u32) else {
            return out;
        };
        current[pos] += 1;
        for p in pos + 1..t as usize {
            current[p] = current[p - 1] + 1;
        }
    }
}

/// How many steps the long loops below take between two calls of `check` (cancellation).
const CHECK_EVERY: usize = 1 << 16;

/// The nodes of the graph whose edges are `pairs`, numbered densely in order of first
/// appearance through a hash map (no sort of all endpoints): the map from node to number, the
/// nodes by number, and the edges as numbers. `check` runs every `CHECK_EVERY` edges.
#[allow(clippy::type_complexity)]
fn dense_ids<'a, K: Hash + Eq>(
    pairs: &'a [(K, K)],
    check: &mut dyn FnMut(),
) -> (FxHashMap<&'a K, usize>, Vec<&'a K>, Vec<(usize, usize)>) {
    let mut ids: FxHashMap<&K, usize> = FxHashMap::default();
    let mut nodes: Vec<&K> = Vec::new();
    let mut edges: Vec<(usize, usize)> = Vec::with_capacity(pairs.len());
    for (i, (a, b)) in pairs.iter().enumerate() {
        if i % CHECK_EVERY == 0 {
            check();
        }
        let mut id = |k: &'a K| {
            *ids.entry(k).or_insert_with(|| {
                nodes.push(k);
                nodes.len() - 1
            })
        };
        let (ia, ib) = (id(a), id(b));
        edges.push((ia, ib));
    }
    (ids, nodes, edges)
}

/// Connected components of the graph whose edges are `pairs`: for every node on some edge,
/// `(node, smallest node of its component)`, sorted by node. Nodes get dense ids through a hash
/// map (no sort of all endpoints), then union by size with path halving; `check` runs every
/// few thousand steps so that a cancel stops it.
pub fn components<K: Ord + Clone + Hash>(pairs: &[(K, K)], check: &mut dyn FnMut()) -> Vec<(K, K)> {
    let (ids, nodes, edges) = dense_ids(pairs, check);
    drop(ids);
    let mut parent: Vec<usize> = (0..nodes.len()).collect();
    let mut size = vec![1u32; nodes.len()];
    let find = |parent: &mut Vec<usize>, mut x: usize| {
        while parent[x] != x {
            parent[x] = parent[parent[x]];
            x = parent[x];
        }
        x
    };
    for (i, &(a, b)) in edges.iter().enumerate() {
        if i % CHECK_EVERY == 0 {
            check();
        }
        let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
        if ra != rb {
            let (big, small) = if size[ra] >= size[rb] { (ra, rb) } else { (rb, ra) };
            parent[small] = big;
            size[big] += size[small];
        }
    }
    drop(edges);
    // The smallest node of each component, kept at its root.
    let mut smallest: Vec<usize> = (0..nodes.len()).collect();
    for i in 0..nodes.len() {
        if i % CHECK_EVERY == 0 {
            check();
        }
        let root = find(&mut parent, i);
        if nodes[i] < nodes[smallest[root]] {
            smallest[root] = i;
        }
    }
    let mut out: Vec<(&K, &K)> = Vec::with_capacity(nodes.len());
    for i in 0..nodes.len() {
        if i % CHECK_EVERY == 0 {
            check();
        }
        out.push((nodes[i], nodes[smallest[find(&mut parent, i)]]));
    }
    check();
    out.sort_unstable_by(|x, y| x.0.cmp(y.0));
    check();
    out.into_iter().map(|(n, c)| (n.clone(), c.clone())).collect()
}

/// [`first_shared_key`] for rows of one fingerprint each, without building the element list:
/// the first of `masks` that `a` and `b` share, 1-based, when they are within `k`.
pub fn first_shared_mask(a: u64, b: u64, k: u32, masks: &[u64]) -> Option<usize> {
    if crate::distance::hamming(a, b) > k {
        return None;
    }
    masks.iter().position(|&mask| (a ^ b) & mask == 0).map(|j| j + 1)
}

/// Which of a run's join keys returns a pair of rows, 1-based, or `None` when none does: key j
/// joins element `elements[j]` (1-based, 1 for a single fingerprint) of both rows on `masks[j]`,
/// keys in the run's order. The pair belongs to the first element that puts the rows within `k`
/// (both present), and to the first of that element's keys whose mask the two share. One pass
/// over the keys: the joins on the Citus workers ask it of each candidate once, where the SQL of
/// 0.3.0 repeated every earlier key's test in each key's branch (quadratic text that Citus took
/// gigabytes to plan).
pub fn first_shared_key(x: &[Option<u64>], y: &[Option<u64>], k: u32, masks: &[u64], elements: &[usize]) -> Option<usize> {
    let near = |e: usize| match (x.get(e.wrapping_sub(1)).copied().flatten(), y.get(e.wrapping_sub(1)).copied().flatten()) {
        (Some(a), Some(b)) if crate::distance::hamming(a, b) <= k => Some(a ^ b),
        _ => None,
    };
    let first = (1..=x.len().min(y.len())).find_map(|e| near(e).map(|xor| (e, xor)))?;
    masks
        .iter()
        .zip(elements)
        .position(|(&mask, &e)| e == first.0 && first.1 & mask == 0)
        .map(|j| j + 1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn first_shared_key_is_the_first_near_elements_first_shared_mask() {
        use super::first_shared_key;
        let (a, b) = (0u64, 0b11u64); // 2 bits apart, in the lowest byte
        let masks = [0xff, 0xff00, 0xff, 0xff00];
        let elements = [1, 1, 2, 2];
        // One fingerprint: the first mask the XOR misses.
        assert_eq!(first_shared_key(&[Some(a)], &[Some(b)], 3, &masks[..2], &elements[..2]), Some(2));
        assert_eq!(first_shared_key(&[Some(a)], &[Some(b)], 1, &masks[..2], &elements[..2]), None); // not near
        // Sets: element 1 near, so its keys decide, even when element 2 shares an earlier-listed mask.
        assert_eq!(first_shared_key(&[Some(a), Some(a)], &[Some(b), Some(a)], 3, &masks, &elements), Some(2));
        // Element 1 missing or far: element 2's first shared key.
        assert_eq!(first_shared_key(&[None, Some(a)], &[Some(b), Some(a)], 3, &masks, &elements), Some(3));
        assert_eq!(first_shared_key(&[Some(a), Some(a)], &[Some(!a), Some(b)], 3, &masks, &elements), Some(4));
        // The first near element shares no key: no key returns the pair (the run's keys are
        // complete for every element, so this cannot happen with the keys of pair_keys).
        assert_eq!(first_shared_key(&[Some(a), Some(a)], &[Some(0x0101), Some(a)], 3, &masks, &elements), None);
    }

    #[test]
    fn first_shared_key_of_pair_keys_finds_every_near_pair_once() {
        // Every pair within k shares a key of pair_keys, so the function always answers.
        let mut state = 0x9e3779b97f4a7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for k in [0u32, 3, 7, 10] {
            let plan = super::pair_keys(k, 1e6).unwrap();
            let elements = vec![1; plan.masks.len()];
            for _ in 0..2000 {
                let a = next();
                let mut b = a;
                for _ in 0..k {
                    b ^= 1 << (next() % 64);
                }
                let j = super::first_shared_key(&[Some(a)], &[Some(b)], k, &plan.masks, &elements).expect("near pairs share a key");
                assert_eq!(super::first_shared_mask(a, b, k, &plan.masks), Some(j));
                assert_eq!((a ^ b) & plan.masks[j - 1], 0);
                assert!(plan.masks[..j - 1].iter().all(|m| (a ^ b) & m != 0));
            }
        }
    }
    #[test]
    fn pair_threshold_is_the_range_pair_keys_serves() {
        assert_eq!(super::check_pair_threshold(0), Ok(0));
        assert_eq!(super::check_pair_threshold(63), Ok(63));
        assert!(super::pair_keys(63, 1e6).is_some());
        assert_eq!(super::check_pair_threshold(64), Err("k must be between 0 and 63, got 64".to_string()));
        assert!(super::pair_keys(64, 1e6).is_none());
        assert!(super::check_pair_threshold(-1).is_err());
    }

    #[test]
    fn cross_keys_find_every_cross_pair_within_k() {
        let mut rng = crate::testing::Rng::new(0x9e37_79b9_7f4a_7c15);
        for (k, a, b) in [(3u32, 5e4, 1e6), (7, 1e3, 1e7), (0, 1.0, 1.0), (12, 1e5, 1e5)] {
            let plan = cross_keys(k, a, b).unwrap();
            for _ in 0..500 {
                let x = rng.next();
                let mut y = x;
                for _ in 0..(rng.next() % (u64::from(k) + 1)) {
                    y ^= 1 << (rng.next() % 64);
                }
                assert!(plan.masks.iter().any(|&m| x & m == y & m), "k {k}");
            }
        }
        assert!(cross_keys(64, 1.0, 1.0).is_none());
    }

    #[test]
    fn a_big_batch_against_a_weak_layout_joins_and_a_small_one_probes() {
        // 50k rows into 1M (the measurement behind the constants): 8-bit blocks read ~4,000
        // entries per probe, so joins win; 16-bit blocks a few dozen, so lookups win.
        let lookup = |m: f64| 4.0 * DESCENT_IN_ENTRIES + 4.0 * 1e6 / 2f64.powf(64.0 / m);
        assert!(batch_prefers_joins(3, 5e4, 1e6, Some(lookup(8.0))));
        assert!(!batch_prefers_joins(3, 5e4, 1e6, Some(lookup(4.0))));
        // 100 rows into 10M through 16-bit blocks: a few descents each, lookups win.
        assert!(!batch_prefers_joins(3, 100.0, 1e7, Some(4.0 * DESCENT_IN_ENTRIES + 4.0 * 1e7 / 65536.0)));
        // No block index: every lookup reads the table.
        assert!(batch_prefers_joins(3, 100.0, 1e7, None));
        assert!(!batch_prefers_joins(64, 100.0, 1e7, None));
    }

    #[test]
    fn a_covering_index_read_whole_beats_thousands_of_entries_per_lookup() {
        // 50k rows into 10M through 8-bit covering blocks: ~156,000 entries per lookup, and the
        // joins read the target four times; one pass reads it once.
        let lookup = |m: f64| 4.0 * descent_in_entries(1e7) + 4.0 * 1e7 / 2f64.powf(64.0 / m);
        assert_eq!(batch_method(3, 5e4, 1e7, Some(lookup(8.0)), true), BatchMethod::Pass);
        assert_eq!(batch_method(3, 5e4, 1e7, Some(lookup(8.0)), false), BatchMethod::Joins);
        // A few rows: a lookup each, whatever the layout can also do.
        assert_eq!(batch_method(3, 100.0, 1e7, Some(lookup(4.0)), true), BatchMethod::Lookups);
        assert_eq!(batch_method(3, 100.0, 1e7, None, true), BatchMethod::Pass);
        // 50k rows into 10M through 16-bit blocks: about even, and the pass measured faster.
        assert_eq!(batch_method(3, 5e4, 1e7, Some(lookup(4.0)), true), BatchMethod::Pass);
        assert_eq!(descent_in_entries(1e5), DESCENT_IN_ENTRIES);
        assert_eq!(descent_in_entries(1e7), 2.0 * DESCENT_IN_ENTRIES);
        assert_eq!(batch_method(64, 100.0, 1e7, None, true), BatchMethod::Lookups);
    }

    use super::*;
    use crate::distance::hamming;

    #[test]
    fn stars_do_not_chain_and_follow_the_order() {
        // A chain a - b - c - d: components make one group; stars take a (with b), then c (with d).
        let pairs = [("a", "b"), ("b", "c"), ("c", "d")];
        assert_eq!(stars(&["a", "b", "c", "d"], &pairs, &mut || {}), [("a", "a"), ("b", "a"), ("c", "c"), ("d", "c")]);
        // Keep d first: d takes c; b opens its own group and takes a.
        assert_eq!(stars(&["d", "c", "b", "a"], &pairs, &mut || {}), [("d", "d"), ("c", "d"), ("b", "b"), ("a", "b")]);
        // Nodes missing from the order come after, in their own order.
        assert_eq!(stars(&["c"], &pairs, &mut || {}), [("c", "c"), ("b", "c"), ("d", "c"), ("a", "a")]);
    }

    #[test]
    fn every_member_is_near_its_representative_and_representatives_are_apart() {
        let mut x = 99u64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let pairs: Vec<(u32, u32)> = (0..3000).map(|_| ((next() % 400) as u32, (next() % 400) as u32)).filter(|(a, b)| a != b).collect();
        let order: Vec<u32> = (0..400).rev().collect();
        let groups = stars(&order, &pairs, &mut || {});
        let near = |a: u32, b: u32| pairs.iter().any(|&(x, y)| (x, y) == (a, b) || (x, y) == (b, a));
        let reps: Vec<u32> = groups.iter().filter(|(n, r)| n == r).map(|(n, _)| *n).collect();
        for &(n, r) in &groups {
            assert!(n == r || near(n, r), "{n} not near its representative {r}");
            assert!(r >= n || n == r, "representative {r} comes after member {n} in the order");
        }
        for (i, &a) in reps.iter().enumerate() {
            assert!(reps[i + 1..].iter().all(|&b| !near(a, b)), "representatives {a} near another");
        }
        let mut seen: Vec<u32> = groups.iter().map(|(n, _)| *n).collect();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), groups.len(), "a node in two groups");
    }


    #[test]
    fn subsets_are_all_there_in_order() {
        assert_eq!(subsets(4, 1), vec![vec![0], vec![1], vec![2], vec![3]]);
        assert_eq!(subsets(4, 2), vec![vec![0, 1], vec![0, 2], vec![0, 3], vec![1, 2], vec![1, 3], vec![2, 3]]);
        assert_eq!(subsets(5, 5).len(), 1);
        assert_eq!(subsets(10, 3).len(), 120);
        assert_eq!(binomial(10, 3), 120);
    }

    #[test]
    fn key_masks_cover_the_chosen_blocks() {
        // At 1M rows, k = 3: two blocks of five (25- or 26-bit keys, ten of them) beat one of
        // four (16 bits).
        let plan = pair_keys(3, 1e6).unwrap();
        assert_eq!(plan.masks.len() as u64, binomial(5, 2));
        assert!(plan.masks.iter().all(|m| (25..=26).contains(&m.count_ones())));
        // Every bit is in some key, and any two blocks (a pigeonhole's k + 1 = 4 intact blocks
        // of 5 hold two) make one of the keys.
        assert_eq!(plan.masks.iter().fold(0, |a, m| a | m), u64::MAX);
        assert_eq!(plan.masks.iter().collect::<std::collections::HashSet<_>>().len(), 10);
        // Tiny tables: the fewest joins.
        assert_eq!(pair_keys(3, 10.0).unwrap().masks.len(), 4);
        assert!(pair_keys(64, 10.0).is_none());
        assert!(pair_keys(63, 1e6).is_some());
    }

    #[test]
    fn some_key_is_shared_by_every_pair_within_k() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for k in [0u32, 1, 3, 5, 7, 12] {
            for rows in [10.0, 1e6, 1e9] {
                let plan = pair_keys(k, rows).unwrap();
                for _ in 0..300 {
                    let a = next();
                    let mut b = a;
                    for _ in 0..k {
                        b ^= 1 << (next() % 64);
                    }
                    assert!(hamming(a, b) <= k);
                    assert!(plan.masks.iter().any(|m| a & m == b & m), "k={k} rows={rows} a={a:x} b={b:x}");
                }
            }
        }
    }

    #[test]
    fn components_join_chains_and_name_them_by_their_smallest_node() {
        let got = components(&[(5, 9), (9, 2), (7, 8), (2, 5), (100, 100)], &mut || {});
        assert_eq!(got, vec![(2, 2), (5, 2), (7, 7), (8, 7), (9, 2), (100, 100)]);
        assert!(components::<i64>(&[], &mut || {}).is_empty());
        let named = components(&[("b".to_string(), "a".to_string())], &mut || {});
        assert_eq!(named, vec![("a".into(), "a".into()), ("b".into(), "a".into())]);
    }
}
