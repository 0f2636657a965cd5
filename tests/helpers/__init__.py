"""Code the tests share that is not a fixture: the model-file fuzzer (fuzz_models), which
benchmarks/robustness/fuzz_models.py also runs for its long campaign."""
