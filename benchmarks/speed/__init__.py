"""Speed and memory benchmarks: rwtool beside its peers or its own reference method."""
