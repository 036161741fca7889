"""A loss plane as a VTK structured grid (.vts) that ParaView opens, as Li et al. offer (their
h52vtp writes polydata; a structured grid keeps the N×N topology, so ParaView can contour it).

The grid is nα × nβ × 1 points with coordinates (α_i, β_j, L_ij): the surface itself, no Warp
filter needed. Point data ``loss`` (and ``log_loss``, log10 of max(L, tiny), which Li et al. also
offer for wide ranges) ride along. VTK orders points with the first index fastest: point
i + nα·j is (α_i, β_j). ASCII with 17 significant digits, so every float64 comes back exactly.
Plain XML, no VTK library: the format is the "VTK XML formats" section of the VTK file-format
document.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.core.errors import EngineInputError


def _ascii(values: np.ndarray, per_line: int) -> str:
    flat = np.asarray(values, float).reshape(-1, per_line)
    return "\n".join(" ".join(f"{v:.17g}" for v in row) for row in flat)


def write_vts(path, alpha, beta, loss, name: str = "loss") -> Path:
    """Write ``loss[i, j]`` at (α_i, β_j) as an ASCII StructuredGrid; returns the path."""
    alpha, beta, loss = (np.asarray(a, float) for a in (alpha, beta, loss))
    if loss.shape != (len(alpha), len(beta)):
        raise EngineInputError(f"loss has shape {loss.shape}; expected ({len(alpha)}, {len(beta)})")
    na, nb = loss.shape
    A, B = np.meshgrid(alpha, beta, indexing="ij")
    order = lambda a: a.T.ravel()  # first index fastest
    points = np.stack([order(A), order(B), order(loss)], 1)
    log_loss = np.log10(np.maximum(order(loss), np.finfo(float).tiny))
    extent = f"0 {na - 1} 0 {nb - 1} 0 0"
    text = f"""<?xml version="1.0"?>
<VTKFile type="StructuredGrid" version="0.1" byte_order="LittleEndian">
  <StructuredGrid WholeExtent="{extent}">
    <Piece Extent="{extent}">
      <PointData Scalars="{name}">
        <DataArray type="Float64" Name="{name}" format="ascii">
{_ascii(order(loss), 1)}
        </DataArray>
        <DataArray type="Float64" Name="log_{name}" format="ascii">
{_ascii(log_loss, 1)}
        </DataArray>
      </PointData>
      <Points>
        <DataArray type="Float64" NumberOfComponents="3" format="ascii">
{_ascii(points, 3)}
        </DataArray>
      </Points>
    </Piece>
  </StructuredGrid>
</VTKFile>
"""
    path = Path(path)
    path.write_text(text)
    return path
