# The benchmark suite: `make bench` (python -m bench) measures the firmware against the fakes.
