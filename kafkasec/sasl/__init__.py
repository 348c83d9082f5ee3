"""SASL on the server side: mechanisms offered by plugins, one exchange shape, Kafka's JAAS values.

- :mod:`.exchange`: :class:`SaslExchange`, the sans-I/O base every mechanism's server keeps;
- :mod:`.mechanisms`: :class:`SaslMechanism`, :class:`SaslMechanisms` (the table of what the
  plugins serve, from the ``kafkasec_sasl_mechanisms`` hook) and the :class:`SaslServer` protocol;
- :mod:`.plain`: SASL/PLAIN, as Kafka's PlainSaslServer, and its built-in plugin;
- :mod:`.oauthbearer`: SASL/OAUTHBEARER, as Kafka's OAuthBearerSaslServer, with the unsecured
  validator (KIP-255), and :mod:`.jwks`: JWTs checked against a JWKS (KIP-768);
- :mod:`.jaas`: ``sasl.jaas.config`` values, as Kafka's JaasConfig reads them.

SCRAM's mechanisms are served by :mod:`kafkasec.scram.mechanism`.
"""

from kafkasec.sasl.exchange import SaslExchange, sasl_transitions
from kafkasec.sasl.jaas import LoginModule, parse_jaas_config
from kafkasec.sasl.mechanisms import SaslMechanism, SaslMechanisms, SaslServer
from kafkasec.sasl.plain import PlainServer

__all__ = [
    "LoginModule",
    "PlainServer",
    "SaslExchange",
    "SaslMechanism",
    "SaslMechanisms",
    "SaslServer",
    "parse_jaas_config",
    "sasl_transitions",
]
