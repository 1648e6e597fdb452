//! Durations written as text in config files and on the command line: "50ms", "30s", "1.5s".

use std::time::Duration;

/// Parses a duration with a unit: `us`, `ms`, `s` or `m`. A bare number is refused because a
/// timeout off by a factor of 1000 is an easy mistake to make and a hard one to notice.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().map_err(|_| format!("'{text}' is not a duration: write a number and a unit, e.g. \"50ms\" or \"30s\""))?;
    let seconds = match unit.trim() {
        "us" => value * 1e-6,
        "ms" => value * 1e-3,
        "s" => value,
        "m" | "min" => value * 60.0,
        "" => return Err(format!("'{text}' has no unit: write e.g. \"{text}ms\" or \"{text}s\"")),
        other => return Err(format!("'{text}': unknown unit '{other}', expected us, ms, s or m")),
    };
    if !seconds.is_finite() || seconds > 1e9 {
        return Err(format!("'{text}' is out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Serde adapter so config structs can hold `Duration`s written as text.
pub mod serde_text {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_duration(&text).map_err(serde::de::Error::custom)
    }
}

/// As [`serde_text`], for an optional duration (`#[serde(default, with = "serde_text_option")]`).
pub mod serde_text_option {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = String::deserialize(d)?;
        super::parse_duration(&text).map(Some).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_units() {
        assert_eq!(parse_duration("50ms").unwrap(), Duration::from_millis(50));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("50").unwrap_err().contains("no unit"));
        assert!(parse_duration("5 parsecs").unwrap_err().contains("unknown unit"));
    }
}
