"""KIP-554's DescribeUserScramCredentials and AlterUserScramCredentials, as a KRaft cluster answers.

Describing is Kafka's ScramImage.describe (a broker answers from its metadata image); altering is
ScramControlManager.alterCredentials (the controller): the checks, their order, their messages
and their error codes are Kafka's. Authorization, when a request context is given, is Kafka's
too: DESCRIBE on the cluster to describe, ALTER on the cluster to alter, else
CLUSTER_AUTHORIZATION_FAILED (31) as Kafka's ``getErrorResponse`` spreads it.

The facade (:class:`~kafkasec.KafkaSecurity`), the wire handlers (:mod:`kafkasec.protocol.scram_apis`)
and the command line call these functions; the credentials live behind the
``kafkasec_scram_credential_store`` hook.
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

from attrs import field, frozen, validators

from kafkasec.acl import AclOperation, ResourcePattern
from kafkasec.context import RequestContext
from kafkasec.errors import (
    ClusterAuthorizationFailedError,
    DuplicateResourceError,
    KafkaError,
    KafkaErrorCode,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnknownServerError,
    UnsupportedSaslMechanismError,
)
from kafkasec.scram.credentials import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialsDescription,
    UserScramCredentialUpsertion,
)

# Kafka's messages, word for word (ScramControlManager, ScramImage, KafkaAdminClient).
ALTERED_TWICE = "A user credential cannot be altered twice in the same request"
EMPTY_USERNAME = "Username must not be empty"
EMPTY_PASSWORD = "Password must not be empty"
UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"
TOO_FEW_ITERATIONS = "Too few iterations"
TOO_MANY_ITERATIONS = "Too many iterations"
DELETE_MISSING = "Attempt to delete a user credential that does not exist"
DESCRIBE_DUPLICATE_USER = "Cannot describe SCRAM credentials for the same user twice in a single request: "
DESCRIBE_MISSING_USER = "Attempt to describe a user credential that does not exist: "

_error = validators.optional(validators.instance_of(KafkaError))


@frozen
class UserScramCredentialsResult:
    """One user of a describe: its description, or the error that kept it from being described."""

    user: str = field(validator=validators.instance_of(str))
    description: UserScramCredentialsDescription | None = field(
        default=None, validator=validators.optional(validators.instance_of(UserScramCredentialsDescription))
    )
    error: KafkaError | None = field(default=None, validator=_error)


@frozen
class DescribeUserScramCredentialsResult:
    """A DescribeUserScramCredentials answer: a top-level error, and one result per user.

    The top-level error is set only when the caller may not describe (CLUSTER_AUTHORIZATION_FAILED);
    a user that does not exist is a result with RESOURCE_NOT_FOUND (91), a user named twice one
    with DUPLICATE_RESOURCE (92). Read it as Kafka's admin client does, with :meth:`users`,
    :meth:`description` and :meth:`all`, which raise the errors.
    """

    error: KafkaError | None = field(validator=_error)
    results: tuple[UserScramCredentialsResult, ...] = field(converter=tuple)

    def _raise_top_level(self) -> None:
        if self.error is not None:
            raise self.error

    def users(self) -> list[str]:
        """The users that have a credential, including those that could not be described (named
        twice); not those that do not exist."""
        self._raise_top_level()
        return [r.user for r in self.results if not _is_not_found(r.error)]

    def description(self, user: str) -> UserScramCredentialsDescription:
        """``user``'s description; its error (RESOURCE_NOT_FOUND if it was not asked for) otherwise."""
        self._raise_top_level()
        for result in self.results:
            if result.user == user:
                if result.error is not None:
                    raise result.error
                return result.description
        raise ResourceNotFoundError(f"No such user: {user}")

    def all(self) -> dict[str, UserScramCredentialsDescription]:
        """Every described user's description; the first error other than RESOURCE_NOT_FOUND is raised."""
        self._raise_top_level()
        for result in self.results:
            if result.error is not None and not _is_not_found(result.error):
                raise result.error
        return {r.user: r.description for r in self.results if r.error is None}


def _is_not_found(error: KafkaError | None) -> bool:
    return error is not None and error.error_code is KafkaErrorCode.RESOURCE_NOT_FOUND


@frozen
class AlterUserScramCredentialsResult:
    """One user of an alteration: ``error`` is None when all its changes were made."""

    user: str = field(validator=validators.instance_of(str))
    error: KafkaError | None = field(default=None, validator=_error)


@frozen
class AlterationPlan:
    """What the controller would do with a request: each user's result, and the changes of the
    users that succeed, not yet written."""

    results: tuple[AlterUserScramCredentialsResult, ...] = field(converter=tuple)
    upserts: tuple[tuple[str, ScramMechanism, ScramCredential], ...] = field(converter=tuple)
    deletions: tuple[tuple[str, ScramMechanism], ...] = field(converter=tuple)


def credential_store(security):
    """The SCRAM credential store of ``security``; ValueError when no plugin provides one."""
    store = security.scram_credential_store
    if store is None:
        raise ValueError(
            "no SCRAM credential store: the state store keeps no credentials and no plugin "
            "answers kafkasec_scram_credential_store"
        )
    return store


# ---------------------------------------------------------------------------------------- describe


def describe_user_scram_credentials(
    security, users: Iterable[str] | None = None, *, context: RequestContext | None = None
) -> DescribeUserScramCredentialsResult:
    """Kafka's answer to DescribeUserScramCredentials for ``users`` (None or empty: every user
    with a credential, sorted by name); never a secret."""
    names = _user_names(users)
    if context is not None and not security.is_allowed(context, AclOperation.DESCRIBE, ResourcePattern.cluster()):
        error = ClusterAuthorizationFailedError()
        # DescribeUserScramCredentialsRequest.getErrorResponse repeats the error for each name.
        return DescribeUserScramCredentialsResult(error, [UserScramCredentialsResult(n, error=error) for n in names])
    store = credential_store(security)
    if not names:
        described = store.describe_scram_credentials(None)
        return DescribeUserScramCredentialsResult(None, [UserScramCredentialsResult(d.user, d) for d in described])
    # One result per distinct name, in the order of first mention (Kafka's is a hash map's).
    counts = Counter(names)
    found = {d.user: d for d in store.describe_scram_credentials([n for n, c in counts.items() if c == 1])}
    results = []
    for name, count in counts.items():
        if count > 1:
            results.append(UserScramCredentialsResult(name, error=DuplicateResourceError(DESCRIBE_DUPLICATE_USER + name)))
        elif name in found:
            results.append(UserScramCredentialsResult(name, found[name]))
        else:
            results.append(UserScramCredentialsResult(name, error=ResourceNotFoundError(DESCRIBE_MISSING_USER + name)))
    return DescribeUserScramCredentialsResult(None, results)


def _user_names(users) -> list[str]:
    if users is None:
        return []
    if isinstance(users, (str, bytes)):
        raise TypeError(f"users must be a list of user names, not the single name {users!r}")
    names = list(users)
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"a user name must be a str, not {name!r}")
    return names


# ---------------------------------------------------------------------------------------- alter


def alter_user_scram_credentials(
    security,
    alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion],
    *,
    context: RequestContext | None = None,
) -> list[AlterUserScramCredentialsResult]:
    """Kafka's ``Admin.alterUserScramCredentials``: the admin client's own checks
    (:func:`client_errors`), then the request the controller answers (:func:`alter_credentials`)
    for the users left. One result per user named."""
    deletions, upsertions = [], []
    for alteration in alterations:
        if isinstance(alteration, UserScramCredentialDeletion):
            deletions.append(alteration)
        elif isinstance(alteration, UserScramCredentialUpsertion):
            upsertions.append(alteration)
        else:
            raise TypeError(
                f"an alteration is a UserScramCredentialUpsertion or UserScramCredentialDeletion, not {alteration!r}"
            )
    refused = client_errors(deletions, upsertions)
    results = alter_credentials(
        security,
        [d for d in deletions if d.user not in refused],
        [u for u in upsertions if u.user not in refused],
        context=context,
    )
    return results + [AlterUserScramCredentialsResult(user, error) for user, error in refused.items()]


def client_errors(
    deletions: Sequence[UserScramCredentialDeletion], upsertions: Sequence[UserScramCredentialUpsertion]
) -> dict[str, KafkaError]:
    """The users KafkaAdminClient refuses before it sends anything, with its error for each.

    An upsertion made from a salted password (as the wire carries it) has no password to check.
    """
    errors: dict[str, KafkaError] = {}
    for deletion in deletions:
        error = _name_and_mechanism_error(deletion.user, deletion.mechanism)
        if error is not None:
            errors[deletion.user] = error
    for upsertion in upsertions:
        if upsertion.user in errors:
            continue
        if not upsertion.user:
            errors[upsertion.user] = UnacceptableCredentialError(EMPTY_USERNAME)
        elif upsertion.password is not None and not upsertion.password:
            errors[upsertion.user] = UnacceptableCredentialError(EMPTY_PASSWORD)
        elif upsertion.info.mechanism is ScramMechanism.UNKNOWN:
            errors[upsertion.user] = UnsupportedSaslMechanismError(UNKNOWN_MECHANISM)
    return errors


def alter_credentials(
    security,
    deletions: Sequence[UserScramCredentialDeletion],
    upsertions: Sequence[UserScramCredentialUpsertion],
    *,
    context: RequestContext | None = None,
) -> list[AlterUserScramCredentialsResult]:
    """An AlterUserScramCredentials request as the KRaft controller answers it: authorized (when
    ``context`` is given), planned by :func:`plan_alterations`, and written in one transaction."""
    if context is not None and not security.is_allowed(context, AclOperation.ALTER, ResourcePattern.cluster()):
        error = ClusterAuthorizationFailedError()
        # AlterUserScramCredentialsRequest.getErrorResponse: each user once, in name order.
        users = sorted({alteration.user for alteration in (*deletions, *upsertions)})
        return [AlterUserScramCredentialsResult(user, error) for user in users]
    store = credential_store(security)
    # KRaft's controller applies one request at a time; the write here is exclusive across
    # every node, so what a request checks (a credential to delete exists) still holds when
    # its changes are written.
    with security.writing():
        plan = plan_alterations(store, deletions, upsertions)
        if plan.upserts or plan.deletions:
            store.apply_scram_changes(plan.upserts, plan.deletions)
    return list(plan.results)


def plan_alterations(
    store,
    deletions: Sequence[UserScramCredentialDeletion],
    upsertions: Sequence[UserScramCredentialUpsertion],
) -> AlterationPlan:
    """ScramControlManager.alterCredentials, without writing: deletions are checked first, then
    upsertions; a user named a second time (for any mechanism, deleted or upserted) is
    DUPLICATE_RESOURCE, unless its first alteration already failed, whose error then stands.

    Results list the users deleted, then those upserted, then those in error (Kafka walks hash
    maps; each group here is in request order).
    """
    to_delete: dict[str, UserScramCredentialDeletion] = {}
    to_upsert: dict[str, UserScramCredentialUpsertion] = {}
    errors: dict[str, KafkaError] = {}
    for deletion in deletions:
        user = deletion.user
        if user in errors:
            continue
        if to_delete.pop(user, None) is not None:
            errors[user] = DuplicateResourceError(ALTERED_TWICE)
            continue
        error = _name_and_mechanism_error(user, deletion.mechanism)
        if error is None and store.scram_credential(user, deletion.mechanism) is None:
            error = ResourceNotFoundError(DELETE_MISSING)
        if error is None:
            to_delete[user] = deletion
        else:
            errors[user] = error
    for upsertion in upsertions:
        user = upsertion.user
        if user in errors:
            continue
        if to_delete.pop(user, None) is not None or to_upsert.pop(user, None) is not None:
            errors[user] = DuplicateResourceError(ALTERED_TWICE)
            continue
        error = _upsertion_error(upsertion)
        if error is None:
            to_upsert[user] = upsertion
        else:
            errors[user] = error
    results = [AlterUserScramCredentialsResult(user) for user in to_delete]
    upserts = []
    for user, upsertion in to_upsert.items():
        try:
            credential = _credential(upsertion)
        except KafkaError as error:
            errors[user] = error
            continue
        upserts.append((user, upsertion.info.mechanism, credential))
        results.append(AlterUserScramCredentialsResult(user))
    results += [AlterUserScramCredentialsResult(user, error) for user, error in errors.items()]
    deleted = [(user, deletion.mechanism) for user, deletion in to_delete.items()]
    return AlterationPlan(results, upserts, deleted)


def _name_and_mechanism_error(user: str, mechanism: ScramMechanism) -> KafkaError | None:
    if not user:
        return UnacceptableCredentialError(EMPTY_USERNAME)
    if mechanism is ScramMechanism.UNKNOWN:
        return UnsupportedSaslMechanismError(UNKNOWN_MECHANISM)
    return None


def _upsertion_error(upsertion: UserScramCredentialUpsertion) -> KafkaError | None:
    error = _name_and_mechanism_error(upsertion.user, upsertion.info.mechanism)
    if error is not None:
        return error
    if upsertion.info.iterations < MIN_ITERATIONS:
        return UnacceptableCredentialError(TOO_FEW_ITERATIONS)
    if upsertion.info.iterations > MAX_ITERATIONS:
        return UnacceptableCredentialError(TOO_MANY_ITERATIONS)
    return None


def _credential(upsertion: UserScramCredentialUpsertion) -> ScramCredential:
    """ScramControlManager.finishUpsertion: the stored key and server key (from a password, the
    salted password is computed first, as Kafka's admin client does)."""
    if upsertion.salted_password is not None and not upsertion.salted_password:
        # Java's HMAC refuses an empty key; the controller answers that as UNKNOWN_SERVER_ERROR.
        raise UnknownServerError()
    if not upsertion.salt:
        # Kafka would store an empty salt; a ScramCredential always has one.
        raise UnacceptableCredentialError("Salt must not be empty")
    return upsertion.credential()


# ---------------------------------------------------------------------------------------- the server


def scram_credential(security, user: str, mechanism: ScramMechanism | str | int) -> ScramCredential | None:
    """The credential the SCRAM server checks a login against; None when ``user`` has none."""
    if not isinstance(user, str):
        raise TypeError(f"user must be a str, not {user!r}")
    mechanism = ScramMechanism.coerce(mechanism)
    if mechanism is ScramMechanism.UNKNOWN:
        raise ValueError("the UNKNOWN SCRAM mechanism has no credentials")
    return credential_store(security).scram_credential(user, mechanism)
