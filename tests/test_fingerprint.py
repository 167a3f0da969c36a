"""The environment fingerprint's process clock: how long a worker took to reach its first probe."""
def test_process_age_reads_proc_and_says_none_when_it_cannot():
    from cudnn_hostbench.bench.measure.runfile.fingerprint import process_age_s
    # a name with spaces and a parenthesis: field 22 is counted after the last ')'
    stat = "123 (py (x) y) S " + " ".join(str(i) for i in range(4, 22)) + " 500 0 0"
    assert process_age_s(stat, "12.50 40.0", hz=100) == 7.5
    assert process_age_s("", "12.5 1", hz=100) is None
    assert process_age_s(stat, "", hz=100) is None
    age = process_age_s()
    assert age is None or 0 <= age < 24 * 3600


def test_commit_named_by_the_environment_wins_over_a_stale_checkout(tmp_path, monkeypatch):
    """A tree copied to a GPU machine with an old .git records the commit it was told, not that HEAD."""
    from cudnn_hostbench.bench.measure.runfile.fingerprint import COMMIT_ENV, git_commit
    monkeypatch.delenv(COMMIT_ENV, raising=False)
    assert git_commit(tmp_path) == {}          # no git history there: no commit
    monkeypatch.setenv(COMMIT_ENV, "e582f72")
    assert git_commit(tmp_path) == {"id": "e582f72", "dirty": False, "from": COMMIT_ENV}
