"""walk17a/walk17b rows fixed by fix19e, one test per class: what the entrypoint says about a node is the plan that
runs."""


def test_every_stop_hint_under_recovery_names_kill_int_and_what_kill_term_does():
    """walk17b B8: --node stop's refusal offered only `kill -TERM PID` (under recovery node 0's is an eviction the
    others wait out); the one signal that ends a recovery job on every node, `kill -INT PID`, was not named."""
    from nodeweave.entrypoint import nodeinfo

    refusal = nodeinfo.main_run_error([{"pid": 24278, "main": False}])
    assert "`kill -INT 24278` (as Ctrl-C: on node 0 it ends the job on every node, under recovery too)" in refusal
    assert "`kill -TERM 24278` (under recovery node 0's SIGTERM is read as an eviction" in refusal, refusal
