"""The dialog that asks what a PyTorch network file does not record (its data, and for a
state_dict its activation), and the file filter of the tabs' load dialogs (gui/panels/inspector.py
shows them on the minima tab; the toolkit tab uses them too).
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
)

from engine.core.mlp import ACTIVATIONS

NETWORK_FILES = (
    "Networks (*.npz *.pt *.pth *.pt2);;The app's networks (*.npz);;PyTorch state_dict (*.pt *.pth);;"
    "torch.export (*.pt2)"
)


class TorchFileDialog(QDialog):
    """What a PyTorch file does not record: the data file, and for a state_dict the activation."""

    def __init__(self, path: str, parent=None, hand_over_relu: bool = False):
        """``hand_over_relu``: offer ReLU and leaky ReLU too, for the topology tab to open."""
        super().__init__(parent)
        self.setWindowTitle("Load a PyTorch network")
        self._exported = path.lower().endswith(".pt2")
        self.activation = QComboBox()
        for name in ACTIVATIONS:  # what engine.core.mlp computes
            self.activation.addItem(name, name)
        if hand_over_relu:  # paper B's constructions need a smooth σ; a ReLU net is paper A's
            self.activation.addItem("ReLU (opens on the topology tab)", "relu")
            self.activation.addItem("leaky ReLU (opens on the topology tab)", "leaky_relu")
        self.data = QLineEdit()
        self.data.setPlaceholderText("data.npz (X, Y) or data.csv (last column y)")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        data_row = QHBoxLayout()
        data_row.addWidget(self.data)
        data_row.addWidget(browse)
        form = QFormLayout(self)
        form.addRow(QLabel(path))
        if not self._exported:  # an exported graph names its activation itself
            form.addRow("activation", self.activation)
        form.addRow("data", data_row)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def choice(self) -> tuple[str, str]:
        """(activation, data path) as the loaders take them: "" for what the file records itself."""
        return ("" if self._exported else self.activation.currentData()), self.data.text()

    def _browse(self):
        path, _ = QFileDialog.getOpenFileName(self, "Data", "", "Data (*.npz *.csv)")
        if path:
            self.data.setText(path)
