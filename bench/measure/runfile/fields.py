"""Typed parts of a run file that survive a round trip: `Fields`, the base of the fingerprint's
dataclasses.

A run file's objects gain keys over the harness's versions, and a reader must load every older
file. So `from_dict` is tolerant (a missing key takes its field's default; a key no field names,
or a value of a type its field cannot hold, is kept in `extra`), and `to_dict` gives back the keys
the object was read with, in their order, then any field set since (one made in memory: the fields
given a value other than their default): what was read is written again unchanged, so rewriting
a file loses nothing. The serialized names are also a mapping view
(`fp["gpu_name"]`, `fp.get(...)`, `in`) for callers not yet moved to attributes; code reads the
attributes.
"""
from __future__ import annotations

import dataclasses
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any, ClassVar


def plain(value: Any) -> Any:
    """`value` as JSON-ready data: a Fields object as its dict, lists and dicts copied."""
    if isinstance(value, Fields):
        return value.to_dict()
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


@dataclass(eq=False)
class Fields(MutableMapping):
    """A dataclass read from and written to a JSON object without loss (see the module's text).
    A subclass names the fields whose object is itself typed (NESTED) or a list of typed objects
    (LISTS)."""
    NESTED: ClassVar[dict[str, type[Fields]]] = {}
    LISTS: ClassVar[dict[str, type[Fields]]] = {}
    extra: dict = field(default_factory=dict, kw_only=True, repr=False)   # keys no field holds
    _order: list = field(default_factory=list, kw_only=True, init=False, repr=False)   # keys read or set

    def __post_init__(self) -> None:
        self._order = [name for name in self.names() if getattr(self, name) != self._default(name)]
        object.__setattr__(self, "_ready", True)    # from here on, a field set is a key written

    @classmethod
    def names(cls) -> list[str]:
        """The serialized keys that are fields, in declaration order."""
        return [f.name for f in dataclasses.fields(cls) if f.name not in ("extra", "_order")]

    @classmethod
    def from_dict(cls, data: Any):
        """The object of a JSON object (itself if already one): missing keys take defaults,
        keys it does not know and values its fields cannot hold go to `extra`."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise TypeError(f"{cls.__name__}: not an object: {data!r}"[:120])
        names = set(cls.names())
        kwargs, extra = {}, {}
        for key, value in data.items():
            if key in names and cls._fits(key, value):
                kwargs[key] = cls._typed(key, value)
            else:
                extra[key] = value
        obj = cls(**kwargs, extra=extra)
        obj._order = list(data)
        return obj

    @classmethod
    def _fits(cls, key: str, value: Any) -> bool:
        """A typed field holds only its JSON form (an object, a list); other values stay as read."""
        if key in cls.NESTED:
            return isinstance(value, dict)
        if key in cls.LISTS:
            return isinstance(value, list)
        return True

    @classmethod
    def _typed(cls, key: str, value: Any) -> Any:
        if key in cls.NESTED:
            return cls.NESTED[key].from_dict(value)
        if key in cls.LISTS:
            item_type = cls.LISTS[key]
            return [item_type.from_dict(item) if isinstance(item, dict) else item for item in value]
        return value

    def _default(self, name: str) -> Any:
        spec = self.__dataclass_fields__[name]
        if spec.default_factory is not dataclasses.MISSING:
            return spec.default_factory()
        return spec.default

    def _keys(self) -> list[str]:
        """The serialized keys: those read or set, in order, then fields changed in place (a nested
        object's), then new extras."""
        names = self.names()
        keys = [key for key in self._order if key in self.extra or key in names]
        seen = set(keys)
        keys += [name for name in names if name not in seen and getattr(self, name) != self._default(name)]
        seen.update(keys)
        return keys + [key for key in self.extra if key not in seen]

    def _value(self, key: str) -> Any:
        return self.extra[key] if key in self.extra else getattr(self, key)

    def to_dict(self) -> dict:
        """The JSON object: the keys read, as read, and every field set since."""
        return {key: plain(self._value(key)) for key in self._keys()}

    def full_dict(self) -> dict:
        """Every field, defaults too (as dataclasses.asdict), then the extras."""
        return {**{name: plain(getattr(self, name)) for name in self.names()}, **plain(self.extra)}

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get("_ready") and name in self.__dataclass_fields__ and name not in ("extra", "_order"):
            if name in self.extra:
                del self.extra[name]      # a value set now replaces one kept as read
            if name not in self._order:
                self._order.append(name)  # a field set is written
        super().__setattr__(name, value)

    # the mapping view, by serialized name
    def __getitem__(self, key: str) -> Any:
        if key not in self._keys():
            raise KeyError(key)
        return self._value(key)

    def __setitem__(self, key: str, value: Any) -> None:
        if key in self.names() and self._fits(key, value):
            setattr(self, key, self._typed(key, value))
        else:
            self.extra[key] = value
        if key not in self._order:
            self._order.append(key)

    def __delitem__(self, key: str) -> None:
        if key not in self._keys():
            raise KeyError(key)
        if key in self.extra:
            del self.extra[key]
        else:
            setattr(self, key, self._default(key))
        if key in self._order:
            self._order.remove(key)

    def __iter__(self):
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Fields, dict)):
            return self.to_dict() == plain(other)
        return NotImplemented

    __hash__ = None   # type: ignore[assignment]   # mutable
