"""A fingerprint of an aten FX graph, for reusing a lowering verdict within one process.

Two graphs with the same key lower the same way: the key covers the graph's code (ops,
arguments, scalar constants, output structure), the shape and dtype of every node's value
(input metas and everything derived from them, which is what Torch-MLIR types the import
with), the contents of tensor constants the graph reads with ``get_attr``, and the name the
lowered function gets. Library versions and the profile need no place in it: a process
runs one of each.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Any, Generic, TypeVar

import torch

V = TypeVar("V")


def graph_key(gm: torch.fx.GraphModule, name: str) -> str | None:
    """Hex digest identifying ``gm`` (as lowered under ``name``); ``None`` when a constant
    of the graph has no readable contents (then the graph is not to be reused)."""
    digest = hashlib.sha256(name.encode())
    digest.update(gm.code.encode())
    for node in gm.graph.nodes:
        digest.update(f"|{node.name}:{_meta(node.meta.get('val'))}".encode())
        if node.op == "get_attr" and not _update_constant(digest, gm, str(node.target)):
            return None
    return digest.hexdigest()


def _meta(val: Any) -> str:
    """Shape and dtype of a node's value (tensors, nested in lists and tuples), else its repr."""
    if isinstance(val, torch.Tensor):
        return f"T{tuple(val.shape)}{val.dtype}"
    if isinstance(val, (list, tuple)):
        return "(" + ",".join(_meta(v) for v in val) + ")"
    return repr(val)


def _update_constant(digest: Any, gm: torch.fx.GraphModule, target: str) -> bool:
    """Add a ``get_attr`` value's contents to the digest; False when they are unreadable."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    value: Any = gm
    for part in target.split("."):
        value = getattr(value, part, None)
    if not isinstance(value, torch.Tensor):
        digest.update(repr(value).encode())
        return True
    if isinstance(value, FakeTensor) or value.is_meta or value.layout != torch.strided:
        return False
    # Compilers run inside AOT's fake mode: read the real constant outside it.
    with unset_fake_temporarily(), torch.no_grad():
        data = value.detach().to("cpu").contiguous().reshape(-1).view(torch.uint8)
        digest.update(f"{tuple(value.shape)}{value.dtype}".encode())
        digest.update(data.numpy().tobytes())
    return True


class LRU(Generic[V]):
    """A small least-recently-used map (a long sweep must not keep every model's modules)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, V] = OrderedDict()

    def get(self, key: str) -> V | None:
        """The value stored under ``key`` (now the most recent), or ``None``."""
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: str, value: V) -> None:
        """Store ``value``, dropping the least recently used entry past ``size``."""
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)

    def clear(self) -> None:
        """Forget everything."""
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)
