"""Built-in plugin: the state store (SQLite, PostgreSQL or memory, by location) and the SCRAM
credential cache that the security log feeds."""

from kafkasec.hookspecs import hookimpl
from kafkasec.scram.cache import ScramCredentialCache
from kafkasec.store import open_state_store


@hookimpl(trylast=True)
def kafkasec_state_store(security, path):
    return open_state_store(path, security.config)


@hookimpl(trylast=True)
def kafkasec_scram_credential_store(security):
    return ScramCredentialCache(security.writer)
