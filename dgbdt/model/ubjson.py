"""UBJSON (Universal Binary JSON, draft 12), the binary form of XGBoost's model files (``.ubj``).

``dumps`` writes a JSON-like document (dict, list, str, int, float, bool, None) as UBJSON:
objects ``{`` (keys as a length and UTF-8 bytes) and arrays ``[`` in their plain form, integers
as int64 ``L``, floats as float32 ``d`` (an XGBoost model's numbers are float32), strings ``S``.
``loads`` reads any draft-12 document, the optimized containers XGBoost writes (``$`` a type,
``#`` a count: its float arrays are ``[$d#L`` then raw big-endian float32) included. Both are
big-endian, as the format says.
"""
from __future__ import annotations

import struct

import numpy as np

_INT = {b"i": ">b", b"U": ">B", b"I": ">h", b"l": ">i", b"L": ">q"}
_FLOAT = {b"d": ">f", b"D": ">d"}
_SIZE = {b"i": 1, b"U": 1, b"I": 2, b"l": 4, b"L": 8, b"d": 4, b"D": 8, b"C": 1}


class UBJSONError(ValueError):
    """Bytes that are not a UBJSON document."""


def dumps(obj) -> bytes:
    out: list[bytes] = []
    _write(obj, out)
    return b"".join(out)


def _length(n: int, out: list) -> None:
    out.append(b"L" + struct.pack(">q", n))


def _write(obj, out: list) -> None:
    if obj is None:
        out.append(b"Z")
    elif isinstance(obj, (bool, np.bool_)):
        out.append(b"T" if obj else b"F")
    elif isinstance(obj, (int, np.integer)):
        out.append(b"L" + struct.pack(">q", int(obj)))
    elif isinstance(obj, (float, np.floating)):
        out.append(b"d" + struct.pack(">f", float(obj)))
    elif isinstance(obj, str):
        data = obj.encode("utf-8")
        out.append(b"S")
        _length(len(data), out)
        out.append(data)
    elif isinstance(obj, dict):
        out.append(b"{")
        for k, v in obj.items():
            key = str(k).encode("utf-8")
            _length(len(key), out)
            out.append(key)
            _write(v, out)
        out.append(b"}")
    elif isinstance(obj, (list, tuple)):
        out.append(b"[")
        for v in obj:
            _write(v, out)
        out.append(b"]")
    else:
        raise TypeError(f"UBJSON cannot hold a {type(obj).__name__}")


def loads(data: bytes):
    reader = _Reader(bytes(data))
    out = reader.value(reader.take(1))
    if reader.at != len(reader.data):
        raise UBJSONError(f"UBJSON: {len(reader.data) - reader.at} bytes after the document")
    return out


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.at = data, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.data):
            raise UBJSONError("UBJSON: the document ends early")
        b = self.data[self.at:self.at + n]
        self.at += n
        return b

    def count(self) -> int:
        marker = self.take(1)
        if marker not in _INT:
            raise UBJSONError(f"UBJSON: a length must be an integer, got marker {marker!r}")
        n = struct.unpack(_INT[marker], self.take(_SIZE[marker]))[0]
        if n < 0:
            raise UBJSONError("UBJSON: a negative length")
        return n

    def string(self) -> str:
        return self.take(self.count()).decode("utf-8")

    def value(self, marker: bytes):
        if marker in _INT:
            return int(struct.unpack(_INT[marker], self.take(_SIZE[marker]))[0])
        if marker in _FLOAT:
            return float(struct.unpack(_FLOAT[marker], self.take(_SIZE[marker]))[0])
        if marker == b"S" or marker == b"H":
            return self.string()
        if marker == b"C":
            return self.take(1).decode("utf-8")
        if marker in (b"T", b"F", b"Z"):
            return {b"T": True, b"F": False, b"Z": None}[marker]
        if marker == b"[":
            return self.container(b"]", lambda m: self.value(m))
        if marker == b"{":
            return dict(self.container(b"}", lambda m: (self.key(m), self.value(self.take(1)))))
        raise UBJSONError(f"UBJSON: unknown marker {marker!r} at byte {self.at - 1}")

    def key(self, first: bytes) -> str:
        """An object's key: its length (whose marker is ``first``) and bytes."""
        self.at -= 1
        return self.string()

    def container(self, end: bytes, item):
        """The items of an array or object, in the plain or the optimized form."""
        kind = n = None
        if self.data[self.at:self.at + 1] == b"$":
            self.at += 1
            kind = self.take(1)
        if self.data[self.at:self.at + 1] == b"#":
            self.at += 1
            n = self.count()
        elif kind is not None:
            raise UBJSONError("UBJSON: a typed container without a count")
        if n is None:
            out = []
            while True:
                m = self.take(1)
                if m == end:
                    return out
                out.append(item(m))
        if kind is not None and end == b"]" and (kind in _INT or kind in _FLOAT):
            fmt = (_INT.get(kind) or _FLOAT[kind])[1:]
            raw = self.take(n * _SIZE[kind])
            return np.frombuffer(raw, dtype=">" + fmt).astype(fmt).tolist()
        if kind is not None and end == b"}":
            return [(self.string(), self.value(kind)) for _ in range(n)]
        if kind is not None:
            return [self.value(kind) for _ in range(n)]
        if end == b"}":
            return [(self.string(), self.value(self.take(1))) for _ in range(n)]
        return [self.value(self.take(1)) for _ in range(n)]
