//! Errors a user can fix: each names the scenario field at fault and says what to do.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum Error {
    /// Bad input: `field` is a dotted path into the scenario (`topology.k`), or a file and line.
    #[error("{field}: {message}")]
    Scenario { field: String, message: String },
    /// An internal invariant failed (a bug in clos, never the user's input).
    #[error("internal invariant violated: {0}")]
    Invariant(String),
    /// The run was stopped before its end (Ctrl-C, or its caller cancelled it).
    #[error("the run was interrupted before it ended")]
    Interrupted,
}

pub type Result<T> = std::result::Result<T, Error>;

/// Shorthand for a scenario error.
pub fn bad(field: impl Into<String>, message: impl Into<String>) -> Error {
    Error::Scenario { field: field.into(), message: message.into() }
}
