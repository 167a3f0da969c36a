"""`hostbench dashboard`: the static site (site.py), its content read from a store (page.py), its
figures (charts.py), its A/B section (abpage.py) and its template (templates/)."""
