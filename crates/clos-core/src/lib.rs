pub mod error;
pub mod event;
pub mod packet;
pub mod rng;
pub mod routing;
pub mod topology;
pub mod units;
