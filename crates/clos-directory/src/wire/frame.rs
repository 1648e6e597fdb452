//! Framing: split a byte stream into length-prefixed frames, refusing oversized ones before
//! reading their bodies (so a hostile length cannot make a server allocate gigabytes).

use super::error::WireError;

/// Frames larger than this are refused unless configured otherwise. The largest legitimate frame
/// is an update with a 64-byte service name or a hello with a 256-byte token, both well under.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 1024;

/// Bytes received but not yet decoded. Decoding hands out the body of each complete frame in
/// order; the buffer is compacted only when it has been drained, so steady-state decoding does
/// not copy.
pub struct FrameBuffer {
    bytes: Vec<u8>,
    start: usize,
    max_frame: usize,
}

impl FrameBuffer {
    pub fn new(max_frame: usize) -> FrameBuffer {
        FrameBuffer { bytes: Vec::with_capacity(16 * 1024), start: 0, max_frame }
    }

    /// Space to read into: the caller reads into the returned spare capacity then calls
    /// [`FrameBuffer::filled`] with the count.
    pub fn spare(&mut self, at_least: usize) -> &mut Vec<u8> {
        if self.start == self.bytes.len() {
            self.bytes.clear();
            self.start = 0;
        } else if self.start > self.bytes.capacity() / 2 {
            self.bytes.drain(..self.start);
            self.start = 0;
        }
        self.bytes.reserve(at_least);
        &mut self.bytes
    }

    /// The body of the next complete frame, or `None` if more bytes are needed.
    pub fn next_frame(&mut self) -> Result<Option<&[u8]>, WireError> {
        let available = &self.bytes[self.start..];
        if available.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes(available[..4].try_into().expect("4 bytes")) as usize;
        if len > self.max_frame {
            return Err(WireError::Oversized { len, max: self.max_frame });
        }
        if len == 0 {
            return Err(WireError::Malformed("frame: empty body (no message kind byte)".into()));
        }
        if available.len() < 4 + len {
            return Ok(None);
        }
        let body = self.start + 4..self.start + 4 + len;
        self.start += 4 + len;
        Ok(Some(&self.bytes[body]))
    }

    /// Bytes waiting in a partial frame: a peer that closes with some left sent a truncated frame.
    pub fn pending(&self) -> usize {
        self.bytes.len() - self.start
    }
}

/// Appends one frame: the length, then whatever `body` writes.
pub fn write_frame(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    body(out);
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_split_across_reads_are_reassembled() {
        let mut wire = Vec::new();
        write_frame(&mut wire, |b| b.extend_from_slice(b"\x02abc"));
        write_frame(&mut wire, |b| b.extend_from_slice(b"\x03de"));
        let mut buf = FrameBuffer::new(64);
        buf.spare(3).extend_from_slice(&wire[..5]);
        assert!(buf.next_frame().unwrap().is_none());
        buf.spare(16).extend_from_slice(&wire[5..]);
        assert_eq!(buf.next_frame().unwrap().unwrap(), b"\x02abc");
        assert_eq!(buf.next_frame().unwrap().unwrap(), b"\x03de");
        assert!(buf.next_frame().unwrap().is_none());
        assert_eq!(buf.pending(), 0);
    }

    #[test]
    fn an_oversized_length_is_refused_before_its_body_arrives() {
        let mut buf = FrameBuffer::new(64);
        buf.spare(4).extend_from_slice(&1_000_000u32.to_be_bytes());
        let err = buf.next_frame().unwrap_err();
        assert_eq!(err.to_string(), "frame of 1000000 bytes exceeds the limit of 64 bytes (max_frame_bytes)");
    }
}
