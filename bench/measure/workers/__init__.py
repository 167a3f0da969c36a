"""The worker processes: the parent that runs K workers and merges their records (parent.py,
replicas.py), the own engine's worker and its job (worker.py), which cases each worker measures
(schedule.py, collect.py), and the interleaved processes of an A/B job (interleave.py)."""
