//! Argument types that check a caller's value before Rust copies or trusts it.
//!
//! pgrx's own conversions turn a missing relation into an internal error (XX000), parse a whole
//! `jsonb` into a `serde_json::Value` (about 30 bytes a node, so a large one could take
//! gigabytes, and a deep one panics), and read `text` as UTF-8 whatever the database's encoding.
//! These types take the same SQL types (`regclass`, `jsonb`, `text`) and instead:
//! - [`Table`]: opens the relation if it exists, else SQLSTATE 42P01;
//! - [`JsonOptions`]: refuses more than [`MAX_OPTIONS_BYTES`] of JSON, and JSON serde cannot read
//!   (nesting past 128), with 22023, before parsing;
//! - [`Text`]: the text in UTF-8, converted from the database's encoding (LATIN1, EUC-JP, ...);
//!   in a SQL_ASCII database text must be valid UTF-8 (22021), as nothing says what its bytes mean;
//!   [`ServerText`] the way back, for text the functions return;
//! - [`Name`]: a name (a column's) as bytes in the database's encoding, as the catalog has it.

use std::ops::Deref;

use pgrx::callconv::{Arg, ArgAbi};
use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin};
use pgrx::prelude::*;
use pgrx::{PgRelation, PgSqlErrorCode};

use crate::errors;

/// Unboxes an argument through its FromDatum; STRICT functions never see NULL.
macro_rules! argument_from_datum {
    ($ty:ty, $sql:literal) => {
        // SAFETY: arguments are unboxed through FromDatum, which reads the SQL type declared.
        unsafe impl<'fcx> ArgAbi<'fcx> for $ty
        where
            Self: 'fcx,
        {
            unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
                let index = arg.index();
                // SAFETY: the argument is declared with this SQL type, which FromDatum reads.
                unsafe { arg.unbox_arg_using_from_datum() }
                    .unwrap_or_else(|| panic!("{} argument {index} must not be NULL", $sql))
            }
        }

        // SAFETY: FromDatum reads the SQL type named.
        unsafe impl SqlTranslatable for $ty {
            const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!($ty);
            const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
            const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal($sql));
            const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal($sql)));
        }
    };
}

/// The same for an argument type that borrows from the call (`'fcx`).
macro_rules! borrowed_argument_from_datum {
    ($ty:ident, $sql:literal) => {
        // SAFETY: arguments are unboxed through FromDatum, which reads the SQL type declared.
        unsafe impl<'fcx> ArgAbi<'fcx> for $ty<'fcx> {
            unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
                let index = arg.index();
                // SAFETY: the argument is declared with this SQL type, which FromDatum reads.
                unsafe { arg.unbox_arg_using_from_datum() }
                    .unwrap_or_else(|| panic!("{} argument {index} must not be NULL", $sql))
            }
        }

        // SAFETY: FromDatum reads the SQL type named.
        unsafe impl SqlTranslatable for $ty<'_> {
            const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!($ty<'static>);
            const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
            const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal($sql));
            const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal($sql)));
        }
    };
}

/// A `regclass` argument: the relation, open with AccessShareLock (kept to the end of the
/// transaction), or SQLSTATE 42P01 when no relation has that OID (`0::regclass`, a dropped one).
pub struct Table(PgRelation);

impl Table {
    pub fn into_inner(self) -> PgRelation {
        self.0
    }
}

impl Deref for Table {
    type Target = PgRelation;
    fn deref(&self) -> &PgRelation {
        &self.0
    }
}

impl FromDatum for Table {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        let oid = pg_sys::Oid::from(datum.value() as u32);
        let lock = pg_sys::AccessShareLock as pg_sys::LOCKMODE;
        // SAFETY: try_relation_open returns NULL for a missing relation instead of failing; once
        // it is open and locked it cannot be dropped before the transaction ends, so the second
        // open (PgRelation's own, closed when dropped) finds it.
        unsafe {
            let rel = pg_sys::try_relation_open(oid, lock);
            if rel.is_null() {
                pgrx::pg_sys::panic::ErrorReport::new(
                    PgSqlErrorCode::ERRCODE_UNDEFINED_TABLE,
                    format!("relation with OID {} does not exist", oid.to_u32()),
                    "simhash_pg",
                )
                .report(PgLogLevel::ERROR);
                unreachable!("ERROR does not return");
            }
            pg_sys::relation_close(rel, pg_sys::NoLock as pg_sys::LOCKMODE);
            Some(Table(PgRelation::with_lock(oid, lock)))
        }
    }
}

argument_from_datum!(Table, "regclass");

/// Most bytes of an options argument: every option together takes a few dozen.
pub const MAX_OPTIONS_BYTES: usize = 64 * 1024;

/// A `jsonb` options argument (`simhash(body, options)`, `simhash_set`, ...), parsed: at most
/// [`MAX_OPTIONS_BYTES`], and JSON serde reads, else SQLSTATE 22023.
pub struct JsonOptions(pub serde_json::Value);

impl FromDatum for JsonOptions {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        // SAFETY: the argument is declared jsonb: the datum is a jsonb varlena, detoasted here;
        // jsonb_out returns a palloc'd C string in this function's memory context.
        unsafe {
            let varlena = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            let size = pgrx::varlena::varsize_any_exhdr(varlena);
            if size > MAX_OPTIONS_BYTES {
                errors::invalid_parameter(format!(
                    "invalid simhash options: at most {MAX_OPTIONS_BYTES} bytes of JSON, got {size}"
                ));
            }
            let text = pgrx::fcinfo::direct_function_call::<&std::ffi::CStr>(pg_sys::jsonb_out, &[Some(pg_sys::Datum::from(varlena))])
                .unwrap_or_else(|| errors::invalid_parameter("invalid simhash options: not jsonb"));
            let value = serde_json::from_str(&text.to_string_lossy())
                .unwrap_or_else(|e| errors::invalid_parameter(format!("invalid simhash options: {e}")));
            Some(JsonOptions(value))
        }
    }
}

argument_from_datum!(JsonOptions, "jsonb");

/// A `text` argument as UTF-8: borrowed in a UTF-8 database, converted from any other server
/// encoding (PostgreSQL's own conversion, in this call's memory), checked in SQL_ASCII.
pub struct Text<'a>(&'a str);

impl Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.0
    }
}

/// Bytes of text in the database's encoding as UTF-8 (see [`Text`]); `None` when they are not
/// UTF-8 in a SQL_ASCII database.
///
/// # Safety
/// `bytes` must be text in the server encoding, valid for `'a` (a detoasted argument).
unsafe fn utf8_of<'a>(bytes: &'a [u8]) -> Option<&'a str> {
    // SAFETY: plain reads of the database encoding; the conversion reads `bytes` and returns
    // them or a palloc'd, NUL-terminated copy in the current (the call's) memory context.
    unsafe {
        let encoding = pg_sys::GetDatabaseEncoding();
        if encoding == pg_sys::pg_enc::PG_UTF8 as i32 {
            // PostgreSQL checked it on input.
            return Some(std::str::from_utf8_unchecked(bytes));
        }
        if encoding == pg_sys::pg_enc::PG_SQL_ASCII as i32 || bytes.is_ascii() {
            return std::str::from_utf8(bytes).ok();
        }
        let len = i32::try_from(bytes.len()).ok()?;
        let converted = pg_sys::pg_do_encoding_conversion(bytes.as_ptr().cast_mut(), len, encoding, pg_sys::pg_enc::PG_UTF8 as i32);
        if converted.cast_const() == bytes.as_ptr() {
            return std::str::from_utf8(bytes).ok();
        }
        let out = std::ffi::CStr::from_ptr(converted.cast::<std::ffi::c_char>()).to_bytes();
        std::str::from_utf8(out).ok()
    }
}

/// The error for text that is not UTF-8 in a SQL_ASCII database: 22021, with a hint.
fn not_utf8() -> ! {
    pgrx::pg_sys::panic::ErrorReport::new(
        PgSqlErrorCode::ERRCODE_CHARACTER_NOT_IN_REPERTOIRE,
        "simhash_pg: text is not valid UTF-8".to_string(),
        "simhash_pg",
    )
    .set_hint("simhash_pg reads text as Unicode: in a SQL_ASCII database, whose bytes have no declared encoding, only text in UTF-8 can be read. Convert it first (convert_from(convert_to(body, 'SQL_ASCII'), 'LATIN1'), say), or use a database with a declared encoding.")
    .report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

impl FromDatum for Text<'_> {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        // SAFETY: the argument is declared text: the datum is a text varlena, detoasted here into
        // the call's memory context, which outlives the call's use of it.
        unsafe {
            let varlena = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            let bytes = pgrx::varlena::varlena_to_byte_slice(varlena);
            Some(Text(utf8_of(bytes).unwrap_or_else(|| not_utf8())))
        }
    }
}

borrowed_argument_from_datum!(Text, "text");

/// An element of a `text[]` as UTF-8, as [`Text`] reads an argument (`simhash_weighted`'s
/// features are hashed as UTF-8 whatever the database's encoding).
pub fn utf8_element(element: &str) -> &str {
    // SAFETY: pgrx hands array elements over as the array's bytes, unchecked: text in the server
    // encoding, valid while the array is.
    unsafe { utf8_of(element.as_bytes()) }.unwrap_or_else(|| not_utf8())
}

/// A `text` result made in UTF-8, returned in the database's encoding (the inverse of
/// [`Text`]): `simhash_extract` and `simhash_features` show text the pipeline read. A character
/// that encoding lacks (NFKC makes µ of micro sign the Greek mu; decoded entities give dashes
/// and quotes LATIN1 has not) comes back as `?`, instead of failing the whole call.
pub struct ServerText(pub String);

/// `utf8` in server encoding `encoding`, characters it cannot hold as `?`.
fn to_server(utf8: &str, encoding: i32) -> Vec<u8> {
    // SAFETY: the conversion reads `bytes` and returns them or a palloc'd, NUL-terminated copy
    // (text holds no NUL); an ERROR it raises is caught here and the error state flushed.
    let convert = |piece: &str| -> Option<Vec<u8>> {
        let len = i32::try_from(piece.len()).ok()?;
        pgrx::PgTryBuilder::new(|| unsafe {
            let converted = pg_sys::pg_do_encoding_conversion(piece.as_ptr().cast_mut(), len, pg_sys::pg_enc::PG_UTF8 as i32, encoding);
            Some(if converted.cast_const() == piece.as_ptr() {
                piece.as_bytes().to_vec()
            } else {
                std::ffi::CStr::from_ptr(converted.cast::<std::ffi::c_char>()).to_bytes().to_vec()
            })
        })
        .catch_others(|_| None)
        .execute()
    };
    if let Some(whole) = convert(utf8) {
        return whole;
    }
    // Character by character, each distinct one tried once.
    let mut known: std::collections::HashMap<char, Option<Vec<u8>>> = std::collections::HashMap::new();
    let mut out = Vec::with_capacity(utf8.len());
    let mut buf = [0u8; 4];
    for c in utf8.chars() {
        if c.is_ascii() {
            out.push(c as u8);
            continue;
        }
        let bytes = known.entry(c).or_insert_with(|| convert(c.encode_utf8(&mut buf)));
        out.extend_from_slice(bytes.as_deref().unwrap_or(b"?"));
    }
    out
}

impl IntoDatum for ServerText {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        // SAFETY: plain reads of the database encoding; cstring_to_text_with_len copies the given
        // bytes into a new palloc'd text.
        unsafe {
            let encoding = pg_sys::GetDatabaseEncoding();
            let utf8 = encoding == pg_sys::pg_enc::PG_UTF8 as i32 || encoding == pg_sys::pg_enc::PG_SQL_ASCII as i32;
            let bytes = if utf8 || self.0.is_ascii() { self.0.into_bytes() } else { to_server(&self.0, encoding) };
            let len = i32::try_from(bytes.len()).unwrap_or_else(|_| errors::invalid_parameter("text longer than 1 GB"));
            Some(pg_sys::Datum::from(pg_sys::cstring_to_text_with_len(bytes.as_ptr().cast(), len)))
        }
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::TEXTOID
    }
}

// SAFETY: IntoDatum writes `text`.
unsafe impl SqlTranslatable for ServerText {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(ServerText);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("text"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("text")));
}

// SAFETY: the datum returned is the palloc'd text IntoDatum builds.
unsafe impl pgrx::callconv::BoxRet for ServerText {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut pgrx::callconv::FcInfo<'fcx>) -> pgrx::datum::Datum<'fcx> {
        match self.into_datum() {
            // SAFETY: a text Datum, the declared return type.
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

/// A `text` argument that names something (a column), as bytes in the database's encoding:
/// compared with the catalog's names, which are in that encoding too.
pub struct Name<'a>(&'a [u8]);

impl<'a> Name<'a> {
    pub fn bytes(&self) -> &'a [u8] {
        self.0
    }
}

impl FromDatum for Name<'_> {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        // SAFETY: the argument is declared text: a text varlena, detoasted into the call's memory.
        unsafe { Some(Name(pgrx::varlena::varlena_to_byte_slice(pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr())))) }
    }
}

borrowed_argument_from_datum!(Name, "text");
