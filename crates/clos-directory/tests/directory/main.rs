//! Integration and fault tests of the directory system: real etcd members and directory server
//! processes on loopback, killed and partitioned on purpose (VL2 §5.5 "resilience and
//! availability"). Every load loop is bounded in count and time. The tests run one at a time
//! (see `harness::serial`) so their timings do not disturb each other on a small machine.

mod bad_requests;
mod harness;
mod leader_failover;
mod lookup_storm;
mod partition;
mod service;
