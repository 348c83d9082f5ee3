"""An admin client for the security APIs of a running cluster: ACLs, SCRAM credentials,
delegation tokens, and the topics and groups an audit looks at.

It speaks the Kafka protocol to any broker (``kafkasec serve`` or Apache Kafka), logged in as
:class:`~kafkasec.client.settings.ClientSettings` says, and answers with the value types the
state-file services use, so that a caller (the ``kafkasec`` command) prints both the same::

    with ClusterAdmin.connect(ClientSettings.from_properties(properties, "localhost:9092")) as admin:
        admin.create_acls([binding])
        print(admin.acls(AclBindingFilter.ANY))

Calls are synchronous (the command line is); each runs on the admin's own event loop. A refusal
of the whole request raises its KafkaError; per-item refusals come back in the results, as
:class:`kafkasec.KafkaSecurity` returns them.
"""

from __future__ import annotations

import asyncio
import datetime
from typing import Iterable, Sequence

from attrs import frozen

from kafkasec.acl import AccessControlEntry, AclBinding, AclBindingFilter, ResourcePattern
from kafkasec.authorizer.standard import AclCreateResult
from kafkasec.client.connection import KafkaConnection
from kafkasec.client.settings import ClientSettings
from kafkasec.errors import KafkaError, UnsupportedVersionError
from kafkasec.principals.principal import KafkaPrincipal
from kafkasec.protocol import wire
from kafkasec.protocol.acl_apis import binding_fields, filter_fields
from kafkasec.protocol.api_keys import ApiKey
from kafkasec.scram.admin import (
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsResult,
    UserScramCredentialsResult,
)
from kafkasec.scram.credentials import (
    ScramCredentialInfo,
    ScramFormatter,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)
from kafkasec.tokens.model import DelegationToken, TokenInformation

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MILLISECOND = datetime.timedelta(milliseconds=1)


@frozen
class AclDeletion:
    """What one filter of :meth:`ClusterAdmin.delete_acls` deleted, or why it could not."""

    filter: AclBindingFilter
    bindings: tuple[AclBinding, ...] = ()
    error: KafkaError | None = None


def _error_of(code: int, message: str | None = None) -> KafkaError | None:
    return KafkaError.for_code(code, message or None) if code else None


def _raise_for(code: int, message: str | None = None, what: str = "") -> None:
    error = _error_of(code, message or what)
    if error is not None:
        raise error


def _milliseconds(value) -> int:
    """A timestamp as the decoded response holds it (a datetime, or int64 milliseconds)."""
    if isinstance(value, datetime.datetime):
        return (value - _EPOCH) // _MILLISECOND
    return int(value)


def _binding(resource, acl) -> AclBinding:
    """An ACL read off the wire: its resource's fields and its entry's (one item or two)."""
    return AclBinding(
        ResourcePattern(resource.resource_type, resource.resource_name, resource.pattern_type),
        AccessControlEntry(acl.principal, acl.host, acl.operation, acl.permission_type),
    )


def _token(answer, renewers: Sequence[KafkaPrincipal]) -> DelegationToken:
    """A token as CreateDelegationToken's response or a DescribeDelegationToken item carries it
    (the requester's fields came with v3; before, the owner asked)."""
    owner = KafkaPrincipal(answer.principal_type, answer.principal_name)
    requester = KafkaPrincipal(
        getattr(answer, "token_requester_principal_type", None) or owner.principal_type,
        getattr(answer, "token_requester_principal_name", None) or owner.name,
    )
    info = TokenInformation(
        answer.token_id, owner, requester, tuple(renewers),
        _milliseconds(answer.issue_timestamp), _milliseconds(answer.expiry_timestamp), _milliseconds(answer.max_timestamp),
    )
    return DelegationToken(info, bytes(answer.hmac))


def _period(milliseconds: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=milliseconds)


class ClusterAdmin:
    """A logged-in connection to one broker of a cluster; build it with :meth:`connect`."""

    def __init__(self, settings: ClientSettings, loop: asyncio.AbstractEventLoop, connection: KafkaConnection,
                 address: tuple[str, int]):
        self.settings = settings
        self._loop = loop
        self._connection = connection
        self.address = address
        """The (host, port) of the broker connected to."""

    @classmethod
    def connect(cls, settings: ClientSettings) -> ClusterAdmin:
        """Connect to the first bootstrap server that answers, log in, and learn its API versions.

        ConnectionError when none answers (naming each and why); a refused login raises
        SaslAuthenticationError, which is not retried on another server.
        """
        loop = asyncio.new_event_loop()
        try:
            problems = []
            for address in settings.bootstrap_servers:
                try:
                    connection = loop.run_until_complete(_open(settings, address))
                except (OSError, asyncio.TimeoutError) as error:
                    problems.append(f"{address[0]}:{address[1]} ({error or type(error).__name__})")
                    continue
                return cls(settings, loop, connection, address)
            raise ConnectionError(f"no bootstrap server answered: {', '.join(problems)}")
        except BaseException:
            loop.close()
            raise

    def __enter__(self) -> ClusterAdmin:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._connection.close())
            self._loop.close()

    def _send(self, api_key: int, **values):
        return self._run(self._connection.send(api_key, **values))

    def _run(self, coroutine):
        """Run one exchange on the admin's loop, within request.timeout.ms."""
        return self._loop.run_until_complete(_within(self.settings.request_timeout_ms, coroutine))

    # ---------------------------------------------------------------- ACLs

    def acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        """The ACLs the filter matches (DescribeAcls)."""
        response = self._send(ApiKey.DESCRIBE_ACLS, **filter_fields(acl_filter))
        _raise_for(int(response.error_code), response.error_message, "DescribeAcls was refused")
        return [_binding(resource, acl) for resource in response.resources for acl in resource.acls]

    def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclCreateResult]:
        """Create each binding (CreateAcls); one result per binding, with its error if refused."""
        if not bindings:
            return []
        creation_type = wire.item_type(self._connection.request_schema(ApiKey.CREATE_ACLS), "creations")
        creations = tuple(
            wire.build(creation_type, **binding_fields(binding, pattern_type_field="resource_pattern_type"))
            for binding in bindings
        )
        response = self._send(ApiKey.CREATE_ACLS, creations=creations)
        return [
            AclCreateResult(binding, error=_error_of(int(result.error_code), result.error_message))
            for binding, result in zip(bindings, response.results)
        ]

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeletion]:
        """Delete what each filter matches (DeleteAcls); one result per filter."""
        if not filters:
            return []
        filter_type = wire.item_type(self._connection.request_schema(ApiKey.DELETE_ACLS), "filters")
        wire_filters = tuple(wire.build(filter_type, **filter_fields(acl_filter)) for acl_filter in filters)
        response = self._send(ApiKey.DELETE_ACLS, filters=wire_filters)
        deletions = []
        for acl_filter, result in zip(filters, response.filter_results):
            bindings = tuple(_binding(acl, acl) for acl in result.matching_acls)
            deletions.append(AclDeletion(acl_filter, bindings, _error_of(int(result.error_code), result.error_message)))
        return deletions

    # ---------------------------------------------------------------- SCRAM credentials (KIP-554)

    def describe_user_scram_credentials(self, users: Iterable[str] | None = None) -> DescribeUserScramCredentialsResult:
        """Each user's mechanisms and iterations (every user's when ``users`` is empty or None)."""
        names = list(users or ())
        request_type = self._connection.request_schema(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
        user_type = wire.item_type(request_type, "users")
        response = self._send(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            users=tuple(wire.build(user_type, name=name) for name in names) if names else None,
        )
        error = _error_of(int(response.error_code), response.error_message)
        if error is not None:
            return DescribeUserScramCredentialsResult(error, ())
        results = []
        for result in response.results:
            result_error = _error_of(int(result.error_code), result.error_message)
            description = None
            if result_error is None:
                infos = [ScramCredentialInfo(ScramMechanism(int(info.mechanism)), int(info.iterations))
                         for info in result.credential_infos]
                description = UserScramCredentialsDescription(result.user, infos)
            results.append(UserScramCredentialsResult(result.user, description, result_error))
        return DescribeUserScramCredentialsResult(None, results)

    def alter_user_scram_credentials(
        self,
        deletions: Sequence[UserScramCredentialDeletion] = (),
        upsertions: Sequence[UserScramCredentialUpsertion] = (),
    ) -> list[AlterUserScramCredentialsResult]:
        """One AlterUserScramCredentials request; the password of each upsertion is salted here,
        as Kafka's admin client does, so that only the salted password travels."""
        request_type = self._connection.request_schema(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)
        deletion_type, upsertion_type = wire.item_type(request_type, "deletions"), wire.item_type(request_type, "upsertions")
        wire_upsertions = []
        for upsertion in upsertions:
            salted = upsertion.salted_password
            if salted is None:
                assert upsertion.password is not None  # an upsertion has one or the other
                formatter = ScramFormatter(upsertion.info.mechanism)
                salted = formatter.salted_password(upsertion.password, upsertion.salt, upsertion.info.iterations)
            wire_upsertions.append(wire.build(
                upsertion_type, name=upsertion.user, mechanism=int(upsertion.info.mechanism),
                iterations=upsertion.info.iterations, salt=upsertion.salt, salted_password=salted,
            ))
        response = self._send(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            deletions=tuple(wire.build(deletion_type, name=d.user, mechanism=int(d.mechanism)) for d in deletions),
            upsertions=tuple(wire_upsertions),
        )
        return [
            AlterUserScramCredentialsResult(result.user, _error_of(int(result.error_code), result.error_message))
            for result in response.results
        ]

    # ---------------------------------------------------------------- delegation tokens

    def create_delegation_token(
        self, owner: KafkaPrincipal | None = None, renewers: Sequence[KafkaPrincipal] = (), max_lifetime_ms: int = -1
    ) -> DelegationToken:
        """A new token for ``owner`` (None: the logged-in principal, as Kafka's tool does)."""
        request_type = self._connection.request_schema(ApiKey.CREATE_DELEGATION_TOKEN)
        if owner is not None and not wire.has_field(request_type, "owner_principal_name"):
            raise UnsupportedVersionError("this broker cannot create tokens for another owner (CreateDelegationToken v3)")
        renewer_type = wire.item_type(request_type, "renewers")
        owner_fields = {} if owner is None else {"owner_principal_type": owner.principal_type, "owner_principal_name": owner.name}
        response = self._send(
            ApiKey.CREATE_DELEGATION_TOKEN,
            renewers=tuple(wire.build(renewer_type, principal_type=r.principal_type, principal_name=r.name) for r in renewers),
            max_lifetime=_period(max_lifetime_ms),
            **owner_fields,
        )
        _raise_for(int(response.error_code), what="CreateDelegationToken was refused")
        return _token(response, renewers)  # the response does not repeat them

    def renew_delegation_token(self, hmac: bytes, renew_period_ms: int = -1) -> int:
        """Renew the token; its new expiry timestamp (ms)."""
        response = self._send(ApiKey.RENEW_DELEGATION_TOKEN, hmac=hmac, renew_period=_period(renew_period_ms))
        _raise_for(int(response.error_code), what="RenewDelegationToken was refused")
        return _milliseconds(response.expiry_timestamp)

    def expire_delegation_token(self, hmac: bytes, expiry_time_period_ms: int = -1) -> int:
        """Set the token to expire after the period (-1: now, and it is removed); the new expiry (ms)."""
        response = self._send(ApiKey.EXPIRE_DELEGATION_TOKEN, hmac=hmac, expiry_time_period=_period(expiry_time_period_ms))
        _raise_for(int(response.error_code), what="ExpireDelegationToken was refused")
        return _milliseconds(response.expiry_timestamp)

    def describe_delegation_tokens(self, owners: Sequence[KafkaPrincipal] | None = None) -> list[DelegationToken]:
        """The tokens of ``owners`` (None or empty: every token) that the login may see."""
        request_type = self._connection.request_schema(ApiKey.DESCRIBE_DELEGATION_TOKEN)
        owner_type = wire.item_type(request_type, "owners")
        wire_owners = (
            tuple(wire.build(owner_type, principal_type=o.principal_type, principal_name=o.name) for o in owners)
            if owners else None
        )
        response = self._send(ApiKey.DESCRIBE_DELEGATION_TOKEN, owners=wire_owners)
        _raise_for(int(response.error_code), what="DescribeDelegationToken was refused")
        return [
            _token(token, [KafkaPrincipal(r.principal_type, r.principal_name) for r in token.renewers])
            for token in response.tokens
        ]

    # ---------------------------------------------------------------- what the cluster holds

    def topics(self) -> list[str]:
        """Every topic the login may describe (Metadata for all topics), sorted."""
        response = self._send(ApiKey.METADATA, topics=None, allow_auto_topic_creation=False)
        return sorted(topic.name for topic in response.topics if int(topic.error_code) == 0 and topic.name)

    def groups(self) -> list[str]:
        """Every group the login may describe, from every broker (each lists those it coordinates)."""
        # An empty topic list: the brokers alone, not every topic's metadata.
        response = self._send(ApiKey.METADATA, topics=(), allow_auto_topic_creation=False)
        brokers = [(broker.host, int(broker.port)) for broker in response.brokers]
        names: set[str] = set()
        names.update(self._run(_list_groups(self._connection)))
        # A single broker coordinates every group; otherwise each broker is asked in turn.
        for address in brokers if len(brokers) > 1 else ():
            if address == self.address:
                continue
            names.update(self._run(_groups_of_broker(self.settings, address)))
        return sorted(names)


async def _within(timeout_ms: int, coroutine):
    try:
        return await asyncio.wait_for(coroutine, timeout_ms / 1000)
    except asyncio.TimeoutError:
        raise TimeoutError(f"the server did not answer within request.timeout.ms ({timeout_ms} ms)") from None


async def _open(settings: ClientSettings, address: tuple[str, int]) -> KafkaConnection:
    connection = await KafkaConnection.open(
        *address, client_id=settings.client_id, timeout=settings.connection_setup_timeout_ms / 1000,
        ssl_context=settings.ssl_context,
    )
    try:
        await _within(settings.request_timeout_ms, connection.negotiate())
        if settings.login is not None:
            await _within(settings.request_timeout_ms, connection.authenticate(settings.login))
    except BaseException:
        await connection.close()
        raise
    return connection


async def _list_groups(connection: KafkaConnection) -> list[str]:
    response = await connection.send(ApiKey.LIST_GROUPS)
    _raise_for(int(response.error_code), what="ListGroups was refused")
    return [group.group_id for group in response.groups]


async def _groups_of_broker(settings: ClientSettings, address: tuple[str, int]) -> list[str]:
    connection = await _open(settings, address)
    try:
        return await _list_groups(connection)
    finally:
        await connection.close()
