"""cuDNN frontend graph helpers: loading, building, executing, plans, autotune winners, the matmul and conv problems."""
from cudnn_hostbench.bench.cudnn_graphs import context as _context  # noqa: F401 - registers cuDNN's context and fingerprint hooks
