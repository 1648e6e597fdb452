//! The TCP ACK path (`transport`): the receiver takes a data segment and makes its ACK (SACK
//! blocks, DCTCP's ECE echo), the sender takes the ACK (window, DCTCP's alpha, SACK scoreboard,
//! loss recovery) and releases the next segments. One DCTCP flow with B1's parameters runs over
//! an in-memory FIFO path that CE-marks one segment in eight and drops one in a thousand, so
//! fast recovery is exercised too.

use super::fixture;
use clos_core::rng::mix64;
use clos_core::transport::receiver::Receiver;
use clos_core::transport::reorder_shim::Segment;
use clos_core::transport::tcp::Sender;
use clos_core::transport::TcpParams;
use clos_core::units::Time;
use gungraun::{library_benchmark, library_benchmark_group};
use std::collections::VecDeque;
use std::hint::black_box;

/// Segments in the flow.
const SEGMENTS: u64 = 50_000;
/// A 1538 B frame at 10 Gb/s: the path delivers one segment per frame time.
const FRAME_TIME: Time = 1_230_400;

/// A data segment on the path.
#[derive(Clone, Copy)]
struct InFlight {
    seg: u32,
    ce: bool,
    sent: Time,
}

struct Flow {
    params: TcpParams,
    sender: Sender,
    receiver: Receiver,
    path: VecDeque<InFlight>,
}

fn flow() -> Flow {
    let params = fixture::b1("20ms", "ecmp").tcp_params();
    let sender = Sender::new(SEGMENTS * params.mss as u64, params.mss, &params);
    Flow { params, sender, receiver: Receiver::default(), path: VecDeque::with_capacity(1 << 16) }
}

/// First transmissions of these segments are lost; retransmissions always arrive.
fn lost(seg: u32) -> bool {
    mix64(seg as u64).is_multiple_of(1_000)
}

fn marked(seg: u32, sent: Time) -> bool {
    mix64(seg as u64 ^ sent).is_multiple_of(8)
}

#[library_benchmark]
#[bench::dctcp_b1_params(setup = flow)]
fn ack_path(mut f: Flow) -> (Time, Flow) {
    let mut now: Time = 0;
    while !f.sender.done() {
        while let Some((seg, retransmission)) = f.sender.next_segment(now) {
            if retransmission || !lost(seg) {
                f.path.push_back(InFlight { seg, ce: marked(seg, now), sent: now });
            }
        }
        let Some(d) = f.path.pop_front() else {
            // Nothing in flight and nothing allowed: what the retransmission timer resolves.
            f.sender.on_timeout(now);
            continue;
        };
        now += FRAME_TIME;
        let rx = f.receiver.on_data(d.sent, Segment { seg: d.seg, ce: d.ce, ts: d.sent, retx: false }, false, &f.params);
        for ack in rx.acks.into_iter().flatten() {
            f.sender.on_ack(now, ack.cum, &ack.sack, ack.ece, ack.echo, &f.params);
        }
    }
    (black_box(now), f)
}

library_benchmark_group!(name = tcp_ack_path; benchmarks = ack_path);
