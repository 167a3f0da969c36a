"""cudnn-hostbench harness core: timing modes, statistics, records, fingerprint, cuDNN helpers.

Importable without pytest and without a GPU; anything that needs CUDA or cuDNN loads it lazily.
"""
__version__ = "0.1.0"
