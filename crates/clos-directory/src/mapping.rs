//! One AA-to-LA mapping as the directory system stores it (VL2 §4.3).
//!
//! Besides the locator, a mapping carries the service the AA belongs to (the input to access
//! control, VL2 §4.2.1) and the store revision that wrote it. Revisions come from the replicated
//! store, so every copy of a mapping (a directory server's table, a peer push, an agent's cache)
//! can be ordered: a newer revision always wins, whichever path delivered it first.

use crate::address::La;
use crate::origin::Marks;

/// The longest service name accepted, in bytes. Service names travel in every update.
pub const MAX_SERVICE_LEN: usize = 64;

/// Where an AA lives and which service it belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub la: La,
    pub service: String,
}

/// A mapping as of a store revision; `mapping: None` is a removal (a tombstone), kept so that an
/// older put arriving late (from a peer, say) cannot resurrect a removed AA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Versioned {
    pub mapping: Option<Mapping>,
    pub revision: i64,
    /// The writers' updates the stored entry includes (`origin.rs`); empty for peers' pushes,
    /// which no update is decided against.
    pub marks: Marks,
}

/// Checks a service name: non-empty, at most [`MAX_SERVICE_LEN`] bytes, printable ASCII without
/// spaces (it is stored as text beside the LA).
pub fn validate_service(service: &str) -> Result<(), String> {
    if service.is_empty() {
        return Err("service is empty: give the service the AA belongs to, e.g. \"web\"".into());
    }
    if service.len() > MAX_SERVICE_LEN {
        return Err(format!("service is {} bytes long; the limit is {MAX_SERVICE_LEN}", service.len()));
    }
    if !service.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!("service '{}' has a space or non-ASCII character; use letters, digits and punctuation only", service.escape_default()));
    }
    Ok(())
}

impl Mapping {
    /// The text stored in the replicated store: `"<la> <service>"`, readable with etcdctl.
    pub fn to_store_value(&self) -> String {
        format!("{} {}", self.la, self.service)
    }

    pub fn from_store_value(value: &[u8]) -> Result<Mapping, String> {
        let text = std::str::from_utf8(value).map_err(|_| "value is not UTF-8".to_string())?;
        let (la, service) = text.split_once(' ').ok_or_else(|| format!("value '{text}' is not '<la> <service>'"))?;
        validate_service(service)?;
        Ok(Mapping { la: la.parse()?, service: service.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_values_round_trip_and_bad_ones_are_named() {
        let m = Mapping { la: La(0x0a00_0001), service: "web".into() };
        assert_eq!(Mapping::from_store_value(m.to_store_value().as_bytes()).unwrap(), m);
        assert!(Mapping::from_store_value(b"10.0.0.1").unwrap_err().contains("<la> <service>"));
        assert!(validate_service("a b").unwrap_err().contains("space"));
        assert!(validate_service(&"x".repeat(65)).unwrap_err().contains("limit is 64"));
    }
}
