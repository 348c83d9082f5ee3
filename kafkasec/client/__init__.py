"""kafkasec as a Kafka client: connections, logins (SCRAM, PLAIN, OAUTHBEARER, over TLS or not) and
an admin client for a running cluster's ACLs, SCRAM credentials, delegation tokens, topics and
groups. Needs the ``wire`` extra. docs/cli.md shows the ``kafkasec`` command using it.
"""

from kafkasec.client.admin import AclDeletion, ClusterAdmin
from kafkasec.client.connection import KafkaConnection
from kafkasec.client.login import ClientLogin
from kafkasec.client.settings import ClientSettings

__all__ = ["AclDeletion", "ClientLogin", "ClientSettings", "ClusterAdmin", "KafkaConnection"]
