"""Runs the kafkasec command in process, for the CLI tests."""

import io
import sys

from kafkasec.cli import main


class Cli:
    """Runs ``main`` on one state file and returns (exit status, stdout, stderr); ``command``
    (e.g. "scram") goes before the arguments of every call."""

    command: tuple = ()

    def __init__(self, state, capsys, monkeypatch):
        self.state = state
        self._capsys = capsys
        self._monkeypatch = monkeypatch

    def __call__(self, *argv, stdin=None):
        if stdin is not None:
            self._monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        status = main(["--state", self.state, *self.command, *argv])
        out, err = self._capsys.readouterr()
        return status, out, err
