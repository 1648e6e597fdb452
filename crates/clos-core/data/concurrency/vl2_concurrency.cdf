# Concurrent flows per server in VL2's data-mining cluster (Greenberg et al., SIGCOMM 2009, §3.2, Fig. 3).
# Columns: concurrent_flows cumulative_probability. Interpolate linearly, round to a whole number of flows.
# Not a digitization: the figure is not available, so these points are built from the text's three facts:
#   "about 10 flows more than 50% of the time"  -> 65% of the mass lies between 5 and 15 flows;
#   "about 80 flows at least 5% of the time"    -> 10% of the mass lies between 70 and 90 flows;
#   "almost never more than 100"                -> P(> 100) = 0.5%, nothing above 120.
1 0
5 0.10
15 0.75
70 0.86
90 0.96
100 0.995
120 1
