"""A store whose values only this run's GMIs can have written.

Every value is signed (HMAC-SHA256 over key and value) with a per-run secret that reaches the
GMIs through their launcher, never the store, under a namespace derived from it; a reader
rejects a bad signature. Under torchrun the ``TCPStore`` is readable by anyone reaching its
port: the signature refuses forged values. torch's own keys can go under :attr:`namespace`
(``PrefixStore``), but torch reads them unsigned.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

from .store import Store

SECRET_ENV = "ISAACGYMENVS_GMI_RUN_SECRET"  # hex; set by the launcher, or by the user (torchrun)
_MAC_BYTES = 32


class StoreAuthError(RuntimeError):
    """A value in the store was not written by a GMI of this run."""


class SignedStore:
    """:class:`~.store.Store` over ``inner`` whose values carry an HMAC under ``secret``."""

    def __init__(self, inner: Store, secret: bytes):
        if len(secret) < 16:
            raise ValueError("the run secret must be at least 16 bytes")
        self.inner, self._secret = inner, secret
        self.namespace = "gmi-" + self._mac(b"namespace").hex()[:32] + "/"
        self._prefix = self.namespace + "v/"

    def _mac(self, *parts: bytes) -> bytes:
        mac = hmac.new(self._secret, digestmod=hashlib.sha256)
        for part in parts:
            mac.update(len(part).to_bytes(8, "little") + part)
        return mac.digest()

    def set(self, key: str, value: str | bytes) -> None:
        data = value.encode() if isinstance(value, str) else bytes(value)
        self.inner.set(self._prefix + key, self._mac(key.encode(), data) + data)

    def get(self, key: str) -> bytes:
        raw = bytes(self.inner.get(self._prefix + key))
        mac, data = raw[:_MAC_BYTES], raw[_MAC_BYTES:]
        if len(raw) < _MAC_BYTES or not hmac.compare_digest(mac, self._mac(key.encode(), data)):
            raise StoreAuthError(
                f"store key {key!r} was not written by a GMI of this run (bad signature)"
            )
        return data

    def set_timeout(self, timeout: timedelta) -> None:
        self.inner.set_timeout(timeout)


def secret_from_hex(text: str) -> bytes:
    """The run secret from its hex form (as in :data:`SECRET_ENV`); raises ValueError."""
    secret = bytes.fromhex(text.strip())
    if len(secret) < 16:
        raise ValueError(f"{SECRET_ENV} must hold at least 16 bytes (32 hex digits)")
    return secret
