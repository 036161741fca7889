"""Generated bad inputs, part two: model archives, run folders and the API's arguments (issue #58).

The generators live in ``tests/bad_inputs`` (one module per kind of input). Every input is either
refused in one line (an ``EngineInputError``, a ``ValueError``, naming the file or the argument)
or read as what was saved; a pickle planted anywhere never runs (it would create a marker file);
no library warning is raised on the way. ``test_the_count`` counts every generated input, so that
the suite cannot quietly shrink.
"""

from __future__ import annotations

import copy
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.core.errors import EngineInputError
from tests.bad_inputs import api, archives, runs
from tests.models import crafted_archives, export_cnn, trained_cnn

EARLIER = 402  # the generated inputs of tests/test_bad_inputs.py (command line, networks, sessions, presets, panels)


def one_line(error: BaseException, *names: str) -> str:
    text = str(error)
    assert text and "\n" not in text and "Traceback" not in text, text
    for name in names:
        assert name in text, (name, text)
    return text


class Quiet(warnings.catch_warnings):
    """Records every warning raised inside it, to assert there were none."""

    def __init__(self):
        super().__init__(record=True)

    def __enter__(self):
        caught = super().__enter__()
        warnings.simplefilter("always")
        return caught


# ------------------------------------------------------------------------------ model archives
@pytest.fixture(scope="module")
def mlp_archive(tmp_path_factory):
    """A small exported MLP (.pt2), its data, and what each reader gives for it."""
    from engine.io.pt2 import load_exported_network
    from engine.io.pt2_program import read_exported_module

    folder = tmp_path_factory.mktemp("archives")
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1)).double()
    good = folder / "good.pt2"
    torch.export.save(torch.export.export(model, (torch.zeros(2, 3, dtype=torch.float64),)), good)
    data = folder / "data.npz"
    rng = np.random.default_rng(0)
    np.savez(data, X=rng.normal(size=(5, 3)), Y=rng.normal(size=5))
    state = list(read_exported_module(good).module.state_dict().items())
    return folder, good.read_bytes(), data, state, load_exported_network(good, data).params


def test_model_archives_are_refused_in_one_line_or_read_as_saved(mlp_archive):
    """Every generated archive, read by the graph reader (the API's and ``landscape``'s) and by the
    MLP reader (``inspect``'s): refused in one line naming the file, or read with the saved tensors
    in the saved order; then, through the API, one forward runs or is refused in one line. Only
    names that the archive changes consistently (graph and config alike) may differ."""
    from engine.io.pt2 import load_exported_network
    from engine.io.pt2_program import read_exported_module
    from landscape_lens.inputs import APIInputError, objective

    folder, raw, data, state, params = mlp_archive
    marker, bad = folder / "marker", folder / "bad.pt2"
    X, Y = torch.randn(5, 3, dtype=torch.float64), torch.randn(5, 1, dtype=torch.float64)
    failures, read = [], 0
    for name, make in archives.all_cases():
        bad.write_bytes(make(raw, marker))
        try:
            with Quiet() as caught:
                try:
                    got = list(read_exported_module(bad).module.state_dict().items())
                except EngineInputError as error:
                    one_line(error, "bad.pt2")
                else:
                    read += 1
                    if name.startswith("name-both-"):  # renamed alike in the graph and the config: read so
                        got, want = ([(tuple(t.shape), t.flatten().tolist()) for _, t in x] for x in (got, state))
                        got, want = sorted(got), sorted(want)
                        assert got == want
                    else:
                        assert [k for k, _ in got] == [k for k, _ in state], [k for k, _ in got]
                        assert all(torch.equal(a, b) for (_, a), (_, b) in zip(got, state))
                    try:
                        objective(bad, (X, Y), "sum")
                    except APIInputError as error:
                        one_line(error, "bad.pt2")
                try:
                    net = load_exported_network(bad, data)
                except EngineInputError as error:
                    one_line(error, "bad.pt2")
                else:
                    assert np.array_equal(net.params, params)
            assert not caught, [str(w.message) for w in caught]
            assert not marker.exists(), "a pickle ran"
        except Exception as failure:  # noqa: BLE001 -- gathered, then reported together
            failures.append(f"{name}: {type(failure).__name__}: {str(failure)[:300]}")
            marker.unlink(missing_ok=True)
    assert not failures, "\n".join(failures)
    assert 100 < read < len(archives.all_cases()) // 2  # flips in fields zipfile never reads, unread members


@pytest.fixture(scope="module")
def cnn_archive(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cnn")
    return folder, export_cnn(trained_cnn(0), folder / "cnn.pt2")


def test_a_pickle_in_every_slot_of_a_cnn_archive_never_runs(cnn_archive):
    """The CNN's archive (batch norm buffers, a dynamic batch) with a pickle in each of its weights
    and buffers, in its sample inputs, its constants, and with the hostile names, sizes and guards of
    ``tests.models.crafted_archives``: each refused in one line naming the file, the pickle never run;
    the sample inputs are never read, so that archive reads as saved."""
    from engine.io.pt2_program import read_exported_module

    folder, good = cnn_archive
    marker = folder / "marker"
    raw = good.read_bytes()
    saved = read_exported_module(good).module.state_dict()
    assert len(saved) == CNN_WEIGHTS
    cases = [(f"cnn-{name}", make) for name, make in archives.pickled_entries(weights=CNN_WEIGHTS)]
    crafted = crafted_archives(good, folder, marker)
    assert len(crafted) == CRAFTED
    cases += [(f"cnn-crafted-{n}", p.read_bytes()) for n, p in crafted.items()]
    for name, make in cases:
        bad = folder / "bad.pt2"
        bad.write_bytes(make if isinstance(make, bytes) else make(raw, marker))
        with Quiet() as caught:
            try:
                module = read_exported_module(bad).module
            except EngineInputError as error:
                one_line(error, "bad.pt2")
            else:
                got = module.state_dict()  # a pickle left unread (sample inputs, metadata, extra members)
                assert all(torch.equal(got[k], saved[k]) for k in saved)
                module(torch.zeros(2, 3, 8, 8))  # the guard and name payloads would run here
        assert not caught, (name, [str(w.message) for w in caught])
        assert not marker.exists(), f"{name}: a pickle ran"


CNN_WEIGHTS = 21  # the CNN's parameters and buffers (checked by the test above)
CRAFTED = 6  # tests.models.crafted_archives


def test_a_damaged_archive_is_one_line_on_the_command_line(capsys, mlp_archive):
    """``inspect`` and ``landscape`` of an archive with a flipped central directory, a pickled weight
    and an unknown op: exit status 2, one line on stderr naming the file."""
    from landscape_lens import cli

    folder, raw, data, _, _ = mlp_archive
    picked = {name: make for name, make in archives.all_cases() if name in CLI_ARCHIVES}
    for name in CLI_ARCHIVES:
        bad = folder / f"{name}.pt2"
        bad.write_bytes(picked[name](raw, folder / "marker"))
        for argv in (["inspect", str(bad), "--data", str(data)], ["landscape", str(bad), "--data", str(data)]):
            with Quiet() as caught:  # in-process, a warning would be printed above the line
                status = cli.main([*argv, *(["--out", str(folder / "out")] if argv[0] == "landscape" else [])])
            err = capsys.readouterr().err
            assert not caught, (argv, [str(w.message) for w in caught])
            assert status == 2 and len(err.strip().splitlines()) == 1 and bad.name in err, (argv, err)
            assert "Traceback" not in err and not (folder / "marker").exists()


CLI_ARCHIVES = ("flip-directory-9", "truncated-40", "pickle-weight0-flagged", "op-node1-'os.system'")


def test_state_dict_files_that_are_pickles_or_damaged(mlp_archive, capsys):
    """Raw pickles of every protocol, payloads, legacy and cut ``torch.save`` files as a network:
    ``inspect`` exits 2 with one line on stderr naming the file and no warning above it, the API
    refuses them in one line, and no pickle runs."""
    import landscape_lens as ll
    from landscape_lens import cli

    folder, _, data, _, _ = mlp_archive
    marker, bad = folder / "marker", folder / "bad.pt"
    good = folder / "good.pt"
    torch.save(archives.mlp().state_dict(), good)
    X, Y = torch.randn(5, 3, dtype=torch.float64), torch.randn(5, 1, dtype=torch.float64)
    for name, make in archives.state_dict_files():
        bad.write_bytes(make(good.read_bytes(), marker))
        with Quiet() as caught:  # in-process, a warning would be printed above the line
            status = cli.main(["inspect", str(bad), "--activation", "tanh", "--data", str(data)])
        err = capsys.readouterr().err
        assert status == 2 and len(err.strip().splitlines()) == 1 and "bad.pt" in err, (name, err)
        assert not caught, (name, [str(w.message) for w in caught])
        with Quiet() as caught:
            with pytest.raises(ll.APIInputError) as refused:
                ll.plane(bad, (X, Y), factory=archives.mlp, points=3, progress=False)
        one_line(refused.value, "bad.pt")
        assert not caught, (name, [str(w.message) for w in caught])
        assert not marker.exists(), f"{name}: a pickle ran"


# ------------------------------------------------------------------------------ run folders
@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A recorded run: its files, its checkpoints as read from the intact folder, its model."""
    from engine.runs import open_run

    folder = tmp_path_factory.mktemp("runs")
    model, X, Y = runs.record(folder / "good")
    good = open_run(folder / "good")
    assert good.problems == [] and good.checkpoint_steps.tolist() == list(runs.CHECKPOINT_STEPS)
    states = {step: good.checkpoint(step) for step in runs.CHECKPOINT_STEPS}
    return folder, runs.snapshot(folder / "good"), states, model


def check_run(folder: Path, case: runs.RunCase, states: dict, model, *, deep: bool = True) -> None:
    """``open_run`` of a damaged copy: refused in one line, or opened with every problem in one line,
    the steps and checkpoints the case keeps intact, and every other listed checkpoint, its
    invariants and its loading into the model either exact or refused in one line."""
    from engine.runs import open_run

    try:
        run = open_run(folder)
    except EngineInputError as error:
        one_line(error, folder.name)
        assert case.refuse, f"refused: {error}"
        return
    assert not case.refuse
    for problem in run.problems:
        one_line(problem)
    if case.problem:
        assert any(case.problem in p for p in run.problems), run.problems
    assert set(range(case.steps)) <= set(run.steps.tolist()), run.steps
    assert set(case.checkpoints) <= set(run.checkpoint_steps.tolist()), (run.checkpoint_steps, run.problems)
    for step in run.checkpoint_steps.tolist() if deep else case.checkpoints:
        try:
            got = run.checkpoint(step)
        except EngineInputError as error:
            assert step not in case.checkpoints, f"step {step}: {error}"
            one_line(error)
        else:
            want = states.get(step)
            assert want is not None and list(got) == list(want), (step, list(got))
            assert all(got[k].dtype == want[k].dtype and torch.equal(got[k], want[k]) for k in want), step
        if deep:
            for call in (lambda: run.invariants(step), lambda: run.load_into(copy.deepcopy(model), step)):
                try:
                    call()
                except EngineInputError as error:
                    one_line(error)
    repr(run)


def run_cases(folder, files, states, model, cases, *, deep=True) -> list[str]:
    marker = folder.parent / "marker"
    failures = []
    for case in cases:
        runs.restore(folder, files)
        case.change(folder, files)
        try:
            with Quiet() as caught:
                check_run(folder, case, states, model, deep=deep)
            assert not caught, [str(w.message) for w in caught]
            assert not marker.exists(), "a pickle ran"
        except Exception as failure:  # noqa: BLE001 -- gathered, then reported together
            failures.append(f"{case.name}: {type(failure).__name__}: {str(failure)[:300]}")
            marker.unlink(missing_ok=True)
    return failures


def test_damaged_manifests_checkpoints_and_lines(recorded):
    """Manifests of other versions and formats or whose entries, state or layers lie; checkpoint and
    invariants files missing, pickled, object arrays, cut, flipped or holding other tensors; damaged
    lines among the scalars and the sharpness."""
    folder, files, states, model = recorded
    cases = [*runs.manifest_lies(), *runs.damaged_checkpoints(folder / "marker")]
    failures = run_cases(folder / "run", files, states, model, cases)
    failures += run_cases(folder / "run", files, states, model, runs.garbage_lines(), deep=False)
    assert not failures, "\n".join(failures)


def test_truncated_manifests_and_lines_at_every_byte(recorded):
    """The manifest, the scalars and the sharpness cut at every byte. Each cut manifest is refused
    by the manifest's reader in one line naming it; each cut JSON-lines file gives its complete lines
    and no problem. The folder opens with everything else intact (checked whole at cuts spread
    over each file)."""
    import engine.runs.format as fmt

    folder, files, states, model = recorded
    run = folder / "run"
    runs.restore(run, files)
    failures = []
    for case in truncated_cases(files):
        name, at = case.name.rsplit("-cut-", 1)
        content = files[name][: int(at)]
        (run / name).write_bytes(content)
        try:
            if name == runs.MANIFEST:
                try:
                    fmt.read_manifest(run / name)
                except EngineInputError as error:
                    one_line(error, runs.MANIFEST)
                    assert case.problem
                else:
                    assert case.problem is None
            else:
                records, problems, offset = fmt.read_lines(run / name)
                assert problems == [] and len(records) == content.count(b"\n") and offset == content.rfind(b"\n") + 1
        except Exception as failure:  # noqa: BLE001
            failures.append(f"{case.name}: {type(failure).__name__}: {str(failure)[:300]}")
        (run / name).write_bytes(files[name])
    spread = truncated_cases(files)[::60]
    failures += run_cases(run, files, states, model, spread)
    assert not failures, "\n".join(failures)


SPLIT = (runs.MANIFEST, runs.SCALARS, runs.SHARPNESS)


def truncated_cases(files) -> list:
    return [
        *runs.truncated_manifests(len(files[runs.MANIFEST])),
        *runs.truncated_lines(runs.SCALARS, files[runs.SCALARS]),
        *runs.truncated_lines(runs.SHARPNESS, files[runs.SHARPNESS]),
    ]


def test_folders_that_are_not_runs(recorded):
    """open_run of a missing path, a file, an empty folder, a folder of other files, one whose
    manifest is a preset or a pickle: refused in one line, or opened with its problems said."""
    from engine.runs import open_run

    folder, *_ = recorded
    marker = folder / "marker"
    for name, make in runs.not_runs(marker):
        path = make(folder / f"not-{name}")
        with Quiet() as caught:
            try:
                run = open_run(path)
            except EngineInputError as error:
                one_line(error)
            else:
                assert all("\n" not in p for p in run.problems) and len(run.checkpoint_steps) <= 1, name
        assert not caught and not marker.exists(), name


def test_a_second_writer_is_refused_and_a_stale_lock_taken_over(recorded, tmp_path):
    """A Recorder resuming a run whose writer.lock names a live writer (this process, its parent,
    init, another host) is refused in one line and changes nothing; a stale or unreadable lock is
    taken over and the run continues with nothing lost."""
    from engine.runs import Recorder, open_run

    _, files, states, model = recorded
    for name, content, live in runs.lock_cases():
        folder = tmp_path / name
        runs.restore(folder, {**files, "writer.lock": content})
        with Quiet() as caught:
            if live:
                with pytest.raises(EngineInputError) as refused:
                    Recorder(folder, copy.deepcopy(model), every=runs.EVERY, resume=True)
                one_line(refused.value, "another writer")
                assert runs.snapshot(folder) == {**files, "writer.lock": content}, name
                assert open_run(folder).writer_alive
                continue
            with Recorder(folder, copy.deepcopy(model), every=runs.EVERY, resume=True) as rec:
                assert rec.step(loss=0.5) == runs.STEPS
            run = open_run(folder)
        assert not caught, (name, [str(w.message) for w in caught])
        assert run.steps.tolist() == list(range(runs.STEPS + 1)) and run.problems == [], name
        assert not run.writer_alive and not (folder / "writer.lock").exists(), name
        for step, state in states.items():
            assert all(torch.equal(run.checkpoint(step)[k], state[k]) for k in state), name


CLI_RUNS = ("pickle-checkpoints/step_000000002.npz", "extra-tensor-checkpoints/step_000000000.npz")
CLI_RUNS += ("state-dtype-bfloat16", "state-renamed", "cut-6-checkpoints/step_000000004.npz")


def test_a_damaged_run_folder_is_one_line_on_the_command_line(recorded, tmp_path, capsys, monkeypatch):
    """``landscape MODEL --trajectory RUN``, with a checkpoint pickled, cut or holding other tensors,
    or a manifest whose state lies, or a folder that is not a run: exit status 2, one line on stderr
    naming the damaged file or the folder, nothing written, the pickle never run."""
    from tests.files import assert_landscape_refuses

    monkeypatch.setattr("engine.core.runtime.configure_torch_threads", lambda threads=1: None)
    folder, files, _, model = recorded
    torch.save(model.state_dict(), tmp_path / "model.pt")
    data = tmp_path / "data.npz"
    np.savez(data, X=np.random.default_rng(0).normal(size=(8, 3)).astype(np.float32), Y=np.arange(8) % 2)
    base = [str(tmp_path / "model.pt"), "--model", "tests.bad_inputs.runs:run_model", "--data", str(data)]
    marker = folder / "marker"
    chosen = {c.name: c for c in [*runs.damaged_checkpoints(marker), *runs.manifest_lies()] if c.name in CLI_RUNS}
    cases = {}
    for name in CLI_RUNS:
        run = tmp_path / name.replace("/", "_")
        runs.restore(run, files)
        chosen[name].change(run, files)
        cases[name] = ([*base, "--trajectory", str(run)], run.name)
    (tmp_path / "empty").mkdir()
    cases["not a run"] = ([*base, "--trajectory", str(tmp_path / "empty")], "empty")
    assert_landscape_refuses(cases, tmp_path, capsys)
    assert not marker.exists()


# ------------------------------------------------------------------------------ the API's arguments
@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return api.make_setup(tmp_path_factory.mktemp("api"))


def test_the_valid_arguments_the_cases_start_from_are_accepted(setup):
    """Each case changes one argument of a call that works: these calls, unchanged, run."""
    import landscape_lens as ll

    s = setup
    states = [{k: v + 0.1 * i for k, v in s.model.state_dict().items()} for i in range(3)]
    assert ll.plane(s.model, s.data, points=3, progress=False).loss.shape == (3, 3)
    ll.hessian(s.model, s.data, top_k=1, probes=2, progress=False)
    ll.interpolation(s.model, s.state(), s.data, points=3, progress=False)
    ll.trajectory_plane(states, s.model, s.data, points=3, progress=False)
    ll.invariants(s.model)
    ll.invariant_drift(s.model, [s.state()] * 2)
    ll.initial_negative_share(s.model, draws=2)
    ll.inspect(s.mlp, s.XY, progress=False)
    ll.persistence(np.random.default_rng(0).normal(size=(4, 4)))
    ll.Recorder(s.folder / "valid-run", s.model, sharpness_every=2, sharpness_data=s.data).close()
    ll.open_run(s.folder / "valid-run")


def test_each_bad_argument_of_each_function_is_one_line(setup):
    """Every public function, each argument bad in turn (wrong types, values out of range, data of
    the wrong shape or dtype, labels out of range, losses that are not losses, files that are not
    models): APIInputError, a ValueError, in one line (the engine's own Recorder, open_run and
    load: EngineInputError), and no warning, never a traceback from inside torch or numpy."""
    import shutil

    import landscape_lens as ll

    failures = []
    for name, call in api.all_cases():
        expected = EngineInputError if name.startswith(api.ENGINE_FUNCTIONS) else ll.APIInputError
        try:
            with Quiet() as caught:
                with pytest.raises(expected) as refused:
                    call(setup)
            one_line(refused.value)
            assert isinstance(refused.value, ValueError)
            assert not caught, [str(w.message) for w in caught]
        except BaseException as failure:  # noqa: BLE001 -- gathered, then reported together
            if isinstance(failure, KeyboardInterrupt):
                raise
            failures.append(f"{name}: {type(failure).__name__}: {str(failure)[:200]}")
        shutil.rmtree(setup.folder / "recorder-run", ignore_errors=True)
    assert not failures, f"{len(failures)} of {len(api.all_cases())}:\n" + "\n".join(failures)


# ------------------------------------------------------------------------------ the count
def test_the_count():
    """The generated inputs, counted by kind: with the earlier suite's, at least 1,000, and none
    of the kinds issue #58 names left out. The cuts at every byte of a run's manifest and JSON-lines
    files (``test_truncated_manifests_and_lines_at_every_byte``) come on top and are not counted."""
    counts = {
        "archives": len(archives.all_cases()),
        "state_dict files": 2 * len(archives.state_dict_files()),
        "archives (CNN slots)": len(archives.pickled_entries(weights=CNN_WEIGHTS)) + CRAFTED,
        "archives (command line)": 2 * len(CLI_ARCHIVES),
        "run folders (command line)": len(CLI_RUNS) + 1,
        "run folders": len(runs.manifest_lies()) + len(runs.damaged_checkpoints("marker")) + len(runs.garbage_lines()),
        "run folders (not runs)": len(runs.not_runs("marker")),
        "run folders (locks)": len(runs.lock_cases()),
        "API arguments": len(api.all_cases()),
    }
    assert counts["archives"] >= 600 and counts["run folders"] >= 250 and counts["API arguments"] >= 450, counts
    assert sum(counts.values()) + EARLIER >= 1000, counts
