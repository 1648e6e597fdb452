// What both ns-3 programs of the cross-check set alike (docs/validation.md, "Beside ns-3"): the
// same TCP as clos's defaults, and switch ports that mark CE as a step at K, as DCTCP wants.
#ifndef CLOS_CROSSCHECK_CLOS_LIKE_H
#define CLOS_CROSSCHECK_CLOS_LIKE_H

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/traffic-control-module.h"

#include <string>

// The options both programs take.
inline void
AddCommonOptions(ns3::CommandLine& cmd, std::string& cc, uint32_t& k, uint32_t& buffer, std::string& rate, double& warmup, double& end)
{
    cmd.AddValue("cc", "dctcp or newreno", cc);
    cmd.AddValue("k", "marking threshold, packets", k);
    cmd.AddValue("buffer", "switch port buffer, packets", buffer);
    cmd.AddValue("rate", "every link's rate", rate);
    cmd.AddValue("warmup", "seconds before goodput is counted", warmup);
    cmd.AddValue("end", "seconds simulated", end);
}

// Segments of 1,460 B (no timestamps), IW10, an ACK per segment, RTO_min 10 ms with clos's
// RTO = max(RTO_min, SRTT + 4 RTTVAR) (ns-3 puts max(G, 4 RTTVAR) in the sum, G the clock
// granularity, 1 ms by default; clos's timers have none), classic recovery, NewReno growth or
// DCTCP (g = 1/16); RED as a step at `k` packets in ports of `buffer` packets.
//
// With `bytes`, the ports count bytes instead, as clos's do (its K and buffer are bytes): the
// step at `k` x 1,500 B of IP packets and room for `buffer` x 1,500 B. It matters only where
// pure ACKs share a port with data (a permutation): counted in packets, each 40-byte ACK takes
// as much of K and of the buffer as a full data packet.
inline void
ConfigureLikeClos(const std::string& cc, uint32_t k, uint32_t buffer, bool bytes = false)
{
    using namespace ns3;
    Config::SetDefault("ns3::TcpL4Protocol::SocketType",
                       TypeIdValue(cc == "dctcp" ? TcpDctcp::GetTypeId() : TcpNewReno::GetTypeId()));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType", TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(1460));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(false));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MilliSeconds(10)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity", TimeValue(NanoSeconds(1)));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(1 << 26));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(6 << 20));
    Config::SetDefault("ns3::RedQueueDisc::UseEcn", BooleanValue(true));
    Config::SetDefault("ns3::RedQueueDisc::UseHardDrop", BooleanValue(false));
    Config::SetDefault("ns3::RedQueueDisc::MeanPktSize", UintegerValue(1500));
    Config::SetDefault("ns3::RedQueueDisc::QW", DoubleValue(1.0));
    // A step at K: without this, RED's "gentle" mode marks above MaxTh only with a probability
    // rising from 1/LInterm, and most packets above K go unmarked.
    Config::SetDefault("ns3::RedQueueDisc::Gentle", BooleanValue(false));
    uint32_t unit = bytes ? 1500 : 1;
    Config::SetDefault("ns3::RedQueueDisc::MinTh", DoubleValue(k * unit));
    Config::SetDefault("ns3::RedQueueDisc::MaxTh", DoubleValue(k * unit));
    Config::SetDefault("ns3::RedQueueDisc::MaxSize",
                       QueueSizeValue(QueueSize(std::to_string(buffer * unit) + (bytes ? "B" : "p"))));
}

#endif
