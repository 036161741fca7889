"""Window-driven commands without a person at the keyboard: ``main.py screenshot``."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QEventLoop, QTimer

from engine.errors import EngineInputError


def open_window(size: tuple[int, int]):
    from .app import create_app
    from .main_window import MainWindow

    app = create_app()
    window = MainWindow()
    window.resize(*size)
    window.show()
    return app, window


def wait_until_idle(window, timeout_s: float = 600.0) -> None:
    """Spin the event loop until the window's job has finished (or the timeout passes)."""
    loop = QEventLoop()
    poll = QTimer(interval=50)
    poll.timeout.connect(lambda: None if window.runner.busy else loop.quit())
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    poll.start()
    loop.exec()
    poll.stop()


def settle(ms: int = 300) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def screenshot(preset: str, out: str, size: tuple[int, int], steps: Optional[int]) -> int:
    out_path = Path(out)
    if out_path.suffix.lower() != ".png":
        raise EngineInputError(f"--out {out} must name a .png file")
    app, window = open_window(size)
    settle()
    window.load_preset(preset, steps=steps)
    if window.message_bar.text:
        raise EngineInputError(window.message_bar.text)
    wait_until_idle(window)
    settle()
    out_path.parent.mkdir(parents=True, exist_ok=True)
    from .capture import grab_widget
    image = grab_widget(window)
    if image.width() != size[0] or image.height() != size[1]:
        image = image.scaled(*size)
    if not image.save(str(out_path)):
        raise EngineInputError(f"could not write {out_path}")
    window.close()
    print(f"wrote {out_path} ({image.width()}x{image.height()})")
    return 0
