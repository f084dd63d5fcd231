"""Speed and fidelity benchmarks: each module runs as ``python -m benchmarks.<name>``."""
