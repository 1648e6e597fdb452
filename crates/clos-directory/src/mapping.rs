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

/// The value that stores an entry; `None` when the key is simply deleted (a removal with no
/// marks to keep).
pub fn encode_entry(mapping: Option<&Mapping>, marks: &Marks) -> Option<String> {
    match (mapping, marks.is_empty()) {
        (Some(m), true) => Some(m.to_store_value()),
        (Some(m), false) => Some(format!("{} {marks}", m.to_store_value())),
        (None, true) => None,
        (None, false) => Some(format!("removed {marks}")),
    }
}

/// Reads a stored value: the mapping (`None` for a tombstone) and the marks. Values of earlier
/// versions, `"<la> <service>"`, have no marks.
pub fn decode_entry(value: &[u8]) -> Result<(Option<Mapping>, Marks), String> {
    let text = std::str::from_utf8(value).map_err(|_| "value is not UTF-8".to_string())?;
    if let Some(marks) = text.strip_prefix("removed ") {
        return Ok((None, Marks::parse(marks)?));
    }
    let (mapping, marks) = match text.match_indices(' ').nth(1) {
        Some((at, _)) => (&text[..at], Marks::parse(&text[at + 1..])?),
        None => (text, Marks::default()),
    };
    Ok((Some(Mapping::from_store_value(mapping.as_bytes())?), marks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::Origin;

    #[test]
    fn store_values_round_trip_and_bad_ones_are_named() {
        let m = Mapping { la: La(0x0a00_0001), service: "web".into() };
        assert_eq!(Mapping::from_store_value(m.to_store_value().as_bytes()).unwrap(), m);
        assert!(Mapping::from_store_value(b"10.0.0.1").unwrap_err().contains("<la> <service>"));
        assert!(validate_service("a b").unwrap_err().contains("space"));
        assert!(validate_service(&"x".repeat(65)).unwrap_err().contains("limit is 64"));
    }

    #[test]
    fn stored_values_round_trip_and_old_values_have_no_marks() {
        let m = Mapping { la: La(0x1400_0001), service: "web".into() };
        assert_eq!(decode_entry(b"20.0.0.1 web").unwrap(), (Some(m.clone()), Marks::default()));
        let mut marks = Marks::default();
        marks.record(Origin { writer: 0x9f86_d081_884c_7d65, seq: 12 });
        marks.record(Origin { writer: 1, seq: 2 });
        let value = encode_entry(Some(&m), &marks).unwrap();
        assert_eq!(value, "20.0.0.1 web 0000000000000001:2,9f86d081884c7d65:12");
        assert_eq!(decode_entry(value.as_bytes()).unwrap(), (Some(m.clone()), marks.clone()));
        let removed = encode_entry(None, &marks).unwrap();
        assert_eq!(decode_entry(removed.as_bytes()).unwrap(), (None, marks));
        assert_eq!(encode_entry(None, &Marks::default()), None, "a removal without marks deletes the key");
        assert_eq!(encode_entry(Some(&m), &Marks::default()).unwrap(), "20.0.0.1 web", "values without origins keep the old form");
        assert!(decode_entry(b"20.0.0.1 web zz:1").unwrap_err().contains("not hexadecimal"));
    }
}
