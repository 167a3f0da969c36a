"""cudnn-hostbench: one installed package, so nothing generic lands in site-packages.

Its subpackages bench, probes, reports and scripts are the repository's top-level folders; in a
checkout this folder holds relative links to them (bench -> ../bench), so every file has one
import name, cudnn_hostbench.<folder>.<module>, that static tools resolve too. docs/layout.md
says why.
"""
__version__ = "0.2.0"
