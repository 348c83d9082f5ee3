"""Which rules a grid evaluates: the one place that turns what a caller passes into an authorizer.

Every grid entry point (``grid``, ``who_can``, ``diff``, the Arrow UDF, the audit report and its
what-if) takes its ACLs through :func:`standard_authorizer` or :func:`compile_acls`, so that
both sides of a comparison are judged by the same configuration: a bare list of ACL bindings is
evaluated with the ``super.users``, ``allow.everyone.if.no.acl.found`` and principal expansion
(the plugins that add principals, such as ``kafkasec_groupfile``) of ``like`` (the KafkaSecurity
or StandardAuthorizer it is compared with), never with Kafka's empty defaults behind the
caller's back. No pyspark here: the report uses it without Spark.
"""

from __future__ import annotations

from typing import Iterable

from kafkasec.acl import AclBinding
from kafkasec.authorizer.standard import StandardAuthorizer
from spark_udfs.evaluator import CompiledAcls


def standard_authorizer(acls, *, like=None) -> StandardAuthorizer:
    """The StandardAuthorizer whose answers a grid of ``acls`` shows.

    ``acls`` is a StandardAuthorizer, a KafkaSecurity (its authorizer, whose principal expander
    is the plugins that add principals; refused with a ValueError naming them when plugins
    decide beside it, by code no table of the ACLs can hold) or AclBindings. Bindings are
    stored in a new authorizer with the super users, the allow-everyone setting and the
    principal expander of ``like`` (a StandardAuthorizer, KafkaSecurity or CompiledAcls), or with
    Kafka's defaults (none, false, no expansion) when ``like`` is None or bindings too."""
    if isinstance(acls, StandardAuthorizer):
        return acls
    authorizer = getattr(acls, "authorizer", None)
    if isinstance(authorizer, StandardAuthorizer):
        deciders = acls.authorization.plugins_deciding() if hasattr(acls, "authorization") else []
        if deciders:
            raise ValueError(
                f"the plugins {', '.join(deciders)} decide what this KafkaSecurity answers by their own code, "
                "which a grid of the ACLs cannot show: evaluate it without them, or ask "
                "KafkaSecurity.authorized_operations"
            )
        return authorizer
    if isinstance(acls, CompiledAcls):
        raise TypeError("CompiledAcls hold no ACL bindings: pass the StandardAuthorizer or KafkaSecurity they came from")
    bindings = list(acls)
    if not all(isinstance(binding, AclBinding) for binding in bindings):
        raise TypeError("acls must be CompiledAcls, a StandardAuthorizer, a KafkaSecurity or AclBindings")
    settings = _settings_of(like)
    authorizer = StandardAuthorizer(settings.super_users, settings.allow_everyone_if_no_acl_found,
                                    principal_expander=settings.principal_expander)
    for result in authorizer.create_acls(list(dict.fromkeys(bindings))):
        if result.error is not None:
            raise ValueError(f"ACL {result.binding} cannot be stored: {result.error}")
    return authorizer


def _settings_of(like) -> StandardAuthorizer:
    """What carries ``like``'s super users, allow-everyone setting and principal expander:
    bindings (or None) have Kafka's defaults, so they need no authorizer of their own. A
    CompiledAcls carries its expansion as a table, not an expander (see :func:`compile_acls`)."""
    if isinstance(like, CompiledAcls):
        return StandardAuthorizer(like.super_users, like.allow_everyone_if_no_acl_found)
    if not _has_authorizer(like):
        return _DEFAULTS
    return standard_authorizer(like)


_DEFAULTS = StandardAuthorizer()


def _has_authorizer(acls) -> bool:
    """Whether ``acls`` is an authorizer or holds one (a KafkaSecurity), rather than bindings."""
    return isinstance(acls, StandardAuthorizer) or hasattr(acls, "authorizer")


def compile_acls(acls, *, like=None, principals: Iterable[str] = ()) -> CompiledAcls:
    """CompiledAcls from a CompiledAcls, a StandardAuthorizer, a KafkaSecurity or AclBindings
    (these with ``like``'s settings, see :func:`standard_authorizer`). When the authorizer
    expands principals, the result knows the groups of ``principals`` (``Type:name``) and may
    be asked about those only; bindings judged like a CompiledAcls take its expansion."""
    if isinstance(acls, CompiledAcls):
        return acls
    authorizer = standard_authorizer(acls, like=like)
    if isinstance(like, CompiledAcls) and not _has_authorizer(acls):
        return CompiledAcls(authorizer.index, sorted(authorizer.super_users), authorizer.allow_everyone_if_no_acl_found,
                            like.expansion)
    return CompiledAcls.from_authorizer(authorizer, principals)
