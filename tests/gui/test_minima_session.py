"""A minima preset's session draws the picture its run drew (issue #26: ≥ 99.5 % of pixels identical).
Before, the degenerate path's x range and the spectrum's dots depended on when their boxes were laid
out (98.5 % on nonattr-fig3): the path's eigenvalue box auto-ranged x against the loss's, and the
spectrum took a one-shot range at whatever size its page had."""

from .test_session_redraw import pixels, screenshot


def test_a_minima_session_redraws_its_shot(tmp_path):
    first, second, saved = (tmp_path / n for n in ("a.png", "b.png", "s.lens"))
    done = screenshot("--preset", "nonattr-shallow", "--out", str(first), "--save-session", str(saved))
    assert done.returncode == 0, done.stderr
    again = screenshot("--session", str(saved), "--out", str(second))
    assert again.returncode == 0, again.stderr
    a, b = pixels(first), pixels(second)
    assert a.shape == b.shape == (960, 1600, 3) and a.std() > 20  # a real picture at the default size
    same = (a == b).all(-1).mean()
    assert same >= 0.995, f"{100 * same:.2f} % of pixels identical"
