"""The expiry sweeper: a background thread that removes expired tokens every
``delegation.token.expiry.check.interval.ms``, as Kafka's controller does on its timer."""

from __future__ import annotations

import logging
import threading

from kafkasec.tokens.manager import DelegationTokenManager

log = logging.getLogger(__name__)


class TokenExpirySweeper:
    """Calls ``manager.expire_tokens()`` on the manager's check interval until :meth:`stop`."""

    def __init__(self, manager: DelegationTokenManager):
        self.manager = manager
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kafkasec-token-expiry-sweeper", daemon=True)

    def start(self) -> TokenExpirySweeper:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop and wait for a sweep in progress to finish (so the store can close after it)."""
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        interval_s = self.manager.expiry_check_interval_ms / 1000
        while not self._stopped.wait(interval_s):
            try:
                removed = self.manager.expire_tokens()
            except Exception:  # a failed sweep (e.g. a locked state file) is retried next time
                log.exception("the delegation-token expiry sweep failed")
                continue
            if removed:
                log.info("removed %d expired delegation tokens", len(removed))
