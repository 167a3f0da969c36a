"""The results pages' table of the issue-67 probes over machine starts (readme_figures.starts): each
pair's spread and its two sides' own spreads, read from the committed runs of every GPU that has
runs of other starts."""
import re

import pytest

from cudnn_hostbench.scripts.maint import readme_figures as rf

GPUS = [ref for ref in rf.references() if any(ref.folder.glob("starts/*/run.json*"))]
PCT = re.compile(r"(\d+\.\d) %")


@pytest.mark.parametrize("ref", GPUS, ids=[ref.gpu for ref in GPUS])
def test_a_pairs_spread_is_bounded_by_its_sides_and_a_miss_is_marked(ref):
    text = rf.starts(ref, ref.load(), rf.ROOT)
    rows = [line for line in text.splitlines()[2:] if line.startswith("| ")]   # past the header and its rule
    assert rows, "a GPU with runs of other starts renders their pairs"
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        pair, trap, fix = (PCT.search(c) for c in cells[-3:])
        assert pair is not None, line
        pair_s = float(pair.group(1)) / 100
        assert ("✗" in cells[-3]) == (pair_s > rf.AGREE + 5e-4), line
        if trap and fix:     # max(t/f)/min(t/f) <= (max t/min t)·(max f/min f), to the printed digit
            bound = (1 + float(trap.group(1)) / 100) * (1 + float(fix.group(1)) / 100) - 1
            assert pair_s <= bound + 2e-3, line
