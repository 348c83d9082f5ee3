"""Who a client is: the principal, how a connection's authentication gives one (Kafka's
principal builder with its SSL and Kerberos mapping rules) and how brokers exchange it (KIP-590's
principal serde).

* :mod:`.principal`: ``KafkaPrincipal``, the value every decision is about, and
  ``acl_principal``, the text by which ACLs name one (Kafka compares (type, name)).
* :mod:`.authentication`: what a listener knows about a connection (PLAINTEXT, SSL, SASL).
* :mod:`.builder`: Kafka's DefaultKafkaPrincipalBuilder (a built-in plugin).
* :mod:`.serde`: DefaultPrincipalData on the wire (a built-in plugin) and its primitives.
* :mod:`.ssl_rules`, :mod:`.kerberos`: the two mapping-rule sets, sharing :mod:`.mapping_rules`.
* :mod:`.x500`: a certificate's subject as Java writes it; :mod:`.java_regex`: Java's regular
  expressions and replacement strings, which both rule sets are written in.
"""

from kafkasec.principals.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal, acl_principal

__all__ = ["ANONYMOUS", "USER_TYPE", "KafkaPrincipal", "acl_principal"]
