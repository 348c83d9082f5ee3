"""StandardAuthorizer: Kafka's ACL rules over the compiled index.

The rules are those of Kafka's StandardAuthorizer / StandardAuthorizerData and of the default
``Authorizer.authorizeByResourceType``; docs/authorization.md lists them with the tests that
pin each one. Every question (authorize, authorized operations, by resource type, explain,
who can) reads one :class:`~kafkasec.authorizer.index.AclIndex` snapshot.
"""

from __future__ import annotations

import functools
import threading
import uuid
from typing import Callable, Iterable, Mapping, Sequence

from attrs import frozen

from kafkasec.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourceType,
    supported_operations,
)
from kafkasec.authorizer.decision import AuthorizationDecision, Rule, RuleKind
from kafkasec.authorizer.index import (
    ALL_OPERATIONS_MASK,
    EMPTY_INDEX,
    AclIndex,
    StoredAcl,
    TypeIndex,
    acl_masks,
    combined_masks,
    gc_paused,
    has_undominated_allow,
    permitted,
    remember,
)
from kafkasec.authorizer.validation import validate_filter, validate_new_acl
from kafkasec.context import Action, AuthorizationResult, RequestContext
from kafkasec.errors import AuthorizerNotReadyError, KafkaError
from kafkasec.principals.principal import KafkaPrincipal, acl_principal
from kafkasec.settings import java_trim
from kafkasec.store.records import AccessControlEntryRecord, RemoveAccessControlEntryRecord

ALLOWED = AuthorizationResult.ALLOWED
DENIED = AuthorizationResult.DENIED
_WILDCARD_ONLY = (WILDCARD_PRINCIPAL,)

STORE_SOURCE = "store"
"""The provenance of ACLs created through the authorizer (and kept in its store)."""

PrincipalExpander = Callable[[KafkaPrincipal, RequestContext], Iterable[KafkaPrincipal]]


@functools.lru_cache(maxsize=1024)
def operations_in_mask(resource_type: ResourceType, mask: int) -> frozenset[AclOperation]:
    """The supported operations of ``resource_type`` whose bits are set in ``mask`` (memoized:
    there are few distinct masks, and building a frozenset per answer is the slow part)."""
    return frozenset(op for op in supported_operations(resource_type) if mask & (1 << op))


def parse_super_users(value: str | Iterable[str | KafkaPrincipal] | None) -> frozenset[str]:
    """super.users as Kafka reads it: "User:a;User:b" (or any iterable of principals).

    Kafka's StandardAuthorizer.getConfiguredSuperUsers splits at ``;``, trims each entry with
    Java's ``String.trim()`` (:func:`java_trim`: ``"User:carol\0"`` is ``User:carol``, while
    ``"\x85User:bob"`` stays as written), skips empty ones and keeps the text. A
    KafkaPrincipal is taken as it is: its text is not trimmed.
    """
    if value is None:
        return frozenset()
    items = value.split(";") if isinstance(value, str) else value
    users = set()
    for item in items:
        text = str(item) if isinstance(item, KafkaPrincipal) else java_trim(str(item))
        if not text:
            continue
        KafkaPrincipal.parse(text)  # a clear ValueError for an entry without a colon
        users.add(text)
    return frozenset(users)


@frozen
class AclCreateResult:
    """The outcome for one binding of :meth:`StandardAuthorizer.create_acls`."""

    binding: AclBinding
    acl_id: str | None = None
    error: KafkaError | None = None


@frozen
class AclDeleteResult:
    """The outcome for one filter of :meth:`StandardAuthorizer.delete_acls`."""

    filter: AclBindingFilter
    deleted: tuple[StoredAcl, ...] = ()
    error: KafkaError | None = None

    @property
    def bindings(self) -> tuple[AclBinding, ...]:
        return tuple(stored.binding for stored in self.deleted)


@frozen
class Grantee:
    """Who may perform an operation, from where: an answer of :meth:`StandardAuthorizer.who_can`.

    ``host`` is ``*`` for "from any host but ``except_hosts``"; the principal ``User:*`` stands
    for every principal not named otherwise, minus ``except_principals``.
    """

    principal: str
    host: str
    rule: RuleKind
    except_hosts: tuple[str, ...] = ()
    except_principals: tuple[str, ...] = ()


class StandardAuthorizer:
    """Kafka's StandardAuthorizer, with a compiled index and provenance.

    On its own it keeps ACLs in memory: :meth:`create_acls` and :meth:`delete_acls` change them.
    Inside a KafkaSecurity the write and the apply side are apart, as in Kafka: the facade
    plans a change here (:meth:`plan_create_acls`, :meth:`plan_delete_acls`), appends the records
    to the security log, and the node's follower applies them back through the feed API
    (:meth:`load_snapshot`, :meth:`apply_acl_changes`, :meth:`add_acl`, :meth:`remove_acl`,
    :meth:`complete_initial_load`), which never writes anywhere. A host broker can drive the
    feed API from its own metadata stream: start with ``initial_load_complete=False``.
    """

    def __init__(
        self,
        super_users: str | Iterable[str | KafkaPrincipal] | None = (),
        allow_everyone_if_no_acl_found: bool = False,
        *,
        principal_expander: PrincipalExpander | None = None,
        initial_load_complete: bool = True,
    ):
        self.super_users = parse_super_users(super_users)
        self.allow_everyone_if_no_acl_found = bool(allow_everyone_if_no_acl_found)
        self.principal_expander = principal_expander
        self._write_lock = threading.Lock()
        self._by_id: dict[str, StoredAcl] = {}
        self._index: AclIndex = EMPTY_INDEX
        self._loading_complete = bool(initial_load_complete)

    # ------------------------------------------------------------------ reading

    @property
    def index(self) -> AclIndex:
        """The current snapshot; it never changes once read."""
        return self._index

    @property
    def loading_complete(self) -> bool:
        return self._loading_complete

    def principal_keys(self, context: RequestContext) -> tuple[str, ...]:
        """The ACL principals that apply to the request: its own, ``User:*``, and its groups.

        Each is the text by which ACLs name it (:func:`acl_principal`), so that an ACL applies
        exactly when its (type, name), read up to the first ``:`` as Kafka reads it, is the
        principal's; a principal that no ACL can name (a type with ``:``) contributes nothing.
        """
        own = context.acl_principal
        if self.principal_expander is None:
            if own is None or own == WILDCARD_PRINCIPAL:
                return _WILDCARD_ONLY
            return (own, WILDCARD_PRINCIPAL)
        keys = dict.fromkeys((own, WILDCARD_PRINCIPAL))
        for group in self.principal_expander(context.principal, context):
            # A group given as text is taken as ACL principal text, as an ACL would hold it.
            keys[group if isinstance(group, str) else acl_principal(group)] = None
        return tuple(key for key in keys if key is not None)

    def _acl_principals(self, context: RequestContext) -> tuple[str, ...] | None:
        """The ACL principals of the request, or None for a super user (who skips the ACLs);
        anyone else before the initial load completes gets AuthorizerNotReadyError.

        ``super.users`` is compared with the principal's text, not its (type, name): Kafka's
        StandardAuthorizerData checks ``superUsers.contains(principal.toString())``."""
        if context.principal_text in self.super_users:
            return None
        if not self._loading_complete:
            raise AuthorizerNotReadyError()
        return self.principal_keys(context)

    def authorize(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationResult]:
        """One result per action, as Kafka's ``Authorizer.authorize``.

        Raises AuthorizerNotReadyError for a non-super user before the initial load completes.
        """
        if not actions:
            return []  # as Kafka: nothing asked, nothing refused, even before the initial load
        keys = self._acl_principals(context)
        if keys is None:
            return [ALLOWED] * len(actions)
        return self._answers(self._index, keys, context.client_address, actions)

    def _answers(
        self, index: AclIndex, keys: tuple[str, ...], host: str, actions: Sequence[Action]
    ) -> list[AuthorizationResult]:
        """Kafka's answer to each action, all read from one snapshot."""
        types = index.types
        no_acl = self._no_acl_result
        results = []
        for action in actions:
            pattern = action.resource_pattern
            type_index = types.get(pattern.resource_type)
            mask = None if type_index is None else type_index.permitted_operations(pattern.name, keys, host)
            if mask is None:
                results.append(no_acl)
            else:
                results.append(ALLOWED if mask >> action.operation & 1 else DENIED)
        return results

    @property
    def _no_acl_result(self) -> AuthorizationResult:
        """Kafka's rule for a resource without any ACL: allow.everyone.if.no.acl.found."""
        return ALLOWED if self.allow_everyone_if_no_acl_found else DENIED

    def authorized_operations(
        self, context: RequestContext, resource_pattern: ResourcePattern
    ) -> frozenset[AclOperation]:
        """KIP-430: the supported operations of the resource that ``authorize`` would allow.

        One pass over the patterns that apply, not one authorize per operation.
        """
        return self.authorized_operations_many(context, [resource_pattern])[0]

    def authorized_operations_many(
        self, context: RequestContext, resource_patterns: Sequence[ResourcePattern]
    ) -> list[frozenset[AclOperation]]:
        """KIP-430 for each pattern (a Metadata answer over many topics): the request's
        principals are resolved once, and each resource's ACLs once for all its operations."""
        for pattern in resource_patterns:
            if pattern.pattern_type is not PatternType.LITERAL:
                raise ValueError(
                    "authorized operations are asked of one resource: its pattern must be LITERAL, "
                    f"not {pattern.pattern_type.name}"
                )
        keys = self._acl_principals(context)
        if keys is None:
            return [supported_operations(pattern.resource_type) for pattern in resource_patterns]
        host, types = context.client_address, self._index.types
        answers = []
        for pattern in resource_patterns:
            type_index = types.get(pattern.resource_type)
            mask = None if type_index is None else type_index.permitted_operations(pattern.name, keys, host)
            if mask is None:
                mask = ALL_OPERATIONS_MASK if self.allow_everyone_if_no_acl_found else 0
            answers.append(operations_in_mask(pattern.resource_type, mask))
        return answers

    def authorize_by_resource_type(
        self, context: RequestContext, operation: AclOperation | str | int, resource_type: ResourceType | str | int
    ) -> AuthorizationResult:
        """Whether the principal may perform ``operation`` on at least one resource of the type.

        Kafka's default ``Authorizer.authorizeByResourceType``: ALLOWED if some ALLOW ACL (for
        this operation or ALL, this principal or ``User:*``, this host or ``*``) is not
        dominated by a DENY: a literal by the same literal or a denied prefix of it, a prefix by
        a denied prefix of it; a DENY on the literal ``*`` denies all. Operations imply nothing
        here, as in Kafka.
        """
        # New, typed names: coerce() declares no return type, so the parameters would stay unions.
        kafka_operation: AclOperation = AclOperation.coerce(operation)
        kafka_type: ResourceType = ResourceType.coerce(resource_type)
        if kafka_type is ResourceType.ANY:
            raise ValueError("Must specify a non-filter resource type for authorizeByResourceType")
        if kafka_type is ResourceType.UNKNOWN:
            raise ValueError("Unknown resource type")
        if kafka_operation is AclOperation.ANY:
            raise ValueError("Must specify a non-filter operation type for authorizeByResourceType")
        if kafka_operation is AclOperation.UNKNOWN:
            raise ValueError("Unknown operation type")
        # Kafka asks about a made-up name first, so that super users (and, with no ACLs on that
        # name, allow.everyone.if.no.acl.found) are allowed whatever the DENY ACLs say.
        probe = Action(kafka_operation, ResourcePattern(kafka_type, "hardcode"), 0, True, False)
        if self.authorize(context, [probe])[0] is ALLOWED:
            return ALLOWED
        type_index = self._index.types.get(kafka_type)
        if type_index is None:
            return DENIED
        # The answer depends only on which (principal, host) groups have ACLs of this type: a
        # host or principal with none of its own shares the answer of everyone else's.
        hosts = dict.fromkeys((context.client_address, WILDCARD_HOST))
        present = type_index.group_counts
        groups = tuple(group for p in self.principal_keys(context) for h in hosts if (group := (p, h)) in present)
        answer_key = (groups, kafka_operation)
        answer = type_index.by_resource_type_answers.get(answer_key)
        if answer is None:
            summaries = type_index.type_summaries(groups, kafka_operation)
            if any(summary.wildcard_deny for summary in summaries):
                answer = DENIED
            elif any(summary.wildcard_allow for summary in summaries):
                answer = ALLOWED
            else:
                answer = ALLOWED if has_undominated_allow(summaries) else DENIED
            remember(type_index.by_resource_type_answers, answer_key, answer)
        return answer

    def decide(self, context: RequestContext, actions: Sequence[Action]) -> list[AuthorizationDecision]:
        """Like :meth:`authorize`, with the rule that decided each action (its provenance). The
        results come from the same lookup as authorize(); which ACL decided is looked up once per
        snapshot and question, and only when decisions are asked for (authorize never does)."""
        if not actions:
            return []
        keys = self._acl_principals(context)
        if keys is None:
            rule = Rule(RuleKind.SUPER_USER, description=f"{context.principal} is a super user")
            return [AuthorizationDecision(action, ALLOWED, rule) for action in actions]
        index, host = self._index, context.client_address
        types, allow_everyone = index.types, self.allow_everyone_if_no_acl_found
        decisions = []
        for action in actions:
            type_index = types.get(action.resource_pattern.resource_type)
            if type_index is None:  # no ACL of the type: nothing to look up, nothing to remember
                decisions.append(AuthorizationDecision(action, self._no_acl_result, _NO_ACL_FOUND_RULES[allow_everyone]))
                continue
            # A client asks the same questions again and again: its decisions are remembered per
            # snapshot (rule included, so that nothing remembered refers back to the snapshot).
            key = (keys, host, action, allow_everyone)
            decision = type_index.decisions.get(key)
            if decision is None:
                [result] = self._answers(index, keys, host, [action])
                decision = AuthorizationDecision(action, result, self._rule(type_index, keys, host, action))
                remember(type_index.decisions, key, decision)
            decisions.append(decision)
        return decisions

    def _rule(self, type_index: TypeIndex, keys: tuple[str, ...], host: str, action: Action) -> Rule:
        """The rule behind the answer to ``action``: the first DENY ACL that refuses it, else the
        first ALLOW ACL that grants it, else the default rule."""
        entries = type_index.matching_entries(action.resource_pattern.name)
        if not entries:
            return _NO_ACL_FOUND_RULES[self.allow_everyone_if_no_acl_found]
        bit = 1 << action.operation
        allow, deny = combined_masks(entries, keys, host)
        hosts = dict.fromkeys((host, WILDCARD_HOST))
        if deny & bit:
            return Rule(RuleKind.DENY_ACL, _deciding_acl(entries, keys, hosts, bit, 1))
        if permitted(allow, deny) & bit:
            return Rule(RuleKind.ALLOW_ACL, _deciding_acl(entries, keys, hosts, bit, 0))
        return _NO_MATCHING_ACL_RULE

    def explain(self, context: RequestContext, action: Action) -> AuthorizationDecision:
        """The decision for one action and the ACL or default rule behind it."""
        return self.decide(context, [action])[0]

    def who_can(self, operation: AclOperation | str | int, resource_pattern: ResourcePattern) -> tuple[Grantee, ...]:
        """The principals and hosts that ``authorize`` allows ``operation`` on the resource."""
        kafka_operation: AclOperation = AclOperation.coerce(operation)
        Action(kafka_operation, resource_pattern)  # the same LITERAL check as authorize
        bit = 1 << kafka_operation
        grantees = [Grantee(user, WILDCARD_HOST, RuleKind.SUPER_USER) for user in sorted(self.super_users)]
        type_index = self._index.types.get(resource_pattern.resource_type)
        entries = [] if type_index is None else type_index.matching_entries(resource_pattern.name)
        if not entries:
            if self.allow_everyone_if_no_acl_found:
                grantees.append(Grantee(WILDCARD_PRINCIPAL, WILDCARD_HOST, RuleKind.NO_ACL_FOUND))
            return tuple(grantees)

        def allowed(keys, host):
            return bool(permitted(*combined_masks(entries, keys, host)) & bit)

        named = sorted(
            {p for entry in entries for p in entry.grants} - {WILDCARD_PRINCIPAL} - self.super_users
        )
        hosts = sorted(
            {h for entry in entries for grant in entry.grants.values() if grant[2] for h in grant[2]}
        )
        everyone = (WILDCARD_PRINCIPAL,)
        # host None matches no host-specific ACL: it stands for "any host not named in an ACL".
        everyone_allowed = allowed(everyone, None)
        for principal in named:
            keys = (principal, WILDCARD_PRINCIPAL)
            if allowed(keys, None):
                refused = tuple(h for h in hosts if not allowed(keys, h))
                grantees.append(Grantee(principal, WILDCARD_HOST, RuleKind.ALLOW_ACL, except_hosts=refused))
            else:
                grantees.extend(
                    Grantee(principal, h, RuleKind.ALLOW_ACL) for h in hosts if allowed(keys, h)
                )
        if everyone_allowed:
            refused_hosts = tuple(h for h in hosts if not allowed(everyone, h))
            refused = tuple(p for p in named if not allowed((p, WILDCARD_PRINCIPAL), None))
            grantees.append(
                Grantee(WILDCARD_PRINCIPAL, WILDCARD_HOST, RuleKind.ALLOW_ACL, refused_hosts, refused)
            )
        else:
            grantees.extend(
                Grantee(WILDCARD_PRINCIPAL, h, RuleKind.ALLOW_ACL) for h in hosts if allowed(everyone, h)
            )
        return tuple(grantees)

    def acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        """Every ACL the filter matches (Kafka's ``Authorizer.acls``)."""
        return [stored.binding for stored in self.stored_acls(acl_filter)]

    def stored_acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[StoredAcl]:
        """Like :meth:`acls`, with each ACL's id and source."""
        return _matching(self._index, acl_filter)

    # ------------------------------------------------------------------ changing

    def create_acls(self, bindings: Iterable[AclBinding]) -> list[AclCreateResult]:
        """Create the bindings in memory (an authorizer of its own; a KafkaSecurity writes
        through its log instead). One result per binding, as :meth:`plan_create_acls`."""
        with self._write_lock:
            results, records = self.plan_create_acls(bindings)
            self._commit([StoredAcl(r.acl_id, r.binding) for r in records], ())
        return results

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[AclDeleteResult]:
        """Delete in memory what each filter matches; one result per filter, as
        :meth:`plan_delete_acls`."""
        with self._write_lock:
            results, records = self.plan_delete_acls(filters)
            self._commit((), [self._by_id[r.acl_id] for r in records])
        return results

    def plan_create_acls(
        self, bindings: Iterable[AclBinding]
    ) -> tuple[list[AclCreateResult], list[AccessControlEntryRecord]]:
        """What creating the bindings takes, against the ACLs applied here, without changing
        them: one result per binding (invalid ones carry INVALID_REQUEST) and the records of the
        new ACLs. Creating an ACL that exists is a no-op that succeeds, as in Kafka."""
        results: list[AclCreateResult] = []
        records: list[AccessControlEntryRecord] = []
        pending: dict[AclBinding, str] = {}
        for binding in bindings:
            if not isinstance(binding, AclBinding):
                raise TypeError(f"create_acls takes AclBinding values, not {binding!r}")
            try:
                validate_new_acl(binding)
            except KafkaError as error:
                results.append(AclCreateResult(binding, error=error))
                continue
            acl_id = pending.get(binding) or self._stored_id(binding)
            if acl_id is None:
                acl_id = pending[binding] = str(uuid.uuid4())
                records.append(AccessControlEntryRecord(acl_id, binding))
            results.append(AclCreateResult(binding, acl_id=acl_id))
        return results, records

    def plan_delete_acls(
        self, filters: Iterable[AclBindingFilter]
    ) -> tuple[list[AclDeleteResult], list[RemoveAccessControlEntryRecord]]:
        """What deleting by the filters takes, against the ACLs applied here: one result per
        filter and one removal record per ACL matched.

        A binding matched by several filters is reported under each, as KRaft does. Only ACLs
        created through the authorizer are deleted; plugin-contributed ACLs belong to their plugin.
        """
        results: list[AclDeleteResult] = []
        index = self._index
        removed: dict[str, None] = {}
        for acl_filter in filters:
            if not isinstance(acl_filter, AclBindingFilter):
                raise TypeError(f"delete_acls takes AclBindingFilter values, not {acl_filter!r}")
            try:
                validate_filter(acl_filter)
            except KafkaError as error:
                results.append(AclDeleteResult(acl_filter, error=error))
                continue
            matched = tuple(s for s in _matching(index, acl_filter) if s.source == STORE_SOURCE)
            removed.update((s.acl_id, None) for s in matched)
            results.append(AclDeleteResult(acl_filter, matched))
        return results, [RemoveAccessControlEntryRecord(acl_id) for acl_id in removed]

    # ------------------------------------------------------------------ the feed (apply side)

    def has_acl(self, acl_id: str) -> bool:
        """Whether an ACL with this id is applied here."""
        return acl_id in self._by_id

    def apply_acl_changes(self, added: Sequence[tuple[str, AclBinding]], removed_ids: Iterable[str]) -> None:
        """Feed: remove the ACLs with ``removed_ids``, then add ``added`` (id, binding) pairs, as
        one new snapshot. ValueError (and no change) for an id that is absent or already there."""
        with self._write_lock:
            removed = []
            for acl_id in removed_ids:
                stored = self._by_id.get(acl_id)
                if stored is None or stored.source != STORE_SOURCE:
                    raise ValueError(f"no ACL with id {acl_id!r}")
                removed.append(stored)
            removed_set = {stored.acl_id for stored in removed}
            for acl_id, _ in added:
                if acl_id in self._by_id and acl_id not in removed_set:
                    raise ValueError(f"an ACL with id {acl_id!r} already exists")
            self._commit([StoredAcl(acl_id, binding) for acl_id, binding in added], removed)

    def add_acl(self, acl_id: str, binding: AclBinding) -> None:
        """Feed: add one ACL under the host broker's id."""
        validate_new_acl(binding)
        self.apply_acl_changes([(acl_id, binding)], ())

    def remove_acl(self, acl_id: str) -> None:
        """Feed: remove the ACL with this id."""
        self.apply_acl_changes((), [acl_id])

    def load_snapshot(self, acls: Mapping[str, AclBinding]) -> None:
        """Feed: replace every stored ACL with ``acls`` (id -> binding), in one new snapshot."""
        for binding in acls.values():
            validate_new_acl(binding)
        with self._write_lock, gc_paused():
            kept = [s for s in self._by_id.values() if s.source != STORE_SOURCE]
            self._by_id = {s.acl_id: s for s in kept}
            self._by_id.update((acl_id, StoredAcl(acl_id, binding)) for acl_id, binding in acls.items())
            self._index = AclIndex.build(self._by_id.values())

    def complete_initial_load(self) -> None:
        """Feed: the node has caught up; non-super users may be answered."""
        self._loading_complete = True

    def lose_readiness(self) -> None:
        """Feed: the node can no longer follow its state; non-super users get
        AUTHORIZER_NOT_READY until a new initial load completes."""
        self._loading_complete = False

    def replace_source_acls(self, source: str, bindings: Iterable[AclBinding]) -> None:
        """Swap in the ACLs a plugin contributes under ``source``; they are not stored."""
        if source == STORE_SOURCE:
            raise ValueError(f"{STORE_SOURCE!r} is the authorizer's own source; name the plugin")
        bindings = list(dict.fromkeys(bindings))
        for binding in bindings:
            validate_new_acl(binding)
        with self._write_lock:
            old = [s for s in self._by_id.values() if s.source == source]
            new = [StoredAcl(f"{source}/{uuid.uuid4()}", b, source) for b in bindings]
            self._commit(new, old)

    def _stored_id(self, binding: AclBinding) -> str | None:
        """The id of ``binding`` if it is already stored (the index knows; no second map)."""
        entry = self._index.entry(binding.pattern)
        if entry is not None:
            for stored in entry.by_principal_host.get((binding.entry.principal, binding.entry.host), ()):
                if stored.source == STORE_SOURCE and stored.binding == binding:
                    return stored.acl_id
        return None

    def _commit(self, added: Sequence[StoredAcl], removed: Sequence[StoredAcl]) -> None:
        """Swap in the snapshot with these changes (the caller holds the lock)."""
        if not added and not removed:
            return
        with gc_paused():
            for stored in removed:
                del self._by_id[stored.acl_id]
            for stored in added:
                self._by_id[stored.acl_id] = stored
            self._index = self._index.apply(added, removed)


_NO_MATCHING_ACL_RULE = Rule(
    RuleKind.NO_MATCHING_ACL,
    description="the resource has ACLs, but none allows this principal, host and operation",
)
_NO_ACL_FOUND_RULES = {
    allow_everyone: Rule(
        RuleKind.NO_ACL_FOUND,
        description=f"no ACL matches the resource; allow.everyone.if.no.acl.found={str(allow_everyone).lower()}",
    )
    for allow_everyone in (False, True)
}


def _deciding_acl(entries, keys, hosts, bit: int, side: int) -> StoredAcl:
    """The first ACL among ``entries`` whose allow (side 0) or deny (side 1) mask has ``bit``."""
    for entry in entries:
        for key in keys:
            for host in hosts:
                for stored in entry.by_principal_host.get((key, host), ()):
                    if acl_masks(stored.binding)[side] & bit:
                        return stored
    raise AssertionError("the masks said an ACL decides, but none was found")


def _matching(index: AclIndex, acl_filter: AclBindingFilter) -> list[StoredAcl]:
    if acl_filter == AclBindingFilter.ANY:
        return list(index)  # every ACL: no need to ask each one whether it matches
    resource_type = acl_filter.pattern_filter.resource_type
    type_indexes: Iterable[TypeIndex]
    if resource_type is ResourceType.ANY:
        type_indexes = index.types.values()
    else:
        type_indexes = [index.types[resource_type]] if resource_type in index.types else []
    pattern_filter, entry_filter = acl_filter.pattern_filter, acl_filter.entry_filter
    return [
        stored
        for type_index in type_indexes
        for pattern_entry in type_index.entries()
        if pattern_filter.matches(pattern_entry.pattern)
        for stored in pattern_entry.acls
        if entry_filter.matches(stored.binding.entry)
    ]
