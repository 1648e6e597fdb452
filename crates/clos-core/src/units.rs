//! Quantities: time in integer picoseconds, sizes in bytes, rates in bits per second.
//!
//! Integer time keeps runs bit-for-bit reproducible and makes serialisation times exact for the
//! usual rates (1 Gb/s = 8,000 ps per byte, 10 Gb/s = 800, 40 Gb/s = 200). Scenario files write
//! quantities as numbers in base units or as strings with a unit (`"10Gbps"`, `"1us"`, `"64KiB"`).

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// Simulated time in picoseconds.
pub type Time = u64;

pub const PS_PER_NS: Time = 1_000;
pub const PS_PER_US: Time = 1_000_000;
pub const PS_PER_MS: Time = 1_000_000_000;
pub const PS_PER_S: Time = 1_000_000_000_000;

/// Serialisation time of `bytes` on a link of `rate_bps`, rounded up to the next picosecond.
#[inline]
pub fn tx_time(bytes: u64, rate_bps: u64) -> Time {
    let bits_ps = bytes as u128 * 8 * PS_PER_S as u128;
    bits_ps.div_ceil(rate_bps as u128) as Time
}

/// Bytes a link of `rate_bps` serialises in `dt` picoseconds (rounded down).
#[inline]
pub fn bytes_in(dt: Time, rate_bps: u64) -> u64 {
    (dt as u128 * rate_bps as u128 / (8 * PS_PER_S as u128)) as u64
}

/// Picoseconds per byte at `rate_bps` when that is a whole number, else 0. It is whole for every
/// rate that divides 8·10¹² b/s (1, 10, 25, 40, 100, 400 Gb/s ...), and then
/// `tx_time(b, r) == b * ps_per_byte` and `bytes_in(dt, r) == dt / ps_per_byte` exactly, with no
/// u128 division (calls to `__udivti3`, ~5% of the Rust core's samples on B1 before this,
/// docs/performance.md).
pub fn exact_ps_per_byte(rate_bps: u64) -> u64 {
    let bits_ps = 8 * PS_PER_S;
    if rate_bps != 0 && bits_ps.is_multiple_of(rate_bps) {
        bits_ps / rate_bps
    } else {
        0
    }
}

pub fn seconds(t: Time) -> f64 {
    t as f64 / PS_PER_S as f64
}

/// A value as written in a scenario: a bare number in base units, or a string with a unit.
#[derive(Deserialize)]
#[serde(untagged)]
enum Written {
    Int(u64),
    Float(f64),
    Text(String),
}

/// A unit a scenario may write after a number, and its size in base units; `""` is a number
/// written as a string with no unit (`"0.5"`), which is in base units.
type Unit = (&'static str, f64);

/// Time units, in picoseconds; a bare number is seconds.
const TIME_UNITS: &[Unit] = &[
    ("", PS_PER_S as f64),
    ("s", PS_PER_S as f64),
    ("ms", PS_PER_MS as f64),
    ("us", PS_PER_US as f64),
    ("µs", PS_PER_US as f64),
    ("ns", PS_PER_NS as f64),
    ("ps", 1.0),
];

/// Size units, in bytes: KB/MB/GB/TB are decimal (as link rates are), KiB/MiB/GiB binary.
const SIZE_UNITS: &[Unit] = &[
    ("", 1.0),
    ("B", 1.0),
    ("KB", 1e3),
    ("kB", 1e3),
    ("MB", 1e6),
    ("GB", 1e9),
    ("TB", 1e12),
    ("KiB", 1024.0),
    ("MiB", 1024.0 * 1024.0),
    ("GiB", 1024.0 * 1024.0 * 1024.0),
];

/// Rate units, in bits per second.
const RATE_UNITS: &[Unit] = &[("", 1.0), ("bps", 1.0), ("Kbps", 1e3), ("kbps", 1e3), ("Mbps", 1e6), ("Gbps", 1e9), ("Tbps", 1e12)];

fn scale_of(units: &[Unit], unit: &str) -> Option<f64> {
    units.iter().find(|u| u.0 == unit).map(|u| u.1)
}

fn split_unit(s: &str) -> Result<(f64, String), String> {
    let s = s.trim();
    let idx = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_' || c == 'e' || c == '-' || c == '+')).unwrap_or(s.len());
    // "1e3us" is fine, but a unit starting with 'e' never occurs, so splitting at the first
    // non-numeric character is unambiguous.
    let (num, unit) = s.split_at(idx);
    let value: f64 = num.replace('_', "").parse().map_err(|_| format!("`{s}` does not start with a number"))?;
    Ok((value, unit.trim().to_string()))
}

/// 2^64, the first value a u64 cannot hold.
const TWO_TO_64: f64 = 18_446_744_073_709_551_616.0;

fn from_written(w: Written, kind: &str, units: &[Unit], examples: &str) -> Result<u64, String> {
    let value = match w {
        Written::Int(v) => return Ok(v),
        Written::Float(v) => v * scale_of(units, "").unwrap_or(1.0),
        Written::Text(s) => {
            let (v, unit) = split_unit(&s)?;
            let scale = scale_of(units, &unit).ok_or_else(|| format!("unknown {kind} unit `{unit}` in `{s}`; write e.g. {examples}"))?;
            v * scale
        }
    };
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{kind} must be a non-negative number, got {value}"));
    }
    // `as` would saturate: a value this large would silently become another one.
    if value.round() >= TWO_TO_64 {
        return Err(format!("{kind} {value:e} is too large: values are kept in 64 bits of base units (bytes, bits per second, picoseconds: 213 days)"));
    }
    Ok(value.round() as u64)
}

const TIME_EXAMPLES: &str = "\"10ms\", \"1us\", \"500ns\" or a number of seconds";
const SIZE_EXAMPLES: &str = "\"1500B\", \"64KB\", \"2MiB\" or a number of bytes";
const RATE_EXAMPLES: &str = "\"10Gbps\", \"100Mbps\" or a number of bits per second";

/// The strings that `split_unit` and `from_written` accept with `units`, as a JSON Schema
/// pattern (ECMA-262; Python's `re` reads it alike): a number as `f64::from_str` reads it once
/// its underscores are dropped (a lowercase `e` exponent; no `inf` or `nan`), never negative
/// except a negative zero, then one of the units, with spaces around either. What it cannot say
/// is a value's size: one beyond 64 bits is refused by the parser alone.
fn written_pattern(units: &[Unit]) -> String {
    const DIGITS: &str = r"(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]*[0-9][0-9_]*)";
    const ZEROS: &str = r"(?:0[0_]*(?:\.[0_]*)?|\.[0_]*0[0_]*)";
    const EXPONENT: &str = r"(?:e_*[+-]?_*[0-9][0-9_]*)?";
    let names: Vec<&str> = units.iter().map(|u| u.0).filter(|u| !u.is_empty()).collect();
    format!(r"^\s*_*(?:\+?_*{DIGITS}|-_*{ZEROS}){EXPONENT}\s*(?:{})?\s*$", names.join("|"))
}

/// A quantity as a scenario writes it (`Written`): a number in base units, or a string with a unit.
fn quantity_schema(what: &str, units: &[Unit], examples: &str) -> Schema {
    let names: Vec<&str> = units.iter().map(|u| u.0).filter(|u| !u.is_empty()).collect();
    json_schema!({
        "description": format!("{what}: {examples}; units: {}.", names.join(", ")),
        "anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": written_pattern(units)}],
    })
}

/// A time written as a string (`"10ms"`, `"0.5"` for seconds), for the fields that take one
/// beside words of their own (`stop`, `routing.entering`).
pub fn duration_text_schema() -> Schema {
    json_schema!({"type": "string", "pattern": written_pattern(TIME_UNITS)})
}

/// A size written as a string (`"256KB"`), for `host.tsq`.
pub fn size_text_schema() -> Schema {
    json_schema!({"type": "string", "pattern": written_pattern(SIZE_UNITS)})
}

/// A duration in picoseconds. Bare numbers are seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, Deserialize, Serialize)]
#[serde(try_from = "Written", into = "String")]
pub struct Duration(pub Time);

impl TryFrom<Written> for Duration {
    type Error = String;
    fn try_from(w: Written) -> Result<Self, String> {
        let w = match w {
            Written::Int(v) => Written::Float(v as f64),
            other => other,
        };
        from_written(w, "time", TIME_UNITS, TIME_EXAMPLES).map(Duration)
    }
}

impl JsonSchema for Duration {
    fn schema_name() -> Cow<'static, str> {
        "Duration".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        quantity_schema("A time", TIME_UNITS, TIME_EXAMPLES)
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ps = self.0;
        if ps == 0 {
            return write!(f, "0s");
        }
        for (unit, scale) in [("s", PS_PER_S), ("ms", PS_PER_MS), ("us", PS_PER_US), ("ns", PS_PER_NS)] {
            if ps != 0 && ps.is_multiple_of(scale) {
                return write!(f, "{}{unit}", ps / scale);
            }
        }
        write!(f, "{ps}ps")
    }
}

impl From<Duration> for String {
    fn from(d: Duration) -> String {
        d.to_string()
    }
}

/// A size in bytes. KB/MB/GB are decimal (as link rates are); KiB/MiB/GiB are binary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, Deserialize, Serialize)]
#[serde(try_from = "Written", into = "u64")]
pub struct ByteSize(pub u64);

impl TryFrom<Written> for ByteSize {
    type Error = String;
    fn try_from(w: Written) -> Result<Self, String> {
        from_written(w, "size", SIZE_UNITS, SIZE_EXAMPLES).map(ByteSize)
    }
}

impl JsonSchema for ByteSize {
    fn schema_name() -> Cow<'static, str> {
        "ByteSize".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        quantity_schema("A size", SIZE_UNITS, SIZE_EXAMPLES)
    }
}

impl From<ByteSize> for u64 {
    fn from(b: ByteSize) -> u64 {
        b.0
    }
}

/// Parse a size written as text (used by the flow-list reader).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    ByteSize::try_from(Written::Text(s.to_string())).map(|b| b.0)
}

/// Parse a duration written as text; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Time, String> {
    Duration::try_from(Written::Text(s.to_string())).map(|d| d.0)
}

/// A link rate in bits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Default, Deserialize, Serialize)]
#[serde(try_from = "Written", into = "u64")]
pub struct Rate(pub u64);

impl TryFrom<Written> for Rate {
    type Error = String;
    fn try_from(w: Written) -> Result<Self, String> {
        from_written(w, "rate", RATE_UNITS, RATE_EXAMPLES).map(Rate)
    }
}

impl JsonSchema for Rate {
    fn schema_name() -> Cow<'static, str> {
        "Rate".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        quantity_schema("A link rate", RATE_UNITS, RATE_EXAMPLES)
    }
}

impl std::fmt::Display for Rate {
    /// The largest unit that writes it exactly (`40Gbps`, `2500Mbps`), else bits per second.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (div, unit) in [(1_000_000_000_000, "Tbps"), (1_000_000_000, "Gbps"), (1_000_000, "Mbps"), (1_000, "Kbps")] {
            if self.0 >= div && self.0.is_multiple_of(div) {
                return write!(f, "{}{unit}", self.0 / div);
            }
        }
        write!(f, "{}bps", self.0)
    }
}

impl From<Rate> for u64 {
    fn from(r: Rate) -> u64 {
        r.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dur(s: &str) -> Time {
        parse_duration(s).unwrap()
    }

    #[test]
    fn durations_parse_to_exact_picoseconds() {
        assert_eq!(dur("10ms"), 10 * PS_PER_MS);
        assert_eq!(dur("1.5us"), 1_500_000);
        assert_eq!(dur("0.001"), PS_PER_MS);
        assert!(parse_duration("10 parsecs").unwrap_err().contains("unknown time unit"));
        assert_eq!(Duration(40 * PS_PER_US).to_string(), "40us");
    }

    /// `written_pattern` puts the unit names into a regular expression unescaped.
    #[test]
    fn unit_names_are_letters_so_the_schema_pattern_needs_no_escapes() {
        for units in [TIME_UNITS, SIZE_UNITS, RATE_UNITS] {
            assert!(units.iter().all(|u| u.0.chars().all(char::is_alphabetic)), "{units:?}");
        }
    }

    #[test]
    fn sizes_distinguish_decimal_and_binary_units() {
        assert_eq!(parse_bytes("64KB").unwrap(), 64_000);
        assert_eq!(parse_bytes("64KiB").unwrap(), 65_536);
        assert!(parse_bytes("-3MB").is_err());
    }

    #[test]
    fn values_beyond_64_bits_are_refused_not_saturated() {
        assert!(parse_bytes("1e30B").unwrap_err().contains("too large"));
        assert!(parse_duration("1e8s").unwrap_err().contains("too large")); // 10^20 ps
        assert_eq!(parse_duration("1e7s").unwrap(), 10_000_000 * PS_PER_S); // 10^19 ps fits
    }

    #[test]
    fn serialisation_times_are_exact_at_common_rates() {
        assert_eq!(tx_time(1538, 10_000_000_000), 1538 * 800);
        assert_eq!(tx_time(1538, 1_000_000_000), 1538 * 8000);
        assert_eq!(tx_time(1, 3), 2_666_666_666_667); // rounded up
        assert_eq!(bytes_in(1538 * 800, 10_000_000_000), 1538);
    }

    #[test]
    fn whole_picoseconds_per_byte_give_the_same_times_and_sizes() {
        assert_eq!(exact_ps_per_byte(3), 0);
        for rate in [1_000_000_000, 10_000_000_000, 25_000_000_000, 40_000_000_000, 100_000_000_000] {
            let ppb = exact_ps_per_byte(rate);
            assert_ne!(ppb, 0);
            for x in [0, 1, 63, 84, 1538, 300_000, 7_777_777, 1 << 40] {
                assert_eq!(tx_time(x, rate), x * ppb);
                assert_eq!(bytes_in(x, rate), x / ppb);
            }
        }
    }
}
