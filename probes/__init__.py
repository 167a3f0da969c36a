"""One module per integration trap; `pytest probes --benchmark-only` collects them."""
if __name__ != "cudnn_hostbench.probes":   # one import name per file: docs/layout.md
    raise ImportError(f"{__name__}: import this folder as cudnn_hostbench.probes "
                      "(under a second name its modules would load twice)")
