//! The `simhash64` type: 8 bytes, passed by value, aligned like `int8`.
//!
//! pgrx's derives make varlena types, which would cost a pointer, a header and a detoast on every
//! comparison; a 64-bit fingerprint fits in a Datum, so the type is declared by hand
//! (`sql/simhash64.sql`) and this module gives pgrx the Datum conversions and the I/O functions.

use std::ffi::CStr;

use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::prelude::*;
use pgrx::{Internal, StringInfo};
use simhash_core::hex;

use crate::errors;

/// A 64-bit SimHash fingerprint. Ordering is unsigned, matching the hex text form.
#[repr(transparent)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimHash64(pub u64);

// SAFETY: the SQL type named, `simhash64`, is the 8-byte by-value type FromDatum and IntoDatum
// read and write.
unsafe impl SqlTranslatable for SimHash64 {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(SimHash64);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::ThisExtension;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> =
        Ok(SqlMappingRef::literal("simhash64"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("simhash64")));
}

impl FromDatum for SimHash64 {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        (!is_null).then(|| SimHash64(datum.value() as u64))
    }
}

impl IntoDatum for SimHash64 {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        Some(pg_sys::Datum::from(self.0))
    }

    fn type_oid() -> pg_sys::Oid {
        crate::ext_objects::simhash64_type()
    }
}

// SAFETY: arguments are unboxed through FromDatum, which reads the by-value Datum as declared.
unsafe impl<'fcx> ArgAbi<'fcx> for SimHash64
where
    Self: 'fcx,
{
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        // Every function taking simhash64 is STRICT, so NULL never arrives here; if a future
        // declaration forgot STRICT, fail loudly (an ERROR) instead of inventing a fingerprint.
        let index = arg.index();
        // SAFETY: the argument is declared simhash64, which FromDatum reads (the trait's contract).
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("simhash64 argument {index} must not be NULL"))
    }
}

// SAFETY: simhash64 is an 8-byte pass-by-value type: the Datum is the fingerprint itself.
// Lets pgrx read `simhash64[]` arguments element by element (`sets.rs`).
unsafe impl pgrx::datum::UnboxDatum for SimHash64 {
    type As<'src> = SimHash64;
    unsafe fn unbox<'src>(datum: pgrx::datum::Datum<'src>) -> Self::As<'src>
    where
        Self: 'src,
    {
        SimHash64(datum.sans_lifetime().value() as u64)
    }
}

// SAFETY: the datum returned is the fingerprint itself, by value, as the type is declared.
unsafe impl BoxRet for SimHash64 {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> pgrx::datum::Datum<'fcx> {
        // SAFETY: a by-value Datum of the declared return type.
        unsafe { fcinfo.return_raw_datum(pg_sys::Datum::from(self.0)) }
    }
}

/// Text input: 16 hex digits with an optional `0x`; anything else is SQLSTATE 22P02.
#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_in(input: &CStr) -> SimHash64 {
    let text = input.to_string_lossy();
    match hex::parse(&text) {
        Ok(value) => SimHash64(value),
        Err(reason) => errors::invalid_text("simhash64", &text, reason),
    }
}

/// Text output: 16 lowercase hex digits, the canonical form.
#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_out(fp: SimHash64) -> &'static CStr {
    let mut out = StringInfo::new();
    out.push_str(&hex::format(fp.0));
    // SAFETY: the StringInfo was built here and is handed to PostgreSQL as the result.
    unsafe { out.leak_cstr() }
}

/// Binary input: 8 bytes in network order; a short message is PostgreSQL's own protocol error.
#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_recv(buf: Internal) -> SimHash64 {
    // SAFETY: PostgreSQL passes a StringInfo to a type's receive function; pq_getmsgint64
    // checks the remaining length and raises an ERROR rather than reading past it.
    let value = unsafe {
        let buf = buf.unwrap().map(|d| d.cast_mut_ptr::<pg_sys::StringInfoData>());
        match buf {
            Some(ptr) if !ptr.is_null() => pg_sys::pq_getmsgint64(ptr),
            _ => errors::invalid_parameter("simhash64_recv needs a message buffer"),
        }
    };
    SimHash64(value as u64)
}

/// Binary output: 8 bytes in network order (`bytea`, as every send function returns).
#[pg_extern(immutable, strict, parallel_safe, requires = ["simhash64_shell"])]
fn simhash64_send(fp: SimHash64) -> Vec<u8> {
    simhash_core::bytes::to_bytes(fp.0).to_vec()
}

extension_sql!(
    "CREATE TYPE simhash64; -- a shell, so that the I/O functions can name it\n",
    name = "simhash64_shell",
    bootstrap
);

extension_sql!(
    r#"
CREATE TYPE simhash64 (
    INPUT = simhash64_in,
    OUTPUT = simhash64_out,
    RECEIVE = simhash64_recv,
    SEND = simhash64_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain
);
COMMENT ON TYPE simhash64 IS '64-bit SimHash fingerprint; text form is 16 hex digits';
"#,
    name = "simhash64_type",
    creates = [Type(SimHash64)],
    requires = ["simhash64_shell", simhash64_in, simhash64_out, simhash64_recv, simhash64_send],
);
