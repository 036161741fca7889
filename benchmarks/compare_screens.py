"""Compare two trees' screenshots and story clips pixel by pixel (issue #58: behaviour unchanged).

For every preset that both trees ship, each tree renders ``main.py screenshot`` with its own code
in each mode (light, dark, presentation); the two PNGs are compared pixel by pixel, and a
side-by-side image (before | after | differing pixels in red) is saved for each pair that differs.
``--clips`` also records the story clips (paper A's training story, paper B's walk along λ) with
both trees and compares their decoded frames one by one. ``--repeat`` renders presets twice with
the after tree, so that a run that is not deterministic is not mistaken for a change of behaviour.

    nice -n 19 python benchmarks/compare_screens.py --before /tmp/before58 --after . \\
        --out /tmp/screens [--presets a,b] [--themes light,dark,presentation] [--clips]

Each run gets a fresh ``XDG_CONFIG_HOME``: the window remembers its theme in QSettings, and a
clip is filmed in the remembered theme, so neither tree nor anyone else's run may leak into it.
Prints a markdown table; exits 0 whatever differs (it reports, it does not judge).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

MODES = {  # mode -> screenshot flags
    "light": ["--theme", "light"],
    "dark": ["--theme", "dark"],
    "presentation": ["--presentation", "--theme", "light"],
}
CLIP_PRESETS = ("fig3-free", "nonattr-fig3")  # paper A's story (topology tab), paper B's (minima tab)
XVFB = ["xvfb-run", "-a", "-s", "-screen 0 1920x1200x24"]


def presets_of(tree: Path) -> set[str]:
    """The preset names a tree ships (resources/presets/*.json)."""
    return {p.stem for p in (tree / "resources" / "presets").glob("*.json")}


def run_app(tree: Path, args: list[str], out: Path, timeout_s: float) -> tuple[bool, float, str]:
    """Run ``main.py ARGS`` with cwd = ``tree`` (its own code, the shared installed packages),
    under Xvfb, with a fresh config folder. Returns (ok, seconds, last lines of output)."""
    config = out.parent / f".config-{out.stem}"
    shutil.rmtree(config, ignore_errors=True)
    env = {**os.environ, "XDG_CONFIG_HOME": str(config), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)  # each tree imports its own engine/ and gui/ from its cwd
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [*XVFB, sys.executable, "main.py", *args], cwd=tree, env=env, capture_output=True, text=True,
            timeout=timeout_s,
        )  # fmt: skip
        ok, text = done.returncode == 0, (done.stdout + done.stderr)
    except subprocess.TimeoutExpired:
        ok, text = False, f"timed out after {timeout_s:g} s"
    shutil.rmtree(config, ignore_errors=True)
    return ok, time.perf_counter() - start, "\n".join(text.strip().splitlines()[-3:])


def compare_arrays(a: np.ndarray, b: np.ndarray) -> dict:
    """Pixel-by-pixel comparison of two H×W×C uint8 images of one size: whether identical, the
    share of pixels with any channel different, the largest channel difference, and the bounding
    box (x0, y0, x1, y1, exclusive ends) of the differing pixels."""
    delta = np.abs(a.astype(np.int16) - b.astype(np.int16))
    mask = delta.max(axis=2) > 0
    if not mask.any():
        return {"same": True, "share": 0.0, "max": 0, "bbox": None, "mask": mask}
    ys, xs = np.nonzero(mask)
    bbox = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
    result = {"same": False, "share": float(mask.mean()), "max": int(delta.max()), "bbox": bbox, "mask": mask}
    return {**result, "regions": regions(mask)}


def regions(mask: np.ndarray, gap: int = 12, most: int = 4) -> str:
    """The largest separate patches of differing pixels (those within ``gap`` px joined), as
    "x0,y0–x1,y1 (N px)": one bounding box over a tab label and a 3D view says little about
    either, and each patch usually has one cause."""
    from scipy import ndimage

    labels, _ = ndimage.label(ndimage.binary_dilation(mask, iterations=gap))
    found = []
    for i, (ys, xs) in enumerate(ndimage.find_objects(labels)):
        y, x = np.nonzero(mask[ys, xs] & (labels[ys, xs] == i + 1))
        x0, y0 = xs.start + x.min(), ys.start + y.min()
        found.append((len(x), f"{x0},{y0}–{xs.start + x.max() + 1},{ys.start + y.max() + 1} ({len(x)} px)"))
    found.sort(reverse=True)
    more = f"; {len(found) - most} more" if len(found) > most else ""
    return "; ".join(text for _, text in found[:most]) + more


def load_rgb(path: Path) -> np.ndarray:
    """A PNG as an H×W×3 uint8 array (alpha dropped: the window is opaque)."""
    return np.asarray(Image.open(path).convert("RGB"))


def save_diff(a: np.ndarray, b: np.ndarray, result: dict, path: Path) -> None:
    """Save before | after | diff side by side: the diff panel is the after image greyed and
    dimmed, with every differing pixel red and the bounding box outlined, so a one-pixel change
    is still visible when the image is viewed scaled down."""
    grey = (b.mean(axis=2, keepdims=True) * 0.35 + 150).astype(np.uint8).repeat(3, axis=2)
    grey[result["mask"]] = (255, 0, 0)
    panel = Image.fromarray(grey)
    if result["bbox"]:
        x0, y0, x1, y1 = result["bbox"]
        ImageDraw.Draw(panel).rectangle((x0 - 2, y0 - 2, x1 + 1, y1 + 1), outline=(0, 0, 255), width=2)
    h, w = a.shape[:2]
    canvas = Image.new("RGB", (3 * w + 20, h), (255, 255, 255))
    for i, image in enumerate((Image.fromarray(a), Image.fromarray(b), panel)):
        canvas.paste(image, (i * (w + 10), 0))
    path.parent.mkdir(parents=True, exist_ok=True)
    canvas.save(path)


def compare_pngs(before: Path, after: Path, diff: Path) -> dict:
    """Compare two screenshots; a size mismatch is reported as such (no pixel comparison)."""
    a, b = load_rgb(before), load_rgb(after)
    if a.shape != b.shape:
        return {"same": False, "note": f"sizes differ: {a.shape[1]}x{a.shape[0]} vs {b.shape[1]}x{b.shape[0]}"}
    result = compare_arrays(a, b)
    if not result["same"]:
        save_diff(a, b, result, diff)
        result["diff"] = diff
    return result


def decode(path: Path) -> list[np.ndarray]:
    """Every frame of a video, decoded with imageio's ffmpeg reader, as RGB uint8 arrays."""
    import imageio.v2 as imageio

    with imageio.get_reader(path, format="FFMPEG") as reader:
        return [np.asarray(frame)[..., :3] for frame in reader]


def compare_clips(before: Path, after: Path, diff: Path) -> dict:
    """Frame-by-frame comparison of two clips: frame counts, identical frames, the largest
    channel difference, the first differing frame (saved side by side as ``diff``) and the
    largest share of differing pixels in any frame."""
    fa, fb = decode(before), decode(after)
    same, first, worst, share = 0, None, 0, 0.0
    for i, (a, b) in enumerate(zip(fa, fb)):
        if a.shape != b.shape:
            return {"same": False, "note": f"frame sizes differ: {a.shape} vs {b.shape}"}
        result = compare_arrays(a, b)
        same += result["same"]
        worst, share = max(worst, result["max"]), max(share, result["share"])
        if not result["same"] and first is None:
            first = i
            save_diff(a, b, result, diff)
    return {
        "same": same == len(fa) == len(fb),
        "frames": (len(fa), len(fb)),
        "identical": same,
        "max": worst,
        "share": share,
        "first": first,
        "diff": diff if first is not None else None,
    }


def cell(result: dict) -> str:
    """A result's table cells: verdict | share of pixels | max Δ | bbox or first frame | image."""
    if "error" in result:
        return f"render failed: {result['error']} | | | |"
    if "note" in result:
        return f"differs: {result['note']} | | | |"
    if result["same"]:
        return "identical | 0 | 0 | |"
    where = result.get("regions") if "first" not in result else f"first frame {result['first']}"
    return f"differs | {100 * result['share']:.3f} % | {result['max']} | {where} | {result.get('diff', '')}"


def render_shot(tree: Path, preset: str, mode: str, png: Path, args) -> dict | None:
    """Render one screenshot unless ``--reuse`` finds it already; an error dict if it failed.
    With ``--redraw`` the first mode runs the preset and saves its session, and the other modes
    draw that session again (the tree's own File ▸ Open session path: no recomputing, and only
    the shown tab is built, so the tab bar is not compared there)."""
    if args.reuse and png.is_file():
        return None
    png.parent.mkdir(parents=True, exist_ok=True)
    session = png.with_name(f"{preset}.lens")
    source = ["--preset", preset]
    if args.redraw:
        source = ["--save-session", str(session)] + source if mode == args.themes[0] else ["--session", str(session)]
    flags = ["screenshot", *source, "--out", str(png), "--size", args.size, *MODES[mode]]
    ok, seconds, tail = run_app(tree, flags, png, args.timeout)
    print(f"  {tree.name or tree}: {preset} {mode} {'ok' if ok else 'FAILED'} in {seconds:.0f} s", file=sys.stderr)
    return None if ok else {"error": tail.replace("\n", " / ").replace("|", "/")}


def shots(args, presets: list[str], trees: dict[str, Path]) -> list[str]:
    """Render and compare every preset × mode; then the determinism repeats. Table rows."""
    rows = []
    for preset in presets:
        for mode in args.themes:
            pngs = {label: args.out / label / f"{preset}-{mode}.png" for label in trees}
            errors = [e for label, tree in trees.items() if (e := render_shot(tree, preset, mode, pngs[label], args))]
            diff = args.out / "diff" / f"{preset}-{mode}.png"
            result = errors[0] if errors else compare_pngs(pngs["before"], pngs["after"], diff)
            rows.append(f"| {preset} | {mode} | before → after | {cell(result)} |")
            print(rows[-1], file=sys.stderr)
    for preset in args.repeat:
        for mode in args.themes[:1]:
            first, again = (args.out / label / f"{preset}-{mode}.png" for label in ("after", "after-again"))
            todo = [png for png in (first, again) if png is again or not first.is_file()]  # the first: the main pass's
            errors = [e for png in todo if (e := render_shot(args.after, preset, mode, png, args))]
            diff = args.out / "diff" / f"{preset}-{mode}-after-twice.png"
            result = errors[0] if errors else compare_pngs(first, again, diff)
            rows.append(f"| {preset} | {mode} | after, twice | {cell(result)} |")
    return rows


def clips(args, trees: dict[str, Path]) -> list[str]:
    """Record each story clip with both trees (small and short) and compare decoded frames."""
    rows = []
    for preset in args.clip_presets:
        mp4s = {label: args.out / label / f"clip-{preset}.mp4" for label in trees}
        errors = []
        for label, tree in trees.items():
            if args.reuse and mp4s[label].is_file():
                continue
            flags = ["record", "--preset", preset, "--out", str(mp4s[label]), "--size", args.clip_size]
            flags += ["--fps", str(args.clip_fps), "--seconds", str(args.clip_seconds)]
            mp4s[label].parent.mkdir(parents=True, exist_ok=True)
            ok, seconds, tail = run_app(tree, flags, mp4s[label], args.timeout)
            print(f"  {label}: clip {preset} {'ok' if ok else 'FAILED'} in {seconds:.0f} s", file=sys.stderr)
            if not ok:
                errors.append({"error": tail.replace("\n", " / ").replace("|", "/")})
        diff = args.out / "diff" / f"clip-{preset}-first-differing-frame.png"
        result = errors[0] if errors else compare_clips(mp4s["before"], mp4s["after"], diff)
        frames = f"{result['identical']} of {result['frames']} frames identical; " if "frames" in result else ""
        rows.append(f"| {preset} | story clip | {frames}before → after | {cell(result)} |")
    return rows


def main(argv=None) -> int:
    """Parse the command line, render, compare and print the markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the tree before the change")
    parser.add_argument("--after", type=Path, required=True, help="the tree after it")
    parser.add_argument("--out", type=Path, required=True, help="folder for renders and diff images")
    parser.add_argument("--presets", help="comma-separated (default: every preset both trees ship)")
    parser.add_argument("--themes", default="light,dark,presentation", help="modes: " + ", ".join(MODES))
    parser.add_argument("--repeat", default="fig3-free", help="presets rendered twice by the after tree ('' for none)")
    parser.add_argument("--clips", action="store_true", help="also compare the story clips frame by frame")
    parser.add_argument("--clip-presets", default=",".join(CLIP_PRESETS))
    parser.add_argument("--clip-size", default="640x360")
    parser.add_argument("--clip-fps", type=int, default=10)
    parser.add_argument("--clip-seconds", type=float, default=3.0)
    parser.add_argument("--size", default="1600x960", help="screenshot size")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds for one render")
    parser.add_argument("--redraw", action="store_true", help="modes after the first redraw its saved session")
    parser.add_argument("--reuse", action="store_true", help="keep renders already in --out (e.g. the before tree's)")
    args = parser.parse_args(argv)
    args.before, args.after, args.out = args.before.resolve(), args.after.resolve(), args.out.resolve()
    args.themes = [t for t in args.themes.split(",") if t]
    args.repeat = [p for p in args.repeat.split(",") if p]
    args.clip_presets = [p for p in args.clip_presets.split(",") if p]
    unknown = set(args.themes) - set(MODES)
    if unknown:
        parser.error(f"unknown mode(s) {sorted(unknown)}; choose from {sorted(MODES)}")
    trees = {"before": args.before, "after": args.after}
    common = presets_of(args.before) & presets_of(args.after)
    only = (presets_of(args.before) ^ presets_of(args.after)) if not args.presets else set()
    presets = sorted(common) if not args.presets else [p for p in args.presets.split(",") if p]
    rows = ["| preset | mode | compared | result | differing pixels | max Δ | where (patches) | diff image |"]
    rows.append("|---" * 8 + "|")
    rows += shots(args, presets, trees)
    if args.clips:
        rows += clips(args, trees)
    print("\n".join(rows))
    if only:
        print(f"\nPresets in one tree only (not compared): {', '.join(sorted(only))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
