"""The Fig. 3 pipeline (docs/MATH.md B7–B9): construction → Hessian spectrum → slices at the minimum →
degenerate path of a split → the saddle at λ outside I (probe, slices, B6 descent line) → 2-D plane.

One job, ``figure3_job``, serves ``reproduce nonattr-deep`` / ``nonattr-shallow`` and the GUI's
presets; ``reslice_job`` (λ slider released), ``probe_job`` (live λ readout) and ``load_figure3_job``
(a saved network) are its follow-ups. Every job returns a frozen ``Figure3``; its partials are the
same dataclass filled stage by stage (``dataclasses.replace``), so a field that did not change is
the identical object and a view can skip redrawing it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from engine.core import mlp
from engine.core.errors import EngineInputError
from engine.core.mlp import Arch
from engine.core.progress import Job, Progress, subjob, wait_for
from engine.core.runtime import configure_torch_threads
from engine.landscape import directions, operations
from engine.landscape import hessian as hessian_limits
from engine.landscape import slices as landscape
from engine.landscape.density import Density, density_job
from engine.landscape.plane import MLPLoss, PlaneResult
from engine.minima import construction as C
from engine.minima.construction import Construction, DegeneratePath, HessianSummary, LambdaProbe, Line
from engine.minima.critical_search import CriticalSearch, find_critical_point


@dataclass(frozen=True)
class SliceSettings:
    K: int = 5000
    P: int = 101
    T: float = 1.0
    normalize: str = "unit"  # SCALINGS: unit norm, per neuron, or Li et al.'s filter / layer normalisation
    seed: int = 0
    family: str = "all"  # directions over: engine.minima.dip_probability.SLICE_FAMILIES
    family_layer: int = 1  # "layer" and "neuron" families
    family_neuron: int = 0  # "neuron" family
    family_k: int = 5  # "eigen": the k lowest Hessian eigenvectors
    ignore: str = "none"  # "biases": no bias components (Li et al.'s --xignore biasbn)

    def __post_init__(self):
        if self.normalize not in SCALINGS:
            raise EngineInputError(f"unknown direction scaling {self.normalize!r}; choose one of {', '.join(SCALINGS)}")
        directions.check_ignore(self.ignore)

    @property
    def random_plane(self) -> bool:
        """Li et al.'s scalings give the 2-D slice their random plane; unit norm keeps B9's
        analytic one (the degenerate direction, flat, and the B6 descent direction)."""
        return self.normalize in ("filter", "layer")


# How slice directions are scaled: "unit" (the whole direction to norm 1; a Gaussian family, so
# its dip fraction has Imhof's closed form), "neuron" (each neuron's incoming block to θ's), and
# engine.landscape.directions' "filter" and "layer" (Li et al. 2018).
SCALINGS = ("unit", "neuron", "filter", "layer")
SCALING_LABELS = dict(zip(SCALINGS, ("unit-norm", "per-neuron", "filter-normalised", "layer-normalised")))


@dataclass(frozen=True)
class Figure3Settings:
    kind: str = "deep"  # "deep": teacher widths like the small net's, 5 per hidden layer;
    # "shallow": a 1-hidden-layer teacher of width 2 (Fukumizu–Amari)
    seed: int = 0
    widths: tuple = (2, 1, 1, 1)  # the small network
    activation: str = "sigmoid"
    bias: bool = False
    schedule: tuple = ((1, 20), (2, 20))
    lam: float = 0.5  # λ of splits whose B is positive definite
    lam_outside: float = -1.0  # λ of splits whose B is negative definite (I = (−∞, 0) ∪ (1, ∞))
    max_restarts: int = 15
    n_samples: int = 20
    data_tries: int = 10  # new data draws when one has no suitable minimum
    saddle_lam: float = 2.0
    slices: SliceSettings | None = SliceSettings()  # None: no slices
    path: tuple | None = (-0.5, 2.0, 26)  # (λ from, λ to, points); None: no path
    descent: tuple | None = (3.0, 121)  # (T, points) of the B6 line; None: the slices' t grid
    plane: tuple | None = (41, 1.0)  # (points, extent); None: no plane


@dataclass(frozen=True)
class Saddle:
    probe: LambdaProbe
    slices: landscape.Slices | None = None
    descent: Line | None = None  # B6 direction and the loss along it


@dataclass(frozen=True)
class Figure3:
    steps: tuple = ()  # construction Steps so far
    construction: Construction | None = None
    data_seed: int | None = None  # seed of the data draw that had a suitable minimum
    eigs: np.ndarray | None = None  # the final net's Hessian spectrum
    hessian: HessianSummary | None = None
    slices_min: landscape.Slices | None = None
    path: DegeneratePath | None = None
    saddle: Saddle | None = None
    plane: PlaneResult | None = None
    loaded_from: str = ""  # the file, when the network was loaded
    moved: CriticalSearch | None = None  # after "Find critical point": where it went, and why it stopped
    density: Density | None = None  # past the full-Hessian limit: the network's SLQ spectral density


def teacher_data(widths, n_samples: int, seed: int, scale: float = 4.0, input_scale: float = 1.0):
    """Samples of a random teacher net: the student of the same widths fits them exactly (loss 0)."""
    rng = np.random.default_rng(seed)
    arch = Arch(tuple(widths), "sigmoid", False)
    theta = mlp.init_params(arch, rng, scale)
    X = input_scale * rng.standard_normal((n_samples, widths[0]))
    return X, mlp.predict(arch, theta, X)


def data_draw(s: Figure3Settings, k: int):
    """The k-th data draw of ``s``: B7's deep teacher, or the shallow 1—2—1 one on wider inputs."""
    w = tuple(s.widths)
    if s.kind == "deep":
        return teacher_data((w[0],) + (5,) * (len(w) - 2) + (w[-1],), s.n_samples, s.seed + 1000 * k)
    if s.kind == "shallow":
        return teacher_data((w[0], 2, w[-1]), s.n_samples, s.seed + 1000 * k, input_scale=2.0)
    raise EngineInputError(f"unknown construction kind {s.kind!r}; choose 'deep' or 'shallow'")


def construction_job(s: Figure3Settings) -> Job[tuple[Construction, int]]:
    """B7: draw data and search a suitable minimum; if a draw has none within ``max_restarts``,
    draw new data. Returns (construction, data seed); partials are the Steps so far."""
    last = None
    for k in range(s.data_tries):
        # On a helper thread: the first torch call of a process compiles kernels, for longer than
        # a job may go without yielding.
        X, Y = yield from wait_for(lambda stop: data_draw(s, k), f"data draw {k + 1}")
        try:
            c = yield from subjob(
                C.construct_job(
                    X,
                    Y,
                    s.widths,
                    s.activation,
                    s.bias,
                    s.schedule,
                    s.lam,
                    s.lam_outside,
                    seed=s.seed + k,
                    max_restarts=s.max_restarts,
                ),
                k / s.data_tries,
                (k + 1) / s.data_tries,
                f"data draw {k + 1}: ",
            )
            return c, s.seed + 1000 * k
        except EngineInputError as error:  # no suitable minimum, or no split possible: new data
            last = error
    raise EngineInputError(
        f"no suitable minimum of {tuple(s.widths)} in {s.data_tries} data draws × "
        f"{s.max_restarts} restarts; the last draw: {last}"
    )


def slice_directions(arch: Arch, theta, X, Y, s: SliceSettings, pair: tuple | None = None):
    """(K, P) directions of ``s`` at θ and the family they are drawn from (``pair``: (layer,
    origin, copy) of the split whose pair is a family).

    Unit-norm directions d = V z / ‖V z‖ are the Gaussian family V z up to a positive scale, so
    their dip fraction is the family's (Imhof). Filter and layer normalisation rescale the family's
    draws block by block to θ's norms (engine.landscape.directions.normalize, the toolkit's rule);
    components outside an index family stay 0, θ's biases included. With biases ignored the
    family loses its bias coordinates first, so a unit family's prediction is still exact."""
    from engine.minima import dip_probability as DP

    family = _without_biases(
        arch, DP.slice_family(arch, theta, X, Y, s.family, s.family_layer, s.family_neuron, pair, s.family_k), s.ignore
    )
    if s.normalize == "neuron":
        if s.family != "all":
            raise EngineInputError("per-neuron scaling is for directions over all parameters; choose 'filter'")
        d = landscape.random_directions(arch, theta, s.K, s.seed, "neuron")
        if s.ignore == "biases":
            d[:, ~_weight_mask(arch)] = 0.0
        return d, family
    d = DP.family_directions(family, s.K, s.seed)
    if s.normalize in ("filter", "layer"):
        d = directions.normalize(arch, theta, d, s.normalize, s.ignore)
        if family.indices is not None:
            outside = np.ones(arch.n_params, bool)
            outside[family.indices] = False
            d[:, outside] = 0.0
    return d, family


def _weight_mask(arch: Arch) -> np.ndarray:
    """True at the weights of the flat layout, False at the biases."""
    mask = np.ones(arch.n_params, bool)
    for l in range(1, arch.n_layers + 1) if arch.bias else ():
        mask[arch.block(f"b{l}").slice] = False
    return mask


def _without_biases(arch: Arch, family, ignore: str):
    """The family without its bias coordinates when biases are ignored (a basis family: its bias
    rows zeroed), so that V z has no bias components and the prediction is for those directions."""
    from engine.minima.dip_probability import Family

    if ignore != "biases" or not arch.bias:
        return family
    weights = _weight_mask(arch)
    if family.basis is not None:
        return Family(f"{family.name}, no biases", arch.n_params, basis=family.basis * weights[:, None])
    kept = family.indices[weights[family.indices]]
    if not kept.size:
        raise EngineInputError(f"directions over {family.name} with biases ignored have no parameter left")
    return Family(f"{family.name} weights", arch.n_params, indices=kept)


def slices_job(arch: Arch, theta, X, Y, s: SliceSettings, pair: tuple | None = None) -> Job[landscape.Slices]:
    """Slices along K directions of ``s`` (``slice_directions``), with the predicted fraction of
    dipping curves beside the observed one where it has a closed form: unit-norm directions of a
    family are Gaussian up to scale (engine.minima.dip_probability); per-neuron, filter and layer
    scaling make the direction's law non-Gaussian, and the caption says there is none."""
    from engine.minima import dip_probability as DP

    d, family = yield from wait_for(lambda stop: slice_directions(arch, theta, X, Y, s, pair), "directions")
    cut = yield from landscape.slices_job(arch, theta, X, Y, K=s.K, P=s.P, T=s.T, seed=s.seed, directions=d)
    cut = replace(cut, family=family.name, normalization=s.normalize)
    if s.normalize != "unit":
        return cut
    predicted = yield from wait_for(
        lambda stop: DP.predicted_for_family(arch, theta, X, Y, family), "predicted dip fraction"
    )
    return replace(cut, predicted=predicted)


def _pair(c: Construction, split: int = -1) -> tuple | None:
    """(layer, origin, copy) of one split, for the "split pair" direction family."""
    if not c.splits:
        return None
    s = c.splits[split]
    return (s.layer, s.origin, s.new)


def path_job(c: Construction, path: tuple, split: int = -1) -> Job[DegeneratePath]:
    """(b): the degenerate path of one split; ``path`` is (λ from, λ to, points)."""
    return (yield from C.degenerate_path_job(c, np.linspace(path[0], path[1], int(path[2])), split))


def saddle_job(
    c: Construction, lam: float, slices: SliceSettings | None, descent: tuple | None = None, split: int = -1
) -> Job[Saddle]:
    """(c), (d): the point at ``lam`` (a saddle outside I), its slices and the B6 descent line.
    Random directions in P dimensions almost never see the one negative eigenvalue (B8); the
    analytic direction, at the same unit norm, shows the saddle is there. Partial: the probe."""
    probe = yield from _probe_job(c, lam, split)
    yield Progress(float("nan"), f"saddle at λ = {lam:g}: {probe.verdict}", Saddle(probe))
    cut = None if slices is None else (yield from slices_job(c.arch, probe.params, c.X, c.Y, slices, _pair(c, split)))
    if descent is not None:
        ts = np.linspace(-descent[0], descent[0], int(descent[1]))
    else:
        ts = cut.t if cut is not None else np.linspace(-3.0, 3.0, 121)
    return Saddle(probe, cut, C.descent_curve(c, probe, ts))


ANALYTIC_AXES = ("degenerate direction (moves λ)", "descent direction e (B6)")


def plane_directions(c: Construction, theta, split: int, slices: SliceSettings | None = None) -> tuple:
    """(d1, d2, axis labels) of the 2-D slice at θ(λ) of one split: B9's plane of the degenerate
    direction (the loss is constant along it) and the B6 descent direction, at unit norm; or, for
    Li et al.'s scalings (``SliceSettings.random_plane``), their random plane, the toolkit's
    (engine.landscape.directions, seeded by the slices' seed)."""
    if slices is not None and slices.random_plane:
        d1, d2 = directions.directions(c.arch, theta, 2, slices.seed, slices.normalize, slices.ignore)
        name = SCALING_LABELS[slices.normalize] + (", no biases" if slices.ignore == "biases" else "")
        return d1, d2, (f"{name} direction 1", f"{name} direction 2")
    s = c.splits[split]
    B, _ = C.pair_B(c.arch, theta, c.X, c.Y, s)
    return C.degenerate_direction(c.arch, theta, s), C.descent_direction(c.arch, theta, s, B), ANALYTIC_AXES


def probe_plane_job(
    c: Construction, theta, split: int, points: int, extent: float, slices: SliceSettings | None = None
) -> Job[PlaneResult]:
    """The loss on the 2-D slice through θ(λ) of one split (``plane_directions``, their names as
    its labels): the toolkit's one plane job (``operations.plane_job``) on the MLP kernel."""
    d1, d2, labels = plane_directions(c, theta, split, slices)
    name = slices.normalize if slices is not None and slices.random_plane else ""
    loss = MLPLoss(c.arch, np.asarray(theta, float), c.X, c.Y)
    return (yield from operations.plane_job(loss, int(points), extent, name, d1=d1, d2=d2, labels=labels))


def past_full_hessian(arch: Arch) -> bool:
    """Too many parameters for the full spectrum (engine.landscape.hessian.FULL_SPECTRUM_MAX_PARAMS):
    the inspector shows the spectral density there, as the toolkit tab does."""
    return arch.n_params > hessian_limits.FULL_SPECTRUM_MAX_PARAMS


def spectral_density_job(arch: Arch, theta, X, Y) -> Job[Density]:
    """The toolkit's SLQ density with the toolkit's settings (its probes, Lanczos steps and seed;
    the summed loss paper B uses), so the inspector's density is the toolkit's density.npz."""
    from engine.landscape.toolkit import ToolkitSettings

    s = ToolkitSettings()
    return (yield from density_job(arch, theta, X, Y, s.probes, s.lanczos_steps, s.seed, "sum"))


def _with_density(fig: Figure3, start: float, stop: float) -> Job[Figure3]:
    """``fig`` with its network's density, past the full-Hessian limit (else ``fig`` itself)."""
    c = fig.construction
    if not past_full_hessian(c.arch):
        return fig
    d = yield from subjob(spectral_density_job(c.arch, c.params, c.X, c.Y), start, stop, "spectral density: ")
    fig = replace(fig, density=d)
    yield Progress(stop, "spectral density", fig)
    return fig


def _stage(fig: Figure3, job, start: float, stop: float, field: str, message: str):
    """Run one stage's job mapped into [start, stop]; its partials fill ``field`` of ``fig``."""
    value = yield from subjob(
        job, start, stop, message, partial=lambda p: replace(fig, **{field: p}) if not isinstance(p, tuple) else None
    )
    fig = replace(fig, **{field: value})
    yield Progress(stop, message.rstrip(": "), fig)
    return fig


def _after_construction(fig: Figure3, s: Figure3Settings, start: float, spectrum: bool = True) -> Job[Figure3]:
    """The stages after the construction: spectrum (unless an inspection computed it), slices,
    path, saddle, plane (those ``s`` asks for)."""
    c = fig.construction
    if spectrum:
        eigs, h = yield from C.spectrum_job(c.arch, c.params, c.X, c.Y, "Hessian spectrum")
        fig = replace(fig, eigs=eigs, hessian=h)
        yield Progress(start, "Hessian spectrum", fig)
        fig = yield from _with_density(fig, start, start)
    span = 1.0 - start
    if s.slices is not None:
        fig = yield from _stage(
            fig,
            slices_job(c.arch, c.params, c.X, c.Y, s.slices, _pair(c)),
            start,
            start + 0.4 * span,
            "slices_min",
            "slices at the minimum: ",
        )
    if not c.splits:
        return fig
    if s.path is not None:
        fig = yield from _stage(
            fig, path_job(c, s.path), start + 0.4 * span, start + 0.6 * span, "path", "degenerate path: "
        )
    fig = yield from _stage(
        fig,
        saddle_job(c, s.saddle_lam, s.slices, s.descent),
        start + 0.6 * span,
        start + 0.85 * span,
        "saddle",
        "saddle: ",
    )
    if s.plane is not None:
        fig = yield from _stage(
            fig,
            probe_plane_job(c, fig.saddle.probe.params, fig.saddle.probe.split, *s.plane, s.slices),
            start + 0.85 * span,
            1.0,
            "plane",
            "2-D slice: ",
        )
    return fig


def figure3_job(s: Figure3Settings = Figure3Settings()) -> Job[Figure3]:
    configure_torch_threads()
    fig = Figure3()
    c, data_seed = yield from subjob(
        construction_job(s), 0.0, 0.4, "construction: ", partial=lambda steps: Figure3(steps=steps)
    )
    fig = Figure3(c.steps, c, data_seed)
    yield Progress(0.4, "construction done", fig)
    return (yield from _after_construction(fig, s, 0.45))


def reslice_job(
    fig: Figure3,
    lam: float,
    split: int = -1,
    slices: SliceSettings | None = None,
    path: tuple | None = None,
    descent: tuple | None = Figure3Settings.descent,
    plane: tuple | None = None,
) -> Job[Figure3]:
    """After the λ slider is released: the saddle (or minimum) at the new λ of one split, its
    2-D plane when ``plane`` is given, and its degenerate path again when ``path`` is given
    (another split was chosen). Everything else of ``fig`` stays the identical object."""
    c = fig.construction
    if c is None:
        raise EngineInputError("build or load a construction before moving λ")
    if path is not None:
        fig = yield from _stage(fig, path_job(c, path, split), 0.0, 0.4, "path", "degenerate path: ")
    fig = yield from _stage(fig, saddle_job(c, lam, slices, descent, split), 0.4, 0.9, "saddle", "saddle: ")
    if plane is not None:
        fig = yield from _stage(
            fig,
            probe_plane_job(c, fig.saddle.probe.params, fig.saddle.probe.split, *plane, slices),
            0.9,
            1.0,
            "plane",
            "2-D slice: ",
        )
    return fig


@dataclass(frozen=True)
class Preview:
    """What a λ drag shows before the slider is released: (c) on a coarse t grid, and the plane.
    ``drag`` makes the next move's slices cheap (pass it back to ``preview_job``)."""

    lam: float
    slices: landscape.Slices
    plane: PlaneResult | None
    drag: DragSlices | None = None


@dataclass(frozen=True, eq=False)
class DragSlices:
    """The slices of one split for every λ (``landscape.LambdaSlices``) and what they were made for."""

    key: tuple  # (split index, its layer/origin/new, K, seed, T, points)
    slicer: landscape.LambdaSlices

    def fits(self, c: Construction, key: tuple, theta: np.ndarray, lam: float) -> bool:
        """Made for this split and settings, and its θ(λ) is the construction's."""
        s = self.slicer
        return (
            key == self.key
            and s.arch == c.arch
            and np.array_equal(s.X, np.asarray(c.X, float))
            and np.array_equal(s.Y, mlp.as_targets(c.Y))
            and np.allclose(s.theta + (lam - s.lam0) * s.e, theta, rtol=0, atol=1e-12 * (1 + np.abs(theta).max()))
        )


PREVIEW_POINTS = 21  # t values per curve while dragging; the release refines to the full grid


def preview_job(
    fig: Figure3,
    lam: float,
    split: int,
    slices: SliceSettings,
    plane: tuple | None = None,
    points: int = PREVIEW_POINTS,
    drag: DragSlices | None = None,
) -> Job[Preview]:
    """The λ slider's live preview: the same K directions as (c) at ``points`` values of t in
    float32 (engine.landscape.slices.preview_slices' setting), and the 41 × 41 plane. No Hessian: the
    probe (λ_min and the verdict) runs beside it. A clip's frames use more points.

    A split in the last hidden layer with θ-independent directions (unit-norm, over all
    parameters) moves only output weights: its slices are affine in λ (landscape.LambdaSlices).
    The first move then costs one slice pass and returns ``drag``; with it, later moves cost
    milliseconds."""
    c = fig.construction
    if c is None or not c.splits:
        raise EngineInputError("build or load a construction with a split before moving λ")
    s = c.splits[split]
    theta = C.set_split_lambda(c.arch, c.params, s, lam)
    drag = yield from drag_job(fig, lam, split, slices, points, drag)
    if drag is not None:
        cut = drag.slicer.slices(lam, theta)
    else:  # the same directions as (c); no prediction while dragging
        d, _ = slice_directions(c.arch, theta, c.X, c.Y, slices, _pair(c, split))
        cut = yield from landscape.slices_job(
            c.arch, theta, c.X, c.Y, K=slices.K, P=points, T=slices.T, seed=slices.seed, dtype="float32", directions=d
        )
    cut = replace(cut, normalization=slices.normalize)
    if plane is None:
        return Preview(lam, cut, None, drag)
    flat = yield from probe_plane_job(c, theta, split, *plane, slices)
    return Preview(lam, cut, flat, drag)


def drag_job(
    fig: Figure3,
    lam: float,
    split: int,
    slices: SliceSettings,
    points: int = PREVIEW_POINTS,
    drag: DragSlices | None = None,
) -> Job[DragSlices | None]:
    """The affine slices ``preview_job`` reuses while λ moves: ``drag`` itself when it fits,
    otherwise one slice pass at ``lam``; None where the slices are not affine in λ (a split
    before the last hidden layer, or directions that depend on θ)."""
    c = fig.construction
    if c is None or not c.splits:
        return None
    s = c.splits[split]
    if not (s.layer + 1 == c.arch.n_layers and slices.family == "all" and slices.normalize == "unit"):
        return None
    theta = C.set_split_lambda(c.arch, c.params, s, lam)
    key = (split % len(c.splits), s.layer, s.origin, s.new, slices.K, slices.seed, slices.T, slices.ignore, points)
    if drag is not None and drag.fits(c, key, theta, lam):
        return drag
    d, _ = slice_directions(c.arch, theta, c.X, c.Y, slices)
    e = C.set_split_lambda(c.arch, c.params, s, 1.0) - C.set_split_lambda(c.arch, c.params, s, 0.0)
    slicer = yield from landscape.lambda_slices_job(
        c.arch, theta, e, lam, (s.new, s.origin), c.X, c.Y, d, points, slices.T, dtype="float32"
    )
    return DragSlices(key, slicer)


def walk_endpoints(fig: Figure3) -> tuple[float, float]:
    """Where a walk along the degenerate path goes: from inside Theorem 9's I (the middle of the
    part holding the split's λ, or that λ when the part is unbounded) to the saddle's λ of panels
    (c, d), or else the path's far end (docs/MATH.md B5, B7)."""
    if not (fig.path is not None and fig.construction is not None and fig.construction.splits):
        raise EngineInputError(
            "the walk needs a finished Fig. 3 construction with its degenerate path; "
            "run a non-attracting-minima preset first"
        )
    path = fig.path
    start = float(fig.construction.splits[path.split].lam)
    for lo, hi in path.interval.parts:
        if lo < start < hi and np.isfinite(lo) and np.isfinite(hi):
            start = (lo + hi) / 2
    if fig.saddle is not None:
        return start, float(fig.saddle.probe.lam)
    return start, max((float(path.lam[0]), float(path.lam[-1])), key=lambda lam: abs(lam - start))


def walk_job(fig: Figure3, lams, split: int, slices: SliceSettings, points: int = PREVIEW_POINTS) -> Job[tuple]:
    """Slices at each λ of ``lams`` (a clip's walk along the degenerate path), as the drag
    preview computes them; returns one ``landscape.Slices`` per λ."""
    cuts = []
    for i, lam in enumerate(lams):
        preview = yield from subjob(
            preview_job(fig, float(lam), split, slices, points=points),
            i / len(lams),
            (i + 1) / len(lams),
            f"slices at λ = {lam:.3g}: ",
        )
        cuts.append(preview.slices)
    return tuple(cuts)


def probe_job(fig: Figure3, lam: float, split: int = -1) -> Job[LambdaProbe]:
    """The λ slider's live readout: one Hessian, on a helper thread; past the full-Hessian limit
    also the spectral density at θ(λ), which the inspector shows in place of the spectrum."""
    if fig.construction is None:
        raise EngineInputError("build or load a construction before moving λ")
    return (yield from _probe_job(fig.construction, lam, split))


def _probe_job(c: Construction, lam: float, split: int) -> Job[LambdaProbe]:
    probe = yield from C.probe_job(c, lam, split)
    if not past_full_hessian(c.arch):
        return probe
    return replace(probe, density=(yield from spectral_density_job(c.arch, probe.params, c.X, c.Y)))


def load_figure3_job(
    path,
    slices: SliceSettings | None = SliceSettings(),
    s: Figure3Settings | None = None,
    activation: str | None = None,
    data=None,
) -> Job[Figure3]:
    """A saved network: its inspection (engine.minima.report), its construction history restored when the
    file has one (engine.minima.workbench), then slices and, with splits, the stages (b)–(d) of ``s``
    (default settings' path, saddle λ and descent; no plane). The file is read before the first
    yield, so a bad one fails at once. ``activation``/``data``: for PyTorch files (engine.minima.report)."""
    from engine.io.readers import read_network

    net = read_network(path, activation, data)
    return _inspected_job(net, str(path), replace(s or Figure3Settings(plane=None), slices=slices))


def _inspected_job(net, label: str, s: Figure3Settings, moved: CriticalSearch | None = None) -> Job[Figure3]:
    """A network read or moved: inspection, its history restored, then slices and (b)–(d)."""
    fig = yield from inspected_figure_job(net, label, moved)
    yield Progress(0.3, "loaded", fig)
    return (yield from _after_construction(fig, replace(s, plane=None), 0.3, spectrum=False))


def inspected_figure_job(net, label: str, moved: CriticalSearch | None = None) -> Job[Figure3]:
    """A network's inspection and its construction history restored, no slices: what a loaded
    file starts from, and what a reopened session needs to go on (it shows the slices it saved)."""
    from engine.minima.report import inspect_job
    from engine.minima.workbench import construction_of

    report = yield from subjob(inspect_job(net, label), 0.0, 0.7, "")
    step = C.Step("loaded", report.arch.widths, report.loss, report.grad_norm, report.hessian, report.verdict)
    c = yield from wait_for(lambda stop: construction_of(net, step, report.neurons), "construction history")
    fig = Figure3(c.steps, c, eigs=report.eigs, hessian=report.hessian, loaded_from=label, moved=moved)
    return (yield from _with_density(fig, 0.7, 1.0))


def critical_point_job(fig: Figure3, s: Figure3Settings) -> Job[Figure3]:
    """ "Find critical point" (engine.minima.critical_search) from the network on screen, to a
    gradient norm below construction.GRAD_TOL or a stop it explains; cancellable. The moved
    network starts a new history (its splits no longer hold)."""
    from engine.io.netfile import NetFile

    c = fig.construction
    if c is None:
        raise EngineInputError("build or load a network before searching a critical point")
    moved = yield from wait_for(
        lambda stop: find_critical_point(c.arch, c.X, c.Y, c.params, stop=stop), "searching a critical point"
    )
    net = NetFile(c.arch, moved.theta, c.X, np.asarray(c.Y).reshape(-1, 1))
    return (yield from _inspected_job(net, fig.loaded_from or "the built network", s, moved))


def split_figure_job(fig: Figure3, layer: int, neuron: int, lam: float, s: Figure3Settings) -> Job[Figure3]:
    """The inspector's Split button: γ on one neuron of the current network (verified with the
    Hessian, appended to the history), then the spectrum and the stages of ``s`` for that split."""
    from engine.minima.workbench import split_job

    if fig.construction is None:
        raise EngineInputError("build or load a network before splitting a neuron")
    c = yield from subjob(split_job(fig.construction, layer, neuron, lam), 0.0, 0.3, "split: ")
    return (yield from _after_construction(Figure3(c.steps, c, fig.data_seed, loaded_from=fig.loaded_from), s, 0.3))


def undo_figure_job(fig: Figure3, s: Figure3Settings) -> Job[Figure3]:
    """Undo the last split: the construction without it, and its stages again."""
    from engine.minima.workbench import undo_split

    if fig.construction is None or not fig.construction.splits:
        raise EngineInputError("there is no split to undo")
    c = yield from wait_for(lambda stop: undo_split(fig.construction), "undo the last split")
    return (yield from _after_construction(Figure3(c.steps, c, fig.data_seed, loaded_from=fig.loaded_from), s, 0.3))
