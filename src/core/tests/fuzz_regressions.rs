//! Inputs the fuzzers (src/core/fuzz, run by tests/reliability/fuzz.sh) found crashing, kept as
//! tests so that they stay fixed. RELIABILITY.md lists the runs.

use simhash_core::blocks::BlockError;
use simhash_core::probe::{plan, radii, PlanError};

/// probe_plan, crash-f265045d: `plan` with m = 0 divided by zero in `radii` (no block was built,
/// so Block::new never checked m). Not reachable from SQL (the callers pass m >= 2), but a panic.
#[test]
fn plan_with_no_blocks_is_an_error() {
    for k in 0..=64 {
        assert_eq!(plan(0x0123_4567_89ab_cdef, k, 0), Err(PlanError::Blocks(BlockError::BadCount(0))));
        assert!(radii(k as u32, 0).is_empty());
    }
    assert_eq!(plan(0, 3, -1), Err(PlanError::Blocks(BlockError::BadCount(-1))));
    assert_eq!(plan(0, 3, 65), Err(PlanError::Blocks(BlockError::BadCount(65))));
}
