"""SCRAM credentials of one node (KIP-554) and its logins: Kafka's rules from
:mod:`kafkasec.scram.admin` applied to the credential store, authorized through the narrow
:class:`~kafkasec.authorizer.service.Authorizer` and written through the security log's writer.

The facade's SCRAM methods, the wire handlers (:mod:`kafkasec.protocol.scram_apis`) and the
``kafkasec scram`` command all come through here.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Iterable, Sequence

from kafkasec.acl import AclOperation, ResourcePattern
from kafkasec.authorizer.service import Authorizer
from kafkasec.context import RequestContext
from kafkasec.errors import ClusterAuthorizationFailedError, DuplicateResourceError, ResourceNotFoundError
from kafkasec.scram.admin import (
    DESCRIBE_DUPLICATE_USER,
    DESCRIBE_MISSING_USER,
    AlterUserScramCredentialsResult,
    DescribeUserScramCredentialsResult,
    UserScramCredentialsResult,
    client_errors,
    plan_alterations,
)
from kafkasec.scram.credentials import (
    ScramCredential,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkasec.scram.server import DEFAULT_FAILED_AUTHENTICATION_DELAY_MS, ScramServer
from kafkasec.store.writer import StateWriter


class ScramService:
    """The SCRAM credentials behind ``store`` (None: no plugin keeps any; every use is then a
    ValueError). ``token_login(token_id, mechanism)`` gives a token's credential for a token
    login (the delegation-token manager's)."""

    def __init__(
        self,
        authorizer: Authorizer,
        store,
        writer: StateWriter,
        token_login: Callable[[str, ScramMechanism], object],
        *,
        failed_authentication_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS,
    ):
        self._authorizer = authorizer
        self._store = store
        self._writer = writer
        self._token_login = token_login
        self.failed_authentication_delay_ms = failed_authentication_delay_ms

    @property
    def store(self):
        """The credential store; ValueError when no plugin provides one."""
        if self._store is None:
            raise ValueError(
                "no SCRAM credential store: the state store keeps no credentials and no plugin "
                "answers kafkasec_scram_credential_store"
            )
        return self._store

    def _refused(self, context: RequestContext | None, operation: AclOperation) -> bool:
        return context is not None and not self._authorizer.is_allowed(context, operation, ResourcePattern.cluster())

    # ------------------------------------------------------------------ describe

    def describe_user_scram_credentials(
        self, users: Iterable[str] | None = None, *, context: RequestContext | None = None
    ) -> DescribeUserScramCredentialsResult:
        """Kafka's answer to DescribeUserScramCredentials for ``users`` (None or empty: every user
        with a credential, sorted by name); never a secret. With ``context``, the caller needs
        DESCRIBE on the cluster."""
        names = _user_names(users)
        if self._refused(context, AclOperation.DESCRIBE):
            error = ClusterAuthorizationFailedError()
            # DescribeUserScramCredentialsRequest.getErrorResponse repeats the error for each name.
            return DescribeUserScramCredentialsResult(error, [UserScramCredentialsResult(n, error=error) for n in names])
        store = self.store
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

    # ------------------------------------------------------------------ alter

    def alter_user_scram_credentials(
        self,
        alterations: Iterable[UserScramCredentialUpsertion | UserScramCredentialDeletion],
        *,
        context: RequestContext | None = None,
    ) -> list[AlterUserScramCredentialsResult]:
        """Kafka's ``Admin.alterUserScramCredentials``: the admin client's own checks
        (:func:`~kafkasec.scram.admin.client_errors`), then the request the controller answers
        (:meth:`alter_credentials`) for the users left. One result per user named, all of a
        user's changes or none. With ``context``, the caller needs ALTER on the cluster."""
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
        results = self.alter_credentials(
            [d for d in deletions if d.user not in refused],
            [u for u in upsertions if u.user not in refused],
            context=context,
        )
        return results + [AlterUserScramCredentialsResult(user, error) for user, error in refused.items()]

    def alter_credentials(
        self,
        deletions: Sequence[UserScramCredentialDeletion],
        upsertions: Sequence[UserScramCredentialUpsertion],
        *,
        context: RequestContext | None = None,
    ) -> list[AlterUserScramCredentialsResult]:
        """An AlterUserScramCredentials request as the KRaft controller answers it: authorized
        (when ``context`` is given), planned by :func:`~kafkasec.scram.admin.plan_alterations`,
        and written in one transaction."""
        if self._refused(context, AclOperation.ALTER):
            error = ClusterAuthorizationFailedError()
            # AlterUserScramCredentialsRequest.getErrorResponse: each user once, in name order.
            users = sorted({deletion.user for deletion in deletions} | {upsertion.user for upsertion in upsertions})
            return [AlterUserScramCredentialsResult(user, error) for user in users]
        store = self.store
        # KRaft's controller applies one request at a time; the write here is exclusive across
        # every node, so what a request checks (a credential to delete exists) still holds when
        # its changes are written.
        with self._writer.writing():
            plan = plan_alterations(store, deletions, upsertions)
            if plan.upserts or plan.deletions:
                store.apply_scram_changes(plan.upserts, plan.deletions)
        return list(plan.results)

    def alter_each_separately(
        self, deletions: Sequence[UserScramCredentialDeletion], upsertions: Sequence[UserScramCredentialUpsertion]
    ) -> None:
        """Each credential checked as its own AlterUserScramCredentials request, all written in
        one transaction or none; the first refusal is raised (a KafkaError).

        kafka-configs.sh sends one request, which KRaft's controller refuses as
        DUPLICATE_RESOURCE as soon as it names two mechanisms of one user; as one request per
        mechanism each would pass, so that is what is checked, and the whole change then stays
        all or nothing.
        """
        refused = client_errors(deletions, upsertions)
        if refused:
            raise next(iter(refused.values()))
        store = self.store
        with self._writer.writing():
            plans = [plan_alterations(store, [d], []) for d in deletions]
            plans += [plan_alterations(store, [], [u]) for u in upsertions]
            for plan in plans:
                for result in plan.results:
                    if result.error is not None:
                        raise result.error
            store.apply_scram_changes(
                [upsert for plan in plans for upsert in plan.upserts],
                [deletion for plan in plans for deletion in plan.deletions],
            )

    def import_credentials(self, credentials: Iterable[tuple[str, ScramMechanism, ScramCredential]]) -> None:
        """Store exported credentials as they are (salted and derived already), in one write."""
        store = self.store
        with self._writer.writing():
            store.apply_scram_changes(list(credentials), [])

    # ------------------------------------------------------------------ logins

    def scram_credential(self, user: str, mechanism: ScramMechanism | str | int) -> ScramCredential | None:
        """The credential a SCRAM login of ``user`` is checked against, or None."""
        if not isinstance(user, str):
            raise TypeError(f"user must be a str, not {user!r}")
        mechanism = ScramMechanism.coerce(mechanism)
        if mechanism is ScramMechanism.UNKNOWN:
            raise ValueError("the UNKNOWN SCRAM mechanism has no credentials")
        return self.store.scram_credential(user, mechanism)

    def scram_server(self, mechanism: ScramMechanism | str | int, **kwargs) -> ScramServer:
        """A :class:`ScramServer` for one login, checked against these credentials (and, for a
        token login, the token's). ``kwargs`` go to ScramServer."""
        server_mechanism = ScramServer.mechanism_for(mechanism)
        kwargs.setdefault("failed_authentication_delay_ms", self.failed_authentication_delay_ms)
        kwargs.setdefault("token_callback", lambda token_id: self._token_login(token_id, server_mechanism))
        return ScramServer(server_mechanism, lambda user: self.scram_credential(user, server_mechanism), **kwargs)


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


__all__ = ["ScramService"]
