"""Built-in plugin: the SQLite (or in-memory) state store."""

from kafkasec.hookspecs import hookimpl
from kafkasec.store import open_state_store


@hookimpl(trylast=True)
def kafkasec_state_store(path):
    return open_state_store(path)
