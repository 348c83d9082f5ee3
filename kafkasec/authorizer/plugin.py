"""Built-in plugin: the standard authorizer decides whatever no other plugin decided."""

from kafkasec.hookspecs import hookimpl


@hookimpl(trylast=True)
def kafkasec_authorize(security, context, actions):
    return security.authorizer.decide(context, actions)
