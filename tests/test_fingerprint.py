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


def test_the_budget_counts_from_the_wrapper_s_start():
    """scripts/bench.sh stamps its start before pip runs: the suite's budget counts set-up too."""
    from cudnn_hostbench.bench.measure.fingerprint import STARTED_AT_ENV, command_age_s, process_age_s
    age = process_age_s() or 0.0     # /proc/uptime ticks at 10 ms: two reads may differ by one
    assert abs(command_age_s({STARTED_AT_ENV: "1000.0"}, now=1000.0 + age + 16.0) - (age + 16.0)) < 1e-9
    assert abs((command_age_s({}, now=5.0) or 0.0) - age) < 0.05
    for junk in ("soon", "1e12"):   # unreadable or in the future: this process's own age
        assert abs((command_age_s({STARTED_AT_ENV: junk}, now=1000.0) or 0.0) - age) < 0.05
