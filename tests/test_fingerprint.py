"""The environment fingerprint's process clock: how long a worker took to reach its first probe."""
def test_process_age_reads_proc_and_says_none_when_it_cannot():
    from cudnn_hostbench.bench.measure.fingerprint import process_age_s
    # a name with spaces and a parenthesis: field 22 is counted after the last ')'
    stat = "123 (py (x) y) S " + " ".join(str(i) for i in range(4, 22)) + " 500 0 0"
    assert process_age_s(stat, "12.50 40.0", hz=100) == 7.5
    assert process_age_s("", "12.5 1", hz=100) is None
    assert process_age_s(stat, "", hz=100) is None
    age = process_age_s()
    assert age is None or 0 <= age < 24 * 3600
