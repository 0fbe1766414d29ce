"""The ops the `cpu` provider claims, with the element types and attribute limits its kernels cover."""

from __future__ import annotations

from ..capability import OpClaim

CLAIMS: list[OpClaim] = []
