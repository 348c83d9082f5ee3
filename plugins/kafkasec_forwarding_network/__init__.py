"""Reference plugin: forwarded requests are trusted only from brokers in allowed networks.

KIP-590 lets the controller's authorizer see which broker forwarded a request, and gives as
its example a policy of "ACL changes only from within a private network". This plugin is that
policy: when a request arrived in an envelope (``context.forwarding_principal`` is set), each
restricted action is DENIED unless the forwarding broker's address
(``context.forwarding_address``) lies in one of the allowed networks. It only ever denies:
requests that were not forwarded, unrestricted actions and forwarded requests from inside an
allowed network keep the answer of the plugins after it (finally the ACLs).
docs/plugin-forwarding-network.md describes the settings.
"""

from __future__ import annotations

import ipaddress
from typing import Iterable, Mapping

from attrs import evolve, field, frozen

from kafkasec import AclOperation, Action, AuthorizationResult, ResourceType, Rule, RuleKind, hookimpl
from kafkasec.settings import Setting

NAME = "forwarding_network"
NETWORKS_SETTING = "kafkasec.forwarding.allowed.networks"
OPERATIONS_SETTING = "kafkasec.forwarding.restricted.operations"
RESOURCE_TYPES_SETTING = "kafkasec.forwarding.restricted.resource.types"

Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# An action names one concrete operation on one concrete resource type, so these can never
# match one; listing them is a mistake worth reporting, not a silent no-op.
_NOT_ACTION_OPERATIONS = frozenset({AclOperation.UNKNOWN, AclOperation.ANY, AclOperation.ALL})
_NOT_ACTION_RESOURCE_TYPES = frozenset({ResourceType.UNKNOWN, ResourceType.ANY})


def _items(config: Mapping[str, object], name: str) -> list[str] | None:
    """The comma-separated items of setting ``name``, or None when it is unset.

    An empty value or an empty item is refused: an unset restriction means "every action",
    so an empty one must not be read as either "none" or "every" by accident.
    """
    value = config.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a comma-separated string, not {value!r}")
    items = [item.strip() for item in value.split(",")]
    if not any(items):
        raise ValueError(f"{name} is empty: list at least one item, or leave the setting unset")
    if not all(items):
        raise ValueError(f"{name} has an empty item (a stray comma?): {value!r}")
    return items


def _network(name: str, text: str) -> Network:
    try:
        # strict: "10.0.0.1/8" may mean 10.0.0.1/32 or 10.0.0.0/8; refuse rather than guess.
        return ipaddress.ip_network(text, strict=True)
    except ValueError as error:
        raise ValueError(
            f"{name}: {text!r} is not a network in CIDR notation such as 10.0.0.0/8 or fd00::/8 ({error})"
        ) from None


def _operation(name: str, text: str) -> AclOperation:
    try:
        operation = AclOperation.coerce(text)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if operation in _NOT_ACTION_OPERATIONS:
        raise ValueError(
            f"{name}: {operation.name} is not an operation a request performs; list operations such "
            f"as ALTER or CREATE (to restrict every forwarded action, leave {OPERATIONS_SETTING} and "
            f"{RESOURCE_TYPES_SETTING} unset)"
        )
    return operation


def _resource_type(name: str, text: str) -> ResourceType:
    try:
        resource_type = ResourceType.coerce(text)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if resource_type in _NOT_ACTION_RESOURCE_TYPES:
        raise ValueError(
            f"{name}: {resource_type.name} is not the type of a resource a request acts on; list "
            f"types such as CLUSTER or TOPIC (to restrict every forwarded action, leave "
            f"{OPERATIONS_SETTING} and {RESOURCE_TYPES_SETTING} unset)"
        )
    return resource_type


# The converters, as functions of their element types: attrs' mypy plugin cannot type
# converter=tuple or converter=frozenset (python/mypy#5313).
def _network_tuple(networks: Iterable[Network]) -> tuple[Network, ...]:
    return tuple(networks)


def _operation_set(operations: Iterable[AclOperation]) -> frozenset[AclOperation]:
    return frozenset(operations)


def _resource_type_set(resource_types: Iterable[ResourceType]) -> frozenset[ResourceType]:
    return frozenset(resource_types)


@frozen
class ForwardingNetworkPolicy:
    """Which forwarded actions are restricted, and the networks they may be forwarded from.

    With neither ``operations`` nor ``resource_types`` every forwarded action is restricted;
    otherwise an action is restricted if its operation or its resource type is listed. Build it
    with :meth:`from_config`, which parses and checks the settings.
    """

    networks: tuple[Network, ...] = field(converter=_network_tuple)
    operations: frozenset[AclOperation] = field(converter=_operation_set)
    resource_types: frozenset[ResourceType] = field(converter=_resource_type_set)

    @classmethod
    def from_config(cls, config: Mapping[str, object]) -> ForwardingNetworkPolicy | None:
        """The policy the settings describe, or None when none of them is set.

        A bad value, or restrictions without ``kafkasec.forwarding.allowed.networks``, is a
        ValueError naming the setting; a value that is not a string, a TypeError.
        """
        networks = _items(config, NETWORKS_SETTING)
        operations = _items(config, OPERATIONS_SETTING) or ()
        resource_types = _items(config, RESOURCE_TYPES_SETTING) or ()
        if networks is None:
            if operations or resource_types:
                # Restrictions without networks are a half-written policy; turning the plugin
                # off would silently let through what the operator meant to restrict.
                raise ValueError(
                    f"{OPERATIONS_SETTING if operations else RESOURCE_TYPES_SETTING} is set, but "
                    f"{NETWORKS_SETTING} is not: set the networks forwarded requests may come from"
                )
            return None
        return cls(
            [_network(NETWORKS_SETTING, text) for text in networks],
            [_operation(OPERATIONS_SETTING, text) for text in operations],
            [_resource_type(RESOURCE_TYPES_SETTING, text) for text in resource_types],
        )

    def restricts(self, action: Action) -> bool:
        if not self.operations and not self.resource_types:
            return True
        return action.operation in self.operations or action.resource_pattern.resource_type in self.resource_types

    def allows_address(self, address: str | None) -> bool:
        """Whether ``address`` (as RequestContext holds it) is in an allowed network.

        An IPv4 address and its IPv4-mapped IPv6 form are one address: 10.0.0.7 is in
        10.0.0.0/8 and in ::ffff:10.0.0.0/104, however the forwarding broker's socket saw it.
        """
        if address is None:
            return False
        ip = ipaddress.ip_address(address)
        forms = [ip] if ip.version == 6 else [ip, ipaddress.IPv6Address(f"::ffff:{ip}")]
        return any(form in network for form in forms for network in self.networks)

    def describe_networks(self) -> str:
        return ", ".join(str(network) for network in self.networks)


class _Guard:
    """The hook implementation, registered only when the plugin is configured: an installed
    but unconfigured plugin then costs nothing per authorization."""

    def __init__(self, security, policy: ForwardingNetworkPolicy):
        self.security = security
        self.policy = policy

    @hookimpl(wrapper=True)
    def kafkasec_authorize(self, security, context, actions):
        decisions = yield
        forwarder = context.forwarding_principal
        # decisions is None only when no authorizer answered; the facade reports that itself.
        if security is not self.security or forwarder is None or decisions is None:
            return decisions
        address = context.forwarding_address
        if self.policy.allows_address(address):
            return decisions
        where = "with no forwarding address" if address is None else f"from {address}"
        rule = Rule(
            RuleKind.PLUGIN,
            description=(
                f"forwarded by {forwarder} {where}, outside the allowed networks "
                f"{self.policy.describe_networks()}"
            ),
        )
        return [
            evolve(decision, result=AuthorizationResult.DENIED, rule=rule, authorizer=NAME)
            if self.policy.restricts(decision.action)
            else decision
            for decision in decisions
        ]


@hookimpl
def kafkasec_startup(security):
    policy = ForwardingNetworkPolicy.from_config(security.config)
    if policy is None:
        return
    security.plugin_state[NAME] = policy
    security.register_plugin(_Guard(security, policy), NAME)


@hookimpl
def kafkasec_settings():
    return (
        Setting(NETWORKS_SETTING, "list", None, NAME, "networks (CIDR) forwarded requests may come from; unset: off"),
        Setting(OPERATIONS_SETTING, "list", None, NAME, "operations restricted to those networks"),
        Setting(RESOURCE_TYPES_SETTING, "list", None, NAME, "resource types restricted to those networks"),
    )
