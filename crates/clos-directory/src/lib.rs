//! VL2's directory system as a real, replicated service (VL2 §4.3 and §5.5).
//!
//! VL2 separates names from locations: servers are addressed by application addresses (AAs) and
//! packets are tunnelled to the locator (LA) of the ToR currently hosting the destination. The
//! directory system holds the AA-to-LA mappings in two tiers:
//!
//! - **Directory servers** ([`server`]) hold every mapping in memory ([`table`]), answer lookups
//!   with access control ([`policy`]), batch updates ([`batcher`]) into the store and acknowledge
//!   them only once committed, follow the store's committed changes and resynchronise lazily
//!   ([`sync`]), keep answering from memory when cut off from the store, marking answers
//!   stale past a bound ([`freshness`]), keep retried updates in order ([`origin`]), correct
//!   agents' stale caches when a ToR reports a misdelivery, and
//!   optionally push acknowledged updates to peers ([`peers`]).
//! - **The replicated store** ([`store`]), VL2's Paxos RSM, is an etcd cluster.
//!
//! Every session authenticates as a principal with its own token and role ([`credentials`]):
//! agents look up as the AA their credential names, ToRs report misdeliveries, provisioners
//! update within their services ([`authorisation`]), and peers push to each other, believed
//! only as far as the store confirms (issue 42). Sessions run inside TLS ([`tls`]); each is
//! rate-limited ([`rate_limit`]) and each principal's sessions are capped
//! ([`principal_sessions`]), so no credential holder can crowd out the others (issue 39).
//!
//! Agents use the [`resolver`]: k-way lookups, a cache, corrections; the provisioning system
//! uses it too, for retried updates.
//! The wire protocol is in [`wire`]; [`cluster`] starts a whole system on loopback, and
//! [`bench`] measures it.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use clos_directory::{address::{Aa, La}, mapping::Mapping, resolver::{Resolver, ResolverConfig}, tls::ClientTls};
//! let servers = vec!["127.0.0.1:7001".parse()?, "127.0.0.1:7002".parse()?];
//! let me: Aa = "10.0.0.1".parse()?;
//! // Sessions run in TLS; the servers' certificates are checked against the cluster's CA.
//! let tls = Some(ClientTls::from_ca_file("ca.crt".as_ref())?);
//! // The provisioning system registers the AA (with a provisioner's token)...
//! let provisioning = Resolver::new(ResolverConfig::provisioner(servers.clone(), b"the provisioner's token").with_tls(tls.clone()))?;
//! provisioning.update(me, Some(Mapping { la: "20.0.0.1".parse()?, service: "web".into() })).await?;
//! // ...and an agent looks it up, as the AA its own token names.
//! let agent = Resolver::new(ResolverConfig::new(servers, b"this host's agent token", me).with_tls(tls))?;
//! assert_eq!(agent.lookup(me).await?, "20.0.0.1".parse::<La>()?);
//! # Ok(()) }
//! ```

pub mod address;
pub mod authorisation;
pub mod batcher;
pub mod bench;
pub mod cluster;
pub mod config;
pub mod connection;
pub mod credentials;
pub mod duration;
pub mod freshness;
pub mod log;
pub mod mapping;
pub mod origin;
pub mod peers;
pub mod policy;
pub mod principal_sessions;
pub mod rate_limit;
pub mod resolver;
pub mod server;
pub mod store;
pub mod sync;
pub mod table;
pub mod tls;
pub mod wire;
