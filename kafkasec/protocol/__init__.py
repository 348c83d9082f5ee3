"""The Kafka protocol, in one place: API keys (:mod:`.api_keys`), the wire format through kio
(:mod:`.wire`), the one error encoder (:mod:`.errors`), the handler registry and its hook
(:mod:`.registry`, :mod:`.builtin_apis`), the handlers of ACLs, SCRAM credentials, delegation
tokens and cluster metadata (``*_apis``), ApiVersions, and KIP-590 forwarding
(:mod:`.forwardable`, :mod:`.forwarding`). Everything here needs the ``wire`` extra except
:mod:`.api_keys` and :mod:`.builtin_apis`."""
