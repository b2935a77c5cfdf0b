//! The extension's own functions, found by identity, for the conditions the planner writes and
//! for reading block columns back.
//!
//! Our users' databases hold other extensions beside ours, most often pgvector, whose
//! `hamming_distance(bit, bit)` usually lands in the same schema (`public`) as our
//! `hamming_distance(simhash64, simhash64)`. A lookup by name alone fails there ("function name
//! is not unique"), and one through `search_path` could take a look-alike for ours. So each
//! object is found by its exact signature in the schema of a function already known to be ours
//! (the one being planned or called), through the system caches (no `search_path`, no schema
//! privilege check), and kept only when pg_depend says it belongs to the same extension.

use std::cell::Cell;
use std::ffi::CStr;

use pgrx::pg_sys;

/// The functions that rewritten `simhash_near` calls and block columns are made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtOids {
    /// `simhash_block(simhash64, int4, int4)`
    pub block_fn: pg_sys::Oid,
    /// `simhash_block_ball(simhash64, int4, int4, int4)`
    pub ball_fn: pg_sys::Oid,
    /// `hamming_distance(simhash64, simhash64)`
    pub distance_fn: pg_sys::Oid,
    /// `simhash_index_probe(regclass[], simhash64, int4)`
    pub probe_fn: pg_sys::Oid,
}

thread_local! {
    /// The last answer of `of_member`, with the member it was found from. The planner asks once
    /// per `simhash_near` call site, and the catalog lookups behind an answer would cost more
    /// than the rest of planning a lookup. Cleared by any change to pg_proc or pg_type (the
    /// extension dropped or updated, a function replaced), so it never names a dropped function.
    /// (ALTER EXTENSION ADD/DROP changes only pg_depend: the OIDs kept then stay valid.)
    static LAST: Cell<Option<(pg_sys::Oid, ExtOids)>> = const { Cell::new(None) };
    /// The OID of our simhash64 type, found once per backend and forgotten as `LAST` is.
    static SIMHASH64: Cell<Option<pg_sys::Oid>> = const { Cell::new(None) };
    /// Counts the invalidations heard. The catalog lookups behind an answer can themselves take
    /// in invalidations (a concurrent ALTER EXTENSION UPDATE committing meanwhile); an answer is
    /// kept only when none arrived while it was looked up, so a mix of old and new OIDs is
    /// never cached.
    static GENERATION: Cell<u64> = const { Cell::new(0) };
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

impl ExtOids {
    /// The functions of the extension that function `member` belongs to, from `member`'s schema;
    /// `None` when `member` belongs to no extension or one of them is missing (an install
    /// script of another version, say), and then callers rewrite nothing.
    ///
    /// # Safety
    /// Must run inside a transaction (catalog lookups).
    pub unsafe fn of_member(member: pg_sys::Oid) -> Option<ExtOids> {
        if let Some((cached_member, oids)) = LAST.get() {
            if cached_member == member {
                return Some(oids);
            }
        }
        watch_catalogs();
        let generation = GENERATION.get();
        let found = find(member)?;
        if GENERATION.get() == generation {
            LAST.set(Some((member, found)));
        }
        Some(found)
    }
}

/// Our `simhash64` type, for pgrx's `IntoDatum::type_oid` (arrays of fingerprints, SPI
/// arguments): pgrx's default looks the Rust type's name up through the `search_path`, where a
/// type of the same name could stand ahead of ours. Found in the schema of the extension
/// `simhash_pg`, owned by it; an ERROR when the extension is not installed in this database.
pub fn simhash64_type() -> pg_sys::Oid {
    if let Some(oid) = SIMHASH64.get() {
        return oid;
    }
    // SAFETY: type_oid is only asked for inside a transaction (building a Datum for SQL).
    unsafe { watch_catalogs() };
    let generation = GENERATION.get();
    // SAFETY: as above.
    let found = unsafe {
        let extension = pg_sys::get_extension_oid(c"simhash_pg".as_ptr(), true);
        extension_schema(extension).and_then(|schema| own_type(c"simhash64", schema, extension))
    };
    let oid = found.unwrap_or_else(|| {
        crate::errors::missing_object("type simhash64 of extension simhash_pg not found: is the extension installed in this database?")
    });
    if GENERATION.get() == generation {
        SIMHASH64.set(Some(oid));
    }
    oid
}

/// The schema of extension `extension`, read from pg_extension (which has no system cache
/// before PostgreSQL 18, and `get_extension_schema` is exported only from 16).
unsafe fn extension_schema(extension: pg_sys::Oid) -> Option<pg_sys::Oid> {
    if extension == pg_sys::InvalidOid {
        return None;
    }
    let catalog = pg_sys::table_open(pg_sys::ExtensionRelationId, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    let mut key = pg_sys::ScanKeyData::default();
    pg_sys::ScanKeyInit(
        &mut key,
        pg_sys::Anum_pg_extension_oid as pg_sys::AttrNumber,
        pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
        pg_sys::Oid::from(pg_sys::F_OIDEQ),
        pg_sys::Datum::from(extension),
    );
    let scan = pg_sys::systable_beginscan(
        catalog,
        pg_sys::Oid::from(pg_sys::ExtensionOidIndexId),
        true,
        std::ptr::null_mut(),
        1,
        &mut key,
    );
    let row = pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_extension>(pg_sys::systable_getnext(scan));
    let schema = (!row.is_null()).then(|| (*row).extnamespace);
    pg_sys::systable_endscan(scan);
    pg_sys::table_close(catalog, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    schema
}

unsafe fn find(member: pg_sys::Oid) -> Option<ExtOids> {
    let extension = pg_sys::getExtensionOfObject(pg_sys::ProcedureRelationId, member);
    if extension == pg_sys::InvalidOid {
        return None;
    }
    let schema = pg_sys::get_func_namespace(member);
    let simhash64 = own_type(c"simhash64", schema, extension)?;
    let function = |name: &CStr, args: &[pg_sys::Oid]| own_function(name, args, schema, extension);
    let int4 = pg_sys::INT4OID;
    Some(ExtOids {
        block_fn: function(c"simhash_block", &[simhash64, int4, int4])?,
        ball_fn: function(c"simhash_block_ball", &[simhash64, int4, int4, int4])?,
        distance_fn: function(c"hamming_distance", &[simhash64, simhash64])?,
        probe_fn: function(c"simhash_index_probe", &[pg_sys::REGCLASSARRAYOID, simhash64, int4])?,
    })
}

/// The function `schema.name(args)` when `extension` owns it.
unsafe fn own_function(
    name: &CStr,
    args: &[pg_sys::Oid],
    schema: pg_sys::Oid,
    extension: pg_sys::Oid,
) -> Option<pg_sys::Oid> {
    let types = pg_sys::buildoidvector(args.as_ptr(), args.len() as i32);
    let oid = pg_sys::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as i32,
        pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
        pg_sys::Datum::from(name.as_ptr()),
        pg_sys::Datum::from(types),
        pg_sys::Datum::from(schema),
        pg_sys::Datum::from(0),
    );
    pg_sys::pfree(types.cast());
    owned_by(pg_sys::ProcedureRelationId, oid, extension)
}

/// The type `schema.name` when `extension` owns it.
unsafe fn own_type(name: &CStr, schema: pg_sys::Oid, extension: pg_sys::Oid) -> Option<pg_sys::Oid> {
    let oid = pg_sys::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::TYPENAMENSP as i32,
        pg_sys::Anum_pg_type_oid as pg_sys::AttrNumber,
        pg_sys::Datum::from(name.as_ptr()),
        pg_sys::Datum::from(schema),
        pg_sys::Datum::from(0),
        pg_sys::Datum::from(0),
    );
    owned_by(pg_sys::TypeRelationId, oid, extension)
}

unsafe fn owned_by(class: pg_sys::Oid, oid: pg_sys::Oid, extension: pg_sys::Oid) -> Option<pg_sys::Oid> {
    (oid != pg_sys::InvalidOid && pg_sys::getExtensionOfObject(class, oid) == extension).then_some(oid)
}

/// Clears what this module found on every pg_proc and pg_type change this backend hears of
/// (the extension dropped, created again or updated); registered once per backend, since
/// PostgreSQL has a fixed number of callback slots.
unsafe fn watch_catalogs() {
    if WATCHING.get() {
        return;
    }
    for cache in [pg_sys::SysCacheIdentifier::PROCOID, pg_sys::SysCacheIdentifier::TYPEOID] {
        pg_sys::CacheRegisterSyscacheCallback(cache as i32, Some(forget), pg_sys::Datum::from(0));
    }
    WATCHING.set(true);
}

#[pgrx::pg_guard]
unsafe extern "C-unwind" fn forget(_arg: pg_sys::Datum, _cache: i32, _hash: u32) {
    LAST.set(None);
    SIMHASH64.set(None);
    GENERATION.set(GENERATION.get().wrapping_add(1));
}
