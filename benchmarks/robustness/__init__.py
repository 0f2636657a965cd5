"""Hostile-input campaigns: the model-file fuzzer's long run."""
