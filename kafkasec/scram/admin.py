"""KIP-554's DescribeUserScramCredentials and AlterUserScramCredentials, as a KRaft cluster answers.

Describing is Kafka's ScramImage.describe (a broker answers from its metadata image); altering is
ScramControlManager.alterCredentials (the controller): the checks, their order, their messages
and their error codes are Kafka's. Authorization, when a request context is given, is Kafka's
too: DESCRIBE on the cluster to describe, ALTER on the cluster to alter, else
CLUSTER_AUTHORIZATION_FAILED (31) as Kafka's ``getErrorResponse`` spreads it.

These are the rules, without I/O or authorization; :class:`kafkasec.scram.service.ScramService`
applies them to a node's credentials (behind the ``kafkasec_scram_credential_store`` hook).
"""

from __future__ import annotations

from typing import Iterable, Sequence

from attrs import field, frozen, validators

from kafkasec.errors import (
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

    @error.validator
    def _description_or_error(self, attribute, value):
        if (value is None) == (self.description is None):
            raise ValueError("a result has a description or an error, not both or neither")


def _describe_results(results: Iterable[UserScramCredentialsResult]) -> tuple[UserScramCredentialsResult, ...]:
    # Named converters, here and below: attrs' mypy plugin cannot read converter=tuple's argument type.
    return tuple(results)


@frozen
class DescribeUserScramCredentialsResult:
    """A DescribeUserScramCredentials answer: a top-level error, and one result per user.

    The top-level error is set only when the caller may not describe (CLUSTER_AUTHORIZATION_FAILED);
    a user that does not exist is a result with RESOURCE_NOT_FOUND (91), a user named twice one
    with DUPLICATE_RESOURCE (92). Read it as Kafka's admin client does, with :meth:`users`,
    :meth:`description` and :meth:`all`, which raise the errors.
    """

    error: KafkaError | None = field(validator=_error)
    results: tuple[UserScramCredentialsResult, ...] = field(converter=_describe_results)

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
                assert result.description is not None  # a result without an error has one
                return result.description
        raise ResourceNotFoundError(f"No such user: {user}")

    def all(self) -> dict[str, UserScramCredentialsDescription]:
        """Every described user's description; the first error other than RESOURCE_NOT_FOUND is raised."""
        self._raise_top_level()
        for result in self.results:
            if result.error is not None and not _is_not_found(result.error):
                raise result.error
        return {r.user: r.description for r in self.results if r.description is not None}


def _is_not_found(error: KafkaError | None) -> bool:
    return error is not None and error.error_code is KafkaErrorCode.RESOURCE_NOT_FOUND


@frozen
class AlterUserScramCredentialsResult:
    """One user of an alteration: ``error`` is None when all its changes were made."""

    user: str = field(validator=validators.instance_of(str))
    error: KafkaError | None = field(default=None, validator=_error)


def _alter_results(results: Iterable[AlterUserScramCredentialsResult]) -> tuple[AlterUserScramCredentialsResult, ...]:
    return tuple(results)


def _upserts(
    upserts: Iterable[tuple[str, ScramMechanism, ScramCredential]],
) -> tuple[tuple[str, ScramMechanism, ScramCredential], ...]:
    return tuple(upserts)


def _deletions(deletions: Iterable[tuple[str, ScramMechanism]]) -> tuple[tuple[str, ScramMechanism], ...]:
    return tuple(deletions)


@frozen
class AlterationPlan:
    """What the controller would do with a request: each user's result, and the changes of the
    users that succeed, not yet written."""

    results: tuple[AlterUserScramCredentialsResult, ...] = field(converter=_alter_results)
    upserts: tuple[tuple[str, ScramMechanism, ScramCredential], ...] = field(converter=_upserts)
    deletions: tuple[tuple[str, ScramMechanism], ...] = field(converter=_deletions)


# ---------------------------------------------------------------------------------------- alter


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
