//! Casts that keep every bit: `int8` (declared WITHOUT FUNCTION in `sql/simhash64.sql`, since
//! the Datum is the same two's-complement word), `bytea` and `bit(64)` (functions here).

use pgrx::pg_sys;
use pgrx::pgrx_sql_entity_graph::metadata::{
    ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable, TypeOrigin,
};
use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::prelude::*;
use simhash_core::bytes;

use crate::errors;
use crate::simhash64::SimHash64;

/// A PostgreSQL `bit`/`bit varying` value, read or written whole. pgrx has no wrapper for
/// `VarBit`, whose layout is a varlena header, an int32 bit count and the bits MSB first.
struct BitString {
    bit_len: i32,
    bits: Vec<u8>,
}

// SAFETY: the SQL type named, `bit`, is the one FromDatum and IntoDatum read and write.
unsafe impl SqlTranslatable for BitString {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(BitString);
    const TYPE_ORIGIN: TypeOrigin = TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("bit"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> =
        Ok(ReturnsRef::One(SqlMappingRef::literal("bit")));
}

impl FromDatum for BitString {
    unsafe fn from_polymorphic_datum(datum: pg_sys::Datum, is_null: bool, _: pg_sys::Oid) -> Option<Self> {
        if is_null {
            return None;
        }
        // SAFETY: the function is declared to take `bit`, so the Datum points to a VarBit; it is
        // detoasted first and only the bytes inside its size are read.
        unsafe {
            let varlena = pg_sys::pg_detoast_datum_packed(datum.cast_mut_ptr());
            let payload = pgrx::varlena::varlena_to_byte_slice(varlena);
            let (len, bits) = payload.split_at(payload.len().min(4));
            let bit_len = <[u8; 4]>::try_from(len).map(i32::from_ne_bytes).unwrap_or(-1);
            Some(BitString { bit_len, bits: bits.to_vec() })
        }
    }
}

impl IntoDatum for BitString {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        let size = pg_sys::VARHDRSZ + 4 + self.bits.len();
        // SAFETY: a fresh palloc'd buffer of exactly `size` bytes, filled in order.
        unsafe {
            let ptr = pg_sys::palloc0(size) as *mut u8;
            pgrx::varlena::set_varsize_4b(ptr.cast(), size as i32);
            std::ptr::copy_nonoverlapping(self.bit_len.to_ne_bytes().as_ptr(), ptr.add(pg_sys::VARHDRSZ), 4);
            std::ptr::copy_nonoverlapping(self.bits.as_ptr(), ptr.add(pg_sys::VARHDRSZ + 4), self.bits.len());
            Some(pg_sys::Datum::from(ptr))
        }
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::BITOID
    }
}

// SAFETY: arguments are unboxed through FromDatum, which reads a `bit` value as declared.
unsafe impl<'fcx> ArgAbi<'fcx> for BitString
where
    Self: 'fcx,
{
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        // SAFETY: the argument is declared `bit`, which FromDatum reads (the trait's contract).
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("bit argument {index} must not be NULL"))
    }
}

// SAFETY: the datum returned is the palloc'd VarBit IntoDatum builds, or NULL.
unsafe impl BoxRet for BitString {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> pgrx::datum::Datum<'fcx> {
        match self.into_datum() {
            // SAFETY: a VarBit palloc'd in the current (call) memory context, of the declared type.
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

/// `fp::bytea`: the 8 bytes in network order, as `send` writes them.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_to_bytea(fp: SimHash64) -> Vec<u8> {
    bytes::to_bytes(fp.0).to_vec()
}

/// `b::simhash64`: exactly 8 bytes, else SQLSTATE 22026.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_from_bytea(b: &[u8]) -> SimHash64 {
    SimHash64(bytes::from_bytes(b).unwrap_or_else(|e| errors::wrong_length(e)))
}

/// `fp::bit(64)`: bit 1 is the most significant bit, as in the hex text.
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_to_bit(fp: SimHash64) -> BitString {
    BitString { bit_len: 64, bits: bytes::to_bytes(fp.0).to_vec() }
}

/// `b::simhash64`: exactly 64 bits, else SQLSTATE 22026 (as `bit(n)` itself reports).
#[pg_extern(immutable, strict, parallel_safe)]
fn simhash64_from_bit(b: BitString) -> SimHash64 {
    if b.bit_len != 64 {
        errors::wrong_length(format!(
            "bit string length {} does not match simhash64, which needs 64 bits",
            b.bit_len
        ));
    }
    SimHash64(bytes::from_bytes(&b.bits).unwrap_or_else(|e| errors::wrong_length(e)))
}
