"""Built-in plugin: the SDK's own admin APIs, offered through ``kafkasec_api_handlers``.

The handler modules are imported when a node first asks (an endpoint starting), not when a
plugin manager is made: they need the ``wire`` extra, and an embedder that only authorizes
never loads the Kafka wire format.
"""

from __future__ import annotations

from kafkasec.hookspecs import hookimpl


@hookimpl(trylast=True)
def kafkasec_api_handlers():
    from kafkasec.protocol import acl_apis, scram_apis, token_apis

    return {**acl_apis.HANDLERS, **scram_apis.HANDLERS, **token_apis.HANDLERS}
