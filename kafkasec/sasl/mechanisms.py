"""Which SASL mechanisms a node can serve: the one table of mechanism facts.

A mechanism is offered by a plugin through the ``kafkasec_sasl_mechanisms`` hook, as a
:class:`SaslMechanism`: its name as clients send it in SaslHandshake and how to start one
exchange (a :class:`SaslServer`). The built-in plugins offer SCRAM-SHA-256 and SCRAM-SHA-512
(``kafkasec.scram.mechanism``, delegation-token logins included), PLAIN
(``kafkasec.sasl.plain``) and OAUTHBEARER (``kafkasec.sasl.oauthbearer``); which of them a listener serves is ``sasl.enabled.mechanisms``.
The endpoint's authenticator knows nothing of any one mechanism: it hands the client's bytes
to the server this table made and, once it is complete, builds the principal from its
:class:`~kafkasec.principals.authentication.SaslAuthenticationContext`.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Iterator, Mapping, Protocol, runtime_checkable

from attrs import field, frozen, validators

from kafkasec.plugins import answers_by_plugin
from kafkasec.principals.authentication import SaslAuthenticationContext

_MECHANISM_NAME = re.compile(r"[A-Z0-9_-]{1,20}")  # RFC 4422's sasl-mech: upper case, at most 20


@runtime_checkable
class SaslServer(Protocol):
    """The server side of one exchange (Kafka's ``javax.security.sasl.SaslServer``), sans I/O.
    :class:`kafkasec.sasl.exchange.SaslExchange` is the base that keeps this shape."""

    @property
    def mechanism_name(self) -> str: ...

    @property
    def is_complete(self) -> bool: ...

    def evaluate_response(self, response: bytes) -> bytes:
        """The answer to the client's next message; SaslAuthenticationError refuses the login."""
        ...

    def authentication_context(
        self, client_address: str, *, listener_name: str, security_protocol: str
    ) -> SaslAuthenticationContext:
        """What the login proved, once complete, for the principal builder."""
        ...


def _mechanism_name(instance, attribute, value: str) -> None:
    if not isinstance(value, str) or not _MECHANISM_NAME.fullmatch(value):
        raise ValueError(f"a SASL mechanism name is 1 to 20 upper-case letters, digits, '-' or '_', not {value!r}")


@frozen
class SaslMechanism:
    """A mechanism a plugin serves: ``new_server(security, listener_name)`` starts one exchange.

    ``blocking=True`` says that a step of the exchange (``evaluate_response``) may wait on I/O:
    an LDAP bind, a call to an identity provider, a database. The endpoint then runs its steps
    on a login thread (one turn per client address), not on the event loop that serves every
    other connection. The built-in mechanisms do no I/O during a login and leave it False."""

    name: str = field(validator=_mechanism_name)
    new_server: Callable[[Any, str], SaslServer] = field(validator=validators.is_callable(), repr=False)
    blocking: bool = field(default=False, kw_only=True, validator=validators.instance_of(bool))


class SaslMechanisms:
    """The mechanisms the plugins offer, by name (plugins before the built-ins; the first
    offer of a name wins, so a plugin may replace a built-in mechanism)."""

    def __init__(self, by_name: Mapping[str, SaslMechanism]):
        self._by_name = dict(by_name)

    @classmethod
    def collect(cls, security) -> SaslMechanisms:
        by_name: dict[str, SaslMechanism] = {}
        offered_by: dict[str, str] = {}
        hook = security.plugin_manager.hook.kafkasec_sasl_mechanisms
        for impl, answer in answers_by_plugin(hook, security=security):
            for mechanism in answer or ():
                if not isinstance(mechanism, SaslMechanism):
                    raise TypeError(f"the plugin {impl.plugin_name!r} offers {mechanism!r}, not a SaslMechanism")
                if mechanism.name in by_name:
                    if not impl.trylast and mechanism.name in offered_by:
                        raise ValueError(
                            f"the plugins {offered_by[mechanism.name]!r} and {impl.plugin_name!r} both serve {mechanism.name}"
                        )
                    continue
                by_name[mechanism.name] = mechanism
                if not impl.trylast:
                    offered_by[mechanism.name] = impl.plugin_name
        return cls(by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._by_name))

    def blocking(self, name: str) -> bool:
        """Whether the steps of mechanism ``name`` may wait on I/O (:attr:`SaslMechanism.blocking`)."""
        mechanism = self._by_name.get(name)
        return mechanism is not None and mechanism.blocking

    def server(self, security, name: str, listener_name: str) -> SaslServer:
        """A new exchange of mechanism ``name``; ValueError for a mechanism nobody serves."""
        mechanism = self._by_name.get(name)
        if mechanism is None:
            raise ValueError(f"no plugin serves the SASL mechanism {name!r}; served: {', '.join(self) or 'none'}")
        server = mechanism.new_server(security, listener_name)
        if not isinstance(server, SaslServer):
            raise TypeError(f"the {name} mechanism started {server!r}, which is not a SaslServer")
        return server
