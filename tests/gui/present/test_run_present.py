"""gui.present.run: a followed run's captions and colours, made without Qt from the engine's
state, and the presenting job that maps every partial and keeps what did not change."""

import numpy as np

from engine.core.progress import Progress, run_to_completion
from engine.runs.follow import FINISHED, FOLLOWING, LayerDrift, PCAPath, RunView
from gui.present.run import PATH_STOPS, STATUS_COLORS, present, presented


def view(status=FOLLOWING, steps=5, pca=None, revision=1):
    s = np.arange(steps)
    layer = LayerDrift(
        name="0.weight",
        law="rescaling",
        steps=np.array([0, 2, 4]),
        low=np.array([0, -0.1, -0.2]),
        high=np.array([0, 0.1, 0.3]),
        q_low=np.zeros(3),
        q_high=np.zeros(3),
        scale=1.5,
        top=((7, 0.3), (2, -0.2)),
        locked=(4,),
        units=8,
    )
    return RunView(
        folder="/x/run",
        status=status,
        line=f"run: {status}",
        steps=s,
        loss=1.0 / (1 + s),
        lr=np.full(steps, 0.1),
        sharpness_steps=np.array([0, 4]),
        sharpness=np.array([5.0, 19.0]),
        sharpness_error=np.zeros(2),
        edge=np.array([20.0, 20.0]),
        layers=(layer,),
        invariants_note="",
        pca=pca,
        pca_note="the PCA plane needs 3 checkpoints; the run has 2",
        checkpoint_steps=np.array([0, 2]),
        problems=(),
        revision=revision,
    )


def test_the_captions_state_the_numbers():
    p = present(view())
    assert p.status_color == STATUS_COLORS[FOLLOWING] and "following" in p.status_text
    assert "step 4" in p.loss_note and "L = 0.2" in p.loss_note and "η = 0.1" in p.loss_note
    assert "λ<sub>max</sub> = 19" in p.sharpness_note and "2/η = 20" in p.sharpness_note and "0.950" in p.sharpness_note
    assert "#7 +0.3" in p.drift_key[0] and "#2 -0.2" in p.drift_key[0] and "rescaling" in p.drift_key[0]
    assert p.locked_text.endswith("locked units: 0.weight #4")
    assert p.path_colors is None and "needs 3 checkpoints" in p.path_note


def test_the_path_is_coloured_from_its_first_stop_to_its_last():
    pca = PCAPath(np.array([0, 10, 20, 40]), np.zeros((4, 2)), np.array([0.7, 0.2]))
    p = present(view(pca=pca))
    np.testing.assert_array_equal(p.path_colors[0, :3], PATH_STOPS[0])
    np.testing.assert_array_equal(p.path_colors[-1, :3], PATH_STOPS[-1])
    assert (p.path_colors[:, 3] == 255).all() and "PC1 70.0 %" in p.path_note
    # the same plane keeps its colours (the view sees no new object); a new plane gets new ones
    again = present(view(pca=pca, revision=2), p)
    assert again.path_colors is p.path_colors
    other = PCAPath(np.array([0, 10, 20]), np.zeros((3, 2)), np.array([0.7, 0.2]))
    assert present(view(pca=other), p).path_colors is not p.path_colors


def test_the_presenting_job_maps_partials_and_result():
    states = [view(revision=1), view(revision=2, steps=6), view(FINISHED, steps=6, revision=3)]

    def job():
        yield Progress(0.1, "waiting")
        for s in states[:-1]:
            yield Progress(0.5, s.line, s)
        return states[-1]

    seen = []
    result = run_to_completion(presented(job()), seen.append)
    assert seen[0].partial is None
    assert [u.partial.run for u in seen[1:]] == states[:-1]
    assert result.run is states[-1] and result.status_color == STATUS_COLORS[FINISHED]
