"""The one shape of kafkasec's sans-I/O state machines (the SASL servers and client, the login
of a connection, a forwarded request).

A machine's states are an enum; its :class:`Transitions` table maps (state, event) to the
states that event may lead to, and every change of state goes through :meth:`Transitions.move`
(failing included: FAILED is in the table like any other state). An event the table does not
list for the current state raises the machine's own wrong-state error, named in the table; a
move to a state the table does not allow is a bug in the machine, an AssertionError.
"""

from __future__ import annotations

import enum
from typing import Callable, Generic, Iterable, Mapping, TypeVar

State = TypeVar("State", bound=enum.Enum)


OUT_OF_TURN = "out of turn"
"""The event of a call the current state does not expect, in machines that fail for good on one."""


class Transitions(Generic[State]):
    """(state, event) -> the states the event may lead to; ``wrong_state(message)`` makes the
    error for an event out of turn."""

    def __init__(self, table: Mapping[tuple[State, str], Iterable[State]], wrong_state: Callable[[str], Exception]):
        self._table = {key: frozenset(states) for key, states in table.items()}
        self._wrong_state = wrong_state

    @classmethod
    def failing(
        cls, table: Mapping[tuple[State, str], Iterable[State]], failed: State, wrong_state: Callable[[str], Exception]
    ) -> Transitions[State]:
        """The table of a machine that fails for good: every event may also lead to ``failed``,
        and from every state an event out of turn (:data:`OUT_OF_TURN`) leads there."""
        states = type(failed)
        full: dict[tuple[State, str], set[State]] = {key: {*targets, failed} for key, targets in table.items()}
        for state in states:
            full[(state, OUT_OF_TURN)] = {failed}
        return cls(full, wrong_state)

    def success(self, state: State, event: str, failed: State) -> State:
        """The one state other than ``failed`` that ``event`` leads to from ``state``."""
        (target,) = self.check(state, event) - {failed}
        return target

    def allows(self, state: State, event: str) -> bool:
        return (state, event) in self._table

    def events(self, state: State) -> list[str]:
        """The events the table lists for ``state`` (an event out of turn aside), in order."""
        return [event for (from_state, event) in self._table if from_state is state and event != OUT_OF_TURN]

    def check(self, state: State, event: str) -> frozenset[State]:
        """The states ``event`` may lead to from ``state``; the wrong-state error if none."""
        allowed = self._table.get((state, event))
        if allowed is None:
            raise self._wrong_state(f"{event} is not allowed in state {state.name}")
        return allowed

    def move(self, state: State, event: str, new_state: State) -> State:
        """``new_state``, once the table allows ``event`` to lead there from ``state``."""
        if new_state not in self.check(state, event):
            raise AssertionError(f"{event} may not lead from {state.name} to {new_state.name}")
        return new_state
