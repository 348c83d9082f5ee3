"""Kafka principals: who a request acts for."""

from __future__ import annotations

from attrs import field, frozen, validators

USER_TYPE = "User"


@frozen(cache_hash=True)
class KafkaPrincipal:
    """A principal such as ``User:alice``.

    Equality and hashing ignore ``token_authenticated``, as Kafka's ``KafkaPrincipal`` does: a
    user logged in with a delegation token is the same principal for ACLs.
    """

    principal_type: str = field(validator=validators.instance_of(str))
    name: str = field(validator=validators.instance_of(str))
    token_authenticated: bool = field(default=False, eq=False, validator=validators.instance_of(bool))

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """Split ``"Type:name"`` at the first colon; the name may contain colons or be empty."""
        if not isinstance(text, str):
            raise TypeError(f"principal must be a str such as 'User:alice', not {text!r}")
        principal_type, colon, name = text.partition(":")
        if not colon:
            raise ValueError(
                f"could not parse principal {text!r}: no ':' separates the principal type from the name"
            )
        return cls(principal_type, name)

    @classmethod
    def user(cls, name: str) -> KafkaPrincipal:
        return cls(USER_TYPE, name)

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")


def acl_principal(principal: KafkaPrincipal) -> str | None:
    """The text by which an ACL names ``principal`` (``User:alice``), or None when no ACL can.

    Kafka reads an ACL's principal up to its first ``:`` (``StandardAcl.kafkaPrincipal``,
    ``SecurityUtils.parseKafkaPrincipal``) and compares (type, name), so an ACL's type never
    contains ``:``. A principal whose type does (only a custom principal builder makes one) is
    therefore named by no ACL: ``Us:er:alice`` in an ACL is type ``Us``, name ``er:alice``, not
    type ``Us:er``, name ``alice``. Only ``User:*`` ACLs (and groups) apply to such a principal.
    Text compared with an ACL's text must come from here, never from ``str(principal)``.
    """
    if ":" in principal.principal_type:
        return None
    return f"{principal.principal_type}:{principal.name}"

