"""The ninth walk, part A, rows A34..A40 (issue 43): each row's class, one test per class, each failing on the code
before it."""

from __future__ import annotations

import pytest

from nodeweave.errors import EXIT_USAGE
from cli_run import in_process as run_cli, one_line
from team_folder import make_team


@pytest.fixture
def team(tmp_path, monkeypatch):
    return make_team(tmp_path, monkeypatch)


# -- A38: a bind address the socket layer cannot even encode is an OSError of every listener, never a TypeError ----

UNENCODABLE = ["\u202e", "\udcff"]


def _listeners():
    from nodeweave.entrypoint.checkin.wire import listen
    from nodeweave.entrypoint.metrics.server import http_server
    from http.server import BaseHTTPRequestHandler

    return {"metrics/dashboard http_server": lambda bind: http_server(bind, 0, BaseHTTPRequestHandler),
            "check-in exchange listen": lambda bind: listen(bind, 0)}


@pytest.mark.parametrize("listener", sorted(_listeners()))
@pytest.mark.parametrize("bind", UNENCODABLE)
def test_every_listener_refuses_an_unencodable_bind_as_oserror(listener, bind):
    """A38: each listener's own `except OSError` is what turns a bad address into its one line."""
    with pytest.raises(OSError, match="not a host name or an address"):
        _listeners()[listener](bind)


@pytest.mark.parametrize("bind", UNENCODABLE)
def test_dashboard_bind_that_cannot_be_encoded_is_one_line(capsys, team, bind):
    """A38: `dashboard --bind $'\\u202e'` is the same one-line refusal as `--bind ñ.local`, exit 2."""
    code, _, err = run_cli(capsys, "dashboard", "--url", "http://127.0.0.1:9", "--bind", bind, "--port", "0")
    assert code == EXIT_USAGE
    line = one_line(err)
    assert "--bind" in line and "cannot listen there" in line and "Traceback" not in err
