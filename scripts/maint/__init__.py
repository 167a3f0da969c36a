"""Maintainer tools, for work on cudnn-hostbench itself (listed apart in `hostbench --help`): README
figures, the history store's scale benchmark and its throwaway PostgreSQL, the verdict model's and
the A/B verdict's validations, the committed runs' machine starts."""
