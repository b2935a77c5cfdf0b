//! What differs between the PostgreSQL majors simhash_pg builds for (13-18), in one place.

use pgrx::pg_sys;

/// The attributes of a tuple descriptor, in column order. PostgreSQL 18 puts an array of
/// `CompactAttribute`s first and the full `pg_attribute` rows after it (its `TupleDescAttr`).
pub(crate) unsafe fn attributes<'a>(desc: pg_sys::TupleDesc) -> &'a [pg_sys::FormData_pg_attribute] {
    let natts = (*desc).natts as usize;
    #[cfg(not(feature = "pg18"))]
    {
        (*desc).attrs.as_slice(natts)
    }
    #[cfg(feature = "pg18")]
    {
        let first = (*desc).compact_attrs.as_ptr().add(natts).cast::<pg_sys::FormData_pg_attribute>();
        std::slice::from_raw_parts(first, natts)
    }
}
