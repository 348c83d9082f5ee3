"""Reference plugin: an audit log of JSON lines, with repeated identical records folded.

A client retrying a denied request can produce thousands of identical decisions a second;
this plugin writes such a run once, with ``count`` and the first and last time, so the log
stays readable and cheap. docs/plugins.md describes the settings and the fields.

Like Kafka's authorizer logger, it records a decision only when the action asks for it:
allowed with ``log_if_allowed``, or denied with ``log_if_denied``. Kafka's own internal checks
(e.g. the KIP-430 authorized operations) set neither, and are not recorded.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import datetime, timezone
from time import monotonic, time

from kafkasec import AuthorizationResult, hookimpl
from kafkasec.settings import Setting, parse_milliseconds

NAME = "audit_jsonl"
PATH_SETTING = "kafkasec.audit.jsonl.path"
FOLD_SETTING = "kafkasec.audit.jsonl.fold.ms"
DEFAULT_FOLD_MS = 1000
ALLOWED = AuthorizationResult.ALLOWED



def _timestamp(seconds: float) -> str:
    """ISO 8601 in UTC with milliseconds, e.g. ``2024-05-01T12:00:00.123Z``."""
    utc = datetime.fromtimestamp(seconds, timezone.utc).replace(tzinfo=None)
    return utc.isoformat(timespec="milliseconds") + "Z"


def record_fields(context, decision) -> dict:
    """Every field of a line but the times and count; two decisions fold when these are equal."""
    action, rule = decision.action, decision.rule
    pattern = action.resource_pattern
    forwarding = context.forwarding_principal
    return {
        "principal": str(context.principal),
        "client_address": context.client_address,
        "listener_name": context.listener_name,
        "request_type": context.request_type,
        "client_id": context.client_id,
        "forwarding_principal": None if forwarding is None else str(forwarding),
        "operation": action.operation.name,
        "resource_type": pattern.resource_type.name,
        "resource_name": pattern.name,
        "pattern_type": pattern.pattern_type.name,
        "result": decision.result.value,
        "rule": rule.kind.value,
        "acl_id": None if rule.acl is None else rule.acl.acl_id,
        "acl_source": None if rule.acl is None else rule.acl.source,
        "authorizer": decision.authorizer,
    }


def fold_key(context, decision) -> tuple:
    """What record_fields says, as values that compare cheaply: two decisions with equal keys
    have equal fields, and fold. The fields themselves are made only when a run starts."""
    rule = decision.rule
    return (
        context.principal,
        context.client_address,
        context.listener_name,
        context.request_type,
        context.client_id,
        context.forwarding_principal,
        decision.action.operation,
        decision.action.resource_pattern,
        decision.result,
        rule.kind,
        rule.acl,
        decision.authorizer,
    )


class _Run:
    """Identical records seen one after another: written as one line when the run ends."""

    __slots__ = ("context", "decision", "key", "fields", "started", "last_tick", "first_time", "count")

    def __init__(self, context, decision, started: float):
        self.context, self.decision = context, decision
        self.key = fold_key(context, decision)
        self.fields = record_fields(context, decision)
        self.started = self.last_tick = started  # monotonic: the fold window, and the last repeat
        self.first_time = time()
        self.count = 1

    def same(self, context, decision) -> bool:
        """Whether the decision's record would be this run's: the very same context and decision
        (what a client's repeated question gets from the standard authorizer), or an equal fold key."""
        return (context is self.context and decision is self.decision) or fold_key(context, decision) == self.key

    def line(self) -> bytes:
        # One clock read per repeat: the last time is the first plus the monotonic time since,
        # which within a fold window (a second by default) is the wall clock's to the millisecond.
        record = {
            "first_time": _timestamp(self.first_time),
            "last_time": _timestamp(self.first_time + (self.last_tick - self.started)),
            "count": self.count,
            **self.fields,
        }
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


class JsonlAuditLog:
    """The open log file and the run not yet written, behind one lock; registered as the
    security's audit hook implementation only when the plugin is configured (an installed but
    unconfigured plugin then costs nothing per authorization).

    The file is unbuffered and opened for append: each line is one ``write``, one system call
    that hands the whole line to the operating system (there is no buffer left to flush), so a
    crash of this process leaves whole lines, and other writers appending never split ours.
    """

    def __init__(self, path: str, fold_ms: int, security=None):
        self.path = path
        self.fold = fold_ms / 1000
        self.security = security
        try:
            self._file = open(path, "ab", buffering=0)
        except OSError as error:
            raise ValueError(f"{PATH_SETTING}={path!r}: cannot open for append: {error.strerror or error}") from None
        self._lock = threading.Lock()
        self._run: _Run | None = None

    @hookimpl
    def kafkasec_audit(self, security, context, decisions) -> None:
        """Record the decisions whose actions ask for it (Kafka's rule: an allowed action if it
        asks ``log_if_allowed``, a denied one if it asks ``log_if_denied``): each folds into the
        current run, or ends that run and starts another. One frame and one lock per request:
        this runs for every request of an audited broker."""
        if security is not self.security:  # a plugin manager shared by several instances
            return
        # acquire/release rather than ``with``: half the cost, and this lock is most of a repeat's.
        self._lock.acquire()
        try:
            run = self._run
            if run is not None and len(decisions) == 1 and context is run.context and decisions[0] is run.decision:
                # A client asking its question again gets the very same decision from the standard
                # authorizer: the run's action asked to be logged, and an open run means an open
                # file, so only the fold window is left to check.
                tick = monotonic()
                if tick - run.started < self.fold:
                    run.count += 1
                    run.last_tick = tick
                    return
            for decision in decisions:
                action = decision.action
                if not (action.log_if_allowed if decision.result is ALLOWED else action.log_if_denied):
                    continue
                if self._file.closed:
                    raise ValueError(f"the audit log {self.path!r} is closed; a decision would be lost")
                tick = monotonic()
                run = self._run
                if run is not None and tick - run.started < self.fold and run.same(context, decision):
                    run.count += 1
                    run.last_tick = tick
                    continue
                self._end_run()
                self._run = _Run(context, decision, tick)
                if not self.fold:
                    self._end_run()
        finally:
            self._lock.release()

    def close(self) -> None:
        with self._lock:
            if not self._file.closed:
                self._end_run()
                self._file.close()

    def _end_run(self) -> None:
        """Write the pending run, if any (the caller holds the lock)."""
        if self._run is None:
            return
        line = self._run.line()
        written = self._file.write(line)  # if this raises, nothing was written: keep the run
        self._run = None
        if written != len(line):
            raise OSError(f"the audit log {self.path!r} took {written} of {len(line)} bytes of a line")


@hookimpl
def kafkasec_startup(security):
    path = security.config.get(PATH_SETTING)
    if path is None:
        return
    fold_ms = parse_milliseconds(security.config, FOLD_SETTING, DEFAULT_FOLD_MS)
    log = security.plugin_state[NAME] = JsonlAuditLog(os.fspath(path), fold_ms, security)
    security.register_plugin(log, NAME)


@hookimpl
def kafkasec_shutdown(security):
    log = security.plugin_state.get(NAME)
    if log is not None:
        log.close()


@hookimpl
def kafkasec_settings():
    return (
        Setting(PATH_SETTING, "string", None, NAME, "the JSON-lines file audit records are appended to; unset: off"),
        Setting(FOLD_SETTING, "milliseconds", DEFAULT_FOLD_MS, NAME, "repeats of one decision within this are folded"),
    )
