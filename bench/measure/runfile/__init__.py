"""The run file and its format: records and their statistics, a record's status, the environment
fingerprint (typed: environment.py, fields.py) and the machine, the format versions and their
migrations, the pytest-benchmark export, trust marks, plan rules, whole-file writes. What every
report reads."""
