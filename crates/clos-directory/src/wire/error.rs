//! What can be wrong with bytes read off a session: a frame too long to accept, or a body that is
//! not a well-formed message. Both the framing (`frame.rs`) and the messages (`message.rs`) report
//! these, so they live apart from either.

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("frame of {len} bytes exceeds the limit of {max} bytes (max_frame_bytes)")]
    Oversized { len: usize, max: usize },
    #[error("malformed request: {0}")]
    Malformed(String),
}
