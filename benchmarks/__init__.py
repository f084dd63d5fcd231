"""Benchmark scripts: one command each, printing ratios against a baseline measured in the same run."""
