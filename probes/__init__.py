"""One module per integration trap; `pytest probes --benchmark-only` collects them."""
