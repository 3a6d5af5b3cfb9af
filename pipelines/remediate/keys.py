"""The approval key: an HMAC key outside the warehouse that signs approvals and chains remediation_log.

Whoever can write the warehouse can insert rows, so a row proves nothing by itself; a signature made with
this key does. The key file is `$WASTEWATCH_APPROVAL_KEY` if set, else `.wastewatch/approval.key` in the
config file's folder, created 0600 (its folder 0700) by `init` or the first approval and never printed.
It holds one key a line, `<key id> <hex secret>`, the current key first; `remediate key rotate` puts a new
key on top and keeps the old ones below, so the log they signed stays verifiable (docs/remediation.md).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path

from pipelines.config import Config

KEY_ENV = "WASTEWATCH_APPROVAL_KEY"
KEY_BYTES = 32


class ApprovalKeyError(Exception):
    """The key file cannot be used: missing where one is needed, unreadable, malformed or too open."""


@dataclass(frozen=True)
class Keyring:
    path: Path
    current: str  # the id of the key that signs from now on
    keys: dict[str, bytes]  # every key the file keeps, by id

    def sign(self, message: str, key_id: str | None = None) -> str:
        return hmac.new(self.keys[key_id or self.current], message.encode(), hashlib.sha256).hexdigest()

    def valid(self, message: str, signature: str | None, key_id: str | None) -> bool:
        if not signature or key_id not in self.keys:
            return False
        return hmac.compare_digest(self.sign(message, key_id), signature)


def key_path(config: Config) -> Path:
    given = os.environ.get(KEY_ENV)
    if given:
        return Path(given).expanduser()
    return config.base_dir / ".wastewatch" / "approval.key"


def _key_id(secret: bytes) -> str:
    return hashlib.sha256(b"wastewatch approval key id|" + secret).hexdigest()[:12]


def _parse(path: Path) -> Keyring:
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ApprovalKeyError(
            f"{path}: the approval key is readable by others (mode {mode & 0o777:o}): chmod 600 it"
        )
    keys: dict[str, bytes] = {}
    for number, line in enumerate(path.read_text(encoding="ascii").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            secret = bytes.fromhex(parts[1]) if len(parts) == 2 else b""
        except ValueError:
            secret = b""
        if len(secret) < 16 or _key_id(secret) != parts[0]:
            raise ApprovalKeyError(f"{path}:{number}: not an approval key line (`<id> <hex secret>`)")
        keys[parts[0]] = secret
    if not keys:
        raise ApprovalKeyError(f"{path}: holds no approval key")
    return Keyring(path, next(iter(keys)), keys)


def load_key(config: Config) -> Keyring | None:
    """The keyring, or None when there is no key file yet."""
    path = key_path(config)
    if not path.exists():
        return None
    try:
        return _parse(path)
    except (OSError, UnicodeDecodeError) as exc:
        raise ApprovalKeyError(f"{path}: cannot read the approval key: {exc.__class__.__name__}") from None


def _write(path: Path, keys: dict[str, bytes], replace: bool) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    text = "".join(f"{k} {v.hex()}\n" for k, v in keys.items())
    tmp = path.with_name(path.name + f".{os.getpid()}.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    if replace:
        os.replace(tmp, path)
    else:
        try:
            os.link(tmp, path)  # fails if another process created the key meanwhile
        finally:
            tmp.unlink()


def ensure_key(config: Config) -> tuple[Keyring, bool]:
    """The keyring, creating the key file when there is none; and whether it was created just now."""
    found = load_key(config)
    if found is not None:
        return found, False
    secret = secrets.token_bytes(KEY_BYTES)
    path = key_path(config)
    try:
        _write(path, {_key_id(secret): secret}, replace=False)
    except FileExistsError:
        ring = load_key(config)
        assert ring is not None
        return ring, False
    ring = load_key(config)
    assert ring is not None
    return ring, True


def rotate_key(config: Config) -> tuple[Keyring, str]:
    """A new current key on top of the file, the old ones kept below; the new ring and the old key's id."""
    ring = load_key(config)
    if ring is None:
        raise ApprovalKeyError(
            f"{key_path(config)}: no approval key to rotate (the first approval creates one)"
        )
    secret = secrets.token_bytes(KEY_BYTES)
    _write(ring.path, {_key_id(secret): secret, **ring.keys}, replace=True)
    new = load_key(config)
    assert new is not None
    return new, ring.current
