"""Paper B's inspector on a network of one's own, end to end, as a new user walks it (issue #28):
a torch state_dict and its CSV in through File ▸ Load network, Find critical point, a split offered
and made, λ moved, Export, the export loaded again, the session saved and continued in a fresh
window. Every number the window shows is held to ``main.py inspect``'s JSON for the same file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from PySide6.QtWidgets import QFileDialog

from engine.io import netfile

from ..conftest import save_screenshot, wait_until_idle

ROOT = Path(__file__).resolve().parents[3]
QUICK = {"slices": {"K": 200, "P": 31}, "path": {"points": 5}, "plane": {"points": 11}}


def inspect_json(*argv) -> dict:
    """``main.py inspect``'s JSON, run as a user runs it."""
    done = subprocess.run(
        [sys.executable, "main.py", "inspect", *map(str, argv)], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def train_a_network(folder: Path) -> tuple[Path, Path]:
    """A 2—6—6—1 sigmoid nn.Sequential trained briefly (Adam, 200 steps): far from critical."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (20, 2))
    y = np.sin(X[:, 0]) * np.cos(X[:, 1])
    net = nn.Sequential(nn.Linear(2, 6), nn.Sigmoid(), nn.Linear(6, 6), nn.Sigmoid(), nn.Linear(6, 1)).double()
    opt = torch.optim.Adam(net.parameters(), lr=0.02)
    Xt, yt = torch.tensor(X), torch.tensor(y)[:, None]
    for _ in range(200):
        opt.zero_grad()
        ((net(Xt) - yt) ** 2).sum().backward()
        opt.step()
    torch.save(net.state_dict(), folder / "net.pt")
    np.savetxt(folder / "data.csv", np.column_stack([X, y]), delimiter=",", header="x1,x2,y", comments="")
    return folder / "net.pt", folder / "data.csv"


def menu_action(window, text: str):
    from PySide6.QtGui import QAction

    (action,) = [a for a in window.findChildren(QAction) if a.text().replace("&", "").startswith(text)]
    return action


def load_through_the_menu(window, qtbot, monkeypatch, path: Path, data: Path | None = None):
    """File ▸ Load network, answering the file dialog and (for a state_dict) the torch dialog."""
    from gui.panels.inspector import TorchFileDialog

    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (str(path), "")))

    def answer(dialog):
        assert dialog.activation.currentData() == "sigmoid"
        dialog.data.setText(str(data))
        return 1

    monkeypatch.setattr(TorchFileDialog, "exec", answer)
    menu_action(window, "Load network").trigger()
    wait_until_idle(qtbot, window, timeout_ms=240000)


def cell(table, row: int, column: int) -> str:
    return table.item(row, column).text()


def g3(x: float) -> str:
    return f"{x:.3g}"


def check_against(ws, report: dict, loss_kind: str | None = None):
    """The steps table's last row, the per-neuron and split tables and the λ box against the JSON."""
    steps, rows = ws.inspector.steps, ws.shown["steps"]["rows"]
    last = steps.rowCount() - 1
    assert cell(steps, last, 0) == "—".join(map(str, report["widths"]))
    assert cell(steps, last, 2) == g3(report["loss"]) and cell(steps, last, 3) == g3(report["grad_norm"])
    assert cell(steps, last, 4) == g3(report["hessian"]["min"]) and cell(steps, last, 5) == str(
        report["hessian"]["n_negative"]
    )
    if "split" not in report:  # a split's row carries the split's verdict (Theorem 9), checked below
        assert rows[-1]["verdict"] == report["critical_point"]
    split = ws.inspector.split.table
    assert split.rowCount() == len(report["neurons"])  # every neuron is offered, covered or not
    for i, n in enumerate(report["neurons"]):
        assert (cell(split, i, 0), cell(split, i, 1)) == (str(n["layer"]), str(n["neuron"]))
        assert cell(split, i, 2) == n["B"] and cell(split, i, 3) == g3(n["D_norm"])
        reasons = n["outside_theorem_9"]
        assert cell(split, i, 4) == ("outside: " + "; ".join(reasons) if reasons else "covers it")
        assert split.cellWidget(i, 5).text() == "Split" and split.cellWidget(i, 5).isEnabled()
    if loss_kind is not None:
        box = ws.inspector.hypotheses
        box.loss.setCurrentIndex(box.loss.findData(loss_kind))
        assert box.verdict == report["under_loss"]["verdict"]
        for h in report["under_loss"]["hypotheses"]:
            assert ("✓ " if h["holds"] else "✗ ") + h["name"] in box.text.text()


def check_neurons_table(ws, report: dict):
    """The per-neuron table (the small network's neurons) against a JSON of that network."""
    table = ws.inspector.neurons
    assert table.rowCount() == len(report["neurons"])
    for i, n in enumerate(report["neurons"]):
        assert (cell(table, i, 0), cell(table, i, 1)) == (str(n["layer"]), str(n["neuron"]))
        assert cell(table, i, 2) == n["B"] and cell(table, i, 3) == g3(n["D_norm"])
        assert cell(table, i, 4) == ", ".join(g3(e) for e in n["B_eigs"])


def test_inspector_walk_on_a_torch_network(window, qtbot, tmp_path, monkeypatch):
    from gui.main_window import MainWindow
    from gui.presets import apply_values

    pt, csv = train_a_network(tmp_path)
    window.show_workspace("minima")
    ws = window.workspaces["minima"]
    apply_values(ws.parameters, QUICK)

    # 1. Loaded off any critical point: called so everywhere, every neuron offered with its reason.
    load_through_the_menu(window, qtbot, monkeypatch, pt, csv)
    assert not window.message_bar.text, window.message_bar.text
    loaded = inspect_json(pt, "--activation", "sigmoid", "--data", csv, "--loss", "mean")
    assert loaded["critical_point"] == "not a critical point"
    check_against(ws, loaded, "mean")
    check_neurons_table(ws, loaded)
    assert ws.slice_min.getPlotItem().titleLabel.text.startswith("(a) at the network (not critical)")
    assert all("not a critical point" in n["outside_theorem_9"][0] for n in loaded["neurons"])

    # 2. Find critical point: it reaches the tooltip's tolerance, and says so with how it got there.
    ws.inspector.critical_button.click()
    wait_until_idle(qtbot, window, timeout_ms=240000)
    search = ws.figure.moved
    assert search.reached and "Critical point found" in window.message_bar.text
    assert f"‖∇L‖ = {search.grad_norm:.2e}" in window.message_bar.text
    assert ws.inspector.critical_button.text() == "Find critical point"
    base = tmp_path / "critical.npz"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(base), "")))
    ws.inspector.export_button.click()
    critical = inspect_json(base, "--loss", "cross-entropy")
    assert critical["grad_norm"] < 1e-8 and critical["critical_point"] != "not a critical point"
    check_against(ws, critical, "cross-entropy")
    assert critical["under_loss"]["verdict"] == "conditions not met"  # cross-entropy: no theorem of paper B speaks

    # 3. A split offered and made (layer 1, neuron 1 as the window and --split count), then λ moved.
    split_json = inspect_json(base, "--split", "1,1", "--lambda", "0.5", "--out", tmp_path / "cli_split.npz")
    ws.inspector.split.lam.setValue(0.5)
    ws.inspector.split.button(1, 0).click()
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert not window.message_bar.text, window.message_bar.text
    check_against(ws, split_json)
    box = ws.inspector.lam
    assert box.title() == f"λ of split layer 1, neuron 1 → copy {split_json['split']['copy']}"
    assert box.verdict.startswith(split_json["split"]["verdict"])
    assert (
        ws.inspector.steps.item(ws.inspector.steps.rowCount() - 1, 1)
        .toolTip()
        .startswith("split neuron 1 of layer 1 (λ=0.5)")
    )
    moved = inspect_json(base, "--split", "1,1", "--lambda", "1.5", "--out", tmp_path / "cli_moved.npz")
    box.set_value(1.5, emit=True)
    qtbot.waitUntil(lambda: not ws.controller.lane_busy("probe") and "λ = 1.5" in box.hmin_label.text(), timeout=60000)
    wait_until_idle(qtbot, window, timeout_ms=240000)
    assert box.verdict.startswith(moved["split"]["verdict"])
    assert "slider's λ = 1.5" in ws.shown["spectrum"]["caption"]
    assert box.loss_label.text() == f"loss L = {moved['loss']:.10g}"
    assert box.hmin_label.text().startswith(f"λ_min(H) = {moved['hessian']['min']:.3e}")

    # 4. Export: the file is the command line's split, weights and history alike.
    exported = tmp_path / "split.npz"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (str(exported), "")))
    ws.inspector.export_button.click()
    ours, theirs = netfile.load_network(exported), netfile.load_network(tmp_path / "cli_split.npz")
    assert np.array_equal(ours.params, theirs.params) and ours.history.splits == theirs.history.splits

    # 5. Loaded again, λ opens where the file left it (0.5), and the spectrum's caption says so.
    load_through_the_menu(window, qtbot, monkeypatch, exported)
    assert not window.message_bar.text, window.message_bar.text
    qtbot.waitUntil(lambda: not ws.controller.lane_busy("probe"), timeout=60000)
    assert box.exact == 0.5 and box.value() == 0.5 and box.slider.isEnabled()
    assert box.verdict.startswith(split_json["split"]["verdict"])
    assert "λ = 0.5" in ws.shown["spectrum"]["caption"]
    check_against(ws, split_json)
    save_screenshot(window, "inspector-walk-reloaded")

    # 6. Saved and opened in a fresh window: the slider, export, find critical point and undo work.
    session = tmp_path / "walk.lens"
    window.save_session(str(session))
    fresh = MainWindow()
    fresh.resize(1600, 960)
    fresh.show()
    qtbot.waitExposed(fresh)
    try:
        fresh.open_session(str(session))
        again = fresh.workspaces["minima"]
        assert "Opened session" in fresh.message_bar.text
        qtbot.waitUntil(lambda: again.figure is not None, timeout=240000)  # its network is live again
        lam_box = again.inspector.lam
        assert lam_box.slider.isEnabled() and lam_box.title() == box.title() and lam_box.exact == 0.5
        assert again.inspector.export_button.isEnabled() and again.inspector.critical_button.isEnabled()
        assert again.inspector.split.undo.isEnabled()
        lam_box.set_value(1.5, emit=True)
        qtbot.waitUntil(
            lambda: not again.controller.lane_busy("probe") and "λ = 1.5" in lam_box.hmin_label.text(), timeout=60000
        )
        wait_until_idle(qtbot, fresh, timeout_ms=240000)
        assert lam_box.verdict.startswith(moved["split"]["verdict"])
        again.inspector.split.undo.click()
        wait_until_idle(qtbot, fresh, timeout_ms=240000)
        assert again.figure.construction.arch.widths == tuple(critical["widths"])
        check_against(again, critical)
    finally:
        fresh.controller.discard()
        qtbot.waitUntil(lambda: not fresh.computing, timeout=120000)
        fresh.close()
        fresh.deleteLater()
