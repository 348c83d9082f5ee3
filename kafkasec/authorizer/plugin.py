"""Built-in plugin: the standard authorizer decides whatever no other plugin decided."""

from kafkasec.hookspecs import hookimpl

BUILTIN_AUTHORIZER_PLUGIN = __name__
"""The name this module is registered under (``kafkasec.plugins.DEFAULT_PLUGINS``)."""


@hookimpl(trylast=True)
def kafkasec_authorize(security, context, actions):
    return security.authorizer.decide(context, actions)
