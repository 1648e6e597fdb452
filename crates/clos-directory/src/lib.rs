//! VL2's directory system as a real, replicated service (VL2 §4.3 and §5.5).
//!
//! VL2 separates names from locations: servers are addressed by application addresses (AAs) and
//! packets are tunnelled to the locator (LA) of the ToR currently hosting the destination. The
//! directory system holds the AA-to-LA mappings in two tiers:
//!
//! - **Directory servers** ([`server`]) hold every mapping in memory ([`table`]), answer lookups
//!   with access control ([`policy`]), batch updates ([`batcher`]) into the store and acknowledge
//!   them only once committed, follow the store's committed changes and resynchronise lazily
//!   ([`sync`]), refuse to answer when cut off from the store for longer than a bound
//!   ([`freshness`]), correct agents' stale caches when a ToR reports a misdelivery, and
//!   optionally push acknowledged updates to peers ([`peers`]).
//! - **The replicated store** ([`store`]), VL2's Paxos RSM, is an etcd cluster.
//!
//! Agents use the [`resolver`]: k-way lookups, a cache, corrections, retried updates.
//! The wire protocol is in [`wire`]; [`cluster`] starts a whole system on loopback, and
//! [`bench`] measures it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use clos_directory::{address::{Aa, La}, mapping::Mapping, resolver::{Resolver, ResolverConfig}};
//! let servers = vec!["127.0.0.1:7001".parse()?, "127.0.0.1:7002".parse()?];
//! let me: Aa = "10.0.0.1".parse()?;
//! let agent = Resolver::new(ResolverConfig::new(servers, b"token", me))?;
//! agent.update(me, Some(Mapping { la: "20.0.0.1".parse()?, service: "web".into() })).await?;
//! assert_eq!(agent.lookup(me).await?, "20.0.0.1".parse::<La>()?);
//! # Ok(()) }
//! ```

pub mod address;
pub mod batcher;
pub mod bench;
pub mod cluster;
pub mod config;
pub mod connection;
pub mod duration;
pub mod freshness;
pub mod log;
pub mod mapping;
pub mod peers;
pub mod policy;
pub mod resolver;
pub mod server;
pub mod store;
pub mod sync;
pub mod table;
pub mod wire;
