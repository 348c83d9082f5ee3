"""What an authorizer is asked: a request context, the actions, and the answers."""

from __future__ import annotations

import enum
import functools
import ipaddress

import attrs
from attrs import field, frozen, validators

from kafkasec.acl import AclOperation, PatternType, ResourcePattern
from kafkasec.principals.principal import KafkaPrincipal


def java_host_address(address: object) -> str:
    """The client address as Java's ``InetAddress.getHostAddress()`` prints it.

    ACL hosts are compared as strings with exactly this text, so ``::1`` must become
    ``0:0:0:0:0:0:0:1`` and an IPv4-mapped IPv6 address its IPv4 form, as on a Kafka broker.
    """
    if isinstance(address, (ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return _java_text(address)
    if isinstance(address, str):
        return _java_text_of(address)
    raise TypeError(f"client_address must be a str or an ipaddress object, not {address!r}")


@functools.lru_cache(maxsize=4096)
def _java_text_of(address: str) -> str:
    # Kept: a server makes a context per request from the few addresses its clients have, and
    # parsing one was most of the cost of a context.
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        raise ValueError(
            f"client_address must be an IP address such as '10.0.0.1' or '::1', not {address!r}"
        ) from None
    return _java_text(ip)


def _java_text(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
    if ip.version == 4:
        return str(ip)
    if ip.ipv4_mapped is not None:
        if ip.scope_id:
            # Java refuses this too ("invalid IPv4-mapped address").
            raise ValueError(f"an IPv4-mapped address cannot have a zone: {str(ip)!r}")
        return str(ip.ipv4_mapped)
    text = _java_ipv6(ip)
    return f"{text}%{ip.scope_id}" if ip.scope_id else text


def canonical_principal(principal: KafkaPrincipal | str) -> str:
    """A principal given as text, ``Type:name``, read as :meth:`KafkaPrincipal.parse` and Kafka's
    ``parseKafkaPrincipal`` read it (at the first colon; ValueError without one). The type of
    what it reads has no colon, so the text is both what ``super.users`` is compared with and
    how ACLs name the principal (:func:`~kafkasec.principals.principal.acl_principal`)."""
    if isinstance(principal, str):
        principal = KafkaPrincipal.parse(principal)
    return f"{principal.principal_type}:{principal.name}"


def _java_ipv6(ip: ipaddress.IPv6Address) -> str:
    packed = ip.packed
    return ":".join(f"{int.from_bytes(packed[i:i + 2], 'big'):x}" for i in range(0, 16, 2))


_principal = validators.instance_of(KafkaPrincipal)


@frozen
class RequestContext:
    """The request being authorized: who sends it, from where, over which listener.

    ``forwarding_principal`` is KIP-590's: set when another broker forwarded this request in an
    envelope on the client's behalf (the principal and address here are then the original
    client's); ``forwarding_address`` is that broker's own address, for policies that trust
    forwarded requests only from some networks.
    """

    principal: KafkaPrincipal = field(validator=_principal)
    client_address: str = field(converter=java_host_address)
    listener_name: str = field(default="PLAINTEXT", validator=validators.instance_of(str))
    security_protocol: str = field(default="PLAINTEXT", validator=validators.instance_of(str))
    request_type: int = field(default=-1, validator=validators.instance_of(int))
    request_version: int = field(default=0, validator=validators.instance_of(int))
    client_id: str = field(default="", validator=validators.instance_of(str))
    correlation_id: int = field(default=0, validator=validators.instance_of(int))
    forwarding_principal: KafkaPrincipal | None = field(
        default=None, validator=validators.optional(_principal)
    )
    forwarding_address: str | None = field(
        default=None, converter=lambda value: None if value is None else java_host_address(value)
    )
    principal_text: str = field(init=False, default="", eq=False, repr=False)
    """``Type:name``, what ``super.users`` is compared with: Kafka compares the request
    principal's ``toString()`` with the configured strings, as text."""
    acl_principal: str | None = field(init=False, default=None, eq=False, repr=False)
    """The principal as ACLs name it (``User:alice``), or None when no ACL can name it (its type
    contains ``:``; see :func:`~kafkasec.principals.principal.acl_principal`). Both are made
    once per context, not per question."""

    def __attrs_post_init__(self) -> None:
        # After the validators: the principal is known to be a KafkaPrincipal here.
        principal = self.principal
        text = f"{principal.principal_type}:{principal.name}"
        object.__setattr__(self, "principal_text", text)
        # acl_principal()'s rule, reusing the text: a context is made per request.
        object.__setattr__(self, "acl_principal", None if ":" in principal.principal_type else text)

    def for_request(self, request_type: int, request_version: int, client_id: str, correlation_id: int) -> RequestContext:
        """The context of one request on this context's connection: its principal, address,
        listener and forwarding fields with the request header's. The same as building it
        anew, at half the cost: what the connection fixed was checked when this context was
        made, and a server makes one per request."""
        if not (isinstance(request_type, int) and isinstance(request_version, int) and isinstance(correlation_id, int)):
            raise TypeError(f"request_type, request_version and correlation_id are ints, not {request_type!r}, "
                            f"{request_version!r}, {correlation_id!r}")
        if not isinstance(client_id, str):
            raise TypeError(f"client_id is a str, not {client_id!r}")
        context = object.__new__(RequestContext)
        for name in _CONNECTION_FIELDS:
            _set_field(context, name, getattr(self, name))
        _set_field(context, "request_type", request_type)
        _set_field(context, "request_version", request_version)
        _set_field(context, "client_id", client_id)
        _set_field(context, "correlation_id", correlation_id)
        return context

    @classmethod
    def for_principal(cls, principal: KafkaPrincipal | str, client_address: str = "127.0.0.1", **kwargs) -> RequestContext:
        """A context for ``principal`` (a KafkaPrincipal or "Type:name"), e.g. for tools and tests."""
        if isinstance(principal, str):
            principal = KafkaPrincipal.parse(principal)
        return cls(principal, client_address, **kwargs)


_set_field = object.__setattr__  # how a frozen attrs class sets its own fields
_REQUEST_FIELDS = frozenset({"request_type", "request_version", "client_id", "correlation_id"})
_CONNECTION_FIELDS = tuple(name for name in attrs.fields_dict(RequestContext) if name not in _REQUEST_FIELDS)


def _literal_pattern(instance, attribute, value):
    if value.pattern_type is not PatternType.LITERAL:
        raise ValueError(
            f"an action names one resource, so its pattern must be LITERAL, not {value.pattern_type.name}"
        )


def _operation(value: AclOperation | str | int) -> AclOperation:
    return AclOperation.coerce(value)


@frozen(cache_hash=True)
class Action:
    """One operation on one resource that a request wants to perform."""

    operation: AclOperation = field(converter=_operation)
    resource_pattern: ResourcePattern = field(
        validator=[validators.instance_of(ResourcePattern), _literal_pattern]
    )
    resource_reference_count: int = field(default=1, validator=validators.instance_of(int))
    log_if_allowed: bool = field(default=True, validator=validators.instance_of(bool))
    log_if_denied: bool = field(default=True, validator=validators.instance_of(bool))


class AuthorizationResult(enum.Enum):
    ALLOWED = "ALLOWED"
    DENIED = "DENIED"
