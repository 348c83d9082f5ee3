"""Built-in plugin: the SQLite (or in-memory) state store, which also keeps SCRAM credentials and
delegation tokens."""

from kafkasec.hookspecs import hookimpl
from kafkasec.store import MemoryStateStore, SqliteStateStore, open_state_store


@hookimpl(trylast=True)
def kafkasec_state_store(path):
    return open_state_store(path)


@hookimpl(trylast=True)
def kafkasec_scram_credential_store(security):
    # A state store from a plugin may keep ACLs only: then nobody keeps credentials unless a
    # plugin answers this hook too.
    if isinstance(security.store, (SqliteStateStore, MemoryStateStore)):
        return security.store
    return None


@hookimpl(trylast=True)
def kafkasec_delegation_token_store(security):
    if isinstance(security.store, (SqliteStateStore, MemoryStateStore)):
        return security.store
    return None
