// ns-3's side of the leaf-spine cross-check (docs/validation.md, "Beside ns-3"): a leaf-spine of
// `leaves` x `spines` with `hosts` per leaf, every link at `rate` with 1 us of delay, switch
// ports holding `buffer` packets and marking CE above `k` (RED as a step, as DCTCP wants), and
// long DCTCP flows between the host pairs `pairs` names ("0-5,1-7,..."). Global routing with
// RandomEcmpRouting picks a random equal-cost next hop for every packet at every switch: per-packet
// spraying, clos's `spray-random`. Prints one JSON object: each flow's goodput between the
// warm-up and the end, in the order of `pairs`.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "clos_like.h"

#include <iostream>
#include <sstream>
#include <vector>

using namespace ns3;

// Fast recoveries and timeouts, over every sender's socket (the reordering question).
static uint64_t g_recoveries = 0;
static uint64_t g_timeouts = 0;

static void
CongState(TcpSocketState::TcpCongState_t from, TcpSocketState::TcpCongState_t to)
{
    if (to == TcpSocketState::CA_RECOVERY && from != TcpSocketState::CA_RECOVERY)
    {
        g_recoveries++;
    }
    if (to == TcpSocketState::CA_LOSS && from != TcpSocketState::CA_LOSS)
    {
        g_timeouts++;
    }
}

int
main(int argc, char* argv[])
{
    uint32_t leaves = 4, spines = 4, hosts = 4, k = 65, buffer = 200;
    double warmup = 0.02, end = 0.1;
    std::string rate = "10Gbps", pairs = "0-4", cc = "dctcp";
    CommandLine cmd;
    cmd.AddValue("leaves", "leaves", leaves);
    cmd.AddValue("spines", "spines", spines);
    cmd.AddValue("hosts", "hosts per leaf", hosts);
    cmd.AddValue("pairs", "src-dst,src-dst,...", pairs);
    AddCommonOptions(cmd, cc, k, buffer, rate, warmup, end);
    cmd.Parse(argc, argv);

    ConfigureLikeClos(cc, k, buffer);
    Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(true));
    // ns-3 3.44's TCP asserts when reordered packets bring several duplicate ACKs before it
    // leaves the open state with SACK on ("From OPEN->DISORDER but with 7 dup ACKs"), which
    // spraying does at once; both sides run without SACK here (clos: transport.sack = false).
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(false));

    NodeContainer h(leaves * hosts), leaf(leaves), spine(spines);
    InternetStackHelper stack;
    stack.InstallAll();
    PointToPointHelper link;
    link.SetDeviceAttribute("DataRate", StringValue(rate));
    link.SetChannelAttribute("Delay", StringValue("1us"));
    link.SetQueue("ns3::DropTailQueue", "MaxSize", StringValue("1p"));
    Ipv4AddressHelper addresses;
    uint32_t subnet = 0;
    std::vector<Ipv4Address> hostAddress;
    TrafficControlHelper none, red, fifo;
    red.SetRootQueueDisc("ns3::RedQueueDisc");
    fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize", StringValue("10000p"));
    auto connect = [&](Ptr<Node> a, Ptr<Node> b, bool aIsHost) {
        NetDeviceContainer d = link.Install(a, b);
        std::string net = "10." + std::to_string(subnet / 250) + "." + std::to_string(subnet % 250) + ".0";
        subnet++;
        addresses.SetBase(net.c_str(), "255.255.255.0");
        Ipv4InterfaceContainer ifs = addresses.Assign(d);
        none.Uninstall(d);
        (aIsHost ? fifo : red).Install(d.Get(0));
        red.Install(d.Get(1));
        return ifs.GetAddress(0);
    };
    for (uint32_t i = 0; i < leaves * hosts; i++)
    {
        hostAddress.push_back(connect(h.Get(i), leaf.Get(i / hosts), true));
    }
    for (uint32_t l = 0; l < leaves; l++)
    {
        for (uint32_t s = 0; s < spines; s++)
        {
            connect(leaf.Get(l), spine.Get(s), false);
        }
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    std::vector<std::pair<uint32_t, uint32_t>> flows;
    std::stringstream ss(pairs);
    std::string item;
    while (std::getline(ss, item, ','))
    {
        size_t dash = item.find('-');
        flows.emplace_back(std::stoul(item.substr(0, dash)), std::stoul(item.substr(dash + 1)));
    }
    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < flows.size(); i++)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer a = sink.Install(h.Get(flows[i].second));
        sinks.push_back(DynamicCast<PacketSink>(a.Get(0)));
        BulkSendHelper send("ns3::TcpSocketFactory", InetSocketAddress(hostAddress[flows[i].second], port));
        send.SetAttribute("MaxBytes", UintegerValue(0));
        send.Install(h.Get(flows[i].first));
    }
    std::vector<uint64_t> atWarmup(flows.size(), 0);
    Simulator::Schedule(Seconds(warmup), [&]() {
        for (uint32_t i = 0; i < flows.size(); i++)
        {
            atWarmup[i] = sinks[i]->GetTotalRx();
        }
    });
    // The senders' sockets exist once the applications have started.
    Simulator::Schedule(MicroSeconds(1), []() {
        Config::ConnectWithoutContext("/NodeList/*/$ns3::TcpL4Protocol/SocketList/*/CongState", MakeCallback(&CongState));
    });
    Simulator::Stop(Seconds(end));
    Simulator::Run();
    std::cout << "{\"flows\": [";
    for (uint32_t i = 0; i < flows.size(); i++)
    {
        std::cout << (i ? ", " : "") << (sinks[i]->GetTotalRx() - atWarmup[i]) * 8.0 / (end - warmup);
    }
    std::cout << "], \"fast_recoveries\": " << g_recoveries << ", \"timeouts\": " << g_timeouts << "}" << std::endl;
    Simulator::Destroy();
    return 0;
}
