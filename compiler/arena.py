"""Static memory planning: liveness-based offsets in one arena, with dead buffers reused and reshape outputs
sharing their input's buffer."""

from __future__ import annotations

from edgepack.runtime.native.epk import ARENA, ARENA_ALIGN, Op, Tensor


def _root(parent: dict[int, int], t: int) -> int:
    while parent.get(t, t) != t:
        t = parent[t]
    return t


def plan_arena(tensors: list[Tensor], ops: list[Op], inputs: list[int], outputs: list[int],
               aliases: dict[int, int], open_ops: int = 0) -> int:
    """Sets `offset` on every arena tensor and returns the arena size. `aliases` maps a tensor to the one whose
    buffer it shares (a reshape output to its input). Times: 0 for model inputs, op index + 1 for an op, len(ops)
    + 1 for model outputs; two buffers whose [first write, last use] intervals meet never overlap. What the first
    `open_ops` ops write (once, when a session opens) lives from 0 to len(ops) + 1, apart from every other buffer."""
    parent = {t: s for t, s in aliases.items()}
    first: dict[int, int] = {}
    last: dict[int, int] = {}

    def touch(t: int, time: int) -> None:
        r = _root(parent, t)
        first[r] = min(first.get(r, time), time)
        last[r] = max(last.get(r, time), time)

    for t in inputs:
        touch(t, 0)
    for index, op in enumerate(ops):
        for t in [*op.inputs, *op.outputs]:
            if t is not None and tensors[t].location == ARENA:
                touch(t, index + 1)
    for t in outputs:
        touch(t, len(ops) + 1)
    for op in ops[:open_ops]:
        for t in op.outputs:
            touch(t, 0)
            touch(t, len(ops) + 1)
    for t, tensor in enumerate(tensors):
        if tensor.location == ARENA and _root(parent, t) not in first:
            touch(t, len(ops) + 2)
    roots = sorted(first, key=lambda r: -tensors[r].nbytes)
    placed: list[tuple[int, int, int, int]] = []  # offset, end, first, last
    arena = 0
    for r in roots:
        size = tensors[r].nbytes
        busy = sorted((o, e) for o, e, f, la in placed if f <= last[r] and first[r] <= la)
        offset = 0
        for o, e in busy:
            if offset + size <= o:
                break
            offset = max(offset, (e + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN)
        placed.append((offset, offset + size, first[r], last[r]))
        tensors[r].offset = offset
        arena = max(arena, offset + size)
    for t, tensor in enumerate(tensors):
        if tensor.location == ARENA and _root(parent, t) != t:
            tensor.offset = tensors[_root(parent, t)].offset
    return (arena + ARENA_ALIGN - 1) // ARENA_ALIGN * ARENA_ALIGN
