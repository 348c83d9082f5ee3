"""Every hook of kafkasec, in one module, with the marker "kafkasec".

A plugin is a module or object with functions named like these, marked ``@hookimpl``
(``from kafkasec import hookimpl``); it may take any subset of the arguments. Built-in
behaviour is itself a plugin (see ``kafkasec.plugins.DEFAULT_PLUGINS``) registered after the
entry-point plugins, with ``trylast=True`` where it answers a firstresult hook, so a plugin of
yours is asked first and can answer, decline (return None) or wrap (``wrapper=True``).

docs/hooks.md is the reference for each hook, with an example.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import pluggy

if TYPE_CHECKING:
    from kafkasec.acl import AclBinding
    from kafkasec.authorizer.decision import AuthorizationDecision
    from kafkasec.context import Action, RequestContext
    from kafkasec.principals.authentication import (
        PlaintextAuthenticationContext,
        SaslAuthenticationContext,
        SslAuthenticationContext,
    )
    from kafkasec.principals.principal import KafkaPrincipal
    from kafkasec.protocol.api_keys import ApiKey
    from kafkasec.protocol.registry import Handler
    from kafkasec.sasl.mechanisms import SaslMechanism
    from kafkasec.security import KafkaSecurity
    from kafkasec.settings import Setting
    from kafkasec.store.base import DelegationTokenStore, ScramCredentialStore, StateStore

hookspec = pluggy.HookspecMarker("kafkasec")
hookimpl = pluggy.HookimplMarker("kafkasec")


@hookspec
def kafkasec_startup(security: KafkaSecurity) -> None:
    """Called once when a :class:`~kafkasec.KafkaSecurity` has been built, before any request.

    Read your settings from ``security.config`` and fail here (ValueError naming the setting)
    rather than on the first request. Keep per-instance state in
    ``security.plugin_state[<your name>]``. The return value is ignored.
    """


@hookspec
def kafkasec_shutdown(security: KafkaSecurity) -> None:
    """Called once from ``KafkaSecurity.close()``: flush and release what you hold. Ignored result."""


@hookspec(firstresult=True)
def kafkasec_state_store(security: KafkaSecurity, path: str | None) -> StateStore | None:
    """Open the security state for ``path``: ``kafkasec.state.url`` or ``kafkasec.state.path``
    (a file path, a URL such as ``postgresql://...``, or None / ":memory:" for memory).

    Return a store that keeps the contract of :class:`kafkasec.store.base.StateStore` (the
    security log, its snapshot, an exclusive ``write()``), or None for "not mine": the built-in
    store (memory, SQLite or PostgreSQL by location) answers last. Every node that opens the
    same state follows the same log.
    """


@hookspec(firstresult=True)
def kafkasec_scram_credential_store(security: KafkaSecurity) -> ScramCredentialStore | None:
    """Where SCRAM credentials live: KIP-554's operations write them, the SCRAM server reads them.

    Called once, after the state store opens (``security.writer`` exists). Return an object with
    ``scram_credential(user, mechanism)`` (a ScramCredential, or None when there is none),
    ``describe_scram_credentials(users)`` (a UserScramCredentialsDescription for each of
    ``users`` that has a credential; ``users`` None: every such user) and
    ``apply_scram_changes(upserts, deletions)`` (``(user, mechanism, credential)`` and
    ``(user, mechanism)`` tuples, in one transaction); or None for "not mine". The built-in
    answers last with a ScramCredentialCache: credentials in memory, fed by the security log,
    written through it. A plugin's store is outside the log: sharing it between nodes is the
    plugin's job. When nobody answers, the SCRAM operations raise ValueError. Close what you
    open in ``kafkasec_shutdown``.
    """


@hookspec(firstresult=True)
def kafkasec_delegation_token_store(security: KafkaSecurity) -> DelegationTokenStore | None:
    """Where delegation tokens live (their information, never their HMACs), when not in the
    security log.

    Called once, after the state store opens. Return an object with
    ``load_delegation_tokens()`` (a list of ``(TokenInformation, key_id)`` pairs) and
    ``apply_delegation_token_changes(upserts, removed_ids)`` (``(TokenInformation, key_id)``
    pairs to insert or replace and token ids to remove, in one transaction); or None for "not
    mine". Nothing built in answers: by default tokens are records of the security log, which
    every node follows. A plugin's store is outside the log: sharing it between nodes is the
    plugin's job. Close what you open in ``kafkasec_shutdown``.
    """


@hookspec(firstresult=True)
def kafkasec_build_principal(
    security: KafkaSecurity,
    context: PlaintextAuthenticationContext | SslAuthenticationContext | SaslAuthenticationContext,
) -> KafkaPrincipal | None:
    """Kafka's KafkaPrincipalBuilder: the principal of a connection that has authenticated.

    ``context`` is a PlaintextAuthenticationContext, SslAuthenticationContext or
    SaslAuthenticationContext (``kafkasec.principals.authentication``). Return a KafkaPrincipal, or None
    for "not mine"; the built-in DefaultPrincipalBuilder (Kafka's rules) answers last. As in
    Kafka, the facade marks the principal of a SCRAM delegation-token login
    ``token_authenticated`` after this hook, whichever plugin built it.
    """


@hookspec(firstresult=True)
def kafkasec_serialize_principal(security: KafkaSecurity, principal: KafkaPrincipal) -> bytes | None:
    """KIP-590's KafkaPrincipalSerde, writing: the bytes that carry ``principal`` in an envelope.

    Return bytes, or None for "not mine" (e.g. a principal of a class you do not handle); the
    built-in DefaultPrincipalSerde (Kafka's format) answers last.
    """


@hookspec(firstresult=True)
def kafkasec_deserialize_principal(security: KafkaSecurity, data: bytes) -> KafkaPrincipal | None:
    """KIP-590's KafkaPrincipalSerde, reading: the KafkaPrincipal that ``data`` (bytes) carries.

    Return a principal, or None for "not mine" (bytes of a format you do not write); raise
    PrincipalDeserializationError (97) for bytes of your format that are malformed. Kafka's
    format is read last.
    """


@hookspec(firstresult=True)
def kafkasec_authorize(
    security: KafkaSecurity, context: RequestContext, actions: Sequence[Action]
) -> list[AuthorizationDecision] | None:
    """Decide ``actions`` (a list of Action) for ``context`` (a RequestContext).

    Return a list with one :class:`~kafkasec.AuthorizationDecision` per action, in order, or
    None for "not mine": the next plugin is asked, and the standard authorizer answers last.
    To wrap the standard authorizer (e.g. to consult an external policy engine after it),
    use ``@hookimpl(wrapper=True)`` and ``decisions = yield``.
    """


@hookspec
def kafkasec_contribute_acls(security: KafkaSecurity) -> Iterable[AclBinding] | None:
    """ACLs this plugin contributes, as an iterable of :class:`~kafkasec.AclBinding` (or None).

    They are loaded into the index with the plugin's name as their source, so ``explain`` and
    audit records name the plugin. They are not written to the state store and are not removed
    by ``delete_acls``; ``KafkaSecurity.reload_contributed_acls()`` asks again.
    """


@hookspec
def kafkasec_expand_principal(
    security: KafkaSecurity, principal: KafkaPrincipal, context: RequestContext
) -> Iterable[KafkaPrincipal] | None:
    """Principals whose ACLs also apply to ``principal``, e.g. ``Group:eng`` for a member.

    Return an iterable of :class:`~kafkasec.KafkaPrincipal` (or None). Kafka has no such hook:
    ACLs for ``Group:eng`` then apply to ``User:alice`` as if they named her. Super users are
    still matched on the principal itself only. Called on every authorization: keep it cheap.
    ACL grids (docs/grids.md) call it once per principal, on the driver, with a context from
    ``0.0.0.0``: answer from the principal alone, or a grid cannot show your expansion.
    """


@hookspec
def kafkasec_audit(security: KafkaSecurity, context: RequestContext, decisions: Sequence[AuthorizationDecision]) -> None:
    """Observe decisions: ``decisions`` is the list of AuthorizationDecision for one request.

    Each carries the action (with ``log_if_allowed``/``log_if_denied``), the result, the rule
    that decided (with the ACL and its source) and the authorizer plugin. The result is ignored;
    an exception here propagates, since a failed audit must not pass silently.
    """


@hookspec
def kafkasec_api_handlers(security: KafkaSecurity) -> Mapping[ApiKey | int, Handler] | None:
    """Offer Kafka APIs that a node serves once a client has logged in: a mapping of API key
    (:class:`~kafkasec.protocol.api_keys.ApiKey` or its number) to a handler
    ``handler(security, context, body, version) -> response body`` (bodies are kio's
    dataclasses, see :mod:`kafkasec.protocol.wire`).

    Asked when an endpoint starts. Plugins are asked before the built-ins, and the first answer
    for a key wins, so a plugin can serve a new API or replace a built-in handler; two plugins
    serving one API is refused. A handler raises KafkaError for an error response (encoded as
    Kafka's ``ApiError.fromThrowable``). None or an empty mapping: nothing to offer.
    """


@hookspec
def kafkasec_sasl_mechanisms(security: KafkaSecurity) -> Iterable[SaslMechanism] | None:
    """SASL mechanisms your plugin serves: an iterable of
    :class:`kafkasec.sasl.mechanisms.SaslMechanism` (the name clients send in SaslHandshake and
    ``new_server(security, listener_name)``, which starts one exchange: an object keeping the
    :class:`kafkasec.sasl.mechanisms.SaslServer` protocol, e.g. a
    :class:`kafkasec.sasl.exchange.SaslExchange` subclass). Plugins are asked before the
    built-ins (SCRAM-SHA-256, SCRAM-SHA-512, PLAIN, OAUTHBEARER) and the first offer of a name wins; two
    plugins offering one name is refused. ``sasl.enabled.mechanisms`` picks what a listener
    serves. None: nothing to offer.
    """


@hookspec(firstresult=True)
def kafkasec_authenticate_plain(security: KafkaSecurity, username: str, password: str, listener_name: str) -> bool | None:
    """Whether ``password`` is ``username``'s for a SASL/PLAIN login on ``listener_name`` (Kafka's
    PlainServerCallbackHandler, or a ``sasl.server.callback.handler.class`` of yours).

    Return True or False, or None for "not mine"; the built-in answers last from the
    ``user_<name>`` options of ``listener.name.<listener>.plain.sasl.jaas.config``. Compare in
    constant time (``hmac.compare_digest``). An exception refuses the login with Kafka's
    "credentials for user could not be verified".
    """


@hookspec
def kafkasec_settings() -> Iterable[Setting] | None:
    """The settings your plugin reads: an iterable of :class:`kafkasec.settings.Setting` (name,
    kind, default, owner, meaning). Registered settings are checked when a KafkaSecurity is
    built (a value of the wrong kind is refused), listed by ``kafkasec config --describe``, and
    a misspelling of one is refused with a suggestion. Any key under ``kafkasec.`` that no
    plugin registers is refused, so a plugin that reads one must register it here.
    """
