"""ACL management (Kafka's CreateAcls, DeleteAcls, DescribeAcls without the wire): planned
against the caught-up index, written to the security log, applied on every node."""

from __future__ import annotations

from typing import Iterable

from kafkasec.acl import AclBinding, AclBindingFilter
from kafkasec.authorizer.index import StoredAcl
from kafkasec.authorizer.standard import AclCreateResult, AclDeleteResult, StandardAuthorizer
from kafkasec.plugins import answers_by_plugin
from kafkasec.store.writer import StateWriter


class AclService:
    """The ACLs of one node. ``security`` is only what ``kafkasec_contribute_acls`` is called with."""

    def __init__(self, security, hook, authorizer: StandardAuthorizer, writer: StateWriter):
        self._security = security
        self._hook = hook
        self._authorizer = authorizer
        self._writer = writer

    def create_acls(self, bindings: Iterable[AclBinding]) -> list[AclCreateResult]:
        """Create ACLs cluster-wide: planned against the caught-up state, appended to the log,
        applied here before this returns (and on every other node as it follows)."""
        with self._writer.writing() as transaction:
            results, records = self._authorizer.plan_create_acls(bindings)
            transaction.append(records)
        return results

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[AclDeleteResult]:
        """Delete the ACLs each filter matches, cluster-wide (as :meth:`create_acls`)."""
        with self._writer.writing() as transaction:
            results, records = self._authorizer.plan_delete_acls(filters)
            transaction.append(records)
        return results

    def acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        return self._authorizer.acls(acl_filter)

    def stored_acls(self, acl_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[StoredAcl]:
        """Like :meth:`acls`, with each ACL's id and source (``store`` or a plugin's name)."""
        return self._authorizer.stored_acls(acl_filter)

    def reload_contributed_acls(self) -> None:
        """Ask every ``kafkasec_contribute_acls`` plugin again and swap in what each returns."""
        for impl, contributed in answers_by_plugin(self._hook.kafkasec_contribute_acls, security=self._security):
            self._authorizer.replace_source_acls(impl.plugin_name, contributed or ())


__all__ = ["AclService"]
