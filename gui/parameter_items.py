"""pyqtgraph's parameter items take a value without reconnecting their signals.

pyqtgraph 0.14's ``WidgetParameterItem.valueChanged`` runs whenever code sets a field (a
preset, a session, a run's values, an edit): it disconnects its widget's ``sigChanged`` and its
parameter's ``sigValueChanged`` from the item's own methods, sets the widget, and connects both
again. The item is not a QObject (a QTreeWidgetItem), and PySide6 6.11.3 makes a weak reference
to the receiver of every bound-method connection and never frees it on disconnect: two weak
references and ~220 bytes per value set, for the process's life (found counting the soak's
objects by type: weak references grew ~400 a minute; 200,000 pairs in a bare PySide script
grew RSS by 21 MB). Here a flag stands in for the disconnection: while the widget takes the
value, and the parameter the widget's coerced value back, neither slot hands it on again,
as the disconnected slots could not.
"""

from __future__ import annotations

from pyqtgraph import functions as fn
from pyqtgraph.parametertree.ParameterItem import ParameterItem
from pyqtgraph.parametertree.parameterTypes.basetypes import WidgetParameterItem


def _value_changed(self, param, val, force=False):
    if getattr(self, "_taking_value", False):  # pyqtgraph's disconnected slot: not called
        return
    ParameterItem.valueChanged(self, param, val)
    if force or not fn.eq(val, self.widget.value()):
        self._taking_value = True
        try:
            self.widget.setValue(val)
            self.param.setValue(self.widget.value())
        finally:
            self._taking_value = False
    self.updateDisplayLabel()  # always, as pyqtgraph does: the label even when values match
    self.updateDefaultBtn()


def _widget_value_changed(self):
    if not getattr(self, "_taking_value", False):
        self.param.setValue(self.widget.value())


def install() -> None:
    """Replace the two slots, before any parameter tree is built (a connection made earlier
    keeps calling the function it was made with)."""
    WidgetParameterItem.valueChanged = _value_changed
    WidgetParameterItem.widgetValueChanged = _widget_value_changed
