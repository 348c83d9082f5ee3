"""Which rules a grid evaluates: the one place that turns what a caller passes into an authorizer.

Every grid entry point (``grid``, ``who_can``, ``diff``, the Arrow UDF, the audit report and its
what-if) takes its ACLs through :func:`standard_authorizer` or :func:`compile_acls`, so that
both sides of a comparison are judged by the same configuration: a bare list of ACL bindings is
evaluated with the ``super.users`` and ``allow.everyone.if.no.acl.found`` of ``like`` (the
KafkaSecurity or StandardAuthorizer it is compared with), never with Kafka's empty defaults
behind the caller's back. No pyspark here: the report uses it without Spark.
"""

from __future__ import annotations

from kafkasec.acl import AclBinding
from kafkasec.authorizer.standard import StandardAuthorizer
from spark_udfs.evaluator import CompiledAcls


def standard_authorizer(acls, *, like=None) -> StandardAuthorizer:
    """The StandardAuthorizer whose answers a grid of ``acls`` shows.

    ``acls`` is a StandardAuthorizer, a KafkaSecurity (its authorizer; refused with a ValueError
    naming them when plugins change its answers beyond the ACLs, which a grid cannot show) or
    AclBindings. Bindings are stored in a new authorizer with the super users and the
    allow-everyone setting of ``like`` (a StandardAuthorizer, KafkaSecurity or CompiledAcls), or
    with Kafka's defaults (none, false) when ``like`` is None or bindings too."""
    if isinstance(acls, StandardAuthorizer):
        return acls
    authorizer = getattr(acls, "authorizer", None)
    if isinstance(authorizer, StandardAuthorizer):
        changers = acls.authorization.plugins_changing_answers() if hasattr(acls, "authorization") else []
        if changers:
            raise ValueError(
                f"the plugins {', '.join(changers)} change what this KafkaSecurity answers beyond its ACLs "
                "(principal expansion or their own authorizer), which a grid of the ACLs cannot show: "
                "evaluate it without them, or ask KafkaSecurity.authorized_operations"
            )
        return authorizer
    if isinstance(acls, CompiledAcls):
        raise TypeError("CompiledAcls hold no ACL bindings: pass the StandardAuthorizer or KafkaSecurity they came from")
    bindings = list(acls)
    if not all(isinstance(binding, AclBinding) for binding in bindings):
        raise TypeError("acls must be CompiledAcls, a StandardAuthorizer, a KafkaSecurity or AclBindings")
    settings = _settings_of(like)
    authorizer = StandardAuthorizer(settings.super_users, settings.allow_everyone_if_no_acl_found)
    for result in authorizer.create_acls(list(dict.fromkeys(bindings))):
        if result.error is not None:
            raise ValueError(f"ACL {result.binding} cannot be stored: {result.error}")
    return authorizer


def _settings_of(like) -> StandardAuthorizer:
    """What carries ``like``'s super users and allow-everyone setting: bindings (or None) have
    Kafka's defaults, so they need no authorizer of their own."""
    if isinstance(like, CompiledAcls):
        return StandardAuthorizer(like.super_users, like.allow_everyone_if_no_acl_found)
    if like is None or not (isinstance(like, StandardAuthorizer) or hasattr(like, "authorizer")):
        return _DEFAULTS
    return standard_authorizer(like)


_DEFAULTS = StandardAuthorizer()


def compile_acls(acls, *, like=None) -> CompiledAcls:
    """CompiledAcls from a CompiledAcls, a StandardAuthorizer, a KafkaSecurity or AclBindings
    (these with ``like``'s settings, see :func:`standard_authorizer`)."""
    if isinstance(acls, CompiledAcls):
        return acls
    return CompiledAcls.from_authorizer(standard_authorizer(acls, like=like))
