"""cudnn-hostbench harness core: timing modes, statistics, records, fingerprint, cuDNN helpers.

Importable without pytest and without a GPU; anything that needs CUDA or cuDNN loads it lazily.
"""
if __name__ != "cudnn_hostbench.bench":   # one import name per file: docs/layout.md
    raise ImportError(f"{__name__}: import this folder as cudnn_hostbench.bench "
                      "(under a second name its modules would load twice)")
__version__ = "0.1.0"
