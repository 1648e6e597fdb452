//! Pisces's four mechanisms for per-tenant weighted max-min fairness in a shared storage
//! service (Shue, Freedman and Shaikh, "Performance Isolation and Fairness for Multi-Tenant
//! Cloud Storage", OSDI 2012; seed 004 lines 7396-8317, §3 at lines 7701-8083), as algorithms:
//! pure, deterministic state machines with no notion of simulated time. They are not yet wired
//! into a request/response service in the simulator (issue 37, item 3); the service will call
//! them.
//!
//! - [`placement`]: partition placement (PP, §3.1), the controller's long-timescale packing of
//!   partition replicas onto nodes so that fair-share demand fits.
//! - [`weights`]: weight allocation (WA, §3.2), the controller's periodic reciprocal swaps of
//!   local shares between tenants and nodes.
//! - [`replica`]: replica selection (RS, §3.3), a request router's FAST-TCP-style per-node
//!   windows and the split of requests across replicas.
//! - [`fair_queue`]: fair queuing (FQ, §3.4), a node's DWRR over per-tenant request queues.

pub mod fair_queue;
pub mod placement;
pub mod replica;
pub mod weights;
