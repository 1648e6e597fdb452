// ns-3's side of the cross-check (docs/validation.md, "Beside ns-3"): N long TCP flows from N
// hosts through one switch into one receiver, every link 10 Gb/s with 1 us of delay, the switch
// port toward the receiver marking CE above K packets (RED with min = max = K and an
// instantaneous queue, as DCTCP's paper configures it) and holding at most B packets. Prints one
// JSON object: each flow's goodput between the warm-up and the end, the port's marks after the
// warm-up and drops in all, and its mean queue in packets after the warm-up. Built against the
// ns3 wheel from PyPI by run.py beside it.
#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include "clos_like.h"

#include <iostream>
#include <vector>

using namespace ns3;

static Ptr<QueueDisc> g_port;
static double g_queue_sum = 0;
static uint64_t g_samples = 0;

// Every CE mark the port made: with min = max = K, RED's marks above K count as forced.
static uint64_t
Marks(const QueueDisc::Stats& st)
{
    return st.GetNMarkedPackets(RedQueueDisc::UNFORCED_MARK) + st.GetNMarkedPackets(RedQueueDisc::FORCED_MARK);
}

static void
Sample()
{
    g_queue_sum += g_port->GetNPackets();
    g_samples++;
    Simulator::Schedule(MicroSeconds(10), &Sample);
}

int
main(int argc, char* argv[])
{
    uint32_t flows = 4;
    double warmup = 0.05;
    double end = 0.25;
    std::string cc = "dctcp";
    uint32_t k = 65;
    uint32_t buffer = 200;
    std::string rate = "10Gbps";
    CommandLine cmd;
    cmd.AddValue("flows", "senders", flows);
    AddCommonOptions(cmd, cc, k, buffer, rate, warmup, end);
    cmd.Parse(argc, argv);

    ConfigureLikeClos(cc, k, buffer);

    NodeContainer hosts;
    std::vector<Ipv4Address> hostAddress;
    TrafficControlHelper red;
    red.SetRootQueueDisc("ns3::RedQueueDisc");
    g_port = BuildStar(flows, rate, red, hosts, hostAddress);

    Ptr<Node> receiver = hosts.Get(flows);
    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < flows; i++)
    {
        uint16_t port = 5000 + i;
        PacketSinkHelper sink("ns3::TcpSocketFactory", InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer a = sink.Install(receiver);
        a.Start(Seconds(0));
        sinks.push_back(DynamicCast<PacketSink>(a.Get(0)));
        BulkSendHelper send("ns3::TcpSocketFactory", InetSocketAddress(hostAddress[flows], port));
        send.SetAttribute("MaxBytes", UintegerValue(0));
        ApplicationContainer s = send.Install(hosts.Get(i));
        s.Start(Seconds(0));
    }
    std::vector<uint64_t> atWarmup(flows, 0);
    uint64_t marksAtWarmup = 0;
    Simulator::Schedule(Seconds(warmup), [&]() {
        for (uint32_t i = 0; i < flows; i++)
        {
            atWarmup[i] = sinks[i]->GetTotalRx();
        }
        marksAtWarmup = Marks(g_port->GetStats());
        Sample();
    });
    Simulator::Stop(Seconds(end));
    Simulator::Run();

    QueueDisc::Stats st = g_port->GetStats();
    std::cout << "{\"flows\": [";
    for (uint32_t i = 0; i < flows; i++)
    {
        double bps = (sinks[i]->GetTotalRx() - atWarmup[i]) * 8.0 / (end - warmup);
        std::cout << (i ? ", " : "") << bps;
    }
    std::cout << "], \"marks\": " << Marks(st) - marksAtWarmup
              << ", \"drops\": " << st.nTotalDroppedPackets
              << ", \"mean_queue_packets\": " << (g_samples ? g_queue_sum / g_samples : 0) << "}" << std::endl;
    Simulator::Destroy();
    return 0;
}
