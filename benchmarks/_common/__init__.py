"""What the benchmark scripts share: dataset loaders, option checks, result tables and /proc
memory readings. Not a script."""
