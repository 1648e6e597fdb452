//! Application addresses (AA) and locator addresses (LA), VL2 §3.3 and §4.2.
//!
//! Both are IPv4 addresses in VL2: an AA names a server (it never changes when the server moves),
//! an LA is the address of the ToR the server sits behind. Keeping them as distinct types stops a
//! locator from being looked up as if it were a name.

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// An application-specific address: the name of a server or VM (VL2 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Aa(pub u32);

/// A location-specific address: the ToR behind which an AA currently lives (VL2 §4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct La(pub u32);

macro_rules! ipv4_newtype {
    ($name:ident, $what:literal) => {
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                Ipv4Addr::from(self.0).fmt(f)
            }
        }

        impl FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                s.trim()
                    .parse::<Ipv4Addr>()
                    .map(|ip| $name(u32::from(ip)))
                    .map_err(|_| format!("'{s}' is not {}: write it as an IPv4 address such as 10.0.0.1", $what))
            }
        }

        impl From<Ipv4Addr> for $name {
            fn from(ip: Ipv4Addr) -> Self {
                $name(u32::from(ip))
            }
        }
    };
}

ipv4_newtype!(Aa, "an application address (AA)");
ipv4_newtype!(La, "a locator address (LA)");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_through_dotted_quads() {
        let aa: Aa = "10.1.2.3".parse().unwrap();
        assert_eq!(aa.0, 0x0a01_0203);
        assert_eq!(aa.to_string(), "10.1.2.3");
        let err = "ten".parse::<La>().unwrap_err();
        assert!(err.contains("locator address"), "{err}");
    }
}
