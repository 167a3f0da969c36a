"""The node feature's commands and reports: `hostbench node` (node_cmd.py), `hostbench run
--all-gpus` (all_gpus.py), `hostbench node-check` (node_check.py), the matrix on every GPU
(parallel_matrix.py), the slow-GPU report (slow_gpu.py) and the safety check (safety.py). The
placement they share is bench/measure/node/ (docs/architecture.md says why)."""
