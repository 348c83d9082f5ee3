"""kafkasec's Kafka-protocol endpoint: real Kafka clients log in, describe and administer security.

It is the worked example of embedding kafkasec in a broker (docs/embedding.md): an asyncio
listener (:class:`Endpoint`) that answers ApiVersions, the SASL login, the security-relevant
read APIs over a small :class:`Catalogue`, and the ACL, SCRAM and delegation-token admin APIs,
forwarding admin writes to a controller (:class:`ControllerLink`) when it is a broker.
Needs the ``wire`` extra.
"""

from kafkasec.client.connection import KafkaConnection
from kafkasec.protocol.catalogue import Catalogue, Group, GroupMember, Node, Topic
from kafkasec.server.authenticator import Authenticator, AuthenticatorState, Reply
from kafkasec.server.controller_link import ControllerLink
from kafkasec.server.endpoint import Endpoint, running_in_thread
from kafkasec.server.secure_connection import Close, Handle, SecureConnection, Send

__all__ = [
    "Authenticator",
    "AuthenticatorState",
    "Catalogue",
    "Close",
    "ControllerLink",
    "Endpoint",
    "Group",
    "GroupMember",
    "Handle",
    "KafkaConnection",
    "Node",
    "Reply",
    "SecureConnection",
    "Send",
    "Topic",
    "running_in_thread",
]
