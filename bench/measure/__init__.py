"""The measuring core: timing modes, host and GPU state, statistics, records, workers, the pytest
plugin. Knows nothing of cuDNN."""
