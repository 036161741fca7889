"""engine.runs.format and the thinning schedule: atomic files, JSON lines that survive a torn end,
state_dict tensors stored without pickle and read back bit for bit."""

import json
import os

import numpy as np
import pytest
import torch

from engine.core.errors import EngineInputError
from engine.runs import format as fmt
from engine.runs.measures import thin


def test_write_atomic_leaves_the_old_file_when_the_writer_fails(tmp_path):
    path = tmp_path / "a.json"
    fmt.write_json(path, {"x": 1})

    def fails(f):
        f.write(b'{"x": 2, "half')
        raise RuntimeError("killed mid-write")

    with pytest.raises(RuntimeError):
        fmt.write_atomic(path, fails)
    assert json.loads(path.read_text()) == {"x": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"], "the temporary file is removed"


def test_read_lines_skips_a_torn_last_line_and_reads_it_once_complete(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(fmt.json_line({"step": 0, "loss": 0.1}) + b'{"step": 1, "lo')
    records, problems, offset = fmt.read_lines(path)
    assert records == [{"step": 0, "loss": 0.1}] and problems == []
    with open(path, "ab") as f:
        f.write(b'ss": 0.2}\n')
    more, problems, offset2 = fmt.read_lines(path, offset)
    assert more == [{"step": 1, "loss": 0.2}] and problems == [] and offset2 == path.stat().st_size
    assert fmt.complete_length(path) == path.stat().st_size


def test_read_lines_names_a_damaged_line_and_reads_past_it(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(fmt.json_line({"step": 0}) + b"\x00\x00garbage\n" + fmt.json_line({"step": 2}))
    records, problems, _ = fmt.read_lines(path)
    assert [r["step"] for r in records] == [0, 2]
    assert len(problems) == 1 and "s.jsonl" in problems[0] and "\n" not in problems[0]


def test_json_lines_keep_every_double_and_nan():
    values = [0.1, 1 / 3, float(np.float32(2.7)), 5e-324, 1.7976931348623157e308, float("nan"), float("-inf")]
    back = [json.loads(fmt.json_line({"v": v}))["v"] for v in values]
    assert np.array_equal(np.array(back), np.array(values), equal_nan=True)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int8, torch.bool]
)
def test_a_state_tensor_reads_back_bit_for_bit_in_its_dtype(tmp_path, dtype):
    g = torch.Generator().manual_seed(0)
    t = (torch.randn(3, 4, generator=g) * 100).to(dtype)
    state = {"layer.0.weight": t, "bn.num_batches_tracked": torch.tensor(7), "transposed": t.T}
    arrays = {k: fmt.as_array(k, v) for k, v in state.items()}
    fmt.write_state(tmp_path / "c.npz", arrays)
    with np.load(tmp_path / "c.npz", allow_pickle=False) as z:  # numpy alone reads it
        assert sorted(z.files) == sorted(state)
    back = fmt.read_arrays(tmp_path / "c.npz")
    schema = fmt.state_schema(state)
    for name, original in state.items():
        got = fmt.as_tensor(back[name], schema[name]["dtype"])
        assert got.dtype == original.dtype and got.shape == original.shape
        assert torch.equal(raw(got), raw(original))


def raw(t: torch.Tensor) -> torch.Tensor:
    """A tensor's bytes, in its row-major order."""
    return t.contiguous().reshape(-1).view(torch.uint8)


def test_a_missing_or_damaged_archive_is_one_line(tmp_path):
    with pytest.raises(EngineInputError, match="missing"):
        fmt.read_arrays(tmp_path / "none.npz")
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(EngineInputError, match="not a readable .npz") as e:
        fmt.read_arrays(tmp_path / "bad.npz")
    assert "\n" not in str(e.value)


def test_read_manifest_refuses_what_is_not_a_run_manifest(tmp_path):
    path = tmp_path / fmt.MANIFEST
    with pytest.raises(EngineInputError, match="not a run folder"):
        fmt.read_manifest(path)
    path.write_text('{"format": "landscape-lens run", "vers')
    with pytest.raises(EngineInputError, match="damaged"):
        fmt.read_manifest(path)
    path.write_text(json.dumps({"format": "something else"}))
    with pytest.raises(EngineInputError, match="not the manifest"):
        fmt.read_manifest(path)


@pytest.mark.parametrize("seed", range(20))
def test_thinning_keeps_first_and_last_and_at_most_the_limit(seed):
    rng = np.random.default_rng(seed)
    limit = int(rng.integers(2, 30))
    steps = sorted(set(rng.integers(0, 10_000, int(rng.integers(1, 200))).tolist()))
    kept = thin(steps, limit)
    assert len(kept) <= limit
    assert kept == sorted(kept) and set(kept) <= set(steps)
    assert kept[0] == steps[0] and kept[-1] == steps[-1]
    if len(steps) <= limit:
        assert kept == steps


def test_thinning_is_log_spaced():
    kept = np.array(thin(list(range(10_001)), 50))
    gaps = np.diff(kept)
    # log spacing: the gaps grow along the run (dense early, sparse late), each about the last's ratio
    assert gaps[:10].max() < gaps[-10:].min()
    ratios = np.log1p(kept[1:]) - np.log1p(kept[:-1])
    assert ratios[-20:].std() < 0.2 * ratios[-20:].mean()


def test_temporary_names_are_recognised():
    assert fmt.is_temporary(f".manifest.json{fmt.TEMP_MARK}12-0")
    assert not fmt.is_temporary("manifest.json") and not fmt.is_temporary(".hidden")
    assert os.path.basename(fmt.checkpoint_name(42)) == "step_000000042.npz"
    assert fmt.step_of("step_000000042.npz") == 42 and fmt.step_of("x.npz") is None
