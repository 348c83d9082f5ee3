"""Reference plugin: multi-tenant principals that survive KIP-590 forwarding.

KIP-590 made the principal serde pluggable so that a custom principal survives the trip from
the broker a client talks to, to the controller that handles its forwarded request. This
plugin shows it with a principal carrying a tenant, as in multi-tenant clusters:

- :class:`TenantPrincipal` is ``User:<tenant>/<user>``: ACLs match principals on that text,
  so ``User:acme/alice`` and ``User:globex/alice`` are different principals;
- a principal builder (asked before the default one) reads the tenant from a SASL
  authorization id ``<tenant>/<user>``, or from a client certificate's subject (O is the
  tenant, CN the user);
- a serde of its own, whose bytes open with a tag Kafka's format never starts with, so each
  reader declines or refuses the other's bytes;
- principal expansion: ACLs for ``Tenant:<tenant>`` apply to every user of the tenant.

docs/plugin-tenant.md describes the settings, the byte format and ACL examples.
"""

from __future__ import annotations

import re

from attrs import frozen
from cryptography.x509.oid import NameOID

from kafkasec import KafkaPrincipal, hookimpl
from kafkasec.errors import PrincipalDeserializationError
from kafkasec.principals.authentication import SaslAuthenticationContext, SslAuthenticationContext
from kafkasec.principals.principal import USER_TYPE
from kafkasec.principals.serde import PrincipalDataReader, compact_string
from kafkasec.settings import Setting, parse_bool

NAME = "tenant"
ENABLED_SETTING = "kafkasec.tenant.enabled"
REQUIRED_SETTING = "kafkasec.tenant.required"

SEPARATOR = "/"
TENANT_TYPE = "Tenant"

TAG = 0x544E
"""The int16 that opens this plugin's principal bytes ("TN" in ASCII). Kafka's format has its
version there and Kafka has only ever written 0, so a Kafka reader refuses these bytes
("Invalid principal data version 21582") and this reader declines Kafka's."""
_TAG_BYTES = TAG.to_bytes(2, "big")

# ASCII letters, digits, "_" and "-". No separator, so "<tenant>/<user>" splits one way only;
# no ".", so the topic prefix "<tenant>." of one tenant never starts another's; no "=", ","
# or space, so a name another builder makes (a certificate's DN, "CN=x/y,O=z") never reads as
# a tenant-qualified name.
_TENANT = re.compile(r"[A-Za-z0-9_-]+")

# Kerberos principals ("kafka/broker1.example.com@EXAMPLE.COM") use the separator themselves.
_KERBEROS = "GSSAPI"


def is_tenant_name(text: str) -> bool:
    """Whether ``text`` may name a tenant: ASCII letters, digits, "_" and "-", at least one."""
    return _TENANT.fullmatch(text) is not None


@frozen(cache_hash=True)
class TenantPrincipal(KafkaPrincipal):
    """A user of one tenant, ``User:<tenant>/<user>``; build it with :meth:`of`.

    The principal type stays ``User`` and the name is tenant-qualified, so every part of
    kafkasec that names principals as ``Type:name`` (ACLs, ``super.users``, audit) tells
    ``User:acme/alice`` from ``User:globex/alice`` without knowing about tenants. The user part
    is any non-empty text, and may itself contain the separator: the name splits at its first
    one. As in Kafka, a principal of this class is never equal to a plain KafkaPrincipal with
    the same text, though ACLs treat them alike.
    """

    def __attrs_post_init__(self):
        if self.principal_type != USER_TYPE:
            raise ValueError(f"a tenant principal has the type {USER_TYPE!r}, not {self.principal_type!r}")
        tenant, _, user = self.name.partition(SEPARATOR)
        _check_tenant(tenant)
        if not user:
            raise ValueError(f"the name of a tenant principal is '<tenant>{SEPARATOR}<user>', not {self.name!r}")

    @classmethod
    def of(cls, tenant: str, user: str, token_authenticated: bool = False) -> TenantPrincipal:
        """``User:<tenant>/<user>``; a ValueError for a bad tenant name or an empty user."""
        if not isinstance(tenant, str) or not isinstance(user, str):
            raise TypeError(f"tenant and user must be str, not {tenant!r} and {user!r}")
        # Checked before joining: "ac/me" + "alice" would otherwise split as "ac" + "me/alice".
        _check_tenant(tenant)
        return cls(USER_TYPE, f"{tenant}{SEPARATOR}{user}", token_authenticated)

    @property
    def tenant(self) -> str:
        return self.name.partition(SEPARATOR)[0]

    # The user part, in place of the classmethod KafkaPrincipal.user(name): of() builds tenant principals.
    @property
    def user(self) -> str:  # type: ignore[override]
        return self.name.partition(SEPARATOR)[2]

    @property
    def tenant_principal(self) -> KafkaPrincipal:
        """``Tenant:<tenant>``, whose ACLs apply to every user of the tenant."""
        return KafkaPrincipal(TENANT_TYPE, self.tenant)


def _check_tenant(tenant: str) -> None:
    if not is_tenant_name(tenant):
        raise ValueError(f"tenant {tenant!r} must be ASCII letters, digits, '_' or '-' (at least one)")


# ------------------------------------------------------------------ building principals


class TenantRequiredError(ValueError):
    """``kafkasec.tenant.required`` is true and a login names no tenant.

    Raised by the principal builder, so the connection is refused rather than given a principal
    that no tenant ACL applies to.
    """


def _login_principal(context) -> TenantPrincipal | None:
    """The tenant principal of a login, or None if the login names no tenant.

    SASL: an authorization id ``<tenant>/<user>`` (but not Kerberos, whose names contain "/").
    SSL: a client certificate whose subject has one O (the tenant) and one CN (the user).
    A tenant that is not a valid tenant name, or an empty user, names no tenant.
    """
    if isinstance(context, SaslAuthenticationContext):
        if context.mechanism == _KERBEROS:
            return None
        tenant, _, user = context.authorization_id.partition(SEPARATOR)
        return _principal_or_none(tenant, user)
    if isinstance(context, SslAuthenticationContext) and context.peer_certificate is not None:
        subject = context.peer_certificate.subject
        organizations = subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
        common_names = subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        if len(organizations) == 1 and len(common_names) == 1:
            organization, common_name = organizations[0].value, common_names[0].value
            # Only an X500 unique identifier's value is bytes: cryptography makes an O's and a CN's str.
            assert isinstance(organization, str) and isinstance(common_name, str)
            return _principal_or_none(organization, common_name)
    return None


def _principal_or_none(tenant: str, user: str) -> TenantPrincipal | None:
    if is_tenant_name(tenant) and user:
        return TenantPrincipal.of(tenant, user)
    return None


# ------------------------------------------------------------------ serde


def serialize(principal: TenantPrincipal) -> bytes:
    """The tag, then flexible-encoded compact strings tenant and user, a boolean
    (token authenticated) and an empty tagged-field section."""
    if not isinstance(principal, TenantPrincipal):
        raise TypeError(f"serialize takes a TenantPrincipal, not {principal!r}")
    return b"".join(
        (
            _TAG_BYTES,
            compact_string("tenant", principal.tenant),
            compact_string("user", principal.user),
            b"\x01" if principal.token_authenticated else b"\x00",
            b"\x00",  # no tagged fields
        )
    )


def deserialize(data: bytes) -> TenantPrincipal | None:
    """The principal in bytes of this format; None for bytes that do not open with the tag
    (another format's), PrincipalDeserializationError (97) for malformed bytes of this one."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"deserialize takes bytes, not {type(data).__name__}")
    data = bytes(data)
    if data[:2] != _TAG_BYTES:
        return None
    reader = PrincipalDataReader(data)
    reader.int16()
    tenant = reader.compact_string("Tenant")
    user = reader.compact_string("User")
    token_authenticated = reader.byte("TokenAuthenticated")
    # Stricter than Kafka's boolean (any non-zero byte): our bytes are 0 or 1, nothing else.
    if token_authenticated not in (0, 1):
        raise PrincipalDeserializationError(f"TokenAuthenticated must be 0 or 1, not {token_authenticated}")
    reader.skip_tagged_fields()
    reader.end()
    if not is_tenant_name(tenant) or not user:
        raise PrincipalDeserializationError(f"{tenant!r} and {user!r} do not name a user of a tenant")
    return TenantPrincipal.of(tenant, user, token_authenticated == 1)


# ------------------------------------------------------------------ the plugin


class _TenantHooks:
    """The hook implementations, registered only when the plugin is enabled: an installed but
    disabled plugin then costs nothing per login, envelope or authorization."""

    def __init__(self, security, required: bool):
        self.security = security
        self.required = required

    @hookimpl
    def kafkasec_build_principal(self, security, context):
        if security is not self.security:  # a plugin manager shared by several instances
            return None
        principal = _login_principal(context)
        if principal is None and self.required:
            raise TenantRequiredError(
                f"{REQUIRED_SETTING} is true and the login names no tenant: {context!r}"
            )
        return principal

    @hookimpl
    def kafkasec_serialize_principal(self, security, principal):
        if security is not self.security or not isinstance(principal, TenantPrincipal):
            return None
        return serialize(principal)

    @hookimpl
    def kafkasec_deserialize_principal(self, security, data):
        if security is not self.security:
            return None
        return deserialize(data)

    @hookimpl
    def kafkasec_expand_principal(self, security, principal):
        if security is not self.security or not isinstance(principal, TenantPrincipal):
            return None
        return (principal.tenant_principal,)


@hookimpl
def kafkasec_startup(security):
    enabled = parse_bool(ENABLED_SETTING, security.config.get(ENABLED_SETTING, False))
    required = parse_bool(REQUIRED_SETTING, security.config.get(REQUIRED_SETTING, False))
    if not enabled:
        if required:
            raise ValueError(f"{REQUIRED_SETTING}=true needs {ENABLED_SETTING}=true")
        return
    security.register_plugin(_TenantHooks(security, required), NAME)


@hookimpl
def kafkasec_settings():
    return (
        Setting(ENABLED_SETTING, "boolean", False, NAME, "principals carry the tenant their login names"),
        Setting(REQUIRED_SETTING, "boolean", False, NAME, "a login that names no tenant is refused"),
    )
