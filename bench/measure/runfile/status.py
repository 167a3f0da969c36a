"""A record's status: a kind and a reason, serialised as the text run files have always held
('ok', 'unsupported: …', 'failed: …', 'error: …', 'capture failed: …')."""
from __future__ import annotations

from dataclasses import dataclass

# kind -> the text that starts its serialised form
PREFIX = {"ok": "ok", "unsupported": "unsupported", "failed": "failed", "error": "error",
          "capture_failed": "capture failed"}


class Unsupported(Exception):
    """A variant this frontend/backend/GPU cannot run; the message says what it needs."""


@dataclass(frozen=True)
class Status:
    kind: str
    reason: str = ""

    def __post_init__(self):
        if self.kind not in PREFIX:
            raise ValueError(f"status kind {self.kind!r} not in {sorted(PREFIX)}")

    def __str__(self) -> str:
        head = PREFIX[self.kind]
        return f"{head}: {self.reason}" if self.reason else head

    @property
    def ok(self) -> bool:
        return self.kind == "ok"

    @classmethod
    def parse(cls, text: str) -> "Status":
        """Reads a serialised status back; text with no known prefix is an error carrying it whole."""
        text = text or ""
        for kind, head in PREFIX.items():
            if text == head:
                return cls(kind)
            if text.startswith(head + ":"):
                return cls(kind, text[len(head) + 1:].lstrip())
        return cls("error", text)

    @classmethod
    def of(cls, error: BaseException) -> "Status":
        """The status of a failure: Unsupported says what is missing; anything else is an error."""
        if isinstance(error, Unsupported):
            return cls("unsupported", str(error))
        return cls("error", f"{type(error).__name__}: {error}")


OK = Status("ok")


def unsupported(reason: str) -> Status:
    return Status("unsupported", reason)


def failed(reason: str) -> Status:
    return Status("failed", reason)


def error(reason: str) -> Status:
    return Status("error", reason)
