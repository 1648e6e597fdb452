//! Integration and fault tests of the directory system: real etcd members and directory server
//! processes on loopback, killed and partitioned on purpose (VL2 §5.5 "resilience and
//! availability"). Every load loop is bounded in count and time. The tests run one at a time
//! (see `harness::serial`) so their timings do not disturb each other on a small machine.

// The serialising lock is held for a whole test on purpose; each test has its own runtime, so
// holding it across awaits cannot deadlock.
#![allow(clippy::await_holding_lock)]

mod authorised_writes;
mod bad_requests;
mod campaign;
mod flood;
mod forged_push;
mod harness;
mod history;
mod idle_sessions;
mod leader_failover;
mod lookup_storm;
mod partition;
mod retried_update;
mod service;
mod store_loss;
mod tls_sessions;
