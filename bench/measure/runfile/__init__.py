"""The run file and its format: records and their statistics, a record's status, the environment
fingerprint and the machine, the format versions and their migrations, trust marks, plan rules,
whole-file writes. What every report reads."""
