"""KafkaSecurity: the one object a broker, proxy or gateway embeds.

A thin composition: it opens the state (through the store hooks), follows its log, and hands
each concern to a narrow service that the wire handlers and the command line use as well:
``authorization`` (every decision through the ``kafkasec_authorize`` hook, audited),
``acl_service``, ``scram_service``, ``token_service`` and ``principals``. Its own methods are
those services' methods, so that an embedder has one object to call.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Callable, Iterable, Mapping, Sequence

from kafkasec.acl import AclBinding, AclBindingFilter, AclOperation, ResourcePattern
from kafkasec.authorizer.acl_service import AclService
from kafkasec.authorizer.decision import AuthorizationDecision
from kafkasec.authorizer.index import StoredAcl
from kafkasec.authorizer.service import AuthorizationService
from kafkasec.authorizer.standard import AclCreateResult, AclDeleteResult, Grantee, StandardAuthorizer
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.plugins import PluginManager, make_plugin_manager
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.principals.service import PrincipalService
from kafkasec.sasl.mechanisms import SaslMechanisms, SaslServer
from kafkasec.scram.admin import AlterUserScramCredentialsResult, DescribeUserScramCredentialsResult
from kafkasec.scram.cache import ScramCredentialCache
from kafkasec.scram.credentials import (
    ScramCredential,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkasec.scram.server import DEFAULT_FAILED_AUTHENTICATION_DELAY_MS, ScramServer
from kafkasec.scram.service import ScramService
from kafkasec.settings import SettingsRegistry, parse_bool, parse_milliseconds
from kafkasec.store.base import DelegationTokenStore, ScramCredentialStore, StateStore, require_contract
from kafkasec.store.follower import StateFollower
from kafkasec.store.records import DelegationTokenRecord, RemoveDelegationTokenRecord
from kafkasec.store.writer import LocalWriter, StateWriter
from kafkasec.tokens.manager import DelegationTokenManager, wall_clock_ms
from kafkasec.tokens.model import DelegationToken
from kafkasec.tokens.service import TokenService
from kafkasec.tokens.sweeper import TokenExpirySweeper

SUPER_USERS = "super.users"
ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found"
STATE_PATH = "kafkasec.state.path"
STATE_URL = "kafkasec.state.url"
FAILED_AUTHENTICATION_DELAY_MS = "connection.failed.authentication.delay.ms"


class KafkaSecurity:
    """Kafka's security for one node: authorization, SCRAM and token logins, principals, forwarding.

    Build it with keyword arguments, or from a Kafka-style config with :meth:`from_config`.
    ``state_path`` is where the security state lives: a SQLite file, None or ":memory:" (in
    memory), or a URL (``postgresql://...``; see :func:`kafkasec.store.open_state_store`).
    ``config`` is kept whole in ``self.config`` for plugins to read their own settings.

    The state is a log of changes (docs/cluster.md): every write appends records through
    ``self.writer``, and ``self.follower`` applies the log, this node's writes and everyone
    else's, to the authorizer, the SCRAM credentials and the tokens. Several instances (in
    several processes, on several hosts) on one state agree on every change.
    """

    def __init__(
        self,
        *,
        super_users: str | Iterable[str | KafkaPrincipal] | None = (),
        allow_everyone_if_no_acl_found: bool = False,
        state_path: str | None = None,
        config: Mapping[str, object] | None = None,
        plugin_manager=None,
        plugins=(),
        clock: Callable[[], int] = wall_clock_ms,
    ):
        self.config = dict(config or {})
        self.failed_authentication_delay_ms = parse_milliseconds(
            self.config, FAILED_AUTHENTICATION_DELAY_MS, DEFAULT_FAILED_AUTHENTICATION_DELAY_MS
        )
        self.plugin_state: dict[str, object] = {}
        self._forwarded: Counter[str] = Counter()
        self._forwarded_lock = threading.Lock()
        self._instance_plugins: list[str] = []
        self.plugin_manager = plugin_manager or make_plugin_manager(plugins=plugins)
        self._sasl_mechanisms: SaslMechanisms | None = None
        if isinstance(self.plugin_manager, PluginManager):
            self.plugin_manager.add_change_listener(self._forget_sasl_mechanisms)
        self.settings = SettingsRegistry.from_plugins(self.plugin_manager)
        self.settings.check(self.config)
        hook = self.plugin_manager.hook
        self._hook = hook
        self.store = hook.kafkasec_state_store(security=self, path=state_path)
        if self.store is None:
            raise ValueError(f"no plugin opened a state store for {state_path!r}")
        require_contract(self.store, StateStore, "kafkasec_state_store")
        self._closed = False
        self._token_sweeper: TokenExpirySweeper | None = None
        self.follower: StateFollower | None = None
        try:
            self.writer = StateWriter(self.store, catch_up=lambda: self._started_follower().catch_up())
            self.authorizer = StandardAuthorizer(
                super_users, allow_everyone_if_no_acl_found, initial_load_complete=False
            )
            self.scram_credential_store = hook.kafkasec_scram_credential_store(security=self)
            if self.scram_credential_store is not None:
                require_contract(self.scram_credential_store, ScramCredentialStore, "kafkasec_scram_credential_store")
            token_store = hook.kafkasec_delegation_token_store(security=self)
            if token_store is not None:
                require_contract(token_store, DelegationTokenStore, "kafkasec_delegation_token_store")
            self.delegation_tokens = DelegationTokenManager.from_config(
                self.config, clock=clock, writer=self.writer if token_store is None else self._plugin_token_writer(token_store)
            )
            if token_store is not None:
                self.delegation_tokens.load_token_snapshot(
                    {info.token_id: (info, key) for info, key in token_store.load_delegation_tokens()}
                )
            self.authorization = AuthorizationService(self, self.plugin_manager, self.authorizer)
            self.acl_service = AclService(self, hook, self.authorizer, self.writer)
            self.principals = PrincipalService(self, hook)
            self.scram_service = ScramService(
                self.authorization,
                self.scram_credential_store,
                self.writer,
                self.delegation_tokens.token_login,
                failed_authentication_delay_ms=self.failed_authentication_delay_ms,
            )
            self.token_service = TokenService(self.authorization, self.delegation_tokens)
            credentials = self.scram_credential_store
            self.follower = StateFollower(
                self.store,
                self.authorizer,
                credentials if isinstance(credentials, ScramCredentialCache) else None,
                self.delegation_tokens if token_store is None else None,
            )
            self.follower.catch_up()
            self.follower.start()
            hook.kafkasec_startup(security=self)
            self.plugins_changed()
            self.reload_contributed_acls()
            if self.delegation_tokens.enabled:
                self._token_sweeper = TokenExpirySweeper(self.delegation_tokens).start()
        except BaseException:
            # Whatever started must stop: the store and anything a plugin opened at start-up.
            self.close()
            raise

    @classmethod
    def from_config(cls, config: Mapping[str, object], **kwargs) -> KafkaSecurity:
        """Build from Kafka settings: ``super.users`` ("User:a;User:b"),
        ``allow.everyone.if.no.acl.found`` ("true"/"false"), and where the state is:
        ``kafkasec.state.url`` (e.g. ``postgresql://...``), else ``kafkasec.state.path``."""
        location = config.get(STATE_URL) or config.get(STATE_PATH)
        return cls(
            super_users=str(config.get(SUPER_USERS, "")),
            allow_everyone_if_no_acl_found=parse_bool(
                ALLOW_EVERYONE_IF_NO_ACL_FOUND, config.get(ALLOW_EVERYONE_IF_NO_ACL_FOUND, False)
            ),
            state_path=None if location is None else str(location),
            config=config,
            **kwargs,
        )

    # ------------------------------------------------------------------ authorization
    # AuthorizationService (kafkasec.authorizer.service) answers; the methods stay here so that
    # an embedder has one object to call.

    def decide(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationDecision]:
        """Decisions with provenance for ``actions``; each batch reaches the audit hook."""
        self._check_open()
        return self.authorization.decide(context, actions)

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
        """One ALLOWED/DENIED per action, as Kafka's ``Authorizer.authorize``."""
        if self._closed:  # _check_open(), inlined: this is the hottest call of a broker
            self._check_open()
        return self.authorization.authorize(context, actions)

    def explain(self, context: RequestContext, action: Action) -> AuthorizationDecision:
        """The decision for one action, with the plugin and the ACL or default rule behind it."""
        return self.decide(context, [action])[0]

    def is_allowed(self, context: RequestContext, operation, resource_pattern: ResourcePattern) -> bool:
        """Whether ``authorize`` allows ``operation`` on ``resource_pattern`` (one action, audited)."""
        self._check_open()
        return self.authorization.is_allowed(context, operation, resource_pattern)

    def authorized_operations(self, context: RequestContext, resource_pattern: ResourcePattern) -> frozenset[AclOperation]:
        """KIP-430, as a Kafka broker computes it: authorize each supported operation without
        audit logging (through the plugins, so a custom authorizer is honoured)."""
        if self._closed:
            self._check_open()
        return self.authorization.authorized_operations(context, resource_pattern)

    def authorized_operations_many(
        self, context: RequestContext, resource_patterns: Sequence[ResourcePattern]
    ) -> list[frozenset[AclOperation]]:
        """:meth:`authorized_operations` of each pattern, asked of the authorizer in one batch
        (a Metadata answer with operations asks it for every topic)."""
        self._check_open()
        return self.authorization.authorized_operations_many(context, resource_patterns)

    def authorize_by_resource_type(self, context: RequestContext, operation, resource_type) -> AuthorizationResult:
        """Kafka's ``authorizeByResourceType``, answered from the ACL index."""
        return self.authorization.authorize_by_resource_type(context, operation, resource_type)

    def who_can(self, operation, resource_pattern: ResourcePattern) -> tuple[Grantee, ...]:
        return self.authorization.who_can(operation, resource_pattern)

    def plugins_changed(self) -> None:
        """Look again at which hooks have implementations; call it after registering or
        unregistering a plugin on a running instance. Hooks nobody implements cost nothing
        per request: the facade skips principal expansion and audit when no plugin has them."""
        self.authorization.plugins_changed()
        self._forget_sasl_mechanisms()

    def register_plugin(self, plugin, name: str) -> None:
        """Register ``plugin`` (an object with ``@hookimpl`` methods) for this instance's life.

        For plugins that turn a feature on from ``kafkasec_startup`` only when configured, so
        that an installed but unconfigured plugin costs nothing per request. It is unregistered
        on :meth:`close`. Its hooks still see every call on a plugin manager shared by several
        instances, so they should compare ``security`` with the instance they serve.
        """
        registered = f"{name}:{id(self)}"
        self.plugin_manager.register(plugin, name=registered)
        self._instance_plugins.append(registered)
        self.plugins_changed()

    # ------------------------------------------------------------------ SASL

    def sasl_mechanisms(self) -> SaslMechanisms:
        """The SASL mechanisms the plugins serve (``kafkasec_sasl_mechanisms``), by name: asked
        of the plugins once and kept until they change (each login asks for this table), or
        asked every time when the plugin manager does not say when they change."""
        table = self._sasl_mechanisms
        if table is None:
            table = SaslMechanisms.collect(self)
            if isinstance(self.plugin_manager, PluginManager):
                self._sasl_mechanisms = table
        return table

    def _forget_sasl_mechanisms(self) -> None:
        self._sasl_mechanisms = None

    def sasl_server(self, mechanism: str, *, listener_name: str = "SASL_PLAINTEXT") -> SaslServer:
        """A new server-side exchange of ``mechanism`` for a connection on ``listener_name``;
        ValueError for a mechanism no plugin serves."""
        self._check_open()
        return self.sasl_mechanisms().server(self, mechanism, listener_name)

    # ------------------------------------------------------------------ principals (PrincipalService)

    def build_principal(self, context) -> KafkaPrincipal:
        """The principal of an authenticated connection (``kafkasec_build_principal``), from an
        authentication context of ``kafkasec.principals.authentication``; a token login's
        principal is marked ``token_authenticated``, as Kafka's."""
        return self.principals.build_principal(context)

    def serialize_principal(self, principal: KafkaPrincipal) -> bytes:
        """The bytes that carry ``principal`` in a KIP-590 envelope (through the serde hooks)."""
        return self.principals.serialize_principal(principal)

    def deserialize_principal(self, data: bytes) -> KafkaPrincipal:
        """The principal in envelope bytes; anything unreadable is PRINCIPAL_DESERIALIZATION_FAILURE (97)."""
        return self.principals.deserialize_principal(data)

    # ------------------------------------------------------------------ forwarding (KIP-590)

    def record_forwarded(self, client_id: str) -> None:
        """Count one request forwarded to the controller for ``client_id``."""
        with self._forwarded_lock:
            self._forwarded[client_id] += 1

    def forwarded_requests(self) -> dict[str, int]:
        """Requests this node forwarded to the controller, per client id (Kafka's
        NumRequestsForwardingToControllerPerSec, as a running count)."""
        with self._forwarded_lock:
            return dict(self._forwarded)

    # ------------------------------------------------------------------ ACL management (AclService)

    def create_acls(self, bindings: Iterable[AclBinding]) -> list[AclCreateResult]:
        """Create ACLs cluster-wide: planned against the caught-up state, appended to the log,
        applied here before this returns (and on every other node as it follows)."""
        self._check_open()
        return self.acl_service.create_acls(bindings)

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[AclDeleteResult]:
        """Delete the ACLs each filter matches, cluster-wide (as :meth:`create_acls`)."""
        self._check_open()
        return self.acl_service.delete_acls(filters)

    def acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        return self.acl_service.acls(acl_filter)

    def stored_acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[StoredAcl]:
        """Like :meth:`acls`, with each ACL's id and source (``store`` or a plugin's name)."""
        return self.acl_service.stored_acls(acl_filter)

    def reload_contributed_acls(self) -> None:
        """Ask every ``kafkasec_contribute_acls`` plugin again and swap in what each returns."""
        self.acl_service.reload_contributed_acls()

    # ------------------------------------------------------------------ SCRAM credentials (ScramService, KIP-554)

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, *, context: RequestContext | None = None
    ) -> DescribeUserScramCredentialsResult:
        """The SCRAM mechanisms and iteration counts of ``users`` (None or empty: every user with
        a credential), never a secret. With ``context``, the caller needs DESCRIBE on the cluster."""
        self._check_open()
        return self.scram_service.describe_user_scram_credentials(users, context=context)

    def alter_user_scram_credentials(
        self,
        alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion],
        *,
        context: RequestContext | None = None,
    ) -> list[AlterUserScramCredentialsResult]:
        """Upsert and delete credentials; one result per user, all of a user's changes or none.
        With ``context``, the caller needs ALTER on the cluster."""
        self._check_open()
        return self.scram_service.alter_user_scram_credentials(alterations, context=context)

    def scram_credential(self, user: str, mechanism: ScramMechanism | str | int) -> ScramCredential | None:
        """The credential a SCRAM login of ``user`` is checked against, or None."""
        self._check_open()
        return self.scram_service.scram_credential(user, mechanism)

    def scram_server(self, mechanism: ScramMechanism | str | int, **kwargs) -> ScramServer:
        """A :class:`ScramServer` for one login, checked against this node's credentials.

        A refused login's error carries ``connection.failed.authentication.delay.ms`` (default
        100) as ``delay_ms``. Once it completes, ``security.build_principal(
        server.authentication_context(client_address))`` is the client's principal. ``kwargs``
        go to ScramServer (``nonce_factory`` for tests, ``token_callback`` for token logins).
        """
        self._check_open()
        return self.scram_service.scram_server(mechanism, **kwargs)

    # ------------------------------------------------------------------ delegation tokens (TokenService, KIP-48, KIP-373)

    def create_delegation_token(
        self,
        context: RequestContext,
        *,
        owner: KafkaPrincipal | str | None = None,
        renewers: Iterable[KafkaPrincipal | str] = (),
        max_lifetime_ms: int = -1,
    ) -> DelegationToken:
        """A token for ``owner`` (default: the caller; another owner needs CREATE_TOKENS on it)."""
        self._check_open()
        return self.token_service.create_delegation_token(
            context, owner=owner, renewers=renewers, max_lifetime_ms=max_lifetime_ms
        )

    def renew_delegation_token(self, context: RequestContext, hmac: bytes, renew_period_ms: int = -1) -> int:
        """Renew the token with ``hmac`` (owner or renewer only); the new expiry timestamp."""
        self._check_open()
        return self.token_service.renew_delegation_token(context, hmac, renew_period_ms)

    def expire_delegation_token(self, context: RequestContext, hmac: bytes, expiry_period_ms: int = -1) -> int:
        """Expire the token with ``hmac`` after ``expiry_period_ms`` (< 0: now, and remove it)."""
        self._check_open()
        return self.token_service.expire_delegation_token(context, hmac, expiry_period_ms)

    def describe_delegation_tokens(
        self, context: RequestContext, owners: Iterable[KafkaPrincipal | str] | None = None
    ) -> list[DelegationToken]:
        """The tokens of ``owners`` (None: anyone's) that the caller may see, with their HMACs."""
        self._check_open()
        return self.token_service.describe_delegation_tokens(context, owners)

    # ------------------------------------------------------------------ the security log

    def _plugin_token_writer(self, token_store) -> LocalWriter:
        """Tokens kept by a plugin's store: written there, then applied here (not logged)."""

        def apply(records) -> None:
            upserts = [(r.info, r.key_id) for r in records if isinstance(r, DelegationTokenRecord)]
            removed = [r.token_id for r in records if isinstance(r, RemoveDelegationTokenRecord)]
            token_store.apply_delegation_token_changes(upserts, removed)
            self.delegation_tokens.apply_in_order(records)

        return LocalWriter(apply)

    def writing(self):
        """One exclusive write to the security state (a context manager): the changes made
        through this instance inside it are committed together, against a caught-up state."""
        self._check_open()
        return self.writer.writing()

    @property
    def ready(self) -> bool:
        """Whether this node has loaded the state and still follows its log."""
        return self.follower is not None and self.follower.ready

    @property
    def applied_offset(self) -> int:
        """The offset of the last security-log record applied on this node."""
        return self._started_follower().applied_offset

    @property
    def lag(self) -> int:
        """Records committed to the log (as last seen) but not applied on this node yet."""
        return self._started_follower().lag

    def _started_follower(self) -> StateFollower:
        """The follower, which exists once start-up has built it; the plugins that start-up
        calls before that (the stores') can reach this instance while it has none."""
        if self.follower is None:
            raise RuntimeError("this KafkaSecurity is still starting: it follows no security log yet")
        return self.follower

    # ------------------------------------------------------------------ lifecycle

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("this KafkaSecurity is closed: its store and plugins have shut down")

    def close(self) -> None:
        """Shut the plugins down (``kafkasec_shutdown``) and close the store; idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._token_sweeper is not None:
            self._token_sweeper.stop()
        if self.follower is not None:
            self.follower.stop()
        try:
            self._hook.kafkasec_shutdown(security=self)
        finally:
            for name in self._instance_plugins:
                self.plugin_manager.unregister(name=name)
            self.store.close()  # also ends the follower's wait for a change
            if self.follower is not None:
                self.follower.join()

    def __enter__(self) -> KafkaSecurity:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


__all__ = ["KafkaSecurity", "parse_bool", "parse_milliseconds"]
