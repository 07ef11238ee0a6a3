"""The decision key: the secret the servers sign decisions with and the workers check them with.

`AGENT_DECISION_KEY` (32 characters at least) on every server and worker; unset, a key file
made on first use with mode 0600: `AGENT_DECISION_KEY_FILE`, else
`$XDG_STATE_HOME/durable-agents/decision-key` (`~/.local/state/...`), so `make run` and
`agent serve` on one machine share one without setup. The key never enters a workflow's input,
history, logs or results: only an HMAC made with it does (`contracts.maker_signature`).

Changing the key makes later signatures made with the old one unverified (recorded as
self-declared); what runs already recorded stands.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from durable_agents.contracts.maker_signature import SignedMessage, signed_text

DECISION_KEY_ENV = "AGENT_DECISION_KEY"
DECISION_KEY_FILE_ENV = "AGENT_DECISION_KEY_FILE"
MIN_KEY_CHARS = 32
STATE_DIR = "durable-agents"
KEY_FILE_NAME = "decision-key"


class DecisionKeyError(RuntimeError):
    """No decision key can be had (a key too short, a key file that cannot be read or made);
    the message names the variable or the path, never a key."""


def key_file_path(env: Mapping[str, str] | None = None) -> Path:
    """Where the key file is: `AGENT_DECISION_KEY_FILE`, else under the user's state directory."""
    environ = os.environ if env is None else env
    named = environ.get(DECISION_KEY_FILE_ENV, "").strip()
    if named:
        return Path(named).expanduser()
    state = environ.get("XDG_STATE_HOME", "").strip()
    base = Path(state) if state else Path.home() / ".local" / "state"
    return base / STATE_DIR / KEY_FILE_NAME


def decision_key(env: Mapping[str, str] | None = None) -> bytes:
    """The decision key: `AGENT_DECISION_KEY`, else the key file's (made now if missing)."""
    environ = os.environ if env is None else env
    given = environ.get(DECISION_KEY_ENV, "").strip()
    if given:
        if len(given) < MIN_KEY_CHARS:
            raise DecisionKeyError(f"{DECISION_KEY_ENV} must have {MIN_KEY_CHARS} characters")
        return given.encode("utf-8")
    return _key_file(key_file_path(environ))


def _key_file(path: Path) -> bytes:
    """The key in `path`, made with a new random key (mode 0600) if the file does not exist."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # made before, or by another process just now
        else:
            with os.fdopen(descriptor, "w") as made:
                made.write(secrets.token_hex(32) + "\n")
        key = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise DecisionKeyError(f"the decision key file {path}: {error.strerror}") from None
    if len(key) < MIN_KEY_CHARS:  # (a file being written by another process this instant)
        raise DecisionKeyError(f"the decision key file {path} holds no key")
    return key.encode("utf-8")


def signature(key: bytes, message: SignedMessage) -> str:
    """The hex HMAC-SHA256 of `message` with `key`."""
    return hmac.new(key, signed_text(message), hashlib.sha256).hexdigest()


def signature_matches(key: bytes, message: SignedMessage, given: str) -> bool:
    """Whether `given` is `message`'s signature with `key` (compared in constant time)."""
    return hmac.compare_digest(signature(key, message), given)
