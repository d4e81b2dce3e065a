# WebSearch flow-size distribution (Alizadeh et al., "Data Center TCP (DCTCP)", SIGCOMM 2010,
# the web-search cluster's background and query traffic), as the points of the piecewise-linear
# CDF that the HPCC paper (Li et al., SIGCOMM 2019) and its ns-3 simulator's traffic generator
# use. Mean 1.71 MB. Format: data/cdf/README.md.
#
# size_bytes  cumulative_probability
0          0
10000      0.15
20000      0.20
30000      0.30
50000      0.40
80000      0.53
200000     0.60
1000000    0.70
2000000    0.80
5000000    0.90
10000000   0.97
30000000   1
