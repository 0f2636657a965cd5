"""What the benchmark scripts share: dataset loaders and option checks. Not a script."""
