"""Benchmark campaigns: inventory, runners (ssh, slurm, local), benchmarks (hpcc, hpcg, graph500,
netgauge), task mapping, routing-engine switching, result store and report."""
