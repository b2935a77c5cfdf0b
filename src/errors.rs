//! The few ways this extension reports a caller's mistake, each with its SQLSTATE.
//!
//! Every user-facing error goes through here, so the codes stay consistent across functions:
//! 22P02 for malformed input, 22023 for a bad parameter, 22026 for a value of the wrong length,
//! 42501 for a missing privilege, 0A000 for a context a function cannot work in, 42704 for one of
//! the extension's own objects missing, 55000 for an index being built or dropped concurrently,
//! 54000 for an input beyond the memory a function may take, 53200 for an allocation the system
//! refused; and, not a caller's mistake, XX002 for a damaged index.

use pgrx::pg_sys::panic::ErrorReport;
use pgrx::PgSqlErrorCode;
use pgrx::PgLogLevel;

fn raise(code: PgSqlErrorCode, message: String, detail: Option<String>) -> ! {
    let mut report = ErrorReport::new(code, message, "simhash_pg");
    if let Some(detail) = detail {
        report = report.set_detail(detail);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// Text that is not a value of `type_name`: SQLSTATE 22P02, quoting the text as PostgreSQL's own
/// input functions do, with the reason as DETAIL.
pub fn invalid_text(type_name: &str, text: &str, reason: impl ToString) -> ! {
    raise(
        PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
        format!("invalid input syntax for type {type_name}: \"{text}\""),
        Some(reason.to_string()),
    )
}

/// A parameter outside its documented range: SQLSTATE 22023.
pub fn invalid_parameter(message: impl ToString) -> ! {
    raise(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, message.to_string(), None)
}

/// The caller may not do this (read the table, change it): SQLSTATE 42501.
pub fn insufficient_privilege(message: impl ToString) -> ! {
    raise(PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE, message.to_string(), None)
}

/// A binary value of the wrong length: SQLSTATE 22026, as PostgreSQL uses for `bit(n)`.
pub fn wrong_length(message: impl ToString) -> ! {
    raise(PgSqlErrorCode::ERRCODE_STRING_DATA_LENGTH_MISMATCH, message.to_string(), None)
}

/// A text whose features outgrow the memory a function may take (`feature_table`): SQLSTATE
/// 54000 with a hint, or 53200 when the system refused an allocation. Never an abort: an
/// allocation Rust cannot make ends the backend, and PostgreSQL then restarts every session.
pub fn too_large(function: &str, e: simhash_core::feature_table::TooLarge) -> ! {
    use simhash_core::feature_table::TooLarge;
    let (code, hint) = match e {
        TooLarge::OutOfMemory { .. } => (PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY, "Free memory, or try a smaller text."),
        TooLarge::Parts { .. } | TooLarge::Result { .. } => (
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            "A table of distinct features (binary weighting, top_k, feature lists and sets) may take work_mem, at least 64 MB, over at most 64 passes: raise work_mem, or use \"weighting\": \"tf\" or \"tfidf\" without top_k, which needs no table.",
        ),
    };
    ErrorReport::new(code, format!("{function}: {e}"), "simhash_pg").set_hint(hint).report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// In-memory work of `function` past its limit (54000, with a hint) or refused by the system
/// (53200): `simhash_core::memory`.
pub fn memory(function: &str, e: simhash_core::memory::MemoryError) -> ! {
    use simhash_core::memory::MemoryError;
    match e {
        MemoryError::OutOfMemory { bytes } => out_of_memory(function, bytes),
        MemoryError::OverBudget { .. } => {
            ErrorReport::new(PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED, format!("{function}: {e}"), "simhash_pg")
                .set_hint("The limit is maintenance_work_mem, at least 1 GB: raise it for this call (SET maintenance_work_mem = '4GB'), or work in smaller batches.")
                .report(PgLogLevel::ERROR);
            unreachable!("ERROR does not return")
        }
    }
}

/// The system refused an allocation of `bytes` for `what`: SQLSTATE 53200, as PostgreSQL's own
/// allocator reports it, instead of the abort Rust's allocator ends in.
pub fn out_of_memory(what: &str, bytes: usize) -> ! {
    ErrorReport::new(PgSqlErrorCode::ERRCODE_OUT_OF_MEMORY, "out of memory".to_string(), "simhash_pg")
        .set_detail(format!("Failed on request of size {bytes} for {what}."))
        .report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// A context the function cannot work in (a snapshot that is not MVCC): SQLSTATE 0A000.
pub fn feature_not_supported(message: impl ToString) -> ! {
    raise(PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED, message.to_string(), None)
}

/// One of the extension's own objects is missing (the extension is not installed in this
/// database, or an object was dropped from it): SQLSTATE 42704.
pub fn missing_object(message: impl ToString) -> ! {
    raise(PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT, message.to_string(), None)
}

/// An object exists but cannot be used now (an index being built or dropped concurrently):
/// SQLSTATE 55000, with a hint.
pub fn not_ready(message: impl ToString, hint: &str) -> ! {
    ErrorReport::new(PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE, message.to_string(), "simhash_pg")
        .set_hint(hint)
        .report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// Any other report: `code`, with an optional DETAIL and HINT (the guard's 23P01 and 40001).
pub fn report(code: PgSqlErrorCode, message: impl ToString, detail: Option<String>, hint: Option<&str>) -> ! {
    let mut report = ErrorReport::new(code, message.to_string(), "simhash_pg");
    if let Some(detail) = detail {
        report = report.set_detail(detail);
    }
    if let Some(hint) = hint {
        report = report.set_hint(hint);
    }
    report.report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}

/// An index whose pages hold what its access method never writes (a tuple shorter than its own
/// header says): SQLSTATE XX002, as PostgreSQL reports a damaged index, with where as DETAIL and
/// a hint to rebuild it.
pub fn index_corrupted(message: impl ToString, detail: impl ToString) -> ! {
    ErrorReport::new(PgSqlErrorCode::ERRCODE_INDEX_CORRUPTED, message.to_string(), "simhash_pg")
        .set_detail(detail.to_string())
        .set_hint("REINDEX the index.")
        .report(PgLogLevel::ERROR);
    unreachable!("ERROR does not return")
}
