// What both ns-3 programs of the cross-check set alike (docs/validation.md, "Beside ns-3"): the
// same TCP as clos's defaults, and switch ports that mark CE as a step at K, as DCTCP wants.
#ifndef CLOS_CROSSCHECK_CLOS_LIKE_H
#define CLOS_CROSSCHECK_CLOS_LIKE_H

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/traffic-control-module.h"

#include <string>
#include <vector>

#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"

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

// Every link of the cross-check: `rate`, 1 us of delay, and a one-packet device queue, so that
// the queue disc above the device is the port's queue.
inline ns3::PointToPointHelper
ClosLink(const std::string& rate)
{
    using namespace ns3;
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", StringValue(rate));
    link.SetChannelAttribute("Delay", StringValue("1us"));
    link.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    return link;
}

// A star: hosts 0 to n - 1 send, host n receives, all on one switch, every link at `rate` with
// 1 us of delay and a one-packet device queue, so that the queue discs above it are the ports'
// queues. Hosts' NICs and the switch's ports back toward the senders (which carry only ACKs)
// are large FIFOs; the switch's port toward the receiver is what `port` installs, returned.
// Fills `hosts` (n + 1 nodes) and each host's address.
inline ns3::Ptr<ns3::QueueDisc>
BuildStar(uint32_t n, const std::string& rate, ns3::TrafficControlHelper& port, ns3::NodeContainer& hosts,
          std::vector<ns3::Ipv4Address>& addresses)
{
    using namespace ns3;
    hosts.Create(n + 1);
    NodeContainer sw(1);
    InternetStackHelper stack;
    stack.InstallAll();
    PointToPointHelper link = ClosLink(rate);
    Ipv4AddressHelper helper;
    Ptr<QueueDisc> receiverPort;
    for (uint32_t i = 0; i <= n; i++)
    {
        NetDeviceContainer d = link.Install(hosts.Get(i), sw.Get(0));
        std::string net = "10." + std::to_string(i / 250) + "." + std::to_string(i % 250) + ".0";
        helper.SetBase(net.c_str(), "255.255.255.0");
        addresses.push_back(helper.Assign(d).GetAddress(0));
        TrafficControlHelper none;
        none.Uninstall(d);
        TrafficControlHelper fifo;
        fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue(i == n ? "1p" : "10000p"));
        if (i == n)
        {
            receiverPort = port.Install(d.Get(1)).Get(0);
            fifo.Install(d.Get(0));
        }
        else
        {
            fifo.Install(d);
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
    return receiverPort;
}

#endif
