"""Judgements above the store and the verdict model: the history check (check.py) and which run it
leads with (lead.py), compare of two runs (compare.py), the A/B job's judgement (ab.py), and the
model validated on recorded data (validate.py, validate_ab.py)."""
