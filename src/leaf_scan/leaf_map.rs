//! A backend's map of a block index's leaf level: for each leaf page, the lowest key it can
//! hold and the shared buffer it was last found in. With it a probed value goes straight to its
//! leaf page, pinned through `ReadRecentBuffer` (no buffer-table lookup when the page is still
//! where it was), instead of nbtree's descent: three page reads, each a buffer-table lookup in
//! an 8 GB pool that misses the CPU's caches. A k = 7 lookup at 10M rows makes 68 of them.
//!
//! The map is only ever a guess. What makes a guess safe to use, whatever happened to the
//! index since the map was read (splits, page deletion, a page recycled elsewhere): the page
//! is read under its share lock, is a live leaf page of this index, and holds an entry with a
//! key below the value sought. (A guess is also only taken when the value is not beyond the
//! page's high key, so that a stale map never starts a long walk to the right.) Every page left of a live leaf page holds keys at most its own
//! lowest, so every entry at or above the value is on that page or to its right, where the
//! reader goes on by the high keys as after a descent. Any other page is let go and nbtree
//! descends as before. A map whose guesses fail often is read again; an index with a new
//! relfilenode (REINDEX, TRUNCATE) gets a new map, and any invalidation of the index's cache
//! entry (VACUUM's statistics among them) drops it.
//!
//! Pages pinned through `ReadRecentBuffer` are not counted in the index's buffer hits
//! (`pg_statio_*_indexes.idx_blks_hit`); pages read are.

use pgrx::pg_sys;
use std::cell::RefCell;
use std::collections::HashMap;

use super::nbtree;

/// Lookups of an index in this backend before its map is read: a one-off call does not pay
/// for reading the level above the leaves (about 70 pages at 10M rows, a millisecond).
const LOOKUPS_BEFORE_MAP: u32 = 8;

/// Pages mapped at most in a backend, over all its maps (16 bytes each: 16 MB, kept outside
/// PostgreSQL's memory contexts for the life of the backend). An index that does not fit in what
/// is left (four permuted indexes of about 90M rows fill it) is not mapped, and its lookups
/// descend as before; the maps already read stay, so that lookups switching between indexes
/// never evict each other's.
const MAX_MAPPED_PAGES: usize = 1 << 20;

/// Guesses per review: after each window, a map whose guesses missed more than a quarter of the
/// time (the index changed a lot since it was read) is read again.
const GUESSES_PER_REVIEW: u32 = 64;

struct LeafMap {
    /// The index's file: a rewritten index is another one.
    file: u32,
    /// Ascending: the lowest key each leaf page can hold (its downlink's separator).
    lows: Vec<i64>,
    blocks: Vec<pg_sys::BlockNumber>,
    /// By block number: the buffer the page was last read from, or 0.
    recent: Vec<pg_sys::Buffer>,
    /// Guesses taken and missed in the current review window.
    taken: u32,
    missed: u32,
    /// And since the map was read (`_simhash_leaf_map`).
    all_taken: u64,
    all_missed: u64,
}

impl LeafMap {
    fn pages(&self) -> usize {
        self.blocks.len().max(self.recent.len())
    }
}

#[derive(Default)]
struct Entry {
    lookups: u32,
    /// Lookups before the next try at reading a map, after one that could not be read (a root
    /// that is a leaf, too many pages): doubled at each refusal, so that an index that cannot
    /// be mapped is not walked every few lookups.
    wait: u32,
    map: Option<LeafMap>,
}

thread_local! {
    static MAPS: RefCell<HashMap<pg_sys::Oid, Entry>> = RefCell::new(HashMap::new());
    /// Whether `forget` is registered (once per backend: PostgreSQL has a fixed number of slots).
    static WATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// An invalidation heard while the maps were borrowed: drop them all at the next lookup.
    static FORGET_ALL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// PostgreSQL calls it when a relation's cache entry is invalidated (DROP, REINDEX, TRUNCATE,
/// ALTER, statistics updates by VACUUM and ANALYZE), or all of them: the index's map goes, and
/// is read again after `LOOKUPS_BEFORE_MAP` more lookups.
#[pgrx::pg_guard]
unsafe extern "C-unwind" fn forget(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    let done = MAPS.with(|maps| match maps.try_borrow_mut() {
        Ok(mut maps) if relid == pg_sys::InvalidOid => {
            maps.clear();
            true
        }
        Ok(mut maps) => {
            maps.remove(&relid);
            true
        }
        Err(_) => false,
    });
    if !done {
        FORGET_ALL.set(true);
    }
}

/// Counts a lookup of `index` (one probe call), reading its map when it has been looked up
/// `LOOKUPS_BEFORE_MAP` times and has none, or only a stale one.
///
/// # Safety
/// `index` must be an open, locked B-tree index; no buffer lock held.
pub(crate) unsafe fn note_lookup(index: pg_sys::Relation) {
    // SAFETY: as for this function (see # Safety); `forget` stays valid for the life of the
    // process and runs only in it.
    unsafe {
        if !WATCHING.get() {
            crate::compat::register_relcache_callback(forget);
            WATCHING.set(true);
        }
        if FORGET_ALL.replace(false) {
            MAPS.with(|maps| maps.borrow_mut().clear());
        }
        // A file made in this transaction may yet be rolled back, or truncated in place.
        if crate::compat::file_new_in_transaction(index) {
            return;
        }
        let oid = (*index).rd_id;
        let file = crate::compat::relation_file(index);
        let read = MAPS.with(|maps| {
            let mut maps = maps.borrow_mut();
            let entry = maps.entry(oid).or_default();
            entry.lookups = entry.lookups.saturating_add(1);
            let stale = match &mut entry.map {
                Some(map) if map.file != file => true,
                Some(map) if map.taken >= GUESSES_PER_REVIEW => {
                    let stale = map.missed * 4 > map.taken;
                    (map.taken, map.missed) = (0, 0);
                    stale
                }
                Some(_) => false,
                None => true,
            };
            if stale {
                entry.map = None;
            }
            stale && entry.lookups >= LOOKUPS_BEFORE_MAP.max(entry.wait)
        });
        if read {
            // What is left of the budget, against the index's size (which bounds its leaf pages
            // and its highest block number) before a page of it is read.
            let mapped: usize = MAPS.with(|maps| maps.borrow().values().filter_map(|entry| entry.map.as_ref()).map(LeafMap::pages).sum());
            let pages = nbtree::pages(index) as usize;
            let map = if mapped + pages <= MAX_MAPPED_PAGES { read_map(index, file) } else { None };
            MAPS.with(|maps| {
                if let Some(entry) = maps.borrow_mut().get_mut(&oid) {
                    if map.is_none() {
                        entry.lookups = 0;
                        entry.wait = entry.wait.saturating_mul(2).max(LOOKUPS_BEFORE_MAP * 8);
                    }
                    entry.map = map;
                }
            });
        }
    }
}

/// This backend's map of `index`: its leaf pages, guesses taken and missed; None when it has
/// none. For tests (`_simhash_leaf_map`).
pub(crate) fn stats(index: pg_sys::Oid) -> Option<(usize, u64, u64)> {
    MAPS.with(|maps| {
        let maps = maps.borrow();
        let map = maps.get(&index)?.map.as_ref()?;
        Some((map.blocks.len(), map.all_taken, map.all_missed))
    })
}

/// Reads the level above the leaves, left to right: each downlink is a leaf page and the key
/// below which it holds nothing. None for an index whose root is a leaf.
///
/// # Safety
/// `index` must be an open, locked B-tree index; no buffer lock held.
unsafe fn read_map(index: pg_sys::Relation, file: u32) -> Option<LeafMap> {
    // SAFETY: `index` is an open, locked B-tree index (see # Safety). Each page of level 1 is
    // share-locked while read (`endpoint`, then `step_to`), its tuples read within `max_offset`,
    // and released at the end.
    unsafe {
        if nbtree::root_height(index) < 1 {
            return None;
        }
        // No snapshot: the map is only a guess, so an old snapshot is no reason to fail here
        // (old_snapshot_threshold; the lookups test the pages they read).
        let mut buf = nbtree::leftmost(index, 1, std::ptr::null_mut());
        if buf == pg_sys::InvalidBuffer as pg_sys::Buffer {
            return None;
        }
        let mut map = LeafMap { file, lows: Vec::new(), blocks: Vec::new(), recent: Vec::new(), taken: 0, missed: 0, all_taken: 0, all_missed: 0 };
        // The lowest key of the page being read: the high key of the page left of it.
        let mut page_low = i64::MIN;
        loop {
            let page = pg_sys::BufferGetPage(buf);
            let opaque = super::page_opaque(page);
            let rightmost = opaque.next == nbtree::NONE;
            if opaque.flags & nbtree::IGNORE == 0 {
                let first = if rightmost { nbtree::HIKEY } else { nbtree::HIKEY + 1 };
                for offset in first..=super::max_offset(page) {
                    let low = if offset == first || !super::has_key(page, offset) {
                        page_low
                    } else {
                        // A NULL separator: everything from there on is NULL, sorting last.
                        super::entry(index, page, offset).key.unwrap_or(i64::MAX)
                    };
                    let Some((ptr, _)) = super::tuple(page, offset) else { continue };
                    let tid = (*ptr.cast::<pg_sys::IndexTupleData>()).t_tid;
                    let block = (pg_sys::BlockNumber::from(tid.ip_blkid.bi_hi) << 16) | pg_sys::BlockNumber::from(tid.ip_blkid.bi_lo);
                    map.lows.push(low.max(map.lows.last().copied().unwrap_or(i64::MIN)));
                    map.blocks.push(block);
                }
                if !rightmost && super::has_key(page, nbtree::HIKEY) {
                    page_low = super::entry(index, page, nbtree::HIKEY).key.unwrap_or(i64::MAX);
                }
            }
            if rightmost {
                break;
            }
            buf = nbtree::step_to(index, buf, opaque.next);
        }
        nbtree::release(index, buf);
        if map.blocks.is_empty() {
            return None;
        }
        // Downlinks come from the pages: one beyond the index's length is damage, not a size to
        // allocate (2^32 blocks would be 16 GB); such a map is not used.
        let pages = map.blocks.iter().max().map_or(0, |&block| block as usize + 1);
        if pages > nbtree::pages(index) as usize {
            return None;
        }
        map.recent = vec![0; pages];
        Some(map)
    }
}

/// The leaf page of `index` to read entries from `low` on, share-locked, when the map knows
/// one that is safe to start from (see the module's comment); None otherwise (the caller
/// descends).
///
/// # Safety
/// `index` must be an open, locked B-tree index, `snapshot` valid; no buffer lock held.
pub(crate) unsafe fn leaf_for(index: pg_sys::Relation, snapshot: pg_sys::Snapshot, low: i64) -> Option<pg_sys::Buffer> {
    // SAFETY: as for this function (see # Safety): the page is pinned by ReadRecentBuffer or
    // ReadBufferExtended, share-locked, checked to be an initialised B-tree leaf page before
    // anything else on it is read, and released unless returned.
    unsafe {
        let oid = (*index).rd_id;
        let (block, recent) = MAPS.with(|maps| {
            let maps = maps.borrow();
            let map = maps.get(&oid)?.map.as_ref()?;
            // The keys of a permuted index are spread evenly: interpolating finds the page in a few
            // reads of `lows` (a few MB at 100M rows, each read a cache miss) where halving made
            // 18 of them, a sixth of a k = 3 lookup at 100M rows (BENCHMARKS.md).
            let at = simhash_core::sorted_search::lower_bound(0, map.lows.len(), low, |i| Some(map.lows[i])).checked_sub(1)?;
            let block = map.blocks[at];
            Some((block, map.recent.get(block as usize).copied().unwrap_or(0)))
        })?;
        let buf = nbtree::read_hinted(index, block, recent);
        let page = pg_sys::BufferGetPage(buf);
        let usable = !nbtree::page_is_new(page) && nbtree::is_btree_page(page) && {
            let opaque = super::page_opaque(page);
            let first = if opaque.next == nbtree::NONE { nbtree::HIKEY } else { nbtree::HIKEY + 1 };
            opaque.flags & nbtree::IGNORE == 0
                && opaque.flags & nbtree::LEAF != 0
                && first <= super::max_offset(page)
                && super::entry(index, page, first).key.is_some_and(|key| key < low)
                // And `low` is not beyond it (a page split since the map was read, or one
                // recycled elsewhere): a walk to the right from there is a miss, not a start.
                && (opaque.next == nbtree::NONE || super::high_key_above(index, page, low.saturating_sub(1)))
        };
        remember(oid, block, buf, Some(usable));
        if usable {
            nbtree::test_for_old_snapshot(snapshot, index, page);
            Some(buf)
        } else {
            nbtree::release(index, buf);
            None
        }
    }
}

/// Lets go of `buf` and share-locks page `next` of `index`, its right sibling, through the
/// buffer it was last found in when the map knows it (as `_bt_relandgetbuf` otherwise).
///
/// # Safety
/// `buf` must be a pinned, locked page of `index` and `next` one of its pages; `buf` is not to
/// be used again.
pub(crate) unsafe fn step_to(index: pg_sys::Relation, buf: pg_sys::Buffer, next: pg_sys::BlockNumber) -> pg_sys::Buffer {
    // SAFETY: as for this function (see # Safety).
    unsafe {
        let oid = (*index).rd_id;
        let recent = MAPS.with(|maps| {
            let maps = maps.borrow();
            maps.get(&oid)?.map.as_ref()?.recent.get(next as usize).copied()
        });
        let Some(recent) = recent else { return nbtree::step_to(index, buf, next) };
        nbtree::release(index, buf);
        let buf = nbtree::read_hinted(index, next, recent);
        // As `_bt_relandgetbuf`: a zeroed or damaged sibling is an ERROR, not an empty page.
        nbtree::check_page(index, buf);
        remember(oid, next, buf, None);
        buf
    }
}

/// Notes that page `block` of index `oid` is in buffer `buf`, and, for a guess, whether it was
/// taken.
fn remember(oid: pg_sys::Oid, block: pg_sys::BlockNumber, buf: pg_sys::Buffer, taken: Option<bool>) {
    MAPS.with(|maps| {
        let mut maps = maps.borrow_mut();
        let Some(map) = maps.get_mut(&oid).and_then(|entry| entry.map.as_mut()) else { return };
        if let Some(recent) = map.recent.get_mut(block as usize) {
            *recent = buf;
        }
        if let Some(taken) = taken {
            map.taken += 1;
            map.missed += u32::from(!taken);
            map.all_taken += 1;
            map.all_missed += u64::from(!taken);
        }
    });
}
