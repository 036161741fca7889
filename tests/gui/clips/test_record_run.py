"""``record --run``: the clip of a recorded run's PCA path as it grew. Each frame's path shows
exactly the checkpoints recorded up to the frame's step, in their colours and where the data puts
them on the finished run's plane; bad folders are one line and exit status 2."""

import imageio.v3 as iio
import numpy as np
import pytest
import torch
from torch import nn

import landscape_lens as ll
from engine.core.progress import run_to_completion
from engine.runs.path_growth import grown_run_job
from gui import headless
from gui.clips.run_clip import PATH_WIDTH, TITLE_HEIGHT, clip_steps
from gui.present.run import path_colors
from landscape_lens.cli import main as cli

SIZE, FPS, SECONDS = (1280, 720), 5, 2.0  # one logical pixel per frame pixel: symbols' colours exact


def write_run(folder, steps=60, every=5):
    """Gradient descent on a small regression with tanh units, recorded as a user's loop would."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 6), nn.Tanh(), nn.Linear(6, 1))
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(32, 3, generator=g), torch.randn(32, 1, generator=g)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with ll.Recorder(folder, model, every=every, sharpness_every=2 * every, sharpness_data=(X, Y)) as rec:
        for _ in range(steps):
            loss = ((model(X) - Y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.step(loss=loss.item(), lr=0.1)


def drawn_checkpoints(frame: np.ndarray, colors: np.ndarray) -> dict[int, np.ndarray]:
    """{checkpoint: centroid (x, y) in pixels} of each checkpoint whose colour the path's cell shows."""
    w, h = SIZE
    cell = frame[round(TITLE_HEIGHT * h) :, : round(PATH_WIDTH * w), :3].astype(int)
    found = {}
    for j, color in enumerate(colors[:, :3].astype(int)):
        ys, xs = np.nonzero((cell == color).all(axis=2))
        if len(xs) >= 4:  # a symbol's inside, not a stray antialiased pixel
            found[j] = np.array([xs.mean(), ys.mean()])
    return found


def test_the_path_grows_checkpoint_by_checkpoint_as_recorded(qapp, tmp_path):
    write_run(tmp_path / "run")
    out = tmp_path / "frames"
    assert headless.record_run(str(tmp_path / "run"), str(out), SIZE, FPS, SECONDS, theme="light") == 0
    view = run_to_completion(grown_run_job(tmp_path / "run"))
    steps = clip_steps(view, FPS, SECONDS)
    files = sorted(out.glob("frame_*.png"))
    assert len(files) == len(steps) == round(SECONDS * FPS) + 1
    colors = path_colors(view.pca.steps)  # each checkpoint's colour, by its step in the whole run
    assert len({tuple(c) for c in colors}) == len(colors)
    counts = []
    for file, step in zip(files, steps):
        drawn = drawn_checkpoints(iio.imread(file), colors)
        recorded = set(np.flatnonzero(view.pca.steps <= step).tolist())
        assert set(drawn) == recorded, f"step {step:g}"
        counts.append(len(drawn))
    assert counts[0] == 1 and counts[-1] == len(view.pca.steps)
    assert all(a <= b for a, b in zip(counts, counts[1:])) and len(set(counts)) > len(counts) // 2
    # where the last frame puts each checkpoint: the data's coordinates under one fixed axis
    # scaling (screen y runs down), the same for every frame
    final = drawn_checkpoints(iio.imread(files[-1]), colors)
    xy = view.pca.xy[sorted(final)]
    pixels = np.array([final[j] for j in sorted(final)])
    for axis, sign in ((0, 1), (1, -1)):
        slope, offset = np.polyfit(xy[:, axis], pixels[:, axis], 1)
        assert np.sign(slope) == sign
        assert np.abs(slope * xy[:, axis] + offset - pixels[:, axis]).max() < 1.5
    middle = drawn_checkpoints(iio.imread(files[len(files) // 2]), colors)
    for j, at in middle.items():
        np.testing.assert_allclose(at, final[j], atol=0.5)  # a checkpoint stays where it appeared


def test_bad_folders_are_one_line_and_status_2(tmp_path, capsys):
    (tmp_path / "plain").mkdir()
    torch.manual_seed(0)
    ll.Recorder(tmp_path / "empty", nn.Linear(2, 1), every=2).close()
    for folder, why in (("plain", "not a run folder"), ("empty", "no recorded step"), ("none", "no such run folder")):
        code = cli(["record", "--run", str(tmp_path / folder), "--out", str(tmp_path / "c.gif")])
        err = capsys.readouterr().err
        assert code == 2 and why in err and err.count("\n") == 1, err
    assert not (tmp_path / "c.gif").exists()


@pytest.mark.parametrize("extra", [["--preset", "fig3-free"], ["--orbit"], ["--steps", "5"]])
def test_record_run_takes_no_preset_options(tmp_path, capsys, extra):
    assert cli(["record", "--run", str(tmp_path), "--out", str(tmp_path / "c.gif"), *extra]) == 2
    assert "record --run films a recorded run; it takes no" in capsys.readouterr().err
