"""Node placement: a node's GPUs and the cores nearest each (topology.py), one job per GPU pinned to
its cores with its environment (placement.py), and jobs run over the slots (jobs.py). Here, in
bench, because the fingerprint records a job's slot (placement.job_fields) and bench imports
nothing above it; the node commands and their reports are in scripts/node/."""
